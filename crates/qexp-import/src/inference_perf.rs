//! inference-perf's per-request lifecycle report
//! (`per_request_lifecycle_metrics.json`, written with
//! `report.request_lifecycle.per_request: true`, inference-perf 0.7), with
//! the run's summary (`summary_lifecycle_metrics.json`) and its stage report
//! (`stage_0_lifecycle_metrics.json`, which says the concurrency) beside it
//! where they were written. Each entry keeps the send and end times and
//! every chunk's arrival, so qexp recomputes every figure from them. None
//! of the files says inference-perf's version.

use crate::error::ImportError;
use crate::source::{parse_json, Config, Figure, Request, Source, Summary};
use qexp_plan::ApiKind;
use serde_json::Value;
use std::path::{Path, PathBuf};

const TOOL: &str = "inference-perf";

/// The version whose layout this reader knows.
pub(crate) const VERSION_PREFIX: &str = "0.7.";

/// The run's summary, beside the per-request report.
const SUMMARY_FILE: &str = "summary_lifecycle_metrics.json";

/// The single stage's report, beside it, which records the concurrency.
const STAGE_FILE: &str = "stage_0_lifecycle_metrics.json";

/// The fields of one per-request entry.
const ENTRY: &[&str] = &[
    "start_time",
    "end_time",
    "request",
    "response",
    "info",
    "computed_metrics",
    "error",
];

/// The fields of an entry's `info`.
const INFO: &[&str] = &[
    "request_metrics",
    "response_metrics",
    "extra_info",
    "lora_adapter",
    "graph_event_id",
    "labels",
    "input_tokens",
];

fn err(path: &Path, field: &str, problem: &str) -> ImportError {
    ImportError::Field {
        path: path.to_path_buf(),
        field: field.to_string(),
        problem: problem.to_string(),
    }
}

fn unknown_key<'a>(v: &'a Value, known: &[&str]) -> Option<&'a String> {
    v.as_object()?.keys().find(|k| !known.contains(&k.as_str()))
}

/// A JSON file beside `path`, with its SHA-256, when it is there.
fn beside(path: &Path, name: &str) -> Result<Option<(PathBuf, Value, String)>, ImportError> {
    let p = path.with_file_name(name);
    let Ok(bytes) = std::fs::read(&p) else {
        return Ok(None);
    };
    let doc = parse_json(&p, &bytes, TOOL)?;
    Ok(Some((p, doc, crate::source::hex_sha(&bytes))))
}

/// Reads `per_request_lifecycle_metrics.json` and the reports beside it.
pub(crate) fn read(path: &Path, bytes: &[u8], sha256: &str) -> Result<Source, ImportError> {
    let doc = parse_json(path, bytes, TOOL)?;
    let entries = doc.as_array().ok_or_else(|| {
        err(
            path,
            "(top level)",
            "is not a list of requests, so not inference-perf's per-request lifecycle report",
        )
    })?;
    let requests = entries
        .iter()
        .enumerate()
        .map(|(i, e)| request(path, e, i))
        .collect::<Result<Vec<_>, _>>()?;
    let summary = beside(path, SUMMARY_FILE)?;
    let stage = beside(path, STAGE_FILE)?;
    let mut unknown = vec![
        "the host, the git commit, the server's fingerprint and inference-perf's version: its reports record none of them".to_string(),
        "the wall-clock time of the run: inference-perf's times are on a monotonic clock".to_string(),
    ];
    if summary.is_none() {
        unknown.push(format!(
            "inference-perf's own summary ({SUMMARY_FILE} was not beside the report), so nothing is checked against it"
        ));
    }
    if requests.iter().any(|r| r.completion_tokens.is_none()) {
        unknown.push("the server's output token count of some requests (no usage): their TPOT is not recomputed".to_string());
    }
    let config = config(
        path,
        entries,
        stage.as_ref().map(|(p, d, _)| (p.as_path(), d)),
    )?;
    if config.concurrency == 0 {
        unknown.push(format!(
            "the concurrency ({STAGE_FILE} was not beside the report)"
        ));
    }
    let also = [&summary, &stage]
        .into_iter()
        .flatten()
        .map(|(p, _, sha)| (p.clone(), sha.clone()))
        .collect();
    Ok(Source {
        path: path.to_path_buf(),
        sha256: sha256.to_string(),
        tool_version: None,
        config,
        requests: Some(requests),
        summaries: summary.map(|(_, s, _)| summaries(&s)).unwrap_or_default(),
        unknown,
        started_at: None,
        also,
    })
}

/// The model and endpoint from the first request's payload, the
/// concurrency from the stage report.
fn config(
    path: &Path,
    entries: &[Value],
    stage: Option<(&Path, &Value)>,
) -> Result<Config, ImportError> {
    // The payload is kept as the JSON text that was sent.
    let payload: Option<Value> =
        entries
            .first()
            .and_then(|e| e.get("request"))
            .and_then(|r| match r {
                Value::String(text) => serde_json::from_str(text).ok(),
                other => Some(other.clone()),
            });
    let payload = payload.as_ref();
    let model = payload
        .and_then(|r| r.get("model"))
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    let api = match payload {
        Some(r) if r.get("messages").is_some() => ApiKind::Chat,
        Some(r) if r.get("prompt").is_some() => ApiKind::Completions,
        _ => return Err(err(
            path,
            "[0].request",
            "is missing or names neither `prompt` nor `messages`; run inference-perf with report.request_lifecycle.per_request_fields.request true",
        )),
    };
    let concurrency = match stage {
        Some((p, s)) => s
            .pointer("/load_summary/concurrency")
            .and_then(Value::as_u64)
            .map(|c| c as u32)
            .ok_or_else(|| {
                err(p, "load_summary.concurrency", "is missing or not a whole number; qexp imports inference-perf's concurrent load")
            })?,
        None => 0,
    };
    let requests = entries.len() as u32;
    Ok(Config {
        key: format!("{model}|{api:?}|c={concurrency}|n={requests}"),
        model,
        api,
        base_url: None,
        concurrency,
        open_loop: None,
        requests,
        prompt_counted_by: "by the server (its usage)",
    })
}

fn request(path: &Path, e: &Value, i: usize) -> Result<Request, ImportError> {
    let field = |f: &str| format!("[{i}].{f}");
    if let Some(k) = unknown_key(e, ENTRY) {
        return Err(err(path, &field(k), "is not in inference-perf 0.7's per-request entry; qexp refuses rather than guess what it means"));
    }
    let info = e
        .get("info")
        .filter(|v| v.is_object())
        .ok_or_else(|| err(path, &field("info"), "is missing; run inference-perf with report.request_lifecycle.per_request_fields.info true"))?;
    if let Some(k) = unknown_key(info, INFO) {
        return Err(err(path, &field(&format!("info.{k}")), "is not in inference-perf 0.7's per-request entry; qexp refuses rather than guess what it means"));
    }
    let time = |k: &str| {
        e.get(k)
            .and_then(Value::as_f64)
            .ok_or_else(|| err(path, &field(k), "is missing or not a number"))
    };
    let (start, end) = (time("start_time")?, time("end_time")?);
    let error = e.get("error").filter(|v| !v.is_null()).map(|v| {
        match v.get("error_msg").and_then(Value::as_str) {
            Some(m) => m.to_string(),
            None => v.to_string(),
        }
    });
    let rm = info.get("response_metrics").filter(|v| !v.is_null());
    let mut offsets = Vec::new();
    if error.is_none() {
        let times = rm
            .and_then(|r| r.get("chunk_times"))
            .and_then(Value::as_array)
            .ok_or_else(|| {
                err(
                    path,
                    &field("info.response_metrics.chunk_times"),
                    "is missing; qexp imports inference-perf's streamed runs (api.streaming: true)",
                )
            })?;
        for (j, t) in times.iter().enumerate() {
            let t = t.as_f64().ok_or_else(|| {
                err(
                    path,
                    &field(&format!("info.response_metrics.chunk_times[{j}]")),
                    "is not a number",
                )
            })?;
            offsets.push(t - start);
        }
    }
    let usage = |k: &str| {
        rm.and_then(|r| r.pointer(&format!("/server_usage/{k}")))
            .and_then(Value::as_u64)
            .map(|v| v as u32)
    };
    Ok(Request {
        sent_s: start,
        queue_s: None,
        end_s: end - start,
        chunk_offsets_s: offsets,
        first_last: None,
        prompt_tokens: usage("prompt_tokens"),
        prompt_tokens_planned: None,
        completion_tokens: usage("completion_tokens"),
        text: None,
        error,
    })
}

/// inference-perf's figures over its successful requests.
fn summaries(s: &Value) -> Vec<Summary> {
    const TTFT: &str =
        "inference-perf counts TTFT from the start of the request to the first token, as qexp does";
    const TPOT: &str = "inference-perf's TPOT is (last − first token time)/(output tokens − 1) per request with the output counted by re-tokenizing the text client-side, qexp's divides by the server's count (usage.completion_tokens)";
    const ITL: &str = "inference-perf's inter-token latencies are gaps between per-token times made by re-tokenizing each chunk (the tokens of one chunk share its time, so many gaps are 0), qexp's are gaps between chunks";
    const E2E: &str = "inference-perf's request latency ends when the response is read whole, qexp's E2E at the last content chunk";
    const THROUGHPUT: &str = "inference-perf counts the output tokens by re-tokenizing the text client-side (unless use_server_output_tokens), qexp takes the server's counts (usage.completion_tokens); both divide by first send → last end";
    let table: [(&str, Figure, &'static str); 8] = [
        (
            "latency.time_to_first_token.median",
            Figure::TtftMedian,
            TTFT,
        ),
        ("latency.time_to_first_token.p90", Figure::TtftP90, TTFT),
        (
            "latency.time_per_output_token.median",
            Figure::TpotMedian,
            TPOT,
        ),
        ("latency.inter_token_latency.median", Figure::ItlMedian, ITL),
        ("latency.inter_token_latency.p90", Figure::ItlP90, ITL),
        ("latency.inter_token_latency.p99", Figure::ItlP99, ITL),
        ("latency.request_latency.median", Figure::E2eMedian, E2E),
        (
            "throughput.output_tokens_per_sec",
            Figure::OutputThroughput,
            THROUGHPUT,
        ),
    ];
    table
        .into_iter()
        .filter_map(|(field, figure, definition)| {
            let pointer = format!("/successes/{}", field.replace('.', "/"));
            let v = s.pointer(&pointer)?.as_f64()?;
            Some(Summary {
                field: format!("successes.{field}"),
                figure,
                value: v,
                definition,
            })
        })
        .collect()
}
