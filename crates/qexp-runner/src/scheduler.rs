//! Closed-loop concurrency: exactly `concurrency` requests in flight until
//! the list is done. A worker sends its next request as soon as its last
//! one finishes; the scheduled time is when the worker became free.

use crate::backend::Backend;
use crate::stop::cut_after_grace;
use crate::Cancel;
use qexp_client::{ErrorClass, GenRequest, Outcome, RequestError};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};
use tokio::sync::mpsc;

/// One request to send, with its index within the point.
#[derive(Debug, Clone)]
pub struct Job {
    /// Index within the point.
    pub index: u32,
    /// The request.
    pub request: GenRequest,
}

/// A request that finished (or was cancelled in flight).
#[derive(Debug, Clone)]
pub struct Finished {
    /// The job's index.
    pub index: u32,
    /// When it was due: a worker became free (closed loop) or its arrival time (open loop), Unix seconds.
    pub scheduled_unix_s: f64,
    /// What was measured.
    pub outcome: Outcome,
}

/// Runs `jobs` with `concurrency` in flight; calls `on_done` as each
/// finishes. Stops taking new jobs when `cancel` turns true; requests in
/// flight then get [`crate::STOP_GRACE`] to finish, after which they end as
/// `cancelled` rows (kept, not dropped).
pub async fn run_closed_loop<B: Backend>(
    backend: Arc<B>,
    jobs: Vec<Job>,
    concurrency: u32,
    cancel: Cancel,
    mut on_done: impl FnMut(&Finished),
) -> Vec<Finished> {
    let jobs = Arc::new(jobs);
    let next = Arc::new(AtomicUsize::new(0));
    let (tx, mut rx) = mpsc::unbounded_channel();
    let workers = (concurrency as usize).clamp(1, jobs.len().max(1));
    for _ in 0..workers {
        let (backend, jobs, next, tx, mut cancel) = (
            backend.clone(),
            jobs.clone(),
            next.clone(),
            tx.clone(),
            cancel.clone(),
        );
        tokio::spawn(async move {
            loop {
                if *cancel.borrow() {
                    break;
                }
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(job) = jobs.get(i) else { break };
                let scheduled_unix_s = unix_now();
                let outcome = tokio::select! {
                    o = backend.send(job.request.clone()) => o,
                    _ = cut_after_grace(&mut cancel) => cancelled(scheduled_unix_s),
                };
                if tx
                    .send(Finished::of(job, scheduled_unix_s, outcome))
                    .is_err()
                {
                    break;
                }
            }
        });
    }
    drop(tx);
    let mut done = Vec::with_capacity(jobs.len());
    while let Some(f) = rx.recv().await {
        on_done(&f);
        done.push(f);
    }
    done.sort_by_key(|f| f.index);
    done
}

impl Finished {
    pub(crate) fn of(job: &Job, scheduled_unix_s: f64, outcome: Outcome) -> Finished {
        Finished {
            index: job.index,
            scheduled_unix_s,
            outcome,
        }
    }
}

pub(crate) fn cancelled(scheduled: f64) -> Outcome {
    Outcome {
        sent_unix_s: scheduled,
        end_s: unix_now() - scheduled,
        error: Some(RequestError {
            class: ErrorClass::Cancelled,
            message: "the run was interrupted while this request was in flight".into(),
        }),
        ..Outcome::default()
    }
}

pub(crate) fn unix_now() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}
