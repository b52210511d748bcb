//! Outlier detection for trials.
//!
//! Tukey's fences (Tukey, "Exploratory Data Analysis", 1977): values beyond
//! `Q1 - 1.5 IQR` / `Q3 + 1.5 IQR` are mild outliers, beyond `3 IQR` severe;
//! quartiles use numpy's linear method, as in criterion's `univariate::outliers::tukey`.
//! Modified z-scores (Iglewicz & Hoaglin, "How to Detect and Handle Outliers",
//! ASQC 1993): `M_i = 0.6745 (x_i - median) / MAD`, with `|M_i| > 3.5` an outlier.

use super::quantile::{quantile, sorted_finite};

/// The cut-off Iglewicz & Hoaglin recommend for `|modified z-score|`.
pub const MODIFIED_Z_THRESHOLD: f64 = 3.5;

/// Inner (1.5 IQR) and outer (3 IQR) Tukey fences.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Fences {
    /// `Q1 - 1.5 IQR`; below it a value is at least a mild outlier.
    pub lower_inner: f64,
    /// `Q3 + 1.5 IQR`; above it a value is at least a mild outlier.
    pub upper_inner: f64,
    /// `Q1 - 3 IQR`; below it a value is a severe outlier.
    pub lower_outer: f64,
    /// `Q3 + 3 IQR`; above it a value is a severe outlier.
    pub upper_outer: f64,
}

/// How far outside the fences a value lies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OutlierKind {
    /// Between the inner and outer fence.
    Mild,
    /// Beyond the outer fence.
    Severe,
}

/// Tukey fences of ascending, finite `sorted`; None when it is empty.
pub fn tukey_fences(sorted: &[f64]) -> Option<Fences> {
    let q1 = quantile(sorted, 0.25)?;
    let q3 = quantile(sorted, 0.75)?;
    let iqr = q3 - q1;
    Some(Fences {
        lower_inner: q1 - 1.5 * iqr,
        upper_inner: q3 + 1.5 * iqr,
        lower_outer: q1 - 3.0 * iqr,
        upper_outer: q3 + 3.0 * iqr,
    })
}

/// Classifies `value` against `f` (strictly beyond a fence counts); None when inside or NaN.
pub fn classify(value: f64, f: &Fences) -> Option<OutlierKind> {
    if value < f.lower_outer || value > f.upper_outer {
        Some(OutlierKind::Severe)
    } else if value < f.lower_inner || value > f.upper_inner {
        Some(OutlierKind::Mild)
    } else {
        None
    }
}

/// Modified z-score of each value, in input order; median and MAD come from the finite values.
///
/// NaN inputs score NaN and ±inf inputs score ±inf; when there are no finite
/// values every score is NaN.
/// When MAD == 0 (more than half the values equal the median) the score is 0
/// for values equal to the median and ±inf for the others: any departure from
/// such a sample counts as an outlier.
pub fn modified_z_scores(values: &[f64]) -> Vec<f64> {
    let finite = sorted_finite(values);
    let Some(med) = quantile(&finite, 0.5) else {
        return vec![f64::NAN; values.len()];
    };
    let deviations = sorted_finite(&finite.iter().map(|x| (x - med).abs()).collect::<Vec<_>>());
    let mad = quantile(&deviations, 0.5).unwrap_or(0.0);
    values
        .iter()
        .map(|&x| {
            let d = x - med;
            if x.is_nan() {
                f64::NAN
            } else if mad > 0.0 {
                0.6745 * d / mad
            } else if d == 0.0 {
                0.0
            } else {
                f64::INFINITY.copysign(d)
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fences_match_numpy() {
        // numpy 2.4.6: q1, q3 = np.quantile(t, [.25, .75]) = 3.75, 9.25 for
        // t = [1..10, 30, 60]; fences -4.5, 17.5 (inner) and -12.75, 25.75 (outer).
        let t = sorted_finite(&[1.0, 2., 3., 4., 5., 6., 7., 8., 9., 10., 30., 60.]);
        let want = Fences {
            lower_inner: -4.5,
            upper_inner: 17.5,
            lower_outer: -12.75,
            upper_outer: 25.75,
        };
        assert_eq!(tukey_fences(&t), Some(want));
        assert_eq!(classify(60.0, &want), Some(OutlierKind::Severe));
        assert_eq!(classify(20.0, &want), Some(OutlierKind::Mild));
        assert_eq!(classify(-5.0, &want), Some(OutlierKind::Mild));
        assert_eq!(classify(-13.0, &want), Some(OutlierKind::Severe));
        assert_eq!(classify(10.0, &want), None);
        // On a fence is not beyond it.
        assert_eq!(classify(17.5, &want), None);
        assert_eq!(classify(25.75, &want), Some(OutlierKind::Mild));
        assert_eq!(classify(f64::NAN, &want), None);
    }

    #[test]
    fn fences_edges() {
        assert_eq!(tukey_fences(&[]), None);
        let one = tukey_fences(&[5.0]);
        assert_eq!(
            one.map(|f| (f.lower_outer, f.upper_outer)),
            Some((5.0, 5.0))
        );
        // All equal: IQR = 0, so every other value is severe.
        let f = tukey_fences(&[2.0; 6]).unwrap_or(Fences {
            lower_inner: f64::NAN,
            upper_inner: f64::NAN,
            lower_outer: f64::NAN,
            upper_outer: f64::NAN,
        });
        assert_eq!(classify(2.0, &f), None);
        assert_eq!(classify(2.1, &f), Some(OutlierKind::Severe));
    }

    #[test]
    fn modified_z_matches_numpy_scipy() {
        // numpy/scipy 1.17.1: median 4.0, median_abs_deviation(v, scale=1) 1.0,
        // 0.6745*(v-med)/mad = [-1.349, -0.6745, -0.6745, 0, 0.6745, 1.349, 24.282].
        let v = [2.0, 3.0, 3.0, 4.0, 5.0, 6.0, 40.0];
        let want = [-1.349, -0.6745, -0.6745, 0.0, 0.6745, 1.349, 24.282];
        let got = modified_z_scores(&v);
        assert_eq!(got.len(), want.len());
        for (g, w) in got.iter().zip(want) {
            assert!((g - w).abs() < 1e-12, "{g} != {w}");
        }
        assert!(got[6] > MODIFIED_Z_THRESHOLD && got[5] < MODIFIED_Z_THRESHOLD);
    }

    #[test]
    fn modified_z_nan_is_dropped_and_kept_in_place() {
        let v = [2.0, f64::NAN, 3.0, 3.0, 4.0, 5.0, 6.0, 40.0];
        let got = modified_z_scores(&v);
        assert_eq!(got.len(), 8);
        assert!(got[1].is_nan());
        assert_eq!(got[4], 0.0);
        assert!((got[7] - 24.282).abs() < 1e-12);
    }

    #[test]
    fn modified_z_with_zero_mad() {
        let got = modified_z_scores(&[5.0, 5.0, 5.0, 7.0, 1.0]);
        assert_eq!(got, vec![0.0, 0.0, 0.0, f64::INFINITY, f64::NEG_INFINITY]);
        assert_eq!(modified_z_scores(&[3.0; 4]), vec![0.0; 4]);
    }

    #[test]
    fn modified_z_edges() {
        assert!(modified_z_scores(&[]).is_empty());
        assert_eq!(modified_z_scores(&[9.0]), vec![0.0]);
        let all_nan = modified_z_scores(&[f64::NAN, f64::NAN]);
        assert!(all_nan.len() == 2 && all_nan.iter().all(|z| z.is_nan()));
    }
}
