//! qexp-provenance owns "where and how did this run happen": the git state
//! of the repository holding the plan, and the host's fingerprint (OS,
//! kernel, CPU, memory, GPUs). What the *server* says about itself is asked
//! by qexp-client; this crate makes no network calls.

mod git;
mod host;

pub use git::{git_info, GitInfo};
pub use host::{host_info, Gpu, HostInfo};
