//! The fitted model beside the measured medians (docs/model.md): one chart
//! per metric along the run's swept axis, the measured median of each
//! point and the model's prediction with its 90% interval as whiskers; a
//! point the model cannot explain carries a `!` ring. The flag itself is
//! the analysis's ([`qexp_analysis::check_against_model`]); this only draws.

use super::draw::{self, AxisSpec, Mark, Plot, Series, Style};
use super::{ticks, Chart, ChartError};
use crate::labels::Along;
use plotters::prelude::SeriesLabelPosition;
use qexp_analysis::PointSummary;
use qexp_model::{Check, ModelMetric};

/// Chart names, one per metric drawn.
fn name(m: ModelMetric) -> Option<&'static str> {
    Some(match m {
        ModelMetric::TtftS => "model_ttft",
        ModelMetric::TpotS => "model_tpot",
        ModelMetric::E2eS => "model_e2e",
        ModelMetric::AggTokS => "model_agg",
        ModelMetric::TtftP90S => return None,
    })
}

/// Where a check goes on the charts: its x and the series it joins.
struct Placed<'a> {
    x: f64,
    key: (Option<String>, Vec<u64>),
    point: &'a qexp_plan::Point,
    check: &'a Check,
}

/// One chart per metric that has checks, along the first axis the run
/// sweeps (concurrency, the offered rate, then the lengths; the point's
/// number in `points` when it sweeps none), a measured and a model series
/// per deployment and combination of the other swept axes.
pub fn model_charts(checks: &[Check], points: &[PointSummary]) -> Result<Vec<Chart>, ChartError> {
    let layout = Layout::of(points);
    let mut out = Vec::new();
    for m in ModelMetric::ALL {
        let Some(chart_name) = name(m) else { continue };
        let placed = layout.place(checks, m);
        if placed.is_empty() {
            continue;
        }
        out.push(layout.chart(m, chart_name, &placed)?);
    }
    Ok(out)
}

/// How the run's points lie on every model chart: the axis they run along
/// (`None`: numbered in order), the other swept axes, which split them into
/// series, and the axes held fixed, which the titles name.
struct Layout<'a> {
    points: Vec<&'a qexp_plan::Point>,
    labels: Vec<String>,
    axis: Option<Along>,
    varying: Vec<Along>,
    fixed: Vec<Along>,
}

impl<'a> Layout<'a> {
    /// The layout of `points`: along the first axis they sweep.
    fn of(points: &'a [PointSummary]) -> Layout<'a> {
        let points: Vec<&qexp_plan::Point> = points.iter().map(|p| &p.point).collect();
        let swept = Along::swept(&points);
        let axis = Along::ALL.into_iter().find(|a| swept.contains(a));
        let (varying, fixed) = match axis {
            Some(axis) => Along::applicable(points.iter().copied())
                .into_iter()
                .filter(|a| *a != axis)
                .partition(|a| swept.contains(a)),
            None => (Vec::new(), Vec::new()),
        };
        Layout {
            labels: points.iter().map(|p| p.label()).collect(),
            points,
            axis,
            varying,
            fixed,
        }
    }

    /// The checks of `m` whose point is in the run and has a value on the
    /// axis, in series order: by series, then along the axis.
    fn place(&self, checks: &'a [Check], m: ModelMetric) -> Vec<Placed<'a>> {
        let mut placed: Vec<Placed> = Vec::new();
        for check in checks.iter().filter(|c| c.metric == m) {
            let Some(i) = self.labels.iter().position(|l| *l == check.point) else {
                continue;
            };
            let point = self.points[i];
            let x = match self.axis {
                Some(a) => match a.value(point) {
                    Some(x) => x,
                    None => continue,
                },
                None => i as f64 + 1.0,
            };
            let key = (
                point.deployment.clone(),
                self.varying
                    .iter()
                    .map(|a| a.value(point).unwrap_or(f64::NAN).to_bits())
                    .collect(),
            );
            placed.push(Placed {
                x,
                key,
                point,
                check,
            });
        }
        placed.sort_by(|a, b| a.key.cmp(&b.key).then(a.x.total_cmp(&b.x)));
        placed
    }

    /// The chart of `m` from its placed checks.
    fn chart(
        &self,
        m: ModelMetric,
        name: &'static str,
        placed: &[Placed],
    ) -> Result<Chart, ChartError> {
        let hi = placed
            .iter()
            .flat_map(|p| [p.check.measured, p.check.hi])
            .fold(0.0, f64::max);
        let unit = if m.is_time() { "s" } else { "tok/s" };
        let title = self.title(m);
        let plot = Plot {
            title: title.clone(),
            x: self.x_axis(placed),
            y: AxisSpec {
                desc: format!("{} ({unit})", m.name()),
                log: false,
                ticks: ticks::linear(hi),
                label: ticks::label,
            },
            series: series(placed, &self.varying),
            legend: SeriesLabelPosition::UpperLeft,
            dodge: true,
            style: Style::LineAndDots,
        };
        let svg = draw::svg(&plot).map_err(|source| ChartError { name, source })?;
        Ok(Chart {
            name: name.to_string(),
            title,
            svg,
        })
    }

    /// The x axis: the swept axis's, or the points numbered as in model.md.
    fn x_axis(&self, placed: &[Placed]) -> AxisSpec {
        match self.axis {
            Some(a) => super::x_axis(a, placed.iter().map(|p| p.x).collect()),
            None => AxisSpec {
                desc: "Point (numbered as in model.md)".into(),
                log: false,
                ticks: ticks::at_values(
                    &(1..=self.points.len())
                        .map(|i| i as f64)
                        .collect::<Vec<_>>(),
                ),
                label: |v| format!("{v:.0}"),
            },
        }
    }

    /// The title of `m`'s chart, with the parameters held fixed.
    fn title(&self, m: ModelMetric) -> String {
        let mut title = format!("{} (measured median vs model, 90% interval)", m.name());
        if let (false, Some(first)) = (self.fixed.is_empty(), self.points.first()) {
            title.push_str(&format!(" ({})", super::pairs(first, &self.fixed)));
        }
        title
    }
}

/// A measured series (a `!` where the model cannot explain the point) and a
/// model series (its 90% interval as whiskers) per group of placed checks
/// that share a series key.
fn series(placed: &[Placed], varying: &[Along]) -> Vec<Series> {
    let mut series = Vec::new();
    for group in placed.chunk_by(|a, b| a.key == b.key) {
        let label = super::series_label(group[0].point, varying);
        let named = |what: &str| {
            if label.is_empty() {
                what.to_owned()
            } else {
                format!("{what}: {label}")
            }
        };
        series.push(Series {
            label: named("measured (median across trials)"),
            marks: group
                .iter()
                .map(|p| Mark {
                    x: p.x,
                    median: p.check.measured,
                    min: p.check.measured,
                    max: p.check.measured,
                    flag: p.check.unexplained().then(|| "!".to_owned()),
                })
                .collect(),
        });
        series.push(Series {
            label: named("model (90% interval)"),
            marks: group
                .iter()
                .map(|p| Mark {
                    x: p.x,
                    median: p.check.predicted,
                    min: p.check.lo,
                    max: p.check.hi,
                    flag: None,
                })
                .collect(),
        });
    }
    series
}
