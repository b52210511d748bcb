//! `qexp diff`: compares two analysed runs point by point. Points are paired
//! by their plan parameters ([`pairing`]); the runs must have asked for the
//! same workload ([`compat`]) unless the user ignores named keys; each
//! (point, metric) gets an estimate of the change (a ratio B/A of geometric
//! means over the trials, or a difference for failures) with an interval and
//! tests, Holm's correction runs over every test of the diff, and a change
//! below the practical threshold (`min_change`) is never better/worse
//! ([`compare`] states the rule). Rendering is qexp-report's job.

pub mod compare;
pub mod compat;
mod metric;
pub mod pairing;
pub mod power;
mod warning;

pub use compare::{
    Families, Method, MetricDiff, Scale, Test, Undecided, Untested, Verdict, NEEDED_POWER,
};
pub use compat::{KeyRow, WorkloadCheck};
pub use metric::{DiffMetric, Direction};
pub use pairing::Side;
pub use warning::DiffWarning;

use crate::anomaly::{Flag, Severity};
use crate::load::RunAnalysis;
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

impl RunSide {
    fn of(r: &RunAnalysis) -> RunSide {
        let m = &r.manifest;
        RunSide {
            run_id: m.run_id.clone(),
            experiment: m.experiment.clone(),
            dir: r.dir.display().to_string(),
            target: m.target.base_url.clone(),
            model: m.target.model.clone(),
            simulated: m.target.simulated,
            trials: m.trials,
            status: m.status,
            plan_hash: m.plan_hash.clone(),
            qexp_version: m.qexp_version.clone(),
        }
    }
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
    /// Counts the verdicts of these comparisons.
    fn of<'a>(comparisons: impl Iterator<Item = &'a MetricDiff>) -> Tally {
        let mut tally = Tally::default();
        for d in comparisons {
            match d.verdict {
                Verdict::Better => tally.better += 1,
                Verdict::Worse => tally.worse += 1,
                Verdict::Equivalent => tally.equivalent += 1,
                Verdict::NoChange => tally.no_change += 1,
                Verdict::NotTested => tally.not_tested += 1,
            }
        }
        tally
    }
}

impl RunDiff {
    /// True when some comparison is a significant regression.
    pub fn has_regression(&self) -> bool {
        self.tally.worse > 0
    }
}

/// A comparison's permutation seed: SplitMix64's increment spreads neighbouring indices apart.
fn seed_for(base: u64, index: usize) -> u64 {
    base.wrapping_add((index as u64 + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15))
}

/// Compares run B against run A; refuses runs that asked for different workloads.
pub fn diff(a: &RunAnalysis, b: &RunAnalysis, opts: &DiffOptions) -> Result<RunDiff, DiffError> {
    if !(opts.alpha > 0.0 && opts.alpha < 1.0) {
        return Err(DiffError::BadAlpha(opts.alpha));
    }
    let (min_change, min_change_source) = match opts.min_change {
        Some(m) => (m, MinChangeSource::Option),
        None => plan_min_change(a),
    };
    if !(min_change > 0.0 && min_change < 1.0) {
        return Err(DiffError::BadMinChange(min_change));
    }
    let (ca, cb) = (&a.manifest.comparability, &b.manifest.comparability);
    let workload = compat::check_workload(ca, cb, &opts.ignore);
    if !workload.blocking.is_empty() {
        return Err(DiffError::Incomparable {
            keys: workload.blocking.clone(),
        });
    }
    let mut warnings = run_warnings(a, b, &workload);

    let metrics: Vec<DiffMetric> = if opts.metrics.is_empty() {
        DiffMetric::ALL.to_vec()
    } else {
        DiffMetric::ALL
            .into_iter()
            .filter(|m| opts.metrics.contains(m))
            .collect()
    };
    let settings = compare::Settings {
        level: opts.level,
        min_change,
    };
    let (pairs_idx, only_a, only_b) = pairing::pair(&a.points, &b.points);
    let mut index = 0;
    let mut pairs: Vec<PairDiff> = pairs_idx
        .iter()
        .map(|&(i, j)| {
            let (pa, pb) = (&a.points[i], &b.points[j]);
            let metrics = metrics
                .iter()
                .map(|&m| {
                    index += 1;
                    let seed = seed_for(opts.seed, index);
                    let requests = pa.point.requests;
                    if opts.paired {
                        let (va, vb) = by_block(m, pa, pb);
                        compare::compare_paired(m, &va, &vb, requests, settings, seed)
                    } else {
                        compare::compare(m, &m.values(pa), &m.values(pb), requests, settings, seed)
                    }
                })
                .collect();
            PairDiff {
                point_a: pa.point.clone(),
                point_b: pb.point.clone(),
                metrics,
            }
        })
        .collect();
    let mut all: Vec<&mut MetricDiff> = pairs
        .iter_mut()
        .flat_map(|p| p.metrics.iter_mut())
        .collect();
    let families = compare::adjust(&mut all, opts.alpha);

    let mut unpaired = Vec::new();
    for (side, run, idx) in [(Side::A, a, &only_a), (Side::B, b, &only_b)] {
        if !idx.is_empty() {
            warnings.push(DiffWarning::Unpaired {
                side,
                count: idx.len(),
            });
        }
        unpaired.extend(idx.iter().map(|&i| UnpairedPoint {
            side,
            point: run.points[i].point.clone(),
            n: run.points[i].n,
        }));
    }

    let comparisons = || pairs.iter().flat_map(|p| p.metrics.iter());
    let tally = Tally::of(comparisons());
    let all_equal = comparisons()
        .filter(|d| d.untested == Some(Untested::AllEqual))
        .count();

    Ok(RunDiff {
        schema_version: DIFF_SCHEMA_VERSION,
        a: RunSide::of(a),
        b: RunSide::of(b),
        alpha: opts.alpha,
        min_change,
        min_change_source,
        level: opts.level,
        seed: opts.seed,
        metrics,
        deployment: compat::rows(&ca.deployment, &cb.deployment),
        workload,
        pairs,
        unpaired,
        tests: families.tests,
        equivalence_tests: families.equivalence_tests,
        all_equal,
        tally,
        warnings,
    })
}

/// The values of `m` at two points, aligned by trial (block) number: the
/// blocks where both sides have a trial.
fn by_block(
    m: DiffMetric,
    a: &crate::PointSummary,
    b: &crate::PointSummary,
) -> (Vec<f64>, Vec<f64>) {
    a.trials
        .iter()
        .filter_map(|ta| {
            let tb = b.trials.iter().find(|tb| tb.trial == ta.trial)?;
            Some((m.of_trial(ta), m.of_trial(tb)))
        })
        .unzip()
}

/// Holm's correction over every comparison of several diffs at once (a
/// run's deployments against its baseline: one table, one family), with
/// the verdicts, test counts and tallies set again.
pub fn adjust_jointly(diffs: &mut [RunDiff], alpha: f64) {
    let mut all: Vec<&mut MetricDiff> = diffs
        .iter_mut()
        .flat_map(|d| d.pairs.iter_mut().flat_map(|p| p.metrics.iter_mut()))
        .collect();
    let families = compare::adjust(&mut all, alpha);
    for d in diffs.iter_mut() {
        d.tests = families.tests;
        d.equivalence_tests = families.equivalence_tests;
        d.tally = Tally::of(d.pairs.iter().flat_map(|p| p.metrics.iter()));
    }
}

/// What the reader of a diff must know about the runs themselves: ignored
/// or unused workload keys, a missing fingerprint, an incomplete run, and
/// each run's flags that question its numbers.
fn run_warnings(a: &RunAnalysis, b: &RunAnalysis, workload: &WorkloadCheck) -> Vec<DiffWarning> {
    let (ca, cb) = (&a.manifest.comparability, &b.manifest.comparability);
    let mut warnings = Vec::new();
    if !workload.ignored.is_empty() {
        warnings.push(DiffWarning::IgnoredWorkload {
            keys: workload.ignored.clone(),
        });
    }
    for key in &workload.unused_ignores {
        let known = workload.keys.iter().any(|r| r.key == *key);
        warnings.push(DiffWarning::UnusedIgnore {
            key: key.clone(),
            known,
        });
    }
    if ca.workload.is_empty() && cb.workload.is_empty() {
        warnings.push(DiffWarning::NoFingerprint);
    }
    let (ta, tb) = (a.manifest.client_timing, b.manifest.client_timing);
    if ta != tb {
        warnings.push(DiffWarning::ClientTiming { a: ta, b: tb });
    }
    for (side, r) in [(Side::A, a), (Side::B, b)] {
        if r.manifest.status != RunStatus::Complete {
            warnings.push(DiffWarning::Incomplete {
                side,
                status: r.manifest.status,
            });
        }
    }
    for (side, r) in [(Side::A, a), (Side::B, b)] {
        warnings.extend(quality_flags(side, r));
    }
    warnings
}

/// The run's anomaly flags that question its numbers (not the curve shape,
/// not failures, which the diff compares itself), as its analysis found them.
fn quality_flags(side: Side, r: &RunAnalysis) -> Option<DiffWarning> {
    let flags: Vec<&Flag> = r
        .flags
        .iter()
        .filter(|f| f.severity() == Severity::Warning)
        .filter(|f| !matches!(f, Flag::WrongDirection { .. } | Flag::Failures { .. }))
        .collect();
    if flags.is_empty() {
        return None;
    }
    let mut kinds: Vec<String> = Vec::new();
    let mut points: Vec<String> = Vec::new();
    for f in &flags {
        if !kinds.iter().any(|k| k == f.title()) {
            kinds.push(f.title().to_string());
        }
        let label = f
            .point_id()
            .and_then(|id| r.points.iter().find(|p| p.point.id == id))
            .map(|p| p.point.label());
        if let Some(l) = label.filter(|l| !points.contains(l)) {
            points.push(l);
        }
    }
    Some(DiffWarning::RunFlags {
        side,
        count: flags.len(),
        kinds,
        points,
    })
}

/// Run A's `analysis.min_change` as its analysis read it from the recorded
/// plan, or the plan default when that plan no longer parses.
fn plan_min_change(r: &RunAnalysis) -> (f64, MinChangeSource) {
    let source = match r.threshold_source {
        crate::anomaly::ThresholdSource::Plan => MinChangeSource::Plan,
        crate::anomaly::ThresholdSource::Defaults { .. } => MinChangeSource::Default,
    };
    (r.thresholds.min_change, source)
}
