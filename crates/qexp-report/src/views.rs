//! The plain serialisable structs templates read. Strings hold text as the
//! run recorded it; escaping is the template's job (tera autoescape for
//! HTML, the `md_cell` and `md_text` filters for Markdown), except for the
//! pre-rendered Markdown snippets (`Table::markdown`, kept for narratives),
//! whose run-supplied text is already made inert with
//! [`crate::format::md_text`]. A table's rows carry both the formatted cells
//! and their values ([`RowValues`], [`Stat`]), which the filters of
//! [`crate::filters`] format the same way. Only types live here, below the
//! modules that build them.

use crate::charts::Chart;
use crate::deployments::DeploymentsView;
use crate::open_loop::OpenLoopView;
use crate::turns::{ReasoningRow, TurnRow};
use qexp_analysis::anomaly::ThresholdRow;
use serde::Serialize;

/// Everything the report templates see. Plain data; no logic in templates
/// beyond loops and conditionals.
#[derive(Debug, Clone, Serialize)]
pub struct ReportContext {
    /// Experiment name.
    pub experiment: String,
    /// Plan description.
    pub description: String,
    /// Run id.
    pub run_id: String,
    /// `complete`, `interrupted` or `running`.
    pub status: String,
    /// Why the run stopped early, if it did.
    pub stop_reason: Option<String>,
    /// A merged run's notes: shards missing (`--partial`) or out of step.
    pub merge_notes: Vec<String>,
    /// `[run] stop_past_saturation`: each stop, with the points it left unmeasured.
    pub saturation_notes: Vec<String>,
    /// True when the target was the embedded simulator.
    pub simulated: bool,
    /// A sentence about the simulator (profile, time scale), when simulated.
    pub simulated_note: Option<String>,
    /// Target URL as given.
    pub target: String,
    /// Model.
    pub model: String,
    /// API kind.
    pub api: String,
    /// Trials run.
    pub trials: u32,
    /// Plan path as given to `qexp run`.
    pub plan_path: String,
    /// SHA-256 of the plan text.
    pub plan_hash: String,
    /// The plan, verbatim.
    pub plan_text: String,
    /// qexp version.
    pub qexp_version: String,
    /// `commit (branch, dirty)` or "not in git".
    pub git: String,
    /// Host summary.
    pub host: String,
    /// GPUs, or "none reported".
    pub gpus: String,
    /// What the server reported about itself, one entry per document.
    pub server: Vec<ServerDoc>,
    /// Start (UTC), from the manifest.
    pub started_at: String,
    /// End (UTC), from the manifest, or a dash.
    pub ended_at: String,
    /// Headline numbers for the summary.
    pub headline: Vec<Headline>,
    /// Anomaly flags and findings, numbered; rows and charts carry their markers.
    pub flags: Vec<FlagView>,
    /// The detectors' limits, for "how to read this report".
    pub thresholds: Vec<ThresholdRow>,
    /// Why the limits are qexp's defaults rather than the plan's, when they are.
    pub thresholds_note: Option<String>,
    /// One table per swept axis and combination of the other parameters.
    pub tables: Vec<Table>,
    /// Per class and fairness, in a run whose requests carry classes.
    pub classes: Option<crate::classes::ClassView>,
    /// Multi-turn runs: one row per (point, turn); empty otherwise.
    pub turns: Vec<TurnRow>,
    /// Whether the run's API streams tokens; embeddings and rerank runs
    /// get tables of the metrics they have (requests/s, input tok/s, E2E).
    pub streams: bool,
    /// Closed-loop points with a steady-state window; empty otherwise.
    pub steady: Vec<crate::steady::SteadyRow>,
    /// How the steady-state window is chosen, in a sentence.
    pub steady_rule: String,
    /// Points whose requests streamed reasoning; empty otherwise.
    pub reasoning: Vec<ReasoningRow>,
    /// Response time from the schedule, rates, goodput and capacity (open-loop runs and runs with SLOs).
    pub open_loop: Option<OpenLoopView>,
    /// Whether any table has server counters (scraped metrics).
    pub server_counters: bool,
    /// Charts, filled in by the renderer (empty from [`crate::report_context`]).
    pub charts: Vec<ChartView>,
    /// Per point, the requests' latency distributions and timeline, filled
    /// in by the renderer (empty from [`crate::report_context`]).
    pub distributions: Vec<DistributionView>,
    /// The rendered narrative notebook, filled in by the renderer when there is one.
    pub narrative: Option<NarrativeView>,
    /// A run with deployments: who was compared, and each against the baseline.
    pub deployments: Option<DeploymentsView>,
    /// Failed requests by point and error class, with one message each.
    pub failures: Vec<FailureRow>,
    /// Graded answers per point (`[accuracy]`); empty without.
    pub accuracy: Vec<AccuracyRow>,
    /// Greedy equivalence of each deployment with the baseline; empty
    /// without deployments sent at temperature 0.
    pub equivalence: Vec<EquivalenceRow>,
    /// The run against a fitted model, filled in by the renderer when one
    /// is given or found beside the run.
    pub fit: Option<FitView>,
}

/// The run against a fitted model (`model.md` holds every point).
#[derive(Debug, Clone, Serialize)]
pub struct FitView {
    /// The full comparison beside the report: `model.md`.
    pub file: String,
    /// The model file, as given or found beside the run.
    pub model_path: String,
    /// The runs it was fitted on, comma-separated.
    pub sources: String,
    /// Medians compared (points × metrics).
    pub medians: usize,
    /// The medians outside the model's 90% interval widened by what the
    /// measurement adds ([`FitView::widened`]).
    pub outside: Vec<FitRow>,
    /// How the interval is widened, as a phrase: "10% of each end, and …".
    pub widened: String,
    /// The model's charts, one per metric.
    pub charts: Vec<ChartView>,
}

/// One median the model cannot explain.
#[derive(Debug, Clone, Serialize)]
pub struct FitRow {
    /// The point's label.
    pub point: String,
    /// The metric (`ttft_s`, …).
    pub metric: String,
    /// The median across trials, with unit.
    pub measured: String,
    /// The model's prediction, with unit.
    pub predicted: String,
    /// Its 90% interval, `lo … hi` with unit.
    pub interval: String,
}

/// One deployment's answers against the baseline's, for the greedy
/// equivalence table.
#[derive(Debug, Clone, Serialize)]
pub struct EquivalenceRow {
    /// `deployment` against `baseline`.
    pub pair: String,
    /// Identical answers over paired requests, `share (k/n)`.
    pub identical: String,
    /// Per point, `label share`.
    pub by_point: String,
    /// Median word at which differing answers part, and over how many.
    pub first_divergence: String,
    /// Each deployment against itself across loads (graded items).
    pub baselines: String,
    /// The judgement, as a sentence.
    pub judged: String,
}

/// One point's graded answers, for the accuracy table.
#[derive(Debug, Clone, Serialize)]
pub struct AccuracyRow {
    /// The point's label.
    pub point: String,
    /// `right / answered` (and the failed graded requests, when any).
    pub right: String,
    /// The accuracy, a percentage.
    pub accuracy: String,
    /// Its 95% Wilson interval, `lo – hi` in percent.
    pub interval: String,
    /// Against the lowest load: the verdict, the change and Holm-adjusted p; empty at the lowest load.
    pub vs_lowest_load: String,
}

/// Failed requests of one point and class, for the failures table.
#[derive(Debug, Clone, Serialize)]
pub struct FailureRow {
    /// The point's label.
    pub point: String,
    /// The error class (`stream_broken`, `http_5xx`, …).
    pub class: String,
    /// Failed requests, over every trial.
    pub count: u64,
    /// The trials, e.g. `1, 3`.
    pub trials: String,
    /// One of their messages, cut at 300 characters.
    pub message: String,
}

/// One server self-description document, shortened.
#[derive(Debug, Clone, Serialize)]
pub struct ServerDoc {
    /// Endpoint path, e.g. `/v1/models`.
    pub path: String,
    /// Its JSON, cut at 300 characters.
    pub json: String,
}

/// One headline number of the summary.
#[derive(Debug, Clone, Serialize)]
pub struct Headline {
    /// What it is, e.g. "Peak aggregate throughput".
    pub label: String,
    /// The value with unit, spread and point.
    pub value: String,
}

/// One flag as the report shows it.
#[derive(Debug, Clone, Serialize)]
pub struct FlagView {
    /// 1-based number, in the order the detectors sort flags (plan order, then kind).
    pub number: usize,
    /// The marker placed next to the point in tables and charts, e.g. `⚑1`.
    pub marker: String,
    /// `warning` or `finding`.
    pub severity: String,
    /// Short title, e.g. "Wrong direction".
    pub title: String,
    /// The point's short label, when the flag belongs to one.
    pub point: Option<String>,
    /// The point's id.
    pub point_id: Option<u32>,
    /// The flag's sentence: what was seen and what to do.
    pub message: String,
    /// The metrics it concerns (`ttft_s`, `agg_tok_s`, …); empty when it concerns the whole point.
    pub metrics: Vec<String>,
}

/// One table of the founding style: a row per point along one axis.
#[derive(Debug, Clone, Serialize)]
pub struct Table {
    /// The swept axis, snake_case (`concurrency`, `input_tokens`, `output_tokens`).
    pub axis: String,
    /// Title, e.g. "By concurrency".
    pub title: String,
    /// Header of the first column, with unit.
    pub axis_header: String,
    /// The parameters held fixed in this table, as text.
    pub fixed: String,
    /// Rows in axis order.
    pub rows: Vec<Row>,
    /// Headers of the server-counter table, in column order (`RowValues::server`).
    pub server_headers: Vec<String>,
    /// Whether the run scraped the server's metrics at these points (the
    /// server-counter table is shown).
    pub server: bool,
    /// Headers of the energy and cost table, in column order (`Row::energy`).
    pub energy_headers: Vec<String>,
    /// Whether the run has power or a price at these points (the energy and
    /// cost table is shown).
    pub energy: bool,
    /// Whether a point plans a shared prefix or reports cached tokens (the
    /// prompt-cache table is shown).
    pub cache: bool,
    /// Whether the plan draws lengths from a distribution (the lengths table
    /// is shown).
    pub lengths: bool,
}

/// One point in a table: the axis value, n, and its figures across trials.
#[derive(Debug, Clone, Serialize)]
pub struct Row {
    /// Point id.
    pub point_id: u32,
    /// The axis value.
    pub value: String,
    /// Trials with data.
    pub n: usize,
    /// Energy and cost cells, median (min–max) across trials
    /// (`Table::energy_headers`), with the power-capped share and the
    /// trials' energy notes as text.
    pub energy: Vec<String>,
    /// The numbers behind the cells; the templates format them with the
    /// `cell`, `spread`, `iqr`, `ci` and `cv` filters.
    pub values: RowValues,
}

/// One cell's values across trials, for templates that format their own
/// tables (the `cell`, `spread`, `iqr`, `ci` and `cv` filters print them as
/// the built-in tables do). Values are in `unit`; absent ones are null.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Stat {
    /// `tok/s`, `s`, `ms`, `tokens`, `share` (a fraction of 1), `count` or `ratio`.
    pub unit: &'static str,
    /// Trials with a value.
    pub n: usize,
    /// Median across trials.
    pub median: Option<f64>,
    /// Smallest trial value.
    pub min: Option<f64>,
    /// Largest trial value.
    pub max: Option<f64>,
    /// First quartile.
    pub q1: Option<f64>,
    /// Third quartile.
    pub q3: Option<f64>,
    /// Interquartile range.
    pub iqr: Option<f64>,
    /// 95% confidence interval of the median, `[low, high]`; null below 6 trials.
    pub ci95: Option<[f64; 2]>,
    /// Coefficient of variation (a fraction); null below 2 trials.
    pub cv: Option<f64>,
}

/// A point's values, one [`Stat`] per column of the built-in tables.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct RowValues {
    /// The point's value on the table's axis (a concurrency, a length, a rate); null for a multi-stage or trace load.
    pub axis: Option<f64>,
    /// Aggregate output, tok/s.
    pub agg: Stat,
    /// Successful requests per second.
    pub req_s: Stat,
    /// Prompt tokens per second.
    pub input_tok_s: Stat,
    /// Per-request decode, tok/s.
    pub decode: Stat,
    /// TTFT median, s.
    pub ttft: Stat,
    /// TTFT p90, s.
    pub ttft_p90: Stat,
    /// E2E median, s.
    pub e2e: Stat,
    /// Pooled ITL p50, ms.
    pub itl_p50: Stat,
    /// Pooled ITL p90, ms.
    pub itl_p90: Stat,
    /// Pooled ITL p99, ms.
    pub itl_p99: Stat,
    /// Planned prompt tokens.
    pub input_planned: Stat,
    /// Server-reported prompt tokens.
    pub input_sent: Stat,
    /// Planned output tokens.
    pub output_planned: Stat,
    /// Server-reported completion tokens.
    pub output_sent: Stat,
    /// Share of prompt tokens reported cached.
    pub cached_share: Stat,
    /// Share the plan expected cached.
    pub cached_share_expected: Stat,
    /// The server-counter columns, in the order of [`Table::server_headers`].
    pub server: Vec<Stat>,
    /// Failed measured requests, all trials.
    pub failures: u64,
    /// Measured requests, all trials.
    pub requests: u64,
    /// The markers of the point's flags (`⚑1`), one per flag.
    pub flags: Vec<String>,
    /// Notes (invalid trial reasons), one per trial that has one.
    pub notes: Vec<String>,
    /// The point's answers are broken: its throughput was measured on broken output.
    pub broken: bool,
}

/// One chart as the templates place it.
#[derive(Debug, Clone, Serialize)]
pub struct ChartView {
    /// Stable name, e.g. `ttft_vs_input`.
    pub name: String,
    /// File name beside the report, e.g. `ttft_vs_input.svg`.
    pub file: String,
    /// Title.
    pub title: String,
    /// The SVG document, for inlining in HTML.
    pub svg: String,
}

/// One point's request-level charts as the templates place them.
#[derive(Debug, Clone, Serialize)]
pub struct DistributionView {
    /// The point's id.
    pub point_id: u32,
    /// Its short label.
    pub point: String,
    /// TTFT distribution function, a line per trial.
    pub ttft_cdf: Option<ChartView>,
    /// E2E distribution function, a line per trial.
    pub e2e_cdf: Option<ChartView>,
    /// TTFT against send time, a colour per trial.
    pub timeline: Option<ChartView>,
}

/// A narrative notebook rendered for this run.
#[derive(Debug, Clone, Serialize)]
pub struct NarrativeView {
    /// Where it came from, as found.
    pub source: String,
    /// Its Markdown after the tera expressions were evaluated.
    pub markdown: String,
    /// The same, as HTML.
    pub html: String,
    /// Why it could not be rendered, when it could not (the rest of the report still is).
    pub error: Option<String>,
}

/// What a template shows of a drawn chart: its name, file, title and SVG.
pub(crate) fn chart_view(c: &Chart) -> ChartView {
    ChartView {
        name: c.name.clone(),
        file: format!("{}.svg", c.name),
        title: c.title.clone(),
        svg: c.svg.clone(),
    }
}
