//! Where a run's GPU power came from, as its manifest records it.

use serde::{Deserialize, Serialize};

/// One power source of a run (one per deployment in a deployments plan).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PowerSourceInfo {
    /// `dcgm`, `nvidia-smi` or `nvml`.
    pub kind: String,
    /// The exporter's URL, the nvidia-smi command, or the NVML library.
    pub location: String,
    /// The driver (and, where known, the tool's) version.
    pub version: Option<String>,
    /// Milliseconds between reads.
    pub interval_ms: u64,
    /// The GPUs measured, in the plan's order.
    pub gpus: Vec<PowerGpu>,
    /// The deployment these GPUs serve; `None` in a run without deployments.
    #[serde(default)]
    pub deployment: Option<String>,
}

/// One GPU a run measured.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PowerGpu {
    /// As the plan names it: an index or a UUID.
    pub name: String,
    /// Its UUID, where the source reports it.
    pub uuid: Option<String>,
    /// Its model, where the source reports it.
    pub model: Option<String>,
}
