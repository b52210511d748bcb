//! Sample quantiles by linear interpolation between order statistics: Hyndman &
//! Fan (1996), "Sample quantiles in statistical packages", definition 7 — the
//! default of numpy's `quantile` (`method="linear"`) and R's `quantile`.
//! The position of quantile `q` among `n` sorted values is `h = (n - 1) q`.

/// Where quantile `q` lies among `n` sorted values: the lower order
/// statistic's index `floor(h)` and the fraction `h - floor(h)` towards the
/// next, with `h = (n - 1) q`; None when `n` is 0 or `q` is outside `[0, 1]`.
pub(crate) fn position(n: usize, q: f64) -> Option<(usize, f64)> {
    if n == 0 || !(0.0..=1.0).contains(&q) {
        return None;
    }
    let h = (n - 1) as f64 * q;
    let lo = h.floor();
    Some((lo as usize, h - lo))
}

/// Quantile `q` in `[0, 1]` of ascending, finite `sorted`; None when empty or `q` is outside `[0, 1]`.
///
/// The input must already be sorted and free of NaN (see [`sorted_finite`]).
pub fn quantile(sorted: &[f64], q: f64) -> Option<f64> {
    let n = sorted.len();
    let (i, gamma) = position(n, q)?;
    // `i` is in 0..=n-1 because q is in [0, 1]; `get` keeps this panic-free anyway.
    let a = *sorted.get(i)?;
    let b = *sorted.get((i + 1).min(n - 1))?;
    Some(lerp(a, b, gamma))
}

/// Quantile `q` of finite, *unsorted* `values`, reordering them in place.
///
/// Same result as [`quantile`] on the sorted values, in O(n) by selection
/// instead of O(n log n) by sorting and without a copy: for pooled samples
/// of millions of values.
pub fn quantile_in_place(values: &mut [f64], q: f64) -> Option<f64> {
    let (i, gamma) = position(values.len(), q)?;
    let (_, a, right) = values.select_nth_unstable_by(i, f64::total_cmp);
    let a = *a;
    // The next order statistic is the smallest value right of position i.
    let b = right.iter().copied().min_by(f64::total_cmp).unwrap_or(a);
    Some(lerp(a, b, gamma))
}

/// Quantiles `qs` of finite, *unsorted* `values`, reordering them in place
/// (None for a `q` outside `[0, 1]`, all None when empty).
///
/// Same results as [`quantile`] on the sorted values: the order statistics
/// every `q` needs are put in their sorted places by nested selection, in
/// O(n log k) for k quantiles instead of O(n log n) by sorting.
pub fn quantiles_in_place(values: &mut [f64], qs: &[f64]) -> Vec<Option<f64>> {
    let n = values.len();
    let positions: Vec<Option<(usize, f64)>> = qs.iter().map(|&q| position(n, q)).collect();
    let mut targets: Vec<usize> = positions
        .iter()
        .flatten()
        .flat_map(|&(i, _)| [i, (i + 1).min(n - 1)])
        .collect();
    targets.sort_unstable();
    targets.dedup();
    select_all(values, &targets);
    positions
        .into_iter()
        .map(|p| {
            let (i, gamma) = p?;
            let a = *values.get(i)?;
            let b = *values.get((i + 1).min(n - 1))?;
            Some(lerp(a, b, gamma))
        })
        .collect()
}

/// Puts the order statistics at `targets` (ascending indices into `v`) in
/// their sorted places.
pub(crate) fn select_all(v: &mut [f64], targets: &[usize]) {
    let mid = targets.len() / 2;
    let Some(&k) = targets.get(mid) else {
        return;
    };
    if k >= v.len() {
        return;
    }
    let (left, _, right) = v.select_nth_unstable_by(k, f64::total_cmp);
    select_all(left, &targets[..mid]);
    let rest: Vec<usize> = targets[mid + 1..].iter().map(|t| t - k - 1).collect();
    select_all(right, &rest);
}

/// numpy's `_lerp`: interpolate from the nearer end so that `t = 1` gives `b` exactly.
pub(crate) fn lerp(a: f64, b: f64, t: f64) -> f64 {
    let diff = b - a;
    if t >= 0.5 {
        b - diff * (1.0 - t)
    } else {
        a + diff * t
    }
}

/// The finite values of `values` (NaN and ±inf dropped), sorted ascending.
pub fn sorted_finite(values: &[f64]) -> Vec<f64> {
    let mut v: Vec<f64> = values.iter().copied().filter(|x| x.is_finite()).collect();
    // Values equal under `total_cmp` are the same bits, so an unstable sort
    // (faster on large samples) gives the same vector.
    v.sort_unstable_by(f64::total_cmp);
    v
}

/// Median of the finite values of unsorted `values`; None when there are none.
pub fn median(values: &[f64]) -> Option<f64> {
    quantile(&sorted_finite(values), 0.5)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() <= 1e-12 * b.abs().max(1.0)
    }

    #[test]
    fn in_place_selection_matches_sorted_quantile() {
        let mut x: u64 = 7;
        let values: Vec<f64> = (0..1001)
            .map(|_| {
                x = x
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                (x >> 11) as f64 / (1u64 << 53) as f64
            })
            .collect();
        let sorted = sorted_finite(&values);
        for q in [0.0, 0.01, 0.5, 0.9, 0.99, 0.999, 1.0] {
            let mut v = values.clone();
            assert_eq!(
                quantile_in_place(&mut v, q),
                quantile(&sorted, q),
                "q = {q}"
            );
        }
        assert_eq!(quantile_in_place(&mut [], 0.5), None);
        assert_eq!(quantile_in_place(&mut [3.0], 0.99), Some(3.0));
    }

    #[test]
    fn empty_and_bad_q_give_none() {
        assert_eq!(quantile(&[], 0.5), None);
        assert_eq!(quantile(&[1.0, 2.0], -0.1), None);
        assert_eq!(quantile(&[1.0, 2.0], 1.1), None);
        assert_eq!(quantile(&[1.0, 2.0], f64::NAN), None);
        assert_eq!(median(&[]), None);
        assert_eq!(median(&[f64::NAN, f64::INFINITY]), None);
    }

    #[test]
    fn single_value_is_every_quantile() {
        for q in [0.0, 0.25, 0.5, 1.0] {
            assert_eq!(quantile(&[7.5], q), Some(7.5));
        }
    }

    #[test]
    fn all_equal_values() {
        let v = [3.0; 9];
        for q in [0.0, 0.1, 0.5, 0.9, 1.0] {
            assert_eq!(quantile(&v, q), Some(3.0));
        }
    }

    #[test]
    fn matches_numpy_linear_on_1_to_10() {
        // numpy 2.4.6: np.quantile(np.arange(1, 11.0), q)
        let x: Vec<f64> = (1..=10).map(f64::from).collect();
        let cases = [
            (0.0, 1.0),
            (0.1, 1.9),
            (0.25, 3.25),
            (0.5, 5.5),
            (0.75, 7.75),
            (0.9, 9.1),
            (1.0 / 3.0, 4.0),
            (1.0, 10.0),
        ];
        for (q, want) in cases {
            let got = quantile(&x, q).unwrap_or(f64::NAN);
            assert!(close(got, want), "q={q}: {got} != {want}");
        }
    }

    #[test]
    fn matches_numpy_with_negatives_and_ties() {
        // numpy 2.4.6: np.quantile([0.3,-1.2,4.4,2.0,2.0,7.1,0.0], q)
        let x = sorted_finite(&[0.3, -1.2, 4.4, 2.0, 2.0, 7.1, 0.0]);
        let cases = [
            (0.05, -0.8399999999999999),
            (0.25, 0.15),
            (0.5, 2.0),
            (0.75, 3.2),
            (0.99, 6.937999999999998),
        ];
        for (q, want) in cases {
            let got = quantile(&x, q).unwrap_or(f64::NAN);
            assert!(close(got, want), "q={q}: {got} != {want}");
        }
    }

    #[test]
    fn sorted_finite_drops_nan_and_inf() {
        let v = sorted_finite(&[3.0, f64::NAN, -1.0, f64::INFINITY, 2.0, f64::NEG_INFINITY]);
        assert_eq!(v, vec![-1.0, 2.0, 3.0]);
    }

    #[test]
    fn median_of_unsorted_with_nan() {
        assert_eq!(median(&[3.0, f64::NAN, 1.0, 2.0, f64::INFINITY]), Some(2.0));
        assert_eq!(median(&[4.0, 1.0, f64::NAN, 3.0, 2.0]), Some(2.5));
        assert_eq!(median(&[5.0]), Some(5.0));
    }

    #[test]
    fn many_quantiles_in_place_match_the_sorted_ones() {
        let levels: Vec<f64> = (0..=100)
            .map(|i| f64::from(i) / 100.0)
            .chain([1.5])
            .collect();
        let mut rng = crate::stats::Rng::new(7);
        for n in [0usize, 1, 2, 3, 10, 101, 1000] {
            // Few distinct values, so ties straddle the selected positions.
            let values: Vec<f64> = (0..n).map(|_| (rng.next_f64() * 20.0).floor()).collect();
            let sorted = sorted_finite(&values);
            let want: Vec<Option<f64>> = levels.iter().map(|&q| quantile(&sorted, q)).collect();
            let mut v = values.clone();
            assert_eq!(quantiles_in_place(&mut v, &levels), want, "n = {n}");
        }
    }
}
