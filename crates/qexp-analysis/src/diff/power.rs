//! Measured error rates of the diff's decision rule, on simulated diffs whose
//! truth is known: the test of the rates (`tests/diff_power.rs`) and the
//! example that prints the table of docs/comparing.md (`examples/diff_power.rs`)
//! both run [`simulate`], so the numbers in the docs come from the code that
//! decides.
//!
//! One simulated diff is a whole table: [`POINTS`] paired points × every
//! [`DiffMetric`], trial values drawn independently per trial (the trial is
//! the unit) from distributions like those of real runs:
//!
//! - throughput and latency medians: log-normal, CV 1.5–2% ([`cv`]);
//! - ITL p99, a heavy-tailed metric: log value with Student-t(3) noise of
//!   scale 3% (a few trials land 10–20% away);
//! - failed requests: Poisson, 0.05 per trial (mostly all zero);
//! - optionally one outlier trial per diff: one trial of one point on a
//!   random side is 15% slower in every metric (a background job, a
//!   throttled GPU).
//!
//! The effect under test multiplies B's per-request decode rate at every
//! point by `1 + effect` (other metrics unchanged, so Holm's correction
//! works against the full family). Power is the share of those decode
//! comparisons called `better`; a false alarm is a diff in which any
//! comparison without a true change is called better or worse.

use super::compare::{self, MetricDiff, Settings, Verdict};
use super::metric::DiffMetric;
use crate::stats::Rng;

/// Paired points per simulated diff.
pub const POINTS: usize = 4;
/// Requests per trial at each point (for the failure-rate threshold).
const REQUESTS: u32 = 8;
/// How much slower the outlier trial is.
pub const OUTLIER: f64 = 1.15;

/// One row of the table: trials per side, true change, outlier or not.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Scenario {
    /// Trials per side.
    pub trials: usize,
    /// True relative change of B's decode rate (0 for A/A).
    pub effect: f64,
    /// One outlier trial per diff.
    pub outlier: bool,
}

/// What the simulated diffs concluded.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Rates {
    /// Diffs simulated.
    pub diffs: usize,
    /// Comparisons with the true change (decode at every point).
    pub changed: usize,
    /// Of those, called in the right direction.
    pub detected: usize,
    /// Of those, called in the wrong direction.
    pub reversed: usize,
    /// Comparisons without a true change.
    pub unchanged: usize,
    /// Of those, called `=`.
    pub equivalent: usize,
    /// Diffs in which any comparison without a true change was called better or worse.
    pub false_alarm_diffs: usize,
}

impl Rates {
    /// Share of changed comparisons detected.
    pub fn power(&self) -> f64 {
        self.detected as f64 / self.changed.max(1) as f64
    }
    /// Share of diffs with a false alarm (family-wise).
    pub fn false_alarm_rate(&self) -> f64 {
        self.false_alarm_diffs as f64 / self.diffs.max(1) as f64
    }
    /// Share of unchanged comparisons called `=`.
    pub fn equivalent_rate(&self) -> f64 {
        self.equivalent as f64 / self.unchanged.max(1) as f64
    }
}

/// Trial-to-trial coefficient of variation of each metric in the simulation.
pub fn cv(metric: DiffMetric) -> f64 {
    match metric {
        DiffMetric::AggTokS
        | DiffMetric::SteadyTokS
        | DiffMetric::ReqS
        | DiffMetric::InputTokS
        | DiffMetric::E2eS => 0.015,
        DiffMetric::DecodeTokS | DiffMetric::TtftS => 0.02,
        DiffMetric::ItlP99S | DiffMetric::JPerOutTok | DiffMetric::UsdPerMOut => 0.03,
        DiffMetric::Failures | DiffMetric::Accuracy => 0.0,
    }
}

fn gauss(rng: &mut Rng) -> f64 {
    // Box–Muller; 1 - u keeps the log finite.
    let (u, v) = (1.0 - rng.next_f64(), rng.next_f64());
    (-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * v).cos()
}

fn student_t3(rng: &mut Rng) -> f64 {
    let chi2: f64 = (0..3).map(|_| gauss(rng).powi(2)).sum();
    gauss(rng) / (chi2 / 3.0).sqrt()
}

fn poisson(rng: &mut Rng, mean: f64) -> f64 {
    // Knuth's multiplication method, fine for small means.
    let limit = (-mean).exp();
    let (mut k, mut prod) = (0.0, rng.next_f64());
    while prod > limit {
        k += 1.0;
        prod *= rng.next_f64();
    }
    k
}

/// One trial value of `metric`; `slow` >= 1 makes the trial slower by that factor.
fn draw(rng: &mut Rng, metric: DiffMetric, effect: f64, slow: f64) -> f64 {
    let noise = match metric {
        DiffMetric::Failures => return poisson(rng, 0.05),
        DiffMetric::ItlP99S => cv(metric) * student_t3(rng),
        _ => cv(metric) * gauss(rng),
    };
    let slow = match metric.direction() {
        super::Direction::HigherIsBetter => 1.0 / slow,
        super::Direction::LowerIsBetter => slow,
    };
    100.0 * (1.0 + effect) * slow * noise.exp()
}

/// Simulates `diffs` diffs of `s` with the rule's `alpha` and `min_change`; the same seed gives the same rates.
pub fn simulate(s: Scenario, diffs: usize, alpha: f64, min_change: f64, seed: u64) -> Rates {
    let settings = Settings {
        level: 0.95,
        min_change,
    };
    let mut rng = Rng::new(seed);
    let mut rates = Rates {
        diffs,
        ..Rates::default()
    };
    for _ in 0..diffs {
        // (side B?, point, trial) of the outlier.
        let outlier = s.outlier.then(|| {
            (
                rng.below(2) == 1,
                rng.below(POINTS),
                rng.below(s.trials.max(1)),
            )
        });
        let mut table: Vec<MetricDiff> = Vec::with_capacity(POINTS * DiffMetric::ALL.len());
        for point in 0..POINTS {
            for metric in DiffMetric::ALL {
                let effect = if metric == DiffMetric::DecodeTokS {
                    s.effect
                } else {
                    0.0
                };
                let mut side = |b: bool, effect: f64| -> Vec<f64> {
                    (0..s.trials)
                        .map(|t| {
                            let hit = outlier == Some((b, point, t));
                            draw(&mut rng, metric, effect, if hit { OUTLIER } else { 1.0 })
                        })
                        .collect()
                };
                let a = side(false, 0.0);
                let b = side(true, effect);
                let seed = rng.next_u64();
                table.push(compare::compare(metric, &a, &b, REQUESTS, settings, seed));
            }
        }
        let mut refs: Vec<&mut MetricDiff> = table.iter_mut().collect();
        compare::adjust(&mut refs, alpha);
        let mut alarm = false;
        for d in &table {
            let changed = d.metric == DiffMetric::DecodeTokS && s.effect != 0.0;
            let called = matches!(d.verdict, Verdict::Better | Verdict::Worse);
            if changed {
                rates.changed += 1;
                let right = if s.effect > 0.0 {
                    Verdict::Better
                } else {
                    Verdict::Worse
                };
                rates.detected += usize::from(d.verdict == right);
                rates.reversed += usize::from(called && d.verdict != right);
            } else {
                rates.unchanged += 1;
                rates.equivalent += usize::from(d.verdict == Verdict::Equivalent);
                alarm |= called;
            }
        }
        rates.false_alarm_diffs += usize::from(alarm);
    }
    rates
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn draws_have_the_stated_spread() {
        let mut rng = Rng::new(3);
        let logs: Vec<f64> = (0..20_000)
            .map(|_| (draw(&mut rng, DiffMetric::DecodeTokS, 0.0, 1.0) / 100.0).ln())
            .collect();
        let mean = logs.iter().sum::<f64>() / logs.len() as f64;
        let sd = (logs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / logs.len() as f64).sqrt();
        assert!(
            mean.abs() < 0.001 && (sd - 0.02).abs() < 0.001,
            "{mean} {sd}"
        );
        let fails: f64 = (0..20_000)
            .map(|_| draw(&mut rng, DiffMetric::Failures, 0.0, 1.0))
            .sum();
        assert!((fails / 20_000.0 - 0.05).abs() < 0.01, "{fails}");
        // The outlier trial is slower: lower throughput, higher latency.
        assert!(draw(&mut Rng::new(1), DiffMetric::AggTokS, 0.0, 2.0) < 60.0);
        assert!(draw(&mut Rng::new(1), DiffMetric::TtftS, 0.0, 2.0) > 160.0);
    }

    #[test]
    fn same_seed_same_rates() {
        let s = Scenario {
            trials: 3,
            effect: 0.1,
            outlier: true,
        };
        let r = simulate(s, 20, 0.05, 0.02, 9);
        assert_eq!(r, simulate(s, 20, 0.05, 0.02, 9));
        assert_eq!((r.diffs, r.changed), (20, 20 * POINTS));
        assert_eq!(r.unchanged, 20 * POINTS * (DiffMetric::ALL.len() - 1));
    }
}
