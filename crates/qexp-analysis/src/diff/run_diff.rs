//! A diff as a value: the options it was asked with, why it can be refused,
//! and the [`RunDiff`] it finds, which reports render.

use super::compare::{MetricDiff, Verdict};
use super::compat::{KeyRow, WorkloadCheck};
use super::metric::DiffMetric;
use super::pairing::Side;
use super::warning::DiffWarning;
use qexp_plan::Point;
use qexp_store::RunStatus;
use serde::Serialize;

/// Version of the serialised [`RunDiff`]; bumped on incompatible change.
pub const DIFF_SCHEMA_VERSION: u32 = 2;

/// How to compare.
#[derive(Debug, Clone, PartialEq)]
pub struct DiffOptions {
    /// Family-wise significance level, after Holm's correction.
    pub alpha: f64,
    /// Practical threshold: a relative change smaller than this is never better/worse; None: run A's `analysis.min_change`.
    pub min_change: Option<f64>,
    /// Workload keys allowed to differ.
    pub ignore: Vec<String>,
    /// Metrics to compare, in display order; empty means all.
    pub metrics: Vec<DiffMetric>,
    /// Coverage of the interval of each estimate.
    pub level: f64,
    /// Seed of the random permutations (used only beyond the exact test's size); each comparison derives its own stream from it.
    pub seed: u64,
    /// Pair the trials by number (the blocks of one run with deployments,
    /// each of which measured both sides): the paired t over blocks.
    pub paired: bool,
}

impl Default for DiffOptions {
    fn default() -> DiffOptions {
        DiffOptions {
            alpha: 0.05,
            min_change: None,
            ignore: Vec::new(),
            metrics: Vec::new(),
            level: 0.95,
            seed: 0,
            paired: false,
        }
    }
}

/// Why two runs cannot be compared.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum DiffError {
    /// Workload keys differ and were not ignored.
    #[error(
        "the runs asked for different workloads, so their numbers are not comparable: {}. To compare anyway, name the key{} with --ignore {}",
        .keys.iter().map(ToString::to_string).collect::<Vec<_>>().join(", "),
        if .keys.len() == 1 { "" } else { "s" },
        .keys.iter().map(|k| k.key.as_str()).collect::<Vec<_>>().join(" --ignore ")
    )]
    Incomparable {
        /// The differing keys.
        keys: Vec<KeyRow>,
    },
    /// alpha outside (0, 1).
    #[error("alpha must be between 0 and 1 (exclusive), got {0}")]
    BadAlpha(f64),
    /// min_change outside (0, 1).
    #[error("the practical threshold (min change) must be between 0 and 1 (exclusive, e.g. 0.02 for 2%), got {0}")]
    BadMinChange(f64),
    /// A run imported from a tool's summaries alone: no trial values, no spread.
    #[error("run {run_id} was imported from {tool} files that kept only summaries, and medians without spread cannot give a verdict; import the tool's per-request output instead (for vllm bench serve, --save-detailed)")]
    SummariesOnly {
        /// The run.
        run_id: String,
        /// The tool its files came from.
        tool: String,
    },
}

/// One run as the diff names it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RunSide {
    /// Run id.
    pub run_id: String,
    /// Experiment name.
    pub experiment: String,
    /// Run folder as given.
    pub dir: String,
    /// Target URL or `sim:<profile>`.
    pub target: String,
    /// Model.
    pub model: String,
    /// True when the target was qexp's embedded simulator.
    pub simulated: bool,
    /// Trials run.
    pub trials: u32,
    /// Run status.
    pub status: RunStatus,
    /// Plan SHA-256.
    pub plan_hash: String,
    /// qexp version that made the run.
    pub qexp_version: String,
}

/// Two points with the same parameters and their comparisons.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PairDiff {
    /// The point as run A planned it.
    pub point_a: Point,
    /// The point as run B planned it (same parameters, maybe another id).
    pub point_b: Point,
    /// One comparison per metric, in the diff's metric order.
    pub metrics: Vec<MetricDiff>,
    /// The run that lost the point: every request it measured there failed,
    /// while the other run has successful requests. Lost by B, it is a
    /// regression (counted in [`Tally::lost`]).
    pub lost: Option<Side>,
    /// The runs whose answers at the point are broken (answer health).
    /// Broken in B, B's improvements there are
    /// [`Verdict::BetterOnBrokenOutput`]; in B only, it is also a regression
    /// (counted in [`Tally::broken`]).
    pub broken: Vec<Side>,
    /// Where both runs sent several request classes: each class both
    /// measured there, its TTFT and E2E compared in the diff's family.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub classes: Vec<ClassDiff>,
}

impl PairDiff {
    /// Every comparison of the pair: the point's metrics, then its classes'.
    pub fn comparisons(&self) -> impl Iterator<Item = &MetricDiff> {
        self.metrics
            .iter()
            .chain(self.classes.iter().flat_map(|c| c.metrics.iter()))
    }

    /// [`PairDiff::comparisons`], to set verdicts.
    pub(crate) fn comparisons_mut(&mut self) -> impl Iterator<Item = &mut MetricDiff> {
        self.metrics
            .iter_mut()
            .chain(self.classes.iter_mut().flat_map(|c| c.metrics.iter_mut()))
    }
}

/// One request class at a paired point: its own TTFT and E2E compared.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ClassDiff {
    /// The class's name (`[[workload.class]]`).
    pub class: String,
    /// Its comparisons (median TTFT, median E2E), as far as the diff's
    /// metrics ask for them.
    pub metrics: Vec<MetricDiff>,
}

/// A point without a partner.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct UnpairedPoint {
    /// The run it belongs to.
    pub side: Side,
    /// The point.
    pub point: Point,
    /// Trials with data there.
    pub n: usize,
}

/// Where the practical threshold (`min_change`) came from; the anomaly
/// detectors' [`crate::anomaly::ThresholdSource`] is another thing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum MinChangeSource {
    /// Run A's plan, `[analysis] min_change`.
    Plan,
    /// The plan's default, because run A's plan text no longer parses.
    Default,
    /// The command line (`--min-change`).
    Option,
}

/// Counts of verdicts.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Tally {
    /// Significant improvements of at least the threshold.
    pub better: usize,
    /// Significant regressions of at least the threshold.
    pub worse: usize,
    /// Changes shown to lie within ±threshold.
    pub equivalent: usize,
    /// Neither (including all-equal comparisons).
    pub no_change: usize,
    /// Not tested for lack of data.
    pub not_tested: usize,
    /// Paired points run B lost: every request it measured there failed,
    /// where run A has data. Each is a regression.
    pub lost: usize,
    /// Paired points whose answers are broken in run B and healthy in run
    /// A. Each is a regression, whatever the speed says.
    pub broken: usize,
    /// Improvements measured on run B's broken or significantly less
    /// accurate answers (not counted in `better`).
    pub better_on_bad_answers: usize,
}

/// The whole comparison of run B against run A.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RunDiff {
    /// [`DIFF_SCHEMA_VERSION`].
    pub schema_version: u32,
    /// The baseline.
    pub a: RunSide,
    /// The candidate.
    pub b: RunSide,
    /// Family-wise alpha.
    pub alpha: f64,
    /// Practical threshold (relative change).
    pub min_change: f64,
    /// Where it came from.
    pub min_change_source: MinChangeSource,
    /// Interval coverage.
    pub level: f64,
    /// Seed of the random permutations.
    pub seed: u64,
    /// Metrics compared.
    pub metrics: Vec<DiffMetric>,
    /// Workload keys, checked.
    pub workload: WorkloadCheck,
    /// Deployment keys of both runs, side by side.
    pub deployment: Vec<KeyRow>,
    /// Paired points, in run A's plan order.
    pub pairs: Vec<PairDiff>,
    /// Points of either run without a partner.
    pub unpaired: Vec<UnpairedPoint>,
    /// Tests of "no change" made (the Holm family of better/worse).
    pub tests: usize,
    /// Equivalence tests made (the Holm family of `=`).
    pub equivalence_tests: usize,
    /// Comparisons not tested because every value on both sides was equal.
    pub all_equal: usize,
    /// Verdict counts.
    pub tally: Tally,
    /// Caveats.
    pub warnings: Vec<DiffWarning>,
}

impl Tally {
    /// Counts the verdicts of these pairs' comparisons and the points B lost.
    pub(super) fn of(pairs: &[PairDiff]) -> Tally {
        let mut tally = Tally::default();
        for p in pairs {
            for d in p.comparisons() {
                match d.verdict {
                    Verdict::Better => tally.better += 1,
                    Verdict::Worse => tally.worse += 1,
                    Verdict::Equivalent => tally.equivalent += 1,
                    Verdict::NoChange => tally.no_change += 1,
                    Verdict::NotTested => tally.not_tested += 1,
                    Verdict::BetterOnBrokenOutput | Verdict::BetterOnLessAccurateOutput => {
                        tally.better_on_bad_answers += 1
                    }
                }
            }
            if p.lost == Some(Side::B) {
                tally.lost += 1;
            }
            if p.broken == [Side::B] {
                tally.broken += 1;
            }
        }
        tally
    }
}

impl RunDiff {
    /// True when some comparison is a significant regression, run B lost
    /// a point (every request failed) where run A has data, or run B's
    /// answers are broken at a point where run A's are not.
    pub fn has_regression(&self) -> bool {
        self.tally.worse > 0 || self.tally.lost > 0 || self.tally.broken > 0
    }
}
