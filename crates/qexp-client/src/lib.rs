//! qexp-client owns the conversation with an OpenAI-compatible server:
//! the streaming request with per-chunk arrival timestamps, the SSE parser,
//! the classification of every failure, prompt construction with exact token
//! counts, seeded length distributions and local prompt datasets, the probe of what a server says about itself and its
//! fingerprint, and scrapes of its Prometheus counters. It knows
//! nothing about plans, scheduling or storage.

mod calibrate;
mod classify;
mod client;
pub mod conversation;
pub mod counters;
pub mod dataset;
pub mod distribution;
mod events;
mod fingerprint;
mod http1;
mod measure;
pub mod metrics;
mod outcome;
mod probe;
pub mod prompt;
mod raw;
mod secret;
mod sent;
pub mod sse;
mod timeouts;

pub use calibrate::{calibrate, Calibration, CalibrationError, CountMethod, Counter};
pub use client::{Api, Client, ClientError, GenRequest};
pub use conversation::{Message, Role};
pub use counters::{CounterSpec, ServerCounter, ServerCounters};
pub use dataset::{Dataset, DatasetError, DatasetFormat};
pub use distribution::{LengthDist, Shape};
pub use fingerprint::Fingerprint;
pub use metrics::{Counters, MetricsSource};
pub use outcome::{parse_usage, ErrorClass, Outcome, RequestError, Usage};
pub use probe::{probe, ProbeError, ServerInfo};
pub use prompt::nonce_for;
pub use secret::REDACTED;
pub use timeouts::Timeouts;
