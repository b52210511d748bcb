//! Jitter: a server whose speed wanders over time, as one that shares its
//! GPU, throttles or garbage-collects does. Time is cut into periods of
//! `period_s` simulated seconds, counted from the first jittering request
//! of the process; in each period every simulated duration is multiplied by
//! `1 + amplitude·(2u − 1)`, `u` in [0, 1) drawn from the seed and the
//! period's index (SplitMix64, the faults' draw). Trials that fall in
//! different periods run at different speeds, so the spread across trials
//! is the server's, which the noise check must still flag.
//!
//! Written in a `sim:` target's query: `jitter=A` (0 ≤ A < 1) and
//! optionally `jitter_s=P` (the period, simulated seconds, default 1);
//! the draw uses the target's `seed=`.

use std::sync::OnceLock;
use std::time::Instant;

/// When the first jittering request of this process asked for its speed.
static EPOCH: OnceLock<Instant> = OnceLock::new();

/// How much and how fast the server's speed wanders; none by default.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Jitter {
    /// Largest relative change of every duration (0 = none, below 1).
    pub amplitude: f64,
    /// Length of one period of constant speed, simulated seconds.
    pub period_s: f64,
    /// Seed of the per-period draw.
    pub seed: u64,
}

impl Jitter {
    /// True when durations never change.
    pub fn is_none(&self) -> bool {
        self.amplitude <= 0.0
    }

    /// The factor on every duration now, for a server whose simulated
    /// seconds last `time_scale` wall-clock seconds.
    pub(crate) fn factor(&self, time_scale: f64) -> f64 {
        if self.is_none() {
            return 1.0;
        }
        let since = EPOCH.get_or_init(Instant::now).elapsed().as_secs_f64();
        self.factor_at(since / (self.period_s * time_scale).max(1e-9))
    }

    /// The factor in the period that `periods` (elapsed periods, fractional) falls in.
    fn factor_at(&self, periods: f64) -> f64 {
        let index = periods.max(0.0).floor() as u64;
        1.0 + self.amplitude * (2.0 * crate::draw::unit(self.seed, index) - 1.0)
    }

    /// Reads `jitter=A` (`period_s` comes separately, from `jitter_s=`).
    pub(crate) fn parse_amplitude(v: &str) -> Option<f64> {
        v.parse::<f64>()
            .ok()
            .filter(|a| a.is_finite() && (0.0..1.0).contains(a))
    }

    /// Reads `jitter_s=P`.
    pub(crate) fn parse_period(v: &str) -> Option<f64> {
        v.parse::<f64>().ok().filter(|p| p.is_finite() && *p > 0.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn factor_stays_within_amplitude_and_changes_between_periods() {
        let j = Jitter {
            amplitude: 0.5,
            period_s: 1.0,
            seed: 3,
        };
        let f: Vec<f64> = (0..50).map(|i| j.factor_at(f64::from(i) + 0.5)).collect();
        assert!(f.iter().all(|x| (0.5..=1.5).contains(x)), "{f:?}");
        // Constant within a period, different between most of them.
        assert_eq!(j.factor_at(7.1), j.factor_at(7.9));
        let distinct = f.windows(2).filter(|w| (w[0] - w[1]).abs() > 0.05).count();
        assert!(distinct > 30, "{f:?}");
        assert_eq!(Jitter::default().factor(0.05), 1.0);
    }

    #[test]
    fn bad_values_are_refused() {
        assert_eq!(Jitter::parse_amplitude("0.3"), Some(0.3));
        for bad in ["1", "-0.1", "x", "NaN"] {
            assert_eq!(Jitter::parse_amplitude(bad), None, "{bad}");
        }
        assert_eq!(Jitter::parse_period("0"), None);
        assert_eq!(Jitter::parse_period("2.5"), Some(2.5));
    }
}
