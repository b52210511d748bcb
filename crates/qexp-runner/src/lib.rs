//! qexp-runner executes a plan: it resolves the target (starting the
//! embedded simulator for `sim:` targets), probes and fingerprints it,
//! refuses points that exceed its context window, calibrates prompt
//! lengths, runs every point of every trial with closed-loop concurrency or
//! open-loop arrivals (rates, stages, traces), and hands each finished
//! request to qexp-store's journal as it finishes and each point's rows as
//! it completes, with the deltas of the server's Prometheus counters and
//! the GPUs' energy (`[power]`) around each point. It resumes interrupted
//! runs. It computes no statistics beyond a point's window.
//!
//! Beside the single run it holds:
//! - deployments (`[[deployment]]`): launches each one, interleaves their
//!   blocks of points, and stops what it launched (deployed.rs, fleet.rs,
//!   blocks.rs);
//! - shards (`--shard K/N`): one share of a plan's load per process
//!   (shard.rs, sharded.rs) and where they meet (`--rendezvous`: shard 0's
//!   clock and a shared start for each point, the qexp-rendezvous crate).
//!   Their folders are merged into the plan's run by qexp-merge, from the
//!   rows this crate's [`record`] makes.

mod arrivals;
mod backend;
pub mod blocks;
mod classes;
mod comparability;
mod dataset;
mod deployed;
mod error;
mod fleet;
pub mod health;
mod images;
mod journaling;
mod open_loop;
mod options;
mod point;
mod power;
mod preflight;
mod prepare;
mod progress;
pub mod record;
mod resume;
mod run;
pub mod saturation;
mod scheduler;
mod session;
mod shard;
mod sharded;
mod stop;
mod target;
mod timer;
mod tolerance;
mod workload;

pub use arrivals::offsets;
pub use backend::Backend;
pub use comparability::plan_workload;
pub use error::{RunError, ShardRefusal, TargetError};
pub use fleet::launch_preview;
pub use open_loop::{run_open_loop, OpenLoopSpec, ORIGIN_LATE_MAX_S};
pub use options::{RunOptions, RunResult};
pub use qexp_rendezvous::wire::RendezvousOptions;
pub use resume::ResumeOptions;
pub use run::{resume, run};
pub use scheduler::{run_closed_loop, Finished, Job};
pub use shard::{Shard, ShardSpecError, JOB_INDEX_ENV};
pub use sharded::ShardOptions;
pub use stop::STOP_GRACE;
pub use target::{resolve_target, Target};
pub use timer::Timer;
pub use tolerance::OverTolerance;

pub use qexp_types::PROGRESS_TARGET;

/// A flag the CLI raises on Ctrl-C or SIGTERM; the runner stops sending,
/// gives requests in flight [`STOP_GRACE`], and saves what finished.
pub type Cancel = tokio::sync::watch::Receiver<bool>;
