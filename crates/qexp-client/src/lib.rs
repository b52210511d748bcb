//! qexp-client owns the conversation with an OpenAI-compatible server:
//! the streaming request with per-chunk arrival timestamps, the SSE parser,
//! the classification of every failure, prompt construction with exact token
//! counts, seeded length distributions and local prompt datasets, the probe of what a server says about itself and its
//! fingerprint, and scrapes of its Prometheus counters. It knows
//! nothing about scheduling or storage. The types it shares with the
//! results (error classes, counters, fingerprints) live in qexp-types and
//! are re-exported here.

mod answer;
mod answer_json;
mod calibrate;
mod classify;
mod client;
pub mod conversation;
pub mod dataset;
pub mod distribution;
mod events;
mod http1;
mod measure;
pub mod metrics;
mod outcome;
mod probe;
pub mod prompt;
mod raw;
mod rx_stamp;
mod secret;
mod sent;
pub mod sse;
mod timeouts;
mod timing;

pub use answer::answer_hash;
pub use calibrate::{calibrate, Calibration, CalibrationError, CountMethod, CountTokens, Counter};
pub use client::{Client, ClientError, GenRequest};
pub use conversation::{Message, Role, SentFunction, SentToolCall};
pub use dataset::{Dataset, DatasetError, DatasetFormat};
pub use distribution::{LengthDist, Shape};
pub use metrics::{Counters, MetricsSource};
pub use outcome::{parse_usage, ErrorClass, Outcome, RequestError, Usage};
pub use probe::{add_metrics, probe, ProbeError, ServerInfo};
pub use prompt::nonce_for;
pub use rx_stamp::{enable_rx_timestamps, instant_of, recv_stamped};
pub use secret::REDACTED;
pub use timeouts::Timeouts;

/// The shared vocabulary this crate produces, declared in qexp-types so that
/// crates which only read results need not link an HTTP client.
pub use qexp_types::counters;
pub use qexp_types::{
    AnswerShape, ClientTiming, CounterSpec, Fingerprint, ServerCounter, ServerCounters,
};
