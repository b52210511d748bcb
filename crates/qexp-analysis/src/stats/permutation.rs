//! Two-sided permutation test of a difference in means (Fisher, "The Design
//! of Experiments", 1935, §21; Pitman, JRSS Suppl. 1937): under "no
//! difference" every split of the pooled values into groups of sizes n_a and
//! n_b is equally likely, so p is the share of splits whose |mean(b) -
//! mean(a)| is at least the observed one. Exact (every split enumerated) up to
//! [`EXACT_SPLITS`] splits, else estimated from [`RANDOM_SPLITS`] seeded random
//! splits as `(1 + hits) / (1 + splits)` (Phipson & Smyth, Stat. Appl. Genet.
//! Mol. Biol. 2010), so p is never 0. It needs no spread estimate, so it
//! stays valid for counts that are often constant (0 failures in every trial)
//! and ties, where a t statistic is undefined.

use super::rng::Rng;

/// Largest number of splits enumerated exactly.
pub const EXACT_SPLITS: f64 = 200_000.0;
/// Random splits drawn when there are more.
pub const RANDOM_SPLITS: usize = 20_000;

/// Two-sided permutation p of `mean(b) - mean(a)` over the finite values; None when a side is empty.
pub fn permutation_p(a: &[f64], b: &[f64], seed: u64) -> Option<f64> {
    let mut all: Vec<f64> = a.iter().copied().filter(|v| v.is_finite()).collect();
    let n_a = all.len();
    all.extend(b.iter().copied().filter(|v| v.is_finite()));
    let n = all.len();
    if n_a == 0 || n_a == n {
        return None;
    }
    let total: f64 = all.iter().sum();
    let (fa, fb) = (n_a as f64, (n - n_a) as f64);
    let stat = |sum_a: f64| ((total - sum_a) / fb - sum_a / fa).abs();
    let observed = stat(all[..n_a].iter().sum());
    // Splits that equal the observed one up to rounding count as at least as extreme.
    let bar = observed - 1e-9 * observed.max(total.abs() / n as f64);
    let splits = choose(n, n_a);
    if splits <= EXACT_SPLITS {
        let hits = count_extreme(&all, n_a, 0.0, &|sum_a| stat(sum_a) >= bar);
        return Some(hits as f64 / splits.round());
    }
    let mut rng = Rng::new(seed);
    let mut hits = 0usize;
    for _ in 0..RANDOM_SPLITS {
        // Partial Fisher–Yates: the first n_a places become a random group a.
        for i in 0..n_a {
            let j = i + rng.below(n - i);
            all.swap(i, j);
        }
        if stat(all[..n_a].iter().sum()) >= bar {
            hits += 1;
        }
    }
    Some((1 + hits) as f64 / (1 + RANDOM_SPLITS) as f64)
}

/// The smallest p [`permutation_p`] can give with `n_a` and `n_b` finite
/// values: one over the distinct relabelings, `C(n_a + n_b, n_a)` of them,
/// halved when the sizes are equal (swapping the groups then gives the same
/// |difference|, so the observed split always has a mirror); with more than
/// [`EXACT_SPLITS`] splits, the sampled test's `1 / (1 + RANDOM_SPLITS)`.
/// 1 when a side is empty.
pub fn permutation_floor(n_a: usize, n_b: usize) -> f64 {
    if n_a == 0 || n_b == 0 {
        return 1.0;
    }
    let splits = choose(n_a + n_b, n_a);
    if splits > EXACT_SPLITS {
        return 1.0 / (1 + RANDOM_SPLITS) as f64;
    }
    let distinct = if n_a == n_b { splits / 2.0 } else { splits };
    (1.0 / distinct.round()).min(1.0)
}

/// `C(n, k)` as a float.
fn choose(n: usize, k: usize) -> f64 {
    let k = k.min(n - k);
    (1..=k).fold(1.0, |acc, i| acc * (n - k + i) as f64 / i as f64)
}

/// Counts the `k`-subsets of `values` whose sum, added to `sum`, satisfies
/// `extreme`: a depth-first walk that keeps a running sum, so each split
/// costs O(1) rather than a fresh sum of k values.
fn count_extreme(values: &[f64], k: usize, sum: f64, extreme: &dyn Fn(f64) -> bool) -> u64 {
    if k == 0 {
        return u64::from(extreme(sum));
    }
    // Take values[i] as the next member, leaving enough values for the rest.
    (0..=values.len() - k)
        .map(|i| count_extreme(&values[i + 1..], k - 1, sum + values[i], extreme))
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(a: &[f64], b: &[f64]) -> f64 {
        permutation_p(a, b, 1).unwrap_or(f64::NAN)
    }

    #[test]
    fn fully_separated_samples_give_the_smallest_p() {
        // Only the observed split and its mirror are as extreme: 2 / C(10, 5).
        assert!((p(&[0.0; 5], &[3.0; 5]) - 2.0 / 252.0).abs() < 1e-15);
        assert!((p(&[1.0, 2.0, 3.0], &[7.0, 8.0, 9.0]) - 0.1).abs() < 1e-15);
        // Unequal sizes have no mirror split: only the observed one of C(5, 2).
        assert!((p(&[0.0, 0.0], &[3.0, 3.0, 3.0]) - 0.1).abs() < 1e-15);
    }

    #[test]
    fn matches_scipy() {
        // scipy 1.17.1: permutation_test((b, a), lambda x, y: mean(x) - mean(y),
        // permutation_type="independent", alternative="two-sided", n_resamples=inf)
        // gives 24/252 (with equal sizes the doubled one-sided p and |diff| agree).
        let a = [0.0, 1.0, 0.0, 0.0, 2.0];
        let b = [1.0, 3.0, 2.0, 1.0, 4.0];
        assert!((p(&a, &b) - 0.095_238_095_238_095_23).abs() < 1e-12);
    }

    #[test]
    fn no_difference_gives_p_one_and_empty_sides_none() {
        assert_eq!(p(&[0.0; 4], &[0.0; 6]), 1.0);
        assert_eq!(p(&[1.0, 2.0], &[2.0, 1.0]), 1.0);
        assert_eq!(permutation_p(&[], &[1.0], 1), None);
        assert_eq!(permutation_p(&[1.0], &[f64::NAN], 1), None);
    }

    #[test]
    fn large_samples_are_sampled_with_the_seed() {
        let a: Vec<f64> = (0..20).map(|i| f64::from(i % 3)).collect();
        let b: Vec<f64> = (0..20).map(|i| f64::from(i % 4)).collect();
        let x = permutation_p(&a, &b, 7);
        assert_eq!(x, permutation_p(&a, &b, 7));
        let v = x.unwrap_or(f64::NAN);
        assert!(v > 0.0 && v <= 1.0, "{v}");
        // Separated large samples: no random split is as extreme, p = 1 / (1 + splits).
        let lo = permutation_p(&[0.0; 20], &[1.0; 20], 7).unwrap_or(f64::NAN);
        assert_eq!(lo, 1.0 / (1 + RANDOM_SPLITS) as f64);
    }

    #[test]
    fn the_floor_is_one_over_the_distinct_relabelings() {
        // 5 vs 3 trials: C(8, 3) = 56 relabelings, none a mirror of another.
        assert_eq!(permutation_floor(5, 3), 1.0 / 56.0);
        assert_eq!(permutation_floor(3, 5), 1.0 / 56.0);
        // 5 vs 5: C(10, 5) = 252, in mirrored pairs.
        assert_eq!(permutation_floor(5, 5), 2.0 / 252.0);
        assert_eq!(permutation_floor(1, 1), 1.0);
        assert_eq!(permutation_floor(0, 3), 1.0);
        assert_eq!(permutation_floor(20, 20), 1.0 / (1 + RANDOM_SPLITS) as f64);
        // Fully separated samples reach it.
        for (a, b) in [(5, 3), (3, 5), (5, 5), (2, 3), (4, 1)] {
            let (va, vb) = (vec![0.0; a], vec![2.0; b]);
            assert!(
                (p(&va, &vb) - permutation_floor(a, b)).abs() < 1e-15,
                "{a} vs {b}"
            );
        }
    }

    #[test]
    fn every_split_is_counted_once() {
        let values = [1.0, 2.0, 3.0, 4.0, 5.0];
        assert_eq!(count_extreme(&values, 2, 0.0, &|_| true), 10);
        // 2-subsets of 1..=5 with sum >= 8: {3,5}, {4,5}.
        assert_eq!(count_extreme(&values, 2, 0.0, &|s| s >= 8.0), 2);
        assert_eq!(choose(10, 5), 252.0);
    }
}
