//! The history chart of the workspace index: one metric per point across an
//! experiment's comparable runs (one workload), against when each run
//! started; each run its median across trials with min–max whiskers, a ring
//! where qexp-analysis found a step ([`qexp_analysis::history`]).

use super::draw::{self, AxisSpec, Mark, Plot, Series, Style};
use super::{ticks, Chart, ChartError};
use crate::format::percent1;
use crate::labels;
use plotters::prelude::SeriesLabelPosition;
use qexp_analysis::history::WorkloadHistory;
use qexp_analysis::Metric;

const NAME: &str = "history";

/// The unit of the time axis: days, hours or minutes, by the span of the runs.
fn time_unit(span_s: f64) -> (f64, &'static str) {
    if span_s >= 2.0 * 86_400.0 {
        (86_400.0, "days")
    } else if span_s >= 2.0 * 3_600.0 {
        (3_600.0, "hours")
    } else {
        (60.0, "minutes")
    }
}

/// The history of `metric` in `w`, titled `title`; None when no point has a value.
pub fn history(
    w: &WorkloadHistory,
    metric: Metric,
    title: &str,
    first_run: &str,
) -> Result<Option<Chart>, ChartError> {
    let t0 = w.runs.first().map_or(0.0, |r| r.started_unix_s);
    let t1 = w.runs.last().map_or(0.0, |r| r.started_unix_s);
    let (unit, unit_name) = time_unit(t1 - t0);
    let swept = labels::swept(w.points.iter().map(|p| &p.point));
    let series: Vec<Series> = w
        .points
        .iter()
        .filter(|p| !p.values.is_empty())
        .map(|p| Series {
            // Points of several deployments share the swept values: the
            // deployment tells their lines apart.
            label: labels::with_deployment(&p.point, &swept),
            marks: p
                .values
                .iter()
                .map(|v| Mark {
                    x: (w.runs[v.run].started_unix_s - t0) / unit,
                    median: v.summary.median,
                    min: v.summary.min,
                    max: v.summary.max,
                    flag: v.step.map(|s| format!("step {}", signed(s.relative))),
                })
                .collect(),
        })
        .collect();
    if series.is_empty() {
        return Ok(None);
    }
    let values = series
        .iter()
        .flat_map(|s| s.marks.iter())
        .flat_map(|m| [m.min, m.max, m.median])
        .filter(|v| v.is_finite());
    let (lo, hi) = values.fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), v| {
        (lo.min(v), hi.max(v))
    });
    // Log when the points span more than a factor of 20 (TTFT from 0.3 s to 61 s).
    let y_log = lo > 0.0 && hi / lo > 20.0;
    let xmax = (t1 - t0) / unit;
    let plot = Plot {
        title: title.to_string(),
        x: AxisSpec {
            desc: format!("{unit_name} since the first run ({first_run})"),
            log: false,
            ticks: ticks::linear(xmax.max(1.0)),
            label: ticks::label,
        },
        y: AxisSpec {
            desc: metric.axis_title(y_log),
            log: y_log,
            ticks: if y_log {
                ticks::log(lo, hi)
            } else {
                ticks::linear(hi)
            },
            label: ticks::label,
        },
        series,
        legend: SeriesLabelPosition::UpperLeft,
        dodge: false,
        style: Style::LineAndDots,
    };
    let svg = draw::svg(&plot).map_err(|source| ChartError { name: NAME, source })?;
    Ok(Some(Chart {
        name: NAME.to_string(),
        title: title.to_string(),
        svg,
    }))
}

/// `+12.0%` / `−3.4%`.
pub(crate) fn signed(relative: f64) -> String {
    let p = percent1(relative.abs());
    if relative < 0.0 {
        format!("−{p}")
    } else {
        format!("+{p}")
    }
}
