//! One (point, metric) comparison: both samples' summaries, the ratio of
//! medians B/A with a seeded percentile-bootstrap interval
//! ([`bootstrap_ratio_ci`]), a two-sided Mann–Whitney U test over the trial
//! values ([`mann_whitney_u`], exact for small samples without ties), then,
//! once every test of the diff is known, Holm's adjustment ([`holm_adjust`])
//! and a verdict that knows which way the metric improves.
//!
//! The direction of a significant change is read from U itself (B's values
//! tend to be larger when A's U is below `n_a n_b / 2`), so the verdict never
//! contradicts the test that made it significant.

use super::metric::{DiffMetric, Direction};
use super::pairing::Side;
use crate::stats::{
    bootstrap_ratio_ci, holm_adjust, mann_whitney_u, min_attainable_p, sorted_finite,
    trials_needed, Summary,
};
use serde::Serialize;

/// What a comparison concluded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// Significant after correction, in the metric's good direction.
    Better,
    /// Significant after correction, in the metric's bad direction: a regression.
    Worse,
    /// Not significant after correction (printed `~`).
    NoChange,
    /// No test: a side has no data.
    NotTested,
}

impl Verdict {
    /// How the verdict is printed.
    pub fn symbol(self) -> &'static str {
        match self {
            Verdict::Better => "better",
            Verdict::Worse => "worse",
            Verdict::NoChange => "~",
            Verdict::NotTested => "–",
        }
    }
}

/// The Mann–Whitney test of one comparison.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct MwTest {
    /// U of sample A.
    pub u: f64,
    /// Two-sided p-value.
    pub p: f64,
    /// Holm-adjusted p-value over every test of the diff.
    pub p_holm: f64,
    /// True when `p` comes from the exact null distribution.
    pub exact: bool,
    /// True when B's values tend to be larger than A's.
    pub b_larger: bool,
}

/// Why a comparison was not tested.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Untested {
    /// This side has no finite values at the point.
    NoData(Side),
    /// Every value on both sides is the same number (e.g. 0 failures): there is no change to test, and it is not counted among the tests.
    AllEqual,
}

/// Sample sizes too small for the exact test ever to reach alpha.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct CannotReach {
    /// Trials with a value in A.
    pub n_a: usize,
    /// Trials with a value in B.
    pub n_b: usize,
    /// The smallest p-value these sizes can give.
    pub min_p: f64,
    /// Trials per side that could reach alpha.
    pub needed: usize,
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
    /// median(B) / median(A); None when median(A) is 0 or a side has no data.
    pub ratio: Option<f64>,
    /// Bootstrap interval of the ratio at the diff's level.
    pub ci: Option<(f64, f64)>,
    /// The test, when one was made.
    pub test: Option<MwTest>,
    /// Why no test was made.
    pub untested: Option<Untested>,
    /// The conclusion.
    pub verdict: Verdict,
    /// Set when the sample sizes can never give p <= alpha.
    pub cannot_reach: Option<CannotReach>,
}

/// Settings shared by every comparison of a diff.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Settings {
    pub alpha: f64,
    pub level: f64,
    pub resamples: usize,
}

/// Compares one metric's trial values; the verdict waits for [`adjust`].
pub(crate) fn compare(
    metric: DiffMetric,
    a: &[f64],
    b: &[f64],
    s: Settings,
    seed: u64,
) -> MetricDiff {
    let (sa, sb) = (sorted_finite(a), sorted_finite(b));
    let (summary_a, summary_b) = (Summary::of(&sa), Summary::of(&sb));
    let ratio = match (&summary_a, &summary_b) {
        (Some(x), Some(y)) if x.median != 0.0 => {
            Some(y.median / x.median).filter(|r| r.is_finite())
        }
        _ => None,
    };
    let mut d = MetricDiff {
        metric,
        a: summary_a,
        b: summary_b,
        ratio,
        ci: None,
        test: None,
        untested: None,
        verdict: Verdict::NotTested,
        cannot_reach: None,
    };
    if sa.is_empty() {
        d.untested = Some(Untested::NoData(Side::A));
        return d;
    }
    if sb.is_empty() {
        d.untested = Some(Untested::NoData(Side::B));
        return d;
    }
    d.ci = bootstrap_ratio_ci(&sa, &sb, s.level, s.resamples, seed);
    let first = sa[0];
    if sa.iter().chain(&sb).all(|&v| v == first) {
        d.untested = Some(Untested::AllEqual);
        d.verdict = Verdict::NoChange;
        return d;
    }
    if let Some(r) = mann_whitney_u(&sa, &sb) {
        let (n_a, n_b) = (sa.len(), sb.len());
        d.test = Some(MwTest {
            u: r.u,
            p: r.p_value,
            p_holm: f64::NAN,
            exact: r.exact,
            b_larger: r.u < (n_a * n_b) as f64 / 2.0,
        });
        let min_p = min_attainable_p(n_a, n_b);
        if min_p > s.alpha {
            d.cannot_reach = Some(CannotReach {
                n_a,
                n_b,
                min_p,
                needed: trials_needed(s.alpha),
            });
        }
    }
    d
}

/// Holm-adjusts every test made across `diffs` and sets the verdicts; returns the number of tests.
pub(crate) fn adjust(diffs: &mut [&mut MetricDiff], alpha: f64) -> usize {
    let raw: Vec<f64> = diffs
        .iter()
        .map(|d| d.test.map_or(f64::NAN, |t| t.p))
        .collect();
    let adjusted = holm_adjust(&raw);
    for (d, p_holm) in diffs.iter_mut().zip(adjusted) {
        let metric = d.metric;
        let Some(t) = d.test.as_mut() else { continue };
        t.p_holm = p_holm;
        let good = match metric.direction() {
            Direction::HigherIsBetter => t.b_larger,
            Direction::LowerIsBetter => !t.b_larger,
        };
        d.verdict = if p_holm <= alpha {
            if good {
                Verdict::Better
            } else {
                Verdict::Worse
            }
        } else {
            Verdict::NoChange
        };
    }
    raw.iter().filter(|p| !p.is_nan()).count()
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: Settings = Settings {
        alpha: 0.05,
        level: 0.95,
        resamples: 500,
    };

    fn run(metric: DiffMetric, a: &[f64], b: &[f64]) -> MetricDiff {
        let mut d = compare(metric, a, b, S, 1);
        adjust(&mut [&mut d], S.alpha);
        d
    }

    #[test]
    fn separated_samples_get_a_direction_aware_verdict() {
        let low = [10.0, 10.1, 10.2, 10.3, 10.4];
        let high = [11.0, 11.1, 11.2, 11.3, 11.4];
        // Higher throughput in B: better. Higher latency in B: worse.
        assert_eq!(
            run(DiffMetric::AggTokS, &low, &high).verdict,
            Verdict::Better
        );
        assert_eq!(run(DiffMetric::TtftS, &low, &high).verdict, Verdict::Worse);
        assert_eq!(
            run(DiffMetric::AggTokS, &high, &low).verdict,
            Verdict::Worse
        );
        assert_eq!(run(DiffMetric::E2eS, &high, &low).verdict, Verdict::Better);
        let d = run(DiffMetric::AggTokS, &low, &high);
        assert_eq!(d.ratio, Some(11.2 / 10.2));
        let t = d.test.unwrap_or_else(|| panic!("tested"));
        assert!(
            t.exact && t.b_larger && t.p == t.p_holm && t.p < 0.01,
            "{t:?}"
        );
        assert_eq!(d.cannot_reach, None);
    }

    #[test]
    fn overlapping_samples_are_no_change() {
        let d = run(
            DiffMetric::AggTokS,
            &[1.0, 3.0, 5.0, 7.0],
            &[2.0, 4.0, 6.0, 8.0],
        );
        assert_eq!(d.verdict, Verdict::NoChange);
        assert_eq!(d.verdict.symbol(), "~");
    }

    #[test]
    fn all_equal_is_not_a_test() {
        let d = run(DiffMetric::Failures, &[0.0; 3], &[0.0; 5]);
        assert_eq!(d.untested, Some(Untested::AllEqual));
        assert_eq!(
            (d.verdict, d.test, d.ratio),
            (Verdict::NoChange, None, None)
        );
        let mut d = compare(DiffMetric::Failures, &[0.0; 3], &[0.0; 5], S, 1);
        assert_eq!(adjust(&mut [&mut d], 0.05), 0);
    }

    #[test]
    fn missing_side_is_not_tested() {
        let d = run(DiffMetric::TtftS, &[f64::NAN, f64::NAN], &[1.0, 2.0]);
        assert_eq!(d.untested, Some(Untested::NoData(Side::A)));
        assert_eq!(d.verdict, Verdict::NotTested);
        let d = run(DiffMetric::TtftS, &[1.0], &[]);
        assert_eq!(d.untested, Some(Untested::NoData(Side::B)));
    }

    #[test]
    fn tiny_samples_say_they_cannot_reach_alpha() {
        let d = run(DiffMetric::AggTokS, &[1.0, 1.1], &[2.0, 2.1]);
        let c = d.cannot_reach.unwrap_or_else(|| panic!("flagged"));
        assert_eq!((c.n_a, c.n_b, c.needed), (2, 2, 4));
        assert!((c.min_p - 1.0 / 3.0).abs() < 1e-12);
        assert_eq!(d.verdict, Verdict::NoChange);
        assert_eq!(
            run(DiffMetric::AggTokS, &[1.0; 4], &[2.0; 4]).cannot_reach,
            None
        );
    }

    #[test]
    fn holm_counts_every_test_made() {
        let sep = ([1.0, 2.0, 3.0, 4.0], [5.0, 6.0, 7.0, 8.0]); // exact p = 2/70
        let mut x = compare(DiffMetric::AggTokS, &sep.0, &sep.1, S, 1);
        let mut y = compare(DiffMetric::AggTokS, &sep.0, &sep.1, S, 2);
        let mut z = compare(DiffMetric::Failures, &[0.0; 4], &[0.0; 4], S, 3);
        assert_eq!(adjust(&mut [&mut x, &mut y, &mut z], 0.05), 2);
        let p = x.test.map(|t| t.p_holm).unwrap_or(f64::NAN);
        assert!((p - 4.0 / 70.0).abs() < 1e-12, "{p}");
        // 2/70 alone is significant at 0.05, two of them are not.
        assert_eq!(
            (x.verdict, y.verdict),
            (Verdict::NoChange, Verdict::NoChange)
        );
    }
}
