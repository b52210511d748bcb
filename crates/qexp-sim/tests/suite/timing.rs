//! The timing model as a client measures it over loopback: TTFT, chunk gaps,
//! batch queueing, disconnects and shutdown. Tolerances are loose (±15 ms on
//! single events), and a timing is judged on the first of up to
//! [`ATTEMPTS`] streams that shows it (see [`stream_timed`]), so a loaded
//! 2-core machine does not make them flaky.

use std::time::{Duration, Instant};

use crate::common::{ms, stream, words, Event, ONE_AT_A_TIME};
use qexp_sim::{SimProfile, SimServer, CHAT_PRIMER_TOKENS};
use serde_json::{json, Value};

/// How many streams (or batches) a timing may take to show.
const ATTEMPTS: usize = 4;

/// Streams `body` to `url` until `misses` finds nothing wrong with the
/// stream's timing, at most [`ATTEMPTS`] times, and returns that stream.
/// Each attempt's prompt starts differently, so that none finds an earlier
/// one's in the simulator's prefix cache (which would cut its prefill).
/// Why: a stall of the host itself lands on any one stream (16-28 ms on an
/// idle 2-core VM in about 1 run in 20 of one test; up to 40 ms and one
/// run in 10 with two busy loops beside it) and only ever delays, while a
/// model timing that is really wrong (TTFT 100 ms, gaps of 20 ms) misses in
/// every stream, and still fails.
async fn stream_timed(
    client: &reqwest::Client,
    url: &str,
    body: &Value,
    misses: impl Fn(&[Event]) -> Option<String>,
) -> Vec<Event> {
    let mut seen = Vec::new();
    for attempt in 0..ATTEMPTS {
        let events = stream(client, url, &unique_prompt(body, attempt)).await;
        match misses(&events) {
            None => return events,
            Some(why) => seen.push(why),
        }
    }
    panic!("the timing was off in all {ATTEMPTS} streams: {seen:#?}");
}

/// `body` with the first word of its prompt made unique to `attempt` (the
/// same number of words, so the same number of tokens).
fn unique_prompt(body: &Value, attempt: usize) -> Value {
    let mut body = body.clone();
    let text = if body.get("prompt").is_some() {
        &mut body["prompt"]
    } else {
        &mut body["messages"][0]["content"]
    };
    let prompt = text.as_str().expect("a text prompt");
    *text = Value::from(format!("a{attempt}{prompt}"));
    body
}

/// `Some(why)` when `ms` is outside `window`.
fn outside(what: &str, ms: f64, window: std::ops::Range<f64>) -> Option<String> {
    (!window.contains(&ms)).then(|| format!("{what} {ms:.1} ms, want {window:?}"))
}

/// Content events: every event but `[DONE]` and the usage chunk.
fn content(events: &[Event]) -> Vec<&Event> {
    events
        .iter()
        .filter(|e| e.data != "[DONE]" && !e.json()["choices"].as_array().unwrap().is_empty())
        .collect()
}

fn chat_body(prompt_words: usize, max_tokens: u32) -> Value {
    json!({
        "model": "sim-exact",
        "messages": [{"role": "user", "content": words(prompt_words)}],
        "max_tokens": max_tokens,
        "stream": true,
        "stream_options": {"include_usage": true},
        "ignore_eos": true,
    })
}

#[tokio::test]
async fn exact_profile_streams_with_known_timing() {
    let _serial = ONE_AT_A_TIME.lock().await;
    let server = SimServer::start(SimProfile::by_name("exact").unwrap())
        .await
        .unwrap();
    let client = reqwest::Client::new();
    let url = format!("{}/v1/chat/completions", server.base_url());
    let events = stream_timed(&client, &url, &chat_body(250, 20), |events| {
        let chunks = content(events);
        let (first, last) = (chunks.first()?, chunks.last()?);
        // TTFT is 50 ms whatever the prompt length (no per-token prefill cost).
        let mut misses = vec![outside("TTFT", ms(first.at), 49.0..65.0)];
        // Deadlines are absolute, so the mean gap is tight even if one gap is late.
        let mean_gap = ms(last.at - first.at) / (chunks.len() - 1).max(1) as f64;
        misses.push(outside("mean gap", mean_gap, 7.0..13.0));
        for pair in chunks.windows(2) {
            misses.push(outside("gap", ms(pair[1].at - pair[0].at), 0.0..25.0));
        }
        let misses: Vec<String> = misses.into_iter().flatten().collect();
        (!misses.is_empty()).then(|| misses.join("; "))
    })
    .await;

    let chunks = content(&events);
    assert_eq!(chunks.len(), 20, "ceil(20 / 1 token per step) chunks");
    assert_eq!(events.last().unwrap().data, "[DONE]");
    let usage = &events[events.len() - 2].json();
    assert_eq!(usage["choices"], json!([]));
    assert_eq!(
        usage["usage"]["prompt_tokens"],
        250 + CHAT_PRIMER_TOKENS + 4
    );
    assert_eq!(usage["usage"]["completion_tokens"], 20);
    assert_eq!(usage["usage"]["total_tokens"], 250 + 7 + 20);

    let first = chunks[0].json();
    assert_eq!(first["object"], "chat.completion.chunk");
    assert_eq!(first["choices"][0]["delta"]["role"], "assistant");
    let text: String = chunks
        .iter()
        .map(|c| {
            c.json()["choices"][0]["delta"]["content"]
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect();
    assert_eq!(text.split_whitespace().count(), 20);
    let finishes: Vec<Value> = chunks
        .iter()
        .map(|c| c.json()["choices"][0]["finish_reason"].clone())
        .collect();
    assert_eq!(finishes[19], "length");
    assert!(finishes[..19].iter().all(Value::is_null));

    server.shutdown().await;
}

#[tokio::test]
async fn multi_token_steps_and_prefill_cost() {
    let _serial = ONE_AT_A_TIME.lock().await;
    // 4 tokens per step, 100 µs per prompt token: TTFT = 50 + 20 ms for 200 words.
    let profile = SimProfile {
        name: "mtp".to_owned(),
        tokens_per_step: 4,
        prefill_tokens_per_s: 10_000.0,
        ..SimProfile::by_name("exact").unwrap()
    };
    let server = SimServer::start(profile).await.unwrap();
    let client = reqwest::Client::new();
    let body = json!({"prompt": words(200), "max_tokens": 10, "stream": true, "stream_options": {"include_usage": true}});
    let url = format!("{}/v1/completions", server.base_url());
    let events = stream_timed(&client, &url, &body, |events| {
        let first = content(events).first().map_or(f64::NAN, |c| ms(c.at));
        outside("TTFT", first, 69.0..85.0)
    })
    .await;
    let chunks = content(&events);
    let sizes: Vec<usize> = chunks
        .iter()
        .map(|c| {
            c.json()["choices"][0]["text"]
                .as_str()
                .unwrap()
                .split_whitespace()
                .count()
        })
        .collect();
    assert_eq!(sizes, [4, 4, 2], "ceil(10 / 4) chunks, the last one short");
    let usage = events[events.len() - 2].json();
    assert_eq!(usage["usage"]["completion_tokens"], 10);
    assert_eq!(usage["usage"]["prompt_tokens"], 200);
    server.shutdown().await;
}

#[tokio::test]
async fn requests_beyond_max_batch_queue() {
    let _serial = ONE_AT_A_TIME.lock().await;
    let profile = SimProfile {
        name: "batch2".to_owned(),
        max_batch: 2,
        ..SimProfile::by_name("exact").unwrap()
    };
    let server = SimServer::start(profile).await.unwrap();
    let client = reqwest::Client::new();
    let url = format!("{}/v1/chat/completions", server.base_url());
    // Four at once, judged as `stream_timed` judges one stream: a batch
    // whose timing a stall of the host bent is measured again.
    let mut seen = Vec::new();
    while let Some(why) = batch_misses(&client, &url).await {
        seen.push(why);
        assert!(
            seen.len() < ATTEMPTS,
            "the timing was off in all {ATTEMPTS} batches: {seen:#?}"
        );
    }
    server.shutdown().await;
}

/// Sends four streams at once to a server that admits two; `Some(why)` when
/// their timing is not that of two admitted and two queued until a slot frees.
async fn batch_misses(client: &reqwest::Client, url: &str) -> Option<String> {
    let tasks: Vec<_> = (0..4)
        .map(|_| {
            let (client, url) = (client.clone(), url.to_owned());
            tokio::spawn(async move {
                let events = stream(&client, &url, &chat_body(10, 20)).await;
                let chunks = content(&events);
                (chunks[0].at, chunks[chunks.len() - 1].at)
            })
        })
        .collect();
    let mut runs = Vec::new();
    for task in tasks {
        runs.push(task.await.unwrap());
    }
    runs.sort();
    let ttfts: Vec<f64> = runs.iter().map(|r| ms(r.0)).collect();
    // Two queued until a slot frees at 50 + 19 * 10 = 240 ms: a stall only
    // delays, so an earlier start is wrong on any host.
    assert!(ttfts[2] > 200.0, "TTFTs {ttfts:?}");
    // Two admitted at once: 50 ms.
    if ttfts[1] >= 100.0 {
        return Some(format!("two should start at 50 ms: TTFTs {ttfts:?}"));
    }
    // The queued ones start when a slot frees: at the last chunk of an admitted one
    // (give or take which of two sockets the client reads first).
    let freed = ms(runs[0].1.min(runs[1].1));
    (ttfts[2] <= freed - 5.0).then(|| {
        format!(
            "a queued request started at {} ms, before a slot freed at {freed} ms",
            ttfts[2]
        )
    })
}

#[tokio::test]
async fn disconnect_frees_the_slot() {
    let _serial = ONE_AT_A_TIME.lock().await;
    let profile = SimProfile {
        name: "batch1".to_owned(),
        max_batch: 1,
        ..SimProfile::by_name("exact").unwrap()
    };
    let server = SimServer::start(profile).await.unwrap();
    let client = reqwest::Client::new();
    let url = format!("{}/v1/chat/completions", server.base_url());
    // 100 000 tokens at 10 ms each would hold the only slot for 1000 s.
    let mut resp = client
        .post(&url)
        .json(&chat_body(5, 100_000))
        .send()
        .await
        .unwrap();
    assert!(resp.chunk().await.unwrap().is_some());
    drop(resp);

    let started = Instant::now();
    let body = json!({"messages": [{"role": "user", "content": "hi"}], "max_tokens": 2});
    let resp = tokio::time::timeout(
        Duration::from_secs(10),
        client.post(&url).json(&body).send(),
    )
    .await
    .expect("the slot was not released after the client hung up")
    .unwrap();
    assert_eq!(resp.status(), 200);
    let waited = started.elapsed();
    assert!(
        waited < Duration::from_secs(2),
        "second request waited {waited:?}"
    );
    server.shutdown().await;
}

#[tokio::test]
async fn shutdown_cuts_streams_short() {
    let _serial = ONE_AT_A_TIME.lock().await;
    let server = SimServer::start(SimProfile::by_name("exact").unwrap())
        .await
        .unwrap();
    let client = reqwest::Client::new();
    let mut resp = client
        .post(format!("{}/v1/chat/completions", server.base_url()))
        .json(&chat_body(5, 100_000))
        .send()
        .await
        .unwrap();
    assert!(resp.chunk().await.unwrap().is_some());
    let started = Instant::now();
    tokio::time::timeout(Duration::from_secs(3), server.shutdown())
        .await
        .expect("shutdown finished");
    assert!(started.elapsed() < Duration::from_secs(2));
    let mut rest = Vec::new();
    while let Ok(Some(chunk)) = resp.chunk().await {
        rest.extend_from_slice(&chunk);
    }
    assert!(
        !String::from_utf8_lossy(&rest).contains("[DONE]"),
        "a cut stream must not look complete"
    );
}

#[tokio::test]
async fn many_concurrent_sequences_are_cheap() {
    let _serial = ONE_AT_A_TIME.lock().await;
    let server = SimServer::start(SimProfile::by_name("exact").unwrap())
        .await
        .unwrap();
    let client = reqwest::Client::new();
    let url = format!("{}/v1/completions", server.base_url());
    let started = Instant::now();
    let tasks: Vec<_> = (0..300)
        .map(|_| {
            let (client, url) = (client.clone(), url.clone());
            tokio::spawn(async move {
                let resp = client
                    .post(url)
                    .json(&json!({"prompt": "x", "max_tokens": 20}))
                    .send()
                    .await
                    .unwrap();
                let body: Value = resp.json().await.unwrap();
                body["usage"]["completion_tokens"].as_u64().unwrap()
            })
        })
        .collect();
    for task in tasks {
        assert_eq!(task.await.unwrap(), 20);
    }
    // Each takes 50 + 19 * 10 = 240 ms; all at once should not take much longer.
    let took = started.elapsed();
    assert!(
        took < Duration::from_secs(3),
        "300 concurrent requests took {took:?}"
    );
    server.shutdown().await;
}

#[tokio::test]
async fn fast_profile_is_scaled_founding() {
    let _serial = ONE_AT_A_TIME.lock().await;
    let profile = SimProfile::by_name("fast").unwrap();
    // The founding fit at 0.05×: TTFT a + b·L + c·L² at L = 1000, then 9
    // steps with one sequence of about 1000 tokens of context.
    let p = profile.params();
    let ttft_ms = 1e3 * p.ttft_alone_s(1000.0);
    let decode_ms = 1e3 * 9.0 * p.step_s(1.0, 1020.0);
    let server = SimServer::start(profile).await.unwrap();
    let client = reqwest::Client::new();
    let body = json!({"prompt": words(1000), "max_tokens": 40, "stream": true});
    let url = format!("{}/v1/completions", server.base_url());
    let events = stream_timed(&client, &url, &body, |events| {
        let chunks = content(events);
        let (first, last) = (chunks.first()?, chunks.last()?);
        let misses = [
            outside("TTFT", ms(first.at), ttft_ms - 1.0..ttft_ms + 22.0),
            outside(
                "decode",
                ms(last.at - first.at),
                decode_ms - 5.0..decode_ms + 15.0,
            ),
        ];
        let misses: Vec<String> = misses.into_iter().flatten().collect();
        (!misses.is_empty()).then(|| misses.join("; "))
    })
    .await;
    let chunks = content(&events);
    assert_eq!(chunks.len(), 10, "4 tokens per step");
    server.shutdown().await;
}

#[tokio::test]
async fn mixed_schedule_a_prompt_stalls_the_decoding_stream() {
    let _serial = ONE_AT_A_TIME.lock().await;
    // Prefill at 2000 tokens/s: a prompt of ~210 tokens costs ~105 ms of
    // the step that carries it (docs/model.md "Schedules").
    let profile = SimProfile {
        name: "mixed".to_owned(),
        prefill_tokens_per_s: 2000.0,
        prefix_cache_tokens: 0,
        schedule: qexp_model::Schedule::Mixed,
        ..SimProfile::by_name("exact").unwrap()
    };
    let server = SimServer::start(profile).await.unwrap();
    let client = reqwest::Client::new();
    let url = format!("{}/v1/chat/completions", server.base_url());
    let mut seen = Vec::new();
    while let Some(why) = stall_misses(&client, &url).await {
        seen.push(why);
        assert!(
            seen.len() < ATTEMPTS,
            "the timing was off in all {ATTEMPTS} tries: {seen:#?}"
        );
    }
    server.shutdown().await;
}

/// Streams A, and B 250 ms later while A decodes; `Some(why)` when A's
/// stream does not show exactly one step stalled by B's prefill, or B's
/// first chunk does not leave at the end of that step.
async fn stall_misses(client: &reqwest::Client, url: &str) -> Option<String> {
    let a = {
        let (client, url) = (client.clone(), url.to_owned());
        tokio::spawn(async move { stream(&client, &url, &chat_body(200, 40)).await })
    };
    tokio::time::sleep(Duration::from_millis(250)).await;
    let b = stream(client, url, &chat_body(200, 5)).await;
    let a = a.await.unwrap();
    let usage = b[b.len() - 2].json();
    let prompt = usage["usage"]["prompt_tokens"].as_f64().unwrap();
    let prefill = prompt / 2.0;
    let (a, b) = (content(&a), content(&b));
    let gaps: Vec<f64> = a.windows(2).map(|w| ms(w[1].at - w[0].at)).collect();
    let long: Vec<f64> = gaps.iter().copied().filter(|g| *g > 60.0).collect();
    // The stalled step: 10 ms of decode plus B's prefill; a host stall only adds.
    let [stalled] = long[..] else {
        return Some(format!("want one stalled step, gaps {gaps:?}"));
    };
    if let Some(why) = outside(
        "stalled step",
        stalled,
        10.0 + prefill - 3.0..10.0 + prefill + 25.0,
    ) {
        return Some(why);
    }
    // B: 50 ms of latency, at most a step's wait, then the stalled step.
    let ttft = ms(b[0].at);
    outside(
        "B's TTFT",
        ttft,
        50.0 + prefill..50.0 + prefill + 10.0 + 10.0 + 25.0,
    )
}
