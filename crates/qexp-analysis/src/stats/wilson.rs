//! The Wilson score interval for a binomial proportion (Wilson, "Probable
//! inference, the law of succession, and statistical inference", JASA 1927),
//! the interval Brown, Cai & DasGupta recommend for small and moderate n
//! ("Interval estimation for a binomial proportion", Statistical Science
//! 2001): the p whose score test `|k/n - p| / sqrt(p (1 - p) / n) <= z` does
//! not reject, the roots of `(n + z²) p² - (2k + z²) p + k²/n = 0`. Unlike
//! the Wald interval it stays inside [0, 1] and has a width at k = 0 and
//! k = n. As statsmodels' `proportion_confint(k, n, alpha, method="wilson")`,
//! with `z = norm.isf(alpha / 2)`.

use super::normal::normal_sf;
use std::f64::consts::PI;

/// The confidence of the Wilson intervals qexp reports beside a share of
/// answers (accuracy, the parse rate).
pub const SHARE_CONFIDENCE: f64 = 0.95;

/// The Wilson interval `(low, high)` of `successes` out of `n` at `confidence` (0.95 for 95%).
///
/// None for n = 0, successes > n, or a confidence outside (0, 1).
pub fn wilson(successes: u64, n: u64, confidence: f64) -> Option<(f64, f64)> {
    if n == 0 || successes > n || !(confidence > 0.0 && confidence < 1.0) {
        return None;
    }
    let z = normal_isf((1.0 - confidence) / 2.0);
    let (k, nf, z2) = (successes as f64, n as f64, z * z);
    let q = k / nf;
    let denom = 1.0 + z2 / nf;
    let center = (q + z2 / (2.0 * nf)) / denom;
    let dist = z * (q * (1.0 - q) / nf + z2 / (4.0 * nf * nf)).sqrt() / denom;
    let high = if successes == n {
        1.0
    } else {
        (center + dist).min(1.0)
    };
    // `center - dist` cancels when k is small; the roots' product is
    // k² / (n (n + z²)), which gives the lower root from the upper one
    // without a subtraction (and exactly 0 at k = 0).
    let low = if successes == 0 {
        0.0
    } else {
        (k * k / (nf * (nf + z2)) / (center + dist)).clamp(0.0, high)
    };
    Some((low, high))
}

/// The interval of the difference `b − a` of two independent proportions
/// (`successes` out of `n` each side) at `confidence`, by Newcombe's hybrid
/// score method built from each side's Wilson interval ("Interval
/// estimation for the difference between independent proportions",
/// Statistics in Medicine 1998, method 10): as statsmodels'
/// `confint_proportions_2indep(…, method="newcomb")`. None when either
/// side has no interval.
pub fn newcombe_difference(a: (u64, u64), b: (u64, u64), confidence: f64) -> Option<(f64, f64)> {
    let (la, ua) = wilson(a.0, a.1, confidence)?;
    let (lb, ub) = wilson(b.0, b.1, confidence)?;
    let (pa, pb) = (a.0 as f64 / a.1 as f64, b.0 as f64 / b.1 as f64);
    let d = pb - pa;
    let low = d - ((pb - lb).powi(2) + (ua - pa).powi(2)).sqrt();
    let high = d + ((ub - pb).powi(2) + (pa - la).powi(2)).sqrt();
    Some((low, high))
}

/// The z with `P(Z > z) = upper` for the standard normal; NaN unless 0 < upper < 1.
///
/// Newton's method on [`normal_sf`] inside a bisection bracket, as
/// `student::t_isf` inverts its tail; as accurate as `normal_sf` (1e-12).
pub(crate) fn normal_isf(upper: f64) -> f64 {
    if !(upper > 0.0 && upper < 1.0) {
        return f64::NAN;
    }
    if upper == 0.5 {
        return 0.0;
    }
    if upper > 0.5 {
        return -normal_isf(1.0 - upper);
    }
    // normal_sf(38) underflows to 0, so [0, 40] brackets every upper > 0.
    let (mut lo, mut hi) = (0.0f64, 40.0f64);
    let mut z = 1.0;
    for _ in 0..200 {
        let f = normal_sf(z) - upper;
        // The tail falls as z grows: above `upper` means z is too small.
        if f > 0.0 {
            lo = z;
        } else {
            hi = z;
        }
        let density = (-0.5 * z * z).exp() / (2.0 * PI).sqrt();
        let mut next = z + f / density;
        if !(next > lo && next < hi) {
            next = 0.5 * (lo + hi);
        }
        if (next - z).abs() <= 1e-15 * next || hi - lo <= 1e-15 * hi {
            return next;
        }
        z = next;
    }
    z
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::close;

    #[test]
    fn normal_isf_matches_scipy() {
        // scipy 1.17.1: scipy.stats.norm.isf(upper)
        let cases = [
            (0.025, 1.959_963_984_540_054_5),
            (0.005, 2.575_829_303_548_901),
            (0.05, 1.644_853_626_951_472_9),
            (0.3, 0.524_400_512_708_040_9),
            (1e-10, 6.361_340_902_404_056),
            (0.975, -1.959_963_984_540_054),
        ];
        for (upper, want) in cases {
            close(normal_isf(upper), want, 1e-12);
        }
        assert_eq!(normal_isf(0.5), 0.0);
        for bad in [0.0, 1.0, -0.1, f64::NAN] {
            assert!(normal_isf(bad).is_nan());
        }
    }

    #[test]
    fn wilson_matches_statsmodels() {
        // statsmodels 0.15.0 (scipy 1.17.1):
        // statsmodels.stats.proportion.proportion_confint(k, n, alpha=0.05, method="wilson")
        let cases = [
            (0, 10, 0.0, 0.277_532_799_862_889_26),
            (10, 10, 0.722_467_200_137_110_6, 1.0),
            (1, 1, 0.206_549_314_377_237_4, 1.0),
            (0, 1, 0.0, 0.793_450_685_622_762_7),
            (37, 50, 0.604_468_427_351_511_6, 0.841_284_725_064_476),
            (500, 1000, 0.469_069_600_368_104_2, 0.530_930_399_631_895_8),
            (
                1,
                1000,
                0.000_176_546_370_626_077_65,
                0.005_642_558_597_957_937,
            ),
            (999, 1000, 0.994_357_441_402_042_1, 0.999_823_453_629_373_9),
            (3, 7, 0.158_219_855_251_469_64, 0.749_541_635_472_342_8),
            (1, 2, 0.094_531_205_734_230_68, 0.905_468_794_265_769_3),
            (0, 100_000, 0.0, 3.841_311_258_303_965e-5),
            (
                12_345,
                20_000,
                0.610_491_795_736_065_7,
                0.623_963_171_808_777_6,
            ),
            (5, 9, 0.266_651_293_495_493_05, 0.811_221_478_902_335_5),
        ];
        for (k, n, low, high) in cases {
            let (l, h) = wilson(k, n, 0.95).unwrap();
            close(l, low, 1e-12);
            close(h, high, 1e-12);
        }
        // The same call with alpha=0.10 and alpha=0.01.
        let other = [
            (37, 50, 0.90, 0.627_538_702_921_931_3, 0.827_821_367_900_659),
            (
                37,
                50,
                0.99,
                0.559_139_921_586_418_1,
                0.864_627_074_389_120_5,
            ),
            (0, 10, 0.99, 0.0, 0.398_854_093_304_908_2),
        ];
        for (k, n, confidence, low, high) in other {
            let (l, h) = wilson(k, n, confidence).unwrap();
            close(l, low, 1e-12);
            close(h, high, 1e-12);
        }
    }

    #[test]
    fn newcombe_matches_the_paper() {
        // Newcombe (1998), Table II example (a): 56/70 − 48/80, method 10
        // gives 0.0524 to 0.3339.
        let (lo, hi) = newcombe_difference((48, 80), (56, 70), 0.95).unwrap();
        assert!(
            (lo - 0.0524).abs() < 5e-5 && (hi - 0.3339).abs() < 5e-5,
            "{lo} {hi}"
        );
        // Every success on one side, none on the other: still inside [−1, 1].
        let (lo, hi) = newcombe_difference((10, 10), (3, 10), 0.95).unwrap();
        assert!(-1.0 < lo && hi < 0.0, "{lo} {hi}");
        assert_eq!(newcombe_difference((0, 0), (3, 10), 0.95), None);
    }

    #[test]
    fn wilson_edges() {
        // No trials, impossible counts and confidences outside (0, 1) have no interval.
        assert_eq!(wilson(0, 0, 0.95), None);
        assert_eq!(wilson(3, 2, 0.95), None);
        for bad in [0.0, 1.0, -0.5, 1.5, f64::NAN] {
            assert_eq!(wilson(1, 2, bad), None);
        }
        // All or none: the interval touches 0 or 1 exactly, with a width.
        let (l, h) = wilson(0, 10, 0.95).unwrap();
        assert_eq!(l, 0.0);
        assert!(h > 0.2 && h < 0.3);
        let (l, h) = wilson(10, 10, 0.95).unwrap();
        assert_eq!(h, 1.0);
        assert!(l > 0.7 && l < 0.8);
        // Symmetry: k of n mirrors n - k of n.
        for (k, n) in [(0, 1), (1, 3), (7, 20), (1, 1000)] {
            let (l, h) = wilson(k, n, 0.95).unwrap();
            let (ml, mh) = wilson(n - k, n, 0.95).unwrap();
            assert!((l - (1.0 - mh)).abs() < 1e-15 && (h - (1.0 - ml)).abs() < 1e-15);
        }
        // A wider confidence gives a wider interval, which always holds k / n.
        for (k, n) in [(0, 5), (3, 5), (50, 60)] {
            let (l90, h90) = wilson(k, n, 0.90).unwrap();
            let (l99, h99) = wilson(k, n, 0.99).unwrap();
            let q = k as f64 / n as f64;
            assert!(l99 <= l90 && l90 <= q && q <= h90 && h90 <= h99);
        }
    }
}
