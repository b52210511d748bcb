//! The report's charts, one function per chart, SVG text out. Each plots a
//! metric's median across trials against one swept axis, with min–max
//! whiskers across trials, one series per combination of the other swept
//! parameters, and a ring with the flag's marker on flagged points. A chart
//! whose axis the run does not sweep is not drawn (its function returns None).

mod deployments;
mod draw;
mod history;
mod ticks;

use crate::format;
use crate::labels;
pub use deployments::{over_time, pareto};
pub use draw::DrawError;
pub(crate) use draw::Keyed;
use draw::{AxisSpec, Mark, Plot, Series};
pub use history::history;
pub(crate) use history::signed;
use plotters::prelude::SeriesLabelPosition;
use qexp_analysis::{Axis, Metric, PointSummary};
use std::collections::BTreeMap;

/// A flag's marker to place on a chart.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FlagMark {
    /// The flagged point.
    pub point_id: u32,
    /// Marker text, e.g. `⚑1`.
    pub marker: String,
    /// Metrics the flag concerns (`ttft_s`, …): it is drawn on those charts only; empty: on every chart.
    pub metrics: Vec<String>,
}

/// The marker text of a point on a chart of `metric`: its flags' markers, space-separated.
fn marker(marks: &[FlagMark], point_id: u32, metric: &str) -> Option<String> {
    let on: Vec<&str> = marks
        .iter()
        .filter(|m| {
            m.point_id == point_id
                && (m.metrics.is_empty() || m.metrics.iter().any(|x| x == metric))
        })
        .map(|m| m.marker.as_str())
        .collect();
    (!on.is_empty()).then(|| on.join(" "))
}

/// A chart that could not be drawn.
#[derive(Debug, thiserror::Error)]
#[error("chart {name}: {source}")]
pub struct ChartError {
    /// The chart's name.
    pub name: &'static str,
    /// What plotters said.
    pub source: DrawError,
}

/// One drawn chart.
#[derive(Debug, Clone, PartialEq)]
pub struct Chart {
    /// Stable name; the file is `<name>.svg`.
    pub name: &'static str,
    /// Title, as drawn above the plot.
    pub title: String,
    /// The SVG document.
    pub svg: String,
}

/// What one chart plots.
struct Spec {
    name: &'static str,
    title: &'static str,
    axis: Axis,
    /// The metric on the value axis: its summary per point, its axis
    /// title, and the key that picks the flags concerning it.
    metric: Metric,
    y_log: bool,
    legend: SeriesLabelPosition,
}

/// The signature every chart function shares.
type MakeChart = fn(&[PointSummary], &[FlagMark]) -> Result<Option<Chart>, ChartError>;

/// Every chart this run sweeps for, in report order.
pub fn all(points: &[PointSummary], marks: &[FlagMark]) -> Result<Vec<Chart>, ChartError> {
    let makers: [MakeChart; 6] = [
        pareto,
        agg_vs_concurrency,
        ttft_vs_concurrency,
        decode_vs_input,
        ttft_vs_input,
        over_time,
    ];
    let mut out = Vec::new();
    for make in makers {
        out.extend(make(points, marks)?);
    }
    Ok(out)
}

/// Aggregate output tok/s against concurrency (log x): where throughput saturates.
pub fn agg_vs_concurrency(
    points: &[PointSummary],
    marks: &[FlagMark],
) -> Result<Option<Chart>, ChartError> {
    chart(
        &Spec {
            name: "agg_vs_concurrency",
            title: "Aggregate output throughput vs concurrency",
            axis: Axis::Concurrency,
            metric: Metric::AggTokS,
            y_log: false,
            legend: SeriesLabelPosition::LowerRight,
        },
        points,
        marks,
    )
}

/// Median TTFT against concurrency, both axes log: queueing shows as a bend upwards.
pub fn ttft_vs_concurrency(
    points: &[PointSummary],
    marks: &[FlagMark],
) -> Result<Option<Chart>, ChartError> {
    chart(
        &Spec {
            name: "ttft_vs_concurrency",
            title: "Time to first token vs concurrency",
            axis: Axis::Concurrency,
            metric: Metric::TtftS,
            y_log: true,
            legend: SeriesLabelPosition::UpperLeft,
        },
        points,
        marks,
    )
}

/// Per-request decode tok/s against input length: the cost of attending over a longer context.
pub fn decode_vs_input(
    points: &[PointSummary],
    marks: &[FlagMark],
) -> Result<Option<Chart>, ChartError> {
    chart(
        &Spec {
            name: "decode_vs_input",
            title: "Per-request decode rate vs input length",
            axis: Axis::InputTokens,
            metric: Metric::DecodeTokS,
            y_log: false,
            legend: SeriesLabelPosition::LowerLeft,
        },
        points,
        marks,
    )
}

/// Median TTFT against input length (linear): prefill cost, expected roughly linear.
pub fn ttft_vs_input(
    points: &[PointSummary],
    marks: &[FlagMark],
) -> Result<Option<Chart>, ChartError> {
    chart(
        &Spec {
            name: "ttft_vs_input",
            title: "Time to first token vs input length",
            axis: Axis::InputTokens,
            metric: Metric::TtftS,
            y_log: false,
            legend: SeriesLabelPosition::UpperLeft,
        },
        points,
        marks,
    )
}

/// Draws `spec` from the points: None when the run does not sweep its axis
/// or no point has a usable value.
fn chart(
    spec: &Spec,
    points: &[PointSummary],
    marks: &[FlagMark],
) -> Result<Option<Chart>, ChartError> {
    let swept = labels::swept(points.iter().map(|p| &p.point));
    if !swept.contains(&spec.axis) {
        return Ok(None);
    }
    let others: Vec<Axis> = labels::AXES
        .into_iter()
        .filter(|a| *a != spec.axis)
        .collect();
    let varying: Vec<Axis> = others
        .iter()
        .copied()
        .filter(|a| swept.contains(a))
        .collect();
    let fixed: Vec<Axis> = others
        .iter()
        .copied()
        .filter(|a| !swept.contains(a))
        .collect();
    let series = spec.series(points, marks, &varying);
    let Some(first) = points.first() else {
        return Ok(None);
    };
    if series.is_empty() {
        return Ok(None);
    }
    let x = spec.x_axis(points);
    let y = spec.y_axis(&series);
    let mut title = spec.title.to_string();
    if !fixed.is_empty() {
        title.push_str(&format!(" ({})", labels::pairs(&first.point, &fixed, ", ")));
    }
    let plot = Plot {
        title: title.clone(),
        x,
        y,
        series,
        legend: spec.legend.clone(),
        dodge: true,
    };
    let svg = draw::svg(&plot).map_err(|source| ChartError {
        name: spec.name,
        source,
    })?;
    Ok(Some(Chart {
        name: spec.name,
        title,
        svg,
    }))
}

impl Spec {
    /// One series per deployment and combination of the `varying` axes, its
    /// points in axis order; points without a usable median are left out.
    fn series(&self, points: &[PointSummary], marks: &[FlagMark], varying: &[Axis]) -> Vec<Series> {
        let mut groups: BTreeMap<(Option<String>, Vec<u32>), Vec<&PointSummary>> = BTreeMap::new();
        for p in points {
            groups
                .entry((
                    p.point.deployment.clone(),
                    varying.iter().map(|a| a.value(&p.point)).collect(),
                ))
                .or_default()
                .push(p);
        }
        let log_y = self.y_log;
        let mut series = Vec::new();
        for group in groups.values_mut() {
            group.sort_by_key(|p| self.axis.value(&p.point));
            let marks: Vec<Mark> = group
                .iter()
                .filter_map(|p| {
                    let s = self.metric.summary(p)?;
                    let usable = |v: f64| v.is_finite() && (!log_y || v > 0.0);
                    usable(s.median).then(|| Mark {
                        x: f64::from(self.axis.value(&p.point)),
                        median: s.median,
                        min: if usable(s.min) { s.min } else { s.median },
                        max: s.max,
                        flag: marker(marks, p.point.id, self.metric.key()),
                    })
                })
                .collect();
            if marks.is_empty() {
                continue;
            }
            let pairs = labels::pairs(&group[0].point, varying, ", ");
            let label = match (&group[0].point.deployment, pairs.is_empty()) {
                (Some(d), true) => d.clone(),
                (Some(d), false) => format!("{d}: {pairs}"),
                (None, _) => pairs,
            };
            series.push(Series { label, marks });
        }
        series
    }

    /// The swept axis: log concurrency with a tick per value, or linear lengths.
    fn x_axis(&self, points: &[PointSummary]) -> AxisSpec {
        let xs: Vec<f64> = {
            let mut v: Vec<u32> = points.iter().map(|p| self.axis.value(&p.point)).collect();
            v.sort_unstable();
            v.dedup();
            v.into_iter().map(f64::from).collect()
        };
        match self.axis {
            Axis::Concurrency => AxisSpec {
                desc: "Concurrency (requests in flight, log scale)".into(),
                log: true,
                ticks: ticks::at_values(&xs),
                label: |v| format!("{v:.0}"),
            },
            Axis::InputTokens | Axis::OutputTokens => AxisSpec {
                desc: format!(
                    "{} (tokens)",
                    if self.axis == Axis::InputTokens {
                        "Input length"
                    } else {
                        "Output length"
                    }
                ),
                log: false,
                ticks: ticks::linear_to(xs.last().copied().unwrap_or(1.0)),
                label: format::tokens,
            },
        }
    }

    /// The metric's axis, spanning every median and whisker of `series`.
    fn y_axis(&self, series: &[Series]) -> AxisSpec {
        let values = series
            .iter()
            .flat_map(|s| s.marks.iter())
            .flat_map(|m| [m.min, m.max, m.median]);
        let (lo, hi) = values.fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), v| {
            (lo.min(v), hi.max(v))
        });
        AxisSpec {
            desc: self.metric.axis_title(self.y_log),
            log: self.y_log,
            ticks: if self.y_log {
                ticks::log(lo, hi)
            } else {
                ticks::linear(hi)
            },
            label: ticks::label,
        }
    }
}
