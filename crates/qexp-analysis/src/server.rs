//! Numbers derived from the server's own counters (qexp-client's
//! [`ServerCounter`] list, stored per (trial, point)), declared once: the
//! analysis summarises each across trials, the report prints one column per
//! metric in this order.
//!
//! To show a new number: add a variant, put it in [`ServerMetric::ALL`] and
//! give it a row in [`ServerMetric::spec`] and [`ServerMetric::of`].

use qexp_types::ServerCounter;
use serde::Serialize;
use std::collections::BTreeMap;

/// The deltas of the server's counters over one (trial, point); a counter
/// the engine does not report is absent.
pub type CounterValues = BTreeMap<ServerCounter, f64>;

/// How a server metric's values read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ServerUnit {
    /// A fraction, shown as a percentage.
    Fraction,
    /// A count of events.
    Count,
    /// Seconds.
    Seconds,
    /// A plain ratio.
    Ratio,
}

/// A number derived from the server's counters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ServerMetric {
    /// Prefix-cache hits / queries.
    PrefixHitRate,
    /// Preemptions during the (trial, point).
    Preemptions,
    /// Mean TTFT of the server's own histogram, seconds.
    ServerTtftS,
    /// Speculative-decoding acceptance length (1 + accepted / drafts).
    SpecAcceptanceLength,
}

/// What qexp knows about one [`ServerMetric`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ServerMetricSpec {
    /// snake_case key.
    pub key: &'static str,
    /// Column header, with unit where it has one.
    pub header: &'static str,
    /// How its values read.
    pub unit: ServerUnit,
}

impl ServerMetric {
    /// Every server metric, in column order.
    pub const ALL: [ServerMetric; 4] = [
        ServerMetric::PrefixHitRate,
        ServerMetric::Preemptions,
        ServerMetric::ServerTtftS,
        ServerMetric::SpecAcceptanceLength,
    ];

    /// The metric's declaration.
    pub fn spec(self) -> ServerMetricSpec {
        let (key, header, unit) = match self {
            ServerMetric::PrefixHitRate => (
                "prefix_hit_rate",
                "Prefix-cache hit rate",
                ServerUnit::Fraction,
            ),
            ServerMetric::Preemptions => ("preemptions", "Preemptions", ServerUnit::Count),
            ServerMetric::ServerTtftS => (
                "server_ttft_s",
                "Server TTFT, mean (s)",
                ServerUnit::Seconds,
            ),
            ServerMetric::SpecAcceptanceLength => (
                "spec_acceptance_length",
                "Acceptance length",
                ServerUnit::Ratio,
            ),
        };
        ServerMetricSpec { key, header, unit }
    }

    /// Its value from one (trial, point)'s counters, when they allow one.
    pub fn of(self, c: &CounterValues) -> Option<f64> {
        let get = |k: ServerCounter| c.get(&k).copied();
        let ratio = |num: ServerCounter, den: ServerCounter| match (get(num), get(den)) {
            (Some(n), Some(d)) if d > 0.0 => Some(n / d),
            _ => None,
        };
        match self {
            ServerMetric::PrefixHitRate => ratio(
                ServerCounter::PrefixCacheHits,
                ServerCounter::PrefixCacheQueries,
            ),
            ServerMetric::Preemptions => get(ServerCounter::Preemptions),
            ServerMetric::ServerTtftS => ratio(ServerCounter::TtftSumS, ServerCounter::TtftCount),
            ServerMetric::SpecAcceptanceLength => qexp_types::acceptance_length(
                get(ServerCounter::SpecDrafts),
                get(ServerCounter::SpecAcceptedTokens),
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn derived_from_the_counters() {
        let c: CounterValues = [
            (ServerCounter::PrefixCacheQueries, 400.0),
            (ServerCounter::PrefixCacheHits, 100.0),
            (ServerCounter::TtftCount, 4.0),
            (ServerCounter::TtftSumS, 2.0),
            (ServerCounter::SpecDrafts, 10.0),
            (ServerCounter::SpecAcceptedTokens, 30.0),
        ]
        .into_iter()
        .collect();
        let got = ServerMetric::ALL.map(|m| m.of(&c));
        assert_eq!(got, [Some(0.25), None, Some(0.5), Some(4.0)]);
        let empty = CounterValues::new();
        assert_eq!(ServerMetric::ALL.map(|m| m.of(&empty)), [None; 4]);
        let no_queries: CounterValues = [(ServerCounter::PrefixCacheQueries, 0.0)].into();
        assert_eq!(ServerMetric::PrefixHitRate.of(&no_queries), None);
    }
}
