//! The mixed schedule's engine loop: continuous batching with prefill in
//! the step (Orca, Yu et al., OSDI 2022; llama.cpp's server and vLLM V1
//! schedule this way), the [`Schedule::Mixed`](qexp_model::Schedule) of
//! qexp-model's replay (`des.rs`), step for step.
//!
//! One task runs steps back to back while there is work; woken from idle,
//! it waits [`INTAKE_S`](qexp_model::INTAKE_S) before its step (longer
//! while a burst is still arriving). A step admits
//! waiting requests first come first served up to `max_batch` sequences,
//! takes every decoding sequence and every admitted prompt, and lasts the
//! decode step (when any sequence decodes) plus the prompts' prefill
//! compute; at its end each decoding sequence gets a chunk and each prompt
//! its first. A request whose stream was dropped (the client left) is
//! dropped at the next step, and with it its slot.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;

use tokio::sync::{mpsc, watch};
use tokio::time::{sleep_until, Instant};

use crate::prefix_cache::PrefixCache;
use crate::SimProfile;

/// A request ready for the engine (its fixed latency spent).
pub(crate) struct Arrival {
    /// The prompt's token ids (for the prefix cache).
    pub(crate) prompt: Arc<[u32]>,
    /// Where the prompt tokens served from the cache are reported.
    pub(crate) cached: Arc<AtomicU32>,
    /// Where the batch it is admitted to is reported: sequences holding a
    /// slot, itself included.
    pub(crate) batch: Arc<AtomicU32>,
    /// Tokens to generate.
    pub(crate) remaining: u32,
    /// Of the prompt, image tokens (each also costs the vision encoder's time).
    pub(crate) image_tokens: u32,
    /// Each chunk's token count; closed after the last.
    pub(crate) chunks: mpsc::UnboundedSender<u32>,
}

/// A sequence holding a batch slot.
struct Member {
    arrival: Arrival,
    /// Prompt plus tokens generated so far.
    context: u64,
}

impl Member {
    /// Sends a chunk; false when it was the last or the client has left.
    fn emit(&mut self, tokens_per_step: u32) -> bool {
        let n = self.arrival.remaining.min(tokens_per_step);
        self.arrival.remaining -= n;
        self.context += u64::from(n);
        self.arrival.chunks.send(n).is_ok() && self.arrival.remaining > 0
    }
}

/// The engine loop's state.
struct Loop {
    profile: SimProfile,
    cache: Arc<std::sync::Mutex<PrefixCache>>,
    arrivals: mpsc::UnboundedReceiver<Arrival>,
    waiting: VecDeque<Arrival>,
    decoding: Vec<Member>,
}

/// Starts the engine loop; it runs until `stop` turns `true` (or closes).
pub(crate) fn spawn(
    profile: SimProfile,
    cache: Arc<std::sync::Mutex<PrefixCache>>,
    mut stop: watch::Receiver<bool>,
) -> mpsc::UnboundedSender<Arrival> {
    let (tx, arrivals) = mpsc::unbounded_channel();
    let mut engine = Loop {
        profile,
        cache,
        arrivals,
        waiting: VecDeque::new(),
        decoding: Vec::new(),
    };
    tokio::spawn(async move {
        tokio::select! {
            biased;
            _ = stop.wait_for(|stopped| *stopped) => {}
            () = engine.run() => {}
        }
    });
    tx
}

/// How many intake windows a burst still arriving may hold an idle
/// engine's first step back, at most.
const INTAKE_EXTENSIONS: u32 = 20;

impl Loop {
    async fn run(&mut self) {
        let mut start = Instant::now();
        loop {
            while let Ok(a) = self.arrivals.try_recv() {
                self.waiting.push_back(a);
            }
            self.decoding.retain(|m| !m.arrival.chunks.is_closed());
            self.waiting.retain(|a| !a.chunks.is_closed());
            let prefills = self.admit();
            if prefills.is_empty() && self.decoding.is_empty() {
                // Idle: wait for the next request; its step starts when it comes.
                let Some(a) = self.arrivals.recv().await else {
                    return;
                };
                // Woken by one request: the step starts after the intake
                // window, so that a burst (a closed loop's C requests, sent
                // together) shares it, as in the replay, where a burst
                // arrives at one instant. A loaded host spreads a burst's
                // arrivals over more than a window: each arrival within the
                // window extends it (up to INTAKE_EXTENSIONS windows), so
                // the burst still shares the step. The step is timed from
                // the window's end as planned, not from when the timer fired.
                self.waiting.push_back(a);
                if self.profile.intake_s <= 0.0 {
                    // No window: the step starts with what has arrived.
                    start = Instant::now();
                    continue;
                }
                let window = self.profile.scaled(self.profile.intake_s);
                let cap = Instant::now() + window * INTAKE_EXTENSIONS;
                start = Instant::now() + window;
                loop {
                    tokio::select! {
                        biased;
                        got = self.arrivals.recv() => match got {
                            Some(a) => {
                                self.waiting.push_back(a);
                                start = (Instant::now() + window).min(cap);
                            }
                            None => break,
                        },
                        () = sleep_until(start) => break,
                    }
                }
                continue;
            }
            let p = &self.profile;
            let mut length: f64 = prefills
                .iter()
                .map(|(a, n)| p.prefill_compute_s(*n) + p.image_compute_s(a.image_tokens))
                .sum();
            if !self.decoding.is_empty() {
                let context = self.decoding.iter().map(|m| m.context).sum();
                length += p.step_s(self.decoding.len(), context);
            }
            let step = p.scaled(length);
            let mut due = start + step;
            let now = Instant::now();
            // Fell behind by more than a step (overloaded host): resume from
            // now instead of bursting out the missed steps back to back.
            if now.saturating_duration_since(due) > step {
                due = now;
            }
            sleep_until(due).await;
            start = due;
            self.end_step(prefills);
        }
    }

    /// Admits waiting requests, first come first served, while slots are
    /// free; gives each with the prompt tokens it must prefill.
    fn admit(&mut self) -> Vec<(Arrival, u32)> {
        let mut out = Vec::new();
        while self.decoding.len() + out.len() < self.profile.max_batch {
            let Some(a) = self.waiting.pop_front() else {
                break;
            };
            let cached = self.with_cache(|c| c.lookup(&a.prompt));
            a.cached.store(cached, Ordering::Relaxed);
            let held = self.decoding.len() + out.len() + 1;
            a.batch
                .store(u32::try_from(held).unwrap_or(u32::MAX), Ordering::Relaxed);
            let uncached = u32::try_from(a.prompt.len())
                .unwrap_or(u32::MAX)
                .saturating_sub(cached);
            out.push((a, uncached));
        }
        out
    }

    /// Every decoding sequence emits a chunk, every prompt its first.
    fn end_step(&mut self, prefills: Vec<(Arrival, u32)>) {
        let s = self.profile.tokens_per_step;
        self.decoding.retain_mut(|m| m.emit(s));
        for (arrival, _) in prefills {
            self.with_cache(|c| c.insert(&arrival.prompt));
            let mut m = Member {
                context: arrival.prompt.len() as u64,
                arrival,
            };
            if m.emit(s) {
                self.decoding.push(m);
            }
        }
    }

    /// Runs `f` on the prefix cache; a panic elsewhere cannot poison it for good.
    fn with_cache<T>(&self, f: impl FnOnce(&mut PrefixCache) -> T) -> T {
        let mut cache = self.cache.lock().unwrap_or_else(|e| e.into_inner());
        f(&mut cache)
    }
}
