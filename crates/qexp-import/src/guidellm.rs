//! GuideLLM's JSON report (`guidellm run --output kind=json`, report
//! `metadata.version` 2, GuideLLM 0.8). Each benchmark of a file (one per
//! profile step) is one configuration. GuideLLM keeps per request the
//! times of its first and last token iterations, not every chunk's, so
//! qexp recomputes TTFT, E2E, TPOT and the mean gap, not pooled ITL
//! percentiles.

use crate::error::ImportError;
use crate::source::{parse_json, Config, Figure, Request, Source, Summary};
use chrono::{TimeZone, Utc};
use qexp_plan::{ApiKind, Arrival, OpenLoop, Stage};
use serde_json::Value;
use std::path::Path;

const TOOL: &str = "GuideLLM";

/// The report layout this reader knows (`metadata.version`).
const REPORT_VERSION: u64 = 2;

/// The top-level fields of a report, and of each request record.
const TOP: &[&str] = &["metadata", "config", "benchmarks", "conclusions"];
const REQUEST: &[&str] = &[
    "avg_round_trip_time_ms",
    "cached_tokens",
    "info",
    "input_metrics",
    "inter_token_latency_ms",
    "iter_tokens_per_iteration",
    "output",
    "output_metrics",
    "output_tokens",
    "output_tokens_per_iteration",
    "output_tokens_per_second",
    "prompt_tokens",
    "reasoning_output",
    "request_args",
    "request_dispatch_delay",
    "request_end_time",
    "request_id",
    "request_latency",
    "request_scheduled_latency",
    "request_start_time",
    "response_id",
    "response_metrics",
    "time_per_output_token_ms",
    "time_to_first_output_token_ms",
    "time_to_first_token_ms",
    "time_to_last_round_trip_ms",
    "tokens_per_second",
    "tool_calls",
    "total_tokens",
    "turn_predecessor_delay",
    "turn_scheduling_delay",
    "type_",
];

fn err(path: &Path, field: &str, problem: &str) -> ImportError {
    ImportError::Field {
        path: path.to_path_buf(),
        field: field.to_string(),
        problem: problem.to_string(),
    }
}

/// `doc` at a dotted `field`, or the error naming it.
fn at<'a>(path: &Path, doc: &'a Value, field: &str) -> Result<&'a Value, ImportError> {
    field
        .split('.')
        .try_fold(doc, |v, k| v.get(k))
        .ok_or_else(|| err(path, field, "is missing"))
}

/// Reads one report: a source per benchmark.
pub(crate) fn read(path: &Path, bytes: &[u8], sha256: &str) -> Result<Vec<Source>, ImportError> {
    let doc = parse_json(path, bytes, TOOL)?;
    let top = doc.as_object().ok_or_else(|| {
        err(
            path,
            "(top level)",
            "is not a JSON object, so this is not a GuideLLM report",
        )
    })?;
    if !top.contains_key("benchmarks") || !top.contains_key("metadata") {
        return Err(err(
            path,
            "benchmarks",
            "is missing: this is not a GuideLLM report",
        ));
    }
    if let Some(k) = top.keys().find(|k| !TOP.contains(&k.as_str())) {
        return Err(err(path, k, "is not in the GuideLLM report layout qexp reads (version 2); qexp refuses rather than guess what it means"));
    }
    let version = at(path, &doc, "metadata.version")?.as_u64();
    if version != Some(REPORT_VERSION) {
        return Err(err(
            path,
            "metadata.version",
            &format!(
                "is {}, where qexp reads version {REPORT_VERSION} (GuideLLM 0.8)",
                at(path, &doc, "metadata.version")?
            ),
        ));
    }
    let tool_version = at(path, &doc, "metadata.guidellm_version")?
        .as_str()
        .map(str::to_string);
    let benchmarks = at(path, &doc, "benchmarks")?
        .as_array()
        .ok_or_else(|| err(path, "benchmarks", "is not an array"))?;
    benchmarks
        .iter()
        .enumerate()
        .map(|(i, b)| {
            let source = Benchmark {
                path,
                b,
                prefix: format!("benchmarks[{i}]"),
            }
            .source()?;
            Ok(Source {
                sha256: sha256.to_string(),
                tool_version: tool_version.clone(),
                ..source
            })
        })
        .collect()
}

/// One benchmark of a report.
struct Benchmark<'a> {
    path: &'a Path,
    b: &'a Value,
    prefix: String,
}

impl Benchmark<'_> {
    fn field(&self, f: &str) -> String {
        format!("{}.{f}", self.prefix)
    }

    fn get(&self, f: &str) -> Result<&Value, ImportError> {
        self.b
            .pointer(&format!("/{}", f.replace('.', "/")))
            .ok_or_else(|| err(self.path, &self.field(f), "is missing"))
    }

    fn num(&self, f: &str) -> Result<f64, ImportError> {
        self.get(f)?
            .as_f64()
            .ok_or_else(|| err(self.path, &self.field(f), "is not a number"))
    }

    fn source(&self) -> Result<Source, ImportError> {
        let config = self.config()?;
        let requests = self.requests()?;
        Ok(Source {
            path: self.path.to_path_buf(),
            sha256: String::new(),
            tool_version: None,
            config,
            requests: Some(requests),
            summaries: self.summaries(),
            unknown: vec![
                "the host, the git commit and the server's fingerprint: GuideLLM records none".to_string(),
                "each chunk's arrival: GuideLLM keeps only the first and last token iterations per request, so ITL percentiles are not recomputed (the mean gap is)".to_string(),
                "finish reasons and HTTP statuses, so answers' health is not judged".to_string(),
            ],
            started_at: Utc.timestamp_opt(self.num("start_time")? as i64, 0).single(),
            also: Vec::new(),
        })
    }

    fn config(&self) -> Result<Config, ImportError> {
        let s = |f: &str| -> Result<String, ImportError> {
            Ok(self.get(f)?.as_str().unwrap_or_default().to_string())
        };
        let kind = s("config.strategy.type_")?;
        let api = match s("config.backend.request_format")?.as_str() {
            "/v1/chat/completions" => ApiKind::Chat,
            "/v1/completions" => ApiKind::Completions,
            other => {
                return Err(err(
                    self.path,
                    &self.field("config.backend.request_format"),
                    &format!(
                        "is `{other}`; qexp imports the streamed chat and completions endpoints"
                    ),
                ))
            }
        };
        let (concurrency, open_loop) = match kind.as_str() {
            "concurrent" => (self.num("config.strategy.streams")? as u32, None),
            "synchronous" => (1, None),
            "constant" | "poisson" => {
                let rate = self.num("config.strategy.rate")?;
                let requests = self.num("metrics.request_totals.total")? as u32;
                let arrival = if kind == "constant" { Arrival::Constant } else { Arrival::Poisson };
                (0, Some(OpenLoop { arrival, burstiness: 1.0, max_in_flight: None, stages: vec![Stage { rate, requests }], trace: None }))
            }
            other => return Err(err(self.path, &self.field("config.strategy.type_"), &format!("is `{other}`; qexp imports concurrent, synchronous, constant and poisson benchmarks"))),
        };
        let requests = self.num("metrics.request_totals.total")? as u32;
        let key = format!(
            "{kind}|{}|{}|c={concurrency}|rate={:?}|requests={requests}",
            s("config.backend.target")?,
            s("config.backend.model")?,
            open_loop.as_ref().map(OpenLoop::rate)
        );
        Ok(Config {
            model: s("config.backend.model")?,
            api,
            base_url: Some(s("config.backend.target")?),
            concurrency,
            open_loop,
            requests,
            prompt_counted_by: "by the server (its usage)",
            key,
        })
    }

    fn requests(&self) -> Result<Vec<Request>, ImportError> {
        let mut out = Vec::new();
        for group in ["successful", "errored", "incomplete"] {
            let Some(list) = self.get(&format!("requests.{group}"))?.as_array() else {
                continue;
            };
            for (i, r) in list.iter().enumerate() {
                out.push(self.request(
                    r,
                    &format!("requests.{group}[{i}]"),
                    group != "successful",
                )?);
            }
        }
        Ok(out)
    }

    fn request(&self, r: &Value, name: &str, failed: bool) -> Result<Request, ImportError> {
        let field = |f: &str| format!("{}.{name}.{f}", self.prefix);
        if let Some(k) = r
            .as_object()
            .and_then(|o| o.keys().find(|k| !REQUEST.contains(&k.as_str())))
        {
            return Err(err(self.path, &field(k), "is not in the GuideLLM report layout qexp reads (version 2); qexp refuses rather than guess what it means"));
        }
        let t = |f: &str| -> Result<Option<f64>, ImportError> {
            match r.pointer(&format!("/info/timings/{f}")) {
                None => Err(err(
                    self.path,
                    &field(&format!("info.timings.{f}")),
                    "is missing",
                )),
                Some(v) => Ok(v.as_f64()),
            }
        };
        let start = t("request_start")?
            .ok_or_else(|| err(self.path, &field("info.timings.request_start"), "is null"))?;
        let end = t("request_end")?.unwrap_or(start);
        let first = t("first_token_iteration")?;
        let last = t("last_token_iteration")?;
        let iterations = r
            .pointer("/info/timings/token_iterations")
            .and_then(Value::as_u64)
            .unwrap_or(0) as u32;
        let queued = t("queued")?.map(|q| start - q).filter(|q| *q >= 0.0);
        let count = |f: &str| r.get(f).and_then(Value::as_u64).map(|v| v as u32);
        let error = if failed {
            Some(
                r.pointer("/info/error")
                    .and_then(Value::as_str)
                    .unwrap_or("failed (GuideLLM gave no message)")
                    .to_string(),
            )
        } else {
            None
        };
        Ok(Request {
            sent_s: start,
            queue_s: queued,
            chunk_offsets_s: Vec::new(),
            first_last: match (first, last) {
                (Some(f), Some(l)) if iterations > 0 => Some((f - start, l - start, iterations)),
                _ => None,
            },
            end_s: end - start,
            prompt_tokens: count("prompt_tokens"),
            prompt_tokens_planned: None,
            completion_tokens: count("output_tokens"),
            text: r.get("output").and_then(Value::as_str).map(str::to_string),
            error,
        })
    }

    /// GuideLLM's figures over its successful requests.
    fn summaries(&self) -> Vec<Summary> {
        const TTFT: &str = "GuideLLM's percentiles take one request's value (its median is the lower of the two middle requests of an even count), qexp's interpolate linearly as numpy's; and GuideLLM counts TTFT from just before it sends the request, qexp from the wire";
        const ITL: &str = "GuideLLM's inter-token latency is (last token − first token)/(output tokens − 1) per request, qexp's TPOT; its median takes one request's value where qexp's interpolates";
        const TPOT: &str = "GuideLLM's time per output token divides the whole request latency, TTFT included, by the output tokens; qexp's TPOT leaves the first token out: (E2E − TTFT)/(output tokens − 1)";
        const E2E: &str = "GuideLLM's request latency ends when the response is closed, qexp's E2E at the last content chunk; and GuideLLM's percentiles take one request's value where qexp's interpolate";
        let table: [(&str, Figure, f64, &'static str); 6] = [
            (
                "metrics.time_to_first_token_ms.successful.median",
                Figure::TtftMedian,
                1e-3,
                TTFT,
            ),
            (
                "metrics.time_to_first_token_ms.successful.percentiles.p90",
                Figure::TtftP90,
                1e-3,
                TTFT,
            ),
            (
                "metrics.inter_token_latency_ms.successful.median",
                Figure::TpotMedian,
                1e-3,
                ITL,
            ),
            (
                "metrics.time_per_output_token_ms.successful.median",
                Figure::TpotMedian,
                1e-3,
                TPOT,
            ),
            (
                "metrics.request_latency.successful.median",
                Figure::E2eMedian,
                1.0,
                E2E,
            ),
            (
                "metrics.request_latency.successful.percentiles.p50",
                Figure::E2eMedian,
                1.0,
                E2E,
            ),
        ];
        table
            .into_iter()
            .filter_map(|(f, figure, scale, definition)| {
                let v = self.num(f).ok()?;
                Some(Summary {
                    field: f.to_string(),
                    figure,
                    value: v * scale,
                    definition,
                })
            })
            .collect()
    }
}
