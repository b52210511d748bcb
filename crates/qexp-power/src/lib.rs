//! qexp-power owns what a token costs in watts and dollars: GPU power,
//! energy and health sampled beside a run from the deployment's GPUs (a
//! DCGM exporter, `nvidia-smi` as a child process, or NVML loaded at run
//! time), on a task of its own and never on the request path; the energy
//! of a measured window from the energy counter and from the integrated
//! power, with the reason when the samples cannot be trusted; and the cost
//! arithmetic ($ per GPU-hour, or $ per kWh with a PUE).
//!
//! It knows nothing of plans, Parquet or reports: the runner configures a
//! [`Sampler`] from the plan and stores each window's [`WindowEnergy`];
//! the analysis prices the stored energy with [`Price`].

pub mod dcgm;
pub mod energy;
mod nvml;
mod sample;
mod sampler;
pub mod smi;
mod source;

pub use energy::{over_window, GpuEnergy, Window, WindowEnergy};
/// The cost arithmetic, declared with the vocabulary results hold.
pub use qexp_types::cost::{self, j_per_token, Price, Spent};
pub use sample::{unix_now, Reading, Sample, Throttle};
pub use sampler::Sampler;
pub use source::{PowerGpu, SamplerConfig, SourceInfo, SourceKind};

/// Why a power source could not be started, one sentence each.
#[derive(Debug, thiserror::Error)]
pub enum PowerError {
    /// The source did not answer.
    #[error("{what} did not answer: {why}")]
    Unreachable {
        /// The source, named for the user.
        what: String,
        /// What went wrong.
        why: String,
    },
    /// The source answered without a GPU the plan names.
    #[error("{what} has no GPU named {wanted} (it has: {has}); name GPUs by index or UUID in power.gpus")]
    NoSuchGpu {
        /// The source, named for the user.
        what: String,
        /// The GPUs the plan names.
        wanted: String,
        /// The GPUs the source has.
        has: String,
    },
    /// NVML could not be loaded or found no GPU.
    #[error("NVML found no GPU on this machine")]
    NoGpu(#[source] Box<dyn std::error::Error + Send + Sync>),
}
