//! `qexp export llmd`: a run as llm-d-benchmark's Benchmark Report
//! (schema v0.2.1), one report per (trial, point), so llm-d's analysis and
//! dashboards read qexp's results. The statistics are over the measured
//! requests of the (trial, point) (warmups and graded items left out);
//! latencies over the successful ones. Fields qexp does not know (the
//! stack, observability) are left out, as the schema allows.

use crate::error::ImportError;
use polars::prelude::*;
use qexp_analysis::stats::{quantile, sorted_finite};
use qexp_plan::Point;
use qexp_store::{requests as rq, Manifest, PointRow};
use serde::Serialize;
use std::path::{Path, PathBuf};

/// The Benchmark Report schema version written.
pub const LLMD_SCHEMA_VERSION: &str = "0.2.1";

/// One Benchmark Report.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    version: &'static str,
    run: RunInfo,
    scenario: Scenario,
    results: Results,
}

#[derive(Debug, Clone, Serialize)]
struct RunInfo {
    uid: String,
    eid: String,
    time: RunTime,
    #[serde(skip_serializing_if = "Option::is_none")]
    description: Option<String>,
    keywords: Vec<String>,
}

#[derive(Debug, Clone, Serialize)]
struct RunTime {
    start: String,
    end: String,
    duration: String,
}

#[derive(Debug, Clone, Serialize)]
struct Scenario {
    load: Load,
}

#[derive(Debug, Clone, Serialize)]
struct Load {
    metadata: LoadMetadata,
    standardized: LoadStandardized,
    native: LoadNative,
}

#[derive(Debug, Clone, Serialize)]
struct LoadMetadata {
    schema_version: &'static str,
    cfg_id: String,
    description: String,
}

#[derive(Debug, Clone, Serialize)]
struct LoadStandardized {
    tool: String,
    tool_version: String,
    source: &'static str,
    stage: u32,
    input_seq_len: SeqLen,
    output_seq_len: SeqLen,
    #[serde(skip_serializing_if = "Option::is_none")]
    rate_qps: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    concurrency: Option<u32>,
}

#[derive(Debug, Clone, Serialize)]
struct SeqLen {
    distribution: &'static str,
    value: u32,
}

#[derive(Debug, Clone, Serialize)]
struct LoadNative {
    config: serde_json::Value,
}

#[derive(Debug, Clone, Serialize)]
struct Results {
    request_performance: RequestPerformance,
}

#[derive(Debug, Clone, Serialize)]
struct RequestPerformance {
    aggregate: Aggregate,
}

#[derive(Debug, Clone, Serialize)]
struct Aggregate {
    requests: Requests,
    latency: Latency,
    throughput: Throughput,
}

#[derive(Debug, Clone, Serialize)]
struct Requests {
    total: u64,
    failures: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    input_length: Option<Stats>,
    #[serde(skip_serializing_if = "Option::is_none")]
    output_length: Option<Stats>,
}

#[derive(Debug, Clone, Serialize)]
struct Latency {
    #[serde(skip_serializing_if = "Option::is_none")]
    time_to_first_token: Option<Stats>,
    #[serde(skip_serializing_if = "Option::is_none")]
    time_per_output_token: Option<Stats>,
    #[serde(skip_serializing_if = "Option::is_none")]
    inter_token_latency: Option<Stats>,
    #[serde(skip_serializing_if = "Option::is_none")]
    request_latency: Option<Stats>,
}

#[derive(Debug, Clone, Serialize)]
struct Throughput {
    #[serde(skip_serializing_if = "Option::is_none")]
    output_token_rate: Option<Stats>,
    #[serde(skip_serializing_if = "Option::is_none")]
    request_rate: Option<Stats>,
}

/// The schema's statistics block: mean (required), spread, quantiles
/// (linear interpolation, as qexp's everywhere).
#[derive(Debug, Clone, Serialize)]
struct Stats {
    units: &'static str,
    mean: f64,
    stddev: f64,
    min: f64,
    p10: f64,
    p50: f64,
    p90: f64,
    p99: f64,
    max: f64,
}

impl Stats {
    /// The statistics of the finite `values`; None when there are none.
    fn of(units: &'static str, values: &[f64]) -> Option<Stats> {
        let v = sorted_finite(values);
        let n = v.len() as f64;
        let mean = v.iter().sum::<f64>() / n;
        let var = v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0).max(1.0);
        let q = |p: f64| quantile(&v, p);
        Some(Stats {
            units,
            mean: mean.is_finite().then_some(mean)?,
            stddev: var.sqrt(),
            min: q(0.0)?,
            p10: q(0.1)?,
            p50: q(0.5)?,
            p90: q(0.9)?,
            p99: q(0.99)?,
            max: q(1.0)?,
        })
    }

    /// One value, as a block (a rate measured once per window).
    fn one(units: &'static str, v: f64) -> Option<Stats> {
        Stats::of(units, &[v])
    }
}

/// A column of `df` as f64s (nulls as NaN).
fn floats(df: &DataFrame, name: &str) -> PolarsResult<Vec<f64>> {
    let c = df.column(name)?.cast(&DataType::Float64)?;
    Ok(c.f64()?.iter().map(|v| v.unwrap_or(f64::NAN)).collect())
}

/// The pooled gaps between content chunks of these requests.
fn gaps(df: &DataFrame) -> PolarsResult<Vec<f64>> {
    let mut out = Vec::new();
    qexp_analysis::each_gap(df, |g| out.push(g))?;
    Ok(out)
}

/// An ISO-8601 time from Unix seconds (when the clock was Unix time).
fn iso(unix_s: f64) -> String {
    chrono::DateTime::from_timestamp_micros((unix_s * 1e6) as i64)
        .map(|t| t.to_rfc3339_opts(chrono::SecondsFormat::Micros, true))
        .unwrap_or_default()
}

/// The reports of every (trial, point) of the run in `dir`.
pub fn reports(dir: &Path) -> Result<Vec<(String, Report)>, ImportError> {
    let manifest = qexp_store::read_manifest(dir)?;
    let points: Vec<PointRow> = qexp_store::scan_points(dir)?
        .collect()
        .and_then(|df| point_rows(&df))
        .map_err(|e| ImportError::Export(e.into()))?;
    let requests = qexp_store::scan_requests(dir)?
        .filter(col(rq::WARMUP).not().and(col(rq::ITEM_ID).is_null()))
        .collect()
        .map_err(|e| ImportError::Export(e.into()))?;
    let mut out = Vec::new();
    for row in &points {
        let Some(point) = manifest.points.iter().find(|p| p.id == row.point_id) else {
            continue;
        };
        let report =
            report(&manifest, point, row, &requests).map_err(|e| ImportError::Export(e.into()))?;
        out.push((
            format!("benchmark_report-p{}-t{}.json", row.point_id, row.trial),
            report,
        ));
    }
    Ok(out)
}

fn point_rows(df: &DataFrame) -> PolarsResult<Vec<PointRow>> {
    let u = |name: &str| -> PolarsResult<Vec<u32>> {
        let c = df.column(name)?.cast(&DataType::UInt32)?;
        Ok(c.u32()?.iter().map(|v| v.unwrap_or(0)).collect())
    };
    let (trial, point) = (
        u(qexp_store::points::TRIAL)?,
        u(qexp_store::points::POINT_ID)?,
    );
    let start = floats(df, qexp_store::points::WINDOW_START_UNIX_S)?;
    let end = floats(df, qexp_store::points::WINDOW_END_UNIX_S)?;
    let agg = floats(df, qexp_store::points::AGG_OUTPUT_TOK_S)?;
    Ok((0..df.height())
        .map(|i| PointRow {
            trial: trial[i],
            point_id: point[i],
            window_start_unix_s: start[i],
            window_end_unix_s: end[i],
            agg_output_tok_s: agg[i].is_finite().then_some(agg[i]),
            ..PointRow::default()
        })
        .collect())
}

/// The report of one (trial, point).
fn report(m: &Manifest, point: &Point, row: &PointRow, all: &DataFrame) -> PolarsResult<Report> {
    let of = all
        .clone()
        .lazy()
        .filter(
            col(rq::TRIAL)
                .eq(lit(row.trial))
                .and(col(rq::POINT_ID).eq(lit(row.point_id))),
        )
        .collect()?;
    let ok = of
        .clone()
        .lazy()
        .filter(col(rq::ERROR_CLASS).is_null())
        .collect()?;
    let window = row.window_end_unix_s - row.window_start_unix_s;
    // An imported run may keep another tool's monotonic clock: no times then.
    let unix = row.window_start_unix_s > 1e9;
    let start = m.started_at.timestamp_micros() as f64 / 1e6;
    let (start, end) = if unix {
        (row.window_start_unix_s, row.window_end_unix_s)
    } else {
        (start, start + window)
    };
    let time = RunTime {
        start: iso(start),
        end: iso(end),
        duration: format!("PT{window:.6}S"),
    };
    Ok(Report {
        version: LLMD_SCHEMA_VERSION,
        run: RunInfo {
            uid: format!("{}-p{}-t{}", m.run_id, row.point_id, row.trial),
            eid: m.experiment.clone(),
            time,
            description: Some(format!(
                "qexp run {} of {}: {}, trial {}",
                m.run_id,
                m.experiment,
                point.label(),
                row.trial
            )),
            keywords: vec!["qexp".to_string()],
        },
        scenario: scenario(m, point),
        results: Results {
            request_performance: RequestPerformance {
                aggregate: Aggregate {
                    requests: Requests {
                        total: of.height() as u64,
                        failures: (of.height() - ok.height()) as u64,
                        input_length: Stats::of("count", &floats(&ok, rq::PROMPT_TOKENS)?),
                        output_length: Stats::of("count", &floats(&ok, rq::COMPLETION_TOKENS)?),
                    },
                    latency: Latency {
                        time_to_first_token: Stats::of("s", &floats(&ok, rq::TTFT_S)?),
                        time_per_output_token: Stats::of("s/token", &floats(&ok, rq::TPOT_S)?),
                        inter_token_latency: Stats::of("s", &gaps(&ok)?),
                        request_latency: Stats::of("s", &floats(&ok, rq::E2E_S)?),
                    },
                    throughput: Throughput {
                        output_token_rate: row
                            .agg_output_tok_s
                            .and_then(|v| Stats::one("tokens/s", v)),
                        request_rate: (window > 0.0)
                            .then(|| Stats::one("queries/s", ok.height() as f64 / window))
                            .flatten(),
                    },
                },
            },
        },
    })
}

/// The load: qexp's, or for an imported run the tool that measured it.
fn scenario(m: &Manifest, point: &Point) -> Scenario {
    let (tool, tool_version) = match &m.import {
        Some(i) => (
            i.tool.clone(),
            i.tool_version
                .clone()
                .unwrap_or_else(|| "unknown".to_string()),
        ),
        None => ("qexp".to_string(), m.qexp_version.clone()),
    };
    Scenario {
        load: Load {
            metadata: LoadMetadata {
                schema_version: "0.0.1",
                cfg_id: m.comparability.workload_hash.clone(),
                description: point.label(),
            },
            standardized: LoadStandardized {
                tool,
                tool_version,
                source: "random",
                stage: point.id,
                input_seq_len: SeqLen {
                    distribution: "fixed",
                    value: point.input_tokens,
                },
                output_seq_len: SeqLen {
                    distribution: "fixed",
                    value: point.output_tokens,
                },
                rate_qps: point.rate().filter(|r| *r > 0.0),
                concurrency: (point.open_loop.is_none() && point.concurrency > 0)
                    .then_some(point.concurrency),
            },
            native: LoadNative {
                config: serde_json::json!({
                    "plan_path": m.plan_path,
                    "plan_sha256": m.plan_hash,
                    "workload": m.comparability.workload,
                }),
            },
        },
    }
}

/// Writes every report of the run in `dir` under `out`; returns the files.
pub fn export(dir: &Path, out: &Path) -> Result<Vec<PathBuf>, ImportError> {
    let reports = reports(dir)?;
    std::fs::create_dir_all(out).map_err(|source| ImportError::Write {
        path: out.to_path_buf(),
        source,
    })?;
    let mut files = Vec::new();
    for (name, report) in reports {
        let path = out.join(name);
        let json = serde_json::to_vec_pretty(&report).map_err(|e| ImportError::Export(e.into()))?;
        std::fs::write(&path, json).map_err(|source| ImportError::Write {
            path: path.clone(),
            source,
        })?;
        files.push(path);
    }
    Ok(files)
}
