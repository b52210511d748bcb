//! What a driver and the schedule exchange: the requests it hands over,
//! what the schedule asks of it, and what the schedule reports.

use super::SeqId;

/// A request handed to the engine.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Request {
    /// Its name in what the engine reports.
    pub id: SeqId,
    /// Prompt tokens (its context when it starts decoding).
    pub prompt_tokens: f64,
    /// Tokens to generate (at least one chunk is sent).
    pub output_tokens: f64,
    /// vLLM's `priority`: while the batch is full, lower values are admitted first.
    pub priority: i64,
}

/// What the engine asks of the one driving it.
pub trait Host {
    /// The prefill of `id` begins: its compute, seconds of the engine's clock.
    fn prefill_begins(&mut self, id: SeqId) -> f64;
    /// The prefill of `id` ended (it was not cancelled).
    fn prefill_ended(&mut self, _id: SeqId) {}
    /// A span of `secs` as this host runs it (jitter, drift); unchanged by default.
    fn stretch(&mut self, secs: f64) -> f64 {
        secs
    }
}

/// What decode steps saw: one step's view as it started, or (from the
/// replay's [`crate::Outcome`]) a request's steps on average.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Seen {
    /// Sequences decoding.
    pub batch: f64,
    /// Tokens of context in the batch.
    pub context: f64,
    /// Prefill compute carried by the step (mixed schedule), seconds.
    pub stall_s: f64,
}

/// What happened, in the order it happened.
#[derive(Debug, Clone, PartialEq)]
pub enum Output {
    /// `id` took a batch slot at `at`; `batch` slots are held now, its own included.
    Admitted {
        /// The request.
        id: SeqId,
        /// When.
        at: f64,
        /// Slots held.
        batch: u32,
    },
    /// A decode step started at `at`, lasting `length` seconds, for the
    /// sequences `decodes` (one on the separate schedule, where each
    /// sequence steps alone).
    Step {
        /// When it started.
        at: f64,
        /// How long it lasts.
        length: f64,
        /// The sequences that emit a chunk at its end.
        decodes: Vec<SeqId>,
        /// What it saw as it started.
        seen: Seen,
    },
    /// `id` emits a chunk of `tokens` at `at`; `last` when it was its last
    /// (its slot is free then).
    Chunk {
        /// The request.
        id: SeqId,
        /// When.
        at: f64,
        /// Tokens in the chunk.
        tokens: f64,
        /// Whether it was the request's last.
        last: bool,
    },
}
