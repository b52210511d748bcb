//! One test per fault class: the simulator injects the fault into every
//! streamed request (or the test makes it happen), and the client must
//! return a failed outcome of that fault's own class, with its timestamps
//! and a message — never panic, never hang past its timeouts.

use qexp_client::{Client, ErrorClass, GenRequest, Outcome, Timeouts};
use qexp_plan::ApiKind;
use qexp_sim::{Fault, FaultPlan, SimProfile, SimServer};
use std::time::Duration;

/// Limits short enough for tests that wait for them.
fn short() -> Timeouts {
    Timeouts {
        connect: Duration::from_secs(2),
        first_byte: Duration::from_millis(400),
        idle: Duration::from_millis(400),
        total: Duration::from_secs(5),
    }
}

fn request(max_tokens: u32) -> GenRequest {
    GenRequest {
        api: ApiKind::Chat,
        model: "sim-exact".into(),
        prompt: "one two three".into(),
        max_tokens,
        extra: Default::default(),
        history: None,
        batch: 1,
        headers: Vec::new(),
        images: Default::default(),
    }
}

/// One request of 8 tokens to the `exact` profile (50 ms to the first token,
/// 10 ms per token) with `faults`.
async fn with_faults(faults: FaultPlan, timeouts: Timeouts) -> Outcome {
    let mut profile = SimProfile::by_name("exact").unwrap();
    profile.faults = faults;
    let sim = SimServer::start(profile).await.unwrap();
    let client = Client::with_timeouts(&sim.base_url(), None, timeouts).unwrap();
    let measure = |client: Client| async move {
        tokio::time::timeout(Duration::from_secs(20), client.stream(&request(8)))
            .await
            .expect("the client ends every request by its timeouts")
    };
    // Both ways of streaming (qexp's own reader for http://, reqwest for
    // https:// and proxies) must tell the same story of every fault.
    let via_reqwest = measure(client.clone().over_reqwest()).await;
    let out = measure(client).await;
    let story = |o: &Outcome| {
        (
            o.error.as_ref().map(|e| e.class),
            o.content_chunks,
            o.retries,
            o.http_status,
            o.headers_s.is_some(),
        )
    };
    assert_eq!(story(&out), story(&via_reqwest), "{out:?}\n{via_reqwest:?}");
    drop(sim);
    out
}

async fn with_fault(fault: Fault) -> Outcome {
    with_faults(FaultPlan::always(fault), short()).await
}

/// The failure's class, after checking what every failure row carries.
fn class(o: &Outcome) -> ErrorClass {
    let e = o.error.as_ref().expect("the request failed");
    assert!(!e.message.is_empty());
    assert!(o.sent_unix_s > 1.6e9, "sent time {}", o.sent_unix_s);
    assert!(o.end_s >= 0.0 && o.end_s < 10.0, "end {}", o.end_s);
    e.class
}

fn message(o: &Outcome) -> &str {
    &o.error.as_ref().unwrap().message
}

#[tokio::test]
async fn a_healthy_request_succeeds() {
    let o = with_faults(FaultPlan::none(), short()).await;
    assert!(o.ok(), "{:?}", o.error);
    assert_eq!(o.content_chunks, 8);
}

#[tokio::test]
async fn refused_connection_is_connect() {
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let client = Client::with_timeouts(&format!("http://127.0.0.1:{port}"), None, short()).unwrap();
    let o = client.stream(&request(8)).await;
    assert_eq!(class(&o), ErrorClass::Connect);
    assert_eq!(o.http_status, None);
}

#[tokio::test]
async fn closed_before_answering_is_connection_closed_after_one_resend() {
    let o = with_fault(Fault::Close).await;
    assert_eq!(class(&o), ErrorClass::ConnectionClosed, "{}", message(&o));
    assert_eq!(o.retries, 1);
    assert_eq!(o.headers_s, None);
}

#[tokio::test]
async fn reset_mid_stream_is_stream_broken_and_keeps_what_arrived() {
    let o = with_fault(Fault::Reset(3)).await;
    assert_eq!(class(&o), ErrorClass::StreamBroken, "{}", message(&o));
    assert_eq!(o.content_chunks, 3);
    assert!(o.first_token_s.is_some() && o.end_s >= o.first_token_s.unwrap());
}

#[tokio::test]
async fn http_429_is_rate_limited() {
    let o = with_fault(Fault::RateLimited).await;
    assert_eq!(class(&o), ErrorClass::RateLimited);
    assert_eq!(o.http_status, Some(429));
    assert!(message(&o).contains("too many requests"), "{}", message(&o));
}

#[tokio::test]
async fn http_500_is_http_status() {
    let o = with_fault(Fault::Internal).await;
    assert_eq!(class(&o), ErrorClass::HttpStatus);
    assert_eq!(o.http_status, Some(500));
    assert!(message(&o).contains("engine crashed"), "{}", message(&o));
}

#[tokio::test]
async fn http_503_is_unavailable_with_its_retry_after() {
    let o = with_fault(Fault::Unavailable(7)).await;
    assert_eq!(class(&o), ErrorClass::Unavailable);
    assert_eq!(o.http_status, Some(503));
    assert!(message(&o).contains("Retry-After: 7"), "{}", message(&o));
    assert!(o.headers_s.is_some());
}

#[tokio::test]
async fn malformed_json_in_a_chunk_is_malformed_json() {
    let o = with_fault(Fault::MalformedJson).await;
    assert_eq!(class(&o), ErrorClass::MalformedJson, "{}", message(&o));
    assert_eq!(o.content_chunks, 1);
}

#[tokio::test]
async fn no_final_done_is_missing_done() {
    let o = with_fault(Fault::NoDone).await;
    assert_eq!(class(&o), ErrorClass::MissingDone, "{}", message(&o));
    assert_eq!(o.content_chunks, 8);
    assert_eq!(o.usage.completion_tokens, Some(8));
}

#[tokio::test]
async fn a_stall_mid_stream_ends_at_the_idle_timeout() {
    let o = with_fault(Fault::Stall(3600.0)).await;
    assert_eq!(class(&o), ErrorClass::IdleTimeout, "{}", message(&o));
    assert_eq!(o.content_chunks, 1);
    let silent = o.end_s - o.first_token_s.unwrap();
    assert!((0.39..2.0).contains(&silent), "silent for {silent} s");
}

#[tokio::test]
async fn a_stall_longer_than_the_total_ends_at_the_total_timeout() {
    let timeouts = Timeouts {
        idle: Duration::from_secs(60),
        total: Duration::from_millis(600),
        ..short()
    };
    let o = with_faults(FaultPlan::always(Fault::Stall(3600.0)), timeouts).await;
    assert_eq!(class(&o), ErrorClass::Timeout, "{}", message(&o));
    assert!((0.59..2.0).contains(&o.end_s), "ended at {} s", o.end_s);
}

#[tokio::test]
async fn a_stream_that_flows_outlives_its_idle_limit() {
    // 50 ms to the first token, then 10 ms gaps: 0.13 s of stream, longer
    // than the 100 ms idle limit, every silence far inside it.
    let timeouts = Timeouts {
        idle: Duration::from_millis(100),
        ..short()
    };
    let o = with_faults(FaultPlan::default(), timeouts).await;
    assert!(o.ok(), "{:?}", o.error);
    assert_eq!(o.content_chunks, 8);
    assert!(o.end_s > 0.1, "the stream lasted {} s", o.end_s);
}

#[tokio::test]
async fn slow_response_headers_end_at_the_first_byte_timeout() {
    let o = with_fault(Fault::SlowHeaders(3600.0)).await;
    assert_eq!(class(&o), ErrorClass::FirstByteTimeout, "{}", message(&o));
    assert_eq!(o.headers_s, None);
    assert!((0.39..2.0).contains(&o.end_s), "ended at {} s", o.end_s);
}

#[tokio::test]
async fn slow_headers_within_the_limits_only_delay() {
    let roomy = Timeouts {
        first_byte: Duration::from_secs(3),
        idle: Duration::from_secs(3),
        ..short()
    };
    let o = with_faults(FaultPlan::always(Fault::SlowHeaders(0.2)), roomy).await;
    assert!(o.ok(), "{:?}", o.error);
    assert!(o.headers_s.unwrap() >= 0.19);
}

#[tokio::test]
async fn one_huge_chunk_is_oversized_event() {
    let o = with_fault(Fault::HugeChunk(2 << 20)).await;
    assert_eq!(class(&o), ErrorClass::OversizedEvent, "{}", message(&o));
}

#[tokio::test]
async fn invalid_utf8_is_invalid_utf8() {
    let o = with_fault(Fault::InvalidUtf8).await;
    assert_eq!(class(&o), ErrorClass::InvalidUtf8, "{}", message(&o));
    assert_eq!(o.content_chunks, 1);
}

#[tokio::test]
async fn wrong_content_type_is_content_type() {
    let o = with_fault(Fault::WrongContentType).await;
    assert_eq!(class(&o), ErrorClass::ContentType, "{}", message(&o));
    assert_eq!(o.http_status, Some(200));
    assert!(message(&o).contains("text/html"), "{}", message(&o));
}

#[tokio::test]
async fn a_400_for_over_long_context_is_context_length() {
    let o = with_fault(Fault::ContextLength).await;
    assert_eq!(class(&o), ErrorClass::ContextLength, "{}", message(&o));
    assert_eq!(o.http_status, Some(400));
}

#[tokio::test]
async fn a_real_over_long_request_is_context_length_too() {
    let sim = SimServer::start(SimProfile::by_name("exact").unwrap())
        .await
        .unwrap();
    let client = Client::with_timeouts(&sim.base_url(), None, short()).unwrap();
    let o = client.stream(&request(200_000)).await;
    assert_eq!(class(&o), ErrorClass::ContextLength, "{}", message(&o));
}

#[test]
fn every_class_has_a_distinct_stored_name_matching_serde() {
    let mut names = std::collections::BTreeSet::new();
    for c in ErrorClass::ALL {
        assert!(names.insert(c.as_str()), "duplicate {}", c.as_str());
        let json = serde_json::to_string(&c).unwrap();
        assert_eq!(json, format!("\"{}\"", c.as_str()));
        assert_eq!(ErrorClass::from_name(c.as_str()), Some(c));
    }
}
