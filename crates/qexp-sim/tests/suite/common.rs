//! Test helpers: a tiny SSE reader that timestamps every event, and the
//! lock that keeps timing tests apart.
#![allow(dead_code)]

use std::time::{Duration, Instant};

use serde_json::Value;

/// One timing test at a time: each measures milliseconds over loopback, and
/// a neighbour streaming hundreds of sequences on the same two cores would
/// be measured with it. Held by the timing module's tests and by every
/// other test that judges a duration.
pub static ONE_AT_A_TIME: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// One `data:` event of a stream and when its bytes arrived.
#[derive(Debug)]
pub struct Event {
    pub at: Duration,
    pub data: String,
}

impl Event {
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.data).unwrap_or_else(|e| panic!("bad JSON {:?}: {e}", self.data))
    }
}

/// Splits a complete SSE body on blank lines into the `data:` payloads.
pub fn split(body: &str) -> Vec<String> {
    body.split("\n\n")
        .filter(|e| !e.is_empty())
        .map(|e| {
            e.strip_prefix("data: ")
                .unwrap_or_else(|| panic!("not a data event: {e:?}"))
                .to_owned()
        })
        .collect()
}

/// POSTs `body` to `url` and reads the SSE response, timing each event from the send.
pub async fn stream(client: &reqwest::Client, url: &str, body: &Value) -> Vec<Event> {
    let sent = Instant::now();
    let mut resp = client
        .post(url)
        .json(body)
        .send()
        .await
        .expect("request sent");
    assert_eq!(resp.status(), 200);
    assert_eq!(resp.headers()["content-type"], "text/event-stream");
    let mut buf = String::new();
    let mut events = Vec::new();
    while let Some(chunk) = resp.chunk().await.expect("body readable") {
        let at = sent.elapsed();
        buf.push_str(std::str::from_utf8(&chunk).expect("utf-8"));
        while let Some(end) = buf.find("\n\n") {
            let raw: String = buf.drain(..end + 2).collect();
            for data in split(&raw) {
                events.push(Event { at, data });
            }
        }
    }
    assert!(buf.is_empty(), "trailing partial event {buf:?}");
    events
}

/// Milliseconds, for readable assertions.
pub fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// A prompt of exactly `n` words.
pub fn words(n: usize) -> String {
    (0..n)
        .map(|i| format!("w{i}"))
        .collect::<Vec<_>>()
        .join(" ")
}
