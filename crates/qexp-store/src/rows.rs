//! The Parquet row layouts. Field order here is column order on disk;
//! README's "Data model" section documents every column.

use polars::prelude::*;
use serde::{Deserialize, Serialize};

/// One request: a row of `requests.parquet`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RequestRow {
    /// Run id.
    pub run_id: String,
    /// Client host name (runs from several machines can be merged).
    pub client_host: String,
    /// Trial number, from 1.
    pub trial: u32,
    /// Point id (plan order).
    pub point_id: u32,
    /// Position of the point within its trial, from 0.
    pub point_order: u32,
    /// Index of the request within the point (warmups first).
    pub request_index: u32,
    /// True for warmup requests, which statistics ignore.
    pub warmup: bool,
    /// Point parameter: requests in flight.
    pub concurrency: u32,
    /// Point parameter: planned prompt tokens.
    pub input_tokens_target: u32,
    /// Point parameter: planned output tokens.
    pub output_tokens_target: u32,
    /// This request's planned prompt tokens (the point's, unless lengths vary).
    pub input_tokens_planned: u32,
    /// This request's `max_tokens` (the point's, unless lengths vary).
    pub output_tokens_planned: u32,
    /// Prompt tokens the plan expects the server to find cached (a shared prefix after its group's first prompt).
    pub cached_tokens_expected: u32,
    /// Shared-prefix group of the prompt, null when it shares no prefix.
    pub prefix_group: Option<u32>,
    /// Multi-turn: the conversation within the point (from 0), null otherwise.
    pub session: Option<u32>,
    /// Multi-turn: the turn within its conversation (from 1), null otherwise.
    pub turn: Option<u32>,
    /// When the scheduler released the request, Unix seconds.
    pub scheduled_unix_s: f64,
    /// When it was sent, Unix seconds.
    pub sent_unix_s: f64,
    /// Sent − scheduled: time spent in qexp before sending.
    pub queue_s: f64,
    /// Sent → response headers.
    pub headers_s: Option<f64>,
    /// Sent → first content chunk (TTFT).
    pub ttft_s: Option<f64>,
    /// Sent → first chunk of reasoning text (reasoning models), null without reasoning.
    pub ttft_reasoning_s: Option<f64>,
    /// Sent → first chunk of answer text (after any reasoning).
    pub ttft_answer_s: Option<f64>,
    /// Sent → last content chunk (E2E).
    pub e2e_s: Option<f64>,
    /// (E2E − TTFT)/(output tokens − 1).
    pub tpot_s: Option<f64>,
    /// Sent → end of stream (or failure).
    pub end_s: f64,
    /// Content chunks received (answer or reasoning).
    pub chunks: u32,
    /// Of those, chunks that carried reasoning text.
    pub reasoning_chunks: u32,
    /// Mean gap between content chunks.
    pub itl_mean_s: Option<f64>,
    /// Largest gap between content chunks.
    pub itl_max_s: Option<f64>,
    /// Arrival offsets of every content chunk (raw, for pooled ITL).
    pub chunk_offsets_s: Vec<f64>,
    /// `usage.prompt_tokens`.
    pub prompt_tokens: Option<u32>,
    /// `usage.completion_tokens`.
    pub completion_tokens: Option<u32>,
    /// `usage.prompt_tokens_details.cached_tokens`.
    pub cached_tokens: Option<u32>,
    /// The client's count (content deltas).
    pub client_tokens: u32,
    /// Characters of generated text.
    pub output_chars: u64,
    /// Finish reason.
    pub finish_reason: Option<String>,
    /// HTTP status.
    pub http_status: Option<u16>,
    /// Error class (snake_case), null when the request succeeded.
    pub error_class: Option<String>,
    /// Error message.
    pub error_message: Option<String>,
    /// Times the request was sent again after its connection closed under it
    /// before any response byte (timing counts from the last send).
    pub retries: u32,
}

/// One (trial, point): a row of `points.parquet`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PointRow {
    /// Run id.
    pub run_id: String,
    /// Trial number, from 1.
    pub trial: u32,
    /// Point id.
    pub point_id: u32,
    /// Position within the trial.
    pub point_order: u32,
    /// Requests in flight.
    pub concurrency: u32,
    /// Planned prompt tokens.
    pub input_tokens_target: u32,
    /// Planned output tokens.
    pub output_tokens_target: u32,
    /// Measured requests planned.
    pub requests_planned: u32,
    /// Measured requests that finished (ok or failed).
    pub requests_done: u32,
    /// Measured requests that failed.
    pub failures: u32,
    /// First measured send, Unix seconds.
    pub window_start_unix_s: f64,
    /// Last measured completion, Unix seconds.
    pub window_end_unix_s: f64,
    /// Output tokens of all measured successful requests.
    pub output_tokens: u64,
    /// output_tokens / (window_end − window_start).
    pub agg_output_tok_s: Option<f64>,
    /// Largest scheduled → sent lag (load-generator health).
    pub send_lag_max_s: f64,
    /// Filler words per prompt after calibration.
    pub prompt_units: u32,
    /// Why the point's numbers are not valid (e.g. prompt length off), if so.
    pub invalid_reason: Option<String>,
    /// Server counters over the measured requests (after − before scrapes of
    /// its Prometheus metrics); all `None` when no metrics were scraped.
    pub server: ServerDeltas,
}

/// Deltas of the server's own counters over one (trial, point).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ServerDeltas {
    /// Prompt tokens looked up in the prefix cache.
    pub prefix_cache_queries: Option<f64>,
    /// Prompt tokens found there.
    pub prefix_cache_hits: Option<f64>,
    /// Prompt tokens served from cache.
    pub cached_prompt_tokens: Option<f64>,
    /// Preemptions.
    pub preemptions: Option<f64>,
    /// Requests in the server's TTFT histogram.
    pub ttft_count: Option<f64>,
    /// Sum of the server's TTFT histogram, seconds.
    pub ttft_sum_s: Option<f64>,
    /// Speculative-decoding drafts (verification steps).
    pub spec_drafts: Option<f64>,
    /// Draft tokens accepted.
    pub spec_accepted_tokens: Option<f64>,
    /// 1 + accepted / drafts, where drafts were made.
    pub spec_acceptance_length: Option<f64>,
    /// Every counter's delta as a JSON object (`{"name{labels}": delta}`).
    pub counters_json: Option<String>,
}

fn col<T, I>(name: &str, values: I) -> Column
where
    I: Iterator<Item = T>,
    Series: NamedFrom<Vec<T>, [T]>,
{
    Column::new(name.into(), values.collect::<Vec<T>>())
}

/// `requests.parquet` layout for these rows.
pub fn requests_frame(rows: &[RequestRow]) -> PolarsResult<DataFrame> {
    let offsets: Vec<Series> = rows
        .iter()
        .map(|r| Series::new("".into(), r.chunk_offsets_s.as_slice()))
        .collect();
    let offsets = if rows.is_empty() {
        Series::new_empty(
            "chunk_offsets_s".into(),
            &DataType::List(Box::new(DataType::Float64)),
        )
    } else {
        Series::new("chunk_offsets_s".into(), offsets)
    };
    let r = rows.iter();
    DataFrame::new(
        rows.len(),
        vec![
            col("run_id", r.clone().map(|r| r.run_id.as_str())),
            col("client_host", r.clone().map(|r| r.client_host.as_str())),
            col("trial", r.clone().map(|r| r.trial)),
            col("point_id", r.clone().map(|r| r.point_id)),
            col("point_order", r.clone().map(|r| r.point_order)),
            col("request_index", r.clone().map(|r| r.request_index)),
            col("warmup", r.clone().map(|r| r.warmup)),
            col("concurrency", r.clone().map(|r| r.concurrency)),
            col(
                "input_tokens_target",
                r.clone().map(|r| r.input_tokens_target),
            ),
            col(
                "output_tokens_target",
                r.clone().map(|r| r.output_tokens_target),
            ),
            col(
                "input_tokens_planned",
                r.clone().map(|r| r.input_tokens_planned),
            ),
            col(
                "output_tokens_planned",
                r.clone().map(|r| r.output_tokens_planned),
            ),
            col(
                "cached_tokens_expected",
                r.clone().map(|r| r.cached_tokens_expected),
            ),
            col("prefix_group", r.clone().map(|r| r.prefix_group)),
            col("session", r.clone().map(|r| r.session)),
            col("turn", r.clone().map(|r| r.turn)),
            col("scheduled_unix_s", r.clone().map(|r| r.scheduled_unix_s)),
            col("sent_unix_s", r.clone().map(|r| r.sent_unix_s)),
            col("queue_s", r.clone().map(|r| r.queue_s)),
            col("headers_s", r.clone().map(|r| r.headers_s)),
            col("ttft_s", r.clone().map(|r| r.ttft_s)),
            col("ttft_reasoning_s", r.clone().map(|r| r.ttft_reasoning_s)),
            col("ttft_answer_s", r.clone().map(|r| r.ttft_answer_s)),
            col("e2e_s", r.clone().map(|r| r.e2e_s)),
            col("tpot_s", r.clone().map(|r| r.tpot_s)),
            col("end_s", r.clone().map(|r| r.end_s)),
            col("chunks", r.clone().map(|r| r.chunks)),
            col("reasoning_chunks", r.clone().map(|r| r.reasoning_chunks)),
            col("itl_mean_s", r.clone().map(|r| r.itl_mean_s)),
            col("itl_max_s", r.clone().map(|r| r.itl_max_s)),
            offsets.into(),
            col("prompt_tokens", r.clone().map(|r| r.prompt_tokens)),
            col("completion_tokens", r.clone().map(|r| r.completion_tokens)),
            col("cached_tokens", r.clone().map(|r| r.cached_tokens)),
            col("client_tokens", r.clone().map(|r| r.client_tokens)),
            col("output_chars", r.clone().map(|r| r.output_chars)),
            col(
                "finish_reason",
                r.clone().map(|r| r.finish_reason.as_deref()),
            ),
            col(
                "http_status",
                r.clone().map(|r| r.http_status.map(u32::from)),
            ),
            col("error_class", r.clone().map(|r| r.error_class.as_deref())),
            col(
                "error_message",
                r.clone().map(|r| r.error_message.as_deref()),
            ),
            col("retries", r.clone().map(|r| r.retries)),
        ],
    )
}

/// `points.parquet` layout for these rows.
pub fn points_frame(rows: &[PointRow]) -> PolarsResult<DataFrame> {
    let r = rows.iter();
    DataFrame::new(
        rows.len(),
        vec![
            col("run_id", r.clone().map(|r| r.run_id.as_str())),
            col("trial", r.clone().map(|r| r.trial)),
            col("point_id", r.clone().map(|r| r.point_id)),
            col("point_order", r.clone().map(|r| r.point_order)),
            col("concurrency", r.clone().map(|r| r.concurrency)),
            col(
                "input_tokens_target",
                r.clone().map(|r| r.input_tokens_target),
            ),
            col(
                "output_tokens_target",
                r.clone().map(|r| r.output_tokens_target),
            ),
            col("requests_planned", r.clone().map(|r| r.requests_planned)),
            col("requests_done", r.clone().map(|r| r.requests_done)),
            col("failures", r.clone().map(|r| r.failures)),
            col(
                "window_start_unix_s",
                r.clone().map(|r| r.window_start_unix_s),
            ),
            col("window_end_unix_s", r.clone().map(|r| r.window_end_unix_s)),
            col("output_tokens", r.clone().map(|r| r.output_tokens)),
            col("agg_output_tok_s", r.clone().map(|r| r.agg_output_tok_s)),
            col("send_lag_max_s", r.clone().map(|r| r.send_lag_max_s)),
            col("prompt_units", r.clone().map(|r| r.prompt_units)),
            col(
                "invalid_reason",
                r.clone().map(|r| r.invalid_reason.as_deref()),
            ),
            col(
                "server_prefix_cache_queries",
                r.clone().map(|r| r.server.prefix_cache_queries),
            ),
            col(
                "server_prefix_cache_hits",
                r.clone().map(|r| r.server.prefix_cache_hits),
            ),
            col(
                "server_cached_prompt_tokens",
                r.clone().map(|r| r.server.cached_prompt_tokens),
            ),
            col(
                "server_preemptions",
                r.clone().map(|r| r.server.preemptions),
            ),
            col("server_ttft_count", r.clone().map(|r| r.server.ttft_count)),
            col("server_ttft_sum_s", r.clone().map(|r| r.server.ttft_sum_s)),
            col(
                "server_spec_drafts",
                r.clone().map(|r| r.server.spec_drafts),
            ),
            col(
                "server_spec_accepted_tokens",
                r.clone().map(|r| r.server.spec_accepted_tokens),
            ),
            col(
                "server_spec_acceptance_length",
                r.clone().map(|r| r.server.spec_acceptance_length),
            ),
            col(
                "server_counters_json",
                r.clone().map(|r| r.server.counters_json.as_deref()),
            ),
        ],
    )
}
