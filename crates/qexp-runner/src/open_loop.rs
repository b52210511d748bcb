//! Open-loop load: each request is sent at its planned arrival time whether
//! or not earlier ones have finished, optionally capped at `max_in_flight`.
//! A request's scheduled time is its arrival time, never the moment the
//! client got round to it, so a client that falls behind or a full cap shows
//! up as `queue_s` and in the response time from the schedule instead of
//! disappearing from the percentiles (coordinated omission).

use crate::backend::Backend;
use crate::scheduler::{send_due, unix_now, Finished, Job};
use crate::timer::Timer;
use crate::Cancel;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{mpsc, Semaphore};

/// How an open-loop point sends.
#[derive(Debug, Clone)]
pub struct OpenLoopSpec {
    /// Due time of each job, seconds from the start, same order as the jobs.
    pub offsets: Vec<f64>,
    /// Most requests in flight; arrivals beyond it wait for a slot.
    pub max_in_flight: Option<u32>,
    /// How the dispatcher waits for each due time.
    pub timer: Timer,
    /// The start the offsets count from, Unix seconds on this client's
    /// clock: the time shard 0 named for every shard
    /// ([`ORIGIN_LATE_MAX_S`]); None: when the dispatcher starts.
    pub origin_unix_s: Option<f64>,
}

/// How long after the shards' shared start (or before it) a shard may
/// begin and still count its arrivals from it. A shard wakes from the barrier a little late
/// (a busy host: milliseconds); counted from its own wake, its arrivals
/// would all move by that much against the other shards'. Counted from the
/// shared start, those due before it woke go out at once, each with its
/// wait in `queue_s`. A shard later than this (a start it heard of only
/// after it had passed) counts from its own start instead, rather than
/// send a burst of catch-up arrivals.
pub const ORIGIN_LATE_MAX_S: f64 = 0.05;

/// Sends `jobs` at `spec.offsets`; calls `on_done` as each finishes. Stops
/// dispatching when `cancel` turns true; requests in flight then get
/// [`crate::STOP_GRACE`] to finish, after which they end as `cancelled` rows.
pub async fn run_open_loop<B: Backend>(
    backend: Arc<B>,
    jobs: Vec<Job>,
    spec: OpenLoopSpec,
    cancel: Cancel,
    mut on_done: impl FnMut(&Finished),
) -> Vec<Finished> {
    let n = jobs.len();
    let (tx, mut rx) = mpsc::unbounded_channel();
    let dispatcher = tokio::spawn(dispatch(backend, jobs, spec, cancel, tx));
    let mut done = Vec::with_capacity(n);
    while let Some(f) = rx.recv().await {
        on_done(&f);
        done.push(f);
    }
    // The channel closes only after the dispatcher and every request ended.
    let _ = dispatcher.await;
    done.sort_by_key(|f| f.index);
    done
}

async fn dispatch<B: Backend>(
    backend: Arc<B>,
    jobs: Vec<Job>,
    spec: OpenLoopSpec,
    mut cancel: Cancel,
    tx: mpsc::UnboundedSender<Finished>,
) {
    let cap = spec
        .max_in_flight
        .map(|m| Arc::new(Semaphore::new(m as usize)));
    // One reading of each clock: due times are exact offsets from it (or
    // from the shared start, placed on the monotonic clock by that reading).
    let now = tokio::time::Instant::now();
    let now_unix = unix_now();
    let (start, start_unix) = match spec.origin_unix_s.map(|o| (o, now_unix - o)) {
        // Woken after the shared start (or a hair before it: the sleep ran
        // on the monotonic clock, the start is on the system clock).
        Some((origin, late)) if late.abs() <= ORIGIN_LATE_MAX_S => {
            let by = Duration::from_secs_f64(late.abs());
            let start = if late >= 0.0 {
                now.checked_sub(by).unwrap_or(now)
            } else {
                now + by
            };
            (start, origin)
        }
        _ => (now, now_unix),
    };
    for (job, offset) in jobs.into_iter().zip(spec.offsets) {
        let due = start + Duration::from_secs_f64(offset.max(0.0));
        tokio::select! {
            biased;
            _ = cancel.wait_for(|c| *c) => return,
            _ = spec.timer.until(due) => {}
        }
        let permit = match &cap {
            Some(sem) => tokio::select! {
                biased;
                _ = cancel.wait_for(|c| *c) => return,
                p = sem.clone().acquire_owned() => p.ok(),
            },
            None => None,
        };
        let scheduled_unix_s = start_unix + offset;
        let (backend, tx, cancel) = (backend.clone(), tx.clone(), cancel.clone());
        tokio::spawn(async move {
            let f = send_due(&*backend, job.index, job.request, cancel, scheduled_unix_s).await;
            drop(permit);
            let _ = tx.send(f);
        });
    }
}
