//! The cost Pareto: what a token cost against the speed each user saw,
//! one curve per deployment (or one for the run) through its points in the
//! order of their load, each point labelled with its load, and the front of
//! points no other point beats on both (faster per user and cheaper; the
//! non-dominated set, Deb et al., NSGA-II, 2002). Dollars per million output
//! tokens where the plan has a price, joules per output token otherwise;
//! drawn only where the run measured them.

use super::deployments::{pareto_front, series_by, Notes};
use super::draw::{self, AxisSpec, Extras, Mark, Plot, Series, Style};
use super::{ticks, Chart, ChartError, FlagMark};
use plotters::prelude::SeriesLabelPosition;
use qexp_analysis::{Metric, PointSummary};
use std::collections::BTreeMap;

/// Per-request decode tok/s against $ per 1M output tokens (or J per output token).
pub fn cost_pareto(
    points: &[PointSummary],
    _marks: &[FlagMark],
) -> Result<Option<Chart>, ChartError> {
    const NAME: &str = "cost_pareto";
    let has = |m: Metric| points.iter().any(|p| m.summary(p).is_some());
    let metric = match (has(Metric::UsdPerMOut), has(Metric::JPerOutTok)) {
        (true, _) => Metric::UsdPerMOut,
        (false, true) => Metric::JPerOutTok,
        (false, false) => return Ok(None),
    };
    let (series, notes) = curves(points, metric);
    let all: Vec<Mark> = series
        .iter()
        .flat_map(|s| s.marks.iter().cloned())
        .collect();
    if all.is_empty() {
        return Ok(None);
    }
    let extras = Extras {
        band: Some((
            "Pareto front (no point is both faster and cheaper)".into(),
            front(&all).iter().map(|m| (m.x, m.median)).collect(),
        )),
        notes,
    };
    let xmax = all.iter().map(|m| m.x).fold(0.0, f64::max);
    let ymax = all.iter().map(|m| m.max.max(m.median)).fold(0.0, f64::max);
    let title = format!("{} vs per-user decode rate", metric.spec().axis);
    let plot = Plot {
        title: title.clone(),
        x: AxisSpec {
            desc: "Per-request decode (tok/s)".into(),
            log: false,
            ticks: ticks::linear(xmax),
            label: ticks::label,
        },
        y: AxisSpec {
            desc: metric.axis_title(false),
            log: false,
            ticks: ticks::linear(ymax),
            label: ticks::label,
        },
        series,
        legend: SeriesLabelPosition::UpperRight,
        dodge: false,
        style: Style::LineAndDots,
    };
    let svg = draw::svg_with(&plot, &extras).map_err(|source| ChartError { name: NAME, source })?;
    Ok(Some(Chart {
        name: NAME.into(),
        title,
        svg,
    }))
}

/// One series per deployment (one for a run without): `metric` against
/// per-request decode at each point, in the order of its load.
fn curves(points: &[PointSummary], metric: Metric) -> (Vec<Series>, Notes) {
    let mut by: BTreeMap<&str, Vec<&PointSummary>> = BTreeMap::new();
    for p in points {
        by.entry(p.point.deployment.as_deref().unwrap_or("this run"))
            .or_default()
            .push(p);
    }
    let mark = |p: &PointSummary| {
        let (dec, y) = (p.decode_tok_s.as_ref()?, metric.summary(p)?);
        (dec.median.is_finite() && y.median.is_finite()).then_some(Mark {
            x: dec.median,
            median: y.median,
            min: y.min,
            max: y.max,
            flag: None,
        })
    };
    series_by(points, by, mark)
}

/// The marks no other mark beats on both (faster and cheaper), left to right.
fn front(all: &[Mark]) -> Vec<Mark> {
    pareto_front(all, true)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mark(x: f64, y: f64) -> Mark {
        Mark {
            x,
            median: y,
            min: y,
            max: y,
            flag: None,
        }
    }

    #[test]
    fn the_front_keeps_what_nothing_beats_on_speed_and_cost() {
        // (10, 1.0) is beaten by (12, 0.8); (40, 3.0) is the fastest, (12, 0.8) the cheapest.
        let all = [
            mark(10.0, 1.0),
            mark(12.0, 0.8),
            mark(40.0, 3.0),
            mark(30.0, 3.5),
        ];
        let f: Vec<(f64, f64)> = front(&all).iter().map(|m| (m.x, m.median)).collect();
        assert_eq!(f, [(12.0, 0.8), (40.0, 3.0)]);
    }
}
