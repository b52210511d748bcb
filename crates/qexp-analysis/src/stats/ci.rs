//! Confidence interval for the median of a sample.
//!
//! [`median_ci`] is the distribution-free order-statistic interval of the median
//! (Conover, "Practical Nonparametric Statistics", 3rd ed. 1999, §3.2; the same
//! interval as scipy's `quantile_test(...).confidence_interval()` for p = 0.5):
//! the count of observations below the population median is Binomial(n, 1/2),
//! so `P(X_(j) <= m <= X_(n+1-j)) = 1 - 2 P(B <= j - 1)`, whatever the
//! distribution. Non-finite values (NaN for failed requests, ±inf) are
//! dropped first by [`sorted_finite`](super::sorted_finite).

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
}
