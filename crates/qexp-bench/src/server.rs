//! A zero-compute OpenAI-compatible server for measuring the client: it
//! streams `max_tokens` one-token chunks as fast as they are read, or on an
//! exact schedule a request asks for (`bench_ttft_ms`, `bench_itl_ms` in its
//! body), and records its own timestamps of every chunk it hands to the
//! socket, and when each request arrived (the kernel's receive stamp, see
//! `arrival`). Those timestamps are the truth the client's are compared with.

use crate::arrival::{Arrival, StampedListener};
use axum::body::{Body, Bytes};
use axum::extract::{ConnectInfo, State};
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use futures_util::Stream;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use std::future::{Future, IntoFuture};
use std::net::{Ipv4Addr, SocketAddr};
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio::time::Sleep;

/// What the server measured for one finished request (timed requests only).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ServerRecord {
    /// Request received (its handler ran) → first content chunk handed to
    /// the socket, seconds.
    pub ttft_s: f64,
    /// The request's arrival at the socket (the kernel's receive stamp) →
    /// first content chunk handed to the socket, seconds; `None` where the
    /// kernel stamped none (or in reports from before it was kept).
    #[serde(default)]
    pub ttft_from_arrival_s: Option<f64>,
    /// Gaps between consecutive content chunks, seconds.
    pub gaps_s: Vec<f64>,
}

/// What the server did since the last drain.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct ServerReport {
    /// Content chunks (= tokens) streamed.
    pub tokens: u64,
    /// First chunk → last chunk across all requests, seconds.
    pub window_s: f64,
    /// Timed requests, one record each.
    pub records: Vec<ServerRecord>,
    /// CPU seconds the server's process spent since the last drain (the
    /// client's too when both share one process, as in tests).
    #[serde(default)]
    pub cpu_s: f64,
    /// Scrapes of its DCGM exporter (`/bench/dcgm`) answered.
    #[serde(default)]
    pub scrapes: u64,
}

#[derive(Default)]
struct Shared {
    tokens: AtomicU64,
    /// Nanoseconds since `epoch` of the first and last chunk (0 = none yet).
    first_ns: AtomicU64,
    last_ns: AtomicU64,
    records: Mutex<Vec<ServerRecord>>,
    /// The process's CPU seconds at the last drain.
    cpu_at_drain: Mutex<f64>,
    scrapes: AtomicU64,
}

struct ServerState {
    epoch: Instant,
    shared: Shared,
}

impl ServerState {
    fn now_ns(&self) -> u64 {
        self.epoch.elapsed().as_nanos() as u64
    }
}

/// A running bench server on 127.0.0.1.
pub struct BenchServer {
    addr: SocketAddr,
    stop: watch::Sender<bool>,
}

impl BenchServer {
    /// Binds `127.0.0.1:port` (0 picks one) and serves on the current runtime.
    pub async fn start(port: u16) -> std::io::Result<BenchServer> {
        let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, port)).await?;
        let addr = listener.local_addr()?;
        let state = Arc::new(ServerState {
            epoch: Instant::now(),
            shared: Shared::default(),
        });
        let app = Router::new()
            .route("/v1/models", get(models))
            .route("/tokenize", post(tokenize))
            .route("/v1/chat/completions", post(chat))
            .route("/v1/completions", post(completions))
            .route("/bench/drain", get(drain))
            .route("/bench/dcgm", get(dcgm))
            .with_state(state);
        let (stop, mut stopped) = watch::channel(false);
        // Every chunk goes out the moment it is written (no Nagle batching,
        // as inference servers set up their sockets), and every read notes
        // when its bytes arrived.
        let listener = StampedListener(listener);
        let app = app.into_make_service_with_connect_info::<Arrival>();
        let serve = axum::serve(listener, app).with_graceful_shutdown(async move {
            let _ = stopped.wait_for(|s| *s).await;
        });
        tokio::spawn(serve.into_future());
        Ok(BenchServer { addr, stop })
    }

    /// `http://127.0.0.1:PORT`.
    pub fn base_url(&self) -> String {
        format!("http://{}", self.addr)
    }
}

impl Drop for BenchServer {
    fn drop(&mut self) {
        self.stop.send_replace(true);
    }
}

async fn models() -> Json<Value> {
    Json(json!({"object": "list", "data": [{"id": "bench", "object": "model"}]}))
}

/// Words of the prompt (or of every message's content): the server's "tokens".
fn prompt_words(v: &Value) -> u32 {
    let count = |s: &str| s.split_whitespace().count() as u32;
    if let Some(p) = v.get("prompt").and_then(Value::as_str) {
        return count(p);
    }
    v.get("messages").and_then(Value::as_array).map_or(0, |m| {
        m.iter()
            .filter_map(|m| m.get("content").and_then(Value::as_str))
            .map(count)
            .sum()
    })
}

async fn tokenize(body: Bytes) -> Response {
    match serde_json::from_slice::<Value>(&body) {
        Ok(v) => {
            let n = prompt_words(&v);
            Json(json!({"count": n, "tokens": Vec::<u32>::new()})).into_response()
        }
        Err(e) => (StatusCode::BAD_REQUEST, e.to_string()).into_response(),
    }
}

async fn drain(State(s): State<Arc<ServerState>>) -> Json<ServerReport> {
    let sh = &s.shared;
    let records = std::mem::take(&mut *sh.records.lock().unwrap_or_else(|e| e.into_inner()));
    let first = sh.first_ns.swap(0, Ordering::SeqCst);
    let last = sh.last_ns.swap(0, Ordering::SeqCst);
    let cpu_s = crate::process::cpu_s().map_or(f64::NAN, |now| {
        let mut at = sh.cpu_at_drain.lock().unwrap_or_else(|e| e.into_inner());
        now - std::mem::replace(&mut *at, now)
    });
    Json(ServerReport {
        cpu_s,
        tokens: sh.tokens.swap(0, Ordering::SeqCst),
        window_s: last.saturating_sub(first) as f64 / 1e9,
        records,
        scrapes: sh.scrapes.swap(0, Ordering::SeqCst),
    })
}

/// GPUs the bench's DCGM exporter reports.
pub const DCGM_GPUS: u32 = 8;

/// A zero-compute DCGM exporter: [`DCGM_GPUS`] GPUs at a constant 300 W
/// (energy counter, clocks, violation counters and XIDs as dcgm-exporter
/// lays them out), so that `[power]` sampling costs qexp what a real
/// exporter's answer would.
async fn dcgm(State(s): State<Arc<ServerState>>) -> String {
    s.shared.scrapes.fetch_add(1, Ordering::SeqCst);
    let secs = s.epoch.elapsed().as_secs_f64();
    use qexp_power::dcgm as f;
    let fields: [(&str, &str, f64); 6] = [
        (f::POWER, "gauge", 300.0),
        (f::ENERGY, "counter", 300_000.0 * secs),
        (f::POWER_VIOLATION, "counter", 0.0),
        (f::THERMAL_VIOLATION, "counter", 0.0),
        (f::SM_CLOCK, "gauge", 1800.0),
        (f::XID, "gauge", 0.0),
    ];
    let mut out = String::new();
    for (name, kind, v) in fields {
        out.push_str(&format!("# TYPE {name} {kind}\n"));
        for i in 0..DCGM_GPUS {
            out.push_str(&format!(
                "{name}{{gpu=\"{i}\",UUID=\"GPU-bench-{i}\",modelName=\"Bench GPU\",Hostname=\"bench\",DCGM_FI_DRIVER_VERSION=\"0\"}} {v}\n"
            ));
        }
    }
    out
}

async fn chat(
    state: State<Arc<ServerState>>,
    ConnectInfo(arrival): ConnectInfo<Arrival>,
    body: Bytes,
) -> Response {
    generate(state, arrival.latest(), body, true)
}

async fn completions(
    state: State<Arc<ServerState>>,
    ConnectInfo(arrival): ConnectInfo<Arrival>,
    body: Bytes,
) -> Response {
    generate(state, arrival.latest(), body, false)
}

const CHAT_TOKEN: &[u8] = b"data: {\"id\":\"b\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"tok \"},\"finish_reason\":null}]}\n\n";
const TEXT_TOKEN: &[u8] = b"data: {\"id\":\"b\",\"object\":\"text_completion\",\"choices\":[{\"index\":0,\"text\":\"tok \",\"finish_reason\":null}]}\n\n";

fn generate(
    State(state): State<Arc<ServerState>>,
    arrived: Option<Instant>,
    body: Bytes,
    chat: bool,
) -> Response {
    let received = Instant::now();
    let v: Value = match serde_json::from_slice(&body) {
        Ok(v) => v,
        Err(e) => return (StatusCode::BAD_REQUEST, e.to_string()).into_response(),
    };
    let ms = |k: &str| v.get(k).and_then(Value::as_f64).unwrap_or(0.0).max(0.0);
    let (ttft_ms, itl_ms) = (ms("bench_ttft_ms"), ms("bench_itl_ms"));
    let max_tokens = v.get("max_tokens").and_then(Value::as_u64).unwrap_or(16) as u32;
    let prompt = prompt_words(&v);
    let finish = if chat {
        format!("data: {{\"id\":\"b\",\"object\":\"chat.completion.chunk\",\"choices\":[{{\"index\":0,\"delta\":{{}},\"finish_reason\":\"length\"}}]}}\n\ndata: {{\"id\":\"b\",\"object\":\"chat.completion.chunk\",\"choices\":[],\"usage\":{{\"prompt_tokens\":{prompt},\"completion_tokens\":{max_tokens},\"total_tokens\":{}}}}}\n\ndata: [DONE]\n\n", prompt + max_tokens)
    } else {
        format!("data: {{\"id\":\"b\",\"object\":\"text_completion\",\"choices\":[{{\"index\":0,\"text\":\"\",\"finish_reason\":\"length\"}}]}}\n\ndata: {{\"id\":\"b\",\"object\":\"text_completion\",\"choices\":[],\"usage\":{{\"prompt_tokens\":{prompt},\"completion_tokens\":{max_tokens},\"total_tokens\":{}}}}}\n\ndata: [DONE]\n\n", prompt + max_tokens)
    };
    let timed = ttft_ms > 0.0 || itl_ms > 0.0;
    let stream = TokenStream {
        state,
        token: Bytes::from_static(if chat { CHAT_TOKEN } else { TEXT_TOKEN }),
        finish: Some(Bytes::from(finish)),
        received,
        arrived,
        ttft: Duration::from_secs_f64(ttft_ms / 1000.0),
        itl: Duration::from_secs_f64(itl_ms / 1000.0),
        total: max_tokens,
        sent: 0,
        sleep: None,
        stamps: timed.then(|| Vec::with_capacity(max_tokens as usize)),
    };
    Response::builder()
        .header(header::CONTENT_TYPE, "text/event-stream")
        .header(header::CACHE_CONTROL, "no-cache")
        .body(Body::from_stream(stream))
        .unwrap_or_else(|_| StatusCode::INTERNAL_SERVER_ERROR.into_response())
}

/// The chunks of one response: each token is due at `received + ttft +
/// i × itl` (at once when both are zero), then the finish and usage chunks.
struct TokenStream {
    state: Arc<ServerState>,
    token: Bytes,
    finish: Option<Bytes>,
    received: Instant,
    /// When the request's bytes reached the socket (kernel stamp), if known.
    arrived: Option<Instant>,
    ttft: Duration,
    itl: Duration,
    total: u32,
    sent: u32,
    sleep: Option<Pin<Box<Sleep>>>,
    /// Chunk hand-over times (timed requests only).
    stamps: Option<Vec<Instant>>,
}

impl TokenStream {
    fn record(&mut self) {
        let Some(stamps) = self.stamps.take() else {
            return;
        };
        let Some(first) = stamps.first() else {
            return;
        };
        let rec = ServerRecord {
            ttft_s: (*first - self.received).as_secs_f64(),
            ttft_from_arrival_s: self
                .arrived
                .map(|a| first.saturating_duration_since(a).as_secs_f64()),
            gaps_s: stamps
                .windows(2)
                .map(|w| (w[1] - w[0]).as_secs_f64())
                .collect(),
        };
        let mut all = self
            .state
            .shared
            .records
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        all.push(rec);
    }
}

impl Stream for TokenStream {
    type Item = Result<Bytes, std::convert::Infallible>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = &mut *self;
        if this.sent >= this.total {
            let fin = this.finish.take();
            if fin.is_some() {
                this.record();
            }
            return Poll::Ready(fin.map(Ok));
        }
        if this.stamps.is_some() {
            let due = this.received + this.ttft + this.itl * this.sent;
            if Instant::now() < due {
                let sleep = this
                    .sleep
                    .get_or_insert_with(|| Box::pin(tokio::time::sleep_until(due.into())));
                sleep.as_mut().reset(due.into());
                if sleep.as_mut().poll(cx).is_pending() {
                    return Poll::Pending;
                }
            }
        }
        this.sent += 1;
        let sh = &this.state.shared;
        let now_ns = this.state.now_ns().max(1);
        let _ = sh
            .first_ns
            .compare_exchange(0, now_ns, Ordering::Relaxed, Ordering::Relaxed);
        sh.last_ns.fetch_max(now_ns, Ordering::Relaxed);
        sh.tokens.fetch_add(1, Ordering::Relaxed);
        if let Some(st) = &mut this.stamps {
            st.push(Instant::now());
        }
        Poll::Ready(Some(Ok(this.token.clone())))
    }
}
