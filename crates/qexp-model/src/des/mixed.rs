//! The mixed schedule's engine loop in the replay (docs/model.md
//! "Schedules"): one step at a time, each carrying every decoding sequence
//! and every admitted prompt; qexp-sim's `mixed.rs` runs the same loop in
//! real time.

use super::{Event, Kind, Replay};

/// A mixed step in progress: the sequences it decodes and the prompts it prefills.
pub(super) struct MixedStep {
    decodes: Vec<usize>,
    prefills: Vec<usize>,
}

impl Replay<'_> {
    /// Mixed schedule: an idle engine starts a step at once, as a server's
    /// loop woken by a request does: of prompts that arrive together, the
    /// first is prefilled alone and the rest wait for the next step.
    pub(super) fn wake(&mut self, t: f64) {
        if self.step.is_none() && !self.ending {
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
        let stall = prefills.len() as f64 * self.p.prefill_compute_s(self.load.input_tokens);
        let decodes = std::mem::take(&mut self.batch);
        let mut length = stall;
        if !decodes.is_empty() {
            length += self.p.step_s(self.decoding, self.context);
            self.steps += 1.0;
            self.batch_sum += self.decoding;
            self.context_sum += self.context;
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
        self.wake(t);
    }
}
