//! `[slo]`: service-level objectives a request must meet to count as
//! goodput. Response times are measured from the *scheduled* send, so time a
//! request waited in the client or behind a full in-flight cap counts.

use serde::{Deserialize, Serialize};

use crate::error::Invalid;

/// `[slo]`: per-request thresholds and the share of requests that must meet all of them.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct SloSection {
    /// Most seconds from the scheduled send to the first token.
    #[serde(default)]
    pub ttft_s: Option<f64>,
    /// Most seconds per output token after the first.
    #[serde(default)]
    pub tpot_s: Option<f64>,
    /// Most seconds from the scheduled send to the last token.
    #[serde(default)]
    pub e2e_s: Option<f64>,
    /// Share of requests that must meet every threshold for the point to hold its SLOs (e.g. 0.9 = p90).
    #[serde(default = "default_percentile")]
    pub percentile: f64,
}

fn default_percentile() -> f64 {
    0.9
}

impl SloSection {
    pub(crate) fn validate(&self) -> Result<(), Invalid> {
        let bad = |key: &str, msg: &str| Err((0..0, Some(format!("slo.{key}")), msg.to_string()));
        for (key, v) in [
            ("ttft_s", self.ttft_s),
            ("tpot_s", self.tpot_s),
            ("e2e_s", self.e2e_s),
        ] {
            if let Some(v) = v {
                if !(v.is_finite() && v > 0.0) {
                    return bad(key, "must be a positive number of seconds");
                }
            }
        }
        if self.ttft_s.is_none() && self.tpot_s.is_none() && self.e2e_s.is_none() {
            return bad("ttft_s", "give at least one of `ttft_s`, `tpot_s`, `e2e_s`");
        }
        if !(self.percentile > 0.0 && self.percentile <= 1.0) {
            return bad(
                "percentile",
                "expected a share above 0 and at most 1, e.g. 0.9",
            );
        }
        Ok(())
    }
}

impl SloSection {
    /// The `[slo]` table of a recorded plan's text, read alone (the rest of
    /// the plan, e.g. a trace file, may no longer be at hand); None when absent or invalid.
    pub fn from_plan_text(text: &str) -> Option<SloSection> {
        let table: toml::Table = toml::from_str(text).ok()?;
        let slo: SloSection = table.get("slo")?.clone().try_into().ok()?;
        slo.validate().ok()?;
        Some(slo)
    }
}
