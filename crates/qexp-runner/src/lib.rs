//! qexp-runner executes a plan: it resolves the target (starting the
//! embedded simulator for `sim:` targets), probes and fingerprints it,
//! refuses points that exceed its context window, calibrates prompt lengths, runs every point of every trial with
//! closed-loop concurrency or open-loop arrivals (rates, stages, traces), and hands finished rows to qexp-store as each
//! point completes, with the deltas of the server's Prometheus counters
//! around each point. It computes no statistics beyond a point's window.

mod arrivals;
mod backend;
mod dataset;
mod error;
mod open_loop;
mod preflight;
mod progress;
mod record;
mod run;
mod scheduler;
mod session;
mod target;
mod timer;
mod workload;

pub use arrivals::offsets;
pub use backend::Backend;
pub use error::RunError;
pub use open_loop::{run_open_loop, OpenLoopSpec};
pub use run::{run, RunOptions, RunResult};
pub use scheduler::{run_closed_loop, Finished, Job};
pub use target::{resolve_target, Target};
pub use timer::Timer;

/// A flag the CLI raises on Ctrl-C; the runner stops sending and saves what finished.
pub type Cancel = tokio::sync::watch::Receiver<bool>;
