//! Seeded length distributions for prompts and `max_tokens`: fixed, uniform,
//! normal and lognormal, each clamped to `[min, max]`.
//!
//! Normal draws use the Box–Muller transform (two uniforms → one standard
//! normal); a lognormal with mean m and standard deviation s has
//! σ² = ln(1 + s²/m²) and μ = ln m − σ²/2 (the moments of the lognormal).
//! Draws are rounded to whole tokens, then clamped.

use rand::Rng;

/// A distribution of token lengths.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Shape {
    /// Always `mean`.
    Fixed,
    /// Uniform integers over `[min, max]`.
    Uniform,
    /// Normal with the given standard deviation.
    Normal {
        /// Standard deviation, tokens.
        std_dev: f64,
    },
    /// Lognormal whose lengths have the given mean and standard deviation.
    LogNormal {
        /// Standard deviation of the lengths, tokens.
        std_dev: f64,
    },
}

/// A length distribution around `mean`, clamped to `min..=max`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LengthDist {
    /// The shape.
    pub shape: Shape,
    /// Center (fixed, normal) or mean (lognormal); ignored by uniform.
    pub mean: u32,
    /// Smallest length returned (at least 1).
    pub min: u32,
    /// Largest length returned.
    pub max: u32,
}

impl LengthDist {
    /// One length.
    pub fn sample<R: Rng + ?Sized>(&self, rng: &mut R) -> u32 {
        let (min, max) = (self.min.max(1), self.max.max(self.min.max(1)));
        let mean = f64::from(self.mean);
        let x = match self.shape {
            Shape::Fixed => mean,
            Shape::Uniform => return rng.random_range(min..=max),
            Shape::Normal { std_dev } => mean + std_dev * standard_normal(rng),
            Shape::LogNormal { std_dev } => {
                let m = mean.max(1.0);
                let sigma2 = (1.0 + (std_dev / m).powi(2)).ln();
                let mu = m.ln() - sigma2 / 2.0;
                (mu + sigma2.sqrt() * standard_normal(rng)).exp()
            }
        };
        // `as` saturates (NaN → 0), and the clamp bounds the rest.
        (x.round() as u32).clamp(min, max)
    }
}

/// One standard normal draw (Box–Muller).
fn standard_normal<R: Rng + ?Sized>(rng: &mut R) -> f64 {
    // 1 − [0, 1) is (0, 1]: ln never sees 0.
    let u1: f64 = 1.0 - rng.random::<f64>();
    let u2: f64 = rng.random();
    (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{rngs::StdRng, SeedableRng};

    fn draws(d: LengthDist, seed: u64, n: usize) -> Vec<u32> {
        let mut rng = StdRng::seed_from_u64(seed);
        (0..n).map(|_| d.sample(&mut rng)).collect()
    }

    fn moments(v: &[u32]) -> (f64, f64) {
        let n = v.len() as f64;
        let mean = v.iter().map(|&x| f64::from(x)).sum::<f64>() / n;
        let var = v
            .iter()
            .map(|&x| (f64::from(x) - mean).powi(2))
            .sum::<f64>()
            / (n - 1.0);
        (mean, var.sqrt())
    }

    fn dist(shape: Shape, mean: u32, min: u32, max: u32) -> LengthDist {
        LengthDist {
            shape,
            mean,
            min,
            max,
        }
    }

    #[test]
    fn seeded_draws_repeat_and_seeds_differ() {
        let d = dist(Shape::Normal { std_dev: 50.0 }, 500, 1, u32::MAX);
        assert_eq!(draws(d, 7, 100), draws(d, 7, 100));
        assert_ne!(draws(d, 7, 100), draws(d, 8, 100));
    }

    #[test]
    fn sample_moments_match_the_distribution() {
        let n = 20_000;
        let (m, s) = moments(&draws(
            dist(Shape::Normal { std_dev: 100.0 }, 1000, 1, u32::MAX),
            1,
            n,
        ));
        assert!((m - 1000.0).abs() < 5.0, "normal mean {m}");
        assert!((s - 100.0).abs() < 3.0, "normal sd {s}");
        let (m, s) = moments(&draws(
            dist(Shape::LogNormal { std_dev: 500.0 }, 1000, 1, u32::MAX),
            2,
            n,
        ));
        assert!((m - 1000.0).abs() < 20.0, "lognormal mean {m}");
        assert!((s - 500.0).abs() < 30.0, "lognormal sd {s}");
        // Uniform over 100..=200: mean 150, sd = sqrt((101² − 1) / 12) = 29.15.
        let (m, s) = moments(&draws(dist(Shape::Uniform, 0, 100, 200), 3, n));
        assert!((m - 150.0).abs() < 1.0, "uniform mean {m}");
        assert!((s - 29.15).abs() < 0.5, "uniform sd {s}");
        assert!(draws(dist(Shape::Fixed, 321, 1, 1000), 4, 50)
            .iter()
            .all(|&x| x == 321));
    }

    #[test]
    fn clamps_hold() {
        for shape in [
            Shape::Normal { std_dev: 1000.0 },
            Shape::LogNormal { std_dev: 5000.0 },
            Shape::Uniform,
            Shape::Fixed,
        ] {
            let v = draws(dist(shape, 100, 50, 150), 5, 5000);
            assert!(v.iter().all(|&x| (50..=150).contains(&x)), "{shape:?}");
            // A wide distribution reaches both bounds.
            if shape != Shape::Fixed {
                assert!(v.contains(&50) && v.contains(&150), "{shape:?}");
            }
        }
        // Min 0 still gives at least one token; max below min is lifted to min.
        assert!(
            draws(dist(Shape::Normal { std_dev: 100.0 }, 0, 0, 10), 6, 500)
                .iter()
                .all(|&x| (1..=10).contains(&x))
        );
        assert_eq!(draws(dist(Shape::Fixed, 5, 9, 3), 7, 3), [9, 9, 9]);
    }
}
