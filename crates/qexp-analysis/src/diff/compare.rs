//! One (point, metric) comparison and the decision rule of `qexp diff`.
//!
//! The trial is the experimental unit: requests inside a trial share server
//! state, so they are not independent, and per-request metrics (TTFT, decode
//! rate, E2E) enter as each trial's median over its many requests — precise
//! trial values, with the nesting respected. Per comparison:
//!
//! - **Ratio scale** (every metric except failures): the logs of the trial
//!   values are compared with Student's t ([`mean_diff`]: pooled when both
//!   sides have as many trials, Welch otherwise). The estimate is the ratio of
//!   geometric means `exp(mean ln B - mean ln A)`, with the t-interval turned
//!   into a ratio interval; the p-value tests "no change"; Schuirmann's TOST
//!   tests "the change is within ±`min_change`" (bounds `1/(1+δ)` and `1+δ`,
//!   symmetric on the log scale, so swapping A and B mirrors the verdicts).
//! - **Difference scale** (failed requests, and any metric with a value ≤ 0,
//!   which has no log): the mean difference per trial, tested by an exact
//!   permutation test ([`permutation_p`]), which stays valid for counts that
//!   are constant (0 failures in every trial) or tied. The practical threshold
//!   is `min_change` of the point's requests (a failure-rate change of 2
//!   points by default) or of A's mean for another metric. There is no `=`.
//!
//! Then, once every comparison of the diff is known, `adjust` runs Holm's
//! correction over every "no change" test of the diff and, separately, over
//! every equivalence test, and decides: `better` / `worse` when the
//! Holm-adjusted p is at most alpha AND the estimated change is at least the
//! threshold; `=` when the Holm-adjusted TOST p is at most alpha (the change
//! is shown to lie within ±threshold); `~` otherwise, with the trials per side
//! that would likely decide at the observed spread and change.

use super::metric::{DiffMetric, Direction};
use super::pairing::Side;
use crate::stats::{
    holm_adjust, mean_diff, paired_diff, permutation_floor, permutation_p, sorted_finite,
    trials_needed, trials_to_decide, Summary,
};
use serde::Serialize;

/// The power [`Undecided::needed`] aims at.
pub const NEEDED_POWER: f64 = 0.8;

/// What a comparison concluded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// A significant change of at least the threshold, in the metric's good direction.
    Better,
    /// A significant change of at least the threshold, in the metric's bad direction: a regression.
    Worse,
    /// The change is shown to lie within ±threshold (printed `=`).
    Equivalent,
    /// Neither (printed `~`).
    NoChange,
    /// No test: a side has no data, or a single trial on the ratio scale.
    NotTested,
    /// A significant change in the metric's good direction, measured on
    /// run B's broken answers: not an improvement.
    BetterOnBrokenOutput,
    /// A significant change in the metric's good direction, where run B's
    /// answers are significantly less accurate: not an improvement.
    BetterOnLessAccurateOutput,
}

impl Verdict {
    /// How the verdict is printed.
    pub fn symbol(self) -> &'static str {
        match self {
            Verdict::Better => "better",
            Verdict::Worse => "worse",
            Verdict::Equivalent => "=",
            Verdict::NoChange => "~",
            Verdict::NotTested => "–",
            Verdict::BetterOnBrokenOutput => "faster on broken output",
            Verdict::BetterOnLessAccurateOutput => "faster on less accurate output",
        }
    }
}

/// The scale a metric is compared on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Scale {
    /// Logs of the trial values: the estimate is a ratio B/A.
    Ratio,
    /// The trial values themselves: the estimate is a difference B − A.
    Difference,
}

/// The test behind a comparison.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Method {
    /// Student's t with pooled variance (equal trial counts).
    PooledT,
    /// Welch's t (unequal trial counts).
    WelchT,
    /// The paired t over blocks (deployments of one run): the one-sample t
    /// of the per-block log ratios.
    PairedT,
    /// Exact (or, for many trials, seeded random) permutation test of the mean difference.
    Permutation,
    /// Exact McNemar test on the items both sides graded (accuracy), with
    /// normal two one-sided tests of equivalence.
    McNemar,
}

/// The tests of one comparison.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Test {
    /// How p was computed.
    pub method: Method,
    /// Degrees of freedom of the t statistic (None for a permutation test).
    pub df: Option<f64>,
    /// The estimated change on the test's scale: `ln(B/A)` or `B − A`.
    pub estimate: f64,
    /// The practical threshold on the same scale: `ln(1 + min_change)` or the absolute difference.
    pub margin: f64,
    /// Spread of one trial value on the test's scale (pooled SD), when estimated.
    pub sd: Option<f64>,
    /// Two-sided p of "no change".
    pub p: f64,
    /// `p` Holm-adjusted over every test of the diff.
    pub p_holm: f64,
    /// TOST p of "the change is at least the threshold" (t-tests only).
    pub p_equivalent: Option<f64>,
    /// `p_equivalent` Holm-adjusted over every equivalence test of the diff.
    pub p_equivalent_holm: Option<f64>,
}

/// Why a comparison was not tested.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Untested {
    /// This side has no finite values at the point.
    NoData(Side),
    /// Every value on both sides is the same number (e.g. 0 failures): there is no change to test, and it is not counted among the tests.
    AllEqual,
    /// This side has one trial, so there is no trial-to-trial spread to test against.
    OneTrial(Side),
}

/// What a `~` would need to become a verdict.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Undecided {
    /// Trials per side that would likely decide (power [`NEEDED_POWER`] if the true change is the observed one); None: more than any practical count.
    pub needed: Option<usize>,
    /// True when the observed change is below the threshold, so more trials would aim at `=`; false when they would aim at better/worse.
    pub towards_equivalence: bool,
}

/// One metric at one paired point.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MetricDiff {
    /// The metric.
    pub metric: DiffMetric,
    /// A's trial values summarised.
    pub a: Option<Summary>,
    /// B's trial values summarised.
    pub b: Option<Summary>,
    /// The scale of the estimate and the test.
    pub scale: Scale,
    /// Ratio scale: `exp(mean ln B − mean ln A)`, the ratio of geometric means.
    pub ratio: Option<f64>,
    /// Difference scale: `mean(B) − mean(A)` per trial.
    pub difference: Option<f64>,
    /// Interval of the estimate (ratio or difference) at the diff's level, not adjusted for multiplicity.
    pub ci: Option<(f64, f64)>,
    /// The tests, when made.
    pub test: Option<Test>,
    /// Why no test was made.
    pub untested: Option<Untested>,
    /// The conclusion.
    pub verdict: Verdict,
    /// For a `~`: the trials per side that would likely decide.
    pub undecided: Option<Undecided>,
}

/// Settings shared by every comparison of a diff.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Settings {
    pub level: f64,
    pub min_change: f64,
}

/// Compares one metric's trial values at a point of `requests` requests per trial; the verdict waits for [`adjust`].
pub(crate) fn compare(
    metric: DiffMetric,
    a: &[f64],
    b: &[f64],
    requests: u32,
    s: Settings,
    seed: u64,
) -> MetricDiff {
    compare_with(metric, a, b, None, requests, s, seed)
}

/// [`compare`] for values paired by block: `a[i]` and `b[i]` were measured
/// in the same block. The ratio scale uses the paired t over the blocks
/// where both sides have a value; the difference scale (failures) keeps
/// the two-sample permutation test.
pub(crate) fn compare_paired(
    metric: DiffMetric,
    a: &[f64],
    b: &[f64],
    requests: u32,
    s: Settings,
    seed: u64,
) -> MetricDiff {
    compare_with(metric, a, b, Some((a, b)), requests, s, seed)
}

fn compare_with(
    metric: DiffMetric,
    a: &[f64],
    b: &[f64],
    pairs: Option<(&[f64], &[f64])>,
    requests: u32,
    s: Settings,
    seed: u64,
) -> MetricDiff {
    let (sa, sb) = (sorted_finite(a), sorted_finite(b));
    let positive = sa.iter().chain(&sb).all(|&v| v > 0.0);
    let scale = if metric == DiffMetric::Failures || !positive {
        Scale::Difference
    } else {
        Scale::Ratio
    };
    let mut d = MetricDiff {
        metric,
        a: Summary::of(&sa),
        b: Summary::of(&sb),
        scale,
        ratio: None,
        difference: None,
        ci: None,
        test: None,
        untested: None,
        verdict: Verdict::NotTested,
        undecided: None,
    };
    if sa.is_empty() {
        d.untested = Some(Untested::NoData(Side::A));
        return d;
    }
    if sb.is_empty() {
        d.untested = Some(Untested::NoData(Side::B));
        return d;
    }
    if sa.iter().chain(&sb).all(|&v| v == sa[0]) {
        d.untested = Some(Untested::AllEqual);
        d.verdict = Verdict::NoChange;
        return d;
    }
    match (scale, pairs) {
        (Scale::Ratio, Some((pa, pb))) => paired_ratio_test(&mut d, pa, pb, s),
        (Scale::Ratio, None) => ratio_test(&mut d, &sa, &sb, s, seed),
        (Scale::Difference, _) => difference_test(&mut d, &sa, &sb, requests, s, seed),
    }
    d
}

/// The paired t over the per-block log ratios `ln b_i − ln a_i`.
fn paired_ratio_test(d: &mut MetricDiff, a: &[f64], b: &[f64], s: Settings) {
    let (la, lb): (Vec<f64>, Vec<f64>) = a
        .iter()
        .zip(b)
        .filter(|(x, y)| x.is_finite() && y.is_finite())
        .map(|(x, y)| (x.ln(), y.ln()))
        .unzip();
    let Some(md) = paired_diff(&la, &lb) else {
        d.untested = Some(Untested::OneTrial(Side::A));
        return;
    };
    let margin = s.min_change.ln_1p();
    d.ratio = Some(md.diff.exp());
    d.ci = md.interval(s.level).map(|(lo, hi)| (lo.exp(), hi.exp()));
    // Every block moved by the same ratio: no spread, and the sign test of
    // n identical signs is the exact p.
    let p = md.p_two_sided().unwrap_or_else(|| {
        if md.diff == 0.0 {
            1.0
        } else {
            0.5f64.powi(la.len() as i32 - 1)
        }
    });
    d.test = Some(Test {
        method: Method::PairedT,
        df: Some(md.df),
        estimate: md.diff,
        margin,
        sd: Some(md.sd()),
        p,
        p_holm: f64::NAN,
        p_equivalent: md.p_equivalent(margin),
        p_equivalent_holm: None,
    });
}

fn ratio_test(d: &mut MetricDiff, sa: &[f64], sb: &[f64], s: Settings, seed: u64) {
    let (la, lb): (Vec<f64>, Vec<f64>) = (
        sa.iter().map(|v| v.ln()).collect(),
        sb.iter().map(|v| v.ln()).collect(),
    );
    let Some(md) = mean_diff(&la, &lb) else {
        let side = if la.len() < 2 { Side::A } else { Side::B };
        d.untested = Some(Untested::OneTrial(side));
        let mean = |x: &[f64]| x.iter().sum::<f64>() / x.len() as f64;
        d.ratio = Some((mean(&lb) - mean(&la)).exp());
        return;
    };
    let margin = s.min_change.ln_1p();
    d.ratio = Some(md.diff.exp());
    d.ci = md.interval(s.level).map(|(lo, hi)| (lo.exp(), hi.exp()));
    // Both sides constant but different: no spread for t, the permutation p is exact.
    let (method, p, df, sd) = match md.p_two_sided() {
        Some(p) if md.pooled => (Method::PooledT, p, Some(md.df), Some(md.sd())),
        Some(p) => (Method::WelchT, p, Some(md.df), Some(md.sd())),
        None => (
            Method::Permutation,
            permutation_p(&la, &lb, seed).unwrap_or(1.0),
            None,
            None,
        ),
    };
    d.test = Some(Test {
        method,
        df,
        estimate: md.diff,
        margin,
        sd,
        p,
        p_holm: f64::NAN,
        p_equivalent: md.p_equivalent(margin),
        p_equivalent_holm: None,
    });
}

fn difference_test(
    d: &mut MetricDiff,
    sa: &[f64],
    sb: &[f64],
    requests: u32,
    s: Settings,
    seed: u64,
) {
    let mean = |x: &[f64]| x.iter().sum::<f64>() / x.len() as f64;
    let estimate = mean(sb) - mean(sa);
    let reference = if d.metric == DiffMetric::Failures {
        f64::from(requests)
    } else {
        mean(sa).abs()
    };
    d.difference = Some(estimate);
    let md = mean_diff(sa, sb);
    d.ci = md.and_then(|m| m.interval(s.level));
    d.test = Some(Test {
        method: Method::Permutation,
        df: None,
        estimate,
        margin: s.min_change * reference,
        sd: md.map(|m| m.sd()),
        p: permutation_p(sa, sb, seed).unwrap_or(1.0),
        p_holm: f64::NAN,
        p_equivalent: None,
        p_equivalent_holm: None,
    });
}

/// Test counts of a diff: the two Holm families.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Families {
    /// Tests of "no change" (the family of better/worse).
    pub tests: usize,
    /// Equivalence tests (the family of `=`).
    pub equivalence_tests: usize,
}

/// Holm-adjusts every test across `diffs`, sets the verdicts and the trials a `~` would need.
pub(crate) fn adjust(diffs: &mut [&mut MetricDiff], alpha: f64) -> Families {
    let raw: Vec<f64> = diffs
        .iter()
        .map(|d| d.test.map_or(f64::NAN, |t| t.p))
        .collect();
    let raw_eq: Vec<f64> = diffs
        .iter()
        .map(|d| d.test.and_then(|t| t.p_equivalent).unwrap_or(f64::NAN))
        .collect();
    let fam = Families {
        tests: raw.iter().filter(|p| !p.is_nan()).count(),
        equivalence_tests: raw_eq.iter().filter(|p| !p.is_nan()).count(),
    };
    let (adj, adj_eq) = (holm_adjust(&raw), holm_adjust(&raw_eq));
    for ((d, p_holm), p_eq_holm) in diffs.iter_mut().zip(adj).zip(adj_eq) {
        let metric = d.metric;
        let (n_a, n_b) = (
            d.a.as_ref().map_or(0, |s| s.n),
            d.b.as_ref().map_or(0, |s| s.n),
        );
        let Some(t) = d.test.as_mut() else { continue };
        t.p_holm = p_holm;
        t.p_equivalent_holm = t.p_equivalent.map(|_| p_eq_holm);
        let large = t.estimate.abs() >= t.margin;
        d.verdict = if p_holm <= alpha && large {
            let up = t.estimate > 0.0;
            let good = match metric.direction() {
                Direction::HigherIsBetter => up,
                Direction::LowerIsBetter => !up,
            };
            if good {
                Verdict::Better
            } else {
                Verdict::Worse
            }
        } else if t.p_equivalent_holm.is_some_and(|p| p <= alpha) {
            Verdict::Equivalent
        } else {
            Verdict::NoChange
        };
        if d.verdict == Verdict::NoChange {
            d.undecided = undecided(t, n_a, n_b, alpha, fam);
        }
    }
    fam
}

/// The trials per side that would likely turn a `~` into a verdict, at the
/// family's Bonferroni level (Holm's first step, so a safe bound).
fn undecided(t: &Test, n_a: usize, n_b: usize, alpha: f64, fam: Families) -> Option<Undecided> {
    let towards_equivalence = t.estimate.abs() < t.margin;
    if t.method == Method::Permutation {
        // Without equivalence, only the exact test's floor can be named.
        let level = alpha / fam.tests.max(1) as f64;
        return (permutation_floor(n_a, n_b) > level).then(|| Undecided {
            needed: Some(trials_needed(level)).filter(|&n| n != usize::MAX),
            towards_equivalence: false,
        });
    }
    let family = if towards_equivalence {
        fam.equivalence_tests
    } else {
        fam.tests
    };
    let level = alpha / family.max(1) as f64;
    Some(Undecided {
        needed: trials_to_decide(t.sd?, t.estimate, t.margin, level, NEEDED_POWER),
        towards_equivalence,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const ALPHA: f64 = 0.05;
    const S: Settings = Settings {
        level: 0.95,
        min_change: 0.02,
    };

    fn run(metric: DiffMetric, a: &[f64], b: &[f64]) -> MetricDiff {
        let mut d = compare(metric, a, b, 8, S, 1);
        adjust(&mut [&mut d], ALPHA);
        d
    }

    const LOW: [f64; 5] = [10.0, 10.1, 10.2, 10.05, 9.95];
    const HIGH: [f64; 5] = [11.0, 11.1, 11.2, 11.05, 10.95];

    #[test]
    fn separated_samples_get_a_direction_aware_verdict() {
        // Higher throughput in B: better. Higher latency in B: worse.
        assert_eq!(
            run(DiffMetric::AggTokS, &LOW, &HIGH).verdict,
            Verdict::Better
        );
        assert_eq!(run(DiffMetric::TtftS, &LOW, &HIGH).verdict, Verdict::Worse);
        assert_eq!(
            run(DiffMetric::AggTokS, &HIGH, &LOW).verdict,
            Verdict::Worse
        );
        assert_eq!(run(DiffMetric::E2eS, &HIGH, &LOW).verdict, Verdict::Better);
        let d = run(DiffMetric::AggTokS, &LOW, &HIGH);
        let r = d.ratio.unwrap_or(f64::NAN);
        assert!((r - 1.099_410_496_816_731).abs() < 1e-12, "{r}"); // numpy: exp(mean(ln HIGH) - mean(ln LOW))
        let (lo, hi) = d.ci.unwrap_or((f64::NAN, f64::NAN));
        assert!(lo < r && r < hi && hi - lo < 0.03, "{lo} {hi}");
        let t = d.test.unwrap_or_else(|| panic!("tested"));
        assert_eq!((t.method, t.df), (Method::PooledT, Some(8.0)));
        assert!(t.p == t.p_holm && t.p < 1e-6, "{t:?}");
        assert_eq!(d.undecided, None);
    }

    #[test]
    fn a_certain_change_below_the_threshold_is_equivalent_not_better() {
        // B is 1% faster in every trial, with 0.1% noise: certain, but under 2%.
        let a = [100.0, 100.1, 99.9, 100.05, 99.95];
        let b: Vec<f64> = a.iter().rev().map(|v| v * 1.01).collect();
        let d = run(DiffMetric::AggTokS, &a, &b);
        let t = d.test.unwrap_or_else(|| panic!("tested"));
        assert!(t.p < 1e-6, "significant: {t:?}");
        assert_eq!(d.verdict, Verdict::Equivalent);
        assert_eq!(d.verdict.symbol(), "=");
        // With 3% the same certainty is a verdict.
        let b: Vec<f64> = a.iter().map(|v| v * 1.03).collect();
        assert_eq!(run(DiffMetric::AggTokS, &a, &b).verdict, Verdict::Better);
    }

    #[test]
    fn overlapping_noisy_samples_are_no_change_and_say_what_n_would_decide() {
        let d = run(
            DiffMetric::AggTokS,
            &[10.0, 11.0, 9.0, 10.5],
            &[10.4, 11.2, 9.6, 11.0],
        );
        assert_eq!(d.verdict, Verdict::NoChange);
        assert_eq!(d.verdict.symbol(), "~");
        let u = d.undecided.unwrap_or_else(|| panic!("undecided"));
        // A ~4% change with ~8% spread: dozens of trials, towards a verdict.
        assert!(!u.towards_equivalence);
        let n = u.needed.unwrap_or(0);
        assert!((20..200).contains(&n), "{n}");
    }

    #[test]
    fn swapping_sides_mirrors_ratio_and_interval() {
        let x = run(DiffMetric::TtftS, &LOW, &HIGH);
        let y = run(DiffMetric::TtftS, &HIGH, &LOW);
        let (rx, ry) = (x.ratio.unwrap_or(0.0), y.ratio.unwrap_or(0.0));
        assert!((rx * ry - 1.0).abs() < 1e-12);
        let ((lx, hx), (ly, hy)) = (x.ci.unwrap_or_default(), y.ci.unwrap_or_default());
        assert!((lx * hy - 1.0).abs() < 1e-12 && (hx * ly - 1.0).abs() < 1e-12);
    }

    #[test]
    fn failures_use_a_permutation_test_of_the_difference() {
        // Every B trial fails 2 of 8 requests: 25 points of failure rate.
        let d = run(DiffMetric::Failures, &[0.0; 5], &[2.0; 5]);
        assert_eq!(d.scale, Scale::Difference);
        assert_eq!((d.ratio, d.difference), (None, Some(2.0)));
        let t = d.test.unwrap_or_else(|| panic!("tested"));
        assert_eq!(t.method, Method::Permutation);
        assert!((t.p - 2.0 / 252.0).abs() < 1e-15);
        assert_eq!(d.verdict, Verdict::Worse);
        // One failure in one of five trials is no evidence.
        let d = run(DiffMetric::Failures, &[0.0; 5], &[0.0, 0.0, 1.0, 0.0, 0.0]);
        assert_eq!(d.verdict, Verdict::NoChange);
        // Three trials per side can never reach 0.05 by permutation: say how many can.
        let d = run(DiffMetric::Failures, &[0.0; 3], &[2.0; 3]);
        assert_eq!(d.verdict, Verdict::NoChange);
        let u = d.undecided.unwrap_or_else(|| panic!("undecided"));
        assert_eq!(u.needed, Some(4));
    }

    #[test]
    fn unequal_trial_counts_are_not_told_they_can_never_decide() {
        // 5 vs 3 trials: the permutation floor is 1/C(8, 3) = 1/56 ≈ 0.018,
        // below the 0.025 each of two tests gets, so no count of trials is
        // named as needed (2/56 ≈ 0.036 would have claimed one).
        let mut x = compare(DiffMetric::Failures, &[0.0; 5], &[0.0, 0.0, 1.0], 8, S, 1);
        let mut y = compare(DiffMetric::Failures, &[0.0; 5], &[0.0, 1.0, 0.0], 8, S, 2);
        let fam = adjust(&mut [&mut x, &mut y], ALPHA);
        assert_eq!(fam.tests, 2);
        assert_eq!(x.verdict, Verdict::NoChange);
        assert_eq!(x.undecided, None);
        // Separated, they reach the floor, and it decides.
        let d = run(DiffMetric::Failures, &[0.0; 5], &[2.0; 3]);
        let t = d.test.unwrap_or_else(|| panic!("tested"));
        assert!((t.p - 1.0 / 56.0).abs() < 1e-15, "{t:?}");
        assert_eq!(d.verdict, Verdict::Worse);
    }

    #[test]
    fn all_equal_is_not_a_test() {
        let mut d = compare(DiffMetric::Failures, &[0.0; 3], &[0.0; 5], 8, S, 1);
        assert_eq!(adjust(&mut [&mut d], 0.05), Families::default());
        assert_eq!(d.untested, Some(Untested::AllEqual));
        assert_eq!((d.verdict, d.test), (Verdict::NoChange, None));
    }

    #[test]
    fn non_positive_values_fall_back_to_the_difference_scale() {
        let d = run(DiffMetric::AggTokS, &[0.0, 10.0, 10.0], &[10.0, 10.0, 10.0]);
        assert_eq!(d.scale, Scale::Difference);
        assert!(d.ratio.is_none() && d.difference.is_some());
    }

    #[test]
    fn missing_side_and_single_trials_are_not_tested() {
        let d = run(DiffMetric::TtftS, &[f64::NAN, f64::NAN], &[1.0, 2.0]);
        assert_eq!(d.untested, Some(Untested::NoData(Side::A)));
        assert_eq!(d.verdict, Verdict::NotTested);
        let d = run(DiffMetric::TtftS, &[1.0], &[]);
        assert_eq!(d.untested, Some(Untested::NoData(Side::B)));
        let d = run(DiffMetric::TtftS, &[1.0, 1.1], &[2.0]);
        assert_eq!(d.untested, Some(Untested::OneTrial(Side::B)));
        assert_eq!((d.verdict, d.ratio.is_some()), (Verdict::NotTested, true));
    }

    #[test]
    fn two_trials_per_side_can_decide_a_large_clean_change() {
        let d = run(DiffMetric::DecodeTokS, &[70.0, 70.7], &[84.0, 84.5]);
        assert_eq!(d.verdict, Verdict::Better);
    }

    #[test]
    fn holm_counts_every_test_made() {
        let (a, b) = ([1.0, 1.2, 1.1, 0.9], [1.3, 1.5, 1.4, 1.2]);
        let mut x = compare(DiffMetric::AggTokS, &a, &b, 8, S, 1);
        let mut y = compare(DiffMetric::AggTokS, &a, &b, 8, S, 2);
        let mut z = compare(DiffMetric::Failures, &[0.0; 4], &[0.0; 4], 8, S, 3);
        let p = x.test.map_or(f64::NAN, |t| t.p);
        let fam = adjust(&mut [&mut x, &mut y, &mut z], 0.05);
        assert_eq!((fam.tests, fam.equivalence_tests), (2, 2));
        let p_holm = x.test.map_or(f64::NAN, |t| t.p_holm);
        assert!((p_holm - 2.0 * p).abs() < 1e-15, "{p} {p_holm}");
    }
}
