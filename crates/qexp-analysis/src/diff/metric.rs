//! The metrics a diff compares, each with the direction that counts as better.

use crate::metrics::{PointSummary, TrialMetrics};
use serde::Serialize;

/// Which way a metric improves.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Direction {
    /// Throughput: more is better.
    HigherIsBetter,
    /// Latency, failures: less is better.
    LowerIsBetter,
}

/// A per-(trial, point) metric compared by `qexp diff`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum DiffMetric {
    /// Aggregate output tok/s of a (trial, point).
    AggTokS,
    /// Per-request decode tok/s (1/TPOT), median over the trial's requests.
    DecodeTokS,
    /// Median TTFT of the trial, seconds.
    TtftS,
    /// Median E2E latency of the trial, seconds.
    E2eS,
    /// 99th percentile of the trial's pooled inter-chunk gaps, seconds.
    ItlP99S,
    /// Failed measured requests of the trial.
    Failures,
}

impl DiffMetric {
    /// Every metric, in display order.
    pub const ALL: [DiffMetric; 6] = [
        DiffMetric::AggTokS,
        DiffMetric::DecodeTokS,
        DiffMetric::TtftS,
        DiffMetric::E2eS,
        DiffMetric::ItlP99S,
        DiffMetric::Failures,
    ];

    /// Every metric's command-line name, in display order.
    pub const NAMES: [&'static str; 6] = [
        "agg_tok_s",
        "decode_tok_s",
        "ttft_s",
        "e2e_s",
        "itl_p99_s",
        "failures",
    ];

    /// The command-line name (`agg_tok_s`, …), also the serialised one.
    pub fn key(self) -> &'static str {
        Self::NAMES[self as usize]
    }

    /// The metric called `name` on the command line.
    pub fn from_key(name: &str) -> Option<DiffMetric> {
        Self::NAMES
            .iter()
            .position(|n| *n == name)
            .map(|i| Self::ALL[i])
    }

    /// Column label with unit.
    pub fn label(self) -> &'static str {
        match self {
            DiffMetric::AggTokS => "aggregate (tok/s)",
            DiffMetric::DecodeTokS => "decode/req (tok/s)",
            DiffMetric::TtftS => "TTFT (s)",
            DiffMetric::E2eS => "E2E (s)",
            DiffMetric::ItlP99S => "ITL p99 (s)",
            DiffMetric::Failures => "failures (req)",
        }
    }

    /// Which way is better.
    pub fn direction(self) -> Direction {
        match self {
            DiffMetric::AggTokS | DiffMetric::DecodeTokS => Direction::HigherIsBetter,
            _ => Direction::LowerIsBetter,
        }
    }

    /// One trial's value (NaN when the trial has none).
    pub fn of_trial(self, t: &TrialMetrics) -> f64 {
        match self {
            DiffMetric::AggTokS => t.agg_tok_s,
            DiffMetric::DecodeTokS => t.decode_tok_s,
            DiffMetric::TtftS => t.ttft_s,
            DiffMetric::E2eS => t.e2e_s,
            DiffMetric::ItlP99S => t.itl_p99_s,
            DiffMetric::Failures => f64::from(t.failures),
        }
    }

    /// The point's per-trial values, in trial order.
    pub fn values(self, p: &PointSummary) -> Vec<f64> {
        p.trials.iter().map(|t| self.of_trial(t)).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_match_serde() {
        for m in DiffMetric::ALL {
            assert_eq!(DiffMetric::from_key(m.key()), Some(m));
            let json = serde_json::to_value(m).unwrap_or_default();
            assert_eq!(json, serde_json::Value::from(m.key()));
        }
        assert_eq!(DiffMetric::from_key("tok_s"), None);
    }

    #[test]
    fn throughput_up_latency_down() {
        assert_eq!(DiffMetric::AggTokS.direction(), Direction::HigherIsBetter);
        assert_eq!(
            DiffMetric::DecodeTokS.direction(),
            Direction::HigherIsBetter
        );
        for m in [
            DiffMetric::TtftS,
            DiffMetric::E2eS,
            DiffMetric::ItlP99S,
            DiffMetric::Failures,
        ] {
            assert_eq!(m.direction(), Direction::LowerIsBetter, "{m:?}");
        }
    }
}
