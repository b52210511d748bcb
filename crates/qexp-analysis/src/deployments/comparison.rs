//! A deployment comparison as a value: what [`super::compare_deployments`]
//! finds and reports render.

use crate::diff::run_diff::RunDiff;
use qexp_plan::Order;
use serde::Serialize;

/// What the reader of a deployment comparison must know.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum DeploymentWarning {
    /// The run measured all blocks of one deployment before the next.
    BlockedOrder,
    /// A deployment failed to start (its cells were skipped).
    FailedStarts {
        /// The deployment.
        deployment: String,
        /// Starts that failed.
        count: usize,
        /// The first failure's sentence.
        first: String,
    },
    /// A deployment has no measured point at all.
    Unmeasured {
        /// The deployment.
        deployment: String,
    },
    /// The diff refused to compare a deployment with the baseline.
    NotCompared {
        /// The deployment.
        deployment: String,
        /// The baseline it was to be compared with.
        baseline: String,
        /// The diff's refusal, as a sentence.
        reason: String,
    },
}

impl std::fmt::Display for DeploymentWarning {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DeploymentWarning::BlockedOrder => f.write_str(
                "The run measured the deployments one after another (order = \"blocked\"): \
                 anything that drifted over the run (temperature, other load, a server warming \
                 up) reads as a difference between them. Run again with order = \"interleaved\" \
                 to trust the verdicts.",
            ),
            DeploymentWarning::FailedStarts {
                deployment,
                count,
                first,
            } => write!(
                f,
                "Deployment `{deployment}` failed to start {count} time{} and its cells were \
                 skipped: {first} Fix it and finish the run with `qexp run --resume`.",
                if *count == 1 { "" } else { "s" }
            ),
            DeploymentWarning::Unmeasured { deployment } => write!(
                f,
                "Deployment `{deployment}` has no measured point; it is left out of the comparison."
            ),
            DeploymentWarning::NotCompared {
                deployment,
                baseline,
                reason,
            } => write!(
                f,
                "Deployment `{deployment}` is left out of the comparison: {reason}. \
                 `qexp diff RUN#{baseline} RUN#{deployment}` compares the two with the options you give it."
            ),
        }
    }
}

/// One deployment of a run, for people.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DeploymentSummary {
    /// Its name.
    pub name: String,
    /// True for the baseline.
    pub baseline: bool,
    /// True when qexp launched it.
    pub launched: bool,
    /// How it was started: the launch argv, or the base URL.
    pub how: String,
    /// The plan's labels, `key=value` joined.
    pub labels: String,
    /// Engine and version the server reported, when known.
    pub engine: String,
    /// Ready starts.
    pub starts: usize,
    /// Failed starts.
    pub failures: usize,
    /// Median seconds from launch to ready, over its starts.
    pub ready_s: Option<f64>,
    /// Blocks with at least one measured point.
    pub blocks: usize,
}

/// Every deployment of a run against its baseline.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DeploymentComparison {
    /// The baseline's name.
    pub baseline: String,
    /// `interleaved` or `blocked`.
    pub order: Order,
    /// The deployments, in plan order.
    pub deployments: Vec<DeploymentSummary>,
    /// One diff per other deployment (A = baseline, B = it), paired by
    /// block, Holm-adjusted together.
    pub diffs: Vec<RunDiff>,
    /// Caveats.
    pub warnings: Vec<DeploymentWarning>,
}
