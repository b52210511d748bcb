//! The tool's own figures beside qexp's recomputation of the same metric
//! from the same requests, written into the imported run's manifest.

use crate::build::Placed;
use crate::error::ImportError;
use crate::source::Figure;
use qexp_analysis::TrialMetrics;
use qexp_store::MetricCheck;
use std::path::Path;

/// The largest relative difference between a tool's figure and qexp's
/// that counts as agreement: 1%.
pub const TOLERANCE: f64 = 0.01;

/// qexp's value of `figure` for one (trial, point).
fn value(figure: Figure, t: &TrialMetrics) -> f64 {
    match figure {
        Figure::TtftMedian => t.ttft_s,
        Figure::TtftP90 => t.ttft_p90_s,
        Figure::TpotMedian => 1.0 / t.decode_tok_s,
        Figure::E2eMedian => t.e2e_s,
        Figure::ItlMedian => t.itl_p50_s,
        Figure::ItlP90 => t.itl_p90_s,
        Figure::ItlP99 => t.itl_p99_s,
        Figure::OutputThroughput => t.agg_tok_s,
    }
}

/// Analyses the run in `dir` and sets every summary figure beside qexp's.
pub(crate) fn recompute(dir: &Path, summaries: &[Placed]) -> Result<Vec<MetricCheck>, ImportError> {
    let run = qexp_analysis::analyze(dir)?;
    Ok(summaries
        .iter()
        .map(|(trial, point_id, s)| {
            let qexp = run
                .points
                .iter()
                .find(|p| p.point.id == *point_id)
                .and_then(|p| p.trials.iter().find(|t| t.trial == *trial))
                .map(|t| value(s.figure, t))
                .filter(|v| v.is_finite());
            let relative_difference = qexp.map(|q| (s.value - q).abs() / q.abs());
            MetricCheck {
                trial: *trial,
                point_id: *point_id,
                source_field: s.field.clone(),
                metric: s.figure.metric().to_string(),
                source: s.value,
                qexp,
                relative_difference,
                tolerance: TOLERANCE,
                agrees: relative_difference.map(|d| d <= TOLERANCE),
                definition: s.definition.to_string(),
            }
        })
        .collect())
}

/// The tool's figures of a summaries-only import: nothing to recompute them from.
pub(crate) fn unrecomputed(summaries: &[Placed]) -> Vec<MetricCheck> {
    summaries
        .iter()
        .map(|(trial, point_id, s)| MetricCheck {
            trial: *trial,
            point_id: *point_id,
            source_field: s.field.clone(),
            metric: s.figure.metric().to_string(),
            source: s.value,
            qexp: None,
            relative_difference: None,
            tolerance: TOLERANCE,
            agrees: None,
            definition: s.definition.to_string(),
        })
        .collect()
}
