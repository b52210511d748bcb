//! The serving schedule, written once: a state machine over a clock, with
//! no timers and no I/O of its own (the shape quinn-proto gives a protocol).
//! qexp-sim drives it in real time, sequences streaming as their chunks
//! come; the replay ([`crate::simulate`]) drives it in virtual time, jumping
//! from one deadline to the next. Both see the same steps because there is
//! one schedule.
//!
//! A driver hands it requests ([`Engine::arrive`]) and clients that left
//! ([`Engine::cancel`]), asks when it next has something to do
//! ([`Engine::next_deadline`]), lets it catch up to the clock
//! ([`Engine::advance`]) and takes what happened ([`Engine::poll`]). What a
//! prompt costs and how long a span lasts on this host are the driver's
//! ([`Host`]): the simulator consults its prefix cache and stretches spans
//! by its jitter; the replay charges every prompt alike.
//!
//! The semantics (docs/model.md "Schedules"): `a` of latency
//! ([`Params::prefill_fixed_s`]), then a wait for one of `N` batch slots
//! (lower `priority` first, first come first served among equals), then
//! - [`Schedule::Separate`]: a FIFO wait for one of the prefill units
//!   (`prefill_units`: one, several, or as many as there are prompts), then
//!   prefill compute; the first chunk leaves when prefill ends, then each
//!   sequence steps on its own clock, every step's length set by the
//!   sequences decoding and their context at the moment it starts;
//! - [`Schedule::Mixed`]: one engine loop runs steps back to back while
//!   there is work; an idle engine starts its step an intake window
//!   ([`Params::intake_s`]) after the prompt that woke it, a prompt arriving
//!   within the window extending it (up to [`INTAKE_EXTENSIONS`] windows),
//!   so that a burst shares the step; a step carries every decoding
//!   sequence and every prompt admitted before it starts, and lasts the
//!   decode step (when any sequence decodes) plus the prefill compute of its
//!   prompts; at its end each decoding sequence emits a chunk and each
//!   prompt its first.
//!
//! A step or a prefill runs from the instant its predecessor ended, so that
//! a late driver does not drift; one whose end the driver's clock has passed
//! by more than its own length ends at the clock instead (an overloaded
//! host), so that what was missed is not run back to back.

use crate::params::{Params, Schedule};
use std::collections::{BTreeMap, BinaryHeap, HashMap, VecDeque};

mod mixed;
mod surface;
mod timer;

pub use surface::{Host, Output, Request, Seen};
use timer::{Due, Timer};

/// A request's name, chosen by the driver (unique among those in flight).
pub type SeqId = u64;

/// How many intake windows a burst still arriving may hold an idle
/// engine's first step back, at most.
pub const INTAKE_EXTENSIONS: u32 = 20;

/// Where a request is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// Spending its latency.
    Latency,
    /// Waiting for a batch slot.
    Queued,
    /// Holding a slot, waiting for a prefill unit (or the next mixed step).
    Admitted,
    /// Prefilling (separate schedule) or in the mixed step as a prompt.
    Prefilling,
    /// Decoding.
    Decoding,
}

#[derive(Debug, Clone, Copy)]
struct Seq {
    remaining: f64,
    context: f64,
    priority: i64,
    /// Its place in the queue among requests of its priority.
    order: u64,
    phase: Phase,
}

/// The schedule's state.
#[derive(Debug)]
pub struct Engine {
    p: Params,
    /// The driver's clock as last told.
    now: f64,
    /// How late the driver may run a deadline and still count as on time
    /// (its timers' granularity).
    slack: f64,
    timers: BinaryHeap<Timer>,
    order: u64,
    seqs: HashMap<SeqId, Seq>,
    /// Waiting for a slot, by (priority, arrival).
    queue: BTreeMap<(i64, u64), SeqId>,
    free_slots: u64,
    /// Holding a slot, waiting for a prefill unit or a mixed step.
    admitted: VecDeque<SeqId>,
    /// Separate schedule: prompts prefilling now (at most `prefill_units`).
    prefilling: u32,
    /// Sequences decoding and their context.
    decoding: f64,
    context: f64,
    /// Mixed schedule: the decoding sequences, the step in progress, and
    /// an idle engine's intake window.
    mixed: mixed::Loop,
    out: VecDeque<Output>,
}

impl Engine {
    /// An idle engine for the deployment `p`, its clock at 0.
    pub fn new(p: &Params) -> Engine {
        Engine {
            p: *p,
            now: 0.0,
            slack: 0.0,
            timers: BinaryHeap::new(),
            order: 0,
            seqs: HashMap::new(),
            queue: BTreeMap::new(),
            free_slots: p.max_batch.map_or(u64::MAX, u64::from),
            admitted: VecDeque::new(),
            prefilling: 0,
            decoding: 0.0,
            context: 0.0,
            mixed: mixed::Loop::default(),
            out: VecDeque::new(),
        }
    }

    /// The engine, its driver's lateness up to `slack` seconds counting as
    /// on time for the intake window: a driver whose timers fire up to a
    /// millisecond late (tokio's) holds it from the prompt's instant, as
    /// the replay does. Beyond it, a late driver is an overloaded host,
    /// which holds the window open from its own clock. (Whatever the
    /// slack, a mixed step the driver starts late takes the prompts that
    /// became ready meanwhile: see `take_ready`.)
    pub fn with_slack(mut self, slack: f64) -> Engine {
        self.slack = slack.max(0.0);
        self
    }

    /// When it next has something to do, on its clock (None: idle).
    pub fn next_deadline(&self) -> Option<f64> {
        self.timers.peek().map(|t| t.at)
    }

    /// A request arrives at `at` (the driver's clock may have passed it);
    /// its latency starts.
    pub fn arrive(&mut self, at: f64, req: Request, host: &mut dyn Host) {
        self.now = self.now.max(at);
        self.order += 1;
        self.seqs.insert(
            req.id,
            Seq {
                remaining: req.output_tokens.max(1.0),
                context: req.prompt_tokens,
                priority: req.priority,
                order: self.order,
                phase: Phase::Latency,
            },
        );
        let latency = host.stretch(self.p.prefill_fixed_s);
        self.set(at + latency, Due::Ready(req.id));
    }

    /// The client of `id` left at `now`: its slot frees at once, and with it
    /// its place in the batch; a prefill under way keeps its unit busy to
    /// its end, as an engine's forward pass does. Unknown ids are ignored.
    pub fn cancel(&mut self, now: f64, id: SeqId, host: &mut dyn Host) {
        self.now = self.now.max(now);
        let Some(seq) = self.seqs.remove(&id) else {
            return;
        };
        match seq.phase {
            Phase::Latency => return,
            Phase::Queued => {
                self.queue.remove(&(seq.priority, seq.order));
                return;
            }
            Phase::Admitted => self.admitted.retain(|&i| i != id),
            Phase::Prefilling => {}
            Phase::Decoding => {
                self.decoding -= 1.0;
                self.context -= seq.context;
                self.mixed.leave(id);
            }
        }
        self.free_slots += 1;
        let now = self.now;
        self.admit(now, host);
    }

    /// Runs everything due by `now` on the driver's clock, each at its own
    /// instant.
    pub fn advance(&mut self, now: f64, host: &mut dyn Host) {
        self.now = self.now.max(now);
        while let Some(t) = self.timers.peek() {
            if t.at > self.now {
                break;
            }
            let Some(t) = self.timers.pop() else { break };
            self.handle(t, host);
        }
    }

    /// What happened since the last call, oldest first.
    pub fn poll(&mut self) -> Option<Output> {
        self.out.pop_front()
    }

    fn set(&mut self, at: f64, due: Due) {
        self.order += 1;
        self.timers.push(Timer {
            at,
            order: self.order,
            due,
        });
    }

    /// Whether the driver runs what was due at `t` late, beyond its slack.
    fn late(&self, t: f64) -> bool {
        self.now - t > self.slack
    }

    /// When a span of `length` that starts at `at` ends: at `at + length`,
    /// or at the driver's clock if that is more than `length` past it (an
    /// overloaded host: what was missed is not run back to back).
    fn ends(&self, at: f64, length: f64) -> f64 {
        let end = at + length;
        if self.now - end > length {
            self.now
        } else {
            end
        }
    }

    fn handle(&mut self, t: Timer, host: &mut dyn Host) {
        match t.due {
            Due::Ready(id) => {
                let Some(seq) = self.seqs.get_mut(&id) else {
                    return;
                };
                seq.phase = Phase::Queued;
                self.queue.insert((seq.priority, seq.order), id);
                self.admit(t.at, host);
            }
            Due::PrefillDone(id) => {
                self.prefilling = self.prefilling.saturating_sub(1);
                if self.seqs.contains_key(&id) {
                    host.prefill_ended(id);
                    self.first_chunk(t.at, id, host);
                }
                self.start_prefills(t.at, host);
            }
            Due::Chunk(id) => {
                if self.seqs.contains_key(&id) {
                    self.emit(t.at, id, host);
                }
            }
            Due::StepEnd => self.end_step(t.at, host),
            Due::Wake(generation) => self.woken(t.at, generation, host),
        }
    }

    /// Gives free slots to the queue, lowest priority value first, and
    /// starts what the schedule starts with them.
    fn admit(&mut self, t: f64, host: &mut dyn Host) {
        while self.free_slots > 0 {
            let Some((_, id)) = self.queue.pop_first() else {
                break;
            };
            self.free_slots -= 1;
            if let Some(seq) = self.seqs.get_mut(&id) {
                seq.phase = Phase::Admitted;
            }
            self.admitted.push_back(id);
            let held = self.p.max_batch.map_or(u64::MAX, u64::from) - self.free_slots;
            self.out.push_back(Output::Admitted {
                id,
                at: t,
                batch: u32::try_from(held).unwrap_or(u32::MAX),
            });
        }
        self.start_prefills(t, host);
    }

    /// Separate schedule: admitted prompts take free prefill units (FIFO).
    /// Mixed schedule: the engine loop is woken.
    fn start_prefills(&mut self, t: f64, host: &mut dyn Host) {
        if self.p.schedule == Schedule::Mixed {
            self.wake(t, host);
            return;
        }
        while self.p.prefill_units.is_none_or(|k| self.prefilling < k) {
            let Some(id) = self.admitted.pop_front() else {
                break;
            };
            if let Some(seq) = self.seqs.get_mut(&id) {
                seq.phase = Phase::Prefilling;
            }
            self.prefilling += 1;
            let compute = host.prefill_begins(id);
            let compute = host.stretch(compute);
            let done = self.ends(t, compute);
            self.set(done, Due::PrefillDone(id));
        }
    }

    /// `id`'s prefill ended at `t`: it decodes, and its first chunk leaves.
    fn first_chunk(&mut self, t: f64, id: SeqId, host: &mut dyn Host) {
        let Some(seq) = self.seqs.get_mut(&id) else {
            return;
        };
        seq.phase = Phase::Decoding;
        self.decoding += 1.0;
        self.context += seq.context;
        self.emit(t, id, host);
    }

    /// `id` emits a chunk at `t`: its last (the slot frees), or on the
    /// separate schedule its next step starts on its own clock (the mixed
    /// loop steps it from here).
    fn emit(&mut self, t: f64, id: SeqId, host: &mut dyn Host) {
        if self.consume(t, id, host) {
            return;
        }
        if self.p.schedule == Schedule::Mixed {
            self.mixed.join(id);
            return;
        }
        let length = host.stretch(self.p.step_s(self.decoding, self.context));
        let seen = Seen {
            batch: self.decoding,
            context: self.context,
            stall_s: 0.0,
        };
        self.out.push_back(Output::Step {
            at: t,
            length,
            decodes: vec![id],
            seen,
        });
        let done = self.ends(t, length);
        self.set(done, Due::Chunk(id));
    }

    /// `id` emits a chunk at `t`; true when it was its last (the sequence
    /// leaves, its slot frees and the queue is admitted).
    fn consume(&mut self, t: f64, id: SeqId, host: &mut dyn Host) -> bool {
        let Some(seq) = self.seqs.get_mut(&id) else {
            return true;
        };
        let n = seq.remaining.min(self.p.tokens_per_step.max(1.0));
        seq.remaining -= n;
        seq.context += n;
        self.context += n;
        let last = seq.remaining <= 1e-9;
        self.out.push_back(Output::Chunk {
            id,
            at: t,
            tokens: n,
            last,
        });
        if !last {
            return false;
        }
        let context = seq.context;
        self.seqs.remove(&id);
        self.decoding -= 1.0;
        self.context -= context;
        self.free_slots += 1;
        self.admit(t, host);
        true
    }
}
