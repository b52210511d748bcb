//! Per-point summary across trials: median as center, quartiles (Hyndman & Fan
//! definition 7, numpy's default), min–max, sample standard deviation
//! (Bessel-corrected, numpy `ddof=1`), coefficient of variation and the
//! order-statistic 95% CI of the median (see [`super::ci::median_ci`]).
//! Non-finite values (NaN for failed requests, ±inf) are dropped first, so `n`
//! counts only the values that were used.

use super::ci::median_ci;
use super::quantile::{quantile, sorted_finite};

/// Center and spread of the finite values of one sample.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Summary {
    /// Number of finite values used.
    pub n: usize,
    /// Median (linear-interpolated 0.5 quantile).
    pub median: f64,
    /// Arithmetic mean.
    pub mean: f64,
    /// Smallest value.
    pub min: f64,
    /// Largest value.
    pub max: f64,
    /// First quartile (0.25 quantile, linear).
    pub q1: f64,
    /// Third quartile (0.75 quantile, linear).
    pub q3: f64,
    /// Interquartile range, `q3 - q1`.
    pub iqr: f64,
    /// Sample standard deviation (ddof = 1); 0 when n = 1.
    pub std: f64,
    /// Coefficient of variation `std / |mean|`; None when n < 2 or mean == 0.
    pub cv: Option<f64>,
    /// 95% order-statistic CI of the median; None when n < 6 (no finite interval reaches 95%).
    pub ci95: Option<(f64, f64)>,
}

impl Summary {
    /// Summarises the finite values of `values`; None when there are none.
    pub fn of(values: &[f64]) -> Option<Summary> {
        let v = sorted_finite(values);
        let n = v.len();
        let median = quantile(&v, 0.5)?;
        let q1 = quantile(&v, 0.25)?;
        let q3 = quantile(&v, 0.75)?;
        let min = *v.first()?;
        let max = *v.last()?;
        let mean = v.iter().sum::<f64>() / n as f64;
        // Two-pass variance: subtracting the mean first avoids cancellation.
        let std = if n > 1 {
            let ss: f64 = v.iter().map(|x| (x - mean) * (x - mean)).sum();
            (ss / (n - 1) as f64).sqrt()
        } else {
            0.0
        };
        let cv = (n >= 2 && mean != 0.0).then(|| std / mean.abs());
        Some(Summary {
            n,
            median,
            mean,
            min,
            max,
            q1,
            q3,
            iqr: q3 - q1,
            std,
            cv,
            ci95: median_ci(&v, 0.95),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() <= 1e-12 * b.abs().max(1.0)
    }

    #[test]
    fn no_finite_values_is_none() {
        assert_eq!(Summary::of(&[]), None);
        assert_eq!(Summary::of(&[f64::NAN, f64::NAN]), None);
    }

    #[test]
    fn single_value() {
        let s = Summary::of(&[f64::NAN, 4.0]);
        let want = Summary {
            n: 1,
            median: 4.0,
            mean: 4.0,
            min: 4.0,
            max: 4.0,
            q1: 4.0,
            q3: 4.0,
            iqr: 0.0,
            std: 0.0,
            cv: None,
            ci95: None,
        };
        assert_eq!(s, Some(want));
    }

    #[test]
    fn all_equal_values() {
        let s = Summary::of(&[2.5; 7]);
        let s = s.as_ref();
        assert_eq!(s.map(|s| (s.median, s.iqr, s.std)), Some((2.5, 0.0, 0.0)));
        assert_eq!(s.and_then(|s| s.cv), Some(0.0));
        assert_eq!(s.and_then(|s| s.ci95), Some((2.5, 2.5)));
    }

    #[test]
    fn zero_mean_has_no_cv() {
        let s = Summary::of(&[-1.0, 1.0]);
        assert_eq!(s.as_ref().map(|s| s.cv), Some(None));
        assert_eq!(s.map(|s| s.std), Some(2f64.sqrt()));
    }

    #[test]
    fn matches_numpy() {
        // numpy 2.4.6 on s = [12.1, 15.3, 11.8, 13.4, 14.9, 12.7, 13.0, 16.2]:
        // median 13.2, mean 13.675, quantile .25 12.549999999999999, .75 15.0,
        // std(ddof=1) 1.603344718304297, std/mean 0.1172464145012283.
        let data = [12.1, 15.3, 11.8, 13.4, f64::NAN, 14.9, 12.7, 13.0, 16.2];
        let Some(s) = Summary::of(&data) else {
            panic!("summary of 8 finite values is Some");
        };
        assert_eq!(s.n, 8);
        assert!(close(s.median, 13.2));
        assert!(close(s.mean, 13.675));
        assert_eq!((s.min, s.max), (11.8, 16.2));
        assert!(close(s.q1, 12.549999999999999));
        assert!(close(s.q3, 15.0));
        assert!(close(s.iqr, 15.0 - 12.549999999999999));
        assert!(close(s.std, 1.603344718304297));
        assert!(close(s.cv.unwrap_or(f64::NAN), 0.1172464145012283));
        // n = 8: j = 1 (coverage 0.992; j = 2 gives 0.930), so (min, max).
        assert_eq!(s.ci95, Some((11.8, 16.2)));
    }
}
