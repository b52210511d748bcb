//! The mixed schedule's engine loop (continuous batching with prefill in
//! the step: Orca, Yu et al., OSDI 2022; llama.cpp's server and vLLM V1
//! schedule this way): one step at a time, each carrying every decoding
//! sequence and every admitted prompt.

use super::{Due, Engine, Host, Output, Phase, Seen, SeqId, INTAKE_EXTENSIONS};

/// The loop's state between and during steps.
#[derive(Debug, Default)]
pub(super) struct Loop {
    /// Sequences decoding, waiting for the next step.
    batch: Vec<SeqId>,
    /// The step in progress.
    step: Option<Step>,
    /// A step is ending: its sequences emit before the next one starts.
    ending: bool,
    /// An idle engine's open intake window.
    window: Option<Window>,
    /// Counts windows opened and extended (a stale wake-up is ignored).
    generation: u64,
}

/// A step in progress: the sequences it decodes and the prompts it prefills.
#[derive(Debug)]
struct Step {
    decodes: Vec<SeqId>,
    prefills: Vec<SeqId>,
}

/// An intake window: when it closes, and how late a burst may push that.
#[derive(Debug, Clone, Copy)]
struct Window {
    generation: u64,
    cap: f64,
    length: f64,
}

impl Loop {
    /// `id` emitted a chunk and decodes in the next step.
    pub(super) fn join(&mut self, id: SeqId) {
        self.batch.push(id);
    }

    /// `id`'s client left: it decodes no more.
    pub(super) fn leave(&mut self, id: SeqId) {
        self.batch.retain(|&i| i != id);
        if let Some(step) = &mut self.step {
            step.decodes.retain(|&i| i != id);
        }
    }
}

impl Engine {
    /// A prompt is ready. A busy engine takes it at its next step; an idle
    /// one opens its intake window, or extends the one open (up to
    /// [`INTAKE_EXTENSIONS`] windows from the first), or with no window
    /// starts its step at once with this prompt alone (prompts ready at
    /// the same instant but handled after it wait for the next step).
    pub(super) fn wake(&mut self, t: f64, host: &mut dyn Host) {
        if self.mixed.step.is_some() || self.mixed.ending {
            return;
        }
        if self.p.intake_s <= 0.0 {
            self.start_step(t, host);
            return;
        }
        self.mixed.generation += 1;
        let generation = self.mixed.generation;
        let window = match self.mixed.window {
            Some(w) => Window { generation, ..w },
            None => {
                let length = host.stretch(self.p.intake_s);
                Window {
                    generation,
                    cap: t + length * f64::from(INTAKE_EXTENSIONS),
                    length,
                }
            }
        };
        self.mixed.window = Some(window);
        // A late driver (a loaded host) holds the window open from its
        // clock, for the prompts it has yet to hand over.
        let from = if self.late(t) { self.now } else { t };
        let due = from + window.length;
        self.set(due.min(window.cap), Due::Wake(generation));
    }

    /// The intake window of `generation` closes at `t`, unless extended
    /// since: the step starts.
    pub(super) fn woken(&mut self, t: f64, generation: u64, host: &mut dyn Host) {
        if self.mixed.window.is_none_or(|w| w.generation != generation) {
            return;
        }
        self.mixed.window = None;
        if self.mixed.step.is_none() {
            self.start_step(t, host);
        }
    }

    /// A step takes every decoding sequence and every admitted prompt; it
    /// lasts the decode step plus their prefill compute.
    fn start_step(&mut self, t: f64, host: &mut dyn Host) {
        if self.now > t {
            self.take_ready(host);
        }
        if self.mixed.batch.is_empty() && self.admitted.is_empty() {
            return;
        }
        let prefills: Vec<SeqId> = self.admitted.drain(..).collect();
        let mut stall = 0.0;
        for &id in &prefills {
            if let Some(seq) = self.seqs.get_mut(&id) {
                seq.phase = Phase::Prefilling;
            }
            stall += host.prefill_begins(id);
        }
        let decodes = std::mem::take(&mut self.mixed.batch);
        let mut length = stall;
        if !decodes.is_empty() {
            length += self.p.step_s(self.decoding, self.context);
        }
        let length = host.stretch(length);
        if !decodes.is_empty() {
            self.out.push_back(Output::Step {
                at: t,
                length,
                decodes: decodes.clone(),
                seen: Seen {
                    batch: self.decoding,
                    context: self.context,
                    stall_s: stall,
                },
            });
        }
        self.mixed.step = Some(Step { decodes, prefills });
        let end = self.ends(t, length);
        self.set(end, Due::StepEnd);
    }

    /// A step the driver starts after its instant takes the prompts whose
    /// latency ended by the driver's clock, as an engine takes what is in
    /// its queue when it schedules: a host whose timers fire late (by a
    /// millisecond's rounding, or loaded) does not split a burst that its
    /// clock has already seen whole. The replay is never late, so this
    /// never changes its steps.
    fn take_ready(&mut self, host: &mut dyn Host) {
        let mut ready = Vec::new();
        let mut other = Vec::new();
        while let Some(timer) = self.timers.peek() {
            if timer.at > self.now {
                break;
            }
            let Some(timer) = self.timers.pop() else {
                break;
            };
            if matches!(timer.due, Due::Ready(_)) {
                ready.push(timer);
            } else {
                other.push(timer);
            }
        }
        self.timers.extend(other);
        // Admitted now, they wake nothing: the step is about to start.
        let ending = std::mem::replace(&mut self.mixed.ending, true);
        for timer in ready {
            self.handle(timer, host);
        }
        self.mixed.ending = ending;
    }

    /// The step's sequences emit a chunk, its prompts their first, and the
    /// next step starts.
    pub(super) fn end_step(&mut self, t: f64, host: &mut dyn Host) {
        let Some(step) = self.mixed.step.take() else {
            return;
        };
        // The next step starts once every sequence of this one has emitted.
        self.mixed.ending = true;
        for id in step.decodes {
            if self.seqs.contains_key(&id) {
                self.emit(t, id, host);
            }
        }
        for id in step.prefills {
            if self.seqs.contains_key(&id) {
                host.prefill_ended(id);
                self.first_chunk(t, id, host);
            }
        }
        self.mixed.ending = false;
        // A busy engine runs its next step at once.
        self.start_step(t, host);
    }
}
