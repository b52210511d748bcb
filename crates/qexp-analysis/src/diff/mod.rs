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
pub(crate) mod run_diff;
mod warning;

pub use compare::{
    Families, Method, MetricDiff, Scale, Test, Undecided, Untested, Verdict, NEEDED_POWER,
};
pub use compat::{KeyRow, WorkloadCheck};
pub use metric::{DiffMetric, Direction};
pub use pairing::Side;
pub use run_diff::{
    ClassDiff, DiffError, DiffOptions, MinChangeSource, PairDiff, RunDiff, RunSide, Tally,
    UnpairedPoint, DIFF_SCHEMA_VERSION,
};
pub use warning::DiffWarning;

use crate::anomaly::flag::{Flag, Severity};
use crate::run::RunAnalysis;
use qexp_store::RunStatus;

impl RunSide {
    fn of(r: &RunAnalysis) -> RunSide {
        let m = &r.manifest;
        RunSide {
            run_id: m.run_id.clone(),
            experiment: m.experiment.clone(),
            dir: r.dir.display().to_string(),
            target: m.target_label(),
            model: m.target.model.clone(),
            simulated: m.target.simulated,
            trials: m.trials,
            status: m.status,
            plan_hash: m.plan_hash.clone(),
            qexp_version: m.qexp_version.clone(),
        }
    }
}

/// A comparison's permutation seed: SplitMix64's increment spreads neighbouring indices apart.
fn seed_for(base: u64, index: usize) -> u64 {
    base.wrapping_add((index as u64 + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15))
}

/// Compares run B against run A; refuses runs that asked for different workloads.
pub fn diff(a: &RunAnalysis, b: &RunAnalysis, opts: &DiffOptions) -> Result<RunDiff, DiffError> {
    for run in [a, b] {
        if let Some(i) = run.manifest.import.as_ref().filter(|i| i.summaries_only) {
            return Err(DiffError::SummariesOnly {
                run_id: run.manifest.run_id.clone(),
                tool: i.tool.clone(),
            });
        }
    }
    let (min_change, min_change_source) = checked_limits(a, opts)?;
    let (ca, cb) = (&a.manifest.comparability, &b.manifest.comparability);
    let workload = compat::check_workload(ca, cb, &opts.ignore);
    if !workload.blocking.is_empty() {
        return Err(DiffError::Incomparable {
            keys: workload.blocking.clone(),
        });
    }
    let mut warnings = run_warnings(a, b, &workload);
    let mut metrics = chosen_metrics(opts, a.manifest.target.api);
    let settings = compare::Settings {
        level: opts.level,
        min_change,
    };
    let (pairs_idx, only_a, only_b) = pairing::pair(&a.points, &b.points);
    let mut pairs = compare_pairs(a, b, &pairs_idx, &metrics, settings, opts);
    // What a token costs, where some pair compared it.
    metrics.extend(DiffMetric::COST.into_iter().filter(|m| {
        pairs
            .iter()
            .any(|p| p.metrics.iter().any(|d| d.metric == *m))
    }));
    let mut all: Vec<&mut MetricDiff> = pairs
        .iter_mut()
        .flat_map(PairDiff::comparisons_mut)
        .collect();
    let families = compare::adjust(&mut all, opts.alpha);
    respect_answers(&mut pairs);
    let unpaired = unpaired_points(a, b, &only_a, &only_b, &mut warnings);
    warnings.extend(lost_points(a, b, &pairs_idx, &pairs));

    let tally = Tally::of(&pairs);
    let all_equal = pairs
        .iter()
        .flat_map(PairDiff::comparisons)
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

/// The options' alpha, checked, and the practical threshold (from the
/// options, else from run A's plan) with where it came from, checked.
fn checked_limits(
    a: &RunAnalysis,
    opts: &DiffOptions,
) -> Result<(f64, MinChangeSource), DiffError> {
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
    Ok((min_change, min_change_source))
}

/// The metrics the options ask for, in the canonical order; when none,
/// every metric the run's API has ([`DiffMetric::of_api`]).
fn chosen_metrics(opts: &DiffOptions, api: qexp_plan::ApiKind) -> Vec<DiffMetric> {
    if opts.metrics.is_empty() {
        DiffMetric::of_api(api).to_vec()
    } else {
        DiffMetric::DIFFABLE
            .into_iter()
            .filter(|m| opts.metrics.contains(m))
            .collect()
    }
}

/// Every metric of every paired point compared, each comparison with its
/// own permutation seed (numbered in pair, then metric order); not yet
/// Holm-adjusted.
fn compare_pairs(
    a: &RunAnalysis,
    b: &RunAnalysis,
    pairs_idx: &[(usize, usize)],
    metrics: &[DiffMetric],
    settings: compare::Settings,
    opts: &DiffOptions,
) -> Vec<PairDiff> {
    let mut index = 0;
    pairs_idx
        .iter()
        .map(|&(i, j)| {
            let (pa, pb) = (&a.points[i], &b.points[j]);
            // What a token costs joins the family wherever both sides have it.
            let cost = DiffMetric::COST.into_iter().filter(|m| {
                (opts.metrics.is_empty() || opts.metrics.contains(m))
                    && [pa, pb]
                        .iter()
                        .all(|p| m.values(p).iter().any(|v| v.is_finite()))
            });
            let mut metrics: Vec<MetricDiff> = metrics
                .iter()
                .copied()
                .chain(cost)
                .map(|m| {
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
            // Accuracy joins the family wherever a side graded items.
            metrics.extend(crate::accuracy::compare(pa, pb, settings.level));
            let classes = compare_classes(a, b, (pa, pb), settings, opts, &mut index);
            PairDiff {
                point_a: pa.point.clone(),
                point_b: pb.point.clone(),
                metrics,
                lost: lost_by(pa, pb),
                broken: [(Side::A, pa), (Side::B, pb)]
                    .into_iter()
                    .filter(|(_, p)| p.answers.broken())
                    .map(|(side, _)| side)
                    .collect(),
                classes,
            }
        })
        .collect()
}

/// The metrics compared class by class: a class's median TTFT, decode
/// rate and E2E.
const CLASS_METRICS: [DiffMetric; 3] =
    [DiffMetric::TtftS, DiffMetric::DecodeTokS, DiffMetric::E2eS];

/// Each request class both runs measured at a paired point, where both
/// sent more than one class there: its median TTFT, decode rate and E2E per trial
/// compared (paired by block when the options say so), seeds numbered on
/// from `index`.
fn compare_classes(
    a: &RunAnalysis,
    b: &RunAnalysis,
    (pa, pb): (&crate::PointSummary, &crate::PointSummary),
    settings: compare::Settings,
    opts: &DiffOptions,
    index: &mut usize,
) -> Vec<ClassDiff> {
    let (ca, cb): (Vec<_>, Vec<_>) = (
        a.classes.at(pa.point.id).collect(),
        b.classes.at(pb.point.id).collect(),
    );
    if ca.len() < 2 || cb.len() < 2 {
        return Vec::new();
    }
    let wanted = CLASS_METRICS
        .into_iter()
        .filter(|m| opts.metrics.is_empty() || opts.metrics.contains(m));
    let wanted: Vec<DiffMetric> = wanted.collect();
    ca.iter()
        .filter_map(|x| Some((x, cb.iter().find(|y| y.class == x.class)?)))
        .map(|(x, y)| {
            let metrics = wanted
                .iter()
                .map(|&m| {
                    *index += 1;
                    let seed = seed_for(opts.seed, *index);
                    let of = |t: &crate::classes::ClassTrial| match m {
                        DiffMetric::TtftS => t.ttft_s,
                        DiffMetric::DecodeTokS => t.decode_tok_s,
                        _ => t.e2e_s,
                    };
                    let requests = pa.point.requests;
                    if opts.paired {
                        let (va, vb): (Vec<f64>, Vec<f64>) = x
                            .trials
                            .iter()
                            .filter_map(|ta| {
                                let tb = y.trials.iter().find(|tb| tb.trial == ta.trial)?;
                                Some((of(ta), of(tb)))
                            })
                            .unzip();
                        compare::compare_paired(m, &va, &vb, requests, settings, seed)
                    } else {
                        let values = |c: &crate::classes::ClassPoint| -> Vec<f64> {
                            c.trials.iter().map(of).collect()
                        };
                        compare::compare(m, &values(x), &values(y), requests, settings, seed)
                    }
                })
                .collect();
            ClassDiff {
                class: x.class.clone(),
                metrics,
            }
        })
        .collect()
}

/// The run that lost a paired point: it measured requests there and every
/// one failed, while the other run has successful ones. A run that measured
/// nothing there (it stopped first) lost nothing: the diff compares only
/// what it finished.
fn lost_by(a: &crate::PointSummary, b: &crate::PointSummary) -> Option<Side> {
    let has_data = |p: &crate::PointSummary| p.failures < p.requests;
    if b.lost() && has_data(a) {
        Some(Side::B)
    } else if a.lost() && has_data(b) {
        Some(Side::A)
    } else {
        None
    }
}

/// A warning for each paired point a run lost, in pair order.
fn lost_points(
    a: &RunAnalysis,
    b: &RunAnalysis,
    pairs_idx: &[(usize, usize)],
    pairs: &[PairDiff],
) -> Vec<DiffWarning> {
    pairs_idx
        .iter()
        .zip(pairs)
        .filter_map(|(&(i, j), pair)| {
            let side = pair.lost?;
            let p = match side {
                Side::A => &a.points[i],
                Side::B => &b.points[j],
            };
            Some(DiffWarning::Lost {
                side,
                point: p.point.label(),
                failures: p.failures,
                requests: p.requests,
            })
        })
        .collect()
}

/// The points of either run without a partner, A's first, with a warning
/// per side that has any.
fn unpaired_points(
    a: &RunAnalysis,
    b: &RunAnalysis,
    only_a: &[usize],
    only_b: &[usize],
    warnings: &mut Vec<DiffWarning>,
) -> Vec<UnpairedPoint> {
    let mut unpaired = Vec::new();
    for (side, run, idx) in [(Side::A, a, only_a), (Side::B, b, only_b)] {
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
    unpaired
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
        .flat_map(|d| d.pairs.iter_mut().flat_map(PairDiff::comparisons_mut))
        .collect();
    let families = compare::adjust(&mut all, alpha);
    for d in diffs.iter_mut() {
        respect_answers(&mut d.pairs);
        d.tests = families.tests;
        d.equivalence_tests = families.equivalence_tests;
        d.tally = Tally::of(&d.pairs);
    }
}

/// An improvement measured on broken answers is no improvement, whether
/// or not A's answers are broken too (a loop is the easiest text to
/// draft); nor one measured on significantly less accurate answers. Run
/// after every Holm adjustment, which sets verdicts afresh.
fn respect_answers(pairs: &mut [PairDiff]) {
    for p in pairs {
        let less_accurate = p
            .metrics
            .iter()
            .any(|d| d.metric == DiffMetric::Accuracy && d.verdict == Verdict::Worse);
        let instead = match (p.broken.contains(&Side::B), less_accurate) {
            (true, _) => Verdict::BetterOnBrokenOutput,
            (false, true) => Verdict::BetterOnLessAccurateOutput,
            (false, false) => continue,
        };
        for d in p.comparisons_mut() {
            if d.verdict == Verdict::Better && d.metric != DiffMetric::Accuracy {
                d.verdict = instead;
            }
        }
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
    let imported: Vec<DiffWarning> = [(Side::A, a), (Side::B, b)]
        .into_iter()
        .filter_map(|(side, r)| {
            let tool = r.manifest.import.as_ref()?.tool.clone();
            Some(DiffWarning::Imported { side, tool })
        })
        .collect();
    let (ta, tb) = (a.manifest.client_timing, b.manifest.client_timing);
    // An imported run has no qexp client to name: its own warning says who timed it.
    if imported.is_empty() && ta != tb {
        warnings.push(DiffWarning::ClientTiming { a: ta, b: tb });
    }
    warnings.extend(imported);
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
        crate::anomaly::thresholds::ThresholdSource::Plan => MinChangeSource::Plan,
        crate::anomaly::thresholds::ThresholdSource::Defaults { .. } => MinChangeSource::Default,
    };
    (r.thresholds.min_change, source)
}
