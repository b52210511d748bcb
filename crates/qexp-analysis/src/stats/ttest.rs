//! Two-sample Student t inference on a difference of means, for the trial
//! values of a diff (on the log scale for ratios). With equal sizes the
//! pooled-variance t (Student 1908) with `n_a + n_b - 2` degrees of freedom,
//! which is robust to unequal variances when the sizes are equal; otherwise
//! Welch's t with Welch–Satterthwaite degrees of freedom (Welch, Biometrika
//! 1947; Satterthwaite, Biometrics Bulletin 1946). On top of it: the
//! two-sided p-value, the t-interval, Schuirmann's two one-sided tests of
//! equivalence within ±margin (Schuirmann, J. Pharmacokin. Biopharm. 1987),
//! and the trials per side that the usual normal-theory sample-size formulas
//! ask for (Chow, Shao & Wang, "Sample Size Calculations in Clinical
//! Research", 2nd ed. 2008, §3.2: `n = (t_{α} + t_{β})² 2σ² / Δ²`, solved
//! with the t quantiles of the resulting degrees of freedom).
//!
//! When the values come in pairs (the blocks of a run with deployments:
//! each block measures both sides at about the same time), [`paired_diff`]
//! is the paired t: the one-sample t on the per-pair differences with
//! `n - 1` degrees of freedom (Student 1908), which removes what the pair
//! shares (drift over the run) from the spread.

use super::student::{t_isf, t_sf};

/// The difference of means `mean(b) - mean(a)` with its standard error.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MeanDiff {
    /// `mean(b) - mean(a)`.
    pub diff: f64,
    /// Its standard error (0 when both sides are constant).
    pub se: f64,
    /// Degrees of freedom of the t statistic.
    pub df: f64,
    /// Values in a.
    pub n_a: usize,
    /// Values in b.
    pub n_b: usize,
    /// True for the pooled-variance t (equal sizes), false for Welch's.
    pub pooled: bool,
    /// True for the paired t ([`paired_diff`]).
    pub paired: bool,
}

fn mean_var(x: &[f64]) -> (f64, f64) {
    let n = x.len() as f64;
    let mean = x.iter().sum::<f64>() / n;
    let ss: f64 = x.iter().map(|v| (v - mean) * (v - mean)).sum();
    (mean, ss / (n - 1.0))
}

/// `mean(b) - mean(a)` over the finite values; None unless each side has at least 2.
pub fn mean_diff(a: &[f64], b: &[f64]) -> Option<MeanDiff> {
    let a: Vec<f64> = a.iter().copied().filter(|v| v.is_finite()).collect();
    let b: Vec<f64> = b.iter().copied().filter(|v| v.is_finite()).collect();
    let (n_a, n_b) = (a.len(), b.len());
    if n_a < 2 || n_b < 2 {
        return None;
    }
    let ((ma, va), (mb, vb)) = (mean_var(&a), mean_var(&b));
    let (fa, fb) = (n_a as f64, n_b as f64);
    let (wa, wb) = (va / fa, vb / fb);
    let se = (wa + wb).sqrt();
    let pooled = n_a == n_b;
    let df = if pooled {
        fa + fb - 2.0
    } else if wa + wb > 0.0 {
        (wa + wb).powi(2) / (wa * wa / (fa - 1.0) + wb * wb / (fb - 1.0))
    } else {
        fa + fb - 2.0
    };
    Some(MeanDiff {
        diff: mb - ma,
        se,
        df,
        n_a,
        n_b,
        pooled,
        paired: false,
    })
}

/// `mean(b_i - a_i)` over the pairs whose values are both finite; None
/// unless at least 2 pairs remain.
pub fn paired_diff(a: &[f64], b: &[f64]) -> Option<MeanDiff> {
    let d: Vec<f64> = a
        .iter()
        .zip(b)
        .filter(|(x, y)| x.is_finite() && y.is_finite())
        .map(|(x, y)| y - x)
        .collect();
    let n = d.len();
    if n < 2 {
        return None;
    }
    let (mean, var) = mean_var(&d);
    Some(MeanDiff {
        diff: mean,
        se: (var / n as f64).sqrt(),
        df: n as f64 - 1.0,
        n_a: n,
        n_b: n,
        pooled: false,
        paired: true,
    })
}

impl MeanDiff {
    /// Two-sided p of "no difference"; None when the standard error is 0.
    pub fn p_two_sided(&self) -> Option<f64> {
        (self.se > 0.0).then(|| (2.0 * t_sf((self.diff / self.se).abs(), self.df)).min(1.0))
    }

    /// The two-sided t-interval of the difference at `level`; None when `level` is not in (0, 1).
    pub fn interval(&self, level: f64) -> Option<(f64, f64)> {
        if !(level > 0.0 && level < 1.0) {
            return None;
        }
        let half = t_isf((1.0 - level) / 2.0, self.df) * self.se;
        Some((self.diff - half, self.diff + half))
    }

    /// TOST p of "the difference lies outside ±margin" (small p: equivalent); None when the standard error is 0.
    pub fn p_equivalent(&self, margin: f64) -> Option<f64> {
        if self.se.is_nan() || self.se <= 0.0 {
            return None;
        }
        let below = t_sf((self.diff + margin) / self.se, self.df);
        let above = t_sf((margin - self.diff) / self.se, self.df);
        Some(below.max(above))
    }

    /// The standard deviation of one value that the standard error implies
    /// (pooled when equal sizes). Paired: the spread of one pair's difference
    /// over √2, so that the two-sample sample-size formula of
    /// [`trials_to_decide`] asks for the pairs the paired t needs.
    pub fn sd(&self) -> f64 {
        if self.paired {
            return self.se * (self.n_a as f64 / 2.0).sqrt();
        }
        self.se / (1.0 / self.n_a as f64 + 1.0 / self.n_b as f64).sqrt()
    }
}

/// Largest trial count [`trials_to_decide`] searches.
pub const MAX_TRIALS: usize = 1000;

/// Trials per side at which, with power `power`, a true difference `diff` between
/// values of spread `sd` is declared different at two-sided `alpha` (when
/// `|diff| >= margin`) or equivalent within ±`margin` at `alpha` (when smaller);
/// None beyond [`MAX_TRIALS`] or for bad input.
pub fn trials_to_decide(sd: f64, diff: f64, margin: f64, alpha: f64, power: f64) -> Option<usize> {
    let ok = sd.is_finite() && sd > 0.0 && diff.is_finite() && margin > 0.0;
    if !(ok && alpha > 0.0 && alpha < 1.0 && power > 0.0 && power < 1.0) {
        return None;
    }
    let d = diff.abs();
    let (gap, tail) = if d >= margin {
        (d, alpha / 2.0)
    } else {
        (margin - d, alpha)
    };
    let enough = |n: usize| {
        let df = 2.0 * n as f64 - 2.0;
        let se = sd * (2.0 / n as f64).sqrt();
        gap / se >= t_isf(tail, df) + t_isf(1.0 - power, df)
    };
    // `enough` only turns true as n grows (the standard error shrinks and so
    // do the quantiles), so bisect on [2, MAX_TRIALS].
    if !enough(MAX_TRIALS) {
        return None;
    }
    let (mut lo, mut hi) = (1, MAX_TRIALS);
    while hi - lo > 1 {
        let mid = (lo + hi) / 2;
        if enough(mid) {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    Some(hi)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::close;

    const A: [f64; 5] = [10.1, 9.8, 10.4, 10.0, 9.9];
    const B: [f64; 5] = [10.9, 11.2, 10.7, 11.0, 11.4];
    const C: [f64; 3] = [10.6, 11.9, 11.1];

    #[test]
    fn pooled_matches_scipy() {
        // scipy 1.17.1: ttest_ind(B, A) -> equal n, so pooled with df 8.
        let d = mean_diff(&A, &B).unwrap_or_else(|| panic!("two sides"));
        assert!(d.pooled);
        assert_eq!(d.df, 8.0);
        close(d.diff, 1.0, 1e-12);
        close(d.diff / d.se, 6.299_407_883_487_119, 1e-10);
        close(
            d.p_two_sided().unwrap_or(f64::NAN),
            0.000_232_935_645_898_361_9,
            1e-8,
        );
        // ttest_ind(B, A).confidence_interval(0.95)
        let (lo, hi) = d.interval(0.95).unwrap_or((f64::NAN, f64::NAN));
        close(lo, 0.633_933_192_157_792_6, 1e-9);
        close(hi, 1.366_066_807_842_207_4, 1e-9);
    }

    #[test]
    fn paired_is_the_one_sample_t_of_the_differences() {
        // Differences B - A: 0.8, 1.4, 0.3, 1.0, 1.5 (mean 1, sd 0.4848);
        // t = 4.61266 on 4 df, two-sided p 0.0099358 (the t density
        // integrated numerically; scipy's ttest_rel(B, A) gives the same).
        let d = paired_diff(&A, &B).unwrap_or_else(|| panic!("five pairs"));
        assert!(d.paired && !d.pooled);
        assert_eq!((d.df, d.n_a), (4.0, 5));
        close(d.diff, 1.0, 1e-12);
        close(d.diff / d.se, 4.612_656_040_144_426, 1e-9);
        close(d.p_two_sided().unwrap_or(f64::NAN), 0.009_935_783, 1e-7);
        // A shift shared by the pair (drift) does not change the test.
        let drift: Vec<f64> = (0..5).map(|i| f64::from(i) * 3.0).collect();
        let a2: Vec<f64> = A.iter().zip(&drift).map(|(a, s)| a + s).collect();
        let b2: Vec<f64> = B.iter().zip(&drift).map(|(b, s)| b + s).collect();
        let e = paired_diff(&a2, &b2).unwrap_or_else(|| panic!("five pairs"));
        close(e.diff / e.se, d.diff / d.se, 1e-9);
        // …where the unpaired t drowns in it.
        let u = mean_diff(&a2, &b2).unwrap_or_else(|| panic!("two sides"));
        assert!(u.p_two_sided().unwrap_or(0.0) > 0.5);
        // A pair with a missing side is dropped; one pair is not enough.
        assert_eq!(paired_diff(&[1.0, f64::NAN], &[2.0, 3.0]), None);
    }

    #[test]
    fn welch_matches_scipy() {
        // scipy 1.17.1: ttest_ind(C, A, equal_var=False)
        let d = mean_diff(&A, &C).unwrap_or_else(|| panic!("two sides"));
        assert!(!d.pooled);
        close(d.df, 2.300_461_442_323_053_6, 1e-10);
        close(
            d.p_two_sided().unwrap_or(f64::NAN),
            0.082_772_170_244_647_14,
            1e-8,
        );
    }

    #[test]
    fn tost_is_the_larger_one_sided_p() {
        // Within ±2: both one-sided tests reject easily. Within ±1.2: the upper one barely does.
        let d = mean_diff(&A, &B).unwrap_or_else(|| panic!("two sides"));
        let wide = d.p_equivalent(2.0).unwrap_or(f64::NAN);
        assert!(wide < 1e-3, "{wide}");
        // scipy: t.sf((1.2 - 1.0) / se, 8)
        close(
            d.p_equivalent(1.2).unwrap_or(f64::NAN),
            0.121_610_753_854_345_55,
            1e-8,
        );
        // A margin below the estimate cannot show equivalence.
        assert!(d.p_equivalent(0.9).unwrap_or(0.0) > 0.5);
    }

    #[test]
    fn edges() {
        assert_eq!(mean_diff(&[1.0], &[1.0, 2.0]), None);
        assert_eq!(mean_diff(&[1.0, f64::NAN], &[1.0, 2.0]), None);
        let flat = mean_diff(&[1.0, 1.0], &[2.0, 2.0]).unwrap_or_else(|| panic!("two sides"));
        assert_eq!((flat.se, flat.p_two_sided()), (0.0, None));
        assert_eq!(flat.p_equivalent(5.0), None);
        assert_eq!(flat.interval(1.0), None);
    }

    #[test]
    fn trials_to_decide_grows_with_noise_and_shrinks_with_the_effect() {
        // 10% effect, 2% spread, alpha 0.05/20: a handful of trials.
        let n = trials_to_decide(0.02, 0.095, 0.0198, 0.0025, 0.8).unwrap_or(0);
        assert!((3..=6).contains(&n), "{n}");
        let noisy = trials_to_decide(0.08, 0.095, 0.0198, 0.0025, 0.8).unwrap_or(0);
        assert!(noisy > n);
        // Equivalence at zero change needs the interval inside ±2%.
        let eq = trials_to_decide(0.02, 0.0, 0.0198, 0.0025, 0.8).unwrap_or(0);
        assert!(eq > n, "{eq}");
        // A change right at the margin from below can never be shown equivalent.
        assert_eq!(trials_to_decide(0.02, 0.0197999, 0.0198, 0.0025, 0.8), None);
        assert_eq!(trials_to_decide(0.0, 0.1, 0.02, 0.05, 0.8), None);
        assert_eq!(trials_to_decide(0.02, 0.1, 0.02, 0.05, 1.0), None);
    }
}
