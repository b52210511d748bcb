//! What several test modules make of synthetic runs.

use qexp_analysis::{PointSummary, RunAnalysis, TrialMetrics};

/// `r` again with each trial at concurrency `c` replaced by `failed(trial)`:
/// a run that lost that point, as its caller words the lost trials.
pub(crate) fn with_point_failed(
    r: &RunAnalysis,
    c: u32,
    failed: impl Fn(&TrialMetrics) -> TrialMetrics,
) -> RunAnalysis {
    let points = r
        .points
        .iter()
        .map(|p| {
            if p.point.concurrency != c {
                return p.clone();
            }
            let trials = p.trials.iter().map(&failed).collect();
            PointSummary::new(p.point.clone(), trials)
        })
        .collect();
    RunAnalysis::new(
        r.dir.clone(),
        r.manifest.clone(),
        points,
        Vec::new(),
        Vec::new(),
        None,
    )
}
