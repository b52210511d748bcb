//! qexp-bench measures qexp itself as a load generator: how many output
//! tokens per second it ingests and records and at what CPU cost, how far its
//! TTFT and chunk gaps are from a server's own timestamps, how much memory
//! open streams take, and how exactly it keeps an open-loop schedule. It owns
//! the zero-compute bench server and the scenarios; it measures no
//! inference server and draws no conclusions about one.

mod arrival;
mod error;
pub mod figures;
pub mod process;
pub mod scenarios;
pub mod server;

pub use error::BenchError;
pub use figures::BenchResults;
pub use server::BenchServer;

use figures::RESULTS_VERSION;
use scenarios::Env;
use std::path::Path;

/// How big a benchmark to run.
#[derive(Debug, Clone)]
pub struct Scale {
    /// Closed-loop concurrencies for the ceiling.
    pub ceiling_c: Vec<u32>,
    /// Tokens per stream for the ceiling.
    pub ceiling_tokens: u32,
    /// Output tokens the ceiling aims at per point (requests = tokens / stream, at least 2 C).
    pub ceiling_total_tokens: u64,
    /// Concurrencies for timing fidelity.
    pub fidelity_c: Vec<u32>,
    /// Tokens per fidelity stream.
    pub fidelity_tokens: u32,
    /// Fewest fidelity requests per point.
    pub fidelity_min_requests: u32,
    /// Open streams for memory, ascending (the first is the baseline).
    pub memory_c: Vec<u32>,
    /// How long memory streams stay open, ms.
    pub memory_hold_ms: f64,
    /// Open-loop rates, requests/s.
    pub rates: Vec<f64>,
    /// Seconds of arrivals per rate.
    pub rate_duration_s: f64,
    /// Concurrencies at which to measure `[power]` sampling's cost.
    pub power_c: Vec<u32>,
    /// Tokens per power stream, paced `power_itl_ms` apart by the server
    /// (a paced run keeps the client's own CPU low and steady, so that
    /// the sampler's share shows above the noise of two runs).
    pub power_tokens: u32,
    /// The server's gap between a power stream's tokens, ms.
    pub power_itl_ms: f64,
    /// Requests per stream slot (requests = waves × C).
    pub power_waves: u32,
    /// Between power reads, ms.
    pub power_interval_ms: u32,
}

impl Scale {
    /// The benchmark: a few minutes on two cores.
    pub fn full() -> Scale {
        Scale {
            ceiling_c: vec![1, 16, 64, 256, 1024],
            ceiling_tokens: 512,
            ceiling_total_tokens: 2_000_000,
            fidelity_c: vec![1, 100, 500, 1000],
            fidelity_tokens: 64,
            fidelity_min_requests: 20,
            memory_c: vec![1, 1000, 10_000],
            memory_hold_ms: 4000.0,
            rates: vec![100.0, 1000.0, 10_000.0],
            rate_duration_s: 3.0,
            power_c: vec![64, 64, 64],
            power_tokens: 100,
            power_itl_ms: 10.0,
            power_waves: 5,
            power_interval_ms: 100,
        }
    }

    /// Only the full benchmark's timing fidelity (C = 1, 100, 500, 1000):
    /// a minute, for setting the client's timing against the server's.
    pub fn fidelity_only() -> Scale {
        Scale {
            ceiling_c: Vec::new(),
            memory_c: Vec::new(),
            rates: Vec::new(),
            power_c: Vec::new(),
            ..Scale::full()
        }
    }

    /// Only the full benchmark's cost of power sampling (C = 64 three times, 8 GPUs
    /// every 100 ms, against the same paced run without): seconds.
    pub fn power_only() -> Scale {
        Scale {
            ceiling_c: Vec::new(),
            fidelity_c: Vec::new(),
            memory_c: Vec::new(),
            rates: Vec::new(),
            ..Scale::full()
        }
    }

    /// Seconds, not minutes: for tests and smoke checks.
    pub fn quick() -> Scale {
        Scale {
            ceiling_c: vec![1, 8],
            ceiling_tokens: 64,
            ceiling_total_tokens: 2_000,
            fidelity_c: vec![4],
            fidelity_tokens: 8,
            fidelity_min_requests: 4,
            memory_c: vec![1, 20],
            memory_hold_ms: 200.0,
            rates: vec![200.0],
            rate_duration_s: 0.5,
            power_c: vec![8],
            power_tokens: 8,
            power_itl_ms: 5.0,
            power_waves: 2,
            power_interval_ms: 20,
        }
    }
}

/// Runs every scenario against the bench server at `base_url`, writing
/// scratch runs under `scratch`; `say` hears a line per finished scenario.
pub async fn run_bench(
    base_url: &str,
    scale: &Scale,
    quick: bool,
    scratch: &Path,
    mut say: impl FnMut(&str),
) -> Result<BenchResults, BenchError> {
    let env = Env::new(base_url, scratch);
    let host = qexp_provenance::host_info();
    let mut res = BenchResults {
        schema_version: RESULTS_VERSION,
        qexp_version: env!("CARGO_PKG_VERSION").to_string(),
        started_at: chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
        machine: format!(
            "{}, {} logical CPUs",
            host.cpu_model.unwrap_or_else(|| "unknown CPU".into()),
            host.cpus
        ),
        quick,
        ceiling: Vec::new(),
        fidelity: Vec::new(),
        memory: Vec::new(),
        open_loop: Vec::new(),
        power: Vec::new(),
    };
    // Memory first: peak RSS only grows, so later scenarios must not set it.
    process::raise_nofile();
    for &c in &scale.memory_c {
        let mut row = scenarios::memory(&env, c, scale.memory_hold_ms).await?;
        if let Some(base) = res.memory.first() {
            row.mb_per_1000_streams = Some(
                (row.peak_rss_mb - base.peak_rss_mb) / f64::from(c - base.concurrency) * 1000.0,
            );
        }
        say(&format!(
            "memory: {c} streams, peak RSS {:.1} MB",
            row.peak_rss_mb
        ));
        res.memory.push(row);
    }
    for &c in &scale.ceiling_c {
        let per = u64::from(scale.ceiling_tokens);
        let requests = scale
            .ceiling_total_tokens
            .div_ceil(per)
            .max(2 * u64::from(c)) as u32;
        let row = scenarios::ceiling(&env, c, scale.ceiling_tokens, requests).await?;
        say(&format!(
            "ceiling: C={c}, {:.0} tok/s client, {:.0} tok/s server, {:.2} CPU s per M tokens",
            row.client_tok_s, row.server_tok_s, row.cpu_s_per_million
        ));
        res.ceiling.push(row);
    }
    for &c in &scale.fidelity_c {
        // Two waves, and enough requests at small C for a p99.
        let requests = (2 * c).max(scale.fidelity_min_requests);
        let row = scenarios::fidelity(&env, c, requests, 50.0, 10.0, scale.fidelity_tokens).await?;
        say(&format!(
            "fidelity: C={c}, TTFT error p50 {:+.2} ms p99 {:+.2} ms, gap error p99 {:+.2} ms ({})",
            row.ttft_p50_error_ms,
            row.ttft_p99_error_ms,
            row.gap_p99_error_ms,
            row.client_timing
                .map_or("timing not recorded", |t| t.as_str())
        ));
        res.fidelity.push(row);
    }
    for &rate in &scale.rates {
        let row = scenarios::open_loop(&env, rate, scale.rate_duration_s).await?;
        say(&format!(
            "open loop: {rate} req/s planned, {:.1} achieved, send lag p99 {:.3} ms",
            row.achieved_rate, row.send_lag_p99_ms
        ));
        res.open_loop.push(row);
    }
    power_sampling(&env, scale, &mut res, &mut say).await?;
    Ok(res)
}

/// The power-sampling pairs of `scale`, into `res`.
async fn power_sampling(
    env: &Env,
    scale: &Scale,
    res: &mut BenchResults,
    say: &mut impl FnMut(&str),
) -> Result<(), BenchError> {
    for &c in &scale.power_c {
        let paced = scenarios::Paced {
            concurrency: c,
            tokens: scale.power_tokens,
            itl_ms: scale.power_itl_ms,
            requests: scale.power_waves * c,
        };
        let row = scenarios::power_sampling(env, &paced, scale.power_interval_ms).await?;
        say(&format!(
            "power sampling: C={c}, {} GPUs every {} ms: {:+.4} cores ({} scrapes, {:+.3} ms CPU per scrape)",
            row.gpus,
            row.interval_ms,
            row.extra_cores(),
            row.scrapes,
            row.cpu_ms_per_scrape()
        ));
        res.power.push(row);
    }
    Ok(())
}
