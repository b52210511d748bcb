//! The run against a fitted model (docs/model.md): a section of the report
//! and, beside it, `model.md` and its charts: the run's measured medians
//! against the model's predictions, each point the model cannot explain
//! beyond its 90% interval flagged. The numbers and
//! the flag come from qexp-analysis ([`qexp_analysis::check_against_model`]);
//! this renders them.

use crate::charts::{model_charts, Chart};
use crate::error::RenderError;
use crate::views::{FitRow, FitView};
use qexp_analysis::RunAnalysis;
use qexp_model::{Check, ModelFile};
use std::fmt::Write as _;
use std::path::Path;

/// A fitted model to render a run against, and where it was read from.
#[derive(Debug, Clone, Copy)]
pub struct ModelBeside<'a> {
    /// The model.
    pub model: &'a ModelFile,
    /// Its file, as the report names it.
    pub path: &'a Path,
}

/// The run against the model: the report's section, and the files beside
/// it (`model.md`, then one `model_<metric>.svg` per metric).
pub(crate) fn model_check(
    a: &RunAnalysis,
    m: ModelBeside,
) -> Result<(FitView, Vec<(String, String)>), RenderError> {
    let mut checks = qexp_analysis::check_against_model(a, m.model);
    // The run's points in plan order, as in the report; the checks follow it.
    let plan_order: Vec<String> = a.points.iter().map(|p| p.point.label()).collect();
    let place = |label: &str| plan_order.iter().position(|l| l == label);
    checks.sort_by_key(|c| place(&c.point));
    let mut points: Vec<String> = Vec::new();
    for c in &checks {
        if !points.contains(&c.point) {
            points.push(c.point.clone());
        }
    }
    let charts = model_charts(&checks, &a.points)?;
    let view = fit_view(m, &checks, &charts);
    let mut files = vec![(
        "model.md".to_owned(),
        markdown(a, m, &checks, &points, &charts),
    )];
    files.extend(
        charts
            .into_iter()
            .map(|c| (format!("{}.svg", c.name), c.svg)),
    );
    Ok((view, files))
}

/// "Model `PATH` (fitted on RUN, …)".
fn named(m: ModelBeside) -> String {
    let sources: Vec<&str> = m.model.sources.iter().map(|s| s.id.as_str()).collect();
    format!(
        "Model `{}` (fitted on {})",
        m.path.display(),
        sources.join(", ")
    )
}

/// How a check's interval is widened before a median is called outside.
fn widened() -> String {
    format!(
        "{} of each end, and for TTFT and E2E the client's own event-loop lag at the point",
        qexp_analysis::format::percent(qexp_model::CHECK_TOLERANCE)
    )
}

/// How many medians lie outside, and what that means.
fn outside_sentence(checks: &[Check]) -> String {
    let n = checks.iter().filter(|c| c.unexplained()).count();
    let raw = checks.iter().filter(|c| c.outside()).count();
    format!(
        "{n} of {} medians lie outside the model's interval widened by what the measurement adds ({}); {raw} lie outside the interval itself. ⚑ outside: the model cannot explain the point — a cliff, a cache effect, a restart; look at its trials.",
        checks.len(),
        widened(),
    )
}

fn fit_view(m: ModelBeside, checks: &[Check], charts: &[Chart]) -> FitView {
    let sources: Vec<&str> = m.model.sources.iter().map(|s| s.id.as_str()).collect();
    FitView {
        file: "model.md".to_owned(),
        model_path: m.path.display().to_string(),
        sources: sources.join(", "),
        medians: checks.len(),
        outside: checks
            .iter()
            .filter(|c| c.unexplained())
            .map(|c| FitRow {
                point: c.point.clone(),
                metric: c.metric.name().to_owned(),
                measured: value(c, c.measured),
                predicted: value(c, c.predicted),
                interval: format!("{} … {}", value(c, c.lo), value(c, c.hi)),
            })
            .collect(),
        widened: widened(),
        charts: charts.iter().map(crate::views::chart_view).collect(),
    }
}

fn value(c: &Check, v: f64) -> String {
    if c.metric.is_time() {
        qexp_analysis::format::seconds(v)
    } else {
        qexp_analysis::format::tok_s(v)
    }
}

fn markdown(
    a: &RunAnalysis,
    m: ModelBeside,
    checks: &[Check],
    points: &[String],
    charts: &[Chart],
) -> String {
    let mut s = format!(
        "# {} {}: measured against the model\n\n{}. Each point's median across trials against the model's prediction and its 90% interval; the report: [report.md](report.md).\n\n",
        a.manifest.experiment,
        a.manifest.run_id,
        named(m),
    );
    s.push_str("| # | point | metric | measured | model | 90% interval | |\n|---|---|---|---|---|---|---|\n");
    for c in checks {
        let n = points
            .iter()
            .position(|p| *p == c.point)
            .map_or(0, |i| i + 1);
        let flag = if c.unexplained() { "⚑ outside" } else { "" };
        let extra = if c.extrapolated {
            " (extrapolated)"
        } else {
            ""
        };
        let _ = writeln!(
            s,
            "| {n} | {}{extra} | {} | {} | {} | {} … {} | {flag} |",
            c.point,
            c.metric.name(),
            value(c, c.measured),
            value(c, c.predicted),
            value(c, c.lo),
            value(c, c.hi)
        );
    }
    let _ = writeln!(s, "\n{}\n", outside_sentence(checks));
    for c in charts {
        let _ = writeln!(s, "![{}]({}.svg)\n", c.title, c.name);
    }
    s
}
