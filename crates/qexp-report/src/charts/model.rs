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
    let plain: Vec<&qexp_plan::Point> = points.iter().map(|p| &p.point).collect();
    let swept = Along::swept(&plain);
    let axis = Along::ALL.into_iter().find(|a| swept.contains(a));
    let (varying, fixed): (Vec<Along>, Vec<Along>) = match axis {
        Some(axis) => Along::applicable(plain.iter().copied())
            .into_iter()
            .filter(|a| *a != axis)
            .partition(|a| swept.contains(a)),
        None => (Vec::new(), Vec::new()),
    };
    let labels: Vec<String> = plain.iter().map(|p| p.label()).collect();
    let mut out = Vec::new();
    for m in ModelMetric::ALL {
        let Some(chart_name) = name(m) else { continue };
        let mut placed: Vec<Placed> = Vec::new();
        for check in checks.iter().filter(|c| c.metric == m) {
            let Some(i) = labels.iter().position(|l| *l == check.point) else {
                continue;
            };
            let point = plain[i];
            let x = match axis {
                Some(a) => match a.value(point) {
                    Some(x) => x,
                    None => continue,
                },
                None => i as f64 + 1.0,
            };
            let key = (
                point.deployment.clone(),
                varying
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
        if placed.is_empty() {
            continue;
        }
        placed.sort_by(|a, b| a.key.cmp(&b.key).then(a.x.total_cmp(&b.x)));
        let mut series = Vec::new();
        for group in placed.chunk_by(|a, b| a.key == b.key) {
            let label = super::series_label(group[0].point, &varying);
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
        let hi = placed
            .iter()
            .flat_map(|p| [p.check.measured, p.check.hi])
            .fold(0.0, f64::max);
        let x = match axis {
            Some(a) => super::x_axis(a, placed.iter().map(|p| p.x).collect()),
            None => AxisSpec {
                desc: "Point (numbered as in model.md)".into(),
                log: false,
                ticks: ticks::at_values(&(1..=points.len()).map(|i| i as f64).collect::<Vec<_>>()),
                label: |v| format!("{v:.0}"),
            },
        };
        let unit = if m.is_time() { "s" } else { "tok/s" };
        let mut title = format!("{} (measured median vs model, 90% interval)", m.name());
        if let (false, Some(first)) = (fixed.is_empty(), plain.first()) {
            title.push_str(&format!(" ({})", super::pairs(first, &fixed)));
        }
        let plot = Plot {
            title: title.clone(),
            x,
            y: AxisSpec {
                desc: format!("{} ({unit})", m.name()),
                log: false,
                ticks: ticks::linear(hi),
                label: ticks::label,
            },
            series,
            legend: SeriesLabelPosition::UpperLeft,
            dodge: true,
            style: Style::LineAndDots,
        };
        let svg = draw::svg(&plot).map_err(|source| ChartError {
            name: chart_name,
            source,
        })?;
        out.push(Chart {
            name: chart_name.to_string(),
            title,
            svg,
        });
    }
    Ok(out)
}
