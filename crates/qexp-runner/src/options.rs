//! What a run was asked to do, what it gives back, and the two steps every
//! kind of run shares: how its targets are reached (key and limits) and
//! how it ends (status, merge, manifest).

use crate::error::RunError;
use crate::Cancel;
use qexp_client::Timeouts;
use qexp_plan::Plan;
use qexp_store::{Manifest, Overrides, RunStatus, RunWriter};
use std::path::PathBuf;
use std::sync::{Arc, OnceLock};

/// What `qexp run` was asked to do.
#[derive(Debug, Clone)]
pub struct RunOptions {
    /// The validated plan.
    pub plan: Plan,
    /// Results root (`results/` by default).
    pub out: PathBuf,
    /// `--trials`, `--target` and `--model`, overriding the plan (and
    /// recorded in the manifest as given).
    pub overrides: Overrides,
    /// `--shard K/N`: this process runs one shard of the plan; `None`: all of it.
    pub shard: Option<crate::sharded::ShardOptions>,
    /// Filled with the run folder as soon as it exists, for whoever follows
    /// the run while it goes on (`qexp run --upload` copies it to an object
    /// store); set on every run and resume.
    pub folder: Arc<OnceLock<PathBuf>>,
}

/// A finished (or interrupted) run.
#[derive(Debug, Clone)]
pub struct RunResult {
    /// The run folder.
    pub dir: PathBuf,
    /// The manifest as saved.
    pub manifest: Manifest,
    /// The (trial, point)s whose failed requests exceeded the plan's
    /// `[tolerance]`; empty when none did.
    pub over_tolerance: Vec<crate::OverTolerance>,
    /// One sentence per deployment that failed to start or become ready
    /// (its remaining cells were skipped); empty when none did.
    pub failed_deployments: Vec<String>,
}

/// How every target of a plan is reached: the API key (read from the
/// variable the plan names), the request limits, and the header values its
/// classes read from the environment (secrets the client redacts).
pub(crate) struct Connection {
    pub api_key: Option<String>,
    pub timeouts: Timeouts,
    pub secrets: Vec<String>,
}

/// The plan's [`Connection`], read before any server is started or asked
/// anything: a variable that is not set is bad input.
pub(crate) fn connection(opts: &RunOptions) -> Result<Connection, RunError> {
    let t = &opts.plan.file.target;
    let api_key = match &t.api_key_env {
        Some(name) => Some(std::env::var(name).map_err(|_| RunError::MissingApiKey(name.clone()))?),
        None => None,
    };
    let limits = opts.plan.file.timeouts.resolve(t.timeout_s);
    let timeouts = Timeouts {
        connect: limits.connect,
        first_byte: limits.first_byte,
        idle: limits.idle,
        total: limits.total,
    };
    Ok(Connection {
        api_key,
        timeouts,
        secrets: crate::classes::secrets(&opts.plan.file.workload.class)?,
    })
}

/// Ends a run: its status (complete, or interrupted and why: an error, the
/// user, or deployments that failed to start), the parts merged and the
/// manifest saved even after a failure — the first failure is the one
/// reported.
pub(crate) fn finish(
    writer: RunWriter,
    outcome: Result<Vec<crate::OverTolerance>, RunError>,
    cancel: &Cancel,
    failed_deployments: Vec<String>,
) -> Result<RunResult, RunError> {
    let (status, reason) = match (&outcome, *cancel.borrow()) {
        (Err(e), _) => (RunStatus::Interrupted, Some(qexp_types::error::chain(e))),
        (Ok(_), true) => (
            RunStatus::Interrupted,
            Some("interrupted by the user (Ctrl-C or SIGTERM)".into()),
        ),
        (Ok(_), false) if !failed_deployments.is_empty() => {
            (RunStatus::Interrupted, Some(failed_deployments.join(" ")))
        }
        (Ok(_), false) => (RunStatus::Complete, None),
    };
    let finished = writer.finish(status, reason);
    let over_tolerance = outcome?;
    let dir = finished?;
    let manifest = qexp_store::read_manifest(&dir)?;
    Ok(RunResult {
        dir,
        manifest,
        over_tolerance,
        failed_deployments,
    })
}

/// The manifest of a new run of `opts` as far as every kind of run fills it
/// alike (version, run id, plan, overrides, points, git, host, times, status
/// `running`); the caller sets what its target or deployments add.
pub(crate) fn base_manifest(
    opts: &RunOptions,
    points: &[qexp_plan::Point],
    trials: u32,
    target: qexp_store::TargetInfo,
    host: qexp_provenance::HostInfo,
    comparability: qexp_store::Comparability,
) -> Manifest {
    let plan = &opts.plan;
    let started_at = chrono::Utc::now();
    Manifest {
        schema_version: qexp_store::SCHEMA_VERSION,
        qexp_version: env!("CARGO_PKG_VERSION").to_string(),
        run_id: opts
            .shard
            .as_ref()
            .map_or_else(|| qexp_store::new_run_id(started_at), |s| s.run_id.clone()),
        experiment: plan.name().to_string(),
        plan_path: plan.path.display().to_string(),
        plan_hash: plan.hash(),
        plan_text: plan.text.clone(),
        overrides: opts.overrides.clone(),
        trials,
        points: points.to_vec(),
        point_order: Vec::new(),
        target,
        server: None,
        fingerprint: None,
        calibration: Vec::new(),
        git: qexp_provenance::git_info(&plan.path),
        comparability,
        host,
        started_at,
        ended_at: None,
        status: RunStatus::Running,
        stop_reason: None,
        resumes: Vec::new(),
        client_timing: None,
        deployments: Vec::new(),
        schedule: Vec::new(),
        order: None,
        restart: None,
        baseline: None,
        shard: None,
        merged: None,
        power: Vec::new(),
        import: None,
        saturation_stops: Vec::new(),
    }
}
