//! When each request of an open-loop point is due: offsets in seconds from
//! the point's start, drawn from a seeded arrival process per stage, or read
//! from a trace. The same plan and seed give the same offsets on every run.

use qexp_plan::{Arrival, OpenLoop, Trace};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

/// Offsets (seconds, non-decreasing) of every request of the point; the
/// first arrival of each stage comes one gap after the stage starts, except
/// the very first request, which is due at once.
pub fn offsets(ol: &OpenLoop, trace: Option<&Trace>, seed: u64) -> Vec<f64> {
    if let (Some(tref), Some(trace)) = (&ol.trace, trace) {
        return trace
            .entries
            .iter()
            .map(|e| e.offset_s / tref.speed)
            .collect();
    }
    let mut rng = StdRng::seed_from_u64(seed);
    let mut out = Vec::with_capacity(ol.stages.iter().map(|s| s.requests as usize).sum());
    let mut t = 0.0;
    for stage in &ol.stages {
        for _ in 0..stage.requests {
            if !out.is_empty() {
                t += gap(ol.arrival, ol.burstiness, stage.rate, &mut rng);
            }
            out.push(t);
        }
    }
    out
}

/// One inter-arrival gap with mean 1/rate.
fn gap(arrival: Arrival, shape: f64, rate: f64, rng: &mut StdRng) -> f64 {
    match arrival {
        Arrival::Constant => 1.0 / rate,
        Arrival::Poisson => exponential(rng) / rate,
        // Gamma(k, θ) has mean kθ; θ = 1/(k·rate) keeps the mean at 1/rate
        // and the gaps' coefficient of variation at 1/√k.
        Arrival::Gamma => gamma(shape, rng) / (shape * rate),
    }
}

/// A standard exponential draw (mean 1).
fn exponential(rng: &mut StdRng) -> f64 {
    // 1 − U lies in (0, 1], so the logarithm is finite.
    -(1.0 - rng.random::<f64>()).ln()
}

/// A standard normal draw (Box–Muller).
fn normal(rng: &mut StdRng) -> f64 {
    let u1 = 1.0 - rng.random::<f64>();
    let u2 = rng.random::<f64>();
    (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
}

/// A Gamma(shape, 1) draw: Marsaglia and Tsang (2000), "A simple method for
/// generating gamma variables", with the `U^(1/k)` boost for shape < 1.
fn gamma(shape: f64, rng: &mut StdRng) -> f64 {
    if shape < 1.0 {
        let u = 1.0 - rng.random::<f64>();
        return gamma(shape + 1.0, rng) * u.powf(1.0 / shape);
    }
    let d = shape - 1.0 / 3.0;
    let c = 1.0 / (9.0 * d).sqrt();
    loop {
        let x = normal(rng);
        let v = 1.0 + c * x;
        if v <= 0.0 {
            continue;
        }
        let v = v * v * v;
        let u = 1.0 - rng.random::<f64>();
        if u.ln() < 0.5 * x * x + d - d * v + d * v.ln() {
            return d * v;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use qexp_plan::Stage;

    fn plan(arrival: Arrival, burstiness: f64, stages: Vec<Stage>) -> OpenLoop {
        OpenLoop {
            arrival,
            burstiness,
            max_in_flight: None,
            stages,
            trace: None,
        }
    }

    /// Mean and coefficient of variation of the gaps.
    fn gap_stats(o: &[f64]) -> (f64, f64) {
        let g: Vec<f64> = o.windows(2).map(|w| w[1] - w[0]).collect();
        let mean = g.iter().sum::<f64>() / g.len() as f64;
        let var = g.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (g.len() - 1) as f64;
        (mean, var.sqrt() / mean)
    }

    #[test]
    fn constant_is_evenly_spaced() {
        let o = offsets(
            &plan(
                Arrival::Constant,
                1.0,
                vec![Stage {
                    rate: 4.0,
                    requests: 5,
                }],
            ),
            None,
            1,
        );
        assert_eq!(o, vec![0.0, 0.25, 0.5, 0.75, 1.0]);
    }

    #[test]
    fn processes_keep_the_rate_and_their_spread() {
        let stage = vec![Stage {
            rate: 100.0,
            requests: 20_001,
        }];
        for (arrival, k, cv) in [
            (Arrival::Poisson, 1.0, 1.0),
            (Arrival::Gamma, 0.25, 2.0),
            (Arrival::Gamma, 4.0, 0.5),
        ] {
            let o = offsets(&plan(arrival, k, stage.clone()), None, 7);
            let (mean, got_cv) = gap_stats(&o);
            assert!(
                (mean - 0.01).abs() < 0.0005,
                "{arrival:?} k={k}: mean gap {mean}"
            );
            assert!(
                (got_cv - cv).abs() < 0.1 * cv,
                "{arrival:?} k={k}: cv {got_cv}, expected {cv}"
            );
        }
    }

    #[test]
    fn seeded_and_staged() {
        let p = plan(
            Arrival::Poisson,
            1.0,
            vec![
                Stage {
                    rate: 10.0,
                    requests: 100,
                },
                Stage {
                    rate: 1000.0,
                    requests: 1000,
                },
            ],
        );
        let a = offsets(&p, None, 3);
        assert_eq!(a, offsets(&p, None, 3));
        assert_ne!(a, offsets(&p, None, 4));
        assert_eq!(a.len(), 1100);
        assert!(a.windows(2).all(|w| w[1] >= w[0]));
        // ~10 s of the slow stage, then ~1 s of the fast one.
        assert!((a[99] - 9.9).abs() < 3.0, "{}", a[99]);
        assert!((a[1099] - a[99] - 1.0).abs() < 0.2, "{}", a[1099] - a[99]);
    }
}
