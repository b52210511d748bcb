//! `GET /metrics`: the simulator's counters in Prometheus text format, named
//! and laid out as vLLM's (prometheus_client: the family in `# TYPE`, the
//! sample with `_total`) so clients read them like a real server's.

use crate::prefix_cache::CacheCounters;

/// The exposition format's content type.
pub(crate) const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// The exposition text for a server serving `model`.
pub(crate) fn exposition(model: &str, cache: CacheCounters) -> String {
    let mut out = String::new();
    for (name, help, value) in [
        (
            "vllm:prefix_cache_queries",
            "Prefix cache queries, in terms of number of queried tokens.",
            cache.queries,
        ),
        (
            "vllm:prefix_cache_hits",
            "Prefix cache hits, in terms of number of cached tokens.",
            cache.hits,
        ),
    ] {
        out.push_str(&format!(
            "# HELP {name} {help}\n# TYPE {name} counter\n\
             {name}_total{{engine=\"0\",model_name=\"{model}\"}} {value}\n"
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counters_are_vllm_named_samples() {
        let text = exposition(
            "sim-x",
            CacheCounters {
                queries: 10,
                hits: 4,
            },
        );
        assert!(text
            .contains("vllm:prefix_cache_queries_total{engine=\"0\",model_name=\"sim-x\"} 10\n"));
        assert!(text.contains("# TYPE vllm:prefix_cache_hits counter\n"));
        assert!(
            text.contains("vllm:prefix_cache_hits_total{engine=\"0\",model_name=\"sim-x\"} 4\n")
        );
    }
}
