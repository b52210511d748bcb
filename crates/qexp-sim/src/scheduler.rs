//! The simulated engine: admission, prefill on a limited number of units
//! (one by default: serialized), continuous-batching decode.
//! (The mixed schedule's engine loop is in `mixed.rs`; a sequence here
//! only waits out its fixed latency and streams what that loop sends.)
//!
//! Each request is a [`Sequence`] driven by the body stream that carries its
//! response, so a client that disconnects drops the stream, and with it the
//! batch slot, the prefill unit (a prefill under way still keeps the unit
//! busy until its end, as an engine's forward pass does) and the decoding
//! count. Timers sleep on absolute deadlines (no drift, no spinning), so
//! thousands of sequences cost only their timers.

use std::future::Future;
use std::sync::atomic::{AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;

use futures_util::stream::{self, BoxStream, StreamExt};
use tokio::sync::{mpsc, watch, Semaphore};
use tokio::time::{sleep_until, Instant};

use crate::mixed::{self, Arrival};
use crate::openai::Job;
use crate::prefix_cache::{CacheCounters, PrefixCache};
use crate::slots::{Slot, Slots};
use crate::SimProfile;

/// Shared state of one simulated server.
#[derive(Debug)]
pub(crate) struct Engine {
    profile: SimProfile,
    /// Batch slots: a waiting request of a lower `priority` value is
    /// admitted first, first come first served among equals.
    slots: Arc<Slots>,
    /// One permit per prefill unit (`prefill_units`; None: no limit),
    /// held for the duration of a prefill: prefills are compute bound and
    /// wait for a free unit, first come first served.
    prefill: Option<Arc<Semaphore>>,
    /// When each unit's last prefill is due to end, so that a prefill
    /// queued behind one starts from that deadline rather than from when
    /// its task woke: queued prefills do not drift by a wake-up each.
    unit_ends: std::sync::Mutex<Vec<Instant>>,
    /// Sequences past prefill and not yet finished; sets the decode step time.
    decoding: Arc<AtomicUsize>,
    /// Context (prompt + generated tokens) of the decoding sequences; sets the step time too.
    context: Arc<AtomicU64>,
    /// Becomes `true` (or closes) when the server shuts down; running sequences stop.
    stop: watch::Receiver<bool>,
    /// Prompt blocks kept from earlier prefills; looked up under the prefill lock.
    cache: Arc<std::sync::Mutex<PrefixCache>>,
    /// The mixed schedule's engine loop (None: the separate schedule).
    mixed: Option<mpsc::UnboundedSender<Arrival>>,
}

impl Engine {
    /// An idle engine for `profile`, stopping when `stop` turns `true`
    /// (the mixed schedule's loop is spawned on the current tokio runtime).
    pub(crate) fn new(profile: SimProfile, stop: watch::Receiver<bool>) -> Arc<Engine> {
        let cache = PrefixCache::new(profile.prefix_cache_tokens, profile.prefix_cache_block);
        let cache = Arc::new(std::sync::Mutex::new(cache));
        let mixed = (profile.schedule == qexp_model::Schedule::Mixed)
            .then(|| mixed::spawn(profile.clone(), Arc::clone(&cache), stop.clone()));
        let units = profile.prefill_units;
        Arc::new(Engine {
            slots: Slots::new(profile.max_batch),
            profile,
            prefill: units.map(|k| Arc::new(Semaphore::new(k))),
            unit_ends: std::sync::Mutex::new(vec![Instant::now(); units.unwrap_or(0)]),
            decoding: Arc::new(AtomicUsize::new(0)),
            context: Arc::new(AtomicU64::new(0)),
            stop,
            cache,
            mixed,
        })
    }

    /// The profile this engine simulates.
    pub(crate) fn profile(&self) -> &SimProfile {
        &self.profile
    }

    /// The prefix cache's running totals.
    pub(crate) fn cache_counters(&self) -> CacheCounters {
        self.with_cache(|c| c.counters())
    }

    /// When a prefill of `compute`, ready at `ready`, ends on the unit that
    /// frees first: one that queued behind another starts when that one was
    /// due to end; one that found its unit free (or that has no limit), now.
    /// The unit's end is set before the wait: a prefill whose client leaves
    /// still holds the unit to its end, as an engine's forward pass does.
    fn claim_unit(&self, ready: Instant, compute: std::time::Duration) -> Instant {
        let mut ends = self.unit_ends.lock().unwrap_or_else(|e| e.into_inner());
        let first = ends
            .iter()
            .enumerate()
            .min_by_key(|(_, end)| **end)
            .map(|(i, _)| i);
        let start = match first {
            Some(i) if ends[i] > ready => on_time_or_now(ends[i], compute),
            _ => Instant::now(),
        };
        let done = start + compute;
        if let Some(i) = first {
            ends[i] = done;
        }
        done
    }

    /// Runs `f` on the prefix cache; a panic elsewhere cannot poison it for good.
    fn with_cache<T>(&self, f: impl FnOnce(&mut PrefixCache) -> T) -> T {
        let mut cache = self.cache.lock().unwrap_or_else(|e| e.into_inner());
        f(&mut cache)
    }

    /// Generates `job.max_tokens` tokens for `job`'s prompt, arriving now.
    ///
    /// Yields the token count of each chunk as its time comes; the prompt
    /// tokens the prefix cache served are in `job.cached_tokens` by the
    /// first, and the batch it was admitted to in `job.batch`.
    /// The stream ends early only when the server shuts down.
    pub(crate) fn generate(self: &Arc<Self>, job: &Job) -> BoxStream<'static, u32> {
        let seq = Sequence {
            engine: Arc::clone(self),
            stop: self.stop.clone(),
            prompt: Arc::clone(&job.prompt_ids),
            cached: Arc::clone(&job.cached_tokens),
            batch: Arc::clone(&job.batch),
            priority: job.priority,
            remaining: job.max_tokens,
            image_tokens: job.image_tokens,
            phase: Phase::Arrived { at: Instant::now() },
        };
        stream::unfold(seq, |mut seq| async move {
            let n = seq.next_chunk().await?;
            Some((n, seq))
        })
        .boxed()
    }
}

/// One request's progress through the engine.
struct Sequence {
    engine: Arc<Engine>,
    stop: watch::Receiver<bool>,
    prompt: Arc<[u32]>,
    cached: Arc<AtomicU32>,
    batch: Arc<AtomicU32>,
    /// vLLM's `priority`: while the batch is full, lower values are admitted first.
    priority: i64,
    remaining: u32,
    /// Of the prompt, image tokens: each costs the vision encoder's time too.
    image_tokens: u32,
    phase: Phase,
}

enum Phase {
    Arrived {
        at: Instant,
    },
    /// Mixed schedule: in the engine loop's hands; chunks come from it.
    Mixed(mpsc::UnboundedReceiver<u32>),
    Decoding {
        _slot: Slot,
        active: Decoding,
        last: Instant,
    },
    Finished,
}

/// Counts a sequence as decoding, and its context as the batch's, for as long as it lives.
struct Decoding {
    count: Arc<AtomicUsize>,
    context: Arc<AtomicU64>,
    mine: u64,
}

impl Decoding {
    fn enter(engine: &Engine, prompt: u64) -> Decoding {
        engine.decoding.fetch_add(1, Ordering::SeqCst);
        engine.context.fetch_add(prompt, Ordering::SeqCst);
        Decoding {
            count: Arc::clone(&engine.decoding),
            context: Arc::clone(&engine.context),
            mine: prompt,
        }
    }

    /// The sequence's context grew by `tokens` generated.
    fn grow(&mut self, tokens: u32) {
        self.mine += u64::from(tokens);
        self.context.fetch_add(u64::from(tokens), Ordering::SeqCst);
    }
}

impl Drop for Decoding {
    fn drop(&mut self) {
        self.count.fetch_sub(1, Ordering::SeqCst);
        self.context.fetch_sub(self.mine, Ordering::SeqCst);
    }
}

impl Sequence {
    /// Waits until the next chunk is due and returns its token count.
    async fn next_chunk(&mut self) -> Option<u32> {
        if self.remaining == 0 {
            self.phase = Phase::Finished;
            return None;
        }
        match std::mem::replace(&mut self.phase, Phase::Finished) {
            Phase::Finished => return None,
            Phase::Arrived { at } if self.engine.mixed.is_some() => {
                return self.join_mixed(at).await;
            }
            Phase::Mixed(rx) => {
                self.phase = Phase::Mixed(rx);
                return self.mixed_chunk().await;
            }
            Phase::Arrived { at } => self.prefill(at).await?,
            Phase::Decoding {
                _slot,
                active,
                last,
            } => self.decode_step(_slot, active, last).await?,
        }
        Some(self.take_chunk())
    }

    /// Mixed schedule: waits out the fixed latency from arrival `at`,
    /// hands the request to the engine loop and returns its first chunk.
    async fn join_mixed(&mut self, at: Instant) -> Option<u32> {
        let engine = Arc::clone(&self.engine);
        let p = engine.profile();
        until_stopped(
            &mut self.stop,
            sleep_until(at + p.scaled(p.prefill_fixed_s)),
        )
        .await?;
        let (tx, rx) = mpsc::unbounded_channel();
        let arrival = Arrival {
            prompt: Arc::clone(&self.prompt),
            cached: Arc::clone(&self.cached),
            batch: Arc::clone(&self.batch),
            remaining: self.remaining,
            image_tokens: self.image_tokens,
            chunks: tx,
        };
        engine.mixed.as_ref()?.send(arrival).ok()?;
        self.phase = Phase::Mixed(rx);
        self.mixed_chunk().await
    }

    /// Separate schedule: waits out the fixed latency from arrival `at`,
    /// takes a batch slot and a prefill unit, prefills what the prefix
    /// cache does not hold, and enters decoding with its first chunk due
    /// at the prefill's end.
    async fn prefill(&mut self, at: Instant) -> Option<()> {
        let engine = Arc::clone(&self.engine);
        let p = engine.profile();
        let ready = at + p.scaled(p.prefill_fixed_s);
        until_stopped(&mut self.stop, sleep_until(ready)).await?;
        let (slot, ready) = self.admit(ready).await?;
        let unit = match &engine.prefill {
            Some(units) => Some(
                until_stopped(&mut self.stop, Arc::clone(units).acquire_owned())
                    .await?
                    .ok()?,
            ),
            None => None,
        };
        let done = engine.claim_unit(ready, self.prefill_compute());
        until_stopped(&mut self.stop, sleep_until(done)).await?;
        engine.with_cache(|c| c.insert(&self.prompt));
        drop(unit);
        self.phase = Phase::Decoding {
            _slot: slot,
            active: Decoding::enter(&engine, self.prompt.len() as u64),
            last: done,
        };
        Some(())
    }

    /// Takes a batch slot and records the batch it joins. Gives the slot
    /// and when the sequence is ready for a prefill unit: `ready` if a
    /// slot was free, else when the slot came (its holder's end is not
    /// known).
    async fn admit(&mut self, ready: Instant) -> Option<(Slot, Instant)> {
        let slots = Arc::clone(&self.engine.slots);
        let (slot, ready) = match slots.try_acquire() {
            Some(slot) => (slot, ready),
            None => {
                let slot = until_stopped(&mut self.stop, slots.acquire(self.priority)).await??;
                (slot, Instant::now())
            }
        };
        // Slots held now, this one's included: the batch it joins.
        let held = slots.held();
        self.batch
            .store(u32::try_from(held).unwrap_or(u32::MAX), Ordering::Relaxed);
        Some((slot, ready))
    }

    /// The prefill's compute time for the prompt tokens the prefix cache
    /// does not hold; records how many it held.
    fn prefill_compute(&self) -> std::time::Duration {
        let cached = self.engine.with_cache(|c| c.lookup(&self.prompt));
        self.cached.store(cached, Ordering::Relaxed);
        let uncached = u32::try_from(self.prompt.len())
            .unwrap_or(u32::MAX)
            .saturating_sub(cached);
        let p = self.engine.profile();
        p.scaled(p.prefill_compute_s(uncached) + p.image_compute_s(self.image_tokens))
    }

    /// Waits out one decode step after the one due at `last`, as long as
    /// the batch decoding now and its context make it; the sequence keeps
    /// its `slot` and its place in the batch (`active`).
    async fn decode_step(&mut self, slot: Slot, active: Decoding, last: Instant) -> Option<()> {
        let engine = &self.engine;
        let p = engine.profile();
        let step = p.scaled(p.step_s(
            engine.decoding.load(Ordering::SeqCst),
            engine.context.load(Ordering::SeqCst),
        ));
        let due = on_time_or_now(last + step, step);
        self.phase = Phase::Decoding {
            _slot: slot,
            active,
            last: due,
        };
        until_stopped(&mut self.stop, sleep_until(due)).await
    }

    /// Takes the chunk now due off what remains: a step's tokens or fewer,
    /// which grow the sequence's context; the last one frees the slot.
    fn take_chunk(&mut self) -> u32 {
        let n = self.remaining.min(self.engine.profile().tokens_per_step);
        self.remaining -= n;
        if let Phase::Decoding { active, .. } = &mut self.phase {
            active.grow(n);
        }
        if self.remaining == 0 {
            // Free the slot as soon as the last chunk is out.
            self.phase = Phase::Finished;
        }
        n
    }
}

impl Sequence {
    /// Mixed schedule: the next chunk the engine loop sends (None once it
    /// has sent the last, or the server stops).
    async fn mixed_chunk(&mut self) -> Option<u32> {
        let Phase::Mixed(rx) = &mut self.phase else {
            return None;
        };
        let n = until_stopped(&mut self.stop, rx.recv()).await??;
        self.remaining = self.remaining.saturating_sub(n);
        if self.remaining == 0 {
            self.phase = Phase::Finished;
        }
        Some(n)
    }
}

/// When a prefill or a decode step of `length` due at `at` starts: at `at`,
/// or now if that is more than one `length` ago (a stalled host), so that
/// what was missed is not run back to back.
fn on_time_or_now(at: Instant, length: std::time::Duration) -> Instant {
    let now = Instant::now();
    if now.saturating_duration_since(at) > length {
        now
    } else {
        at
    }
}

/// Runs `fut` unless the server stops first (`None` then).
async fn until_stopped<F: Future>(stop: &mut watch::Receiver<bool>, fut: F) -> Option<F::Output> {
    tokio::select! {
        biased;
        _ = stop.wait_for(|stopped| *stopped) => None,
        out = fut => Some(out),
    }
}
