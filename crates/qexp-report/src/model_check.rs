//! `model.md` and its charts beside a report: the run's measured medians
//! against a fitted model's predictions (docs/model.md), each point the
//! model cannot explain beyond its 90% interval flagged. The numbers and
//! the flag come from qexp-analysis ([`qexp_analysis::check_against_model`]);
//! this renders them.

use crate::charts::model_charts;
use crate::render::RenderError;
use qexp_analysis::RunAnalysis;
use qexp_model::{Check, ModelFile};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// Writes `model.md` and one `model_<metric>.svg` per metric into
/// `out_dir`; returns the files written, `model.md` first.
pub fn render_model_check(
    a: &RunAnalysis,
    model: &ModelFile,
    model_path: &Path,
    out_dir: &Path,
) -> Result<Vec<PathBuf>, RenderError> {
    let mut checks = qexp_analysis::check_against_model(a, model);
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
    let charts = model_charts(&checks, &points)?;
    let mut files = vec![(
        "model.md".to_owned(),
        markdown(a, model, model_path, &checks, &points, &charts),
    )];
    files.extend(
        charts
            .into_iter()
            .map(|c| (format!("{}.svg", c.name), c.svg)),
    );
    crate::render::write_files(out_dir, files)
}

fn value(c: &Check, v: f64) -> String {
    if c.metric.is_time() {
        format!("{v:.3} s")
    } else {
        format!("{v:.1} tok/s")
    }
}

fn markdown(
    a: &RunAnalysis,
    model: &ModelFile,
    model_path: &Path,
    checks: &[Check],
    points: &[String],
    charts: &[crate::charts::Chart],
) -> String {
    let sources: Vec<String> = model.sources.iter().map(|s| s.id.clone()).collect();
    let mut s = format!(
        "# {} {}: measured against the model\n\nModel: `{}` (fitted on {}). Each point's median across trials against the model's prediction and its 90% interval.\n\n",
        a.manifest.experiment,
        a.manifest.run_id,
        model_path.display(),
        sources.join(", ")
    );
    s.push_str("| # | point | metric | measured | model | 90% interval | |\n|---|---|---|---|---|---|---|\n");
    let mut unexplained = 0;
    for c in checks {
        let n = points
            .iter()
            .position(|p| *p == c.point)
            .map_or(0, |i| i + 1);
        let flag = if c.unexplained() {
            unexplained += 1;
            "⚑ outside".to_owned()
        } else {
            String::new()
        };
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
    let _ = writeln!(
        s,
        "\n{unexplained} of {} medians lie outside the model's interval. ⚑ outside: the model cannot explain the point — a cliff, a cache effect, a restart; look at its trials.\n",
        checks.len()
    );
    for c in charts {
        let _ = writeln!(s, "![{}]({}.svg)\n", c.title, c.name);
    }
    s
}
