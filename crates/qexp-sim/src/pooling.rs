//! `/v1/embeddings` and `/v1/rerank`: requests that only prefill. Every
//! input (embeddings) or query and document pair (rerank) is prefilled in
//! one job through the same engine as generation, so an answer costs the
//! profile's prefill of all its tokens (the known truth a test checks) and
//! waits for a slot like any other; the answer is one JSON document.

use crate::openai::Job;
use crate::scheduler::Engine;
use crate::tokens;
use futures_util::StreamExt;
use serde::Deserialize;
use serde_json::{json, Value};
use std::sync::Arc;

/// `POST /v1/embeddings` body (OpenAI's shape).
#[derive(Debug, Deserialize)]
pub(crate) struct EmbeddingsRequest {
    model: Option<String>,
    input: Input,
}

/// `POST /v1/rerank` body (the vLLM, Cohere and Jina shape).
#[derive(Debug, Deserialize)]
pub(crate) struct RerankRequest {
    model: Option<String>,
    query: String,
    documents: Vec<String>,
}

#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum Input {
    One(String),
    Many(Vec<String>),
}

/// Dimensions of a simulated embedding.
const DIMENSIONS: usize = 8;

/// A deterministic unit vector drawn from `ids`.
fn embedding(ids: &[u32]) -> Vec<f64> {
    let mut h = crate::reading::seed(ids);
    let mut v: Vec<f64> = (0..DIMENSIONS)
        .map(|_| {
            h = h
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            ((h >> 11) as f64 / (1u64 << 53) as f64) - 0.5
        })
        .collect();
    let norm = v
        .iter()
        .map(|x| x * x)
        .sum::<f64>()
        .sqrt()
        .max(f64::MIN_POSITIVE);
    v.iter_mut().for_each(|x| *x /= norm);
    v
}

/// Prefills `groups` (each a token list) as one job; None when the server
/// stopped before it finished.
async fn prefill(engine: &Arc<Engine>, model: Option<String>, groups: &[Vec<u32>]) -> Option<u32> {
    let ids: Vec<u32> = groups.concat();
    let tokens = u32::try_from(ids.len()).unwrap_or(u32::MAX);
    let job = Job::prefill_only(model, &engine.profile().model_id(), ids);
    let generated = engine
        .generate(&job)
        .fold(0u32, |sum, n| async move { sum + n })
        .await;
    (generated >= 1).then_some(tokens)
}

/// The embeddings answer, or None when the server stopped first.
pub(crate) async fn embeddings(engine: &Arc<Engine>, req: EmbeddingsRequest) -> Option<Value> {
    let texts = match req.input {
        Input::One(t) => vec![t],
        Input::Many(ts) => ts,
    };
    let groups: Vec<Vec<u32>> = texts
        .iter()
        .map(|t| {
            let mut ids = Vec::new();
            tokens::ids(t, &mut ids);
            ids
        })
        .collect();
    let model = req
        .model
        .clone()
        .unwrap_or_else(|| engine.profile().model_id());
    let tokens = prefill(engine, req.model, &groups).await?;
    let data: Vec<Value> = groups
        .iter()
        .enumerate()
        .map(|(i, ids)| json!({"object": "embedding", "index": i, "embedding": embedding(ids)}))
        .collect();
    Some(json!({
        "object": "list",
        "data": data,
        "model": model,
        "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
    }))
}

/// The rerank answer (results by falling score), or None when the server stopped first.
pub(crate) async fn rerank(engine: &Arc<Engine>, req: RerankRequest) -> Option<Value> {
    let mut query = Vec::new();
    tokens::ids(&req.query, &mut query);
    let groups: Vec<Vec<u32>> = req
        .documents
        .iter()
        .map(|d| {
            let mut ids = query.clone();
            tokens::ids(d, &mut ids);
            ids
        })
        .collect();
    let model = req
        .model
        .clone()
        .unwrap_or_else(|| engine.profile().model_id());
    let tokens = prefill(engine, req.model, &groups).await?;
    let mut results: Vec<(usize, f64)> = groups
        .iter()
        .enumerate()
        .map(|(i, ids)| (i, embedding(ids)[0] * 10.0))
        .collect();
    results.sort_by(|a, b| b.1.total_cmp(&a.1));
    let results: Vec<Value> = results
        .into_iter()
        .map(|(i, s)| json!({"index": i, "relevance_score": s}))
        .collect();
    Some(json!({
        "model": model,
        "results": results,
        "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
    }))
}
