//! HTTP routes: the OpenAI-compatible surface plus vLLM-style probes.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use futures_util::StreamExt;
use serde::de::DeserializeOwned;
use serde_json::json;

use crate::answer::{Answer, Knobs};
use crate::openai::{ChatRequest, CompletionRequest, Envelope, Job, Kind, TokenizeRequest};
use crate::scheduler::Engine;
use crate::{faults, metrics, sse};

/// State shared by all handlers of one server.
#[derive(Clone)]
pub(crate) struct App {
    engine: Arc<Engine>,
    next_id: Arc<AtomicU64>,
}

/// The router serving `engine`.
pub(crate) fn router(engine: Arc<Engine>) -> Router {
    Router::new()
        .route("/v1/models", get(models))
        .route("/version", get(version))
        .route("/health", get(|| async { StatusCode::OK }))
        .route("/tokenize", post(tokenize))
        .route("/metrics", get(metrics))
        .route("/v1/completions", post(completions))
        .route("/v1/chat/completions", post(chat_completions))
        .route("/v1/embeddings", post(embeddings))
        .route("/v1/rerank", post(rerank))
        .with_state(App {
            engine,
            next_id: Arc::new(AtomicU64::new(0)),
        })
}

/// An OpenAI-style error response.
#[derive(Debug)]
struct ApiError {
    status: StatusCode,
    message: String,
}

impl ApiError {
    fn bad_request(message: impl Into<String>) -> ApiError {
        ApiError {
            status: StatusCode::BAD_REQUEST,
            message: message.into(),
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let kind = match self.status {
            StatusCode::BAD_REQUEST => "BadRequestError",
            _ => "ServiceUnavailableError",
        };
        let body =
            json!({"error": {"message": self.message, "type": kind, "code": self.status.as_u16()}});
        (self.status, Json(body)).into_response()
    }
}

fn parse<T: DeserializeOwned>(body: &[u8]) -> Result<T, ApiError> {
    serde_json::from_slice(body)
        .map_err(|e| ApiError::bad_request(format!("invalid request body: {e}")))
}

async fn models(State(app): State<App>) -> Json<serde_json::Value> {
    let p = app.engine.profile();
    let mut model = json!({"id": p.model_id(), "object": "model", "created": unix_now(), "owned_by": "qexp-sim", "max_model_len": p.max_context});
    if let (Some(max), Some(m)) = (p.max_images, model.as_object_mut()) {
        // Named after vLLM's `--limit-mm-per-prompt`, which vLLM itself does not report.
        m.insert("limit_mm_per_prompt".into(), json!({"image": max}));
    }
    Json(json!({"object": "list", "data": [model]}))
}

async fn version() -> Json<serde_json::Value> {
    Json(json!({"version": concat!("qexp-sim ", env!("CARGO_PKG_VERSION"))}))
}

async fn metrics(State(app): State<App>) -> Response {
    let body = metrics::exposition(
        &app.engine.profile().model_id(),
        app.engine.cache_counters(),
    );
    ([(header::CONTENT_TYPE, metrics::CONTENT_TYPE)], body).into_response()
}

async fn tokenize(
    State(app): State<App>,
    body: Bytes,
) -> Result<Json<serde_json::Value>, ApiError> {
    let p = app.engine.profile();
    let req: TokenizeRequest = parse(&body)?;
    let ids = req
        .ids(p.vision())
        .map_err(|e| ApiError::bad_request(e.to_string()))?;
    Ok(Json(
        json!({"count": ids.len(), "max_model_len": p.max_context, "tokens": ids}),
    ))
}

async fn completions(State(app): State<App>, body: Bytes) -> Result<Response, ApiError> {
    let req: CompletionRequest = parse(&body)?;
    let job = req
        .into_job(&app.engine.profile().model_id())
        .map_err(|e| ApiError::bad_request(e.to_string()))?;
    generate(app, job).await
}

async fn chat_completions(State(app): State<App>, body: Bytes) -> Result<Response, ApiError> {
    let p = app.engine.profile();
    let req: ChatRequest = parse(&body)?;
    let job = req
        .into_job(&p.model_id(), p.vision())
        .map_err(|e| ApiError::bad_request(e.to_string()))?;
    generate(app, job).await
}

async fn embeddings(State(app): State<App>, body: Bytes) -> Result<Response, ApiError> {
    let req: crate::pooling::EmbeddingsRequest = parse(&body)?;
    let answer = crate::pooling::embeddings(&app.engine, req).await;
    pooled(answer)
}

async fn rerank(State(app): State<App>, body: Bytes) -> Result<Response, ApiError> {
    let req: crate::pooling::RerankRequest = parse(&body)?;
    let answer = crate::pooling::rerank(&app.engine, req).await;
    pooled(answer)
}

/// A pooling answer as JSON, or 503 when the server stopped before it.
fn pooled(answer: Option<serde_json::Value>) -> Result<Response, ApiError> {
    match answer {
        Some(v) => Ok(Json(v).into_response()),
        None => Err(ApiError {
            status: StatusCode::SERVICE_UNAVAILABLE,
            message: "the simulated server is shutting down".to_owned(),
        }),
    }
}

/// Admits `job` to the engine and answers with an SSE stream or, once done, one JSON object.
async fn generate(app: App, mut job: Job) -> Result<Response, ApiError> {
    let max_context = app.engine.profile().max_context;
    let index = app.next_id.fetch_add(1, Ordering::Relaxed);
    let requested = u64::from(job.prompt_tokens) + u64::from(job.max_tokens);
    let fault = job
        .stream
        .then(|| app.engine.profile().faults.pick(index))
        .flatten();
    if let Some(response) = faults::respond(fault, max_context, requested) {
        return Ok(response);
    }
    faults::delay_headers(fault).await;
    if job.max_tokens == 0 {
        return Err(ApiError::bad_request("max_tokens must be at least 1"));
    }
    if requested > u64::from(max_context) {
        return Err(ApiError::bad_request(format!(
            "This model's maximum context length is {max_context} tokens. However, you requested \
             {requested} tokens ({} in the prompt, {} in the completion). Please reduce the length \
             of the prompt or completion.",
            job.prompt_tokens, job.max_tokens
        )));
    }
    job.stop_early(app.engine.profile().stop_share);
    let prefix = match job.kind {
        Kind::Chat => "chatcmpl",
        Kind::Completion => "cmpl",
    };
    let env = Envelope {
        id: format!("{prefix}-sim-{index}"),
        created: unix_now(),
        job,
    };
    let chunks = app.engine.generate(&env.job);
    let knobs = Knobs::of(app.engine.profile());
    if env.job.stream {
        let reasoning = app.engine.profile().reasoning_tokens;
        let body = Body::from_stream(faults::body(
            fault,
            sse::body(env, chunks, reasoning, knobs),
        ));
        return Ok((
            [
                (header::CONTENT_TYPE, "text/event-stream"),
                (header::CACHE_CONTROL, "no-cache"),
            ],
            body,
        )
            .into_response());
    }
    let generated = chunks.fold(0u32, |sum, n| async move { sum + n }).await;
    if generated < env.job.max_tokens {
        return Err(ApiError {
            status: StatusCode::SERVICE_UNAVAILABLE,
            message: "the simulated server is shutting down".to_owned(),
        });
    }
    let answer = Answer::new(&env.job, knobs, 0);
    let text = answer.text(0, generated);
    Ok(Json(env.response(&text, answer.tool(), generated)).into_response())
}

fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}
