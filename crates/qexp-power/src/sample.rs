//! What one read of one GPU gives, whatever the source: power, the energy
//! counter, and the health fields sampled beside them. A field the source
//! does not have (or did not have at that read) is `None`.

use serde::Serialize;

/// One GPU's fields at one read.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Reading {
    /// The GPU as the plan names it (an index such as `0`, or a UUID).
    pub gpu: String,
    /// Power draw, W.
    pub power_w: Option<f64>,
    /// The energy counter, J (DCGM's and NVML's count since the driver loaded).
    pub energy_j: Option<f64>,
    /// SM clock, MHz.
    pub sm_clock_mhz: Option<f64>,
    /// Memory clock, MHz.
    pub mem_clock_mhz: Option<f64>,
    /// GPU temperature, °C.
    pub temp_c: Option<f64>,
    /// Frame-buffer memory used, MiB.
    pub mem_used_mib: Option<f64>,
    /// Time the GPU spent held back by its power limit, s, counted since
    /// the driver loaded (DCGM's power violation counter).
    pub power_violation_s: Option<f64>,
    /// Time held back by temperature, s, counted likewise.
    pub thermal_violation_s: Option<f64>,
    /// Whether the clocks were held back at this read, and why (nvidia-smi's
    /// and NVML's throttle reasons); `None` where the source counts instead.
    pub throttle: Option<Throttle>,
    /// The last XID error the driver reported (0: none).
    pub xid: Option<f64>,
}

/// Why a GPU's clocks were held back at one read.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Throttle {
    /// By its power limit (software power cap or hardware power brake).
    pub power: bool,
    /// By temperature (software or hardware thermal slowdown, or hardware slowdown).
    pub thermal: bool,
}

impl Throttle {
    /// NVIDIA's clock-event (throttle) reason bitmask, as nvidia-smi prints
    /// it (`0x0000000000000004`) and NVML returns it: SW power cap (0x4)
    /// and HW power brake (0x80) are power; HW slowdown (0x8), SW thermal
    /// (0x20) and HW thermal (0x40) are thermal. GPU idle (0x1) and
    /// application clocks (0x2) hold nothing back.
    pub fn from_mask(mask: u64) -> Throttle {
        Throttle {
            power: mask & (0x4 | 0x80) != 0,
            thermal: mask & (0x8 | 0x20 | 0x40) != 0,
        }
    }
}

/// A reading and when it was taken, Unix seconds on the host's clock (the
/// clock the run's windows are stamped with).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Sample {
    /// When, Unix seconds.
    pub t: f64,
    /// What.
    pub reading: Reading,
}

/// Now, Unix seconds.
pub use qexp_types::unix_now;
