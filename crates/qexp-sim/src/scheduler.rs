//! The simulated engine: qexp-model's serving schedule
//! ([`qexp_model::engine`], the one the model's replay runs in virtual
//! time) driven in real time by one task per server.
//!
//! A request's stream hands the task its arrival and receives its chunks as
//! the schedule emits them; a client that disconnects drops the stream,
//! which tells the task, and the schedule frees its batch slot (a prefill
//! under way keeps its unit busy to its end, as an engine's forward pass
//! does). The task sleeps until the schedule's next deadline or the next
//! message, then lets the schedule catch up to the clock: every span runs
//! from its predecessor's end, so a late wake-up does not drift.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;

use futures_util::stream::{self, BoxStream, StreamExt};
use qexp_model::engine::{self, Output, SeqId};
use tokio::sync::{mpsc, watch};
use tokio::time::{sleep_until, Instant};

use crate::openai::Job;
use crate::prefix_cache::{CacheCounters, PrefixCache};
use crate::SimProfile;

/// How late the task may wake for a deadline and count as on time: tokio's
/// timers fire on whole milliseconds, up to one late.
const TIMER_SLACK_S: f64 = 0.002;

/// Shared state of one simulated server.
#[derive(Debug)]
pub(crate) struct Engine {
    profile: SimProfile,
    /// To the task that runs the schedule.
    commands: mpsc::UnboundedSender<Command>,
    /// Names the next request.
    next_id: AtomicU64,
    /// Prompt blocks kept from earlier prefills.
    cache: Arc<std::sync::Mutex<PrefixCache>>,
}

/// What a request's stream tells the schedule's task.
enum Command {
    /// A request arrived at `at`.
    Arrive {
        at: Instant,
        request: engine::Request,
        live: Live,
    },
    /// Its client left.
    Cancel(SeqId),
}

/// The task's side of a request in flight.
struct Live {
    /// The prompt's token ids (for the prefix cache).
    prompt: Arc<[u32]>,
    /// Where the prompt tokens served from the cache are reported.
    cached: Arc<AtomicU32>,
    /// Where the batch it is admitted to is reported.
    batch: Arc<AtomicU32>,
    /// Of the prompt, image tokens (each also costs the vision encoder's time).
    image_tokens: u32,
    /// Each chunk's token count; dropped after the last.
    chunks: mpsc::UnboundedSender<u32>,
}

impl Engine {
    /// An idle engine for `profile`, stopping when `stop` turns `true`
    /// (its task is spawned on the current tokio runtime).
    pub(crate) fn new(profile: SimProfile, stop: watch::Receiver<bool>) -> Arc<Engine> {
        Engine::tapped(profile, stop, None)
    }

    /// An engine whose schedule's every output is also sent to `tap`.
    fn tapped(
        profile: SimProfile,
        stop: watch::Receiver<bool>,
        tap: Option<mpsc::UnboundedSender<Output>>,
    ) -> Arc<Engine> {
        let cache = PrefixCache::new(profile.prefix_cache_tokens, profile.prefix_cache_block);
        let cache = Arc::new(std::sync::Mutex::new(cache));
        let (commands, inbox) = mpsc::unbounded_channel();
        let origin = Instant::now();
        let params = profile.params();
        let driver = Driver {
            schedule: engine::Engine::new(&params).with_slack(TIMER_SLACK_S),
            origin,
            inbox,
            tap,
            host: SimHost {
                profile: profile.clone(),
                params,
                cache: Arc::clone(&cache),
                live: HashMap::new(),
            },
        };
        tokio::spawn(driver.run(stop));
        Arc::new(Engine {
            profile,
            commands,
            next_id: AtomicU64::new(0),
            cache,
        })
    }

    /// The profile this engine simulates.
    pub(crate) fn profile(&self) -> &SimProfile {
        &self.profile
    }

    /// The prefix cache's running totals.
    pub(crate) fn cache_counters(&self) -> CacheCounters {
        let cache = self.cache.lock().unwrap_or_else(|e| e.into_inner());
        cache.counters()
    }

    /// Generates `job.max_tokens` tokens for `job`'s prompt, arriving now.
    ///
    /// Yields the token count of each chunk as its time comes; the prompt
    /// tokens the prefix cache served are in `job.cached_tokens` by the
    /// first, and the batch it was admitted to in `job.batch`.
    /// The stream ends early only when the server shuts down.
    pub(crate) fn generate(self: &Arc<Self>, job: &Job) -> BoxStream<'static, u32> {
        self.generate_at(job, Instant::now())
    }

    /// [`Engine::generate`] for a request that arrived at `at`.
    fn generate_at(self: &Arc<Self>, job: &Job, at: Instant) -> BoxStream<'static, u32> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let (chunks, rx) = mpsc::unbounded_channel();
        let request = engine::Request {
            id,
            prompt_tokens: job.prompt_ids.len() as f64,
            output_tokens: f64::from(job.max_tokens.max(1)),
            priority: job.priority,
        };
        let live = Live {
            prompt: Arc::clone(&job.prompt_ids),
            cached: Arc::clone(&job.cached_tokens),
            batch: Arc::clone(&job.batch),
            image_tokens: job.image_tokens,
            chunks,
        };
        // A stopped server's task is gone: the stream then ends at once.
        let _ = self.commands.send(Command::Arrive { at, request, live });
        let stream = Stream {
            id,
            rx,
            commands: self.commands.clone(),
        };
        stream::unfold(stream, |mut s| async move {
            let n = s.rx.recv().await?;
            Some((n, s))
        })
        .boxed()
    }
}

/// A request's chunks as they come; dropped, it tells the schedule that
/// its client left.
struct Stream {
    id: SeqId,
    rx: mpsc::UnboundedReceiver<u32>,
    commands: mpsc::UnboundedSender<Command>,
}

impl Drop for Stream {
    fn drop(&mut self) {
        // After its last chunk the schedule has forgotten it: a no-op then.
        let _ = self.commands.send(Command::Cancel(self.id));
    }
}

/// What the schedule asks of the simulator: the prefix cache, and spans as
/// this server runs them.
struct SimHost {
    profile: SimProfile,
    /// The profile's model terms, time scale applied.
    params: qexp_model::Params,
    cache: Arc<std::sync::Mutex<PrefixCache>>,
    live: HashMap<SeqId, Live>,
}

impl SimHost {
    /// Runs `f` on the prefix cache; a panic elsewhere cannot poison it for good.
    fn with_cache<T>(&self, f: impl FnOnce(&mut PrefixCache) -> T) -> T {
        let mut cache = self.cache.lock().unwrap_or_else(|e| e.into_inner());
        f(&mut cache)
    }
}

impl engine::Host for SimHost {
    /// The prefill's compute for the prompt tokens the prefix cache does
    /// not hold, by the model's equations (time scale applied, not yet
    /// stretched); records how many it held.
    fn prefill_begins(&mut self, id: SeqId) -> f64 {
        let Some(live) = self.live.get(&id) else {
            return 0.0;
        };
        let cached = self.with_cache(|c| c.lookup(&live.prompt));
        live.cached.store(cached, Ordering::Relaxed);
        let uncached = u32::try_from(live.prompt.len())
            .unwrap_or(u32::MAX)
            .saturating_sub(cached);
        self.params.prefill_compute_s(f64::from(uncached))
            + self.params.image_compute_s(f64::from(live.image_tokens))
    }

    fn prefill_ended(&mut self, id: SeqId) {
        if let Some(live) = self.live.get(&id) {
            let prompt = Arc::clone(&live.prompt);
            self.with_cache(|c| c.insert(&prompt));
        }
    }

    fn stretch(&mut self, secs: f64) -> f64 {
        secs * self.profile.stretch()
    }
}

/// The task that runs the schedule on the wall clock (seconds since `origin`).
struct Driver {
    schedule: engine::Engine,
    origin: Instant,
    inbox: mpsc::UnboundedReceiver<Command>,
    /// Where the schedule's outputs are copied (the test that compares
    /// this driver with the replay).
    tap: Option<mpsc::UnboundedSender<Output>>,
    host: SimHost,
}

impl Driver {
    /// Runs until the server stops or every handle to the engine is gone.
    async fn run(mut self, mut stop: watch::Receiver<bool>) {
        loop {
            let next = self.schedule.next_deadline();
            let deadline = next.map(|t| self.instant(t));
            // Woken for a deadline, the schedule runs at least to it (the
            // clock counts whole nanoseconds; the deadline may not).
            let mut due = 0.0;
            tokio::select! {
                biased;
                _ = stop.wait_for(|stopped| *stopped) => return,
                command = self.inbox.recv() => {
                    let Some(command) = command else { return };
                    self.catch_up(0.0);
                    self.apply(command);
                }
                () = sleep_until(deadline.unwrap_or_else(far_future)), if deadline.is_some() => {
                    due = next.unwrap_or(0.0);
                }
            }
            self.catch_up(due);
        }
    }

    /// The wall-clock instant of `t` on the schedule's clock.
    fn instant(&self, t: f64) -> Instant {
        self.origin + std::time::Duration::from_secs_f64(t.max(0.0))
    }

    /// Now, on the schedule's clock.
    fn clock(&self) -> f64 {
        self.origin.elapsed().as_secs_f64()
    }

    /// Runs what is due by now (and by `due`) and delivers what it produced.
    fn catch_up(&mut self, due: f64) {
        let now = self.clock().max(due);
        self.schedule.advance(now, &mut self.host);
        self.deliver();
    }

    fn apply(&mut self, command: Command) {
        match command {
            Command::Arrive { at, request, live } => {
                self.host.live.insert(request.id, live);
                let at = at.saturating_duration_since(self.origin).as_secs_f64();
                self.schedule.arrive(at, request, &mut self.host);
            }
            Command::Cancel(id) => {
                if self.host.live.remove(&id).is_some() {
                    let now = self.clock();
                    self.schedule.cancel(now, id, &mut self.host);
                }
            }
        }
        self.deliver();
    }

    /// Hands each request what the schedule decided for it.
    fn deliver(&mut self) {
        while let Some(out) = self.schedule.poll() {
            if let Some(tap) = &self.tap {
                let _ = tap.send(out.clone());
            }
            match out {
                Output::Admitted { id, batch, .. } => {
                    if let Some(live) = self.host.live.get(&id) {
                        live.batch.store(batch, Ordering::Relaxed);
                    }
                }
                Output::Step { .. } => {}
                Output::Chunk {
                    id, tokens, last, ..
                } => {
                    let Some(live) = self.host.live.get(&id) else {
                        continue;
                    };
                    // Whole tokens: the schedule counts the sim's in units.
                    let sent = live.chunks.send(tokens.round() as u32).is_ok();
                    if last {
                        self.host.live.remove(&id);
                    } else if !sent {
                        self.host.live.remove(&id);
                        let now = self.clock();
                        self.schedule.cancel(now, id, &mut self.host);
                    }
                }
            }
        }
    }
}

/// A deadline that never comes (the branch it guards is disabled).
fn far_future() -> Instant {
    Instant::now() + std::time::Duration::from_secs(86_400 * 365)
}

#[cfg(test)]
mod tests;
