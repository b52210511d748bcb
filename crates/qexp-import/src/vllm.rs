//! `vllm bench serve --save-result` JSON (vLLM 0.32's layout), with
//! `--save-detailed` for the per-request arrays. vLLM's benchmark times
//! each request from `time.perf_counter()` just before it posts it; TTFT
//! is the first SSE chunk with `choices` (content or not), each later such
//! chunk adds a gap to `itls`, and `latencies` ends at the last of them.
//!
//! The Rust `vllm-bench` (vllm-project/vllm-bench 0.1.0, the standalone
//! repository's last commit f3131823f167) writes the same layout and times
//! a request the same way, with these differences: `input_lens` is its own
//! tokenizer's count of the prompt text (chat template excluded), not the
//! server's; it writes no `queue_times`; `date` is RFC 3339; and it adds
//! `max_model_len`, `input_throughput`, `steady_state` (its figures over
//! the saturated plateau), `failed_requests` (one entry per failure) and,
//! for speculative decoding, `spec_decode_*`.

use crate::error::ImportError;
use crate::source::{parse_json, Config, Figure, Format, Request, Source, Summary};
use chrono::{DateTime, NaiveDateTime, TimeZone, Utc};
use qexp_plan::{ApiKind, Arrival, OpenLoop, Stage};
use serde_json::{Map, Value};
use std::path::Path;

/// Which of the two tools wrote the file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Flavor {
    /// Python's `vllm bench serve`.
    Serve,
    /// The Rust `vllm-bench`.
    Rust,
}

impl Flavor {
    fn tool(self) -> &'static str {
        match self {
            Flavor::Serve => "vllm bench serve",
            Flavor::Rust => "vllm-bench",
        }
    }

    /// The top-level fields this tool writes beyond [`KNOWN`].
    fn own(self) -> &'static [&'static str] {
        match self {
            Flavor::Serve => &[],
            Flavor::Rust => RUST_ONLY,
        }
    }
}

/// The fields only the Rust vllm-bench writes; `steady_state` always.
const RUST_ONLY: &[&str] = &[
    "max_model_len",
    "input_throughput",
    "steady_state",
    "failed_requests",
    "spec_decode_acceptance_rate",
    "spec_decode_acceptance_length",
    "spec_decode_num_drafts",
    "spec_decode_draft_tokens",
    "spec_decode_accepted_tokens",
    "spec_decode_per_position_acceptance_rates",
];

/// The top-level fields vLLM 0.32 writes besides the per-metric statistics.
const KNOWN: &[&str] = &[
    "date",
    "endpoint_type",
    "backend",
    "label",
    "model_id",
    "tokenizer_id",
    "num_prompts",
    "request_rate",
    "burstiness",
    "max_concurrency",
    "duration",
    "completed",
    "failed",
    "total_input_tokens",
    "total_output_tokens",
    "request_throughput",
    "request_goodput",
    "output_throughput",
    "total_token_throughput",
    "max_output_tokens_per_s",
    "max_concurrent_requests",
    "rtfx",
    "ramp_up_strategy",
    "ramp_up_start_rps",
    "ramp_up_end_rps",
];

/// The per-request arrays of `--save-detailed`; all have one entry per request.
const DETAILED: &[&str] = &[
    "input_lens",
    "output_lens",
    "ttfts",
    "itls",
    "latencies",
    "start_times",
    "queue_times",
    "generated_texts",
    "errors",
];

/// Statistic prefixes and metric names of `<stat>_<metric>_ms` fields.
const STATS: &[&str] = &["mean", "median", "std"];
const METRICS: &[&str] = &[
    "ttft",
    "tpot",
    "itl",
    "e2el",
    "client_queue_time",
    "e2el_including_client_queue",
];

/// True for a `<stat>_<metric>_ms` field (`p99_ttft_ms`, `median_e2el_ms`).
fn is_statistic(key: &str) -> bool {
    let Some(body) = key.strip_suffix("_ms") else {
        return false;
    };
    METRICS.iter().any(|m| {
        body.strip_suffix(m)
            .and_then(|s| s.strip_suffix('_'))
            .is_some_and(|stat| {
                STATS.contains(&stat)
                    || stat
                        .strip_prefix('p')
                        .is_some_and(|p| !p.is_empty() && p.parse::<f64>().is_ok())
            })
    })
}

/// Reads one file.
pub(crate) fn read(
    path: &Path,
    bytes: &[u8],
    sha256: String,
    format: Format,
) -> Result<Source, ImportError> {
    let flavor = match format {
        Format::VllmBench => Flavor::Rust,
        _ => Flavor::Serve,
    };
    let doc = parse_json(path, bytes, flavor.tool())?;
    let f = Fields {
        path,
        flavor,
        doc: doc.as_object().ok_or_else(|| {
            field_error(
                path,
                "(top level)",
                &format!(
                    "is not a JSON object, so this is not a {} result",
                    flavor.tool()
                ),
            )
        })?,
    };
    f.check_known()?;
    let config = f.config()?;
    let requests = f.requests()?;
    let summaries = f.summaries()?;
    let mut unknown = f.unknowns();
    if requests.is_none() {
        unknown.push("per-request data: the file was saved without --save-detailed, so the run holds the tool's summaries only".to_string());
    }
    let started_at = f.opt_str("date")?.and_then(|d| {
        DateTime::parse_from_rfc3339(d)
            .map(|t| t.with_timezone(&Utc))
            .or_else(|_| {
                NaiveDateTime::parse_from_str(d, "%Y%m%d-%H%M%S").map(|d| Utc.from_utc_datetime(&d))
            })
            .ok()
    });
    Ok(Source {
        path: path.to_path_buf(),
        sha256,
        tool_version: None,
        config,
        requests,
        summaries,
        unknown,
        started_at,
        also: Vec::new(),
    })
}

fn field_error(path: &Path, field: &str, problem: &str) -> ImportError {
    ImportError::Field {
        path: path.to_path_buf(),
        field: field.to_string(),
        problem: problem.to_string(),
    }
}

/// The document's fields, each read with an error naming it.
struct Fields<'a> {
    path: &'a Path,
    flavor: Flavor,
    doc: &'a Map<String, Value>,
}

impl Fields<'_> {
    fn err(&self, field: &str, problem: &str) -> ImportError {
        field_error(self.path, field, problem)
    }

    /// Refuses a field the tool (vLLM 0.32, vllm-bench 0.1) does not
    /// write: a newer version's, or another tool's file.
    fn check_known(&self) -> Result<(), ImportError> {
        let tool = self.flavor.tool();
        if !self.doc.contains_key("ttfts") && !self.doc.contains_key("median_ttft_ms") {
            return Err(self.err(
                "median_ttft_ms",
                &format!("is missing: this is not a {tool} result"),
            ));
        }
        if self.flavor == Flavor::Rust && !self.doc.contains_key("steady_state") {
            return Err(self.err("steady_state", "is missing, which vllm-bench always writes: this is not a vllm-bench result (vllm bench serve's? import it as `vllm`)"));
        }
        let known = |k: &str| {
            KNOWN.contains(&k)
                || DETAILED.contains(&k)
                || self.flavor.own().contains(&k)
                || is_statistic(k)
        };
        match self.doc.keys().find(|k| !known(k)) {
            Some(k) if RUST_ONLY.contains(&k.as_str()) => Err(self.err(k, "is written by the Rust vllm-bench, not vllm bench serve: import the file as `vllm-bench`")),
            Some(k) => Err(self.err(k, &format!("is not in the {tool} {} format qexp reads (a newer version, or --metadata?); qexp refuses rather than guess what it means", match self.flavor {
                Flavor::Serve => "0.32",
                Flavor::Rust => "0.1",
            }))),
            None => Ok(()),
        }
    }

    /// What the file does not say, one sentence each.
    fn unknowns(&self) -> Vec<String> {
        let tool = self.flavor.tool();
        let mut unknown = vec![
            format!("the {tool} version: the file does not record it (give --tool-version)"),
            format!("the host, the git commit and the server's fingerprint: {tool} records none"),
            "the wall-clock time of each send: start_times are a monotonic clock, kept as they are (differences hold)".to_string(),
            format!("which chunks carried content: {tool} times every chunk with choices, so an empty first or last chunk counts in its TTFT, ITL and E2E, and in this import's"),
            "finish reasons and HTTP statuses, so answers' health is not judged".to_string(),
            format!("warmup requests: {tool} does not save them"),
        ];
        match self.flavor {
            Flavor::Serve => unknown.push("the time zone of `date` (taken as UTC); it is when the file was saved".to_string()),
            Flavor::Rust => unknown.push("the server's prompt token counts: vllm-bench's input_lens are its own tokenizer's count of the prompt text, chat template excluded, kept as the planned lengths".to_string()),
        }
        unknown
    }

    fn opt_str(&self, key: &str) -> Result<Option<&str>, ImportError> {
        match self.doc.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(s)),
            Some(_) => Err(self.err(key, "is not a string")),
        }
    }

    fn opt_f64(&self, key: &str) -> Result<Option<f64>, ImportError> {
        match self.doc.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::Number(n)) => Ok(n.as_f64()),
            // vLLM writes an unbounded rate as the string "inf".
            Some(Value::String(s)) if s == "inf" => Ok(Some(f64::INFINITY)),
            Some(_) => Err(self.err(key, "is not a number")),
        }
    }

    fn u32_of(&self, key: &str) -> Result<u32, ImportError> {
        self.opt_f64(key)?
            .filter(|v| *v >= 0.0 && v.fract() == 0.0 && *v <= f64::from(u32::MAX))
            .map(|v| v as u32)
            .ok_or_else(|| self.err(key, "is missing or not a whole number"))
    }

    fn config(&self) -> Result<Config, ImportError> {
        let model = self
            .opt_str("model_id")?
            .ok_or_else(|| self.err("model_id", "is missing"))?;
        let endpoint = self
            .opt_str("endpoint_type")?
            .or(self.opt_str("backend")?)
            .unwrap_or("");
        let api = match endpoint {
            "openai-chat" => ApiKind::Chat,
            "openai" | "vllm" => ApiKind::Completions,
            other => return Err(self.err("endpoint_type", &format!("is `{other}`; qexp imports the streamed OpenAI chat (`openai-chat`) and completions (`openai`, `vllm`) endpoints"))),
        };
        let concurrency = match self.doc.get("max_concurrency") {
            None | Some(Value::Null) => 0,
            _ => self.u32_of("max_concurrency")?,
        };
        let rate = self.opt_f64("request_rate")?.unwrap_or(f64::INFINITY);
        let burstiness = self.opt_f64("burstiness")?.unwrap_or(1.0);
        let requests = self.u32_of("num_prompts")?;
        let open_loop = rate.is_finite().then(|| OpenLoop {
            arrival: if burstiness == 1.0 {
                Arrival::Poisson
            } else {
                Arrival::Gamma
            },
            burstiness,
            max_in_flight: (concurrency > 0).then_some(concurrency),
            stages: vec![Stage { rate, requests }],
            trace: None,
        });
        let key = format!(
            "{endpoint}|{model}|{}|rate={rate}|burstiness={burstiness}|max_concurrency={concurrency}|num_prompts={requests}|{}",
            self.opt_str("tokenizer_id")?.unwrap_or(""),
            self.opt_str("label")?.unwrap_or("")
        );
        Ok(Config {
            model: model.to_string(),
            api,
            base_url: None,
            concurrency,
            open_loop,
            requests,
            prompt_counted_by: match self.flavor {
                Flavor::Serve => "by the server (its usage)",
                Flavor::Rust => "by vllm-bench's own tokenizer, chat template excluded",
            },
            key,
        })
    }

    /// The array `key` with `n` entries, or None when absent.
    fn array(&self, key: &str, n: Option<usize>) -> Result<Option<&Vec<Value>>, ImportError> {
        match self.doc.get(key) {
            None => Ok(None),
            Some(Value::Array(a)) => match n {
                Some(n) if a.len() != n => Err(self.err(key, &format!("has {} entries where `ttfts` has {n}: the per-request arrays must have one entry per request", a.len()))),
                _ => Ok(Some(a)),
            },
            Some(_) => Err(self.err(key, "is not an array")),
        }
    }

    fn numbers(&self, key: &str, n: usize) -> Result<Vec<f64>, ImportError> {
        let a = self.array(key, Some(n))?.ok_or_else(|| {
            self.err(
                key,
                "is missing though `ttfts` is there (a cut --save-detailed file?)",
            )
        })?;
        a.iter()
            .enumerate()
            .map(|(i, v)| {
                v.as_f64()
                    .ok_or_else(|| self.err(&format!("{key}[{i}]"), "is not a number"))
            })
            .collect()
    }

    /// The per-request arrays as requests; None without `--save-detailed`.
    fn requests(&self) -> Result<Option<Vec<Request>>, ImportError> {
        let Some(ttfts) = self.array("ttfts", None)? else {
            // vLLM writes `latencies` and `queue_times` without --save-detailed too.
            let detailed_only = DETAILED
                .iter()
                .filter(|k| !matches!(**k, "latencies" | "queue_times"));
            if let Some(k) = detailed_only
                .into_iter()
                .find(|k| self.doc.contains_key(**k))
            {
                return Err(self.err(
                    "ttfts",
                    &format!("is missing though `{k}` is there (a cut --save-detailed file?)"),
                ));
            }
            return Ok(None);
        };
        let n = ttfts.len();
        let ttft = self.numbers("ttfts", n)?;
        let latency = self.numbers("latencies", n)?;
        let start = self.numbers("start_times", n)?;
        let input = self.numbers("input_lens", n)?;
        let output = self.numbers("output_lens", n)?;
        let queue = match self.array("queue_times", Some(n))? {
            Some(_) => Some(self.numbers("queue_times", n)?),
            None => None,
        };
        let itls = self.array("itls", Some(n))?.ok_or_else(|| {
            self.err(
                "itls",
                "is missing though `ttfts` is there (a cut --save-detailed file?)",
            )
        })?;
        let texts = self.array("generated_texts", Some(n))?;
        let errors = self.array("errors", Some(n))?;
        let completed = self.u32_of("completed")? as usize + self.u32_of("failed")? as usize;
        if completed != n {
            return Err(self.err(
                "ttfts",
                &format!("has {n} entries where `completed` + `failed` is {completed}"),
            ));
        }
        (0..n)
            .map(|i| {
                let gaps = itls[i]
                    .as_array()
                    .ok_or_else(|| self.err(&format!("itls[{i}]"), "is not an array"))?;
                let error = errors
                    .and_then(|e| e[i].as_str())
                    .filter(|e| !e.is_empty())
                    .map(str::to_string);
                let offsets = match error {
                    None => self.offsets(i, ttft[i], gaps)?,
                    Some(_) => Vec::new(),
                };
                Ok(Request {
                    sent_s: start[i],
                    queue_s: queue.as_ref().map(|q| q[i]),
                    chunk_offsets_s: offsets,
                    first_last: None,
                    end_s: latency[i],
                    // vllm bench serve takes the server's usage; vllm-bench keeps its own count.
                    prompt_tokens: count(input[i]).filter(|_| self.flavor == Flavor::Serve),
                    prompt_tokens_planned: count(input[i]).filter(|_| self.flavor == Flavor::Rust),
                    completion_tokens: if error.is_none() {
                        count(output[i])
                    } else {
                        None
                    },
                    text: texts.and_then(|t| t[i].as_str()).map(str::to_string),
                    error,
                })
            })
            .collect::<Result<Vec<_>, _>>()
            .map(Some)
    }

    /// Request `i`'s chunk offsets: its first token at `ttft`, then each
    /// of its gaps between tokens (`itls[i]`) added on.
    fn offsets(&self, i: usize, ttft: f64, gaps: &[Value]) -> Result<Vec<f64>, ImportError> {
        let mut offsets = Vec::with_capacity(gaps.len() + 1);
        offsets.push(ttft);
        for (j, g) in gaps.iter().enumerate() {
            let g = g
                .as_f64()
                .ok_or_else(|| self.err(&format!("itls[{i}][{j}]"), "is not a number"))?;
            offsets.push(offsets[offsets.len() - 1] + g);
        }
        Ok(offsets)
    }

    /// The tool's summary figures qexp can set beside its own.
    fn summaries(&self) -> Result<Vec<Summary>, ImportError> {
        const TTFT: &str = "vllm bench serve counts TTFT from just before it posts the request (connection set-up included) to the first chunk with choices, content or not; qexp counts from the wire to the first chunk with content";
        const TPOT: &str = "same formula per request; qexp's figure is 1 / the median of 1/TPOT, which differs from the median TPOT only between the two middle requests of an even count";
        const E2E: &str = "vllm bench serve ends a request at its last chunk with choices, qexp at its last content chunk";
        const ITL: &str = "vllm bench serve pools the gaps between chunks with choices; qexp pools the gaps between content chunks";
        const THROUGHPUT: &str = "vllm bench serve divides by the benchmark's duration (from before the first request to after the last); qexp by first send → last completion";
        let table: [(&str, Figure, f64, &'static str); 8] = [
            ("median_ttft_ms", Figure::TtftMedian, 1e-3, TTFT),
            ("p90_ttft_ms", Figure::TtftP90, 1e-3, TTFT),
            ("median_tpot_ms", Figure::TpotMedian, 1e-3, TPOT),
            ("median_e2el_ms", Figure::E2eMedian, 1e-3, E2E),
            ("median_itl_ms", Figure::ItlMedian, 1e-3, ITL),
            ("p90_itl_ms", Figure::ItlP90, 1e-3, ITL),
            ("p99_itl_ms", Figure::ItlP99, 1e-3, ITL),
            (
                "output_throughput",
                Figure::OutputThroughput,
                1.0,
                THROUGHPUT,
            ),
        ];
        let mut out = Vec::new();
        for (field, figure, scale, definition) in table {
            if let Some(v) = self.opt_f64(field)? {
                out.push(Summary {
                    field: field.to_string(),
                    figure,
                    value: v * scale,
                    definition,
                });
            }
        }
        Ok(out)
    }
}

/// A token count the tool wrote as a number.
fn count(v: f64) -> Option<u32> {
    (v >= 0.0 && v.fract() == 0.0 && v <= f64::from(u32::MAX)).then_some(v as u32)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statistic_fields() {
        for ok in [
            "median_ttft_ms",
            "p99_itl_ms",
            "p99.9_e2el_ms",
            "std_tpot_ms",
            "mean_client_queue_time_ms",
        ] {
            assert!(is_statistic(ok), "{ok}");
        }
        for no in [
            "median_ttft",
            "p_ttft_ms",
            "best_ttft_ms",
            "median_foo_ms",
            "ttft_ms",
        ] {
            assert!(!is_statistic(no), "{no}");
        }
    }
}
