//! The report's charts, one function per chart, SVG text out. Each plots a
//! metric's median across trials against one swept axis, with min–max
//! whiskers across trials, one series per combination of the other swept
//! parameters, and a ring with the flag's marker on flagged points. A chart
//! whose axis the run does not sweep is not drawn (its function returns None).

mod classes;
mod cost;
mod deployments;
mod draw;
mod history;
mod latency;
mod model;
mod ticks;

use crate::format;
use crate::labels::{self, Along};
pub use classes::ttft_by_class;
pub use cost::cost_pareto;
pub use deployments::{over_time, pareto};
pub use draw::DrawError;
pub(crate) use draw::Keyed;
use draw::{AxisSpec, Mark, Plot, Series, Style};
pub use history::history;
pub(crate) use history::signed;
pub use latency::{latency_cdf, ttft_timeline, Latency};
pub use model::model_charts;
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

/// `k=v` pairs of the point on these axes, comma-separated.
fn pairs(p: &qexp_plan::Point, along: &[Along]) -> String {
    along
        .iter()
        .map(|a| a.pair(p))
        .collect::<Vec<_>>()
        .join(", ")
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
#[error("chart {name}")]
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
    pub name: String,
    /// Title, as drawn above the plot.
    pub title: String,
    /// The SVG document.
    pub svg: String,
}

/// What one chart plots.
struct Spec {
    name: &'static str,
    title: &'static str,
    axis: Along,
    /// The metric on the value axis: its summary per point, its axis
    /// title, and the key that picks the flags concerning it.
    metric: Metric,
    y_log: bool,
    legend: SeriesLabelPosition,
}

/// The signature every chart function shares.
type MakeChart = fn(&[PointSummary], &[FlagMark]) -> Result<Option<Chart>, ChartError>;

/// Every chart this run sweeps for, in report order: those of the
/// metrics its API has ([`Metric::of_api`]).
pub fn all(
    points: &[PointSummary],
    marks: &[FlagMark],
    api: qexp_plan::ApiKind,
) -> Result<Vec<Chart>, ChartError> {
    let streamed: &[MakeChart] = &[
        pareto,
        cost_pareto,
        agg_vs_concurrency,
        ttft_vs_concurrency,
        agg_vs_rate,
        ttft_vs_rate,
        decode_vs_input,
        ttft_vs_input,
        ttft_vs_image_pixels,
        over_time,
    ];
    let once: &[MakeChart] = &[req_vs_concurrency, e2e_vs_concurrency];
    let makers = match api.streams() {
        true => streamed,
        false => once,
    };
    let mut out = Vec::new();
    for make in makers {
        out.extend(make(points, marks)?);
    }
    Ok(out)
}

/// One point's request-level charts: its latency distributions and timeline.
#[derive(Debug, Clone, PartialEq)]
pub struct PointCharts {
    /// The point.
    pub point_id: u32,
    /// Its short label, as the tables name it.
    pub label: String,
    /// TTFT distribution, a line per trial.
    pub ttft_cdf: Option<Chart>,
    /// E2E distribution, a line per trial.
    pub e2e_cdf: Option<Chart>,
    /// TTFT against send time, a colour per trial.
    pub timeline: Option<Chart>,
}

/// The request-level charts of every point with distributions, in plan order.
pub fn per_point(
    points: &[PointSummary],
    distributions: &[qexp_analysis::PointDistribution],
) -> Result<Vec<PointCharts>, ChartError> {
    let swept = labels::swept(points.iter().map(|p| &p.point));
    let mut out = Vec::new();
    for p in points {
        let Some(d) = distributions.iter().find(|d| d.point_id == p.point.id) else {
            continue;
        };
        let label = labels::short(&p.point, &swept);
        out.push(PointCharts {
            point_id: p.point.id,
            ttft_cdf: latency_cdf(d, Latency::Ttft, &label)?,
            e2e_cdf: latency_cdf(d, Latency::E2e, &label)?,
            timeline: ttft_timeline(d, &label)?,
            label,
        });
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
            axis: Along::Param(Axis::Concurrency),
            metric: Metric::AggTokS,
            y_log: false,
            legend: SeriesLabelPosition::LowerRight,
        },
        points,
        marks,
    )
}

/// Requests per second against concurrency (log x), for APIs that answer
/// once (embeddings, rerank): where request throughput saturates.
pub fn req_vs_concurrency(
    points: &[PointSummary],
    marks: &[FlagMark],
) -> Result<Option<Chart>, ChartError> {
    chart(
        &Spec {
            name: "req_vs_concurrency",
            title: "Request throughput vs concurrency",
            axis: Along::Param(Axis::Concurrency),
            metric: Metric::ReqS,
            y_log: false,
            legend: SeriesLabelPosition::LowerRight,
        },
        points,
        marks,
    )
}

/// Median E2E against concurrency, both axes log, for APIs that answer once.
pub fn e2e_vs_concurrency(
    points: &[PointSummary],
    marks: &[FlagMark],
) -> Result<Option<Chart>, ChartError> {
    chart(
        &Spec {
            name: "e2e_vs_concurrency",
            title: "End-to-end latency vs concurrency",
            axis: Along::Param(Axis::Concurrency),
            metric: Metric::E2eS,
            y_log: true,
            legend: SeriesLabelPosition::UpperLeft,
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
            axis: Along::Param(Axis::Concurrency),
            metric: Metric::TtftS,
            y_log: true,
            legend: SeriesLabelPosition::UpperLeft,
        },
        points,
        marks,
    )
}

/// Aggregate output tok/s against the offered rate of open-loop points
/// (log x): it follows the offered load until the server saturates.
pub fn agg_vs_rate(
    points: &[PointSummary],
    marks: &[FlagMark],
) -> Result<Option<Chart>, ChartError> {
    chart(
        &Spec {
            name: "agg_vs_rate",
            title: "Aggregate output throughput vs offered rate",
            axis: Along::Rate,
            metric: Metric::AggTokS,
            y_log: false,
            legend: SeriesLabelPosition::LowerRight,
        },
        points,
        marks,
    )
}

/// Median TTFT against the offered rate, both axes log: a backlog shows as a bend upwards.
pub fn ttft_vs_rate(
    points: &[PointSummary],
    marks: &[FlagMark],
) -> Result<Option<Chart>, ChartError> {
    chart(
        &Spec {
            name: "ttft_vs_rate",
            title: "Time to first token vs offered rate",
            axis: Along::Rate,
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
            axis: Along::Param(Axis::InputTokens),
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
            axis: Along::Param(Axis::InputTokens),
            metric: Metric::TtftS,
            y_log: false,
            legend: SeriesLabelPosition::UpperLeft,
        },
        points,
        marks,
    )
}

/// Median TTFT against image pixels per request (linear): what images cost
/// the prefill (the vision encoder and the image tokens), expected roughly
/// linear in the pixels.
pub fn ttft_vs_image_pixels(
    points: &[PointSummary],
    marks: &[FlagMark],
) -> Result<Option<Chart>, ChartError> {
    chart(
        &Spec {
            name: "ttft_vs_image_pixels",
            title: "Time to first token vs image pixels",
            axis: Along::Param(Axis::ImagePixels),
            metric: Metric::TtftS,
            y_log: false,
            legend: SeriesLabelPosition::UpperLeft,
        },
        points,
        marks,
    )
}

/// A series' name: its deployment and its values on the `varying` axes.
fn series_label(first: &qexp_plan::Point, varying: &[Along]) -> String {
    let pairs = pairs(first, varying);
    match (&first.deployment, pairs.is_empty()) {
        (Some(d), true) => d.clone(),
        (Some(d), false) => format!("{d}: {pairs}"),
        (None, _) => pairs,
    }
}

/// A swept axis over the values `xs`: log concurrency or rate with a tick
/// per value, or linear lengths.
fn x_axis(axis: Along, mut xs: Vec<f64>) -> AxisSpec {
    xs.sort_by(f64::total_cmp);
    xs.dedup();
    match axis {
        Along::Param(Axis::Concurrency) => AxisSpec {
            desc: "Concurrency (requests in flight, log scale)".into(),
            log: true,
            ticks: ticks::at_values(&xs),
            label: |v| format!("{v:.0}"),
        },
        Along::Rate => AxisSpec {
            desc: "Offered rate (req/s, log scale)".into(),
            log: true,
            ticks: ticks::at_values(&xs),
            label: format::sig3,
        },
        Along::Param(Axis::ImagePixels) => AxisSpec {
            desc: "Image pixels per request".into(),
            log: false,
            ticks: ticks::linear_to(xs.last().copied().unwrap_or(1.0)),
            label: format::tokens,
        },
        Along::Param(axis) => AxisSpec {
            desc: format!(
                "{} (tokens)",
                if axis == Axis::InputTokens {
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

/// Draws `spec` from the points: None when the run does not sweep its axis
/// or no point has a usable value.
fn chart(
    spec: &Spec,
    points: &[PointSummary],
    marks: &[FlagMark],
) -> Result<Option<Chart>, ChartError> {
    let plain: Vec<&qexp_plan::Point> = points.iter().map(|p| &p.point).collect();
    let swept = Along::swept(&plain);
    if !swept.contains(&spec.axis) {
        return Ok(None);
    }
    let (varying, fixed): (Vec<Along>, Vec<Along>) = Along::applicable(plain.iter().copied())
        .into_iter()
        .filter(|a| *a != spec.axis)
        .partition(|a| swept.contains(a));
    let series = spec.series(points, marks, &varying);
    let Some(first) = points.first() else {
        return Ok(None);
    };
    if series.is_empty() {
        return Ok(None);
    }
    let mut title = spec.title.to_string();
    if !fixed.is_empty() {
        title.push_str(&format!(" ({})", pairs(&first.point, &fixed)));
    }
    spec.draw(title, spec.x_axis(points), series).map(Some)
}

impl Spec {
    /// The chart of `series` against `x` under `title`: lines and dots on
    /// the spec's y axis, its legend where the spec puts it.
    fn draw(&self, title: String, x: AxisSpec, series: Vec<Series>) -> Result<Chart, ChartError> {
        let plot = Plot {
            title: title.clone(),
            x,
            y: self.y_axis(&series),
            series,
            legend: self.legend.clone(),
            dodge: true,
            style: Style::LineAndDots,
        };
        let svg = draw::svg(&plot).map_err(|source| ChartError {
            name: self.name,
            source,
        })?;
        Ok(Chart {
            name: self.name.into(),
            title,
            svg,
        })
    }

    /// One series per deployment and combination of the `varying` axes, its
    /// points in axis order; points without a usable median are left out.
    fn series(
        &self,
        points: &[PointSummary],
        marks: &[FlagMark],
        varying: &[Along],
    ) -> Vec<Series> {
        // Keyed by the varying axes' values (bits of positive numbers sort as the numbers).
        type Key = (Option<String>, Vec<u64>);
        let mut groups: BTreeMap<Key, Vec<(f64, &PointSummary)>> = BTreeMap::new();
        for p in points {
            let Some(x) = self.axis.value(&p.point) else {
                continue;
            };
            groups
                .entry((
                    p.point.deployment.clone(),
                    varying
                        .iter()
                        .map(|a| a.value(&p.point).unwrap_or(f64::NAN).to_bits())
                        .collect(),
                ))
                .or_default()
                .push((x, p));
        }
        let log_y = self.y_log;
        let mut series = Vec::new();
        for group in groups.values_mut() {
            group.sort_by(|a, b| a.0.total_cmp(&b.0));
            let marks: Vec<Mark> = group
                .iter()
                .filter_map(|&(x, p)| {
                    let s = self.metric.summary(p)?;
                    let usable = |v: f64| v.is_finite() && (!log_y || v > 0.0);
                    usable(s.median).then(|| Mark {
                        x,
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
            let label = series_label(&group[0].1.point, varying);
            series.push(Series { label, marks });
        }
        series
    }

    /// The swept axis: see [`x_axis`].
    fn x_axis(&self, points: &[PointSummary]) -> AxisSpec {
        let xs: Vec<f64> = points
            .iter()
            .filter_map(|p| self.axis.value(&p.point))
            .collect();
        x_axis(self.axis, xs)
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
