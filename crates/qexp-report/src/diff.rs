//! `qexp diff` output: a [`RunDiff`] from qexp-analysis turned into a plain
//! [`DiffContext`], then into a terminal table ([`term`]), `diff.md` and a
//! self-contained `diff.html` through tera templates, and a chart of the
//! ratios B/A with their intervals ([`chart`]). Like the run report it
//! computes no statistics: every number and verdict comes from the analysis.

pub mod chart;
mod render;
pub mod term;

pub use render::{render_diff, write_diff, DiffFormat, DiffTemplates};

use crate::format::{num, spread};
use crate::labels;
use qexp_analysis::diff::{
    KeyRow, MetricDiff, MinChangeSource, RunSide, Scale, Side, Untested, Verdict, NEEDED_POWER,
};
use qexp_analysis::format::plural;
use qexp_analysis::stats::Summary;
use qexp_analysis::{Axis, DiffMetric, RunDiff};
use qexp_plan::Point;
use serde::Serialize;

/// Everything the diff templates see.
#[derive(Debug, Clone, Serialize)]
pub struct DiffContext {
    /// The baseline.
    pub a: SideView,
    /// The candidate.
    pub b: SideView,
    /// Caveats, as sentences.
    pub warnings: Vec<String>,
    /// Deployment keys side by side.
    pub deployment: Vec<KeyView>,
    /// How many deployment keys differ.
    pub deployment_differs: usize,
    /// Workload keys.
    pub workload: Vec<KeyView>,
    /// Workload keys that differ but were ignored.
    pub workload_ignored: Vec<KeyView>,
    /// Plan parameters shared by every paired point, e.g. `in=1000 out=200`.
    pub fixed: String,
    /// One row per (paired point, metric).
    pub rows: Vec<RowView>,
    /// Points without a partner.
    pub unpaired: Vec<UnpairedView>,
    /// The verdicts in one sentence.
    pub summary: String,
    /// Footnotes and how to read the table.
    pub notes: Vec<String>,
    /// Alpha, as printed.
    pub alpha: String,
    /// The practical threshold in percent, as printed (`2%`).
    pub min_change: String,
    /// Interval coverage in percent, as printed.
    pub level: String,
    /// The ratio chart, filled in by the renderer.
    pub chart: Option<DiffChartView>,
}

/// One run in the header.
#[derive(Debug, Clone, Serialize)]
pub struct SideView {
    /// `A` or `B`.
    pub name: String,
    /// Run id.
    pub run_id: String,
    /// Experiment.
    pub experiment: String,
    /// Run folder.
    pub dir: String,
    /// Target URL or `sim:<profile>`.
    pub target: String,
    /// Model.
    pub model: String,
    /// Trials run.
    pub trials: u32,
    /// `complete`, `interrupted` or `running`.
    pub status: String,
    /// True when simulated.
    pub simulated: bool,
}

/// One fingerprint key of both runs.
#[derive(Debug, Clone, Serialize)]
pub struct KeyView {
    /// Key.
    pub key: String,
    /// Run A's value, or `(absent)`.
    pub a: String,
    /// Run B's value, or `(absent)`.
    pub b: String,
    /// True when they differ.
    pub differs: bool,
}

/// One (point, metric) comparison, formatted.
#[derive(Debug, Clone, Serialize)]
pub struct RowView {
    /// The point's short label (swept parameters only).
    pub point: String,
    /// True on the first row of a point (tables print the label once).
    pub first: bool,
    /// Metric label with unit.
    pub metric: String,
    /// Metric key (`agg_tok_s`, …).
    pub metric_key: String,
    /// A: median with min–max.
    pub a: String,
    /// B: median with min–max.
    pub b: String,
    /// The estimated change: ratio B/A of geometric means (`1.098`), or a difference for failures (`Δ +2.0`).
    pub ratio: String,
    /// Interval of the estimate, `[lo, hi]`.
    pub ci: String,
    /// Raw p-value of "no change", or why there is none.
    pub p: String,
    /// Holm-adjusted p-value, or why there is none.
    pub p_holm: String,
    /// Holm-adjusted equivalence (TOST) p-value, or `–`.
    pub p_equivalent: String,
    /// `better`, `worse`, `=`, `~`, `–`, or `lost` (B has no value: every request failed).
    pub verdict: String,
    /// `better`, `worse` (also `lost`), `equivalent`, `same` or `untested`: for styling.
    pub class: String,
    /// For a `~`: trials per side that would likely decide (`12`, `>1000`), else empty.
    pub needed: String,
}

/// A point without a partner.
#[derive(Debug, Clone, Serialize)]
pub struct UnpairedView {
    /// `A` or `B`.
    pub side: String,
    /// Full point label.
    pub point: String,
    /// Trials with data.
    pub n: usize,
}

/// The ratio chart.
#[derive(Debug, Clone, Serialize)]
pub struct DiffChartView {
    /// File name next to `diff.md`.
    pub file: String,
    /// Title.
    pub title: String,
    /// The SVG document.
    pub svg: String,
}

fn side(name: &str, s: &RunSide) -> SideView {
    SideView {
        name: name.into(),
        run_id: s.run_id.clone(),
        experiment: s.experiment.clone(),
        dir: s.dir.clone(),
        target: s.target.clone(),
        model: s.model.clone(),
        trials: s.trials,
        status: s.status.as_str().into(),
        simulated: s.simulated,
    }
}

fn key_view(r: &KeyRow) -> KeyView {
    let v = |s: &Option<String>| s.clone().unwrap_or_else(|| "(absent)".into());
    KeyView {
        key: r.key.clone(),
        a: v(&r.a),
        b: v(&r.b),
        differs: r.differs(),
    }
}

/// A ratio with three decimals (`1.102`, `0.319`), fewer digits when large.
pub fn ratio(r: f64) -> String {
    if !r.is_finite() {
        "–".into()
    } else if r.abs() < 10.0 {
        format!("{r:.3}")
    } else {
        num(r)
    }
}

/// A p-value: three decimals, `<0.001` below that.
pub fn p_value(p: f64) -> String {
    if !p.is_finite() {
        "–".into()
    } else if p < 0.001 {
        "<0.001".into()
    } else {
        format!("{p:.3}")
    }
}

/// A signed difference, e.g. `Δ +2.0`, `Δ −0.4`.
fn difference(d: f64) -> String {
    let sign = if d < 0.0 { "−" } else { "+" };
    format!("Δ {sign}{}", num(d.abs()))
}

/// An interval on the estimate's scale.
fn interval(scale: Scale, (lo, hi): (f64, f64)) -> String {
    match scale {
        Scale::Ratio => format!("[{}, {}]", ratio(lo), ratio(hi)),
        Scale::Difference => format!("[{}, {}]", signed(lo), signed(hi)),
    }
}

fn signed(x: f64) -> String {
    if x < 0.0 {
        format!("−{}", num(-x))
    } else {
        num(x)
    }
}

/// Median with min–max, e.g. `505 [498–510]`; counts without decimals where whole.
fn cell(metric: DiffMetric, s: &Option<Summary>) -> String {
    let count = |v: f64| {
        if v.fract() == 0.0 {
            format!("{v:.0}")
        } else {
            format!("{v:.1}")
        }
    };
    match s {
        Some(x) if metric == DiffMetric::Failures => {
            let spread = if x.n > 1 {
                format!("{}–{}", count(x.min), count(x.max))
            } else {
                "n=1".into()
            };
            format!("{} [{spread}]", count(x.median))
        }
        Some(x) => format!("{} [{}]", num(x.median), spread(s)),
        None => "no data".into(),
    }
}

/// One comparison's row; `lost` is the run that lost the point (every request failed), if one did.
fn row(point: &str, first: bool, m: &MetricDiff, lost: Option<Side>) -> RowView {
    let (p, p_holm) = match (&m.test, &m.untested) {
        (Some(t), _) => (p_value(t.p), p_value(t.p_holm)),
        (None, Some(Untested::AllEqual)) => ("all equal".into(), "–".into()),
        (None, Some(Untested::NoData(s))) => (format!("no data in {s}"), "–".into()),
        (None, Some(Untested::OneTrial(s))) => (format!("1 trial in {s}"), "–".into()),
        (None, None) => ("–".into(), "–".into()),
    };
    let estimate = match m.scale {
        Scale::Ratio => m.ratio.map(ratio),
        Scale::Difference => m.difference.map(difference),
    };
    // A metric B has no value of because B lost the point: the loss is its verdict.
    let lost_here = lost == Some(Side::B) && m.untested == Some(Untested::NoData(Side::B));
    RowView {
        point: point.into(),
        first,
        metric: m.metric.label().into(),
        metric_key: m.metric.key().into(),
        a: cell(m.metric, &m.a),
        b: cell(m.metric, &m.b),
        ratio: estimate.unwrap_or_else(|| "–".into()),
        ci: m.ci.map_or("–".into(), |ci| interval(m.scale, ci)),
        p,
        p_holm,
        p_equivalent: m
            .test
            .and_then(|t| t.p_equivalent_holm)
            .map_or("–".into(), p_value),
        verdict: if lost_here {
            "lost".into()
        } else {
            m.verdict.symbol().into()
        },
        class: match m.verdict {
            _ if lost_here => "worse",
            Verdict::Better => "better",
            Verdict::Worse => "worse",
            Verdict::Equivalent => "equivalent",
            Verdict::NoChange => "same",
            Verdict::NotTested => "untested",
            Verdict::BetterOnBrokenOutput | Verdict::BetterOnLessAccurateOutput => "worse",
        }
        .into(),
        needed: match m.undecided {
            Some(u) => u.needed.map_or(">1000".into(), |n| n.to_string()),
            None => String::new(),
        },
    }
}

/// The axes swept across the paired points, and the label of each pair.
fn point_labels(d: &RunDiff) -> (Vec<String>, String) {
    let points: Vec<&Point> = d.pairs.iter().map(|p| &p.point_a).collect();
    let swept = labels::swept(points.iter().copied());
    let fixed_axes: Vec<Axis> = labels::AXES
        .into_iter()
        .filter(|a| !swept.contains(a))
        .collect();
    let fixed = match (points.first(), swept.is_empty()) {
        (Some(p), false) => labels::pairs(p, &fixed_axes, " "),
        _ => String::new(),
    };
    let names = points.iter().map(|p| labels::short(p, &swept)).collect();
    (names, fixed)
}

/// Short labels of the paired points, in pair order (as the table and chart show them).
pub fn pair_labels(d: &RunDiff) -> Vec<String> {
    point_labels(d).0
}

/// Builds the template context of a diff (without the chart).
pub fn diff_context(d: &RunDiff) -> DiffContext {
    let (names, fixed) = point_labels(d);
    let mut rows = Vec::new();
    for (pair, name) in d.pairs.iter().zip(&names) {
        for (k, m) in pair.metrics.iter().enumerate() {
            rows.push(row(name, k == 0, m, pair.lost));
        }
        for c in &pair.classes {
            for m in &c.metrics {
                let mut r = row(name, false, m, pair.lost);
                r.metric = format!("{}, class {}", r.metric, c.class);
                rows.push(r);
            }
        }
    }
    let alpha = format!("{}", d.alpha);
    let level = format!("{}", d.level * 100.0);
    let min_change = format!("{}%", d.min_change * 100.0);
    let t = &d.tally;
    let summary = format!(
        "{}{}{} better, {} worse, {} =, {} ~{} — {} and {} over {} × {}, Holm-corrected at α = {alpha}; changes under {min_change} are never better or worse.",
        broken_summary(d),
        if t.lost > 0 {
            format!(
                "{} lost by B (every request failed), ",
                plural(t.lost, "point", "points")
            )
        } else {
            String::new()
        },
        t.better,
        t.worse,
        t.equivalent,
        t.no_change,
        if t.not_tested > 0 {
            format!(", {} not tested", t.not_tested)
        } else {
            String::new()
        },
        plural(d.tests, "test of change", "tests of change"),
        plural(d.equivalence_tests, "equivalence test", "equivalence tests"),
        plural(d.pairs.len(), "paired point", "paired points"),
        plural(d.metrics.len(), "metric", "metrics"),
    );
    let notes = notes(d, &alpha, &level, &min_change);
    let deployment: Vec<KeyView> = d.deployment.iter().map(key_view).collect();
    DiffContext {
        a: side("A", &d.a),
        b: side("B", &d.b),
        warnings: d.warnings.iter().map(ToString::to_string).collect(),
        deployment_differs: deployment.iter().filter(|k| k.differs).count(),
        deployment,
        workload: d.workload.keys.iter().map(key_view).collect(),
        workload_ignored: d.workload.ignored.iter().map(key_view).collect(),
        fixed,
        rows,
        unpaired: d
            .unpaired
            .iter()
            .map(|u| UnpairedView {
                side: u.side.to_string(),
                point: u.point.label(),
                n: u.n,
            })
            .collect(),
        summary,
        notes,
        alpha,
        min_change,
        level,
        chart: None,
    }
}

/// What the answers say, first: B broken where A is not (a regression,
/// whatever its speed), or A broken where B is not.
fn broken_summary(d: &RunDiff) -> String {
    let labels = |side: Side| -> Vec<String> {
        d.pairs
            .iter()
            .filter(|p| p.broken == [side])
            .map(|p| p.point_b.label())
            .collect()
    };
    let mut out = String::new();
    let b_only = labels(Side::B);
    if !b_only.is_empty() {
        out.push_str(&format!(
            "B's answers are BROKEN where A's are not at {} ({}); ",
            plural(b_only.len(), "point", "points"),
            b_only.join(", "),
        ));
    }
    let a_only = labels(Side::A);
    if !a_only.is_empty() {
        out.push_str(&format!(
            "A's answers are broken where B's are not at {} ({}); ",
            plural(a_only.len(), "point", "points"),
            a_only.join(", "),
        ));
    }
    let both = d.pairs.iter().filter(|p| p.broken.len() == 2).count();
    if both > 0 {
        out.push_str(&format!(
            "both runs' answers are BROKEN at {}; ",
            plural(both, "point", "points")
        ));
    }
    let less_accurate: Vec<String> = d
        .pairs
        .iter()
        .filter(|p| {
            p.metrics
                .iter()
                .any(|m| m.metric == DiffMetric::Accuracy && m.verdict == Verdict::Worse)
        })
        .map(|p| p.point_b.label())
        .collect();
    if !less_accurate.is_empty() {
        out.push_str(&format!(
            "B's answers are LESS ACCURATE at {} ({}); ",
            plural(less_accurate.len(), "point", "points"),
            less_accurate.join(", "),
        ));
    }
    let n = d.tally.better_on_bad_answers;
    if n > 0 {
        out.push_str(&format!(
            "{n} improvement{} measured on B's broken or less accurate answers {} not counted as better; ",
            if n == 1 { "" } else { "s" },
            if n == 1 { "is" } else { "are" },
        ));
    }
    out
}

/// How to read the table: what was tested, how many tests, and the footnotes this diff needs.
fn notes(d: &RunDiff, alpha: &str, level: &str, min_change: &str) -> Vec<String> {
    let source = match d.min_change_source {
        MinChangeSource::Plan => "run A's plan, analysis.min_change",
        MinChangeSource::Option => "--min-change",
        MinChangeSource::Default => "the default: run A's plan no longer parses",
    };
    let comparisons = || d.pairs.iter().flat_map(|p| p.comparisons());
    let mut notes = vec![
        format!(
            "The trial is the unit: each trial contributes one value per metric (per-request metrics as the median over its requests). \
             B/A is the ratio of geometric means of the trial values, exp(mean ln B − mean ln A); the interval is its {level}% Student t-interval, not adjusted for multiplicity."
        ),
        format!(
            "p: two-sided Student t-test on the log trial values (pooled variance when both runs have as many trials, Welch otherwise), Holm-adjusted over all {} of this diff. \
             p=: Schuirmann's two one-sided tests that the change lies within ±{min_change} ({source}), Holm-adjusted over all {}.",
            plural(d.tests, "test of change", "tests of change"),
            plural(d.equivalence_tests, "equivalence test", "equivalence tests"),
        ),
        format!(
            "Verdicts know direction (higher is better for tok/s, lower for seconds and failures): better/worse need a Holm-adjusted p ≤ {alpha} and an estimated change of at least {min_change}; \
             `=`: the change is shown to lie within ±{min_change} (Holm-adjusted p= ≤ {alpha}); `~`: neither."
        ),
    ];
    if comparisons().any(|m| m.scale == Scale::Difference && m.untested.is_none()) {
        notes.push(format!(
            "Δ rows (failures, or a metric with a value ≤ 0): the difference B − A in the mean per trial, tested by an exact permutation test (counts are often all zero, so no t); \
             a change counts when it is at least {min_change} of the point's requests (of A's mean for another metric); these rows have no `=`."
        ));
    }
    if d.all_equal > 0 {
        notes.push(format!(
            "\"all equal\": every trial value on both sides is the same number (e.g. no failures anywhere); there is nothing to test, so {} not counted among the tests.",
            if d.all_equal == 1 { "it is" } else { "they are" }
        ));
    }
    if comparisons().any(|m| m.undecided.is_some()) {
        notes.push(format!(
            "trials to decide: for a `~`, the trials per side with which the comparison would likely ({:.0}% power) reach a verdict if the true change is the one observed, at the observed spread: \
             better/worse when the change is at least {min_change}, `=` when it is smaller (at α divided by the number of tests, a safe bound for Holm).",
            NEEDED_POWER * 100.0
        ));
    }
    if d.pairs.iter().any(|p| !p.broken.is_empty()) {
        notes.push(format!(
            "\"broken\": a run's answers at the point loop, are empty or garbled, stop before a forced length, end without a finish reason (each in {} or more of them) or miss the asked length on the mean (docs/results.md, Answer health). \
             Where B's are broken, B's improvements read \"faster on broken output\"; where only B's are, the point also counts as a regression (--fail-on-regression fails).",
            qexp_analysis::format::percent(qexp_types::answer::BROKEN_SHARE)
        ));
    }
    if d.pairs.iter().any(|p| !p.classes.is_empty()) {
        notes.push(
            "\", class NAME\" rows: where both runs sent several request classes ([[workload.class]]), each class's own median TTFT and E2E per trial, compared as the point's metrics are and in the same Holm family; a class's regression counts as one (--fail-on-regression fails) even where the point's medians hold.".into(),
        );
    }
    if d.tally.lost > 0 {
        notes.push(
            "\"lost\": every request run B measured at the point failed, where run A has data, so B has no value to compare; each such point counts as a regression (--fail-on-regression fails).".into(),
        );
    }
    if comparisons().any(|m| matches!(m.untested, Some(Untested::OneTrial(_)))) {
        notes.push(
            "\"1 trial\": a run with one trial at a point has no trial-to-trial spread to test against; run at least 3 trials per side (qexp run --trials 3).".into(),
        );
    }
    notes
}
