//! The per-class chart of a run of request classes (`[[workload.class]]`):
//! each class's median TTFT against the load, a line per class, with
//! min–max whiskers across trials. Where one class's line leaves the
//! others as the load grows, the fairness table says whether it is starved.

use super::draw::{Mark, Series};
use super::{pairs, x_axis, Chart, ChartError, Spec};
use crate::labels::Along;
use plotters::prelude::SeriesLabelPosition;
use qexp_analysis::classes::ClassAnalysis;
use qexp_analysis::{Axis, Metric, PointSummary};
use std::collections::BTreeMap;

/// Median TTFT per class against concurrency (or the offered rate), both
/// axes log; None without several classes or a swept load. A series per
/// class and combination of the other swept parameters.
pub fn ttft_by_class(
    points: &[PointSummary],
    classes: &ClassAnalysis,
) -> Result<Option<Chart>, ChartError> {
    let mut names: Vec<&str> = classes.rows.iter().map(|r| r.class.as_str()).collect();
    names.sort_unstable();
    names.dedup();
    if names.len() < 2 {
        return Ok(None);
    }
    let plain: Vec<&qexp_plan::Point> = points.iter().map(|p| &p.point).collect();
    let swept = Along::swept(&plain);
    let Some(axis) = [Along::Param(Axis::Concurrency), Along::Rate]
        .into_iter()
        .find(|a| swept.contains(a))
    else {
        return Ok(None);
    };
    let varying: Vec<Along> = swept.iter().copied().filter(|a| *a != axis).collect();
    let series = class_series(points, classes, axis, &varying);
    if series.is_empty() {
        return Ok(None);
    }
    let spec = Spec {
        name: "ttft_by_class",
        title: "Time to first token by request class",
        axis,
        metric: Metric::TtftS,
        y_log: true,
        legend: SeriesLabelPosition::UpperLeft,
    };
    let xs = series
        .iter()
        .flat_map(|s| s.marks.iter().map(|m| m.x))
        .collect();
    spec.draw(spec.title.into(), x_axis(axis, xs), series)
        .map(Some)
}

/// A series per class (in plan order) and combination of the `varying`
/// axes: its median TTFT at each value of `axis`.
fn class_series(
    points: &[PointSummary],
    classes: &ClassAnalysis,
    axis: Along,
    varying: &[Along],
) -> Vec<Series> {
    // (class in plan order, the other swept values) → marks.
    let mut groups: BTreeMap<(usize, String), Vec<Mark>> = BTreeMap::new();
    for r in &classes.rows {
        let Some(p) = points.iter().find(|p| p.point.id == r.point_id) else {
            continue;
        };
        let (Some(x), Some(s)) = (axis.value(&p.point), r.ttft_p50_s.as_ref()) else {
            continue;
        };
        if !(s.median.is_finite() && s.median > 0.0) {
            continue;
        }
        let order = classes
            .rows
            .iter()
            .position(|o| o.class == r.class)
            .unwrap_or(0);
        let mut label = format!("class {}", r.class);
        if !varying.is_empty() {
            label.push_str(&format!(", {}", pairs(&p.point, varying)));
        }
        groups.entry((order, label)).or_default().push(Mark {
            x,
            median: s.median,
            min: if s.min > 0.0 { s.min } else { s.median },
            max: s.max,
            flag: r.starved.as_ref().map(|_| "starved".to_string()),
        });
    }
    groups
        .into_iter()
        .map(|((_, label), mut marks)| {
            marks.sort_by(|a, b| a.x.total_cmp(&b.x));
            Series { label, marks }
        })
        .collect()
}
