//! qexp-testkit is what qexp's tests share, declared once so that a new
//! plan key, manifest field or column breaks one builder instead of five
//! copies: a plan builder ([`PlanFixture`]), a manifest builder with fixed,
//! plausible defaults ([`ManifestFixture`]), a
//! simulator started on 127.0.0.1:0 ([`sim`]), readers of a frame's
//! columns ([`u32s`], [`f64s`], [`strings()`]), and the `qexp` command with
//! its output captured ([`command`]), and complete runs written from a plan
//! and a formula ([`SynthRun`]), and the one way a test skips for lack of a
//! server or tool ([`skip()`]), visibly, and never where it is required;
//! fake GPU telemetry ([`FakeDcgm`], [`fake_nvidia_smi`]). It
//! is a dev-dependency only.

mod gpu;
mod skip;
mod synth;

pub use gpu::{fake_nvidia_smi, unix_now, FakeDcgm, FakeGpu};
pub use skip::{skip, Need, SKIP_LOG};
pub use synth::{founding_like, planned_length, Answer, SynthRun, Timing};

use polars::prelude::*;
use qexp_plan::Point;
use qexp_store::Manifest;
use serde::Serialize;
use serde_json::{json, Value};
use std::process::{Command, Stdio};

mod plan;

pub use plan::PlanFixture;

/// A manifest under construction: fixed defaults (run id, times, host,
/// hashes, a target on 127.0.0.1), then whatever a test sets.
#[derive(Debug, Clone)]
pub struct ManifestFixture(Value);

impl ManifestFixture {
    /// A running run of `experiment` with these points, each trial in plan order.
    pub fn new(experiment: &str, points: &[Point], trials: u32) -> ManifestFixture {
        let ids: Vec<u32> = points.iter().map(|p| p.id).collect();
        ManifestFixture(json!({
            "schema_version": 1,
            "qexp_version": "0.1.0",
            "run_id": "20261130T101500Z-000000",
            "experiment": experiment,
            "plan_path": format!("{experiment}.toml"),
            "plan_hash": "00",
            "plan_text": "",
            "overrides": {},
            "trials": trials,
            "points": points,
            "point_order": vec![ids; trials as usize],
            "target": {"base_url": "http://127.0.0.1:1", "model": "m", "api": "chat",
                       "simulated": false, "sim_profile": null, "sim_time_scale": null,
                       "api_key_env": null},
            "server": null,
            "calibration": [],
            "git": null,
            "host": {"hostname": "h", "os": "linux", "kernel": "6", "arch": "x86_64",
                     "cpu_model": null, "cpus": 2, "memory_bytes": 0, "gpus": []},
            "comparability": {"workload": {}, "deployment": {}, "workload_hash": "00"},
            "started_at": "2026-11-30T10:15:00Z",
            "ended_at": null,
            "status": "running",
            "stop_reason": null
        }))
    }

    /// Sets a field: `"run_id"`, or a dotted path into an object (`"target.model"`).
    pub fn with(mut self, path: &str, value: impl Serialize) -> ManifestFixture {
        let value = serde_json::to_value(value).unwrap_or(Value::Null);
        let mut at = &mut self.0;
        let mut keys = path.split('.').peekable();
        while let Some(k) = keys.next() {
            if keys.peek().is_none() {
                at[k] = value;
                break;
            }
            at = &mut at[k];
        }
        self
    }

    /// The target of a simulated run: `sim:<profile>`, model `sim-<profile>`.
    pub fn simulated(self, profile: &str, time_scale: f64) -> ManifestFixture {
        self.with("target.base_url", format!("sim:{profile}"))
            .with("target.model", format!("sim-{profile}"))
            .with("target.simulated", true)
            .with("target.sim_profile", profile)
            .with("target.sim_time_scale", time_scale)
    }

    /// The manifest; panics (in a test) when a set field does not fit the schema.
    pub fn build(self) -> Manifest {
        serde_json::from_value(self.0)
            .unwrap_or_else(|e| panic!("the fixture manifest does not fit the schema: {e}"))
    }
}

/// A simulator with the named built-in profile, on 127.0.0.1:0.
pub async fn sim(profile: &str) -> qexp_sim::SimServer {
    let profile = qexp_sim::SimProfile::by_name(profile)
        .unwrap_or_else(|| panic!("no simulator profile `{profile}`"));
    qexp_sim::SimServer::start(profile)
        .await
        .unwrap_or_else(|e| panic!("the simulator did not start: {e}"))
}

/// `bin args…` with stdout and stderr captured (`bin` is the test's
/// `env!("CARGO_BIN_EXE_qexp")`).
pub fn command(bin: &str, args: &[&str]) -> Command {
    let mut c = Command::new(bin);
    c.args(args).stdout(Stdio::piped()).stderr(Stdio::piped());
    c
}

/// A column as u32s (nulls as 0).
pub fn u32s(df: &DataFrame, name: &str) -> Vec<u32> {
    let c = df
        .column(name)
        .and_then(|c| c.cast(&DataType::UInt32))
        .unwrap_or_else(|e| panic!("column {name}: {e}"));
    c.u32()
        .unwrap_or_else(|e| panic!("column {name}: {e}"))
        .iter()
        .map(|v| v.unwrap_or(0))
        .collect()
}

/// A column as f64s (nulls as NaN).
pub fn f64s(df: &DataFrame, name: &str) -> Vec<f64> {
    let c = df
        .column(name)
        .and_then(|c| c.cast(&DataType::Float64))
        .unwrap_or_else(|e| panic!("column {name}: {e}"));
    c.f64()
        .unwrap_or_else(|e| panic!("column {name}: {e}"))
        .iter()
        .map(|v| v.unwrap_or(f64::NAN))
        .collect()
}

/// A string column (nulls as None).
pub fn strings(df: &DataFrame, name: &str) -> Vec<Option<String>> {
    let c = df
        .column(name)
        .unwrap_or_else(|e| panic!("column {name}: {e}"));
    c.str()
        .unwrap_or_else(|e| panic!("column {name}: {e}"))
        .iter()
        .map(|v| v.map(str::to_string))
        .collect()
}
