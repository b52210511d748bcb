//! AIPerf's per-request export (`profile_export.jsonl`, one JSON record a
//! line) with its summary beside it (`profile_export_aiperf.json`, summary
//! `schema_version` 1.4, AIPerf 0.13), which says the configuration. Each
//! record keeps the send time, TTFT and every inter-chunk gap, so qexp
//! recomputes every figure from the chunk arrivals.

use crate::error::ImportError;
use crate::source::{hex_sha, json_error, parse_json, Config, Figure, Request, Source, Summary};
use chrono::{NaiveDateTime, TimeZone, Utc};
use qexp_plan::ApiKind;
use serde_json::Value;
use std::path::{Path, PathBuf};

const TOOL: &str = "AIPerf";

/// The summary layout this reader knows.
const SUMMARY_VERSION: &str = "1.4";

/// The summary's file name, beside the per-request export.
pub(crate) const SUMMARY_FILE: &str = "profile_export_aiperf.json";

/// The fields of one per-request record.
const RECORD: &[&str] = &["metadata", "metrics", "error"];

fn err(path: &Path, field: &str, problem: &str) -> ImportError {
    ImportError::Field {
        path: path.to_path_buf(),
        field: field.to_string(),
        problem: problem.to_string(),
    }
}

/// Reads `profile_export.jsonl` and the summary beside it.
pub(crate) fn read(path: &Path, bytes: &[u8], sha256: &str) -> Result<Source, ImportError> {
    let summary_path = path.with_file_name(SUMMARY_FILE);
    let summary_bytes = std::fs::read(&summary_path).map_err(|_| {
        err(path, SUMMARY_FILE, "is not beside it: qexp reads the configuration (concurrency, request count, model) from AIPerf's summary")
    })?;
    let summary = parse_json(&summary_path, &summary_bytes, TOOL)?;
    let version = summary.get("schema_version").and_then(Value::as_str);
    if version != Some(SUMMARY_VERSION) {
        return Err(err(
            &summary_path,
            "schema_version",
            &format!(
                "is {}, where qexp reads AIPerf's summary version {SUMMARY_VERSION} (AIPerf 0.13)",
                version.unwrap_or("missing")
            ),
        ));
    }
    let text = std::str::from_utf8(bytes).map_err(|_| {
        err(
            path,
            "(file)",
            "is not UTF-8 text, so not AIPerf's JSON lines",
        )
    })?;
    let mut requests = Vec::new();
    for (i, line) in text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
    {
        let record: Value =
            serde_json::from_str(line).map_err(|e| json_error(path, &e, i + 1, TOOL))?;
        requests.push(request(path, &record, i + 1)?);
    }
    let mut unknown = vec![
        "the host, the git commit and the server's fingerprint: AIPerf's summary records none of them".to_string(),
        "the text of the answers and finish reasons, so answers' health is not judged".to_string(),
    ];
    if requests.iter().any(|r| r.completion_tokens.is_none()) {
        unknown.push("the server's output token count of some requests (no usage): their TPOT is not recomputed".to_string());
    }
    Ok(Source {
        path: path.to_path_buf(),
        sha256: sha256.to_string(),
        tool_version: summary
            .get("aiperf_version")
            .and_then(Value::as_str)
            .map(str::to_string),
        config: config(&summary_path, &summary)?,
        requests: Some(requests),
        summaries: summaries(&summary),
        unknown,
        started_at: summary
            .get("start_time")
            .and_then(Value::as_str)
            .and_then(|t| NaiveDateTime::parse_from_str(t, "%Y-%m-%dT%H:%M:%S%.f").ok())
            .map(|t| Utc.from_utc_datetime(&t)),
        also: vec![(PathBuf::from(&summary_path), hex_sha(&summary_bytes))],
    })
}

fn config(path: &Path, s: &Value) -> Result<Config, ImportError> {
    let ic = s
        .get("input_config")
        .ok_or_else(|| err(path, "input_config", "is missing"))?;
    let phase = ic
        .pointer("/phases")
        .and_then(Value::as_array)
        .and_then(|p| {
            p.iter()
                .find(|p| p.get("kind").and_then(Value::as_str) == Some("profiling"))
        })
        .ok_or_else(|| err(path, "input_config.phases", "has no profiling phase"))?;
    if phase.get("type").and_then(Value::as_str) != Some("concurrency") {
        return Err(err(
            path,
            "input_config.phases[profiling].type",
            "is not `concurrency`; qexp imports AIPerf's concurrency phases",
        ));
    }
    let n = |k: &str| {
        phase
            .get(k)
            .and_then(Value::as_u64)
            .map(|v| v as u32)
            .ok_or_else(|| {
                err(
                    path,
                    &format!("input_config.phases[profiling].{k}"),
                    "is missing or not a whole number",
                )
            })
    };
    let model = ic
        .pointer("/models/items/0/name")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    let api = match ic.pointer("/endpoint/type").and_then(Value::as_str) {
        Some("chat") => ApiKind::Chat,
        Some("completions") => ApiKind::Completions,
        other => {
            return Err(err(
                path,
                "input_config.endpoint.type",
                &format!("is {other:?}; qexp imports chat and completions"),
            ))
        }
    };
    let base_url = ic
        .pointer("/endpoint/urls/0")
        .and_then(Value::as_str)
        .map(str::to_string);
    let (concurrency, requests) = (n("concurrency")?, n("requests")?);
    // The dataset's shape, not its seed: repeats with other seeds are trials.
    Ok(Config {
        key: format!(
            "{model}|{:?}|c={concurrency}|n={requests}|{}",
            base_url,
            ic.pointer("/datasets/0/prompts")
                .map(Value::to_string)
                .unwrap_or_default()
        ),
        model,
        api,
        base_url,
        concurrency,
        open_loop: None,
        requests,
        prompt_counted_by: "by the server (its usage)",
    })
}

fn request(path: &Path, r: &Value, line: usize) -> Result<Request, ImportError> {
    let field = |f: &str| format!("line {line}: {f}");
    if let Some(k) = r
        .as_object()
        .and_then(|o| o.keys().find(|k| !RECORD.contains(&k.as_str())))
    {
        return Err(err(path, &field(k), "is not in AIPerf 0.13's per-request record; qexp refuses rather than guess what it means"));
    }
    let ns = |k: &str| {
        r.pointer(&format!("/metadata/{k}"))
            .and_then(Value::as_f64)
            .ok_or_else(|| err(path, &field(&format!("metadata.{k}")), "is missing"))
    };
    let start = ns("request_start_ns")? / 1e9;
    let issued = ns("credit_issued_ns").map(|v| v / 1e9).ok();
    let metric = |k: &str| r.pointer(&format!("/metrics/{k}/value"));
    let ms = |k: &str| metric(k).and_then(Value::as_f64).map(|v| v / 1e3);
    let error = r.get("error").filter(|e| !e.is_null()).map(|e| {
        match e.get("message").and_then(Value::as_str) {
            Some(m) => m.to_string(),
            None => e.to_string(),
        }
    });
    let mut offsets = Vec::new();
    if let (None, Some(ttft)) = (&error, ms("time_to_first_token")) {
        offsets.push(ttft);
        if let Some(gaps) = metric("inter_chunk_latency").and_then(Value::as_array) {
            for (j, g) in gaps.iter().enumerate() {
                let g = g.as_f64().ok_or_else(|| {
                    err(
                        path,
                        &field(&format!("metrics.inter_chunk_latency[{j}]")),
                        "is not a number",
                    )
                })?;
                offsets.push(offsets[offsets.len() - 1] + g / 1e3);
            }
        }
    }
    let count = |k: &str| metric(k).and_then(Value::as_u64).map(|v| v as u32);
    Ok(Request {
        sent_s: start,
        queue_s: issued.map(|i| start - i).filter(|q| *q >= 0.0),
        end_s: ms("request_latency").unwrap_or(0.0),
        chunk_offsets_s: offsets,
        first_last: None,
        prompt_tokens: count("usage_prompt_tokens"),
        prompt_tokens_planned: None,
        completion_tokens: count("usage_completion_tokens"),
        text: None,
        error,
    })
}

/// AIPerf's figures over its requests.
fn summaries(s: &Value) -> Vec<Summary> {
    const TTFT: &str = "AIPerf counts TTFT from when it starts the request (connection set-up included), qexp from the wire";
    const ITL: &str = "AIPerf's inter-token latency is (latency − TTFT)/(output tokens − 1) with the output counted by AIPerf's own tokenizer on the text, qexp's TPOT divides by the server's count (usage.completion_tokens)";
    const ICL: &str = "AIPerf pools the gaps between chunks, as qexp does";
    const E2E: &str = "AIPerf's request latency ends when the response ends ([DONE]), qexp's E2E at the last content chunk";
    const THROUGHPUT: &str = "AIPerf counts output tokens with its own tokenizer and divides by the benchmark's duration; qexp takes the server's counts over first send → last completion";
    let table: [(&str, &str, Figure, f64, &'static str); 8] = [
        ("time_to_first_token", "p50", Figure::TtftMedian, 1e-3, TTFT),
        ("time_to_first_token", "p90", Figure::TtftP90, 1e-3, TTFT),
        ("inter_token_latency", "p50", Figure::TpotMedian, 1e-3, ITL),
        ("inter_chunk_latency", "p50", Figure::ItlMedian, 1e-3, ICL),
        ("inter_chunk_latency", "p90", Figure::ItlP90, 1e-3, ICL),
        ("inter_chunk_latency", "p99", Figure::ItlP99, 1e-3, ICL),
        ("request_latency", "p50", Figure::E2eMedian, 1e-3, E2E),
        (
            "output_token_throughput",
            "avg",
            Figure::OutputThroughput,
            1.0,
            THROUGHPUT,
        ),
    ];
    table
        .into_iter()
        .filter_map(|(metric, stat, figure, scale, definition)| {
            let v = s.get(metric)?.get(stat)?.as_f64()?;
            Some(Summary {
                field: format!("{metric}.{stat}"),
                figure,
                value: v * scale,
                definition,
            })
        })
        .collect()
}
