//! Fingerprints and metric mappings against checked-in server responses:
//! vLLM and llama.cpp recorded from the real servers (scripts/real-servers),
//! SGLang and TGI written from their documentation (see the fixture READMEs).

use qexp_client::metrics::{Counters, Exposition};
use qexp_client::{Fingerprint, ServerCounter, ServerCounters, ServerInfo};
use serde_json::Value;
use std::path::PathBuf;

fn fixtures(engine: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../scripts/real-servers/fixtures")
        .join(engine)
}

fn json(engine: &str, file: &str) -> Value {
    let path = fixtures(engine).join(file);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path:?}: {e}"));
    serde_json::from_str(&text).unwrap()
}

fn text(engine: &str, file: &str) -> String {
    std::fs::read_to_string(fixtures(engine).join(file)).unwrap()
}

/// A probe result built from fixture files: (path, file) pairs, plus metrics.
fn info(engine: &str, docs: &[(&str, &str)], metrics: Option<&str>) -> ServerInfo {
    let mut info = ServerInfo::default();
    for (path, file) in docs {
        info.documents.insert((*path).into(), json(engine, file));
    }
    if let Some(m) = metrics {
        qexp_client::add_metrics(&mut info, "/metrics", &text(engine, m));
    }
    info
}

#[test]
fn vllm_recorded() {
    let i = info(
        "vllm",
        &[("/v1/models", "models.json"), ("/version", "version.json")],
        Some("metrics.txt"),
    );
    let fp = Fingerprint::from_info(&i, Some("tiny-llama"));
    assert_eq!(fp.engine, "vllm");
    assert_eq!(fp.version.as_deref(), Some("0.32.0"));
    assert_eq!(fp.model.as_deref(), Some("tiny-llama"));
    assert_eq!(fp.max_context, Some(131_072));
    assert_eq!(fp.flags["prefix_caching"], "on");
    assert_eq!(fp.flags["block_size"], "128");
    assert_eq!(fp.flags["speculative_decoding"], "off");
    assert_eq!(fp.context_flag(), "--max-model-len");
    assert!(fp
        .summary()
        .starts_with("vllm 0.32.0, model tiny-llama, max context 131072 tokens"));
}

#[test]
fn vllm_without_metrics_reveals_no_cache_flags() {
    let i = info(
        "vllm",
        &[("/v1/models", "models.json"), ("/version", "version.json")],
        None,
    );
    let fp = Fingerprint::from_info(&i, None);
    assert_eq!(fp.engine, "vllm");
    assert!(fp.flags.is_empty(), "{:?}", fp.flags);
}

#[test]
fn llamacpp_recorded() {
    let i = info(
        "llamacpp",
        &[("/v1/models", "models.json"), ("/props", "props.json")],
        Some("metrics.txt"),
    );
    let fp = Fingerprint::from_info(&i, Some("tiny-llama"));
    assert_eq!(fp.engine, "llama.cpp");
    assert_eq!(fp.version.as_deref(), Some("b0-unknown"));
    assert_eq!(fp.model.as_deref(), Some("tiny-llama"));
    // Per slot (528384 total / 16 slots), not the whole KV cache.
    assert_eq!(fp.max_context, Some(33_024));
    assert_eq!(fp.flags["slots"], "16");
    assert_eq!(fp.flags["n_ctx_train"], "131072");
    assert_eq!(fp.flags["speculative_decoding"], "off");
    assert!(fp.context_flag().contains("--ctx-size"));
}

#[test]
fn llamacpp_context_from_models_when_props_are_off() {
    let i = info("llamacpp", &[("/v1/models", "models.json")], None);
    let fp = Fingerprint::from_info(&i, None);
    assert_eq!(fp.engine, "llama.cpp");
    assert_eq!(fp.max_context, Some(33_024));
    assert_eq!(
        fp.max_context_source.as_deref(),
        Some("/v1/models data[].meta.n_ctx")
    );
}

#[test]
fn sglang_from_docs() {
    for path in ["/server_info", "/get_server_info"] {
        let i = info(
            "sglang",
            &[("/v1/models", "models.json"), (path, "server_info.json")],
            Some("metrics.txt"),
        );
        let fp = Fingerprint::from_info(&i, None);
        assert_eq!(fp.engine, "sglang");
        assert_eq!(fp.version.as_deref(), Some("0.5.11"));
        assert_eq!(fp.model.as_deref(), Some("qwen3.6-27b"));
        assert_eq!(fp.max_context, Some(131_072));
        assert_eq!(fp.max_input, Some(131_066));
        assert_eq!(fp.flags["prefix_caching"], "on");
        assert_eq!(fp.flags["speculative_decoding"], "on");
        assert_eq!(fp.flags["speculative_algorithm"], "EAGLE");
        assert_eq!(fp.flags["speculative_num_draft_tokens"], "4");
        assert_eq!(fp.flags["tp_size"], "2");
        assert_eq!(fp.context_flag(), "--context-length");
    }
}

#[test]
fn sglang_kv_pool_caps_the_context() {
    let mut doc = json("sglang", "server_info.json");
    doc["max_total_num_tokens"] = 65_536.into();
    let mut i = ServerInfo::default();
    i.documents
        .insert("/v1/models".into(), json("sglang", "models.json"));
    i.documents.insert("/server_info".into(), doc);
    let fp = Fingerprint::from_info(&i, None);
    assert_eq!(fp.max_context, Some(65_536));
}

#[test]
fn tgi_from_docs() {
    let i = info(
        "tgi",
        &[("/v1/models", "models.json"), ("/info", "info.json")],
        None,
    );
    let fp = Fingerprint::from_info(&i, None);
    assert_eq!(fp.engine, "tgi");
    assert_eq!(fp.version.as_deref(), Some("3.3.6"));
    assert_eq!(
        fp.model.as_deref(),
        Some("meta-llama/Llama-3.1-8B-Instruct")
    );
    assert_eq!(fp.max_context, Some(8192));
    assert_eq!(fp.max_input, Some(8191));
    assert_eq!(fp.flags["max_concurrent_requests"], "128");
    assert!(fp.context_flag().contains("--max-total-tokens"));
}

#[test]
fn tgi_before_2_0_names_the_input_cap_max_input_length() {
    let mut doc = json("tgi", "info.json");
    let v = doc
        .as_object_mut()
        .unwrap()
        .remove("max_input_tokens")
        .unwrap();
    doc["max_input_length"] = v;
    let mut i = ServerInfo::default();
    i.documents.insert("/info".into(), doc);
    let fp = Fingerprint::from_info(&i, None);
    assert_eq!((fp.engine.as_str(), fp.max_input), ("tgi", Some(8191)));
}

#[test]
fn an_unknown_server_is_named_unknown() {
    let mut i = ServerInfo::default();
    i.documents.insert(
        "/v1/models".into(),
        serde_json::json!({"data": [{"id": "m", "owned_by": "openai"}]}),
    );
    let fp = Fingerprint::from_info(&i, None);
    assert_eq!(fp.engine, "unknown");
    assert_eq!(fp.max_context, None);
}

/// Counters from a fixture, and the same with every counter raised by `k`.
fn grown(engine: &str, k: f64) -> (Counters, Counters) {
    let c = Exposition::parse(&text(engine, "metrics.txt")).counters();
    let after = Counters(c.0.iter().map(|(n, v)| (n.clone(), v + k)).collect());
    (c, after)
}

#[test]
fn vllm_metrics_map_onto_every_field() {
    let (before, after) = grown("vllm", 2.0);
    assert!(before
        .0
        .keys()
        .any(|k| k.starts_with("vllm:prefix_cache_hits_total{")));
    assert!(!before
        .0
        .keys()
        .any(|k| k.contains("_bucket") || k.contains("_created")));
    let s = ServerCounters::between(&before, &after);
    assert_eq!(s.get(ServerCounter::PrefixCacheQueries), Some(2.0));
    assert_eq!(s.get(ServerCounter::PrefixCacheHits), Some(2.0));
    assert_eq!(s.get(ServerCounter::CachedPromptTokens), Some(2.0));
    assert_eq!(s.get(ServerCounter::Preemptions), Some(2.0));
    assert_eq!(s.get(ServerCounter::TtftCount), Some(2.0));
    assert_eq!(s.get(ServerCounter::TtftSumS), Some(2.0));
    // This vLLM ran without speculative decoding: it exports no spec_decode counters.
    assert_eq!(
        (s.get(ServerCounter::SpecDrafts), s.acceptance_length()),
        (None, None)
    );
    let raw: serde_json::Map<String, Value> = serde_json::from_str(&s.raw_json()).unwrap();
    assert_eq!(raw.len(), before.0.len());
}

#[test]
fn llamacpp_metrics_map_queries_hits_and_drafts() {
    let (before, after) = grown("llamacpp", 3.0);
    let s = ServerCounters::between(&before, &after);
    // queries = processed + cached prompt tokens; hits = cached.
    assert_eq!(s.get(ServerCounter::PrefixCacheQueries), Some(6.0));
    assert_eq!(s.get(ServerCounter::PrefixCacheHits), Some(3.0));
    assert_eq!(s.get(ServerCounter::CachedPromptTokens), Some(3.0));
    assert_eq!(s.get(ServerCounter::SpecDrafts), Some(3.0));
    assert_eq!(s.acceptance_length(), Some(2.0));
    assert_eq!(
        (
            s.get(ServerCounter::Preemptions),
            s.get(ServerCounter::TtftCount)
        ),
        (None, None)
    );
}

#[test]
fn sglang_metrics_map_from_docs() {
    let (before, after) = grown("sglang", 5.0);
    let s = ServerCounters::between(&before, &after);
    assert_eq!(s.get(ServerCounter::PrefixCacheQueries), Some(5.0));
    assert_eq!(s.get(ServerCounter::PrefixCacheHits), Some(5.0));
    assert_eq!(s.get(ServerCounter::TtftCount), Some(5.0));
    assert_eq!(s.get(ServerCounter::TtftSumS), Some(5.0));
    assert!(!s
        .raw
        .contains_key("sglang:token_usage{model_name=\"qwen3.6-27b\"}"));
}
