//! `run` and `resume`: a plan end to end, from the target's first answer to
//! the last point on disk.

use crate::backend::Backend;
use crate::comparability::{comparability, workload};
use crate::error::{RunError, ShardRefusal};
use crate::options::{base_manifest, connection, finish, RunOptions, RunResult};
use crate::point::{point_runner, PointRunner};
use crate::prepare::{prepare, Prepared};
use crate::resume::{ResumeOptions, Resuming};
use crate::saturation::{PointFigures, Saturation};
use crate::sharded::Meeting;
use crate::stop::Stop;
use crate::target::{resolve_target, Target};
use crate::Cancel;
use qexp_plan::Point;
use qexp_store::{Manifest, RunWriter, TargetInfo};
use rand::seq::SliceRandom;
use rand::{rngs::StdRng, SeedableRng};
use std::sync::Arc;

/// Runs a plan end to end. Nothing is written until the target answers and
/// prompt lengths are calibrated; after that every finished point is on disk.
pub async fn run(opts: RunOptions, cancel: Cancel) -> Result<RunResult, RunError> {
    run_or_resume(opts, None, cancel).await
}

/// Resumes an interrupted or crashed run: measures only the (trial, point)
/// pairs it did not complete, into the same folder.
pub async fn resume(r: ResumeOptions, cancel: Cancel) -> Result<RunResult, RunError> {
    let (opts, resuming) = crate::resume::prepare(&r)?;
    run_or_resume(opts, Some(resuming), cancel).await
}

async fn run_or_resume(
    opts: RunOptions,
    resuming: Option<Resuming>,
    cancel: Cancel,
) -> Result<RunResult, RunError> {
    if !opts.plan.deployments().is_empty() {
        if opts.shard.is_some() {
            return Err(ShardRefusal::Deployments.into());
        }
        return crate::deployed::run(opts, resuming, cancel).await;
    }
    if opts.shard.is_some() && opts.plan.stop_past_saturation() {
        return Err(ShardRefusal::StopPastSaturation.into());
    }
    let given = opts
        .plan
        .target(opts.overrides.target.as_deref())
        .map_err(RunError::Plan)?
        .to_string();
    let refusal = opts
        .shard
        .as_ref()
        .and_then(|s| qexp_plan::in_process::shard_refusal(&given, s.shard.count));
    if let Some(why) = refusal {
        return Err(ShardRefusal::InProcess(why).into());
    }
    let conn = connection(&opts)?;
    let mut target = resolve_target(&given, conn.api_key, conn.timeouts).await?;
    target.client = target.client.redacting(conn.secrets);
    let result = run_on(&opts, &target, resuming, cancel).await;
    target.shutdown().await;
    result
}

async fn run_on(
    opts: &RunOptions,
    target: &Target,
    resuming: Option<Resuming>,
    cancel: Cancel,
) -> Result<RunResult, RunError> {
    let prep = prepare(opts, target, None, None).await?;
    let power = crate::power::start(&opts.plan.file, None).await?;
    let result = run_prepared(opts, target, &prep, power.as_ref(), resuming, cancel).await;
    if let Some(p) = power {
        p.stop().await;
    }
    result
}

/// [`run_on`] once the target is prepared and its GPUs (if any) sampled.
async fn run_prepared(
    opts: &RunOptions,
    target: &Target,
    prep: &Prepared,
    power: Option<&crate::power::Power>,
    resuming: Option<Resuming>,
    cancel: Cancel,
) -> Result<RunResult, RunError> {
    let plan = &opts.plan;
    let points = plan.points();
    let trials = opts.overrides.trials.unwrap_or(plan.trials());
    let host = qexp_provenance::host_info();
    let comparability = comparability(
        &opts.plan,
        opts.overrides.target.as_deref(),
        &prep.model,
        workload(
            &opts.plan,
            &prep.extra,
            prep.dataset.as_ref().map(|d| d.sha256.as_str()),
        ),
        &prep.fingerprint,
        &prep.info,
        &host,
    );
    let target_info = target_info(opts, target, prep);
    let meeting = Meeting::open(
        opts.shard.as_ref(),
        &opts.plan.hash(),
        host.hostname.as_deref(),
    )
    .await?;
    let manifest = Manifest {
        shard: meeting.record(),
        server: Some(prep.info.clone()),
        fingerprint: Some(prep.fingerprint.clone()),
        calibration: prep
            .calibrations
            .values()
            .filter_map(|c| serde_json::to_value(c).ok())
            .collect(),
        client_timing: Some(target.client.client_timing()),
        power: power.map(|p| vec![p.info(None)]).unwrap_or_default(),
        ..base_manifest(opts, &points, trials, target_info, host, comparability)
    };
    let mut writer = match resuming {
        None => RunWriter::create(&opts.out, manifest)?,
        Some(r) => {
            let mut w = r.reopen(&prep.fingerprint, &points, trials)?;
            if let Some(p) = power {
                // The source this resume reads is the one its new points used.
                w.manifest_mut().power = vec![p.info(None)];
                w.save_manifest()?;
            }
            w
        }
    };
    // Set once per run; a second set (none happens) would change nothing.
    let _ = opts.folder.set(writer.dir().to_path_buf());
    tracing::info!(
        target: crate::PROGRESS_TARGET,
        "qexp: run {} → {}",
        writer.manifest().run_id,
        writer.dir().display()
    );
    let backend = Arc::new(target.client.clone());
    let stop = Stop::following(&cancel);
    let outcome = run_trials(
        opts,
        prep,
        (&points, trials),
        &mut writer,
        (backend, meeting, power),
        &stop,
    )
    .await;
    crate::record::record_timing(&mut writer, &target.client);
    finish(writer, outcome, &cancel, Vec::new())
}

/// Runs every (trial, point) of a plan without deployments against one
/// target, in each trial's recorded (or newly drawn) order.
async fn run_trials<B: Backend>(
    opts: &RunOptions,
    prep: &Prepared,
    (points, trials): (&[Point], u32),
    writer: &mut RunWriter,
    (backend, meeting, power): (Arc<B>, Meeting, Option<&crate::power::Power>),
    stop: &Stop,
) -> Result<Vec<crate::OverTolerance>, RunError> {
    let mut runner = point_runner(opts, prep, writer, backend, stop, trials, None);
    runner.meeting = meeting;
    runner.power = power;
    let result = run_pairs(opts, points, trials, writer, &mut runner).await;
    match &result {
        Ok(()) => runner.meeting.end(stop.receiver()).await,
        // A failed shard says so, or the others would wait for it at
        // their next barrier while it waits at the end; shard 0 still
        // serves until the others are done.
        Err(e) => {
            let why = qexp_types::error::chain(e);
            runner.meeting.leave(&why, stop.receiver()).await
        }
    }
    if runner.meeting.note_lost(writer.manifest_mut()) {
        writer.save_manifest()?;
    }
    result.map(|()| runner.over_tolerance)
}

/// Every (trial, point) not yet complete, in each trial's order.
async fn run_pairs<B: Backend>(
    opts: &RunOptions,
    points: &[Point],
    trials: u32,
    writer: &mut RunWriter,
    runner: &mut PointRunner<'_, B>,
) -> Result<(), RunError> {
    let cancel = runner.stop.receiver();
    let f = &opts.plan.file;
    for trial in 1..=trials {
        let order = match writer.manifest().point_order.get(trial as usize - 1) {
            // A resumed run keeps the order each trial started with.
            Some(order) => order.clone(),
            None => {
                let mut order: Vec<u32> = points.iter().map(|p| p.id).collect();
                if f.run.shuffle {
                    order.shuffle(&mut StdRng::seed_from_u64(f.run.seed ^ u64::from(trial)));
                }
                writer.manifest_mut().point_order.push(order.clone());
                writer.save_manifest()?;
                order
            }
        };
        let mut saturation = Saturation::default();
        for (pos, &pid) in order.iter().enumerate() {
            if *cancel.borrow() {
                return Ok(());
            }
            if writer.is_complete(trial, pid)
                || writer.manifest().skipped_past_saturation(trial, pid)
            {
                // Resumed: measured already, or left out past saturation.
                continue;
            }
            let point = &points[pid as usize];
            let figures = runner.run(writer, trial, pos as u32, point).await?;
            if opts.plan.stop_past_saturation() {
                stop_if_saturated(writer, &mut saturation, (trial, point, figures), points)?;
            }
        }
    }
    Ok(())
}

/// `[run] stop_past_saturation`: records the stop in the manifest when
/// `point`'s series is now past saturation, and says so on the terminal.
fn stop_if_saturated(
    writer: &mut RunWriter,
    saturation: &mut Saturation,
    (trial, point, figures): (u32, &Point, PointFigures),
    points: &[Point],
) -> Result<(), RunError> {
    let Some(stop) = saturation.after(trial, point, figures, points) else {
        return Ok(());
    };
    let skipped: Vec<String> = stop
        .skipped
        .iter()
        .filter_map(|&id| points.get(id as usize).map(Point::label))
        .collect();
    eprintln!(
        "trial {trial}: {}; not measuring {}",
        stop.reason,
        skipped.join(", ")
    );
    writer.manifest_mut().saturation_stops.push(stop);
    writer.save_manifest()?;
    Ok(())
}

fn target_info(opts: &RunOptions, target: &Target, prep: &Prepared) -> TargetInfo {
    let f = &opts.plan.file;
    TargetInfo {
        base_url: target.given.clone(),
        model: prep.model.clone(),
        api: f.target.api,
        simulated: target.sim.is_some(),
        sim_profile: target.sim.as_ref().map(|s| s.profile().name.clone()),
        sim_time_scale: target.sim.as_ref().map(|s| s.profile().time_scale),
        api_key_env: f.target.api_key_env.clone(),
    }
}
