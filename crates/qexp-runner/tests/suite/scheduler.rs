//! The closed-loop scheduler on a fake backend with known timing (tokio's
//! paused clock), so in-flight counts and ordering are checked exactly.

use qexp_client::{GenRequest, Outcome};
use qexp_plan::ApiKind;
use qexp_runner::{run_closed_loop, Backend, Job};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

#[derive(Default)]
struct Fake {
    in_flight: AtomicUsize,
    max_in_flight: AtomicUsize,
    sent: AtomicUsize,
}

impl Backend for Fake {
    async fn send(&self, _req: GenRequest) -> Outcome {
        let now = self.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
        self.max_in_flight.fetch_max(now, Ordering::SeqCst);
        self.sent.fetch_add(1, Ordering::SeqCst);
        tokio::time::sleep(Duration::from_millis(100)).await;
        self.in_flight.fetch_sub(1, Ordering::SeqCst);
        Outcome {
            first_token_s: Some(0.05),
            last_token_s: Some(0.1),
            content_chunks: 5,
            client_tokens: 5,
            ..Outcome::default()
        }
    }
}

fn jobs(n: u32) -> Vec<Job> {
    (0..n)
        .map(|index| Job {
            index,
            request: GenRequest {
                api: ApiKind::Chat,
                model: "m".into(),
                prompt: "p".into(),
                max_tokens: 5,
                extra: Default::default(),
                history: None,
                batch: 1,
                headers: Vec::new(),
                images: Default::default(),
            },
        })
        .collect()
}

#[tokio::test(start_paused = true)]
async fn exactly_c_in_flight_until_done() {
    let fake = Arc::new(Fake::default());
    let (_tx, rx) = tokio::sync::watch::channel(false);
    let start = tokio::time::Instant::now();
    let done = run_closed_loop(fake.clone(), jobs(12), 4, rx, |_| {}).await;
    assert_eq!(done.len(), 12);
    assert_eq!(fake.max_in_flight.load(Ordering::SeqCst), 4);
    // 12 requests, 4 at a time, 100 ms each: three waves.
    assert_eq!(start.elapsed(), Duration::from_millis(300));
    let idx: Vec<u32> = done.iter().map(|f| f.index).collect();
    assert_eq!(idx, (0..12).collect::<Vec<_>>());
}

#[tokio::test(start_paused = true)]
async fn concurrency_above_request_count_sends_each_once() {
    let fake = Arc::new(Fake::default());
    let (_tx, rx) = tokio::sync::watch::channel(false);
    let done = run_closed_loop(fake.clone(), jobs(3), 16, rx, |_| {}).await;
    assert_eq!(done.len(), 3);
    assert_eq!(fake.sent.load(Ordering::SeqCst), 3);
}

#[tokio::test(start_paused = true)]
async fn cancel_stops_new_sends_and_lets_requests_in_flight_finish() {
    let fake = Arc::new(Fake::default());
    let (tx, rx) = tokio::sync::watch::channel(false);
    let stopper = tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(150)).await;
        tx.send(true).unwrap();
    });
    let start = tokio::time::Instant::now();
    let done = run_closed_loop(fake.clone(), jobs(20), 2, rx, |_| {}).await;
    stopper.await.unwrap();
    // Wave 1 finished at 100 ms; wave 2, in flight at 150 ms, finishes within the grace.
    assert_eq!(done.len(), 4);
    assert!(done.iter().all(|f| f.outcome.error.is_none()));
    assert_eq!(
        fake.sent.load(Ordering::SeqCst),
        4,
        "nothing sent after the stop"
    );
    assert_eq!(start.elapsed(), Duration::from_millis(200));
}

/// A backend whose requests take longer than the stop grace.
struct Slow;

impl Backend for Slow {
    async fn send(&self, _req: GenRequest) -> Outcome {
        tokio::time::sleep(qexp_runner::STOP_GRACE * 3).await;
        Outcome::default()
    }
}

#[tokio::test(start_paused = true)]
async fn requests_in_flight_past_the_grace_are_kept_as_cancelled() {
    let (tx, rx) = tokio::sync::watch::channel(false);
    let stopper = tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(150)).await;
        tx.send(true).unwrap();
    });
    let start = tokio::time::Instant::now();
    let done = run_closed_loop(Arc::new(Slow), jobs(20), 2, rx, |_| {}).await;
    stopper.await.unwrap();
    assert_eq!(done.len(), 2);
    let cancelled = done
        .iter()
        .filter(|f| {
            f.outcome
                .error
                .as_ref()
                .is_some_and(|e| e.class == qexp_client::ErrorClass::Cancelled)
        })
        .count();
    assert_eq!(cancelled, 2);
    assert_eq!(
        start.elapsed(),
        Duration::from_millis(150) + qexp_runner::STOP_GRACE
    );
}
