//! What every source format is read into: the tool's configuration, its
//! requests (when it kept them) and its own summary figures, each in
//! qexp's units (seconds, tok/s).

use crate::error::ImportError;
use chrono::{DateTime, Utc};
use qexp_plan::{ApiKind, OpenLoop};
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};

/// A source format `qexp import` reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// `vllm bench serve --save-result [--save-detailed]` JSON.
    Vllm,
    /// The Rust `vllm-bench --save-result [--save-detailed]` JSON: vLLM's
    /// layout with a few fields of its own.
    VllmBench,
    /// GuideLLM's `--output kind=json` benchmarks file.
    Guidellm,
    /// AIPerf's `profile_export.jsonl`, with `profile_export_aiperf.json` beside it.
    Aiperf,
    /// inference-perf's `per_request_lifecycle_metrics.json`, its summary and stage reports beside it.
    InferencePerf,
}

impl Format {
    /// Every format's name, as `qexp import` takes it.
    pub const NAMES: &'static [&'static str] =
        &["vllm", "vllm-bench", "guidellm", "aiperf", "inference-perf"];

    /// The format named `name`.
    pub fn from_name(name: &str) -> Option<Format> {
        match name {
            "vllm" => Some(Format::Vllm),
            "vllm-bench" => Some(Format::VllmBench),
            "guidellm" => Some(Format::Guidellm),
            "aiperf" => Some(Format::Aiperf),
            "inference-perf" => Some(Format::InferencePerf),
            _ => None,
        }
    }

    /// Its name.
    pub fn name(self) -> &'static str {
        match self {
            Format::Vllm => "vllm",
            Format::VllmBench => "vllm-bench",
            Format::Guidellm => "guidellm",
            Format::Aiperf => "aiperf",
            Format::InferencePerf => "inference-perf",
        }
    }

    /// The tool that writes it, as its users call it.
    pub fn tool(self) -> &'static str {
        match self {
            Format::Vllm => "vllm bench serve",
            Format::VllmBench => "vllm-bench",
            Format::Guidellm => "GuideLLM",
            Format::Aiperf => "AIPerf",
            Format::InferencePerf => "inference-perf",
        }
    }
}

/// One source file, read.
#[derive(Debug, Clone)]
pub(crate) struct Source {
    /// The file as given.
    pub path: PathBuf,
    /// SHA-256 of its bytes.
    pub sha256: String,
    /// The tool's version, where the file says it.
    pub tool_version: Option<String>,
    /// What the tool was asked; files with equal configurations are trials of one point.
    pub config: Config,
    /// Every request, in the order the tool listed them; None when the
    /// tool kept only summaries.
    pub requests: Option<Vec<Request>>,
    /// The tool's own summary figures.
    pub summaries: Vec<Summary>,
    /// One sentence per thing this file does not record.
    pub unknown: Vec<String>,
    /// When the tool says it ran.
    pub started_at: Option<DateTime<Utc>>,
    /// Other files read with this one (a summary beside it), with their SHA-256.
    pub also: Vec<(PathBuf, String)>,
}

/// A tool's configuration, as far as the file records it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Config {
    /// The model asked for.
    pub model: String,
    /// The endpoint kind.
    pub api: ApiKind,
    /// The server's base URL, where recorded.
    pub base_url: Option<String>,
    /// Cap on requests in flight (0: none).
    pub concurrency: u32,
    /// Open-loop arrivals, None for a closed loop.
    pub open_loop: Option<OpenLoop>,
    /// Measured requests.
    pub requests: u32,
    /// Whose count the requests' prompt lengths are (`the server's`, or
    /// the tool's tokenizer's): what `--plan` compares.
    pub prompt_counted_by: &'static str,
    /// Everything else that makes two files the same configuration, as one string.
    pub key: String,
}

/// One request as a tool recorded it, times in seconds.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Request {
    /// When it was sent, on the tool's clock (not necessarily Unix time).
    pub sent_s: f64,
    /// Time between its scheduled and actual send, where recorded.
    pub queue_s: Option<f64>,
    /// Arrival offsets of its streamed chunks from the send; the first is TTFT.
    pub chunk_offsets_s: Vec<f64>,
    /// For a tool that kept only the first and last chunk: (first, last,
    /// chunks) offsets and count; `chunk_offsets_s` is then empty.
    pub first_last: Option<(f64, f64, u32)>,
    /// Sent → the tool's end of the request.
    pub end_s: f64,
    /// Prompt tokens, as the server reported them.
    pub prompt_tokens: Option<u32>,
    /// Prompt tokens as the tool planned them with its own tokenizer, where
    /// that is all it kept (the server's count then is unknown).
    pub prompt_tokens_planned: Option<u32>,
    /// Output tokens, as the tool counted them.
    pub completion_tokens: Option<u32>,
    /// The generated text, where kept.
    pub text: Option<String>,
    /// The tool's error message, None when it succeeded.
    pub error: Option<String>,
}

/// A qexp metric a tool's summary figure is set beside.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Figure {
    /// Median TTFT, s.
    TtftMedian,
    /// 90th percentile TTFT, s.
    TtftP90,
    /// Median TPOT, s (qexp's is 1 / its median decode tok/s).
    TpotMedian,
    /// Median E2E, s.
    E2eMedian,
    /// Median inter-chunk gap, s.
    ItlMedian,
    /// 90th percentile inter-chunk gap, s.
    ItlP90,
    /// 99th percentile inter-chunk gap, s.
    ItlP99,
    /// Aggregate output tok/s.
    OutputThroughput,
}

impl Figure {
    /// The qexp metric's key.
    pub fn metric(self) -> &'static str {
        match self {
            Figure::TtftMedian => "ttft_s",
            Figure::TtftP90 => "ttft_p90_s",
            Figure::TpotMedian => "tpot_s",
            Figure::E2eMedian => "e2e_s",
            Figure::ItlMedian => "itl_p50_s",
            Figure::ItlP90 => "itl_p90_s",
            Figure::ItlP99 => "itl_p99_s",
            Figure::OutputThroughput => "agg_tok_s",
        }
    }
}

/// One summary figure of a tool.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Summary {
    /// The tool's field.
    pub field: String,
    /// The qexp metric it corresponds to.
    pub figure: Figure,
    /// Its value in qexp's unit.
    pub value: f64,
    /// How the tool's definition differs from qexp's, one sentence ("" when they match).
    pub definition: &'static str,
}

/// The SHA-256 of a file's bytes, in hex, as the manifest records it.
pub(crate) fn hex_sha(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

/// A JSON document, or the error naming where it stops being JSON.
pub(crate) fn parse_json(
    path: &Path,
    bytes: &[u8],
    tool: &'static str,
) -> Result<serde_json::Value, ImportError> {
    serde_json::from_slice(bytes).map_err(|e| json_error(path, &e, e.line(), tool))
}

/// The error for JSON that stops being JSON at `line` of `path`.
pub(crate) fn json_error(
    path: &Path,
    e: &serde_json::Error,
    line: usize,
    tool: &'static str,
) -> ImportError {
    ImportError::Json {
        path: path.to_path_buf(),
        line,
        column: e.column(),
        message: e
            .to_string()
            .split(" at line")
            .next()
            .unwrap_or_default()
            .to_string(),
        tool,
    }
}
