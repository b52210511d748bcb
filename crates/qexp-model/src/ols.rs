//! Weighted least squares on a handful of coefficients: the normal
//! equations, solved by Gaussian elimination with partial pivoting on
//! columns scaled to unit size (lengths² reach 10¹⁰), with the classical
//! standard errors `σ²(XᵀWX)⁻¹` (e.g. Seber & Lee, *Linear Regression
//! Analysis*, ch. 3). Weights `1/y²` make it a fit of relative errors, the
//! errors qexp reports.

// Matrix code reads as the textbook's with indices.
#![allow(clippy::needless_range_loop)]

/// A solved fit.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Wls {
    /// One coefficient per column.
    pub beta: Vec<f64>,
    /// Standard error of each (NaN without residual degrees of freedom).
    pub se: Vec<f64>,
    /// Residual degrees of freedom.
    pub df: usize,
}

/// Fits `y ≈ X·β` minimising `Σ w·(y − Xβ)²`; None when `X` is singular or empty.
pub(crate) fn wls(x: &[Vec<f64>], y: &[f64], w: &[f64]) -> Option<Wls> {
    let k = x.first()?.len();
    let n = y.len();
    if k == 0 || n < k {
        return None;
    }
    let scale: Vec<f64> = (0..k)
        .map(|j| x.iter().map(|r| r[j].abs()).fold(0.0, f64::max).max(1e-300))
        .collect();
    let mut a = vec![vec![0.0; k]; k];
    let mut b = vec![0.0; k];
    for ((row, &yi), &wi) in x.iter().zip(y).zip(w) {
        for i in 0..k {
            let xi = row[i] / scale[i];
            b[i] += wi * xi * yi;
            for j in 0..k {
                a[i][j] += wi * xi * row[j] / scale[j];
            }
        }
    }
    let inv = invert(a)?;
    let beta_s: Vec<f64> = (0..k)
        .map(|i| (0..k).map(|j| inv[i][j] * b[j]).sum())
        .collect();
    let rss: f64 = x
        .iter()
        .zip(y)
        .zip(w)
        .map(|((row, &yi), &wi)| {
            let fit: f64 = (0..k).map(|j| row[j] / scale[j] * beta_s[j]).sum();
            wi * (yi - fit).powi(2)
        })
        .sum();
    let df = n - k;
    let sigma2 = if df > 0 { rss / df as f64 } else { f64::NAN };
    Some(Wls {
        beta: (0..k).map(|j| beta_s[j] / scale[j]).collect(),
        se: (0..k)
            .map(|j| (sigma2 * inv[j][j]).sqrt() / scale[j])
            .collect(),
        df,
    })
}

/// The inverse of a small square matrix; None when (nearly) singular.
fn invert(mut a: Vec<Vec<f64>>) -> Option<Vec<Vec<f64>>> {
    let k = a.len();
    let mut inv: Vec<Vec<f64>> = (0..k)
        .map(|i| (0..k).map(|j| f64::from(u8::from(i == j))).collect())
        .collect();
    let norm = a.iter().flatten().map(|v| v.abs()).fold(0.0, f64::max);
    for col in 0..k {
        let pivot = (col..k).max_by(|&i, &j| a[i][col].abs().total_cmp(&a[j][col].abs()))?;
        if a[pivot][col].abs() <= 1e-10 * norm.max(1e-300) {
            return None;
        }
        a.swap(col, pivot);
        inv.swap(col, pivot);
        let d = a[col][col];
        for j in 0..k {
            a[col][j] /= d;
            inv[col][j] /= d;
        }
        for i in 0..k {
            if i != col {
                let f = a[i][col];
                for j in 0..k {
                    a[i][j] -= f * a[col][j];
                    inv[i][j] -= f * inv[col][j];
                }
            }
        }
    }
    Some(inv)
}

/// The 95th percentile of Student's t with `df` degrees of freedom (a
/// two-sided 90% interval): the tables' values for 1 to 4 degrees of
/// freedom, where few trials put it; from 5 on, the Cornish–Fisher expansion
/// about the normal quantile (Abramowitz & Stegun 26.7.5), within 0.3% of
/// the exact value; NaN for 0.
pub(crate) fn t95(df: usize) -> f64 {
    match df {
        0 => return f64::NAN,
        1 => return 6.313_752,
        2 => return 2.919_986,
        3 => return 2.353_363,
        4 => return 2.131_847,
        _ => {}
    }
    let z: f64 = 1.644_853_626_951;
    let v = df as f64;
    let z3 = z.powi(3);
    let z5 = z.powi(5);
    let z7 = z.powi(7);
    z + (z3 + z) / (4.0 * v)
        + (5.0 * z5 + 16.0 * z3 + 3.0 * z) / (96.0 * v * v)
        + (3.0 * z7 + 19.0 * z5 + 17.0 * z3 - 15.0 * z) / (384.0 * v.powi(3))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recovers_an_exact_quadratic_in_large_units() {
        let ls = [1000.0, 8000.0, 30_000.0, 100_000.0];
        let f = |l: f64| 0.3 + 1.4e-4 * l + 2e-10 * l * l;
        let x: Vec<Vec<f64>> = ls.iter().map(|&l| vec![1.0, l, l * l]).collect();
        let y: Vec<f64> = ls.iter().map(|&l| f(l)).collect();
        let w: Vec<f64> = y.iter().map(|y| 1.0 / (y * y)).collect();
        let fit = wls(&x, &y, &w).unwrap();
        for (got, want) in fit.beta.iter().zip([0.3, 1.4e-4, 2e-10]) {
            assert!((got / want - 1.0).abs() < 1e-8, "{got} vs {want}");
        }
        assert_eq!(fit.df, 1);
        assert!(fit.se.iter().all(|s| *s < 1e-6 * 0.3));
    }

    #[test]
    fn singular_designs_are_refused() {
        let x = vec![vec![1.0, 2.0], vec![1.0, 2.0], vec![1.0, 2.0]];
        assert_eq!(wls(&x, &[1.0, 1.0, 1.0], &[1.0; 3]), None);
        assert_eq!(wls(&[], &[], &[]), None);
    }

    #[test]
    fn t_quantiles_match_tables() {
        // Exact, from the tables; z for large df.
        let table = [
            (1, 6.314),
            (2, 2.920),
            (3, 2.353),
            (4, 2.132),
            (5, 2.015),
            (6, 1.943),
            (10, 1.812),
            (30, 1.697),
            (100_000, 1.645),
        ];
        for (df, want) in table {
            assert!((t95(df) / want - 1.0).abs() < 0.003, "df {df}: {}", t95(df));
        }
        assert!(t95(0).is_nan());
    }
}
