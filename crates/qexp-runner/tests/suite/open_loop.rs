//! The open-loop scheduler on a fake backend and tokio's paused clock:
//! requests leave at their planned offsets whatever the server does, and a
//! cap on requests in flight delays sends without moving their schedule.

use qexp_client::{GenRequest, Outcome};
use qexp_plan::ApiKind;
use qexp_runner::{run_open_loop, Backend, Job, OpenLoopSpec, Timer};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::time::Instant;

/// A server that takes `service` per request and notes when each arrived.
struct Fake {
    start: Instant,
    service: Duration,
    sends: Mutex<Vec<(u32, Duration)>>,
    in_flight: AtomicUsize,
    max_in_flight: AtomicUsize,
}

impl Fake {
    fn new(service_ms: u64) -> Arc<Fake> {
        Arc::new(Fake {
            start: Instant::now(),
            service: Duration::from_millis(service_ms),
            sends: Mutex::new(Vec::new()),
            in_flight: AtomicUsize::new(0),
            max_in_flight: AtomicUsize::new(0),
        })
    }
}

impl Backend for Fake {
    async fn send(&self, req: GenRequest) -> Outcome {
        let now = self.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
        self.max_in_flight.fetch_max(now, Ordering::SeqCst);
        self.sends
            .lock()
            .unwrap()
            .push((req.max_tokens, self.start.elapsed()));
        tokio::time::sleep(self.service).await;
        self.in_flight.fetch_sub(1, Ordering::SeqCst);
        Outcome {
            first_token_s: Some(0.01),
            last_token_s: Some(self.service.as_secs_f64()),
            content_chunks: 1,
            client_tokens: 1,
            ..Outcome::default()
        }
    }
}

/// Jobs whose `max_tokens` is their index, so the fake can tell them apart.
fn jobs(n: u32) -> Vec<Job> {
    (0..n)
        .map(|index| Job {
            index,
            request: GenRequest {
                api: ApiKind::Chat,
                model: "m".into(),
                prompt: "p".into(),
                max_tokens: index,
                extra: Default::default(),
                history: None,
                batch: 1,
                headers: Vec::new(),
                images: Default::default(),
            },
        })
        .collect()
}

fn spec(offsets_ms: &[u64], cap: Option<u32>) -> OpenLoopSpec {
    OpenLoopSpec {
        offsets: offsets_ms.iter().map(|&m| m as f64 / 1000.0).collect(),
        max_in_flight: cap,
        timer: Timer::Coarse,
        origin_unix_s: None,
    }
}

fn sent_at_ms(fake: &Fake) -> Vec<(u32, u128)> {
    let mut s: Vec<(u32, u128)> = fake
        .sends
        .lock()
        .unwrap()
        .iter()
        .map(|(i, d)| (*i, d.as_millis()))
        .collect();
    s.sort();
    s
}

#[tokio::test(start_paused = true)]
async fn sends_on_schedule_even_when_the_server_is_slow() {
    // Each request takes 1 s, arrivals every 100 ms: a closed loop of one
    // would send at 0, 1000, 2000 ms; the open loop keeps the schedule.
    let fake = Fake::new(1000);
    let (_tx, rx) = tokio::sync::watch::channel(false);
    let offsets = [0, 100, 200, 300, 400];
    let done = run_open_loop(fake.clone(), jobs(5), spec(&offsets, None), rx, |_| {}).await;
    assert_eq!(done.len(), 5);
    let sent = sent_at_ms(&fake);
    assert_eq!(sent, vec![(0, 0), (1, 100), (2, 200), (3, 300), (4, 400)]);
    assert_eq!(fake.max_in_flight.load(Ordering::SeqCst), 5);
    // Scheduled times keep the planned spacing.
    let sched: Vec<f64> = done.iter().map(|f| f.scheduled_unix_s).collect();
    for (w, off) in sched.windows(2).zip(offsets.windows(2)) {
        let planned = (off[1] - off[0]) as f64 / 1000.0;
        assert!((w[1] - w[0] - planned).abs() < 1e-6, "{sched:?}");
    }
}

/// Unix seconds now (the wall clock, which tokio's paused clock does not stop).
fn unix_now() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs_f64()
}

/// Shards share a start: a shard that begins 10 ms after it counts its
/// arrivals from it, not from when it began. Those already due go out at
/// once, the rest on the shared schedule, and every scheduled time is the
/// shared start plus the planned offset. A start still ahead is waited
/// for; one further back than `ORIGIN_LATE_MAX_S` counts from the shard's
/// own start instead.
#[tokio::test(start_paused = true)]
async fn arrivals_count_from_the_shared_start_when_a_shard_begins_late() {
    let offsets = [0, 20, 40, 60];
    let (_tx, rx) = tokio::sync::watch::channel(false);
    let fake = Fake::new(1);
    let before = unix_now();
    let origin = before - 0.010;
    let shared = OpenLoopSpec {
        origin_unix_s: Some(origin),
        ..spec(&offsets, None)
    };
    let done = run_open_loop(fake.clone(), jobs(4), shared, rx.clone(), |_| {}).await;
    // The dispatcher read the wall clock (which the paused clock does not
    // stop) at most this long after the test did: the shard began 10 ms
    // after the shared start, plus at most that.
    let slack_ms = (unix_now() - before) * 1e3;
    let mut sent: Vec<(u32, f64)> = fake
        .sends
        .lock()
        .unwrap()
        .iter()
        .map(|(i, d)| (*i, d.as_secs_f64() * 1e3))
        .collect();
    sent.sort_by_key(|(i, _)| *i);
    let at: Vec<f64> = sent.iter().map(|(_, ms)| *ms).collect();
    assert_eq!(at[0], 0.0, "sent at {at:?} ms");
    for (got, want) in at.iter().zip([0.0, 10.0, 30.0, 50.0]).skip(1) {
        assert!(
            *got <= want + 1e-3 && *got >= want - slack_ms - 1e-3,
            "sent at {at:?} ms (slack {slack_ms} ms)"
        );
    }
    assert!((at[3] - at[2] - 20.0).abs() < 1e-3, "sent at {at:?} ms");
    for (f, off) in done.iter().zip(offsets) {
        let want = origin + off as f64 / 1000.0;
        assert!((f.scheduled_unix_s - want).abs() < 1e-6, "{f:?}");
    }

    // A start still ahead (the wall clock read a hair early): the first
    // arrival waits for it.
    let fake = Fake::new(1);
    let before = unix_now();
    let origin = before + 0.010;
    let early = OpenLoopSpec {
        origin_unix_s: Some(origin),
        ..spec(&offsets, None)
    };
    let done = run_open_loop(fake.clone(), jobs(4), early, rx.clone(), |_| {}).await;
    let slack_ms = (unix_now() - before) * 1e3;
    let first = fake.sends.lock().unwrap()[0].1.as_secs_f64() * 1e3;
    assert!(
        first <= 10.0 + 1e-3 && first >= 10.0 - slack_ms - 1e-3,
        "{first} ms"
    );
    assert!((done[3].scheduled_unix_s - origin - 0.060).abs() < 1e-6);

    let fake = Fake::new(1);
    let origin = unix_now() - qexp_runner::ORIGIN_LATE_MAX_S - 0.150;
    let stale = OpenLoopSpec {
        origin_unix_s: Some(origin),
        ..spec(&offsets, None)
    };
    let done = run_open_loop(fake.clone(), jobs(4), stale, rx, |_| {}).await;
    assert_eq!(sent_at_ms(&fake), vec![(0, 0), (1, 20), (2, 40), (3, 60)]);
    assert!(done[0].scheduled_unix_s > origin + 0.15, "{:?}", done[0]);
}

#[tokio::test(start_paused = true)]
async fn a_cap_delays_sends_but_not_their_schedule() {
    let fake = Fake::new(1000);
    let (_tx, rx) = tokio::sync::watch::channel(false);
    let done = run_open_loop(
        fake.clone(),
        jobs(4),
        spec(&[0, 100, 200, 300], Some(2)),
        rx,
        |_| {},
    )
    .await;
    assert_eq!(fake.max_in_flight.load(Ordering::SeqCst), 2);
    // Two slots: requests 2 and 3 wait for the first two to finish.
    assert_eq!(
        sent_at_ms(&fake),
        vec![(0, 0), (1, 100), (2, 1000), (3, 1100)]
    );
    let sched: Vec<f64> = done
        .iter()
        .map(|f| f.scheduled_unix_s - done[0].scheduled_unix_s)
        .collect();
    assert!(
        (sched[2] - 0.2).abs() < 1e-6 && (sched[3] - 0.3).abs() < 1e-6,
        "{sched:?}"
    );
}

#[tokio::test(start_paused = true)]
async fn cancel_stops_dispatch_and_keeps_in_flight_rows() {
    let fake = Fake::new(1000);
    let (tx, rx) = tokio::sync::watch::channel(false);
    let stopper = tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(250)).await;
        tx.send(true).unwrap();
    });
    let done = run_open_loop(
        fake.clone(),
        jobs(10),
        spec(&[0, 100, 200, 300, 400, 500, 600, 700, 800, 900], None),
        rx,
        |_| {},
    )
    .await;
    stopper.await.unwrap();
    // Three were sent before the stop; they finish within the stop grace
    // (1 s each, well under STOP_GRACE) and nothing more is dispatched.
    assert_eq!(done.len(), 3);
    assert!(done.iter().all(|f| f.outcome.error.is_none()));
    assert_eq!(fake.sends.lock().unwrap().len(), 3);
}
