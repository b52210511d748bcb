//! The report's deployments section: who was compared, how each was
//! started, and every deployment against the baseline (the analysis's
//! paired diffs, formatted as the diff command formats them).

use crate::diff::{diff_context, DiffContext};
use crate::format::num;
use qexp_analysis::DeploymentComparison;
use serde::Serialize;

/// The deployments section of a report.
#[derive(Debug, Clone, Serialize)]
pub struct DeploymentsView {
    /// The baseline's name.
    pub baseline: String,
    /// `interleaved` or `blocked`.
    pub order: String,
    /// One row per deployment, plan order.
    pub deployments: Vec<DeploymentRow>,
    /// One comparison per other deployment: B = it, A = the baseline.
    pub comparisons: Vec<ComparisonView>,
    /// Caveats, as sentences.
    pub warnings: Vec<String>,
    /// How the verdicts were reached, in one paragraph.
    pub method: String,
}

/// One deployment, for people.
#[derive(Debug, Clone, Serialize)]
pub struct DeploymentRow {
    /// Its name.
    pub name: String,
    /// `baseline` or empty.
    pub role: String,
    /// The launch command or the base URL.
    pub how: String,
    /// `key=value` labels.
    pub labels: String,
    /// Engine and version, as the server reported them.
    pub engine: String,
    /// Ready starts / failed starts.
    pub starts: String,
    /// Median launch → ready, seconds, or `–`.
    pub ready: String,
    /// Blocks measured.
    pub blocks: usize,
}

/// One deployment against the baseline.
#[derive(Debug, Clone, Serialize)]
pub struct ComparisonView {
    /// The deployment compared (B).
    pub name: String,
    /// The diff, formatted.
    pub diff: DiffContext,
}

/// The section for a run with deployments.
pub(crate) fn deployments_view(c: &DeploymentComparison) -> DeploymentsView {
    let deployments = c
        .deployments
        .iter()
        .map(|d| DeploymentRow {
            name: d.name.clone(),
            role: if d.baseline {
                "baseline".into()
            } else {
                String::new()
            },
            how: if d.how.is_empty() {
                "–".into()
            } else {
                d.how.clone()
            },
            labels: d.labels.clone(),
            engine: d.engine.clone(),
            starts: format!("{} / {}", d.starts, d.failures),
            ready: d.ready_s.map_or("–".into(), |s| format!("{} s", num(s))),
            blocks: d.blocks,
        })
        .collect();
    let comparisons = c
        .diffs
        .iter()
        .map(|d| ComparisonView {
            name: d
                .b
                .run_id
                .rsplit_once('#')
                .map_or_else(|| d.b.run_id.clone(), |(_, n)| n.to_string()),
            diff: diff_context(d),
        })
        .collect();
    DeploymentsView {
        baseline: c.baseline.clone(),
        order: c.order.as_str().into(),
        deployments,
        comparisons,
        warnings: c.warnings.iter().map(ToString::to_string).collect(),
        method: format!(
            "Each block measured every deployment ({} order), with the same prompts. A \
             deployment's value in a block is its trial median; the change against `{}` is the \
             ratio of geometric means over the blocks, tested with the paired t over blocks \
             (the block is the unit, so what a block shares — drift over the run — cancels), \
             Holm-corrected over every deployment, point and metric of this table. `=` means \
             the change is shown to be smaller than the practical threshold; `~` means neither.",
            c.order.as_str(),
            c.baseline
        ),
    }
}
