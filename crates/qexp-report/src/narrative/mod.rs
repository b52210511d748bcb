//! Narrative notebooks: `experiments/<name>.md` beside a plan is Markdown
//! prose with tera expressions that reach into the run's results. It is
//! evaluated with the context below, then placed in `report.md` as Markdown
//! and in `report.html` through pulldown-cmark.
//!
//! What a narrative can use (docs/reports.md "Narrative notebooks" repeats this):
//!
//! - `run`: `experiment`, `run_id`, `model`, `target`, `trials`, `simulated`,
//!   `time_factor` (how many times faster than real time a simulated run ran),
//!   `status`, `plan_hash`, `git_commit`, `started_at`, `engine` (the
//!   server's fingerprint), `host`, `gpus`.
//! - `swept`: the swept axes, e.g. `["input_tokens"]`.
//! - `points["in=100000"]`: a point by its label (the swept parameters, as in
//!   the tables: `c=4`, `in=100000`, `c=4 in=1000`), with `label`,
//!   `concurrency`, `input_tokens`, `output_tokens`, `n`, `requests`,
//!   `failures`, `cached_tokens` (server-reported, all trials), `flags` (markers) and one metric object each for `agg`,
//!   `decode`, `ttft`, `e2e`, `itl_p99`. A metric has numbers `median`, `min`,
//!   `max`, `q1`, `q3`, `mean`, `cv`, `n` (null without data) and the
//!   formatted `text` (median) and `spread` (min–max) as the tables print them.
//! - `point_list`: the same points in plan order.
//! - `metric(point="c=1 in=100000", name="ttft_s", stat="median")`: a formatted
//!   number; `point` names any of `c=`, `in=`, `out=` and must match exactly
//!   one point; `name` is `agg_tok_s`, `decode_tok_s`, `ttft_s`, `e2e_s` or
//!   `itl_p99_s`; `stat` is `median` (default), `min`, `max`, `q1`, `q3`,
//!   `mean`, `cv` (a percentage), `n` or `spread`.
//! - `tables.concurrency`, `tables.input_tokens`, `tables.output_tokens`: the
//!   report's tables for that axis as Markdown (present when swept).
//! - `charts.<name>` with `file`, `title` and `md` (a Markdown image):
//!   `agg_vs_concurrency`, `ttft_vs_concurrency`, `decode_vs_input`, `ttft_vs_input`.
//! - `flags`: `number`, `marker`, `severity`, `title`, `point`, `message`;
//!   `flags_md`: them as a Markdown list.
//! - `query(sql="SELECT …")`: SQL over the run's `requests`, `all_requests`
//!   and `points` ([`qexp_analysis::query`]), as a Markdown table.
//! - Filters `num` (three significant digits, as the tables), `pct` (a
//!   fraction as a percentage) and `tokens` (120000 → 120K), and the rest of
//!   the report's filters (docs/reports.md, "Templates").
//!
//! Every string that comes from a run or a server (model, target, flag
//! sentences, notes) is made inert for Markdown and HTML with
//! [`md_text`] (backslash escapes, so keep them out of code spans, where
//! CommonMark shows backslashes literally); the narrative's own text is the
//! repository's and is trusted.
//! `get_env` is disabled so a report depends on the run and the notebook only.

mod functions;
pub(crate) mod html;
mod points;
pub(crate) mod query;

use crate::charts::Chart;
use crate::format::md_text;
use crate::labels;
use crate::views::{FlagView, NarrativeView, ReportContext, Table};
pub(crate) use functions::metric;
use html::to_html;
use points::point_views;
pub(crate) use points::PointView;
use qexp_analysis::RunAnalysis;
use serde::Serialize;
use serde_json::Value;
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

const NAME: &str = "narrative";

/// The narrative for a run: `<plan dir>/<experiment>.md`, when it exists.
pub fn beside_plan(a: &RunAnalysis) -> Option<PathBuf> {
    let plan = Path::new(&a.manifest.plan_path);
    let path = plan
        .parent()
        .unwrap_or(Path::new(""))
        .join(format!("{}.md", a.manifest.experiment));
    path.is_file().then_some(path)
}

/// The run as a narrative sees it (`run`).
#[derive(Debug, Clone, Serialize)]
pub(crate) struct RunView {
    pub(crate) experiment: String,
    pub(crate) run_id: String,
    pub(crate) model: String,
    pub(crate) target: String,
    pub(crate) trials: u32,
    pub(crate) simulated: bool,
    /// How many times faster than real time a simulated run ran (1 when
    /// not compressed, or not simulated).
    pub(crate) time_factor: f64,
    pub(crate) status: String,
    /// SHA-256 of the plan text.
    pub(crate) plan_hash: String,
    /// The git commit of the plan's repository, or a dash.
    pub(crate) git_commit: String,
    /// Start (UTC), as the report prints it.
    pub(crate) started_at: String,
    /// What answered: engine, version, model and context limit from the
    /// server's fingerprint, or a dash.
    pub(crate) engine: String,
    /// The client host on one line.
    pub(crate) host: String,
    /// The host's GPUs, or "none reported".
    pub(crate) gpus: String,
}

#[derive(Debug, Clone, Serialize)]
struct ChartRef {
    file: String,
    title: String,
    md: String,
}

/// Everything one run offers a notebook: a narrative's whole context, and
/// each of a cross-run notebook's `runs.<name>`.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Context {
    pub(crate) run: RunView,
    swept: Vec<&'static str>,
    points: BTreeMap<String, PointView>,
    pub(crate) point_list: Vec<PointView>,
    tables: BTreeMap<String, String>,
    charts: BTreeMap<String, ChartRef>,
    flags: Vec<FlagView>,
    flags_md: String,
}

/// The context of one run; its charts are files `<prefix><chart>.svg`.
pub(crate) fn context(
    a: &RunAnalysis,
    ctx: &ReportContext,
    charts: &[Chart],
    prefix: &str,
) -> Context {
    let flags = inert_flags(&ctx.flags);
    let flags_md = flags_markdown(&flags);
    let list = point_views(&a.points, &ctx.flags);
    let m = &a.manifest;
    Context {
        run: RunView {
            experiment: md_text(&m.experiment),
            run_id: md_text(&m.run_id),
            model: md_text(&m.target.model),
            target: md_text(&m.target_label()),
            trials: m.trials,
            simulated: m.target.simulated,
            time_factor: 1.0 / m.target.sim_time_scale.filter(|s| *s > 0.0).unwrap_or(1.0),
            status: ctx.status.clone(),
            plan_hash: md_text(&m.plan_hash),
            git_commit: md_text(
                m.git
                    .as_ref()
                    .and_then(|g| g.commit.as_deref())
                    .unwrap_or("–"),
            ),
            started_at: ctx.started_at.clone(),
            engine: md_text(&m.fingerprint.as_ref().map_or("–".into(), |f| f.summary())),
            host: md_text(&ctx.host),
            gpus: md_text(&ctx.gpus),
        },
        swept: labels::swept(a.points.iter().map(|p| &p.point))
            .into_iter()
            .map(labels::name)
            .collect(),
        points: list.iter().map(|p| (p.label.clone(), p.clone())).collect(),
        point_list: list,
        tables: tables_by_axis(&ctx.tables, ctx.streams),
        charts: chart_refs(charts, prefix),
        flags,
        flags_md,
    }
}

/// The report's flags with their server- and run-made text (title, message)
/// made inert for Markdown and HTML.
fn inert_flags(flags: &[FlagView]) -> Vec<FlagView> {
    flags
        .iter()
        .map(|f| FlagView {
            message: md_text(&f.message),
            title: md_text(&f.title),
            ..f.clone()
        })
        .collect()
}

/// `flags_md`: one Markdown list item per flag, or a sentence saying none
/// was flagged.
fn flags_markdown(flags: &[FlagView]) -> String {
    if flags.is_empty() {
        return "No anomalies flagged.\n".into();
    }
    flags
        .iter()
        .map(|f| {
            let at = f
                .point
                .as_deref()
                .map_or(String::new(), |p| format!(" at {p}"));
            format!(
                "- **{} {}**{at} ({}): {}\n",
                f.marker, f.title, f.severity, f.message
            )
        })
        .collect()
}

/// `tables.<axis>`: the report's Markdown tables of each swept axis, one
/// after another, each under the parameters it holds fixed.
fn tables_by_axis(tables: &[Table], streams: bool) -> BTreeMap<String, String> {
    let mut by_axis: BTreeMap<String, String> = BTreeMap::new();
    for t in tables {
        let entry = by_axis.entry(t.axis.clone()).or_default();
        if !entry.is_empty() {
            entry.push('\n');
        }
        if !t.fixed.is_empty() {
            entry.push_str(&format!("*{}*\n\n", t.fixed));
        }
        match crate::templates::axis_table_markdown(t, streams) {
            Ok(md) => entry.push_str(&md),
            Err(e) => entry.push_str(&format!(
                "(the table could not be printed: {})\n",
                qexp_types::error::chain(&e)
            )),
        }
    }
    by_axis
}

/// `charts.<name>`: each chart's file `<prefix><name>.svg`, title, and a
/// Markdown image of it.
fn chart_refs(charts: &[Chart], prefix: &str) -> BTreeMap<String, ChartRef> {
    charts
        .iter()
        .map(|c| {
            let file = format!("{prefix}{}.svg", c.name);
            let md = format!("![{}]({file})", c.title);
            (
                c.name.to_string(),
                ChartRef {
                    file,
                    title: c.title.clone(),
                    md,
                },
            )
        })
        .collect()
}

/// Evaluates a narrative's tera expressions against the run and converts the
/// result to HTML. A narrative that fails to evaluate does not fail the
/// report: the error is kept and shown in its place.
pub(crate) fn render(
    source: &str,
    text: &str,
    a: &RunAnalysis,
    ctx: &ReportContext,
    charts: &[Chart],
) -> NarrativeView {
    match evaluate(text, a, ctx, charts) {
        Ok(markdown) => {
            let markdown = format!("{}\n", markdown.trim());
            let inline: Vec<(String, &str)> = charts
                .iter()
                .map(|c| (format!("{}.svg", c.name), c.svg.as_str()))
                .collect();
            NarrativeView {
                source: source.into(),
                html: to_html(&markdown, &inline),
                markdown,
                error: None,
            }
        }
        Err(e) => NarrativeView {
            source: source.into(),
            markdown: String::new(),
            html: String::new(),
            error: Some(qexp_types::error::chain(&e)),
        },
    }
}

fn evaluate(
    text: &str,
    a: &RunAnalysis,
    ctx: &ReportContext,
    charts: &[Chart],
) -> tera::Result<String> {
    let data = context(a, ctx, charts, "");
    let mut tera = engine();
    tera.add_raw_template(NAME, text)?;
    let points = data.point_list.clone();
    tera.register_function("metric", move |args: &HashMap<String, Value>| {
        metric(&points, args)
    });
    let dir = a.dir.clone();
    tera.register_function("query", move |args: &HashMap<String, Value>| {
        query::query_md(&dir, args)
    });
    tera.render(NAME, &tera::Context::from_serialize(&data)?)
}

/// A tera engine with what every notebook has: no autoescape (the output is
/// Markdown), the report's filters (`num`, `pct`, `tokens`, `cell`, …), and
/// `get_env` disabled.
pub(crate) fn engine() -> tera::Tera {
    let mut tera = tera::Tera::default();
    tera.autoescape_on(vec![]);
    // The report's filters (`num`, `pct`, `tokens`, `cell`, …), declared once.
    crate::filters::register(&mut tera);
    tera.register_function(
        "get_env",
        |_: &HashMap<String, Value>| -> tera::Result<Value> {
            Err(
                "get_env is disabled in narratives: a report depends only on its run and notebook"
                    .into(),
            )
        },
    );
    tera
}
