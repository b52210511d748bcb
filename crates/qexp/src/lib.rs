//! The `qexp` command line: argument parsing, logging and wiring. Each
//! subcommand lives in its own module and calls into the library crates;
//! no measurement or statistics logic lives here.

mod alloc;
mod cmd_bench;
mod cmd_diff;
mod cmd_export;
mod cmd_fit;
mod cmd_import;
mod cmd_kube;
mod cmd_merge;
mod cmd_objstore;
mod cmd_predict;
mod cmd_report;
mod cmd_run;
mod cmd_sim;
mod model_text;
mod summary;

use clap::{Parser, Subcommand};
pub use cmd_diff::{DiffArgs, Format as DiffFormat, EXIT_REGRESSION};
pub use cmd_export::ExportArgs;
pub use cmd_import::ImportArgs;
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
  qexp sim --profile founding --port 8000       # serve the simulator
  qexp kube experiments/throughput.toml --shards 8 --image IMAGE --target http://vllm:8000
  qexp merge s3://bench/qexp/throughput/ID-shard{0..7}-of-8 --out results/throughput/ID
  qexp fit results/throughput/RUN               # a model of the deployment → RUN/model.json
  qexp predict RUN/model.json --concurrency 64 --input 1000 --output 500")]
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
    /// Fit a model of the deployment (prefill, decode step, tokens per step, batch limit) to runs.
    #[command(after_help = "\
Examples:
  qexp fit results/throughput/RUN_A results/longctx/RUN_B --out founding.json
  qexp fit results/mtp/RUN --deployment no-mtp
  qexp fit --table crates/qexp-model/data/founding.toml --hold-out 'throughput c=2 in=1000 out=500'
Prints each coefficient with its 90% interval (trials resampled), a residual per point
(measured, fitted, error) and a warning for every coefficient the runs cannot identify.
The model (docs/model.md) is written as JSON: RUN/model.json unless --out.")]
    Fit(FitArgs),
    /// Import another tool's result files (vllm bench serve, vllm-bench, GuideLLM, AIPerf, inference-perf) as a run, recomputed under qexp's definitions.
    #[command(after_help = "\
Examples:
  qexp import vllm bench-*.json                      # several files of one configuration: trials
  qexp import vllm run1.json run2.json --experiment baseline --tool-version 0.32.0
  qexp import vllm-bench results/*.json              # the Rust vllm-bench's --save-result files
  qexp import guidellm benchmarks.json --plan experiments/throughput.toml
  qexp import aiperf artifacts/run1/profile_export.jsonl artifacts/run2/profile_export.jsonl
  qexp import inference-perf reports-*/per_request_lifecycle_metrics.json --tool-version 0.7.0
  qexp diff results/throughput/RUN results/import-vllm/IMPORTED_RUN
Every figure qexp can recompute from the files' per-request data is recomputed under
qexp's definitions (docs/importing.md), and each of the tool's own figures is printed
beside qexp's with whether they agree within 1%. The manifest records the tool, the
files with their SHA-256, and what the files do not say. Bad input (another format, a
truncated file, a field qexp does not know, per-request arrays of different lengths) is
one sentence naming the file and the field, exit 2, and nothing is written.")]
    Import(ImportArgs),
    /// Write a run in another tool's format: llm-d-benchmark's Benchmark Report (v0.2.1).
    #[command(after_help = "\
Examples:
  qexp export llmd results/throughput/20261130T101500Z-1a2b3c
  qexp export llmd RUN_ID --out site/llmd
Writes one Benchmark Report (JSON, schema v0.2.1) per trial and point: the run, the load
(tool qexp, lengths, concurrency or rate) and the measured requests' statistics (TTFT, TPOT,
chunk gaps, E2E, lengths, throughput), so llm-d-benchmark's analysis reads qexp's results.")]
    Export(ExportArgs),
    /// Predict latency, throughput and cost with intervals, and the capacity under an SLO.
    #[command(after_help = "\
Examples:
  qexp predict RUN/model.json --concurrency 1,8,64 --input 1000 --output 500
  qexp predict RUN/model.json --plan experiments/longctx.toml
  qexp predict founding --input 1000 --output 500 --slo ttft_p90=2s,tpot=50ms
  qexp predict founding --input 1000 --output 500 --set tokens_per_step=1 --step-scale 0.8
  qexp predict RUN/model.json --input 1000 --output 500 --slo tpot=50ms --cheapest --kwh-usd 0.15
MODEL is a `qexp fit` file or `founding` (the fit of the founding tables). Predictions
outside the fitted ranges are labelled extrapolated. A model fitted on runs with [power]
also predicts power, J per output token and, with a price, $ per 1M output tokens.")]
    Predict(PredictArgs),
    /// Serve the embedded simulated OpenAI-compatible server until Ctrl-C.
    #[command(after_help = sim_after_help())]
    Sim(SimArgs),
    /// Benchmark qexp itself as a load generator against a zero-compute local server.
    #[command(after_help = "\
Examples:
  qexp bench                                # the full benchmark (minutes), into results/bench/
  qexp bench --quick --out /tmp/bench.json  # seconds; figures not comparable
Measures output tok/s and CPU s per million tokens (C = 1..1024), TTFT and chunk-gap
error against the server's own timestamps, peak RSS with 1,000 and 10,000 open
streams, open-loop send lag and achieved rate at 100..10,000 req/s, and the client's
CPU with and without sampling 8 GPUs' power every 100 ms (--power: that alone).")]
    Bench(BenchArgs),
    /// Put the shard folders of one run (`qexp run --shard K/N`) together into one run.
    #[command(after_help = "\
Examples:
  qexp merge results/throughput/RUN-shard{0..3}-of-4 --out results/throughput/RUN
  qexp merge results/throughput/RUN-shard* --out results/throughput/RUN --partial
  qexp merge s3://bench/qexp/throughput/RUN-shard{0..3}-of-4 --out results/throughput/RUN
A shard given as a URL (what `qexp run --upload` or `qexp kube --results-url` wrote) is
downloaded first, into --cache (default: the folder of --out, where `qexp run` would have
written it). Refuses (exit 2), naming the shard, when a shard is missing or did not
complete; resume that shard alone (qexp run --resume SHARD_DIR) and merge again, or pass
--partial.")]
    Merge(MergeArgs),
    /// Write the Kubernetes objects that run a plan as N shards (an Indexed Job).
    #[command(after_help = "\
Examples:
  qexp kube experiments/throughput.toml --shards 8 --image IMAGE --target http://llm:8000 > job.yaml
  kubectl apply --server-side -f job.yaml
  qexp kube PLAN --shards 8 --image IMAGE --target URL --results-url s3://bench/qexp > job.yaml
--target is a server every shard reaches (a Service in the cluster): a sim: target is refused,
since each pod would run a private simulator of its own; serve one with `qexp sim --host 0.0.0.0`.
Writes a ConfigMap with the plan, a headless Service through which the shards reach shard 0, a
PersistentVolumeClaim for the results (or, with --results-url, an emptyDir per pod that each shard
uploads to the object store; --object-store-secret names its credentials), and the Indexed Job.
See docs/kubernetes.md.")]
    Kube(KubeArgs),
    /// Copy a run folder to an object store, to URL/<experiment>/<run folder>/.
    #[command(after_help = "\
Examples:
  qexp upload results/throughput/RUN s3://bench/qexp
  AWS_ENDPOINT_URL=http://minio.local:9000 qexp upload results/throughput/RUN s3://bench/qexp
  qexp upload results/throughput/RUN file:///mnt/archive/qexp
Sends the files that are new or changed and removes the objects whose file is gone, so
the store ends up holding what the folder holds (run it again after a --resume).
Credentials come from the environment: AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY,
AWS_SESSION_TOKEN, AWS_REGION, AWS_ENDPOINT_URL (an http:// endpoint is allowed), or a
web identity or container role (docs/kubernetes.md). Exit 2 for a bad URL or missing or
refused credentials, 1 when the store cannot be reached.")]
    Upload(UploadArgs),
    /// Copy what is under an object-store URL into a new local folder.
    #[command(after_help = "\
Examples:
  qexp download s3://bench/qexp/throughput/RUN-shard3-of-8 results/throughput/RUN-shard3-of-8
  qexp run --resume results/throughput/RUN-shard3-of-8 --force --upload s3://bench/qexp
DIR must not exist, or already hold every object the store holds (by name and size).
Credentials as for `qexp upload`.")]
    Download(DownloadArgs),
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
    /// Do not render a report, nor refresh the reports' index, after the run.
    #[arg(long)]
    pub no_report: bool,
    /// Reports root, for the report and the index (index.md, index.html) refreshed after the run.
    #[arg(long, default_value = "reports")]
    pub reports: PathBuf,
    /// Print the schedule (blocks, the deployment order in each, server
    /// starts) and the points, then exit without starting or sending anything.
    #[arg(long, conflicts_with = "resume")]
    pub dry_run: bool,
    /// Run shard K of N of the plan (K from 0); `auto/N` takes K from
    /// JOB_COMPLETION_INDEX, as a Kubernetes Indexed Job sets it. Every shard
    /// gets the same --run-id; `qexp merge` puts their folders together.
    #[arg(
        long,
        value_name = "K/N",
        conflicts_with = "resume",
        requires = "run_id"
    )]
    pub shard: Option<String>,
    /// The run id every shard of the run shares (letters, digits, `.`, `_`, `-`).
    #[arg(long, value_name = "ID", requires = "shard", conflicts_with = "resume")]
    pub run_id: Option<String>,
    /// Where the shards meet: shard 0's HOST:PORT, which shard 0 serves and
    /// the others reach (shard 0 given port 0 picks one and prints it).
    #[arg(long, value_name = "HOST:PORT", requires = "shard")]
    pub rendezvous: Option<String>,
    /// Where shard 0 listens when that is not --rendezvous (in a pod: `[::]:PORT`,
    /// which takes IPv4 and IPv6).
    #[arg(long, value_name = "ADDR", requires = "rendezvous")]
    pub rendezvous_bind: Option<String>,
    /// Seconds a shard may go unheard before the others go on without it
    /// (it is named in their manifests).
    #[arg(
        long,
        value_name = "S",
        default_value_t = 30.0,
        requires = "rendezvous"
    )]
    pub shard_lost_after: f64,
    /// Seconds the shards wait for each other to start.
    #[arg(
        long,
        value_name = "S",
        default_value_t = 600.0,
        requires = "rendezvous"
    )]
    pub shard_join_timeout: f64,
    /// Copy the run folder to an object store as the run writes it, to
    /// URL/<experiment>/<run folder>/ (s3://BUCKET/PREFIX or file:///PATH): as
    /// soon as it exists, every --upload-every seconds, and when the run ends
    /// however it ends (a crash loses at most what came since the last upload).
    #[arg(long, value_name = "URL", conflicts_with = "dry_run")]
    pub upload: Option<String>,
    /// Seconds between uploads while the run goes on.
    #[arg(long, value_name = "S", default_value_t = 60.0, requires = "upload")]
    pub upload_every: f64,
    /// Test only: make this host's clock read this many seconds ahead.
    #[arg(
        long,
        hide = true,
        default_value_t = 0.0,
        allow_negative_numbers = true
    )]
    pub clock_skew_s: f64,
}

/// `qexp merge`.
// Doc comments here are clap's help text, where `<run-id>` is the usual
// placeholder; rustdoc would read it as an unclosed HTML tag.
#[allow(rustdoc::invalid_html_tags)]
#[derive(Debug, clap::Args)]
pub struct MergeArgs {
    /// The shard folders (`qexp run --shard K/N` wrote one each), or their URLs in an object store.
    #[arg(required = true, value_name = "SHARD_DIR|URL")]
    pub shards: Vec<String>,
    /// The merged run's folder, e.g. results/<experiment>/<run-id> (must not exist).
    #[arg(long, value_name = "RUN")]
    pub out: PathBuf,
    /// Merge even if shards are missing or incomplete; the run is marked partial.
    #[arg(long)]
    pub partial: bool,
    /// Where shards given as URLs are downloaded, each into a folder of its
    /// name [default: the folder of --out].
    #[arg(long, value_name = "DIR")]
    pub cache: Option<PathBuf>,
}

/// `qexp upload`.
// Doc comments here are clap's help text, where `<experiment>` is a
// placeholder; rustdoc would read it as an unclosed HTML tag.
#[allow(rustdoc::invalid_html_tags)]
#[derive(Debug, clap::Args)]
pub struct UploadArgs {
    /// The run folder (results/<experiment>/<run-id>).
    #[arg(value_name = "RUN_DIR")]
    pub run: PathBuf,
    /// The results URL (s3://BUCKET/PREFIX or file:///PATH); the folder goes to URL/<experiment>/<run folder>/.
    #[arg(value_name = "URL")]
    pub url: String,
}

/// `qexp download`.
#[derive(Debug, clap::Args)]
pub struct DownloadArgs {
    /// What to copy: every object under this URL.
    #[arg(value_name = "URL")]
    pub url: String,
    /// The folder to create.
    #[arg(value_name = "DIR")]
    pub dir: PathBuf,
}

/// `qexp kube`.
// Doc comments here are clap's help text, where `<experiment>` is a
// placeholder; rustdoc would read it as an unclosed HTML tag.
#[allow(rustdoc::invalid_html_tags)]
#[derive(Debug, clap::Args)]
pub struct KubeArgs {
    /// The plan (TOML).
    pub plan: PathBuf,
    /// Shards: pods of the Indexed Job, each one client host.
    #[arg(long, value_name = "N")]
    pub shards: u32,
    /// The container image with qexp (see the repository's Dockerfile).
    #[arg(long, value_name = "IMAGE")]
    pub image: String,
    /// The run id every shard shares [default: a new one].
    #[arg(long, value_name = "ID")]
    pub run_id: Option<String>,
    /// Server base URL, overriding the plan's (a Service inside the cluster).
    #[arg(long, value_name = "URL")]
    pub target: Option<String>,
    /// Kubernetes namespace of the objects.
    #[arg(long, default_value = "default")]
    pub namespace: String,
    /// CPU each shard requests (and is limited to).
    #[arg(long, default_value = "2")]
    pub cpu: String,
    /// Memory each shard requests (and is limited to).
    #[arg(long, default_value = "4Gi")]
    pub memory: String,
    /// Size of the PersistentVolumeClaim the shards write their folders to
    /// (with --results-url: of each pod's emptyDir).
    #[arg(long, default_value = "10Gi")]
    pub storage: String,
    /// Storage class of that claim (it must allow ReadWriteMany) [default: the cluster's].
    #[arg(long, conflicts_with = "results_url")]
    pub storage_class: Option<String>,
    /// Send the shards' folders to this object-store URL (s3://BUCKET/PREFIX)
    /// instead of a PersistentVolumeClaim: each pod writes to an emptyDir
    /// and `qexp run --upload URL` copies it to URL/<experiment>/<run-id>-shardK-of-N/.
    #[arg(long, value_name = "URL")]
    pub results_url: Option<String>,
    /// The Secret whose keys become each pod's environment for the object
    /// store (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_REGION,
    /// AWS_ENDPOINT_URL, …): named in the objects, never read by qexp.
    #[arg(long, value_name = "SECRET", requires = "results_url")]
    pub object_store_secret: Option<String>,
    /// The Secret holding the plan's API key (its `target.api_key_env`), as
    /// SECRET or SECRET:KEY [default key: the variable's name]; the pods read
    /// it into that variable, and the key never enters the objects.
    #[arg(long, value_name = "SECRET[:KEY]")]
    pub api_key_secret: Option<String>,
    /// Write here instead of standard output.
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
}

/// `qexp report`.
// Doc comments here are clap's help text, where `<run-id>` is the usual
// placeholder; rustdoc would read it as an unclosed HTML tag.
#[allow(rustdoc::invalid_html_tags)]
#[derive(Debug, clap::Args)]
pub struct ReportArgs {
    /// Result folders (results/<experiment>/<run-id>) or run ids under --results, and notebooks (.md files naming their runs); default: the newest run of each experiment.
    pub runs: Vec<PathBuf>,
    /// Where run ids are looked up, and the newest runs when none are given.
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
    /// A `qexp fit` model file: write model.md beside the report, each point against the model [default: RUN/model.json when it exists].
    #[arg(long)]
    pub model: Option<PathBuf>,
    /// The metric the index's history charts follow at each point.
    #[arg(long, default_value = qexp_analysis::history::DEFAULT_METRIC.key(), value_parser = clap::builder::PossibleValuesParser::new(qexp_analysis::history::METRICS.map(qexp_analysis::Metric::key)))]
    pub history_metric: String,
    /// Do not write <out-dir>/index.md and index.html (every experiment under --results, its runs and its history).
    #[arg(long)]
    pub no_index: bool,
}

/// `qexp fit`.
// Doc comments here are clap's help text, where `<run-id>` is the usual
// placeholder and `[[deployment]]` a plan table; rustdoc would read them as
// an unclosed HTML tag and a link.
#[allow(rustdoc::invalid_html_tags, rustdoc::broken_intra_doc_links)]
#[derive(Debug, clap::Args)]
pub struct FitArgs {
    /// Result folders (results/<experiment>/<run-id>) or run ids under --results, of one deployment.
    #[arg(required_unless_present = "table")]
    pub runs: Vec<PathBuf>,
    /// Where run ids are looked up.
    #[arg(long, default_value = "results")]
    pub results: PathBuf,
    /// A table of measured medians instead of runs (the format of crates/qexp-model/data/founding.toml).
    #[arg(long, conflicts_with = "runs")]
    pub table: Option<PathBuf>,
    /// Where to write the model file [default: <first run>/model.json, or <table>.model.json].
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Only this deployment's points (a run with several [[deployment]]s).
    #[arg(long)]
    pub deployment: Option<String>,
    /// f, the share of layers with full attention (the L² prefill term is c·f) [default: the table's, else 1].
    #[arg(long)]
    pub full_attention_share: Option<f64>,
    /// Refits on resampled trials, for the intervals.
    #[arg(long, default_value_t = 40)]
    pub replicates: usize,
    /// Seed of the resampling.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Points to leave out of the fit and predict instead (their labels, comma separated).
    #[arg(long, value_delimiter = ',')]
    pub hold_out: Vec<String>,
    /// Fit on this schedule (separate or mixed) [default: the one that explains the runs best].
    #[arg(long, value_parser = parse_schedule)]
    pub schedule: Option<qexp_model::Schedule>,
}

fn parse_schedule(s: &str) -> Result<qexp_model::Schedule, String> {
    qexp_model::Schedule::by_name(s).ok_or_else(|| format!("`{s}`: separate or mixed"))
}

/// `qexp predict`.
#[derive(Debug, clap::Args)]
pub struct PredictArgs {
    /// A model file from `qexp fit`, or `founding`.
    pub model: String,
    /// Predict each point of this plan.
    #[arg(long, conflicts_with_all = ["concurrency", "rate"])]
    pub plan: Option<PathBuf>,
    /// Closed-loop concurrencies (comma separated).
    #[arg(long, value_delimiter = ',', value_parser = clap::value_parser!(u32).range(1..=100_000))]
    pub concurrency: Vec<u32>,
    /// Open-loop rates, requests per second (comma separated).
    #[arg(long, value_delimiter = ',')]
    pub rate: Vec<f64>,
    /// Input tokens (comma separated).
    #[arg(long = "input", value_delimiter = ',', value_parser = clap::value_parser!(u32).range(1..=10_000_000))]
    pub input_tokens: Vec<u32>,
    /// Output tokens (comma separated).
    #[arg(long = "output", value_delimiter = ',', value_parser = clap::value_parser!(u32).range(1..=1_000_000))]
    pub output_tokens: Vec<u32>,
    /// Image tokens each request carries besides its text (what the server's
    /// vision encoder makes of its images: 256 for a 448 × 448 image in
    /// 28-pixel patches); needs a model fitted on runs that varied images.
    #[arg(long, default_value_t = 0, value_parser = clap::value_parser!(u32).range(0..=10_000_000))]
    pub image_tokens: u32,
    /// Requests per point, and per load the capacity search tries [default:
    /// 2 × concurrency; a minute of arrivals at a rate].
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=1_000_000))]
    pub requests: Option<u32>,
    /// A service-level objective: print the highest concurrency (or rate, with --rate) that holds it.
    #[arg(long, value_name = "METRIC=LIMIT,…")]
    pub slo: Option<String>,
    /// What-if: replace a coefficient, e.g. tokens_per_step=1, the schedule, e.g. schedule=mixed, the intake window, e.g. intake_s=0, or the prefills run at once, e.g. prefill_units=none (repeatable).
    #[arg(long = "set", value_name = "NAME=VALUE")]
    pub set: Vec<String>,
    /// What-if: multiply every decode-step coefficient (d0, d1, d2) by this factor.
    #[arg(long, value_name = "F")]
    pub step_scale: Option<f64>,
    /// Highest concurrency the capacity search tries.
    #[arg(long, default_value_t = 1024, value_parser = clap::value_parser!(u32).range(1..=100_000))]
    pub max_concurrency: u32,
    /// Highest rate (requests/s) the capacity search tries.
    #[arg(long, default_value_t = 1000.0)]
    pub max_rate: f64,
    /// Price the GPUs at $ per GPU-hour (rent, power included) for $ per 1M output tokens [default: the fitted runs' `[cost]`].
    #[arg(long, value_name = "USD", conflicts_with = "kwh_usd")]
    pub gpu_hour_usd: Option<f64>,
    /// Price the GPUs' energy at $ per kWh (times --pue) for $ per 1M output tokens.
    #[arg(long, value_name = "USD")]
    pub kwh_usd: Option<f64>,
    /// The facility's power usage effectiveness, with --kwh-usd.
    #[arg(long, default_value_t = 1.0, requires = "kwh_usd")]
    pub pue: f64,
    /// GPUs a price per GPU-hour multiplies [default: those the fitted runs measured].
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=100_000))]
    pub gpus: Option<u32>,
    /// With --slo: also print the cheapest concurrency that holds it: the lowest $ per 1M output tokens with a price, else the lowest J per output token (needs a model fitted on runs with `[power]`).
    #[arg(long, requires = "slo")]
    pub cheapest: bool,
}

/// `qexp sim`.
// Doc comments here are clap's help text, where `<run-id>` is the usual
// placeholder; rustdoc would read it as an unclosed HTML tag.
#[allow(rustdoc::invalid_html_tags)]
#[derive(Debug, clap::Args)]
pub struct SimArgs {
    /// Simulator profile: a built-in name, or fit=PATH (a `qexp fit` model file).
    #[arg(long, default_value = "founding", help = profile_help())]
    pub profile: String,
    /// Serve the deployment a `qexp fit` model file describes (the same as --profile fit=PATH).
    #[arg(long, value_name = "PATH", conflicts_with = "profile")]
    pub model_file: Option<PathBuf>,
    /// Port (0 picks a free one).
    #[arg(long, default_value_t = 0)]
    pub port: u16,
    /// Address to listen on; only loopback unless you give another.
    #[arg(long, default_value = "127.0.0.1")]
    pub host: std::net::IpAddr,
    /// The model id to serve [default: sim-<profile>].
    #[arg(long)]
    pub model: Option<String>,
    /// Faults injected into a fraction of streamed requests, e.g. `reset=3:0.1,http_503=5:0.05`.
    #[arg(long, help = faults_help())]
    pub faults: Option<String>,
    /// Seed of which requests the faults hit.
    #[arg(long, default_value_t = 0)]
    pub fault_seed: u64,
    /// Share of answers (0 to 1) that fall into a repetition loop [default: the profile's].
    #[arg(long, value_name = "F")]
    pub loop_share: Option<f64>,
    /// Share of arithmetic items (`What is 6 * 7?` in the prompt) answered off by one
    /// [default: the profile's].
    #[arg(long, value_name = "F")]
    pub wrong_share: Option<f64>,
    /// Added to --wrong-share per sequence in the batch beyond the first [default: the profile's].
    #[arg(long, value_name = "F")]
    pub wrong_share_per_seq: Option<f64>,
    /// Share of tool calls and JSON answers (asked by `tools` or
    /// `response_format`) sent malformed [default: the profile's].
    #[arg(long, value_name = "F")]
    pub malformed_share: Option<f64>,
    /// Added to --malformed-share per sequence in the batch beyond the first [default: the profile's].
    #[arg(long, value_name = "F")]
    pub malformed_share_per_seq: Option<f64>,
    /// Share of answers (0 to 1) the model ends before max_tokens, each at a length drawn from
    /// its prompt, for requests without `ignore_eos` [default: the profile's, 0].
    #[arg(long, value_name = "F")]
    pub stop_share: Option<f64>,
    /// Multiplies every duration of the profile (0.5: twice as fast), all but the mixed
    /// schedule's intake window.
    #[arg(long, value_name = "F", default_value_t = 1.0)]
    pub time_scale: f64,
}

/// `--profile`'s help, naming the simulator's built-in profiles.
fn profile_help() -> String {
    format!(
        "Simulator profile: {} (listed below), or fit=PATH (a `qexp fit` model file)",
        qexp_sim::SimProfile::names().join(", ")
    )
}

/// `qexp sim --help`'s text after the options: what each built-in profile
/// is, then examples.
fn sim_after_help() -> String {
    let mut text = String::from("Profiles:\n");
    for name in qexp_sim::SimProfile::names() {
        let about = qexp_sim::SimProfile::about(name).unwrap_or_default();
        text.push_str(&format!("  {name:<18}{about}\n"));
    }
    text.push_str(
        "  fit=PATH          the deployment a `qexp fit` model file describes (--model-file PATH)
Examples:
  qexp sim --profile founding --port 8000
  qexp sim --profile fast --faults reset=3:0.1,http_503=5:0.05 --fault-seed 7
  qexp sim --model-file results/throughput/RUN/model.json   # the deployment as fitted
  qexp sim --profile fast --wrong-share 0.01 --wrong-share-per-seq 0.002   # worse in big batches
  qexp sim --profile fast --malformed-share-per-seq 0.01   # tool calls break in big batches
  curl http://127.0.0.1:8000/v1/models",
    );
    text
}

/// `--faults`' help, naming the faults the simulator can inject.
fn faults_help() -> String {
    format!(
        "Faults injected into a fraction of streamed requests, e.g. `reset=3:0.1,http_503=5:0.05` \
         (names: {})",
        qexp_sim::FAULT_NAMES.join(", ")
    )
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
    /// Only the timing fidelity at C = 1, 100, 500 and 1,000 (about a minute).
    #[arg(long, conflicts_with = "quick")]
    pub fidelity: bool,
    /// Only the client's cost of sampling GPU power (`[power]`): C = 64 without and with it, three times.
    #[arg(long, conflicts_with_all = ["quick", "fidelity"])]
    pub power: bool,
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
    if matches!(
        cli.command,
        Command::Report(_) | Command::Merge(_) | Command::Diff(_)
    ) {
        alloc::keep_freed_memory();
    }
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
        Command::Fit(args) => cmd_fit::fit(args),
        Command::Import(args) => cmd_import::import(args),
        Command::Export(args) => cmd_export::export(args),
        Command::Predict(args) => cmd_predict::predict(args),
        Command::Sim(args) => rt.block_on(cmd_sim::sim(args)),
        Command::Bench(args) => rt.block_on(cmd_bench::bench(args)),
        Command::Merge(args) => rt.block_on(cmd_merge::merge(args)),
        Command::Kube(args) => cmd_kube::kube(args),
        Command::Upload(args) => rt.block_on(cmd_objstore::upload(args)),
        Command::Download(args) => rt.block_on(cmd_objstore::download(args)),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {}", one_sentence(&e.error));
            e.code
        }
    }
}

/// The error and its causes on one line ([`qexp_types::error::chain`]).
fn one_sentence(e: &anyhow::Error) -> String {
    qexp_types::error::chain(e.as_ref())
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
