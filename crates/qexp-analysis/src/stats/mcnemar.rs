//! McNemar's test of paired binary outcomes (McNemar, "Note on the sampling
//! error of the difference between correlated proportions or percentages",
//! Psychometrika 1947), in its exact form: given the items on which exactly
//! one side succeeded (b for A only, c for B only), under "both sides are
//! equally accurate" b is Binomial(b + c, 1/2), and the two-sided p-value is
//! `min(1, 2 P(X <= min(b, c)))`, as statsmodels'
//! `mcnemar([[a, b], [c, d]], exact=True).pvalue`. Items both sides got right
//! or both got wrong carry no evidence and do not enter. Being conditional
//! and discrete, the test is conservative: under the null it rejects at most
//! (often well under) alpha of the time.
//!
//! The binomial terms are computed as Loader does for R's `dbinom` (Loader,
//! "Fast and accurate computation of binomial probabilities", 2000): the
//! largest term of the tail from Stirling's series and the deviance, then the
//! rest by the ratio `t(i-1) = t(i) i / (n - i + 1)`, so b + c in the
//! hundreds of thousands neither overflows nor loses digits.

use std::f64::consts::PI;

/// Paired outcomes over the same items: how many both, only A, only B, or neither got right.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Paired {
    /// Items both A and B got right.
    pub both: u64,
    /// Items only A got right.
    pub only_a: u64,
    /// Items only B got right.
    pub only_b: u64,
    /// Items neither got right.
    pub neither: u64,
}

impl Paired {
    /// Counts the table from per-item outcomes in the same item order; None if the lengths differ.
    pub fn from_outcomes(a: &[bool], b: &[bool]) -> Option<Paired> {
        if a.len() != b.len() {
            return None;
        }
        let mut t = Paired::default();
        for (&x, &y) in a.iter().zip(b) {
            match (x, y) {
                (true, true) => t.both += 1,
                (true, false) => t.only_a += 1,
                (false, true) => t.only_b += 1,
                (false, false) => t.neither += 1,
            }
        }
        Some(t)
    }

    /// Items counted, `both + only_a + only_b + neither`.
    pub fn n(&self) -> u64 {
        self.both + self.only_a + self.only_b + self.neither
    }

    /// Two-sided exact McNemar p-value; 1 when no item is discordant.
    ///
    /// `min(1, 2 P(X <= min(only_a, only_b)))` with X ~ Bin(only_a + only_b, 1/2).
    pub fn exact_p(&self) -> f64 {
        let n = self.only_a + self.only_b;
        let k = self.only_a.min(self.only_b);
        if n == 0 {
            return 1.0;
        }
        (2.0 * half_binomial_cdf(k, n)).min(1.0)
    }
}

/// `P(X <= k)` for X ~ Bin(n, 1/2) and `k <= n / 2`.
fn half_binomial_cdf(k: u64, n: u64) -> f64 {
    // The terms rise up to k (k is at most the mode), so summing from k
    // downwards meets the largest first and may stop once the rest vanishes.
    let top = half_binomial_pmf(k, n);
    let (mut sum, mut ratio) = (1.0f64, 1.0f64);
    let nf = n as f64;
    for i in (1..=k).rev() {
        let i = i as f64;
        ratio *= i / (nf - i + 1.0);
        sum += ratio;
        if ratio < 1e-17 * sum {
            break;
        }
    }
    top * sum
}

/// `P(X = k)` for X ~ Bin(n, 1/2), by Loader's saddle-point form.
fn half_binomial_pmf(k: u64, n: u64) -> f64 {
    if k == 0 || k == n {
        // 2^-n, exact down to the smallest subnormal.
        return (-(n as f64)).exp2();
    }
    let (kf, nf) = (k as f64, n as f64);
    let half = nf / 2.0;
    let lc = stirlerr(n) - stirlerr(k) - stirlerr(n - k) - bd0(kf, half) - bd0(nf - kf, half);
    // 0.5 ln(n / (2π k (n - k))), written so that no product overflows.
    let lf = (2.0 * PI).ln() + kf.ln() + (-kf / nf).ln_1p();
    (lc - 0.5 * lf).exp()
}

/// `ln n! - ln(sqrt(2πn) (n/e)^n)`, the error of Stirling's formula.
fn stirlerr(n: u64) -> f64 {
    let x = n as f64;
    if n <= 15 {
        // Directly: ln n! (exact in f64 up to 15!) is below 28, so the
        // difference loses at most about 1e-14 absolute, which is what the
        // log-probability needs.
        let fact: f64 = (1..=n).map(|i| i as f64).product();
        return fact.ln() - (x + 0.5) * x.ln() + x - 0.5 * (2.0 * PI).ln();
    }
    // Stirling's series 1/(12n) - 1/(360n³) + 1/(1260n⁵) - 1/(1680n⁷) + 1/(1188n⁹),
    // cut where the next term is below double precision (Loader's cut-offs).
    const S0: f64 = 1.0 / 12.0;
    const S1: f64 = 1.0 / 360.0;
    const S2: f64 = 1.0 / 1260.0;
    const S3: f64 = 1.0 / 1680.0;
    const S4: f64 = 1.0 / 1188.0;
    let nn = x * x;
    if n > 500 {
        (S0 - S1 / nn) / x
    } else if n > 80 {
        (S0 - (S1 - S2 / nn) / nn) / x
    } else if n > 35 {
        (S0 - (S1 - (S2 - S3 / nn) / nn) / nn) / x
    } else {
        (S0 - (S1 - (S2 - (S3 - S4 / nn) / nn) / nn) / nn) / x
    }
}

/// The deviance term `x ln(x / np) + np - x`; by its series near np, where the direct form cancels.
fn bd0(x: f64, np: f64) -> f64 {
    if (x - np).abs() < 0.1 * (x + np) {
        let v = (x - np) / (x + np);
        let mut s = (x - np) * v;
        let mut ej = 2.0 * x * v;
        let v2 = v * v;
        // The series converges as v² <= 0.01 per term: 16 terms reach 1e-32.
        for j in 1..40 {
            ej *= v2;
            let next = s + ej / f64::from(2 * j + 1);
            if next == s {
                return next;
            }
            s = next;
        }
        s
    } else {
        x * (x / np).ln() + np - x
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::close;
    use crate::stats::Rng;

    fn table(b: u64, c: u64) -> Paired {
        Paired {
            both: 0,
            only_a: b,
            only_b: c,
            neither: 0,
        }
    }

    #[test]
    fn exact_p_matches_statsmodels() {
        // statsmodels 0.15.0 (scipy 1.17.1):
        // statsmodels.stats.contingency_tables.mcnemar([[a, b], [c, d]], exact=True).pvalue
        let cases = [
            (10, 0, 0, 10, 1.0),
            (5, 7, 7, 3, 1.0),
            (20, 0, 5, 1, 0.0625),
            (20, 5, 0, 1, 0.0625),
            (30, 3, 12, 5, 0.035_156_25),
            (100, 40, 60, 10, 0.056_887_933_640_980_89),
            (1000, 4000, 4200, 500, 0.027_972_423_571_324_654),
            (0, 1, 0, 0, 1.0),
            (0, 1, 2, 0, 1.0),
            (0, 10, 30, 0, 0.002_221_433_773_229_364_3),
            (0, 12, 30, 0, 0.007_915_897_334_896_727),
            (0, 50_000, 50_000, 0, 1.0),
            (0, 49_500, 50_500, 0, 0.001_582_359_878_851_515_4),
            (0, 49_000, 51_000, 0, 2.588_716_038_346_894_3e-10),
            // 2 * 2^-100000 underflows to 0 in both.
            (0, 0, 100_000, 0, 0.0),
        ];
        for (a, b, c, d, want) in cases {
            let t = Paired {
                both: a,
                only_a: b,
                only_b: c,
                neither: d,
            };
            close(t.exact_p(), want, 1e-12);
        }
    }

    #[test]
    fn paired_counts_outcomes() {
        let a = [true, true, false, false, true];
        let b = [true, false, true, false, false];
        let t = Paired::from_outcomes(&a, &b).unwrap();
        assert_eq!(
            t,
            Paired {
                both: 1,
                only_a: 2,
                only_b: 1,
                neither: 1
            }
        );
        assert_eq!(t.n(), 5);
        assert_eq!(Paired::from_outcomes(&a, &b[..4]), None);
        assert_eq!(Paired::from_outcomes(&[], &[]), Some(Paired::default()));
    }

    #[test]
    fn exact_p_edges() {
        // No discordant item: no evidence either way.
        assert_eq!(Paired::default().exact_p(), 1.0);
        assert_eq!(table(0, 0).exact_p(), 1.0);
        // A tie is never evidence; the sides are symmetric.
        for b in [1, 2, 17, 5000] {
            assert_eq!(table(b, b).exact_p(), 1.0);
        }
        for (b, c) in [(0, 5), (3, 12), (40, 60), (4000, 4200)] {
            assert_eq!(table(b, c).exact_p(), table(c, b).exact_p());
        }
        // 0 vs c: exactly 2 * 2^-c, the smallest p the test can give with c discordant items.
        for c in [1u64, 5, 6, 30, 1000] {
            let want = (2.0 * 0.5f64.powi(c as i32)).min(1.0);
            close(table(0, c).exact_p(), want, 1e-14);
        }
        // Small n against a direct sum of binomial coefficients.
        for n in 1u64..=40 {
            for k in 0..=n / 2 {
                let mut coef = 1.0f64;
                let mut sum = 1.0f64;
                for i in 1..=k {
                    coef = coef * (n - i + 1) as f64 / i as f64;
                    sum += coef;
                }
                let want = (2.0 * sum / 2f64.powi(n as i32)).min(1.0);
                close(table(k, n - k).exact_p(), want, 1e-12);
            }
        }
        // The p-value falls as the split grows more lopsided, and stays finite at large n.
        let mut last = 1.0;
        for b in (40_000..=50_000).rev().step_by(500) {
            let p = table(b, 100_000 - b).exact_p();
            assert!(p.is_finite() && p <= last, "{b}: {p} > {last}");
            last = p;
        }
    }

    /// Share of `reps` replications where exact McNemar rejects at 0.05: two
    /// deployments answer the same `items`; item i's accuracy is `acc_a(i)` for A
    /// and `acc_b(i)` for B, each answer drawn independently.
    fn rejection_rate(
        rng: &mut Rng,
        items: usize,
        reps: usize,
        mut accuracies: impl FnMut(&mut Rng) -> (f64, f64),
    ) -> f64 {
        let mut rejected = 0;
        let (mut a, mut b) = (vec![false; items], vec![false; items]);
        for _ in 0..reps {
            for i in 0..items {
                let (pa, pb) = accuracies(rng);
                a[i] = rng.next_f64() < pa;
                b[i] = rng.next_f64() < pb;
            }
            if Paired::from_outcomes(&a, &b).unwrap().exact_p() < 0.05 {
                rejected += 1;
            }
        }
        rejected as f64 / reps as f64
    }

    #[test]
    fn a_a_false_alarms_stay_under_alpha() {
        // Same per-item accuracy on both sides, the item's difficulty drawn
        // uniformly on [p - h, p + h] (h = min(p, 1 - p), so the mean is p).
        let mut rng = Rng::new(20_240_601);
        for items in [50, 200] {
            for p in [0.3, 0.7, 0.95] {
                let h = f64::min(p, 1.0 - p);
                let rate = rejection_rate(&mut rng, items, 2000, |r| {
                    let pi = p + h * (2.0 * r.next_f64() - 1.0);
                    (pi, pi)
                });
                eprintln!("A/A items={items} p={p}: false alarms {rate:.4}");
                assert!(rate <= 0.05, "items={items} p={p}: {rate}");
            }
        }
    }

    #[test]
    fn detects_a_large_difference() {
        // 0.9 against 0.6 on 200 items, answers independent.
        let mut rng = Rng::new(7);
        let power = rejection_rate(&mut rng, 200, 2000, |_| (0.9, 0.6));
        eprintln!("power 0.9 vs 0.6 on 200 items: {power:.4}");
        assert!(power >= 0.95, "{power}");
    }
}
