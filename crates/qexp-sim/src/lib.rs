//! qexp-sim: an in-process simulated OpenAI-compatible inference server.
//!
//! It owns the simulated engine (continuous batching with a `max_batch` cap,
//! serialized prefill whose cost grows with input, decode steps whose cost
//! grows with the batch, speculative multi-token steps), the named timing
//! profiles ([`SimProfile`]), and the HTTP surface a benchmark client sees
//! over real loopback TCP: `/v1/models`, `/version`, `/health`, `/tokenize`,
//! `/metrics` (vLLM-named prefix-cache counters), `/v1/completions` and
//! `/v1/chat/completions` (streaming SSE or not). A block-level prefix cache
//! (`prefix_cache.rs`) serves repeated prompt prefixes: they skip prefill and
//! are reported as `usage.prompt_tokens_details.cached_tokens`. It
//! does not own any client, plan, scheduling of load, or result storage.
//!
//! Tokenization is exact and trivial so clients can check their counts: one
//! token is one whitespace-separated word. A completion's `prompt_tokens` is
//! the word count of `prompt`; a chat's is the word count of every message's
//! text plus the chat template: [`CHAT_PRIMER_TOKENS`] once per request and
//! [`SimProfile::chat_template_tokens`] per message. Every generated token is
//! one word with a leading space (`" the"`), and a request generates exactly
//! `max_tokens` (`max_completion_tokens` wins; default 16) with
//! `finish_reason` `"length"`, unless [`SimProfile::stop_share`] ends a
//! seeded share of answers early (`"stop"`) for requests without
//! `ignore_eos`.
//!
//! The words are pseudo-prose drawn from a hash of the prompt's token ids
//! (`answer.rs`, `prose.rs`): the same prompt gets the same answer from any
//! simulator, another prompt another. A prompt that asks `What is 12 * -3?`
//! is answered with the result first (`-36.`), then prose without digits.
//! [`SimProfile::loop_share`], [`SimProfile::wrong_share`] and
//! [`SimProfile::wrong_share_per_seq`] make a seeded share of answers loop
//! or get the arithmetic wrong, for tests of answer health.
//!
//! Faults (connections closed or reset, HTTP 429/500/503, broken SSE, stalls,
//! slow headers; see [`Fault`]) are injected into a seeded fraction of
//! streamed generation requests by [`SimProfile::faults`], a [`FaultPlan`],
//! which also carries [`Jitter`]: a server whose speed wanders over time.
mod answer;
mod draw;
mod faults;
mod form;
mod jitter;
mod metrics;
mod openai;
mod pooling;
mod prefix_cache;
mod profile;
mod prose;
mod reading;
mod routes;
mod scheduler;
mod server;
mod sse;
mod tokens;

pub use faults::{Fault, FaultPlan, FaultSpecError, FaultSpecProblem, FAULT_NAMES};
pub use jitter::Jitter;
pub use profile::{LookupError, ProfileError, SimProfile};
pub use server::SimServer;
pub use tokens::CHAT_PRIMER_TOKENS;
