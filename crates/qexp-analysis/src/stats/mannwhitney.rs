//! Two-sided Mann–Whitney U test (Mann & Whitney 1947; Wilcoxon rank-sum),
//! computed as scipy's `mannwhitneyu(a, b, alternative="two-sided")`: U of the
//! first sample from mid-ranks; the exact null distribution (counts of U are
//! the coefficients of the Gaussian binomial `[n1+n2 choose n1]_q`, Andrews,
//! "The Theory of Partitions", 1976, §3.3) when there are no ties and both
//! sides have at most [`EXACT_MAX`] values; otherwise the normal approximation
//! with tie correction and continuity correction (scipy's
//! `method="asymptotic", use_continuity=True`). Non-finite values (NaN for
//! failed requests, ±inf) are dropped first.

use super::normal::normal_sf;

/// Largest sample size (on each side) for which the exact distribution is used.
pub const EXACT_MAX: usize = 20;

/// Outcome of a two-sided Mann–Whitney U test.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MwResult {
    /// U statistic of the first sample (scipy's `statistic`).
    pub u: f64,
    /// Two-sided p-value, at most 1.
    pub p_value: f64,
    /// True when the p-value comes from the exact null distribution.
    pub exact: bool,
}

/// Two-sided Mann–Whitney U test of `a` against `b`; None if either has no finite values.
pub fn mann_whitney_u(a: &[f64], b: &[f64]) -> Option<MwResult> {
    let mut all: Vec<(f64, bool)> = a
        .iter()
        .map(|&x| (x, true))
        .chain(b.iter().map(|&x| (x, false)))
        .filter(|p| p.0.is_finite())
        .collect();
    let n1 = all.iter().filter(|p| p.1).count();
    let n2 = all.len() - n1;
    if n1 == 0 || n2 == 0 {
        return None;
    }
    all.sort_by(|x, y| x.0.total_cmp(&y.0));
    let (mut rank_sum, mut tie_term) = (0.0, 0.0);
    let mut i = 0;
    while i < all.len() {
        let group = all[i..].iter().take_while(|p| p.0 == all[i].0).count();
        let t = group as f64;
        let mid_rank = i as f64 + (t + 1.0) / 2.0;
        rank_sum += mid_rank * all[i..i + group].iter().filter(|p| p.1).count() as f64;
        tie_term += t * t * t - t;
        i += group;
    }
    let (f1, f2) = (n1 as f64, n2 as f64);
    let u1 = rank_sum - f1 * (f1 + 1.0) / 2.0;
    let u = u1.max(f1 * f2 - u1);
    if tie_term == 0.0 && n1 <= EXACT_MAX && n2 <= EXACT_MAX {
        // Without ties U is an integer, so the cast is exact.
        let p = 2.0 * exact_sf(u.round() as usize, n1, n2);
        return Some(MwResult {
            u: u1,
            p_value: p.min(1.0),
            exact: true,
        });
    }
    let n = f1 + f2;
    let sigma = (f1 * f2 / 12.0 * ((n + 1.0) - tie_term / (n * (n - 1.0)))).sqrt();
    let p = if sigma > 0.0 {
        2.0 * normal_sf((u - f1 * f2 / 2.0 - 0.5) / sigma)
    } else {
        1.0 // all values tied: no evidence of a shift
    };
    Some(MwResult {
        u: u1,
        p_value: p.min(1.0),
        exact: false,
    })
}

/// Null frequencies of U for sizes (m, n): coefficient k counts arrangements with U = k.
fn u_counts(m: usize, n: usize) -> Vec<i64> {
    let (m, n) = (m.min(n), m.max(n));
    // [m+n choose m]_q = prod_{i=1..m} (1 - q^{n+i}) / (1 - q^i); the buffer
    // holds the intermediate degree m*n + m before the last division. Each
    // intermediate is a difference of two coefficients of [n+i-1 choose i-1]_q
    // or a final one, so |c| <= C(m+n, m) (1.4e11 at EXACT_MAX): exact in i64.
    let mut c = vec![0i64; m * n + m + 1];
    c[0] = 1;
    for i in 1..=m {
        let d = n + i;
        for k in (d..c.len()).rev() {
            c[k] -= c[k - d];
        }
        for k in i..c.len() {
            c[k] += c[k - i];
        }
    }
    c.truncate(m * n + 1);
    c
}

/// `P(U >= k)` under the null for sizes (n1, n2) without ties.
fn exact_sf(k: usize, n1: usize, n2: usize) -> f64 {
    let c = u_counts(n1, n2);
    let total: i64 = c.iter().sum();
    let tail: i64 = c.iter().skip(k).sum();
    tail as f64 / total as f64
}

/// Smallest two-sided exact p-value attainable with sizes (n1, n2): `2 / C(n1+n2, n1)`, capped at 1.
pub fn min_attainable_p(n1: usize, n2: usize) -> f64 {
    let k = n1.min(n2);
    let choose = (1..=k).fold(1.0, |acc, i| acc * (n1 + n2 - k + i) as f64 / i as f64);
    (2.0 / choose).min(1.0)
}

/// Smallest trials per side n with `min_attainable_p(n, n) <= alpha` (exact test, no ties); `usize::MAX` when alpha is not positive.
pub fn trials_needed(alpha: f64) -> usize {
    // C(2n, n) overflows f64 near n = 515, after which the bound is 0, so the
    // search ends well before 2048 for any positive alpha.
    if alpha.is_nan() || alpha <= 0.0 {
        return usize::MAX;
    }
    (1..2048)
        .find(|&n| min_attainable_p(n, n) <= alpha)
        .unwrap_or(usize::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mw(a: &[f64], b: &[f64]) -> MwResult {
        let nan = MwResult {
            u: f64::NAN,
            p_value: f64::NAN,
            exact: false,
        };
        mann_whitney_u(a, b).unwrap_or(nan)
    }

    fn assert_p(r: MwResult, u: f64, p: f64, exact: bool) {
        assert_eq!((r.u, r.exact), (u, exact), "{r:?}");
        assert!((r.p_value - p).abs() <= 1e-12 * p, "{} != {p}", r.p_value);
    }

    #[test]
    fn empty_sides_give_none() {
        assert_eq!(mann_whitney_u(&[], &[1.0]), None);
        assert_eq!(mann_whitney_u(&[1.0], &[f64::NAN, f64::NAN]), None);
    }

    #[test]
    fn exact_matches_scipy() {
        // scipy 1.17.1: mannwhitneyu(a, b, method="exact") -> (statistic, pvalue)
        let r = mw(&[1., 2., 3., 4., 5.], &[6., 7., 8., 9., 10.]);
        assert_p(r, 0.0, 0.007936507936507936, true);
        let a = [19.2, 21.5, 18.7, 22.1, 20.3, 19.9];
        let b = [23.4, 22.8, 24.1, 21.9, 25.0, 23.3, 22.6];
        assert_p(mw(&a, &b), 1.0, 0.002331002331002331, true);
        let a = [3.1, 4.5, 2.2, 5.9, 4.8, 3.3, 6.1, 2.9];
        let b = [4.0, 5.2, 6.6, 3.8, 7.4, 5.5, 6.9, 4.2, 5.1];
        assert_p(mw(&a, &b), 18.0, 0.09271904566022213, true);
        // n1 = n2 = 1: U = 0, P(U >= 1) = 1/2, doubled.
        assert_p(mw(&[1.0], &[2.0]), 0.0, 1.0, true);
    }

    #[test]
    fn exact_at_size_limit_matches_scipy() {
        // scipy 1.17.1 exact: statistic 125.0, pvalue 0.042984632900965054.
        let a = [
            45.9903, 43.3782, 48.7582, 52.1022, 55.6802, 50.5485, 47.2368, 46.0761, 53.7437,
            58.1739, 51.3638, 43.8334, 45.2087, 58.0001, 51.0144, 41.3393, 49.5815, 44.1839,
            46.8536, 47.56,
        ];
        let b = [
            50.4334, 56.7669, 53.6846, 51.0528, 56.0482, 58.1493, 45.7849, 52.7163, 49.0963,
            53.1342, 47.5529, 54.1035, 53.8106, 52.4783, 48.7604, 52.019, 48.5434, 47.224, 55.1239,
            48.4533,
        ];
        assert_p(mw(&a, &b), 125.0, 0.042984632900965054, true);
        // Swapping the sides gives U2 = 400 - 125 and the same p.
        assert_p(mw(&b, &a), 275.0, 0.042984632900965054, true);
    }

    #[test]
    fn ties_use_normal_approximation_like_scipy() {
        // scipy 1.17.1 mannwhitneyu(method="asymptotic"): statistic 9.0, p 0.09667054340670089.
        let r = mw(
            &[1., 2., 2., 3., 4., 5., f64::NAN],
            &[2., 3., 3., 6., 7., 8., 9.],
        );
        assert_p(r, 9.0, 0.09667054340670089, false);
    }

    #[test]
    fn large_samples_use_normal_approximation_like_scipy() {
        // 21 vs 20 values without ties: over EXACT_MAX, so asymptotic.
        // scipy 1.17.1 (method="asymptotic"): statistic 230.0, p 0.611032967113888.
        let a: Vec<f64> = (1..=21).map(|i| f64::from(i) + 0.5).collect();
        let b: Vec<f64> = (1..=20).map(f64::from).collect();
        assert_p(mw(&a, &b), 230.0, 0.611032967113888, false);
    }

    #[test]
    fn all_equal_values_give_p_one() {
        // scipy 1.17.1: mannwhitneyu([5]*4, [5]*6) -> statistic 12.0, pvalue 1.0
        assert_p(mw(&[5.0; 4], &[5.0; 6]), 12.0, 1.0, false);
    }

    #[test]
    fn u_counts_are_gaussian_binomial_coefficients() {
        // [4 choose 2]_q = 1 + q + 2q^2 + q^3 + q^4
        assert_eq!(u_counts(2, 2), vec![1, 1, 2, 1, 1]);
        let c = u_counts(20, 20);
        assert_eq!(c.len(), 401);
        assert_eq!(c.iter().sum::<i64>(), 137_846_528_820); // C(40, 20)
        assert!(c.iter().zip(c.iter().rev()).all(|(x, y)| x == y && *x > 0));
        assert_eq!(u_counts(3, 1), u_counts(1, 3));
    }

    #[test]
    fn minimum_p_and_trials_needed() {
        assert_eq!(min_attainable_p(3, 3), 0.1); // 2 / C(6, 3) = 2/20
        assert!((min_attainable_p(4, 4) - 2.0 / 70.0).abs() < 1e-15);
        assert_eq!(min_attainable_p(1, 1), 1.0);
        assert_eq!(min_attainable_p(0, 5), 1.0);
        assert_eq!(trials_needed(0.05), 4);
        assert_eq!(trials_needed(0.1), 3);
        assert_eq!(trials_needed(0.01), 5); // 2/C(10,5) = 0.0079; 2/C(8,4) = 0.029
        assert_eq!(trials_needed(1.0), 1);
        assert_eq!(trials_needed(0.0), usize::MAX);
        assert_eq!(trials_needed(f64::NAN), usize::MAX);
        assert!(trials_needed(1e-300) < 2048);
        // The bound is attained: fully separated samples of 4 reach 2/70.
        let r = mw(&[1., 2., 3., 4.], &[5., 6., 7., 8.]);
        assert!((r.p_value - min_attainable_p(4, 4)).abs() < 1e-15);
    }
}
