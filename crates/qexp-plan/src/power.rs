//! `[power]`: where the deployment's GPU power comes from and which GPUs
//! are the deployment's (named, never "every GPU on the host" by accident);
//! `[cost]`: what an hour of those GPUs or a kWh costs, so that a token's
//! price can be told.

use crate::error::Invalid;
use serde::{Deserialize, Serialize};
use toml::Spanned;

/// `power.source`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum PowerSource {
    /// Found at start: the DCGM exporter at `url` when one is given, else
    /// NVML, else nvidia-smi.
    #[default]
    Auto,
    /// A DCGM exporter's Prometheus endpoint (`url`).
    Dcgm,
    /// `nvidia-smi --query-gpu … --loop-ms` as a child process (`command`).
    NvidiaSmi,
    /// NVML, the driver's library, loaded at run time.
    Nvml,
}

/// A GPU as a plan names it: an index (`0`) or a UUID (`"GPU-…"`).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[serde(untagged)]
pub enum GpuName {
    /// Its index on the host.
    Index(u32),
    /// Its UUID (or an index written as a string).
    Id(String),
}

impl GpuName {
    /// The name as sources match it.
    pub fn as_string(&self) -> String {
        match self {
            GpuName::Index(i) => i.to_string(),
            GpuName::Id(s) => s.clone(),
        }
    }
}

/// `[power]`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PowerSection {
    /// `auto`, `dcgm`, `nvidia-smi` or `nvml`.
    #[serde(default = "default_source")]
    pub source: Spanned<PowerSource>,
    /// The DCGM exporter's URL (`http://host:9400/metrics`).
    #[serde(default)]
    pub url: Option<Spanned<String>>,
    /// The nvidia-smi command or its path.
    #[serde(default = "default_command")]
    pub command: String,
    /// The deployment's GPUs (a `[[deployment]]` may name its own).
    #[serde(default = "no_gpus")]
    pub gpus: Spanned<Vec<GpuName>>,
    /// Milliseconds between reads.
    #[serde(default = "default_interval")]
    pub interval_ms: Spanned<u64>,
    /// The longest gap between two reads of a GPU inside a measured window
    /// before the window's energy is invalid, s.
    #[serde(default = "default_gap")]
    pub gap_limit_s: Spanned<f64>,
    /// Whether a run stops (before sending anything) when no source starts;
    /// when false it goes on without energy, and says so.
    #[serde(default = "default_required")]
    pub required: bool,
}

fn default_source() -> Spanned<PowerSource> {
    Spanned::new(0..0, PowerSource::Auto)
}
fn no_gpus() -> Spanned<Vec<GpuName>> {
    Spanned::new(0..0, Vec::new())
}
fn default_command() -> String {
    "nvidia-smi".into()
}
fn default_interval() -> Spanned<u64> {
    Spanned::new(0..0, 500)
}
fn default_gap() -> Spanned<f64> {
    Spanned::new(0..0, 3.0)
}
fn default_required() -> bool {
    true
}

impl PowerSection {
    /// The GPUs as sources match them.
    pub fn gpu_names(&self) -> Vec<String> {
        self.gpus.get_ref().iter().map(GpuName::as_string).collect()
    }

    /// Checks the table; `deployments` tells whether every `[[deployment]]`
    /// names its own GPUs and its own exporter URL (a plan without
    /// deployments: neither).
    /// `table` is where the `[power]` table is, for a key it lacks.
    pub(crate) fn validate(
        &self,
        deployments: (bool, bool),
        table: std::ops::Range<usize>,
    ) -> Result<(), Invalid> {
        let (deployments_name_gpus, deployments_name_urls) = deployments;
        let bad = |span: std::ops::Range<usize>, key: &str, msg: &str| {
            Err((span, Some(format!("power.{key}")), msg.to_string()))
        };
        if self.gpus.get_ref().is_empty() && !deployments_name_gpus {
            return bad(
                table,
                "gpus",
                "name the deployment's GPUs by index or UUID, e.g. gpus = [0, 1] (qexp never measures every GPU on the host by accident)",
            );
        }
        if self
            .gpus
            .get_ref()
            .iter()
            .any(|g| matches!(g, GpuName::Id(s) if s.trim().is_empty()))
        {
            return bad(self.gpus.span(), "gpus", "a GPU name is empty");
        }
        let iv = *self.interval_ms.get_ref();
        if !(10..=60_000).contains(&iv) {
            return bad(
                self.interval_ms.span(),
                "interval_ms",
                "expected milliseconds between reads from 10 to 60000, e.g. 500",
            );
        }
        let gap = *self.gap_limit_s.get_ref();
        if !(gap.is_finite() && gap * 1000.0 > iv as f64) {
            return bad(
                self.gap_limit_s.span(),
                "gap_limit_s",
                "must be seconds longer than the interval between reads, e.g. 3",
            );
        }
        if let Some(u) = &self.url {
            if !(u.get_ref().starts_with("http://") || u.get_ref().starts_with("https://")) {
                return bad(
                    u.span(),
                    "url",
                    "expected the exporter's http://host:port/metrics",
                );
            }
        }
        if *self.source.get_ref() == PowerSource::Dcgm
            && self.url.is_none()
            && !deployments_name_urls
        {
            return bad(
                self.source.span(),
                "source",
                "a DCGM source needs its exporter's url, e.g. url = \"http://127.0.0.1:9400/metrics\"",
            );
        }
        Ok(())
    }
}

/// `[cost]`: a price per GPU-hour, or per kWh with the facility's PUE.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct CostSection {
    /// Dollars per GPU per hour (rent, power included).
    #[serde(default)]
    pub gpu_hour_usd: Option<f64>,
    /// Dollars per kWh of GPU energy.
    #[serde(default)]
    pub kwh_usd: Option<f64>,
    /// Power usage effectiveness with `kwh_usd` (cooling and losses): 1.0 counts the GPUs alone.
    #[serde(default)]
    pub pue: Option<f64>,
    /// GPUs of the deployment, where `[power]` does not name them.
    #[serde(default)]
    pub gpus: Option<u32>,
}

impl CostSection {
    pub(crate) fn validate(&self, has_power: bool) -> Result<(), Invalid> {
        let bad = |key: &str, msg: &str| Err((0..0, Some(format!("cost.{key}")), msg.to_string()));
        let positive = |v: Option<f64>| v.is_none_or(|v| v.is_finite() && v > 0.0);
        match (self.gpu_hour_usd, self.kwh_usd) {
            (Some(_), Some(_)) => return bad(
                "kwh_usd",
                "give one price: gpu_hour_usd (rent, power included) or kwh_usd (energy), not both",
            ),
            (None, None) => {
                return bad(
                    "gpu_hour_usd",
                    "give a price: gpu_hour_usd, or kwh_usd with pue",
                )
            }
            _ => {}
        }
        if !positive(self.gpu_hour_usd) {
            return bad("gpu_hour_usd", "must be a positive number of dollars");
        }
        if !positive(self.kwh_usd) {
            return bad("kwh_usd", "must be a positive number of dollars");
        }
        if let Some(p) = self.pue {
            if self.kwh_usd.is_none() {
                return bad("pue", "a PUE prices energy: it goes with kwh_usd");
            }
            if !(p.is_finite() && (1.0..=5.0).contains(&p)) {
                return bad(
                    "pue",
                    "expected a power usage effectiveness from 1.0 to 5.0, e.g. 1.3",
                );
            }
        }
        if self.kwh_usd.is_some() && !has_power {
            return bad(
                "kwh_usd",
                "a price per kWh needs measured energy: add a [power] table",
            );
        }
        if self.gpus == Some(0) {
            return bad("gpus", "must be at least 1");
        }
        if self.gpu_hour_usd.is_some() && !has_power && self.gpus.is_none() {
            return bad(
                "gpus",
                "say how many GPUs the deployment rents (or name them in [power])",
            );
        }
        Ok(())
    }

    /// The `[cost]` table of a recorded plan's text, read alone; None when absent or invalid.
    pub fn from_plan_text(text: &str) -> Option<CostSection> {
        let table: toml::Table = toml::from_str(text).ok()?;
        table.get("cost")?.clone().try_into().ok()
    }
}
