//! A run of a plan with `[[deployment]]` tables: the run folder first (the
//! servers' logs go in it), then the schedule's (block, deployment) cells
//! one after another. Each cell asks the [`Fleet`] for a ready target,
//! measures that deployment's points with the block's prompts, and hands
//! the target back. A deployment that fails to start is recorded and
//! skipped; the others go on. Every server qexp started is stopped before
//! the run returns, whatever happened.

use crate::blocks::{cell_points, schedule};
use crate::comparability::{comparability, workload};
use crate::error::{RunError, TargetError};
use crate::fleet::{Fleet, Live};
use crate::options::{base_manifest, connection, finish, RunOptions, RunResult};
use crate::point::point_runner;
use crate::power::Power;
use crate::resume::Resuming;
use crate::stop::Stop;
use crate::tolerance::OverTolerance;
use crate::Cancel;
use qexp_plan::Point;
use qexp_provenance::HostInfo;
use qexp_store::{Comparability, DeploymentRun, Manifest, RunWriter, ScheduleCell, TargetInfo};
use std::sync::Arc;

/// Runs (or resumes) a plan with deployments.
pub(crate) async fn run(
    opts: RunOptions,
    resuming: Option<Resuming>,
    cancel: Cancel,
) -> Result<RunResult, RunError> {
    if opts.overrides.target.is_some() {
        return Err(TargetError::WithDeployments.into());
    }
    let conn = connection(&opts)?;
    let points = opts.plan.points();
    let trials = opts.overrides.trials.unwrap_or(opts.plan.trials());
    let powers = start_powers(&opts).await?;
    let writer = match resuming {
        None => RunWriter::create(&opts.out, new_manifest(&opts, &points, trials))
            .map_err(RunError::from),
        Some(r) => r.reopen_deployed(&opts.plan, &points, trials),
    };
    let mut writer = match writer {
        Ok(w) => w,
        Err(e) => {
            stop_powers(powers).await;
            return Err(e);
        }
    };
    if !powers.is_empty() {
        writer.manifest_mut().power = powers.iter().map(|(d, p)| p.info(Some(d))).collect();
        if let Err(e) = writer.save_manifest() {
            stop_powers(powers).await;
            return Err(e.into());
        }
    }
    // Set once per run; a second set (none happens) would change nothing.
    let _ = opts.folder.set(writer.dir().to_path_buf());
    tracing::info!(
        target: crate::PROGRESS_TARGET,
        "qexp: run {} → {} ({} deployments × {trials} blocks, {} order)",
        writer.manifest().run_id,
        writer.dir().display(),
        opts.plan.deployments().len(),
        opts.plan.order().as_str(),
    );
    let stop = Stop::following(&cancel);
    let mut fleet = Fleet::new(&opts, conn, writer.dir().to_path_buf());
    let outcome = run_cells(
        &opts,
        &points,
        trials,
        &mut writer,
        &mut fleet,
        (&stop, &powers),
    )
    .await;
    // Every server still up is stopped, whatever the outcome.
    fleet.stop_all(&mut writer).await;
    stop_powers(powers).await;
    finish(writer, outcome, &cancel, fleet.failures())
}

/// Measures every cell of the recorded schedule that is not complete yet.
async fn run_cells(
    opts: &RunOptions,
    points: &[Point],
    trials: u32,
    writer: &mut RunWriter,
    fleet: &mut Fleet<'_>,
    (stop, powers): (&Stop, &Powers),
) -> Result<Vec<OverTolerance>, RunError> {
    let cancel = stop.receiver();
    let cells = writer.manifest().schedule.clone();
    let mut over_tolerance = Vec::new();
    for (i, cell) in cells.iter().enumerate() {
        if *cancel.borrow() {
            break;
        }
        let order = writer
            .manifest()
            .point_order
            .get(cell.block as usize - 1)
            .cloned()
            .unwrap_or_default();
        let todo: Vec<(u32, u32)> = order
            .iter()
            .enumerate()
            .filter(|(_, &pid)| {
                points[pid as usize].deployment.as_deref() == Some(cell.deployment.as_str())
            })
            .map(|(pos, &pid)| (pos as u32, pid))
            .filter(|&(_, pid)| !writer.is_complete(cell.block, pid))
            .collect();
        if todo.is_empty() || fleet.has_failed(&cell.deployment) {
            continue;
        }
        let again = cells[i + 1..]
            .iter()
            .any(|c| c.deployment == cell.deployment);
        let Some(live) = fleet
            .acquire(&cell.deployment, cell.block, writer, &cancel)
            .await?
        else {
            continue;
        };
        let result = measure_cell(
            opts,
            points,
            trials,
            writer,
            live,
            (stop, powers.get(&cell.deployment)),
            cell.block,
            &todo,
        )
        .await;
        fleet
            .check_exited(&cell.deployment, cell.block, "exited during", writer)
            .await?;
        fleet.release(&cell.deployment, again, writer).await;
        over_tolerance.extend(result?);
    }
    Ok(over_tolerance)
}

/// Measures the `todo` (position, point id) pairs of one cell on `live`.
#[allow(clippy::too_many_arguments)]
async fn measure_cell(
    opts: &RunOptions,
    points: &[Point],
    trials: u32,
    writer: &mut RunWriter,
    live: &Live,
    (stop, power): (&Stop, Option<&Power>),
    block: u32,
    todo: &[(u32, u32)],
) -> Result<Vec<OverTolerance>, RunError> {
    let cancel = stop.receiver();
    let backend = Arc::new(live.target.client.clone());
    let mut runner = point_runner(
        opts,
        &live.prep,
        writer,
        backend,
        stop,
        trials,
        Some(live.tag.clone()),
    );
    runner.server = live.liveness();
    runner.power = power;
    for &(pos, pid) in todo {
        if *cancel.borrow() || runner.server_died {
            break;
        }
        runner
            .run(writer, block, pos, &points[pid as usize])
            .await?;
    }
    Ok(runner.over_tolerance)
}

/// Each deployment's GPU sampler (`[power]`), by deployment name.
type Powers = std::collections::BTreeMap<String, Power>;

/// Starts every deployment's sampler before anything is launched or
/// measured; a required source that cannot be read stops the run here
/// (the samplers already started are stopped).
async fn start_powers(opts: &RunOptions) -> Result<Powers, RunError> {
    let mut out = Powers::new();
    for d in opts.plan.deployments() {
        match crate::power::start(&opts.plan.file, Some(d)).await {
            Ok(Some(p)) => {
                out.insert(d.name().to_string(), p);
            }
            Ok(None) => {}
            Err(e) => {
                stop_powers(out).await;
                return Err(e);
            }
        }
    }
    Ok(out)
}

async fn stop_powers(powers: Powers) {
    for (_, p) in powers {
        p.stop().await;
    }
}

/// The manifest of a new run with deployments: the schedule and each
/// block's point order drawn now (and kept by `--resume`), the target
/// fields naming the deployments (what each start said about itself is
/// recorded per deployment as the run goes).
fn new_manifest(opts: &RunOptions, points: &[Point], trials: u32) -> Manifest {
    let plan = &opts.plan;
    let f = &plan.file;
    let names: Vec<String> = plan
        .deployments()
        .iter()
        .map(|d| d.name().to_string())
        .collect();
    let cells = schedule(plan.order(), trials, &names, f.run.seed);
    let point_order = block_orders(opts, &cells, points, trials);
    let host = qexp_provenance::host_info();
    let model = f.target.model.clone().unwrap_or_default();
    let target = TargetInfo {
        // The servers are the manifest's deployments, each with its own.
        base_url: String::new(),
        model: model.clone(),
        api: f.target.api,
        simulated: false,
        sim_profile: None,
        sim_time_scale: None,
        api_key_env: f.target.api_key_env.clone(),
    };
    let comparability = run_comparability(opts, &model, &host);
    Manifest {
        point_order,
        deployments: deployment_runs(opts),
        schedule: cells,
        order: Some(plan.order()),
        restart: Some(plan.restart()),
        baseline: plan.baseline().map(str::to_string),
        ..base_manifest(opts, points, trials, target, host, comparability)
    }
}

/// Each block's point order: its cells in schedule order, each cell's
/// points in the order drawn for it.
fn block_orders(
    opts: &RunOptions,
    cells: &[ScheduleCell],
    points: &[Point],
    trials: u32,
) -> Vec<Vec<u32>> {
    let run = &opts.plan.file.run;
    (1..=trials)
        .map(|b| {
            cells
                .iter()
                .filter(|c| c.block == b)
                .flat_map(|c| cell_points(points, &c.deployment, b, run.seed, run.shuffle))
                .collect()
        })
        .collect()
}

/// What must match for another run to compare with this one, before any
/// deployment has said what it is (no fingerprint, no server info yet).
fn run_comparability(opts: &RunOptions, model: &str, host: &HostInfo) -> Comparability {
    let plan = &opts.plan;
    let extra = match serde_json::to_value(&plan.file.target.extra_body) {
        Ok(serde_json::Value::Object(m)) => m,
        _ => serde_json::Map::new(),
    };
    let fingerprint = qexp_client::Fingerprint::default();
    let info = qexp_client::ServerInfo::default();
    comparability(
        plan,
        None,
        model,
        workload(plan, &extra, None),
        &fingerprint,
        &info,
        host,
    )
}

/// One record per deployment of the plan, with nothing started yet.
fn deployment_runs(opts: &RunOptions) -> Vec<DeploymentRun> {
    let f = &opts.plan.file;
    opts.plan
        .deployments()
        .iter()
        .map(|d| DeploymentRun {
            name: d.name().to_string(),
            hash: d.hash(),
            launched: d.is_launched(),
            base_url: d.base_url.as_ref().map(|u| u.get_ref().clone()),
            labels: d.labels.clone(),
            model: d.model.clone().or_else(|| f.target.model.clone()),
            fingerprint: None,
            starts: Vec::new(),
            failures: Vec::new(),
        })
        .collect()
}
