//! The value a run's analysis is: [`RunAnalysis`]. Only the type lives
//! here, above the summaries it holds; [`crate::analyze`] and
//! [`RunAnalysis::new`], which run the detectors, sit at the top of the crate.

use crate::anomaly::flag::Flag;
use crate::anomaly::thresholds::{ThresholdRow, ThresholdSource, Thresholds};
use crate::deployments::comparison::DeploymentComparison;
use crate::distribution::PointDistribution;
use crate::failures::FailureGroup;
use crate::metrics::PointSummary;
use crate::reasoning::ReasoningSummary;
use crate::schedule::ScheduleAnalysis;
use crate::turns::TurnSummary;
use qexp_store::Manifest;
use std::path::PathBuf;

/// Everything qexp derives from one run: per-point statistics, the anomaly
/// flags and the thresholds they used, with where those came from. Reports
/// and diffs read this value; none of them parses a plan or runs a detector.
#[derive(Debug, Clone)]
pub struct RunAnalysis {
    /// The run folder.
    pub dir: PathBuf,
    /// Its manifest.
    pub manifest: Manifest,
    /// One summary per planned point, in plan order (points without data have n = 0).
    pub points: Vec<PointSummary>,
    /// The plan's one-line description (`[experiment] description`), read
    /// even from a recorded plan that no longer parses; empty when none.
    pub description: String,
    /// The limits the detectors used.
    pub thresholds: Thresholds,
    /// Where they came from: the recorded plan, or defaults and why.
    pub threshold_source: ThresholdSource,
    /// Each limit with its value, meaning and origin, for reports.
    pub threshold_rows: Vec<ThresholdRow>,
    /// The anomaly flags and findings, sorted by point (plan order), then kind.
    pub flags: Vec<Flag>,
    /// Multi-turn runs: one summary per (point, turn), by point then turn; empty otherwise.
    pub turns: Vec<TurnSummary>,
    /// Points whose requests streamed reasoning: reasoning vs answer TTFT; empty otherwise.
    pub reasoning: Vec<ReasoningSummary>,
    /// Response time from the schedule, achieved rate, goodput and capacity;
    /// None unless the run has open-loop points or `[slo]`.
    pub schedule: Option<ScheduleAnalysis>,
    /// A run with deployments: each against the baseline, paired by block;
    /// None otherwise.
    pub deployments: Option<DeploymentComparison>,
    /// Accuracy (`[accuracy]`) at each load against the lowest load of the
    /// same workload and deployment, on the same items; empty without graded items.
    pub accuracy_by_load: Vec<crate::accuracy::LoadComparison>,
    /// A run with deployments sent at temperature 0: each deployment's
    /// answers against the baseline's on the same prompts; empty otherwise.
    pub equivalence: Vec<crate::equivalence::PairEquivalence>,
    /// Failed measured requests by point and class, with a message each.
    pub failures: Vec<FailureGroup>,
    /// Per point: TTFT and E2E quantiles per trial and a thinned
    /// per-request timeline, for the report's distribution charts; plan
    /// order, points without measured requests left out.
    pub distributions: Vec<PointDistribution>,
    /// A run whose requests carry classes (`[[workload.class]]`): each
    /// point's figures per class and their fairness; empty otherwise.
    pub classes: crate::classes::ClassAnalysis,
}
