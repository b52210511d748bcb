//! The server counters qexp records per (trial, point), declared once.
//!
//! [`ServerCounter`] is the one list: its name (also the Parquet column's
//! suffix, `server_<name>`), unit, meaning and the Prometheus families that
//! feed it in each engine. qexp-client scrapes the
//! [`Counters`] snapshots, the runner stores every counter of the list,
//! qexp-store writes one column per counter, and qexp-analysis reads every
//! column back: adding a counter is a new variant plus its row in
//! [`ServerCounter::spec`] (and, to show a number derived from it, a row in
//! qexp-analysis' `ServerMetric`).

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Counter values by series key (`name{labels}`), summed over duplicates.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Counters(pub BTreeMap<String, f64>);

impl Counters {
    /// `after − before` per series present in both (a series that went down
    /// was reset by a server restart and is left out).
    pub fn delta(before: &Counters, after: &Counters) -> BTreeMap<String, f64> {
        after
            .0
            .iter()
            .filter_map(|(k, a)| {
                let b = before.0.get(k).copied().unwrap_or(0.0);
                (*a >= b).then(|| (k.clone(), a - b))
            })
            .collect()
    }
}

/// One engine-neutral server counter.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ServerCounter {
    /// Prompt tokens looked up in the prefix cache.
    PrefixCacheQueries,
    /// Prompt tokens found in the prefix cache.
    PrefixCacheHits,
    /// Prompt tokens served from cache, as the engine counts them.
    CachedPromptTokens,
    /// Requests preempted (vLLM) or retracted.
    Preemptions,
    /// Requests in the server's own TTFT histogram.
    TtftCount,
    /// Sum of the server's own TTFT histogram, seconds.
    TtftSumS,
    /// Speculative-decoding verification steps (drafts).
    SpecDrafts,
    /// Draft tokens accepted.
    SpecAcceptedTokens,
}

/// What qexp knows about one [`ServerCounter`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CounterSpec {
    /// snake_case name; the Parquet column is `server_<name>`.
    pub name: &'static str,
    /// Unit of the delta.
    pub unit: &'static str,
    /// What it counts.
    pub doc: &'static str,
    /// The Prometheus metric names that feed it, summed over label sets.
    /// Names are namespaced per engine, so one list serves all of them.
    pub families: &'static [&'static str],
}

impl ServerCounter {
    /// Every counter, in column order.
    pub const ALL: [ServerCounter; 8] = [
        ServerCounter::PrefixCacheQueries,
        ServerCounter::PrefixCacheHits,
        ServerCounter::CachedPromptTokens,
        ServerCounter::Preemptions,
        ServerCounter::TtftCount,
        ServerCounter::TtftSumS,
        ServerCounter::SpecDrafts,
        ServerCounter::SpecAcceptedTokens,
    ];

    /// The counter's declaration.
    pub fn spec(self) -> CounterSpec {
        match self {
            ServerCounter::PrefixCacheQueries => counter(
                "prefix_cache_queries",
                "tokens",
                "prompt tokens looked up in the prefix cache",
                &[
                    "vllm:prefix_cache_queries_total",
                    // llama.cpp counts processed (uncached) and cached prompt tokens apart.
                    "llamacpp:prompt_tokens_total",
                    "llamacpp:prompt_tokens_cached_total",
                    // SGLang: all prefill tokens (its docs: "Number of prefill tokens processed").
                    "sglang:prompt_tokens_total",
                ],
            ),
            ServerCounter::PrefixCacheHits => counter(
                "prefix_cache_hits",
                "tokens",
                "prompt tokens found in the prefix cache",
                &[
                    "vllm:prefix_cache_hits_total",
                    "llamacpp:prompt_tokens_cached_total",
                    "sglang:cached_tokens_total",
                ],
            ),
            ServerCounter::CachedPromptTokens => counter(
                "cached_prompt_tokens",
                "tokens",
                "prompt tokens served from cache, as the engine counts them",
                &[
                    "vllm:prompt_tokens_cached_total",
                    "llamacpp:prompt_tokens_cached_total",
                    "sglang:cached_tokens_total",
                ],
            ),
            ServerCounter::Preemptions => counter(
                "preemptions",
                "requests",
                "requests preempted (vLLM) or retracted",
                &["vllm:num_preemptions_total"],
            ),
            ServerCounter::TtftCount => counter(
                "ttft_count",
                "requests",
                "requests in the server's own TTFT histogram",
                &[
                    "vllm:time_to_first_token_seconds_count",
                    "sglang:time_to_first_token_seconds_count",
                ],
            ),
            ServerCounter::TtftSumS => counter(
                "ttft_sum_s",
                "s",
                "sum of the server's own TTFT histogram",
                &[
                    "vllm:time_to_first_token_seconds_sum",
                    "sglang:time_to_first_token_seconds_sum",
                ],
            ),
            ServerCounter::SpecDrafts => counter(
                "spec_drafts",
                "steps",
                "speculative-decoding verification steps (drafts)",
                &[
                    "vllm:spec_decode_num_drafts_total",
                    "llamacpp:spec_decode_num_drafts_total",
                ],
            ),
            ServerCounter::SpecAcceptedTokens => counter(
                "spec_accepted_tokens",
                "tokens",
                "draft tokens accepted",
                &[
                    "vllm:spec_decode_num_accepted_tokens_total",
                    "llamacpp:spec_decode_num_accepted_tokens_total",
                ],
            ),
        }
    }

    /// The snake_case name.
    pub fn name(self) -> &'static str {
        self.spec().name
    }
}

/// A [`CounterSpec`] (a function, so that each list of families becomes a slice).
const fn counter(
    name: &'static str,
    unit: &'static str,
    doc: &'static str,
    families: &'static [&'static str],
) -> CounterSpec {
    CounterSpec {
        name,
        unit,
        doc,
        families,
    }
}

/// The engine-neutral server counters of one (trial, point): deltas over the
/// measured requests; a counter the engine does not report is absent.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ServerCounters {
    /// The declared counters' deltas.
    pub values: BTreeMap<ServerCounter, f64>,
    /// Every counter's delta, by series key.
    pub raw: BTreeMap<String, f64>,
}

impl ServerCounters {
    /// Maps the deltas between two snapshots.
    pub fn between(before: &Counters, after: &Counters) -> ServerCounters {
        let raw = Counters::delta(before, after);
        let sum = |names: &[&str]| -> Option<f64> {
            let mut found = false;
            let mut total = 0.0;
            for (key, v) in &raw {
                let name = key.split('{').next().unwrap_or(key);
                if names.contains(&name) {
                    found = true;
                    total += v;
                }
            }
            found.then_some(total)
        };
        let values = ServerCounter::ALL
            .into_iter()
            .filter_map(|c| sum(c.spec().families).map(|v| (c, v)))
            .collect();
        ServerCounters { values, raw }
    }

    /// One counter's delta, when the engine reports it.
    pub fn get(&self, c: ServerCounter) -> Option<f64> {
        self.values.get(&c).copied()
    }

    /// Mean tokens per speculative step: 1 + accepted / drafts, where drafts were made.
    pub fn acceptance_length(&self) -> Option<f64> {
        acceptance_length(
            self.get(ServerCounter::SpecDrafts),
            self.get(ServerCounter::SpecAcceptedTokens),
        )
    }

    /// The raw deltas as a JSON object string.
    pub fn raw_json(&self) -> String {
        serde_json::to_string(&self.raw).unwrap_or_else(|_| "{}".into())
    }
}

/// Mean tokens per speculative step from drafts and accepted tokens:
/// 1 + accepted / drafts, where drafts were made.
pub fn acceptance_length(drafts: Option<f64>, accepted: Option<f64>) -> Option<f64> {
    match (drafts, accepted) {
        (Some(d), Some(a)) if d > 0.0 => Some(1.0 + a / d),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_match_serde_and_are_unique() {
        let mut seen = std::collections::BTreeSet::new();
        for c in ServerCounter::ALL {
            assert!(seen.insert(c.name()), "{c:?} twice");
            let json = serde_json::to_value(c).unwrap_or_default();
            assert_eq!(json, serde_json::Value::from(c.name()));
            assert!(!c.spec().families.is_empty(), "{c:?} has no source");
        }
    }

    #[test]
    fn deltas_map_onto_counters_and_acceptance_length() {
        let before = Counters(BTreeMap::from([
            (
                "vllm:spec_decode_num_drafts_total{engine=\"0\"}".into(),
                10.0,
            ),
            (
                "vllm:spec_decode_num_accepted_tokens_total{engine=\"0\"}".into(),
                20.0,
            ),
            ("reset_total".into(), 100.0),
        ]));
        let after = Counters(BTreeMap::from([
            (
                "vllm:spec_decode_num_drafts_total{engine=\"0\"}".into(),
                30.0,
            ),
            (
                "vllm:spec_decode_num_accepted_tokens_total{engine=\"0\"}".into(),
                80.0,
            ),
            ("reset_total".into(), 1.0),
            ("new_total".into(), 2.0),
        ]));
        let s = ServerCounters::between(&before, &after);
        assert_eq!(s.get(ServerCounter::SpecDrafts), Some(20.0));
        assert_eq!(s.get(ServerCounter::SpecAcceptedTokens), Some(60.0));
        assert_eq!(s.acceptance_length(), Some(4.0));
        assert_eq!(s.get(ServerCounter::PrefixCacheHits), None);
        assert!(
            !s.raw.contains_key("reset_total"),
            "a reset counter is dropped"
        );
        assert_eq!(s.raw.get("new_total"), Some(&2.0));
    }

    #[test]
    fn no_drafts_means_no_acceptance_length() {
        assert_eq!(acceptance_length(Some(0.0), Some(0.0)), None);
        assert_eq!(acceptance_length(None, Some(3.0)), None);
        assert_eq!(acceptance_length(Some(2.0), Some(3.0)), Some(2.5));
    }
}
