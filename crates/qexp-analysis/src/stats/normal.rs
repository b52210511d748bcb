//! Standard normal upper tail `Q(z) = P(Z > z) = erfc(z / sqrt 2) / 2`, for the
//! Mann–Whitney normal approximation. Small arguments use the all-positive
//! series `erf x = 2/sqrt(pi) e^{-x^2} sum_n 2^n x^{2n+1} / (2n+1)!!`, larger
//! ones Laplace's continued fraction for erfc (Abramowitz & Stegun 7.1.6 and
//! 7.1.14), evaluated backwards. Relative error below 1e-12 against scipy's
//! `norm.sf` on [-12, 37].

use std::f64::consts::{FRAC_1_SQRT_2, PI};

/// Upper-tail probability of the standard normal; NaN for NaN.
pub fn normal_sf(z: f64) -> f64 {
    if z.is_nan() {
        return f64::NAN;
    }
    if z < 0.0 {
        return 1.0 - normal_sf(-z);
    }
    0.5 * erfc_nonneg(z * FRAC_1_SQRT_2)
}

fn erfc_nonneg(x: f64) -> f64 {
    if x < 2.0 {
        let (mut term, mut sum) = (x, x);
        // Terms shrink at least geometrically for x < 2; 200 is a safety bound.
        for n in 1..200 {
            term *= 2.0 * x * x / f64::from(2 * n + 1);
            sum += term;
            if term <= 1e-17 * sum {
                break;
            }
        }
        1.0 - 2.0 / PI.sqrt() * (-x * x).exp() * sum
    } else {
        // 60 levels converge to double precision for x >= 2.
        let mut f = x;
        for k in (1..=60).rev() {
            f = x + f64::from(k) / 2.0 / f;
        }
        (-x * x).exp() / (PI.sqrt() * f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_scipy_norm_sf() {
        // scipy 1.17.1: scipy.stats.norm.sf(z)
        let cases = [
            (0.0, 0.5),
            (0.5, 0.3085375387259869),
            (1.0, 0.15865525393145707),
            (2.5, 0.006209665325776132),
            (3.0, 0.0013498980316300933),
            (5.0, 2.866515718791933e-07),
            (8.0, 6.22096057427174e-16),
            (-1.0, 0.8413447460685429),
            (20.0, 2.7536241186061556e-89),
        ];
        for (z, want) in cases {
            let got = normal_sf(z);
            assert!((got - want).abs() <= 1e-12 * want, "z={z}: {got} != {want}");
        }
    }

    #[test]
    fn extremes() {
        assert_eq!(normal_sf(f64::INFINITY), 0.0);
        assert_eq!(normal_sf(f64::NEG_INFINITY), 1.0);
        assert!(normal_sf(f64::NAN).is_nan());
    }
}
