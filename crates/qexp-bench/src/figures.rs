//! The benchmark's results: one row type per question, the file they are
//! saved in, and the Markdown table printed after a run.

use serde::{Deserialize, Serialize};
use std::fmt::Write;

/// Version of the results file layout.
pub const RESULTS_VERSION: u32 = 1;

/// Output tokens/s qexp ingests and records, and what it costs.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CeilingRow {
    /// Requests in flight.
    pub concurrency: u32,
    /// Tokens per stream.
    pub tokens_per_stream: u32,
    /// Tokens the client recorded.
    pub tokens: u64,
    /// Client-side aggregate output tok/s (first send → last completion).
    pub client_tok_s: f64,
    /// Server-side tok/s (its own count over its own first → last chunk).
    pub server_tok_s: f64,
    /// qexp process CPU seconds over the whole run (probe, calibration, Parquet included).
    pub cpu_s: f64,
    /// Wall seconds of the run.
    pub wall_s: f64,
    /// CPU seconds per million output tokens.
    pub cpu_s_per_million: f64,
    /// Cores the bench server's process used meanwhile (CPU s / wall s).
    #[serde(default)]
    pub server_cores: f64,
    /// Failed requests.
    pub failures: u64,
}

/// qexp's TTFT and chunk gaps against the server's own timestamps.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct FidelityRow {
    /// Requests in flight.
    pub concurrency: u32,
    /// Server's planned TTFT, ms.
    pub server_ttft_ms: f64,
    /// Server's planned gap between tokens, ms.
    pub server_itl_ms: f64,
    /// TTFT p50 as qexp measured − as the server measured, ms.
    pub ttft_p50_error_ms: f64,
    /// TTFT p99, qexp − server, ms.
    pub ttft_p99_error_ms: f64,
    /// TTFT p50, qexp − server counted from the request's arrival at its
    /// socket (the kernel's stamp), not from its handler, ms; NaN where
    /// the server's kernel stamped nothing.
    #[serde(default = "nan")]
    pub ttft_p50_arrival_error_ms: f64,
    /// TTFT p99, qexp − server from the request's arrival, ms.
    #[serde(default = "nan")]
    pub ttft_p99_arrival_error_ms: f64,
    /// Chunk gap p50, qexp − server, ms.
    pub gap_p50_error_ms: f64,
    /// Chunk gap p99, qexp − server, ms.
    pub gap_p99_error_ms: f64,
    /// Server's own TTFT p99, ms.
    pub server_ttft_p99_ms: f64,
    /// Server's own chunk-gap p99, ms.
    pub server_gap_p99_ms: f64,
    /// qexp process CPU seconds / wall seconds (cores used).
    pub cores_used: f64,
    /// Cores the bench server's process used meanwhile (CPU s / wall s).
    #[serde(default)]
    pub server_cores: f64,
    /// Failed requests.
    pub failures: u64,
    /// How qexp timed the run (its manifest's `client_timing`): the kernel's
    /// receive stamps or stamps on return. Absent in results from before.
    #[serde(default)]
    pub client_timing: Option<qexp_types::ClientTiming>,
}

/// Peak resident memory with many streams open.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct MemoryRow {
    /// Streams open at once.
    pub concurrency: u32,
    /// Peak RSS of the qexp process after the point, MB.
    pub peak_rss_mb: f64,
    /// (peak − peak at the smallest concurrency) per 1,000 streams, MB.
    pub mb_per_1000_streams: Option<f64>,
    /// Failed requests.
    pub failures: u64,
}

/// Open-loop send accuracy.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct OpenLoopRow {
    /// Planned requests/s.
    pub planned_rate: f64,
    /// Requests sent.
    pub requests: u64,
    /// (n − 1) / (last send − first send).
    pub achieved_rate: f64,
    /// Scheduled → sent lag, median, ms.
    pub send_lag_p50_ms: f64,
    /// Scheduled → sent lag, p99, ms.
    pub send_lag_p99_ms: f64,
    /// Failed requests.
    pub failures: u64,
}

/// Everything one `qexp bench` measured.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct BenchResults {
    /// [`RESULTS_VERSION`].
    pub schema_version: u32,
    /// qexp's version.
    pub qexp_version: String,
    /// When it ran (UTC, RFC 3339).
    pub started_at: String,
    /// Machine: CPU model and logical CPUs.
    pub machine: String,
    /// A scaled-down run (tests, smoke checks): figures are not comparable.
    pub quick: bool,
    /// Ceiling rows.
    pub ceiling: Vec<CeilingRow>,
    /// Timing-fidelity rows.
    pub fidelity: Vec<FidelityRow>,
    /// Memory rows.
    pub memory: Vec<MemoryRow>,
    /// Open-loop rows.
    pub open_loop: Vec<OpenLoopRow>,
    /// What `[power]` sampling costs the client (absent in results from before).
    #[serde(default)]
    pub power: Vec<PowerRow>,
}

/// The client's cost of sampling GPU power: one paced closed-loop run
/// without `[power]` and the same run sampling the bench server's DCGM
/// exporter.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PowerRow {
    /// Requests in flight.
    pub concurrency: u32,
    /// GPUs sampled.
    pub gpus: u32,
    /// Between reads, ms.
    pub interval_ms: u32,
    /// qexp CPU seconds without sampling.
    pub cpu_s_without: f64,
    /// Wall seconds without sampling.
    pub wall_s_without: f64,
    /// qexp CPU seconds with sampling.
    pub cpu_s_with: f64,
    /// Wall seconds with sampling.
    pub wall_s_with: f64,
    /// Client tok/s without sampling.
    pub client_tok_s_without: f64,
    /// Client tok/s with sampling.
    pub client_tok_s_with: f64,
    /// Exporter scrapes answered during the run with sampling.
    pub scrapes: u64,
    /// Failed requests, both runs.
    pub failures: u64,
}

impl PowerRow {
    /// Extra cores sampling took: CPU with per wall second − CPU without per wall second.
    pub fn extra_cores(&self) -> f64 {
        self.cpu_s_with / self.wall_s_with - self.cpu_s_without / self.wall_s_without
    }

    /// Extra CPU per scrape, ms (the run's CPU with − without, over the scrapes).
    pub fn cpu_ms_per_scrape(&self) -> f64 {
        (self.cpu_s_with - self.cpu_s_without) / self.scrapes as f64 * 1e3
    }
}

/// What a figure missing from older results reads as.
fn nan() -> f64 {
    f64::NAN
}

fn f(x: f64, digits: usize) -> String {
    if x.is_finite() {
        format!("{x:.digits$}")
    } else {
        "-".into()
    }
}

impl BenchResults {
    /// The results as Markdown tables (units in every header).
    pub fn markdown(&self) -> String {
        let mut s = String::new();
        let _ = writeln!(
            s,
            "qexp {} load-generator benchmark, {} ({}){}\n",
            self.qexp_version,
            self.started_at,
            self.machine,
            if self.quick {
                ", QUICK (not comparable)"
            } else {
                ""
            }
        );
        self.ceiling_table(&mut s);
        self.fidelity_table(&mut s);
        self.memory_table(&mut s);
        self.open_loop_table(&mut s);
        self.power_table(&mut s);
        s
    }

    /// The power-sampling table: the client's CPU with and without
    /// `[power]`; nothing without rows.
    fn power_table(&self, s: &mut String) {
        if !self.power.is_empty() {
            s.push_str("\n| C | GPUs | interval (ms) | CPU s without / with | wall s without / with | client tok/s without / with | scrapes | extra cores | extra CPU per scrape (ms) | failures |\n|---|---|---|---|---|---|---|---|---|---|\n");
            for r in &self.power {
                let _ = writeln!(
                    s,
                    "| {} | {} | {} | {} / {} | {} / {} | {} / {} | {} | {} | {} | {} |",
                    r.concurrency,
                    r.gpus,
                    r.interval_ms,
                    f(r.cpu_s_without, 2),
                    f(r.cpu_s_with, 2),
                    f(r.wall_s_without, 2),
                    f(r.wall_s_with, 2),
                    f(r.client_tok_s_without, 0),
                    f(r.client_tok_s_with, 0),
                    r.scrapes,
                    f(r.extra_cores(), 4),
                    f(r.cpu_ms_per_scrape(), 3),
                    r.failures
                );
            }
            s.push_str("\nExtra cores: CPU per wall second with sampling − without (the exporter runs in the bench server's process, not counted); per scrape: the runs' CPU difference over the scrapes. The runs are paced by the server (tokens 10 ms apart) so that the client's own CPU stays low; two runs' CPU still differ by noise: compare several rows.\n");
        }
    }

    /// The ceiling table: output tok/s qexp ingests and records at each
    /// concurrency, and what it costs; nothing without rows.
    fn ceiling_table(&self, s: &mut String) {
        if !self.ceiling.is_empty() {
            s.push_str("| C | tokens/stream | client tok/s | server tok/s | CPU s / M tokens | cores used | server cores | failures |\n|---|---|---|---|---|---|---|---|\n");
            for r in &self.ceiling {
                let _ = writeln!(
                    s,
                    "| {} | {} | {} | {} | {} | {} | {} | {} |",
                    r.concurrency,
                    r.tokens_per_stream,
                    f(r.client_tok_s, 0),
                    f(r.server_tok_s, 0),
                    f(r.cpu_s_per_million, 2),
                    f(r.cpu_s / r.wall_s, 2),
                    f(r.server_cores, 2),
                    r.failures
                );
            }
            s.push('\n');
        }
    }

    /// The fidelity table: qexp's TTFT and chunk gaps against the server's
    /// own timestamps at each concurrency; nothing without rows.
    fn fidelity_table(&self, s: &mut String) {
        if !self.fidelity.is_empty() {
            s.push_str("| C | server TTFT / gap (ms) | TTFT error p50 (ms) | TTFT error p99 (ms) | from arrival p50 (ms) | from arrival p99 (ms) | gap error p50 (ms) | gap error p99 (ms) | server gap p99 (ms) | cores used | server cores | failures | timing |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
            for r in &self.fidelity {
                let _ = writeln!(
                    s,
                    "| {} | {} / {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
                    r.concurrency,
                    f(r.server_ttft_ms, 0),
                    f(r.server_itl_ms, 0),
                    f(r.ttft_p50_error_ms, 2),
                    f(r.ttft_p99_error_ms, 2),
                    f(r.ttft_p50_arrival_error_ms, 2),
                    f(r.ttft_p99_arrival_error_ms, 2),
                    f(r.gap_p50_error_ms, 2),
                    f(r.gap_p99_error_ms, 2),
                    f(r.server_gap_p99_ms, 2),
                    f(r.cores_used, 2),
                    f(r.server_cores, 2),
                    r.failures,
                    r.client_timing.map_or("-", |t| t.as_str())
                );
            }
            s.push_str("\nTTFT error: qexp's TTFT − the server's, counted from when its handler ran; from arrival: counted from when the request reached the server's socket (its kernel's receive stamp), which includes the server's own intake queue, as a client sees it.\n\n");
        }
    }

    /// The memory table: peak RSS by open streams; nothing without rows.
    fn memory_table(&self, s: &mut String) {
        if !self.memory.is_empty() {
            s.push_str("| open streams | peak RSS (MB) | MB per 1,000 streams | failures |\n|---|---|---|---|\n");
            for r in &self.memory {
                let _ = writeln!(
                    s,
                    "| {} | {} | {} | {} |",
                    r.concurrency,
                    f(r.peak_rss_mb, 1),
                    r.mb_per_1000_streams.map_or("-".into(), |m| f(m, 1)),
                    r.failures
                );
            }
            s.push('\n');
        }
    }

    /// The open-loop table: achieved against planned rate and send lag;
    /// nothing without rows.
    fn open_loop_table(&self, s: &mut String) {
        if !self.open_loop.is_empty() {
            s.push_str("| planned (req/s) | achieved (req/s) | achieved / planned | send lag p50 (ms) | send lag p99 (ms) | requests | failures |\n|---|---|---|---|---|---|---|\n");
            for r in &self.open_loop {
                let _ = writeln!(
                    s,
                    "| {} | {} | {} | {} | {} | {} | {} |",
                    f(r.planned_rate, 0),
                    f(r.achieved_rate, 1),
                    f(r.achieved_rate / r.planned_rate, 4),
                    f(r.send_lag_p50_ms, 3),
                    f(r.send_lag_p99_ms, 3),
                    r.requests,
                    r.failures
                );
            }
        }
    }
}
