//! Closed-loop concurrency: exactly `concurrency` requests in flight until
//! the list is done. A worker sends its next request as soon as its last
//! one finishes; the scheduled time is when the worker became free.

use crate::backend::Backend;
use crate::stop::cut_after_grace;
use crate::Cancel;
use qexp_client::{ErrorClass, GenRequest, Outcome, RequestError};
use std::future::Future;
use std::sync::{Arc, Mutex};

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
/// flight then end as `cancelled` rows (kept, not dropped).
pub async fn run_closed_loop<B: Backend>(
    backend: Arc<B>,
    jobs: Vec<Job>,
    concurrency: u32,
    cancel: Cancel,
    on_done: impl FnMut(&Finished),
) -> Vec<Finished> {
    let work = move |job: Job, done: Done, cancel: Cancel| {
        let backend = backend.clone();
        async move {
            let f = send(&*backend, job.index, job.request, cancel).await;
            done.send(f).is_ok()
        }
    };
    run_workers(jobs, concurrency, cancel, work, on_done).await
}

/// Where a worker hands each finished request.
pub(crate) type Done = mpsc::UnboundedSender<Finished>;

/// `concurrency` workers take `items` in order until none is left or
/// `cancel` turns true; `work` handles one item, hands its finished requests
/// to `done` and says whether to go on. Returns every finished request,
/// by index, after calling `on_done` on each as it arrives.
pub(crate) async fn run_workers<T, W, Fut>(
    items: Vec<T>,
    concurrency: u32,
    cancel: Cancel,
    work: W,
    mut on_done: impl FnMut(&Finished),
) -> Vec<Finished>
where
    T: Send + 'static,
    W: Fn(T, Done, Cancel) -> Fut + Clone + Send + 'static,
    Fut: Future<Output = bool> + Send,
{
    let workers = (concurrency as usize).clamp(1, items.len().max(1));
    let items = Arc::new(Mutex::new(items.into_iter()));
    let (tx, mut rx) = mpsc::unbounded_channel();
    for _ in 0..workers {
        let (items, tx, cancel, work) = (items.clone(), tx.clone(), cancel.clone(), work.clone());
        tokio::spawn(async move {
            loop {
                if *cancel.borrow() {
                    break;
                }
                // A poisoned lock means another worker panicked: stop taking work.
                let next = items.lock().ok().and_then(|mut it| it.next());
                let Some(item) = next else { break };
                if !work(item, tx.clone(), cancel.clone()).await {
                    break;
                }
            }
        });
    }
    drop(tx);
    let mut done = Vec::new();
    while let Some(f) = rx.recv().await {
        on_done(&f);
        done.push(f);
    }
    done.sort_by_key(|f| f.index);
    done
}

/// Sends one request now; if `cancel` turns true while it is in flight, it
/// gets [`crate::STOP_GRACE`] to finish before it is cut.
pub(crate) async fn send<B: Backend>(
    backend: &B,
    index: u32,
    request: GenRequest,
    cancel: Cancel,
) -> Finished {
    send_due(backend, index, request, cancel, unix_now()).await
}

/// [`send`] for a request that was due at `scheduled_unix_s` (an open-loop
/// arrival time), which is also where a cut request's times count from.
pub(crate) async fn send_due<B: Backend>(
    backend: &B,
    index: u32,
    request: GenRequest,
    mut cancel: Cancel,
    scheduled_unix_s: f64,
) -> Finished {
    let outcome = tokio::select! {
        o = backend.send(request) => o,
        _ = cut_after_grace(&mut cancel) => cancelled(scheduled_unix_s),
    };
    Finished {
        index,
        scheduled_unix_s,
        outcome,
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

pub(crate) use qexp_types::unix_now;
