//! The prefix cache as a client sees it: cached tokens in the usage, a
//! shorter TTFT for the cached part, and vLLM-named counters on /metrics.

use crate::common::{ms, stream, words, ONE_AT_A_TIME};
use qexp_sim::{SimProfile, SimServer};
use serde_json::{json, Value};

/// 10 µs of prefill per prompt token and no fixed cost: 4,000 uncached tokens take 40 ms.
fn profile() -> SimProfile {
    SimProfile {
        name: "cache".to_owned(),
        prefill_fixed_s: 0.0,
        prefill_tokens_per_s: 100_000.0,
        ..SimProfile::by_name("exact").unwrap()
    }
}

fn chat(content: &str) -> Value {
    json!({
        "messages": [{"role": "system", "content": words(4000)}, {"role": "user", "content": content}],
        "max_tokens": 2,
        "stream": true,
        "stream_options": {"include_usage": true},
    })
}

/// (TTFT in ms, prompt tokens, cached tokens) of one streamed request.
async fn send(client: &reqwest::Client, url: &str, body: &Value) -> (f64, u64, u64) {
    let events = stream(client, url, body).await;
    let usage = events[events.len() - 2].json()["usage"].clone();
    (
        ms(events[0].at),
        usage["prompt_tokens"].as_u64().unwrap(),
        usage["prompt_tokens_details"]["cached_tokens"]
            .as_u64()
            .unwrap(),
    )
}

async fn counters(client: &reqwest::Client, base: &str) -> String {
    let resp = client.get(format!("{base}/metrics")).send().await.unwrap();
    assert_eq!(resp.status(), 200);
    resp.text().await.unwrap()
}

#[tokio::test]
async fn a_shared_prefix_is_served_from_cache() {
    let _serial = ONE_AT_A_TIME.lock().await;
    let server = SimServer::start(profile()).await.unwrap();
    let client = reqwest::Client::new();
    let base = server.base_url();
    let url = format!("{base}/v1/chat/completions");

    let (cold, prompt, cached) = send(&client, &url, &chat("first question")).await;
    assert_eq!(cached, 0);
    // The system message and its template come first: 4 + 4000 tokens, 250 whole blocks of 16.
    let (warm, prompt2, cached2) = send(&client, &url, &chat("another question here")).await;
    assert_eq!(
        (prompt, prompt2),
        (4000 + 2 + 2 * 4 + 3, 4000 + 3 + 2 * 4 + 3)
    );
    assert_eq!(
        cached2, 4000,
        "the whole blocks of the shared system message"
    );
    assert!(
        cold > 35.0 && warm < cold - 25.0,
        "TTFT cold {cold:.1} ms, with 4,000 cached tokens {warm:.1} ms"
    );

    let text = counters(&client, &base).await;
    let value = |name: &str| -> u64 {
        let line = text
            .lines()
            .find(|l| l.starts_with(name))
            .unwrap_or_else(|| panic!("no {name} in\n{text}"));
        line.rsplit(' ').next().unwrap().parse().unwrap()
    };
    assert_eq!(value("vllm:prefix_cache_queries_total"), prompt + prompt2);
    assert_eq!(value("vllm:prefix_cache_hits_total"), cached2);
    server.shutdown().await;
}

#[tokio::test]
async fn no_cache_means_no_hits() {
    let server = SimServer::start(SimProfile {
        prefix_cache_tokens: 0,
        ..profile()
    })
    .await
    .unwrap();
    let client = reqwest::Client::new();
    let url = format!("{}/v1/chat/completions", server.base_url());
    for _ in 0..2 {
        let (_, _, cached) = send(&client, &url, &chat("same")).await;
        assert_eq!(cached, 0);
    }
    server.shutdown().await;
}
