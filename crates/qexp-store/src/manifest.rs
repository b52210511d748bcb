//! The manifest of a run folder (`manifest.json`): what ran, where, when,
//! from which plan, and how far it got.

use chrono::{DateTime, Utc};
use qexp_plan::{ApiKind, Point};
use qexp_provenance::{GitInfo, HostInfo};
use qexp_types::{ClientTiming, ServerInfo};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;

/// Version of the manifest and Parquet layouts; bumped on incompatible change.
/// 2: finished requests may also sit in `journal/` and `incomplete/`, which
/// readers of version 1 would not see.
pub const SCHEMA_VERSION: u32 = 2;

/// The manifest's file name inside a run folder.
pub const MANIFEST_FILE: &str = "manifest.json";

/// Where a run stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RunStatus {
    /// Still measuring (or the process died: then no `ended_at`).
    Running,
    /// Every point of every trial finished.
    Complete,
    /// Stopped early (Ctrl-C, or an error); finished rows are kept.
    Interrupted,
}

impl RunStatus {
    /// The stable snake_case name the manifest holds (`running`, `complete`,
    /// `interrupted`); recorded runs hold these spellings, so never change one.
    pub fn as_str(self) -> &'static str {
        match self {
            RunStatus::Running => "running",
            RunStatus::Complete => "complete",
            RunStatus::Interrupted => "interrupted",
        }
    }
}

impl std::fmt::Display for RunStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What the run was pointed at.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TargetInfo {
    /// Base URL asked, or `sim:<profile>`; empty for a run with
    /// deployments, whose servers are its [`Manifest::deployments`] (older
    /// runs kept the sentence `deployments: a, b` here, and reports still
    /// show it as it was).
    pub base_url: String,
    /// Model requested.
    pub model: String,
    /// The endpoint kind (stored as `chat` or `completions`).
    pub api: ApiKind,
    /// True when the target is qexp's embedded simulator.
    pub simulated: bool,
    /// The simulator's profile, when simulated.
    pub sim_profile: Option<String>,
    /// Factor applied to the simulator's time (1.0 = real time).
    pub sim_time_scale: Option<f64>,
    /// Name of the environment variable the API key came from (never the key).
    pub api_key_env: Option<String>,
}

/// Keys that decide whether two runs can be compared.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Comparability {
    /// What was asked: workload, sweep, prompt recipe, API kind.
    pub workload: BTreeMap<String, String>,
    /// What answered: engine, version, model, host, GPUs.
    pub deployment: BTreeMap<String, String>,
    /// SHA-256 over the workload keys.
    pub workload_hash: String,
}

impl Comparability {
    /// Builds the fingerprint and its hash.
    pub fn new(
        workload: BTreeMap<String, String>,
        deployment: BTreeMap<String, String>,
    ) -> Comparability {
        let mut h = Sha256::new();
        for (k, v) in &workload {
            h.update(k.as_bytes());
            h.update([0]);
            h.update(v.as_bytes());
            h.update([0]);
        }
        Comparability {
            workload,
            deployment,
            workload_hash: hex::encode(h.finalize()),
        }
    }
}

/// `manifest.json`: everything needed to know how a run was made.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Manifest {
    /// Layout version ([`SCHEMA_VERSION`]).
    pub schema_version: u32,
    /// qexp's version.
    pub qexp_version: String,
    /// `<UTC timestamp>-<random>`.
    pub run_id: String,
    /// Experiment name from the plan.
    pub experiment: String,
    /// Path of the plan as given.
    pub plan_path: String,
    /// SHA-256 of the plan text.
    pub plan_hash: String,
    /// The plan, verbatim.
    pub plan_text: String,
    /// Command-line overrides (`--trials`, `--target`, `--model`) as given.
    pub overrides: crate::Overrides,
    /// Trials run (after overrides).
    pub trials: u32,
    /// The expanded points.
    pub points: Vec<Point>,
    /// Order in which point ids ran, one list per trial.
    pub point_order: Vec<Vec<u32>>,
    /// The target.
    pub target: TargetInfo,
    /// What the server said about itself (documents by path, what its
    /// metrics revealed); `null` for a run with deployments, whose starts
    /// each keep a fingerprint.
    #[serde(default)]
    pub server: Option<ServerInfo>,
    /// Engine, version, model, context limit and flags read from `server`
    /// (absent in manifests written before qexp read fingerprints).
    #[serde(default)]
    pub fingerprint: Option<qexp_types::Fingerprint>,
    /// Prompt-length calibration per input length.
    pub calibration: Vec<serde_json::Value>,
    /// Git state of the plan's repository.
    pub git: Option<GitInfo>,
    /// The client host.
    pub host: HostInfo,
    /// Comparability fingerprint for `qexp diff`.
    pub comparability: Comparability,
    /// When measuring started.
    pub started_at: DateTime<Utc>,
    /// When the run ended, if it did.
    pub ended_at: Option<DateTime<Utc>>,
    /// Where the run stands.
    pub status: RunStatus,
    /// Why the run stopped early, when it did.
    pub stop_reason: Option<String>,
    /// Each `qexp run --resume` of this run, oldest first.
    #[serde(default)]
    pub resumes: Vec<Resume>,
    /// How qexp timed the streamed requests: which HTTP client, sent
    /// counted from the wire. Absent in runs made before it was recorded,
    /// which timed from before each request was built.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_timing: Option<ClientTiming>,
    /// A run with `[[deployment]]` tables: each deployment, its starts and
    /// its failures (empty for a run against one server).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub deployments: Vec<DeploymentRun>,
    /// The (block, deployment) cells in the order they are measured (empty
    /// without deployments); `--resume` keeps it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub schedule: Vec<ScheduleCell>,
    /// With deployments: `interleaved` or `blocked`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub order: Option<qexp_plan::Order>,
    /// With deployments: `per_block` or `once`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub restart: Option<qexp_plan::Restart>,
    /// With deployments: the one the others are compared with.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub baseline: Option<String>,
    /// A shard of a run split over several client processes (`qexp run
    /// --shard K/N`): which one, its clock against shard 0, the shards it
    /// lost sight of. Absent for a run made by one process.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shard: Option<ShardRecord>,
    /// A run `qexp merge` made from shards: which shards went into it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub merged: Option<MergeRecord>,
    /// Where GPU power came from (`[power]`): the source, its version and
    /// the GPUs measured, one per deployment in a deployments plan; empty
    /// without power.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub power: Vec<qexp_types::PowerSourceInfo>,
    /// A run `qexp import` made from another tool's files: the tool, the
    /// files and their SHA-256, what the source did not record, and its own
    /// figures beside qexp's recomputation. Absent for a run qexp measured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub import: Option<crate::ImportRecord>,
    /// `[run] stop_past_saturation`: each trial's series that stopped
    /// climbing, and the points it did not measure.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub saturation_stops: Vec<SaturationStop>,
}

/// A series of a sweep that stopped climbing in one trial because the
/// server was past saturation (`[run] stop_past_saturation`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SaturationStop {
    /// The trial.
    pub trial: u32,
    /// The point whose figures showed it.
    pub point_id: u32,
    /// The higher-load points of its series left unmeasured in that trial.
    pub skipped: Vec<u32>,
    /// Why, in a sentence with the figures.
    pub reason: String,
}

impl Manifest {
    /// Whether `[run] stop_past_saturation` left (trial, point) unmeasured.
    pub fn skipped_past_saturation(&self, trial: u32, point_id: u32) -> bool {
        self.saturation_stops
            .iter()
            .any(|s| s.trial == trial && s.skipped.contains(&point_id))
    }
}

impl Manifest {
    /// The run folder's name: the run id, followed for a shard by
    /// `-shardK-of-N`, so that every shard of one run id has a folder of
    /// its own under the same results root.
    pub fn folder_name(&self) -> String {
        match &self.shard {
            Some(s) => shard_folder_name(&self.run_id, s.index, s.count),
            None => self.run_id.clone(),
        }
    }

    /// The target as reports show it: its base URL, or, where the run was
    /// imported from a tool that does not record the URL (vLLM's benchmark),
    /// a sentence that says so instead of a blank.
    pub fn target_label(&self) -> String {
        match (&self.target.base_url, &self.import) {
            (url, _) if !url.is_empty() => url.clone(),
            (_, Some(import)) => format!("not recorded by {}", import.tool),
            _ if !self.deployments.is_empty() => {
                let names: Vec<&str> = self.deployments.iter().map(|d| d.name.as_str()).collect();
                format!("deployments: {}", names.join(", "))
            }
            _ => "not recorded".to_string(),
        }
    }
}

/// The folder name of shard `index` of `count` of run `run_id`
/// ([`Manifest::folder_name`]), known before the run starts.
pub fn shard_folder_name(run_id: &str, index: u32, count: u32) -> String {
    format!("{run_id}-shard{index}-of-{count}")
}

/// One shard of a run split over several client processes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ShardRecord {
    /// This shard, from 0.
    pub index: u32,
    /// How many shards the run has.
    pub count: u32,
    /// Shard 0's rendezvous address, when the shards met (absent: ran alone).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rendezvous: Option<String>,
    /// Seconds added to this host's clock to read shard 0's (minimum-RTT
    /// estimate); every time in this shard's rows has it added already.
    pub clock_offset_s: f64,
    /// Round trip of the sample the offset came from: the offset is known
    /// to within half of it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clock_rtt_s: Option<f64>,
    /// Shards that stopped reaching the rendezvous while this one ran.
    #[serde(default)]
    pub lost: Vec<LostShard>,
}

/// A shard the others stopped hearing from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LostShard {
    /// Its index.
    pub shard: u32,
    /// When it was declared lost.
    pub at: DateTime<Utc>,
    /// One sentence: what was seen.
    pub message: String,
}

/// How a shard's [`LostShard`] sentence about shard 0 ends when the shard
/// went on alone (declared in qexp-types, where the rendezvous that writes
/// it finds it too).
pub use qexp_types::WENT_ON_ALONE;

/// What `qexp merge` put together.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MergeRecord {
    /// How many shards the run was split into.
    pub count: u32,
    /// The shard folders merged, by shard index.
    pub shards: Vec<MergedShard>,
    /// Shards absent or incomplete (`--partial` only): the run lacks their requests.
    #[serde(default)]
    pub missing: Vec<u32>,
    /// True when shards are missing (`--partial`).
    pub partial: bool,
    /// Merged shards that did not run in step with the others to the end:
    /// declared lost by another shard (then resumed, or run on alone), or
    /// on alone once shard 0 was lost; each with when and what was seen.
    /// Their requests from then on were not measured under the plan's
    /// whole load.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub out_of_step: Vec<LostShard>,
    /// When the merge ran.
    pub at: DateTime<Utc>,
}

impl MergeRecord {
    /// What a reader of the merged run must know, one sentence each: the
    /// shards missing from a partial merge, then every shard out of step.
    pub fn notes(&self) -> Vec<String> {
        let partial = self.partial.then(|| {
            let missing: Vec<String> = self.missing.iter().map(u32::to_string).collect();
            format!(
                "merged from {} of {} shards (--partial): the requests of shard {} are missing, so every point ran at part of the plan's load",
                self.shards.len(),
                self.count,
                missing.join(", ")
            )
        });
        partial
            .into_iter()
            .chain(self.out_of_step_notes())
            .collect()
    }

    /// One sentence per shard out of step ([`MergeRecord::out_of_step`]).
    pub fn out_of_step_notes(&self) -> Vec<String> {
        self.out_of_step
            .iter()
            .map(|l| {
                format!(
                    "shard {} of {} did not run in step with the others from {}: {}; its requests from then on were measured apart from theirs (resumed, or run on alone), not under the plan's whole load",
                    l.shard,
                    self.count,
                    l.at.format("%Y-%m-%dT%H:%M:%SZ"),
                    l.message
                )
            })
            .collect()
    }
}

/// One shard folder a merge read.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MergedShard {
    /// Its index.
    pub index: u32,
    /// The folder, as given.
    pub dir: String,
    /// Its host.
    pub host: Option<String>,
    /// Its clock offset to shard 0, s.
    pub clock_offset_s: f64,
}

/// One (block, deployment) cell of a run's schedule.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ScheduleCell {
    /// The block (the trial number), from 1.
    pub block: u32,
    /// The deployment's name.
    pub deployment: String,
}

/// One `[[deployment]]` of a run and what happened to it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DeploymentRun {
    /// Its name.
    pub name: String,
    /// SHA-256 of its definition (`DeploymentSpec::hash`).
    pub hash: String,
    /// True when qexp launches it; false for a `base_url`.
    pub launched: bool,
    /// The `base_url` of a deployment qexp does not launch.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base_url: Option<String>,
    /// The plan's labels.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub labels: BTreeMap<String, String>,
    /// The model requested from it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// What its first ready start said about itself.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fingerprint: Option<qexp_types::Fingerprint>,
    /// Every start (launched deployments) or connection (others), in order.
    #[serde(default)]
    pub starts: Vec<DeploymentStart>,
    /// Starts that failed, in order.
    #[serde(default)]
    pub failures: Vec<DeploymentFailure>,
}

/// One start of a deployment.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DeploymentStart {
    /// `<deployment>-bBBBB` (per block) or `<deployment>-once`, plus `-rN` on a resume.
    pub start_id: String,
    /// The blocks it served.
    pub blocks: Vec<u32>,
    /// The launch: command, env names, port, pid, log, time to ready (launched deployments).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub launch: Option<qexp_types::StartRecord>,
    /// How it was stopped.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop: Option<qexp_types::StopRecord>,
    /// What the server said about itself at this start.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fingerprint: Option<qexp_types::Fingerprint>,
}

/// A start that failed: the deployment's remaining cells are skipped.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DeploymentFailure {
    /// The start that failed.
    pub start_id: String,
    /// The block it was for.
    pub block: u32,
    /// When.
    pub at: DateTime<Utc>,
    /// One sentence: what went wrong.
    pub message: String,
    /// The server's log, when it was launched.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub log: Option<String>,
    /// The last lines of that log.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub log_tail: Option<String>,
}

/// One `qexp run --resume`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Resume {
    /// When it started.
    pub at: DateTime<Utc>,
    /// (trial, point) pairs it had left to run.
    pub pairs_left: u32,
    /// True when `--force` let it go on despite `differences`.
    pub forced: bool,
    /// What differed from the run as started (plan hash, target fingerprint).
    pub differences: Vec<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The workload hash of a run recorded before this test existed (its
    /// keys as the runner wrote them): the hash function must keep giving it,
    /// or old runs stop being comparable with new ones.
    #[test]
    fn workload_hash_is_pinned() {
        let w: BTreeMap<String, String> = [
            ("api", "chat"),
            ("concurrency", "1,2,4"),
            ("input_tokens", "1000"),
            ("output_tokens", "500"),
            ("requests", "PerConcurrency(4)"),
            ("warmup_requests", "1"),
            ("prompt", "RandomWords"),
            ("extra_body", "{\"ignore_eos\":true}"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
        let c = Comparability::new(w, BTreeMap::new());
        assert_eq!(
            c.workload_hash,
            "020e2f6578434b70957376b19a50bc15bbcbc52a59ede0063d47dc04b0a4dcc4"
        );
    }

    /// A run with deployments records no base URL of its own: reports name
    /// its deployments, as they named the sentence older runs recorded.
    #[test]
    fn a_run_with_deployments_is_labelled_by_them() {
        let manifest = |base_url: &str, names: &[&str]| -> Manifest {
            let deployments: Vec<serde_json::Value> = names
                .iter()
                .map(|n| serde_json::json!({"name": n, "hash": "00", "launched": true}))
                .collect();
            serde_json::from_value(serde_json::json!({
                "schema_version": SCHEMA_VERSION, "qexp_version": "0.1.0",
                "run_id": "r", "experiment": "e", "plan_path": "p.toml",
                "plan_hash": "00", "plan_text": "", "overrides": {}, "trials": 1,
                "points": [], "point_order": [],
                "target": {"base_url": base_url, "model": "m", "api": "chat",
                           "simulated": false, "sim_profile": null,
                           "sim_time_scale": null, "api_key_env": null},
                "server": null, "calibration": [], "git": null,
                "host": {"hostname": null, "os": null, "kernel": null, "arch": "x86_64",
                         "cpu_model": null, "cpus": 2, "memory_bytes": 1u64, "gpus": []},
                "comparability": {"workload": {}, "deployment": {}, "workload_hash": "00"},
                "started_at": "2026-12-01T10:00:00Z", "ended_at": null,
                "status": "complete", "stop_reason": null,
                "deployments": deployments,
            }))
            .unwrap_or_else(|e| panic!("{e}"))
        };
        let now = manifest("", &["a", "b"]);
        assert_eq!(now.target_label(), "deployments: a, b");
        let before = manifest("deployments: a, b", &["a", "b"]);
        assert_eq!(before.target_label(), "deployments: a, b");
        assert_eq!(manifest("http://h:1", &[]).target_label(), "http://h:1");
        assert_eq!(manifest("", &[]).target_label(), "not recorded");
    }

    #[test]
    fn status_names_are_pinned_and_match_serde() {
        for (s, name) in [
            (RunStatus::Running, "running"),
            (RunStatus::Complete, "complete"),
            (RunStatus::Interrupted, "interrupted"),
        ] {
            assert_eq!(s.as_str(), name);
            let json = serde_json::to_value(s).unwrap_or_default();
            assert_eq!(json, serde_json::Value::from(name));
        }
    }
}
