//! Charts of a run with deployments: the trade-off between per-user speed
//! and total throughput (the chart people who size deployments read first),
//! and each deployment's throughput over the run's wall-clock time, where
//! drift would show. Runs without deployments get neither.

use super::draw::{self, AxisSpec, DrawError, Extras, Mark, Plot, Series, Style};
use super::{ticks, Chart, ChartError, FlagMark};
use plotters::prelude::SeriesLabelPosition;
use qexp_analysis::PointSummary;
use std::collections::BTreeMap;

fn has_deployments(points: &[PointSummary]) -> bool {
    points.iter().any(|p| p.point.deployment.is_some())
}

fn err(name: &'static str) -> impl Fn(DrawError) -> ChartError {
    move |source| ChartError { name, source }
}

/// Per-request decode tok/s against aggregate output tok/s, one curve per
/// deployment through its points (in the order of their load), each point
/// labelled with its load, and the Pareto front over every deployment's
/// points: those that no other point beats on both (Deb et al., NSGA-II,
/// 2002, for the non-dominated set), a band beneath the curves so that it
/// hides none of them.
pub fn pareto(points: &[PointSummary], _marks: &[FlagMark]) -> Result<Option<Chart>, ChartError> {
    const NAME: &str = "pareto";
    if !has_deployments(points) {
        return Ok(None);
    }
    let (series, notes) = deployment_curves(points);
    let all: Vec<Mark> = series
        .iter()
        .flat_map(|s| s.marks.iter().cloned())
        .collect();
    if all.is_empty() {
        return Ok(None);
    }
    let extras = Extras {
        band: Some((
            "Pareto front (no point beats it on both)".into(),
            pareto_front(&all, false)
                .iter()
                .map(|m| (m.x, m.median))
                .collect(),
        )),
        notes,
    };
    let xmax = all.iter().map(|m| m.x).fold(0.0, f64::max);
    let ymax = all.iter().map(|m| m.max.max(m.median)).fold(0.0, f64::max);
    let title = "Per-user decode rate vs aggregate throughput, by deployment".to_string();
    let plot = Plot {
        title: title.clone(),
        x: AxisSpec {
            desc: "Aggregate output (tok/s)".into(),
            log: false,
            ticks: ticks::linear(xmax),
            label: ticks::label,
        },
        y: AxisSpec {
            desc: "Per-request decode (tok/s)".into(),
            log: false,
            ticks: ticks::linear(ymax),
            label: ticks::label,
        },
        series,
        legend: SeriesLabelPosition::LowerRight,
        dodge: false,
        style: Style::LineAndDots,
    };
    let svg = draw::svg_with(&plot, &extras).map_err(err(NAME))?;
    Ok(Some(Chart {
        name: NAME.into(),
        title,
        svg,
    }))
}

/// Text beside a point: (x, y, its load, `c=8`).
pub(super) type Notes = Vec<(f64, f64, String)>;

/// One series per deployment: per-request decode against aggregate
/// throughput at each of its points, in the order of their load; and each
/// point's load to write beside it.
fn deployment_curves(points: &[PointSummary]) -> (Vec<Series>, Notes) {
    let mut by: BTreeMap<&str, Vec<&PointSummary>> = BTreeMap::new();
    for p in points {
        if let Some(d) = &p.point.deployment {
            by.entry(d.as_str()).or_default().push(p);
        }
    }
    let mark = |p: &PointSummary| {
        let (agg, dec) = (p.agg_tok_s.as_ref()?, p.decode_tok_s.as_ref()?);
        (agg.median.is_finite() && dec.median.is_finite()).then_some(Mark {
            x: agg.median,
            median: dec.median,
            min: dec.min,
            max: dec.max,
            flag: None,
        })
    };
    series_by(points, by, mark)
}

/// One series per group of `by` (a deployment), its points marked by
/// `mark` in the order of their load, with each mark's load as a note.
pub(super) fn series_by(
    points: &[PointSummary],
    by: BTreeMap<&str, Vec<&PointSummary>>,
    mark: impl Fn(&PointSummary) -> Option<Mark>,
) -> (Vec<Series>, Notes) {
    let swept = crate::labels::swept(points.iter().map(|p| &p.point));
    let mut notes = Notes::new();
    let mut series: Vec<Series> = Vec::new();
    for (d, mut ps) in by {
        ps.sort_by_key(|p| {
            (
                p.point.concurrency,
                p.point.rate().map(|r| (r * 1000.0) as u64),
            )
        });
        let marks: Vec<Mark> = ps.iter().filter_map(|p| mark(p)).collect();
        notes.extend(ps.iter().filter_map(|p| {
            let m = mark(p)?;
            Some((m.x, m.median, crate::labels::short(&p.point, &swept)))
        }));
        if !marks.is_empty() {
            series.push(Series {
                label: d.to_string(),
                marks,
            });
        }
    }
    (series, notes)
}

/// The marks no other mark beats on both axes (further right, and higher,
/// or lower where `y_down`), left to right, drawn as points (no whiskers).
pub(super) fn pareto_front(all: &[Mark], y_down: bool) -> Vec<Mark> {
    let up = |y: f64| if y_down { -y } else { y };
    let mut front: Vec<Mark> = all
        .iter()
        .filter(|m| {
            !all.iter().any(|o| {
                o.x >= m.x
                    && up(o.median) >= up(m.median)
                    && (o.x > m.x || up(o.median) > up(m.median))
            })
        })
        .map(|m| Mark {
            min: m.median,
            max: m.median,
            ..m.clone()
        })
        .collect();
    front.sort_by(|a, b| a.x.total_cmp(&b.x));
    front
}

/// Each point's median aggregate throughput over its blocks: a point
/// belongs to one deployment, so each (deployment, point) is its own reference.
fn point_medians(points: &[PointSummary]) -> BTreeMap<u32, f64> {
    let mut reference: BTreeMap<_, Vec<f64>> = BTreeMap::new();
    for p in points {
        let v = reference.entry(p.point.id).or_default();
        v.extend(
            p.trials
                .iter()
                .map(|t| t.agg_tok_s)
                .filter(|v| v.is_finite() && *v > 0.0),
        );
    }
    reference
        .into_iter()
        .filter_map(|(k, mut v)| Some((k, qexp_analysis::stats::quantile_in_place(&mut v, 0.5)?)))
        .collect()
}

/// One line per deployment: each block's aggregate throughput at each
/// point in percent off the point's median, against minutes since `start`.
fn drift_series(
    points: &[PointSummary],
    reference: &BTreeMap<u32, f64>,
    start: f64,
) -> Vec<Series> {
    let mut by: BTreeMap<&str, Vec<Mark>> = BTreeMap::new();
    for p in points {
        let (Some(d), Some(r)) = (&p.point.deployment, reference.get(&p.point.id)) else {
            continue;
        };
        for t in &p.trials {
            let v = (t.agg_tok_s / r - 1.0) * 100.0;
            if v.is_finite() && t.window_start_unix_s.is_finite() {
                by.entry(d.as_str()).or_default().push(Mark {
                    x: (t.window_start_unix_s - start) / 60.0,
                    median: v,
                    min: v,
                    max: v,
                    flag: None,
                });
            }
        }
    }
    by.into_iter()
        .map(|(d, mut marks)| {
            marks.sort_by(|a, b| a.x.total_cmp(&b.x));
            Series {
                label: d.to_string(),
                marks,
            }
        })
        .collect()
}

/// Each (block, point)'s aggregate throughput in percent off the median of
/// the same deployment at that point over its blocks, against minutes since
/// the run's first send, one line per deployment. Every line hovers at 0
/// when nothing drifts; a trend shared by the lines is drift, which
/// interleaved blocks spread over every deployment alike.
pub fn over_time(
    points: &[PointSummary],
    _marks: &[FlagMark],
) -> Result<Option<Chart>, ChartError> {
    const NAME: &str = "over_time";
    if !has_deployments(points) {
        return Ok(None);
    }
    let reference = point_medians(points);
    let start = points
        .iter()
        .flat_map(|p| p.trials.iter().map(|t| t.window_start_unix_s))
        .filter(|s| s.is_finite() && *s > 0.0)
        .fold(f64::INFINITY, f64::min);
    if !start.is_finite() {
        return Ok(None);
    }
    let series = drift_series(points, &reference, start);
    let values = series.iter().flat_map(|s| s.marks.iter());
    let (lo, hi) = values
        .clone()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), m| {
            (lo.min(m.median), hi.max(m.median))
        });
    let xmax = values.map(|m| m.x).fold(0.0, f64::max);
    if series.is_empty() {
        return Ok(None);
    }
    let title = "Aggregate throughput over the run, by deployment".to_string();
    let plot = Plot {
        title: title.clone(),
        x: AxisSpec {
            desc: "Minutes since the run's first measured send".into(),
            log: false,
            ticks: ticks::linear(xmax.max(1.0 / 60.0)),
            label: ticks::label,
        },
        y: AxisSpec {
            desc: "Aggregate tok/s, % off its median at the point".into(),
            log: false,
            ticks: ticks::around(lo, hi),
            label: ticks::label,
        },
        series,
        legend: SeriesLabelPosition::LowerLeft,
        dodge: false,
        style: Style::LineAndDots,
    };
    let svg = draw::svg(&plot).map_err(err(NAME))?;
    Ok(Some(Chart {
        name: NAME.into(),
        title,
        svg,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use qexp_analysis::TrialMetrics;
    use qexp_plan::Point;

    /// Two deployments at c = 1, 8, 64: the faster one (`a`, drawn first)
    /// is the whole front.
    fn points() -> Vec<PointSummary> {
        let mut out = Vec::new();
        for (d, speed) in [("a", 2.0), ("b", 1.0)] {
            for (i, c) in [1u32, 8, 64].into_iter().enumerate() {
                let point = Point {
                    id: out.len() as u32,
                    concurrency: c,
                    input_tokens: 100,
                    output_tokens: 10,
                    requests: c,
                    warmup: 0,
                    open_loop: None,
                    deployment: Some(d.into()),
                    images: None,
                };
                let trial = TrialMetrics {
                    trial: 1,
                    point_id: point.id,
                    agg_tok_s: speed * 50.0 * f64::from(c),
                    decode_tok_s: speed * (60.0 - 10.0 * i as f64),
                    ..TrialMetrics::default()
                };
                out.push(PointSummary::new(point, vec![trial]));
            }
        }
        out
    }

    #[test]
    fn the_front_lies_beneath_the_curves_and_every_point_names_its_load() {
        let chart = pareto(&points(), &[]).unwrap().unwrap();
        let svg = chart.svg;
        for c in ["c=1", "c=8", "c=64"] {
            let text = format!("\n{c}\n</text>");
            assert_eq!(svg.matches(&text).count(), 2, "{c}: {svg}");
        }
        // The band is drawn before (beneath) the first deployment's line.
        let band = svg.find("stroke-width=\"12\"").expect("the front's band");
        let first = svg.find("stroke=\"#0072B2\"").expect("deployment a's line");
        assert!(band < first, "{svg}");
        assert!(svg.contains("Pareto front (no point beats it on both)"));
    }
}
