//! Confidence intervals for the center of a sample.
//!
//! [`median_ci`] is the distribution-free order-statistic interval of the median
//! (Conover, "Practical Nonparametric Statistics", 3rd ed. 1999, §3.2; the same
//! interval as scipy's `quantile_test(...).confidence_interval()` for p = 0.5):
//! the count of observations below the population median is Binomial(n, 1/2),
//! so `P(X_(j) <= m <= X_(n+1-j)) = 1 - 2 P(B <= j - 1)`, whatever the
//! distribution. [`bootstrap_ratio_ci`] is Efron's percentile bootstrap
//! (Efron & Tibshirani, "An Introduction to the Bootstrap", 1993, ch. 13).
//! Non-finite values (NaN for failed requests, ±inf) are dropped first.

use super::quantile::{quantile, sorted_finite};
use super::rng::Rng;

/// Order-statistic CI of the median of ascending, finite `sorted` at `level` (e.g. 0.95).
///
/// Returns `(X_(j), X_(n+1-j))` for the largest rank `j` whose coverage is still
/// at least `level`, i.e. the narrowest symmetric interval that reaches it.
/// None when `level` is not in (0, 1) or even `(min, max)`, whose coverage is
/// `1 - 2 * 0.5^n`, falls short: for 0.95 that is n < 6 (n = 5 gives 0.9375).
pub fn median_ci(sorted: &[f64], level: f64) -> Option<(f64, f64)> {
    let n = sorted.len();
    let j = symmetric_rank(n, level)?;
    Some((*sorted.get(j - 1)?, *sorted.get(n - j)?))
}

/// Largest 1-based rank j <= n/2 with `1 - 2 * BinomCdf(j - 1; n, 1/2) >= level`.
fn symmetric_rank(n: usize, level: f64) -> Option<usize> {
    if !(level > 0.0 && level < 1.0) {
        return None;
    }
    let alpha = 1.0 - level;
    // Work in logs: 0.5^n underflows for n > 1074 while the terms that matter do not.
    let ln_half_pow_n = n as f64 * 0.5f64.ln();
    let mut ln_choose = 0.0; // ln C(n, i)
    let mut cdf = 0.0;
    let mut best = None;
    for i in 0..n / 2 {
        if i > 0 {
            ln_choose += ((n - i + 1) as f64 / i as f64).ln();
        }
        cdf += (ln_choose + ln_half_pow_n).exp();
        // The relative slack absorbs rounding when the coverage equals the level exactly.
        if 2.0 * cdf <= alpha * (1.0 + 1e-9) {
            best = Some(i + 1);
        } else {
            break;
        }
    }
    best
}

/// Percentile-bootstrap CI of `median(b) / median(a)`, resampling each side independently; same seed, same interval.
///
/// None when either side has no finite values, `median(a) == 0`, `resamples == 0`
/// or `level` is not in (0, 1). Resamples whose ratio is not finite (a resampled
/// median of `a` equal to 0) are left out of the percentiles.
pub fn bootstrap_ratio_ci(
    a: &[f64],
    b: &[f64],
    level: f64,
    resamples: usize,
    seed: u64,
) -> Option<(f64, f64)> {
    let a = sorted_finite(a);
    let b = sorted_finite(b);
    let ma = quantile(&a, 0.5)?;
    quantile(&b, 0.5)?;
    if ma == 0.0 || resamples == 0 || !(level > 0.0 && level < 1.0) {
        return None;
    }
    let mut rng = Rng::new(seed);
    let mut buf = Vec::with_capacity(a.len().max(b.len()));
    let mut ratios = Vec::with_capacity(resamples);
    for _ in 0..resamples {
        let ra = resampled_median(&a, &mut rng, &mut buf)?;
        let rb = resampled_median(&b, &mut rng, &mut buf)?;
        let r = rb / ra;
        if r.is_finite() {
            ratios.push(r);
        }
    }
    ratios.sort_by(f64::total_cmp);
    let tail = (1.0 - level) / 2.0;
    Some((quantile(&ratios, tail)?, quantile(&ratios, 1.0 - tail)?))
}

fn resampled_median(xs: &[f64], rng: &mut Rng, buf: &mut Vec<f64>) -> Option<f64> {
    buf.clear();
    buf.extend((0..xs.len()).filter_map(|_| xs.get(rng.below(xs.len())).copied()));
    buf.sort_by(f64::total_cmp);
    quantile(buf, 0.5)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seq(n: usize) -> Vec<f64> {
        (1..=n).map(|i| i as f64).collect()
    }

    #[test]
    fn too_small_samples_have_no_95_interval() {
        for n in 0..=5 {
            assert_eq!(median_ci(&seq(n), 0.95), None, "n={n}");
        }
    }

    #[test]
    fn ranks_match_binomial_tables() {
        // Ranks from scipy 1.17.1: the largest j with 1 - 2*binom.cdf(j-1, n, .5) >= .95
        // (n=6 -> 1, 7 -> 1, 10 -> 2, 20 -> 6, 50 -> 18), and
        // scipy.stats.quantile_test(1..=n, q=median).confidence_interval(0.95)
        // gives (2, 9) for n=10 and (6, 15) for n=20.
        assert_eq!(median_ci(&seq(6), 0.95), Some((1.0, 6.0)));
        assert_eq!(median_ci(&seq(7), 0.95), Some((1.0, 7.0)));
        assert_eq!(median_ci(&seq(10), 0.95), Some((2.0, 9.0)));
        assert_eq!(median_ci(&seq(20), 0.95), Some((6.0, 15.0)));
        assert_eq!(median_ci(&seq(50), 0.95), Some((18.0, 33.0)));
    }

    #[test]
    fn boundary_level_equal_to_coverage_is_reached() {
        // n=5: coverage of (min, max) is exactly 1 - 2/32 = 0.9375.
        assert_eq!(median_ci(&seq(5), 0.9375), Some((1.0, 5.0)));
        assert_eq!(median_ci(&seq(5), 0.94), None);
    }

    #[test]
    fn large_n_does_not_underflow() {
        // Normal approximation: j ~ n/2 - 1.96 sqrt(n)/2 = 4902 for n = 10_000.
        let v = seq(10_000);
        let (lo, hi) = median_ci(&v, 0.95).unwrap_or((0.0, 0.0));
        assert!((4895.0..=4905.0).contains(&lo), "{lo}");
        assert_eq!(lo + hi, 10_001.0);
    }

    #[test]
    fn all_equal_and_bad_level() {
        assert_eq!(median_ci(&[2.0; 8], 0.95), Some((2.0, 2.0)));
        assert_eq!(median_ci(&seq(10), 1.0), None);
        assert_eq!(median_ci(&seq(10), f64::NAN), None);
    }

    const A: [f64; 25] = [
        100.012, 102.987, 97.259, 91.094, 95.453, 90.084, 100.601, 113.402, 95.078, 93.795,
        104.898, 103.569, 101.054, 90.695, 99.707, 106.953, 86.558, 95.424, 80.988, 87.105, 81.583,
        97.649, 87.326, 102.713, 101.568,
    ];
    const B: [f64; 30] = [
        104.131, 80.832, 100.613, 105.515, 107.133, 90.699, 101.222, 96.215, 97.912, 116.609,
        97.925, 105.675, 114.844, 100.164, 104.883, 107.105, 106.638, 93.749, 106.761, 119.588,
        90.529, 114.594, 107.194, 99.585, 126.004, 113.623, 94.007, 106.745, 111.767, 104.112,
    ];

    #[test]
    fn bootstrap_matches_reference_port() {
        // Same algorithm in Python (xoshiro256** port on the sorted sides, numpy.median, numpy.quantile
        // linear) with seed 42, 2000 resamples, level 0.95.
        let (lo, hi) = bootstrap_ratio_ci(&A, &B, 0.95, 2000, 42).unwrap_or((0.0, 0.0));
        assert!((lo - 1.013673657316761).abs() < 1e-12, "{lo}");
        assert!((hi - 1.1430116143763585).abs() < 1e-12, "{hi}");
    }

    #[test]
    fn bootstrap_is_deterministic_and_brackets_point_estimate() {
        let x = bootstrap_ratio_ci(&A, &B, 0.95, 500, 7);
        assert_eq!(x, bootstrap_ratio_ci(&A, &B, 0.95, 500, 7));
        assert_ne!(x, bootstrap_ratio_ci(&A, &B, 0.95, 500, 8));
        let (lo, hi) = x.unwrap_or((0.0, 0.0));
        let point = 105.199 / 97.259; // numpy: np.median(B) / np.median(A)
        assert!(lo < point && point < hi, "{lo} {point} {hi}");
    }

    #[test]
    fn bootstrap_edges() {
        assert_eq!(bootstrap_ratio_ci(&[], &[1.0], 0.95, 100, 1), None);
        assert_eq!(bootstrap_ratio_ci(&[1.0], &[f64::NAN], 0.95, 100, 1), None);
        assert_eq!(
            bootstrap_ratio_ci(&[0.0, 0.0, 1.0], &[1.0], 0.95, 100, 1),
            None
        );
        assert_eq!(bootstrap_ratio_ci(&[1.0], &[1.0], 0.95, 0, 1), None);
        assert_eq!(bootstrap_ratio_ci(&[1.0], &[1.0], 1.5, 100, 1), None);
        // Constant sides: every resample gives the same ratio.
        let c = bootstrap_ratio_ci(&[2.0, 2.0, f64::NAN], &[3.0; 4], 0.95, 100, 1);
        assert_eq!(c, Some((1.5, 1.5)));
        // n = 1 on each side.
        assert_eq!(
            bootstrap_ratio_ci(&[4.0], &[2.0], 0.9, 10, 1),
            Some((0.5, 0.5))
        );
    }

    #[test]
    fn bootstrap_skips_resamples_with_zero_median() {
        // median(a) = 1 but resamples of a can have median 0; those ratios are skipped.
        let ci = bootstrap_ratio_ci(&[0.0, 1.0, 1.0], &[2.0; 3], 0.95, 400, 3);
        let (lo, hi) = ci.unwrap_or((f64::NAN, f64::NAN));
        assert!(
            lo.is_finite() && hi.is_finite() && lo >= 2.0 && hi <= 2.0,
            "{lo} {hi}"
        );
    }
}
