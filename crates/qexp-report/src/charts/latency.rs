//! Per-point charts of the requests themselves, from the distributions
//! qexp-analysis computed ([`qexp_analysis::distribution`]): a TTFT and an
//! E2E distribution function with one line per trial, and a timeline of
//! send time (from the trial's first send) against TTFT, one colour per
//! trial, where warm-up effects and stalls show as shapes rather than as a
//! wider spread.

use super::draw::{self, AxisSpec, DrawError, Mark, Plot, Series, Style};
use super::{ticks, Chart, ChartError};
use plotters::prelude::SeriesLabelPosition;
use qexp_analysis::distribution::{PointDistribution, TrialDistribution, CDF_QUANTILES};

fn err(name: &'static str) -> impl Fn(DrawError) -> ChartError {
    move |source| ChartError { name, source }
}

/// A mark at (x, y) with no spread.
fn at(x: f64, y: f64) -> Mark {
    Mark {
        x,
        median: y,
        min: y,
        max: y,
        flag: None,
    }
}

/// The share of requests as a percentage tick label.
fn share(v: f64) -> String {
    format!("{}%", ticks::label(v * 100.0))
}

/// Which latency a distribution chart shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Latency {
    /// Time to first token.
    Ttft,
    /// Sent to last chunk.
    E2e,
}

impl Latency {
    fn key(self) -> &'static str {
        match self {
            Latency::Ttft => "ttft",
            Latency::E2e => "e2e",
        }
    }

    fn quantiles(self, t: &TrialDistribution) -> &[f64] {
        match self {
            Latency::Ttft => &t.ttft_s,
            Latency::E2e => &t.e2e_s,
        }
    }
}

/// The distribution function of one latency at a point, a line per trial
/// through its quantiles; None when no trial has requests. `label` names
/// the point; the file is `cdf_<ttft|e2e>_p<point id>.svg`.
pub fn latency_cdf(
    d: &PointDistribution,
    latency: Latency,
    label: &str,
) -> Result<Option<Chart>, ChartError> {
    const NAME: &str = "latency_cdf";
    let last = (CDF_QUANTILES - 1) as f64;
    let series: Vec<Series> = d
        .trials
        .iter()
        .filter(|t| !latency.quantiles(t).is_empty())
        .map(|t| Series {
            label: format!("trial {} ({} requests)", t.trial, t.requests),
            marks: (0..)
                .zip(latency.quantiles(t))
                .map(|(i, &x)| at(x, f64::from(i) / last))
                .collect(),
        })
        .collect();
    let xs = series.iter().flat_map(|s| s.marks.iter().map(|m| m.x));
    let (lo, hi) = xs.fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), v| {
        (lo.min(v), hi.max(v))
    });
    if series.is_empty() {
        return Ok(None);
    }
    let what = match latency {
        Latency::Ttft => "Time to first token",
        Latency::E2e => "End-to-end latency",
    };
    let title = format!("{what} distribution at {label}, by trial");
    let plot = Plot {
        title: title.clone(),
        x: AxisSpec {
            desc: format!("{} (s)", latency.key().to_uppercase()),
            log: false,
            ticks: ticks::around(lo, hi),
            label: ticks::label,
        },
        y: AxisSpec {
            desc: "Requests at or below (cumulative share)".into(),
            log: false,
            ticks: ticks::around(0.0, 1.0),
            label: share,
        },
        series,
        legend: SeriesLabelPosition::LowerRight,
        dodge: false,
        style: Style::Line,
    };
    Ok(Some(Chart {
        name: format!("cdf_{}_p{}", latency.key(), d.point_id),
        title,
        svg: draw::svg(&plot).map_err(err(NAME))?,
    }))
}

/// TTFT against send time at a point, a dot per request (thinned to the
/// analysis' limit), one colour per trial; None without requests. The file
/// is `timeline_p<point id>.svg`.
pub fn ttft_timeline(d: &PointDistribution, label: &str) -> Result<Option<Chart>, ChartError> {
    const NAME: &str = "ttft_timeline";
    let mut series: Vec<Series> = Vec::new();
    for p in &d.timeline {
        let name = format!("trial {}", p.trial);
        match series.last_mut() {
            Some(s) if s.label == name => s.marks.push(at(p.sent_s, p.ttft_s)),
            _ => series.push(Series {
                label: name,
                marks: vec![at(p.sent_s, p.ttft_s)],
            }),
        }
    }
    if series.is_empty() {
        return Ok(None);
    }
    let max = |f: fn(&Mark) -> f64| {
        series
            .iter()
            .flat_map(|s| s.marks.iter().map(f))
            .fold(0.0, f64::max)
    };
    let shown = if d.timeline.len() < d.timeline_of {
        format!(", {} of {} requests", d.timeline.len(), d.timeline_of)
    } else {
        String::new()
    };
    let title = format!("TTFT by send time at {label}{shown}");
    let plot = Plot {
        title: title.clone(),
        x: AxisSpec {
            desc: "Sent, seconds after the trial's first request at the point".into(),
            log: false,
            ticks: ticks::linear(max(|m| m.x)),
            label: ticks::label,
        },
        y: AxisSpec {
            desc: "TTFT (s)".into(),
            log: false,
            ticks: ticks::linear(max(|m| m.median)),
            label: ticks::label,
        },
        series,
        legend: SeriesLabelPosition::UpperRight,
        dodge: false,
        style: Style::Dots,
    };
    Ok(Some(Chart {
        name: format!("timeline_p{}", d.point_id),
        title,
        svg: draw::svg(&plot).map_err(err(NAME))?,
    }))
}
