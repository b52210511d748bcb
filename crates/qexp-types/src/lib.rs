//! qexp-types holds the vocabulary that qexp's crates share and its results
//! hold on disk: why a request failed ([`ErrorClass`]), the engine-neutral
//! server counters ([`ServerCounter`]) and the snapshots they come from,
//! what a server said about itself ([`ServerInfo`], [`Fingerprint`]), the
//! health of an answer's text ([`AnswerShape`], [`AnswerIssue`]), which
//! client timed a run ([`ClientTiming`]), and what a launched server's start
//! and stop left on record ([`StartRecord`], [`StopRecord`]), and where a
//! run's GPU power came from ([`PowerSourceInfo`]), and what a window of
//! serving costs ([`cost::Price`]), and the images a prompt carries
//! ([`image::Image`]), and an error said as one line ([`error::chain`]).
//!
//! It is a leaf: data and the pure functions over it, with no HTTP, no
//! processes, no Parquet, so that reading results never links a client.
//! Producing these values (scraping, probing, launching) belongs to
//! qexp-client and qexp-deploy, which re-export them; storing them belongs
//! to qexp-store. Serialised spellings are pinned by tests: runs on disk
//! hold them.

pub mod answer;
mod clock;
pub mod cost;
pub mod counters;
pub mod error;
mod error_class;
mod fingerprint;
pub mod image;
mod power;
mod record;
mod server;
mod timing;

pub use answer::{AnswerFacts, AnswerIssue, AnswerShape};
pub use clock::unix_now;
pub use counters::{acceptance_length, CounterSpec, Counters, ServerCounter, ServerCounters};
pub use error_class::ErrorClass;
pub use fingerprint::Fingerprint;
pub use power::{PowerGpu, PowerSourceInfo};
pub use record::{StartRecord, StopHow, StopRecord, REDACTED};
pub use server::ServerInfo;
pub use timing::ClientTiming;

/// The `tracing` target of qexp's progress lines for people (the server
/// found, where the run goes, one line per finished point, a shard lost):
/// a CLI shows them plainly whatever `RUST_LOG` says.
pub const PROGRESS_TARGET: &str = "qexp::progress";

/// How a shard's sentence about a lost shard 0 (the manifest's lost
/// shards) ends when the shard could not reach shard 0 and went on alone
/// (its barriers skipped), as opposed to shard 0 stopping while its
/// rendezvous still served.
pub const WENT_ON_ALONE: &str = "this shard went on alone";
