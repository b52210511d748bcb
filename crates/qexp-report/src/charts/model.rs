//! The fitted model beside the measured medians (docs/model.md): one chart
//! per metric over the run's points in order, the measured median of each
//! point and the model's prediction with its 90% interval as whiskers; a
//! point the model cannot explain carries a `!` ring. The flag itself is
//! the analysis's ([`qexp_analysis::check_against_model`]); this only draws.

use super::draw::{self, AxisSpec, Mark, Plot, Series, Style};
use super::{ticks, Chart, ChartError};
use plotters::prelude::SeriesLabelPosition;
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

/// One chart per metric that has checks; `points` orders the x axis (1-based).
pub fn model_charts(checks: &[Check], points: &[String]) -> Result<Vec<Chart>, ChartError> {
    let mut out = Vec::new();
    for m in ModelMetric::ALL {
        let Some(chart_name) = name(m) else { continue };
        let mine: Vec<(f64, &Check)> = checks
            .iter()
            .filter(|c| c.metric == m)
            .filter_map(|c| {
                let i = points.iter().position(|p| *p == c.point)?;
                Some((i as f64 + 1.0, c))
            })
            .collect();
        if mine.is_empty() {
            continue;
        }
        let measured = mine
            .iter()
            .map(|(x, c)| Mark {
                x: *x,
                median: c.measured,
                min: c.measured,
                max: c.measured,
                flag: c.unexplained().then(|| "!".to_owned()),
            })
            .collect();
        let model = mine
            .iter()
            .map(|(x, c)| Mark {
                x: *x,
                median: c.predicted,
                min: c.lo,
                max: c.hi,
                flag: None,
            })
            .collect();
        let hi = mine
            .iter()
            .flat_map(|(_, c)| [c.measured, c.hi])
            .fold(0.0, f64::max);
        let xs: Vec<f64> = (1..=points.len()).map(|i| i as f64).collect();
        let unit = if m.is_time() { "s" } else { "tok/s" };
        let title = format!("{} (measured median vs model, 90% interval)", m.name());
        let plot = Plot {
            title: title.clone(),
            x: AxisSpec {
                desc: "Point (numbered as in model.md)".into(),
                log: false,
                ticks: ticks::at_values(&xs),
                label: |v| format!("{v:.0}"),
            },
            y: AxisSpec {
                desc: format!("{} ({unit})", m.name()),
                log: false,
                ticks: ticks::linear(hi),
                label: ticks::label,
            },
            series: vec![
                Series {
                    label: "measured (median across trials)".into(),
                    marks: measured,
                },
                Series {
                    label: "model (90% interval)".into(),
                    marks: model,
                },
            ],
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
