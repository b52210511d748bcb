//! Holm–Bonferroni step-down adjustment of p-values (Holm, "A simple
//! sequentially rejective multiple test procedure", Scand. J. Statist. 1979),
//! as statsmodels' `multipletests(p, method="holm")[1]`: with the m p-values
//! sorted ascending, `adj_(i) = max_{k <= i} min(1, (m - k + 1) p_(k))`.
//! Rejecting where `adj <= alpha` controls the family-wise error rate at alpha.

/// Holm-adjusted p-values in input order; NaN stays NaN and is not counted in m.
pub fn holm_adjust(p_values: &[f64]) -> Vec<f64> {
    let mut order: Vec<usize> = (0..p_values.len())
        .filter(|&i| !p_values[i].is_nan())
        .collect();
    order.sort_by(|&i, &j| p_values[i].total_cmp(&p_values[j]));
    let m = order.len();
    let mut adjusted = vec![f64::NAN; p_values.len()];
    let mut running_max = 0.0f64;
    for (rank, &i) in order.iter().enumerate() {
        let scaled = ((m - rank) as f64 * p_values[i]).min(1.0);
        running_max = running_max.max(scaled);
        adjusted[i] = running_max;
    }
    adjusted
}

#[cfg(test)]
mod tests {
    use super::*;

    fn assert_close(got: &[f64], want: &[f64]) {
        assert_eq!(got.len(), want.len());
        for (g, w) in got.iter().zip(want) {
            assert!(
                g.is_nan() && w.is_nan() || (g - w).abs() < 1e-15,
                "{got:?} != {want:?}"
            );
        }
    }

    #[test]
    fn matches_statsmodels() {
        // statsmodels 0.15.0: multipletests([0.01, 0.04, 0.03, 0.005, 0.2], method="holm")[1]
        let got = holm_adjust(&[0.01, 0.04, 0.03, 0.005, 0.2]);
        assert_close(&got, &[0.04, 0.09, 0.09, 0.025, 0.2]);
        // statsmodels 0.15.0, with ties and the cap at 1:
        // multipletests([0.5, 0.001, 0.02, 0.02, 0.9, 0.03], method="holm")[1]
        let got = holm_adjust(&[0.5, 0.001, 0.02, 0.02, 0.9, 0.03]);
        assert_close(&got, &[1.0, 0.006, 0.1, 0.1, 1.0, 0.1]);
    }

    #[test]
    fn nan_is_kept_and_not_counted() {
        // Same as the first statsmodels case with a NaN inserted: m stays 5.
        let got = holm_adjust(&[0.01, f64::NAN, 0.04, 0.03, 0.005, 0.2]);
        assert_close(&got, &[0.04, f64::NAN, 0.09, 0.09, 0.025, 0.2]);
    }

    #[test]
    fn edges() {
        assert!(holm_adjust(&[]).is_empty());
        assert_close(&holm_adjust(&[0.03]), &[0.03]);
        assert_close(&holm_adjust(&[f64::NAN]), &[f64::NAN]);
        // All equal: every one is multiplied by m, then the running max keeps them equal.
        assert_close(&holm_adjust(&[0.01; 3]), &[0.03; 3]);
        assert_close(&holm_adjust(&[0.6, 0.7]), &[1.0, 1.0]);
    }

    #[test]
    fn adjusted_values_are_monotone_in_the_raw_order() {
        let p = [0.2, 0.001, 0.04, 0.011, 0.012, 0.5, 0.013];
        let adj = holm_adjust(&p);
        for i in 0..p.len() {
            for j in 0..p.len() {
                if p[i] <= p[j] {
                    assert!(adj[i] <= adj[j], "{adj:?}");
                }
            }
            assert!(adj[i] >= p[i]);
        }
    }
}
