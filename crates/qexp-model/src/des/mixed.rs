//! The mixed schedule's engine loop in the replay (docs/model.md
//! "Schedules"): one step at a time, each carrying every decoding sequence
//! and every admitted prompt; qexp-sim's `mixed.rs` runs the same loop in
//! real time.

use super::{Event, Kind, Replay, Seen, StepRecord};

/// A mixed step in progress: the sequences it decodes and the prompts it prefills.
pub(super) struct MixedStep {
    decodes: Vec<usize>,
    prefills: Vec<usize>,
}

/// The intake window of models written before it was a parameter
/// ([`crate::Params::intake_s`]), of the simulator's built-in profiles and
/// the one the fit tries first: how long an idle engine waits, after the
/// prompt that woke it, before it starts its step, so that prompts ready by
/// then share it. A closed loop's requests come in bursts (its first C, or
/// every sequence a step ended), and the simulator's engine waits the same
/// window, so "predict" and "serve the fit" meet the burst alike. The fit
/// also tries no window (docs/model.md "Schedules"): llama.cpp's server
/// starts its step with the prompts it has.
pub const INTAKE_S: f64 = 0.001;

impl Replay<'_> {
    /// Mixed schedule: a prompt is ready. An idle engine opens its intake
    /// window ([`crate::Params::intake_s`]), or with none starts its step
    /// at once with this prompt alone (prompts ready at the same instant
    /// but handled after it wait for the next step); a busy engine takes
    /// the prompt at its next step.
    pub(super) fn wake(&mut self, t: f64) {
        if self.step.is_some() || self.ending || self.waking {
            return;
        }
        if self.p.intake_s > 0.0 {
            self.waking = true;
            self.push(t + self.p.intake_s, Kind::Wake, 0);
        } else {
            self.start_step(t);
        }
    }

    /// Mixed schedule: the intake window closes and the step starts.
    pub(super) fn woken(&mut self, t: f64) {
        self.waking = false;
        if self.step.is_none() {
            self.start_step(t);
        }
    }

    /// Mixed schedule: a step takes every decoding sequence and every
    /// admitted prompt; it lasts the decode step plus their prefill compute.
    fn start_step(&mut self, t: f64) {
        if self.batch.is_empty() && self.prefill_queue.is_empty() {
            return;
        }
        let prefills: Vec<usize> = self.prefill_queue.drain(..).collect();
        let stall = prefills.len() as f64 * self.load.prefill_compute_s(self.p);
        let decodes = std::mem::take(&mut self.batch);
        let mut length = stall;
        if !decodes.is_empty() {
            length += self.p.step_s(self.decoding, self.context);
            self.steps += 1.0;
            self.batch_sum += self.decoding;
            self.context_sum += self.context;
            self.records.push(StepRecord {
                length,
                gaps: decodes.len(),
                seen: Seen {
                    batch: self.decoding,
                    context: self.context,
                    stall_s: stall,
                },
            });
        }
        for &i in &decodes {
            let req = &mut self.reqs[i];
            req.steps += 1.0;
            req.batch_sum += self.decoding;
            req.context_sum += self.context;
            req.stall_sum += stall;
        }
        self.step = Some(MixedStep { decodes, prefills });
        self.push(t + length, Kind::StepEnd, 0);
    }

    /// Mixed schedule: the step's sequences emit a chunk, its prompts their
    /// first, and the next step starts.
    pub(super) fn end_step(&mut self, t: f64) {
        let Some(step) = self.step.take() else {
            return;
        };
        // The next step starts once every sequence of this one has emitted.
        self.ending = true;
        for i in step.decodes {
            if !self.consume(t, i) {
                self.batch.push(i);
            }
        }
        for i in step.prefills {
            self.handle(Event {
                at: t,
                order: 0,
                kind: Kind::PrefillDone,
                req: i,
            });
        }
        self.ending = false;
        // A busy engine runs its next step at once.
        if !self.waking {
            self.start_step(t);
        }
    }
}
