//! The four measurements. Each runs real `qexp run` machinery (plan,
//! runner, client, Parquet writer) against the bench server, then reads the
//! rows back and sets them against the server's own account.

use crate::error::BenchError;
use crate::figures::{CeilingRow, FidelityRow, MemoryRow, OpenLoopRow, PowerRow};
use crate::process::{cpu_s, peak_rss_mb};
use crate::server::ServerReport;
use polars::prelude::*;
use qexp_analysis::stats::quantile_in_place;
use qexp_plan::Plan;
use qexp_runner::{run, RunOptions};
use qexp_store::{points as pt, requests as rq};
use std::path::{Path, PathBuf};
use std::time::Instant;

/// Where the scenarios send and write.
pub struct Env {
    /// Bench server base URL.
    pub base_url: String,
    /// Scratch results root (deleted by the caller).
    pub scratch: PathBuf,
    http: reqwest::Client,
}

impl Env {
    /// An environment for the server at `base_url`, writing runs under `scratch`.
    pub fn new(base_url: &str, scratch: &Path) -> Env {
        Env {
            base_url: base_url.trim_end_matches('/').to_string(),
            scratch: scratch.to_path_buf(),
            http: reqwest::Client::new(),
        }
    }

    /// The server's account since the last drain (and a fresh start for the next).
    async fn drain(&self) -> Result<ServerReport, BenchError> {
        let url = format!("{}/bench/drain", self.base_url);
        let err = |source| BenchError::Server {
            url: url.clone(),
            source,
        };
        self.http
            .get(&url)
            .send()
            .await
            .map_err(err)?
            .json()
            .await
            .map_err(err)
    }
}

/// One run of a generated plan and what it cost.
struct Measured {
    dir: PathBuf,
    cpu_s: f64,
    wall_s: f64,
    server: ServerReport,
}

/// Runs a plan body (everything after `[target]`'s base URL) on the bench server.
async fn run_plan(
    env: &Env,
    name: &str,
    extra_body: &str,
    rest: &str,
) -> Result<Measured, BenchError> {
    let text = format!(
        "[experiment]\nname = \"bench-{name}\"\nversion = 1\n\n[target]\nbase_url = \"{}\"\napi = \"chat\"\nextra_body = {{ ignore_eos = true{extra_body} }}\n\n{rest}",
        env.base_url
    );
    let plan =
        Plan::parse(Path::new(&format!("bench-{name}.toml")), &text).map_err(BenchError::Plan)?;
    let opts = RunOptions {
        plan,
        out: env.scratch.clone(),
        overrides: Default::default(),
        shard: None,
        folder: Default::default(),
    };
    let (_stop, cancel) = tokio::sync::watch::channel(false);
    env.drain().await?;
    let (c0, t0) = (cpu_s().unwrap_or(f64::NAN), Instant::now());
    let result = run(opts, cancel).await.map_err(BenchError::Run)?;
    let (cpu, wall) = (cpu_s().unwrap_or(f64::NAN) - c0, t0.elapsed().as_secs_f64());
    Ok(Measured {
        dir: result.dir,
        cpu_s: cpu,
        wall_s: wall,
        server: env.drain().await?,
    })
}

/// Measured request rows, the columns the benchmark needs.
struct Rows {
    ttft_s: Vec<f64>,
    gaps_s: Vec<f64>,
    queue_s: Vec<f64>,
    sent_unix_s: Vec<f64>,
    tokens: u64,
    failures: u64,
    agg_tok_s: f64,
}

fn read_rows(dir: &Path) -> Result<Rows, BenchError> {
    let q = BenchError::Read;
    let s = BenchError::Store;
    let df = qexp_store::scan_requests(dir)
        .map_err(s)?
        .filter(col(rq::WARMUP).not())
        .select([
            col(rq::TTFT_S),
            col(rq::QUEUE_S),
            col(rq::SENT_UNIX_S),
            col(rq::COMPLETION_TOKENS),
            col(rq::ERROR_CLASS),
            col(rq::CHUNK_OFFSETS_S),
        ])
        .collect()
        .map_err(q)?;
    let f64s = |name: &str| -> Result<Vec<f64>, BenchError> {
        let c = df
            .column(name)
            .map_err(q)?
            .cast(&DataType::Float64)
            .map_err(q)?;
        Ok(c.f64()
            .map_err(q)?
            .iter()
            .map(|v| v.unwrap_or(f64::NAN))
            .collect())
    };
    let mut gaps_s = Vec::new();
    let lists = df
        .column(rq::CHUNK_OFFSETS_S)
        .map_err(q)?
        .list()
        .map_err(q)?
        .clone();
    for i in 0..lists.len() {
        let Some(offs) = lists.get_as_series(i) else {
            continue;
        };
        let offs: Vec<f64> = offs.f64().map_err(q)?.iter().flatten().collect();
        gaps_s.extend(offs.windows(2).map(|w| w[1] - w[0]));
    }
    let failures = df
        .column(rq::ERROR_CLASS)
        .map_err(q)?
        .is_not_null()
        .sum()
        .unwrap_or(0) as u64;
    let tokens = f64s(rq::COMPLETION_TOKENS)?
        .iter()
        .filter(|x| x.is_finite())
        .sum::<f64>() as u64;
    let points = qexp_store::scan_points(dir)
        .map_err(s)?
        .select([col(pt::AGG_OUTPUT_TOK_S).cast(DataType::Float64)])
        .collect()
        .map_err(q)?;
    let agg_tok_s = points
        .column(pt::AGG_OUTPUT_TOK_S)
        .map_err(q)?
        .f64()
        .map_err(q)?
        .get(0)
        .unwrap_or(f64::NAN);
    Ok(Rows {
        ttft_s: f64s(rq::TTFT_S)?,
        gaps_s,
        queue_s: f64s(rq::QUEUE_S)?,
        sent_unix_s: f64s(rq::SENT_UNIX_S)?,
        tokens,
        failures,
        agg_tok_s,
    })
}

fn q(values: &[f64], p: f64) -> f64 {
    let mut v: Vec<f64> = values.iter().copied().filter(|x| x.is_finite()).collect();
    quantile_in_place(&mut v, p).unwrap_or(f64::NAN)
}

fn cleanup(dir: &Path) {
    let _ = std::fs::remove_dir_all(dir);
}

/// Closed-loop plan text: `requests` at concurrency `c`, `output` tokens each.
fn closed(c: u32, requests: u32, output: u32) -> String {
    format!(
        "[workload]\ninput_tokens = 32\noutput_tokens = {output}\n\n[sweep]\nconcurrency = [{c}]\n\n[run]\nrequests = {requests}\nwarmup_requests = 0\ntrials = 1\n"
    )
}

/// Ceiling: zero-delay streams of `tokens` one-token chunks at concurrency `c`.
pub async fn ceiling(
    env: &Env,
    c: u32,
    tokens: u32,
    requests: u32,
) -> Result<CeilingRow, BenchError> {
    let m = run_plan(
        env,
        &format!("ceiling-c{c}"),
        "",
        &closed(c, requests, tokens),
    )
    .await?;
    let rows = read_rows(&m.dir)?;
    cleanup(&m.dir);
    Ok(CeilingRow {
        concurrency: c,
        tokens_per_stream: tokens,
        tokens: rows.tokens,
        client_tok_s: rows.agg_tok_s,
        server_tok_s: m.server.tokens as f64 / m.server.window_s,
        cpu_s: m.cpu_s,
        wall_s: m.wall_s,
        cpu_s_per_million: m.cpu_s / rows.tokens as f64 * 1e6,
        server_cores: m.server.cpu_s / m.wall_s,
        failures: rows.failures,
    })
}

/// Timing fidelity: the server's TTFT and gaps are exact; how far off is qexp?
pub async fn fidelity(
    env: &Env,
    c: u32,
    requests: u32,
    ttft_ms: f64,
    itl_ms: f64,
    tokens: u32,
) -> Result<FidelityRow, BenchError> {
    let extra = format!(", bench_ttft_ms = {ttft_ms}, bench_itl_ms = {itl_ms}");
    let m = run_plan(
        env,
        &format!("fidelity-c{c}"),
        &extra,
        &closed(c, requests, tokens),
    )
    .await?;
    let rows = read_rows(&m.dir)?;
    let client_timing = qexp_store::read_manifest(&m.dir)
        .ok()
        .and_then(|man| man.client_timing);
    cleanup(&m.dir);
    let ms = |x: f64| x * 1000.0;
    let s_ttft: Vec<f64> = m.server.records.iter().map(|r| r.ttft_s).collect();
    let s_from_arrival: Vec<f64> = m
        .server
        .records
        .iter()
        .map(|r| r.ttft_from_arrival_s.unwrap_or(f64::NAN))
        .collect();
    // Every record or none: a mix would compare different requests' tails.
    let arrival_error = |p: f64| {
        let all = s_from_arrival.iter().all(|x| x.is_finite());
        if all && !s_from_arrival.is_empty() {
            ms(q(&rows.ttft_s, p) - q(&s_from_arrival, p))
        } else {
            f64::NAN
        }
    };
    let s_gaps: Vec<f64> = m
        .server
        .records
        .iter()
        .flat_map(|r| r.gaps_s.iter().copied())
        .collect();
    Ok(FidelityRow {
        concurrency: c,
        server_ttft_ms: ttft_ms,
        server_itl_ms: itl_ms,
        ttft_p50_error_ms: ms(q(&rows.ttft_s, 0.5) - q(&s_ttft, 0.5)),
        ttft_p99_error_ms: ms(q(&rows.ttft_s, 0.99) - q(&s_ttft, 0.99)),
        ttft_p50_arrival_error_ms: arrival_error(0.5),
        ttft_p99_arrival_error_ms: arrival_error(0.99),
        gap_p50_error_ms: ms(q(&rows.gaps_s, 0.5) - q(&s_gaps, 0.5)),
        gap_p99_error_ms: ms(q(&rows.gaps_s, 0.99) - q(&s_gaps, 0.99)),
        server_ttft_p99_ms: ms(q(&s_ttft, 0.99)),
        server_gap_p99_ms: ms(q(&s_gaps, 0.99)),
        cores_used: m.cpu_s / m.wall_s,
        server_cores: m.server.cpu_s / m.wall_s,
        failures: rows.failures,
        client_timing,
    })
}

/// Memory: `c` streams held open together (slow tokens), peak RSS after.
pub async fn memory(env: &Env, c: u32, hold_ms: f64) -> Result<MemoryRow, BenchError> {
    // 20 tokens spread over `hold_ms`: every stream is open at the same time.
    let itl = hold_ms / 20.0;
    let extra = format!(", bench_ttft_ms = {itl}, bench_itl_ms = {itl}");
    let m = run_plan(env, &format!("memory-c{c}"), &extra, &closed(c, c, 20)).await?;
    let rows = read_rows(&m.dir)?;
    cleanup(&m.dir);
    Ok(MemoryRow {
        concurrency: c,
        peak_rss_mb: peak_rss_mb().unwrap_or(f64::NAN),
        mb_per_1000_streams: None,
        failures: rows.failures,
    })
}

/// Open loop: constant arrivals at `rate` for `duration_s`, one-token answers.
pub async fn open_loop(env: &Env, rate: f64, duration_s: f64) -> Result<OpenLoopRow, BenchError> {
    let plan = format!(
        "[workload]\ninput_tokens = 32\noutput_tokens = 1\n\n[sweep]\nrate = [{rate}]\n\n[load]\narrival = \"constant\"\nduration_s = {duration_s}\n\n[run]\nwarmup_requests = 0\ntrials = 1\n"
    );
    let m = run_plan(env, &format!("open-loop-{rate}"), "", &plan).await?;
    let rows = read_rows(&m.dir)?;
    cleanup(&m.dir);
    let sent = &rows.sent_unix_s;
    let (lo, hi) = sent
        .iter()
        .filter(|x| x.is_finite())
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), &x| {
            (a.min(x), b.max(x))
        });
    Ok(OpenLoopRow {
        planned_rate: rate,
        requests: sent.len() as u64,
        achieved_rate: (sent.len() as f64 - 1.0) / (hi - lo),
        send_lag_p50_ms: q(&rows.queue_s, 0.5) * 1000.0,
        send_lag_p99_ms: q(&rows.queue_s, 0.99) * 1000.0,
        failures: rows.failures,
    })
}

/// A closed-loop run of paced streams: `requests` at `concurrency`, each
/// `tokens` tokens `itl_ms` apart.
#[derive(Debug, Clone, Copy)]
pub struct Paced {
    /// Requests in flight.
    pub concurrency: u32,
    /// Tokens per stream.
    pub tokens: u32,
    /// The server's gap between tokens, ms.
    pub itl_ms: f64,
    /// Requests in all.
    pub requests: u32,
}

/// Power sampling: the same paced run without `[power]` and then sampling
/// the bench server's DCGM exporter ([`crate::server::DCGM_GPUS`] GPUs)
/// every `interval_ms`.
pub async fn power_sampling(
    env: &Env,
    run: &Paced,
    interval_ms: u32,
) -> Result<PowerRow, BenchError> {
    let c = run.concurrency;
    let body = closed(c, run.requests, run.tokens);
    let extra = format!(", bench_ttft_ms = {0}, bench_itl_ms = {0}", run.itl_ms);
    let without = run_plan(env, &format!("power-off-c{c}"), &extra, &body).await?;
    let rows_without = read_rows(&without.dir)?;
    cleanup(&without.dir);
    let gpus = crate::server::DCGM_GPUS;
    let ids: Vec<String> = (0..gpus).map(|i| i.to_string()).collect();
    let power = format!(
        "{body}\n[power]\nsource = \"dcgm\"\nurl = \"{}/bench/dcgm\"\ngpus = [{}]\ninterval_ms = {interval_ms}\nrequired = true\n",
        env.base_url,
        ids.join(", ")
    );
    let with = run_plan(env, &format!("power-on-c{c}"), &extra, &power).await?;
    let rows_with = read_rows(&with.dir)?;
    cleanup(&with.dir);
    Ok(PowerRow {
        concurrency: c,
        gpus,
        interval_ms,
        cpu_s_without: without.cpu_s,
        wall_s_without: without.wall_s,
        cpu_s_with: with.cpu_s,
        wall_s_with: with.wall_s,
        client_tok_s_without: rows_without.agg_tok_s,
        client_tok_s_with: rows_with.agg_tok_s,
        scrapes: with.server.scrapes,
        failures: rows_without.failures + rows_with.failures,
    })
}
