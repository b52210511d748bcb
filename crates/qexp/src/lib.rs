//! The `qexp` command line: argument parsing, logging and wiring. Each
//! subcommand lives in its own module and calls into the library crates;
//! no measurement or statistics logic lives here.

#![warn(missing_docs)]
// Library code never panics on input (STYLE.md, Errors): `unwrap` and
// `expect` stay in tests.
#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::expect_used))]

mod cmd_bench;
mod cmd_diff;
mod cmd_report;
mod cmd_run;
mod cmd_sim;
mod summary;

use clap::{Parser, Subcommand};
pub use cmd_diff::{DiffArgs, Format as DiffFormat, EXIT_REGRESSION};
use std::path::PathBuf;

/// Exit code for bad input (a malformed plan, a missing run).
pub const EXIT_BAD_INPUT: u8 = 2;
/// Exit code for a failure while running (unreachable target, disk full).
pub const EXIT_FAILURE: u8 = 1;
/// Exit code of a complete run in which some (trial, point) had more failed
/// requests than the plan's `[tolerance]` allows.
pub const EXIT_OVER_TOLERANCE: u8 = 3;

/// Reproducible LLM-serving benchmarks: plan → run → Parquet → report.
#[derive(Debug, Parser)]
#[command(name = "qexp", version, about, long_about = None, after_help = "\
Examples:
  qexp run experiments/quickstart.toml          # on the embedded simulator
  qexp run experiments/longctx.toml --trials 5 --target http://127.0.0.1:30000
  qexp report                                   # newest run of each experiment
  qexp diff RUN_A RUN_B --fail-on-regression    # compare two runs, exit 1 on a regression
  qexp sim --profile founding --port 8000       # serve the simulator")]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// The subcommands.
// Doc comments here are clap's help text, where `<run-id>` is the usual
// placeholder; rustdoc would read it as an unclosed HTML tag.
#[allow(rustdoc::invalid_html_tags)]
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run a plan against a server and write results/<experiment>/<run-id>/.
    #[command(after_help = "\
Examples:
  qexp run experiments/throughput.toml --trials 2 --target http://127.0.0.1:8000
  qexp run experiments/longctx.toml --model qwen3 --out /data/results
  qexp run --resume results/longctx/20261130T101500Z-1a2b3c
Ctrl-C or SIGTERM stops sending, gives requests in flight 5 s, keeps every finished
request and marks the run interrupted (exit 1); a second one exits at once (exit 130).
Finished requests reach the run folder as they finish, so even a kill -9 loses only
the requests in flight; --resume then runs only what did not complete.
Exit codes: 0 complete, 1 interrupted or could not finish, 2 bad input, 3 complete but
some point had more failed requests than the plan's [tolerance] max_failed_fraction,
130 a second Ctrl-C/SIGTERM.")]
    Run(RunArgs),
    /// Render reports/<experiment>/<run-id>/report.{md,html} and SVG charts from result folders, notebooks, and the workspace index.
    #[command(after_help = "\
Examples:
  qexp report                                   # newest run of each experiment under results/
  qexp report results/longctx/20261130T101500Z-1a2b3c
  qexp report --templates my-templates/ --out-dir site/
  qexp report results/longctx/20261130T101500Z-1a2b3c --narrative notes/longctx.md
  qexp report notebooks/founding.md             # a notebook over several runs
  qexp report --history-metric agg_tok_s        # the index's history charts follow throughput
Every call also writes <out-dir>/index.md and index.html: every experiment under
--results, its runs, and a history chart per experiment (unless --no-index).")]
    Report(ReportArgs),
    /// Compare two runs point by point: ratios B/A, intervals, tests, verdicts.
    #[command(after_help = "\
Examples:
  qexp diff results/quickstart/RUN_A results/quickstart/RUN_B
  qexp diff RUN_A_ID RUN_B_ID --format term,md,html --out reports/diff/nightly
  qexp diff RUN_A RUN_B --metric agg_tok_s --metric ttft_s --fail-on-regression
  qexp diff RUN_A RUN_B --ignore output_tokens     # compare different workloads anyway
Exit codes: 0 no significant regression (or no --fail-on-regression), 1 a significant
regression with --fail-on-regression, 2 could not do the work (a missing run, workloads
that differ, a bad option, a failed write).")]
    Diff(DiffArgs),
    /// Serve the embedded simulated OpenAI-compatible server until Ctrl-C.
    #[command(after_help = "\
Examples:
  qexp sim --profile founding --port 8000
  qexp sim --profile fast --faults reset=3:0.1,http_503=5:0.05 --fault-seed 7
  curl http://127.0.0.1:8000/v1/models")]
    Sim(SimArgs),
    /// Benchmark qexp itself as a load generator against a zero-compute local server.
    #[command(after_help = "\
Examples:
  qexp bench                                    # the full benchmark (minutes), results in results/bench/
  qexp bench --quick --out /tmp/bench.json      # seconds; figures not comparable
Measures output tok/s and CPU s per million tokens (C = 1..1024), TTFT and chunk-gap
error against the server's own timestamps, peak RSS with 1,000 and 10,000 open
streams, and open-loop send lag and achieved rate at 100..10,000 req/s.")]
    Bench(BenchArgs),
}

/// `qexp run`.
// Doc comments here are clap's help text, where `<run-id>` is the usual
// placeholder; rustdoc would read it as an unclosed HTML tag.
#[allow(rustdoc::invalid_html_tags)]
#[derive(Debug, clap::Args)]
pub struct RunArgs {
    /// The plan (TOML).
    #[arg(required_unless_present = "resume", conflicts_with = "resume")]
    pub plan: Option<PathBuf>,
    /// Trials per point, overriding the plan's `run.trials`.
    #[arg(long, conflicts_with = "resume")]
    pub trials: Option<u32>,
    /// Server base URL (http://host:port) or sim:<profile>, overriding the plan (with --resume: where the server answers now).
    #[arg(long)]
    pub target: Option<String>,
    /// Model name, overriding the plan.
    #[arg(long, conflicts_with = "resume")]
    pub model: Option<String>,
    /// Finish an interrupted or crashed run (results/<experiment>/<run-id>): only the (trial, point) pairs it did not complete run again, into the same folder.
    #[arg(long, value_name = "RUN_DIR")]
    pub resume: Option<PathBuf>,
    /// With --resume: go on even if the plan file or the target's fingerprint changed (recorded in the manifest).
    #[arg(long, requires = "resume")]
    pub force: bool,
    /// Results root.
    #[arg(long, default_value = "results", conflicts_with = "resume")]
    pub out: PathBuf,
    /// Do not render a report after the run.
    #[arg(long)]
    pub no_report: bool,
    /// Reports root, for the report rendered after the run.
    #[arg(long, default_value = "reports")]
    pub reports: PathBuf,
    /// Print the schedule (blocks, the deployment order in each, server
    /// starts) and the points, then exit without starting or sending anything.
    #[arg(long, conflicts_with = "resume")]
    pub dry_run: bool,
}

/// `qexp report`.
// Doc comments here are clap's help text, where `<run-id>` is the usual
// placeholder; rustdoc would read it as an unclosed HTML tag.
#[allow(rustdoc::invalid_html_tags)]
#[derive(Debug, clap::Args)]
pub struct ReportArgs {
    /// Result folders (results/<experiment>/<run-id>) and notebooks (.md files naming their runs); default: the newest run of each experiment.
    pub runs: Vec<PathBuf>,
    /// Where to look for runs when none are given.
    #[arg(long, default_value = "results")]
    pub results: PathBuf,
    /// Reports root; each run goes to <out-dir>/<experiment>/<run-id>/.
    #[arg(long, default_value = "reports")]
    pub out_dir: PathBuf,
    /// A folder with your own report.md.tera and/or report.html.tera (missing files fall back to the built-in ones).
    #[arg(long)]
    pub templates: Option<PathBuf>,
    /// A narrative notebook (Markdown with tera expressions) to render into the report; default: <plan dir>/<experiment>.md when it exists.
    #[arg(long)]
    pub narrative: Option<PathBuf>,
    /// The metric the index's history charts follow at each point.
    #[arg(long, default_value = "ttft_s", value_parser = clap::builder::PossibleValuesParser::new(qexp_analysis::history::METRICS.map(qexp_analysis::Metric::key)))]
    pub history_metric: String,
    /// Do not write <out-dir>/index.md and index.html (every experiment under --results, its runs and its history).
    #[arg(long)]
    pub no_index: bool,
}

/// `qexp sim`.
// Doc comments here are clap's help text, where `<run-id>` is the usual
// placeholder; rustdoc would read it as an unclosed HTML tag.
#[allow(rustdoc::invalid_html_tags)]
#[derive(Debug, clap::Args)]
pub struct SimArgs {
    /// Simulator profile.
    #[arg(long, default_value = "founding")]
    pub profile: String,
    /// Port on 127.0.0.1 (0 picks a free one).
    #[arg(long, default_value_t = 0)]
    pub port: u16,
    /// The model id to serve [default: sim-<profile>].
    #[arg(long)]
    pub model: Option<String>,
    /// Faults injected into a fraction of streamed requests, e.g. `reset=3:0.1,http_503=5:0.05`
    /// (names: close, reset, http_429, http_500, http_503, malformed_json, no_done, stall,
    /// slow_headers, huge_chunk, invalid_utf8, wrong_content_type, context_length).
    #[arg(long)]
    pub faults: Option<String>,
    /// Seed of which requests the faults hit.
    #[arg(long, default_value_t = 0)]
    pub fault_seed: u64,
}

/// `qexp bench`.
// Doc comments here are clap's help text, where `<run-id>` is the usual
// placeholder; rustdoc would read it as an unclosed HTML tag.
#[allow(rustdoc::invalid_html_tags)]
#[derive(Debug, clap::Args)]
pub struct BenchArgs {
    /// A scaled-down run (seconds): checks that everything works, figures not comparable.
    #[arg(long)]
    pub quick: bool,
    /// Results file (JSON; a Markdown table is written beside it); default results/bench/bench-<UTC time>.json.
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Use a bench server already running at this URL instead of starting one.
    #[arg(long)]
    pub server: Option<String>,
    /// Only serve the bench server (what `qexp bench` starts in a process of its own).
    #[arg(long, hide = true)]
    pub serve: bool,
    /// Port for `--serve` (0 picks a free one).
    #[arg(long, default_value_t = 0, hide = true)]
    pub port: u16,
}

/// Logging to stderr; level from `RUST_LOG` (default: warnings). The
/// runner's progress lines are shown plainly, whatever the level.
pub fn init_tracing() {
    use tracing_subscriber::filter::{LevelFilter, Targets};
    use tracing_subscriber::prelude::*;
    let mut filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn"));
    // Progress goes through its own layer below, never twice.
    if let Ok(off) = format!("{}=off", qexp_runner::PROGRESS_TARGET).parse() {
        filter = filter.add_directive(off);
    }
    let logs = tracing_subscriber::fmt::layer()
        .with_writer(std::io::stderr)
        .with_filter(filter);
    let progress = tracing_subscriber::fmt::layer()
        .with_writer(std::io::stderr)
        .without_time()
        .with_level(false)
        .with_target(false)
        .with_ansi(false)
        .with_filter(Targets::new().with_target(qexp_runner::PROGRESS_TARGET, LevelFilter::INFO));
    let _ = tracing_subscriber::registry()
        .with(logs)
        .with(progress)
        .try_init();
}

/// Runs a parsed command line; returns the process exit code.
pub fn main_with(cli: Cli) -> u8 {
    let rt = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
            return EXIT_FAILURE;
        }
    };
    let result = match cli.command {
        Command::Run(args) => rt.block_on(cmd_run::run(args)),
        Command::Report(args) => cmd_report::report(args).map(|_| 0),
        Command::Diff(args) => cmd_diff::diff(args),
        Command::Sim(args) => rt.block_on(cmd_sim::sim(args)),
        Command::Bench(args) => rt.block_on(cmd_bench::bench(args)),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {}", one_sentence(&e.error));
            e.code
        }
    }
}

/// The error and its causes, each cause once: library errors already name
/// their cause in their own message, so `{:#}` would repeat it.
fn one_sentence(e: &anyhow::Error) -> String {
    let mut out = e.to_string();
    for cause in e.chain().skip(1) {
        let c = cause.to_string();
        if !out.contains(&c) {
            out.push_str(": ");
            out.push_str(&c);
        }
    }
    out
}

/// An error with the exit code it maps to.
#[derive(Debug)]
pub struct CliError {
    /// The error chain to print.
    pub error: anyhow::Error,
    /// The process exit code.
    pub code: u8,
}

impl CliError {
    /// Bad input: exit 2.
    pub fn input(e: impl Into<anyhow::Error>) -> CliError {
        CliError {
            error: e.into(),
            code: EXIT_BAD_INPUT,
        }
    }
    /// Failure while working: exit 1.
    pub fn failure(e: impl Into<anyhow::Error>) -> CliError {
        CliError {
            error: e.into(),
            code: EXIT_FAILURE,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn cli_definition_is_consistent() {
        Cli::command().debug_assert();
    }
}
