//! What a window of serving cost, and so what a token costs: either the
//! GPUs' rent (`$ per GPU-hour` × GPUs × the window's hours), or the energy
//! they drew at a power price (`$ per kWh` × the facility's PUE × kWh).

use serde::{Deserialize, Serialize};

/// Joules in a kilowatt-hour.
pub const J_PER_KWH: f64 = 3.6e6;

/// A price, as a plan's `[cost]` gives it.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Price {
    /// Dollars per GPU-hour (rent, power included).
    GpuHour {
        /// $ per GPU per hour.
        usd: f64,
    },
    /// Dollars per kWh of GPU energy, times the power usage effectiveness
    /// of the facility (cooling and losses: 1.0 counts the GPUs alone).
    Energy {
        /// $ per kWh.
        usd_per_kwh: f64,
        /// Power usage effectiveness, ≥ 1.
        pue: f64,
    },
}

/// One (trial, point) window as cost needs it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Spent {
    /// The window's length, s.
    pub seconds: f64,
    /// GPUs of the deployment.
    pub gpus: u32,
    /// Energy of those GPUs over the window, J (`None` when not measured or invalid).
    pub energy_j: Option<f64>,
}

impl Price {
    /// Dollars the window cost; `None` for an energy price without a trusted energy.
    pub fn usd(&self, s: &Spent) -> Option<f64> {
        match *self {
            Price::GpuHour { usd } => Some(usd * f64::from(s.gpus) * s.seconds / 3600.0),
            Price::Energy { usd_per_kwh, pue } => {
                s.energy_j.map(|j| usd_per_kwh * pue * j / J_PER_KWH)
            }
        }
    }

    /// Dollars per million of `tokens` (output, or input + output) served in the window.
    pub fn usd_per_million(&self, s: &Spent, tokens: f64) -> Option<f64> {
        (tokens > 0.0)
            .then(|| self.usd(s))
            .flatten()
            .map(|usd| usd / tokens * 1e6)
    }
}

/// Joules per token; `None` without tokens or energy.
pub fn j_per_token(energy_j: Option<f64>, tokens: f64) -> Option<f64> {
    energy_j.filter(|_| tokens > 0.0).map(|j| j / tokens)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 2 GPUs for 90 s at $2 per GPU-hour: 2 × 2 × 90 / 3600 = $0.10; over
    /// 45,000 output tokens, $0.10 / 45,000 × 1e6 = $2.2222 per million.
    #[test]
    fn gpu_hour_price_by_hand() {
        let s = Spent {
            seconds: 90.0,
            gpus: 2,
            energy_j: None,
        };
        let p = Price::GpuHour { usd: 2.0 };
        assert!((p.usd(&s).unwrap() - 0.10).abs() < 1e-12);
        assert!((p.usd_per_million(&s, 45_000.0).unwrap() - 2.222_222_222).abs() < 1e-6);
        assert_eq!(p.usd_per_million(&s, 0.0), None);
    }

    /// 300 W × 2 GPUs × 90 s = 54,000 J = 0.015 kWh; × PUE 1.2 × $0.15 =
    /// $0.0027; over 45,000 tokens $0.06 per million, and 54,000 J / 45,000
    /// tokens = 1.2 J per token.
    #[test]
    fn energy_price_with_pue_by_hand() {
        let s = Spent {
            seconds: 90.0,
            gpus: 2,
            energy_j: Some(54_000.0),
        };
        let p = Price::Energy {
            usd_per_kwh: 0.15,
            pue: 1.2,
        };
        assert!((p.usd(&s).unwrap() - 0.0027).abs() < 1e-12);
        assert!((p.usd_per_million(&s, 45_000.0).unwrap() - 0.06).abs() < 1e-9);
        assert!((j_per_token(s.energy_j, 45_000.0).unwrap() - 1.2).abs() < 1e-12);
        let unmeasured = Spent {
            energy_j: None,
            ..s
        };
        assert_eq!(p.usd(&unmeasured), None);
    }
}
