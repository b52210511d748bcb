use crate::backend::Backend;
use crate::comparability::{comparability, workload};
use crate::error::RunError;
use crate::health::Probe;
use crate::journaling::{all_finished, Journaling};
use crate::open_loop::{run_open_loop, OpenLoopSpec};
use crate::preflight::check_context;
use crate::progress::PointProgress;
use crate::record::{point_row, request_row, Context};
use crate::resume::{ResumeOptions, Resuming};
use crate::scheduler::{run_closed_loop, Job};
use crate::session::{plan_turns, run_sessions};
use crate::stop::Stop;
use crate::target::{resolve_target, Target};
use crate::timer::Timer;
use crate::workload::Prompts;
use crate::Cancel;
use chrono::Utc;
use qexp_client::prompt::Filler;
use qexp_client::{
    calibrate, nonce_for, Api, Calibration, Counter, ErrorClass, Fingerprint, GenRequest,
    MetricsSource, ServerCounters, ServerInfo, Timeouts,
};
use qexp_plan::{Plan, Point, Trace};
use qexp_store::{Manifest, RunStatus, RunWriter, TargetInfo, SCHEMA_VERSION};
use rand::seq::SliceRandom;
use rand::{rngs::StdRng, SeedableRng};
use serde_json::{Map, Value};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

/// What `qexp run` was asked to do.
#[derive(Debug, Clone)]
pub struct RunOptions {
    /// The validated plan.
    pub plan: Plan,
    /// `--trials`, overriding the plan.
    pub trials: Option<u32>,
    /// `--target`, overriding the plan's base URL.
    pub target: Option<String>,
    /// `--model`, overriding the plan's model.
    pub model: Option<String>,
    /// Results root (`results/` by default).
    pub out: PathBuf,
    /// The overrides as typed, for the manifest.
    pub overrides: BTreeMap<String, String>,
}

/// A finished (or interrupted) run.
#[derive(Debug, Clone)]
pub struct RunResult {
    /// The run folder.
    pub dir: PathBuf,
    /// The manifest as saved.
    pub manifest: Manifest,
    /// The (trial, point)s whose failed requests exceeded the plan's
    /// `[tolerance]`, one line each; empty when none did.
    pub over_tolerance: Vec<String>,
}

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
    let t = &opts.plan.file.target;
    let given = opts
        .target
        .clone()
        .unwrap_or_else(|| t.base_url.get_ref().clone());
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
    let target = resolve_target(&given, api_key, timeouts).await?;
    let result = run_on(&opts, &target, resuming, cancel).await;
    target.shutdown().await;
    result
}

struct Prepared {
    model: String,
    api: Api,
    extra: Map<String, Value>,
    filler: Filler,
    calibrations: BTreeMap<u32, Calibration>,
    dataset: Option<crate::dataset::DatasetPrompts>,
    info: ServerInfo,
    fingerprint: Fingerprint,
    metrics: Option<MetricsSource>,
    trace: Option<Trace>,
}

/// The trace a plan replays, read again and checked against the plan's hash.
fn load_trace(opts: &RunOptions) -> Result<Option<Trace>, String> {
    let Some(tref) = opts
        .plan
        .points()
        .into_iter()
        .find_map(|p| p.open_loop.and_then(|o| o.trace))
    else {
        return Ok(None);
    };
    let trace = Trace::load(std::path::Path::new(&tref.path)).map_err(|e| e.to_string())?;
    if trace.sha256 != tref.sha256 {
        return Err(format!(
            "trace {} changed after the plan was loaded; run again",
            tref.path
        ));
    }
    Ok(Some(trace))
}

async fn prepare(opts: &RunOptions, target: &Target) -> Result<Prepared, RunError> {
    let f = &opts.plan.file;
    let metrics_url = f.target.metrics_url.as_ref().map(|m| m.get_ref().as_str());
    let info = qexp_client::probe(&target.client, metrics_url).await?;
    let model = opts
        .model
        .clone()
        .or_else(|| f.target.model.clone())
        .or_else(|| info.models.first().cloned())
        .ok_or_else(|| RunError::NoModel(target.client.base_url().to_string()))?;
    let api = f.target.api;
    let extra = match serde_json::to_value(&f.target.extra_body) {
        Ok(Value::Object(m)) => m,
        _ => Map::new(),
    };
    let points = opts.plan.points();
    let fingerprint = Fingerprint::from_info(&info, Some(&model));
    tracing::info!(target: crate::PROGRESS_TARGET, "qexp: server: {}", fingerprint.summary());
    // Before any request that costs the server work: calibration already does.
    check_context(&points, &fingerprint, target.client.base_url())?;
    // A metrics URL the plan names is scraped even if the probe found nothing there yet.
    let metrics = metrics_url
        .or(info.metrics_url.as_deref())
        .map(|u| MetricsSource::new(&target.client, u));
    let max_input = points.iter().map(|p| p.input_tokens).max().unwrap_or(1);
    // Drawn lengths may run past the longest point (up to their clamp).
    let drawn_max = f
        .workload
        .input_lengths
        .as_ref()
        .map_or(0, |l| l.bounds().1.min(max_input.saturating_mul(16)));
    let filler = Filler::new(f.run.seed, max_input.max(drawn_max) as usize + 16);
    let tolerance = *f.workload.input_tolerance.get_ref();
    let mut counter = Counter::new(&target.client, api, &model, &extra);
    let mut calibrations = BTreeMap::new();
    let dataset = match &f.workload.dataset {
        Some(source) => {
            let trials = opts.trials.unwrap_or(opts.plan.trials());
            Some(crate::dataset::prepare(opts, source, &points, trials, &mut counter).await?)
        }
        None => None,
    };
    // Dataset prompts are counted whole; there is no filler to calibrate.
    let lengths = if dataset.is_some() {
        Vec::new()
    } else {
        Prompts::lengths(&f.workload, &points)
    };
    for input in lengths {
        let probe_nonce = nonce_for(f.run.seed, 0, 0, 0, 0);
        let cal = calibrate(&mut counter, &filler, &probe_nonce, input, tolerance)
            .await
            .map_err(|source| RunError::Calibration { input, source })?;
        tracing::info!(
            input,
            units = cal.units,
            measured = cal.measured_tokens,
            "calibrated prompt length"
        );
        calibrations.insert(input, cal);
    }
    Ok(Prepared {
        model,
        api,
        extra,
        filler,
        calibrations,
        dataset,
        info,
        fingerprint,
        metrics,
        trace: load_trace(opts).map_err(RunError::Trace)?,
    })
}

async fn run_on(
    opts: &RunOptions,
    target: &Target,
    resuming: Option<Resuming>,
    cancel: Cancel,
) -> Result<RunResult, RunError> {
    let prep = prepare(opts, target).await?;
    let plan = &opts.plan;
    let points = plan.points();
    let trials = opts.trials.unwrap_or(plan.trials());
    let started_at = Utc::now();
    let run_id = qexp_store::new_run_id(started_at);
    let host = qexp_provenance::host_info();
    let manifest = Manifest {
        schema_version: SCHEMA_VERSION,
        qexp_version: env!("CARGO_PKG_VERSION").to_string(),
        run_id: run_id.clone(),
        experiment: plan.name().to_string(),
        plan_path: plan.path.display().to_string(),
        plan_hash: plan.hash(),
        plan_text: plan.text.clone(),
        overrides: opts.overrides.clone(),
        trials,
        points: points.clone(),
        point_order: Vec::new(),
        target: target_info(opts, target, &prep),
        server: serde_json::to_value(&prep.info).unwrap_or(Value::Null),
        fingerprint: Some(prep.fingerprint.clone()),
        calibration: prep
            .calibrations
            .values()
            .filter_map(|c| serde_json::to_value(c).ok())
            .collect(),
        git: qexp_provenance::git_info(&plan.path),
        comparability: comparability(
            &opts.plan,
            opts.target.as_deref(),
            &prep.model,
            workload(
                &opts.plan,
                &prep.extra,
                prep.dataset.as_ref().map(|d| d.sha256.as_str()),
            ),
            &prep.fingerprint,
            &prep.info,
            &host,
        ),
        host,
        started_at,
        ended_at: None,
        status: RunStatus::Running,
        stop_reason: None,
        resumes: Vec::new(),
        client_timing: Some(target.client.timing().to_string()),
    };
    let mut writer = match resuming {
        None => RunWriter::create(&opts.out, manifest)?,
        Some(r) => r.reopen(&prep.fingerprint, &points, trials)?,
    };
    tracing::info!(
        target: crate::PROGRESS_TARGET,
        "qexp: run {} → {}",
        writer.manifest().run_id,
        writer.dir().display()
    );
    let backend = Arc::new(target.client.clone());
    let stop = Stop::following(&cancel);
    let mut over_tolerance = Vec::new();
    let outcome = run_trials(
        opts,
        &prep,
        &points,
        trials,
        &mut writer,
        backend,
        &stop,
        &mut over_tolerance,
    )
    .await;
    let (status, reason) = match (&outcome, *cancel.borrow()) {
        (Err(e), _) => (RunStatus::Interrupted, Some(e.to_string())),
        (Ok(()), true) => (
            RunStatus::Interrupted,
            Some("interrupted by the user (Ctrl-C or SIGTERM)".into()),
        ),
        (Ok(()), false) => (RunStatus::Complete, None),
    };
    // Even after a failure, merge and record what was written; the first
    // failure is the one reported.
    let finished = writer.finish(status, reason);
    outcome?;
    let dir = finished?;
    let manifest = qexp_store::read_manifest(&dir)?;
    Ok(RunResult {
        dir,
        manifest,
        over_tolerance,
    })
}

#[allow(clippy::too_many_arguments)]
async fn run_trials<B: Backend>(
    opts: &RunOptions,
    prep: &Prepared,
    points: &[Point],
    trials: u32,
    writer: &mut RunWriter,
    backend: Arc<B>,
    stop: &Stop,
    over_tolerance: &mut Vec<String>,
) -> Result<(), RunError> {
    let cancel = stop.receiver();
    let f = &opts.plan.file;
    let run_id = writer.manifest().run_id.clone();
    let host = writer.manifest().host.hostname.clone().unwrap_or_default();
    let salt = u64::from_str_radix(run_id.rsplit('-').next().unwrap_or("0"), 16).unwrap_or(0);
    let tolerance = *f.workload.input_tolerance.get_ref();
    let prompts = Prompts {
        filler: &prep.filler,
        seed: f.run.seed,
        salt,
        shared: f.workload.shared_prefix.as_ref(),
        input_lengths: f.workload.input_lengths.as_ref(),
        output_lengths: f.workload.output_lengths.as_ref(),
        dataset: prep.dataset.as_ref(),
        multi_turn: f.workload.multi_turn.as_ref(),
        trace: prep.trace.as_ref(),
        calibrations: &prep.calibrations,
    };
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
        for (pos, &pid) in order.iter().enumerate() {
            if *cancel.borrow() {
                return Ok(());
            }
            if writer.is_complete(trial, pid) {
                // Resumed: measured already.
                continue;
            }
            let point = &points[pid as usize];
            let units = prep
                .calibrations
                .get(&point.input_tokens)
                .map_or(0, |c| c.units);
            let mut planned = BTreeMap::new();
            let mut make = |index: u32| {
                let (prompt, plan) = prompts.request(trial, point, index);
                planned.insert(index, plan);
                Job {
                    index,
                    request: GenRequest {
                        api: prep.api,
                        model: prep.model.clone(),
                        prompt,
                        max_tokens: plan.output_tokens,
                        extra: prep.extra.clone(),
                        history: None,
                    },
                }
            };
            let ctx = Context {
                run_id: &run_id,
                client_host: &host,
                trial,
                point,
                point_order: pos as u32,
            };
            let label = format!("trial {trial}/{trials} {}", point.label());
            let bar = PointProgress::new(&label, u64::from(point.warmup + point.requests));
            let warm: Vec<Job> = (0..point.warmup).map(&mut make).collect();
            let measured_jobs: Vec<Job> = (point.warmup..point.warmup + point.requests)
                .map(&mut make)
                .collect();
            let plan_of = |f: &crate::Finished| planned.get(&f.index).copied().unwrap_or_default();
            writer.begin_point(trial, pid)?;
            let mut journal = Journaling::new(writer, stop);
            // Warmups run closed-loop, at most as many at once as the point allows.
            let warm_c = match point.concurrency {
                0 => point.warmup.max(1),
                c => c.min(point.warmup.max(1)),
            };
            let warm_done = run_closed_loop(backend.clone(), warm, warm_c, cancel.clone(), |f| {
                bar.inc(f.outcome.error.is_some());
                journal.record(&ctx, f, true, plan_of(f));
            })
            .await;
            let before = match &prep.metrics {
                Some(m) => m.scrape().await,
                None => None,
            };
            let mut on_measured = |f: &crate::Finished| {
                bar.inc(f.outcome.error.is_some());
                journal.record(&ctx, f, false, plan_of(f));
            };
            // As many connections as the point keeps requests in flight
            // (its in-flight cap for an open loop), opened before it is measured.
            let in_flight = match &point.open_loop {
                Some(ol) => ol.max_in_flight.unwrap_or(0),
                None => point.concurrency,
            };
            backend.prepare(in_flight).await;
            let probe = Probe::start();
            let done = match (&f.workload.multi_turn, &point.open_loop) {
                (None, None) => {
                    run_closed_loop(
                        backend.clone(),
                        measured_jobs,
                        point.concurrency,
                        cancel.clone(),
                        &mut on_measured,
                    )
                    .await
                }
                (Some(m), _) => {
                    // Jobs are session-major: a session's turns are consecutive.
                    let sessions = measured_jobs
                        .chunks(m.turns() as usize)
                        .map(<[Job]>::to_vec)
                        .collect();
                    let think = Duration::from_secs_f64(m.think_time_s());
                    let done = run_sessions(
                        backend.clone(),
                        sessions,
                        point.concurrency,
                        think,
                        cancel.clone(),
                        &mut on_measured,
                    )
                    .await;
                    plan_turns(&mut planned, &done);
                    done
                }
                (None, Some(ol)) => {
                    // Arrivals differ per trial and point, yet repeat run to run.
                    let seed = f.run.seed ^ (u64::from(trial) << 32) ^ u64::from(pid);
                    let spec = OpenLoopSpec {
                        offsets: crate::arrivals::offsets(ol, prep.trace.as_ref(), seed),
                        max_in_flight: ol.max_in_flight,
                        timer: Timer::Precise,
                    };
                    let jobs = measured_jobs;
                    run_open_loop(
                        backend.clone(),
                        jobs,
                        spec,
                        cancel.clone(),
                        &mut on_measured,
                    )
                    .await
                }
            };
            let health = probe.finish().await;
            let journal_failure = journal.failure();
            // A later turn's planned length is known only now (plan_turns).
            let plan_of = |f: &crate::Finished| planned.get(&f.index).copied().unwrap_or_default();
            let mut rows: Vec<_> = warm_done
                .iter()
                .map(|w| request_row(&ctx, w, true, plan_of(w)))
                .collect();
            let measured: Vec<_> = done
                .iter()
                .map(|d| request_row(&ctx, d, false, plan_of(d)))
                .collect();
            let mut prow = point_row(&ctx, &measured, units as u32, tolerance);
            prow.client_cpu_cores = health.cpu_cores;
            prow.client_loop_lag_p99_s = health.loop_lag_p99_s;
            if let (Some(m), Some(before)) = (&prep.metrics, before) {
                // Counters are updated as the engine finishes each step; let
                // the last completions land before reading them.
                tokio::time::sleep(Duration::from_millis(METRICS_SETTLE_MS)).await;
                if let Some(after) = m.scrape().await {
                    prow.server = Some(ServerCounters::between(&before, &after));
                }
            }
            rows.extend(measured.iter().cloned());
            let whole =
                all_finished(&warm_done, point.warmup) && all_finished(&done, point.requests);
            if let Some(e) = journal_failure {
                // Keep what can still be kept; the journal's failure is the one to report.
                let _ = writer.write_incomplete_point(&rows, &prow);
                return Err(e.into());
            }
            if whole {
                writer.write_point(&rows, &prow)?;
            } else {
                writer.write_incomplete_point(&rows, &prow)?;
            }
            bar.finish(point_line(&label, &prow, &measured));
            // A point cut by an interrupt counts its cancelled requests as
            // failures; the tolerance judges only whole points.
            if whole && f.tolerance.exceeded(prow.failures, prow.requests_done) {
                over_tolerance.push(format!(
                    "{label}: {} of {} requests failed ({})",
                    prow.failures,
                    prow.requests_done,
                    failure_classes(&measured)
                ));
            }
        }
    }
    Ok(())
}

/// Wait between a point's last completion and its closing metrics scrape.
const METRICS_SETTLE_MS: u64 = 200;

fn point_line(label: &str, p: &qexp_store::PointRow, rows: &[qexp_store::RequestRow]) -> String {
    let mut ttft: Vec<f64> = rows.iter().filter_map(|r| r.ttft_s).collect();
    ttft.sort_by(f64::total_cmp);
    let mid = ttft
        .get(ttft.len() / 2)
        .map_or("-".into(), |t| format!("{t:.3} s"));
    let agg = p.agg_output_tok_s.map_or("-".into(), |a| format!("{a:.1}"));
    let mut line = format!(
        "{label}: {} ok, {} failed, {agg} tok/s aggregate, TTFT ~{mid}",
        p.requests_done - p.failures,
        p.failures
    );
    if let Some(r) = &p.invalid_reason {
        line.push_str(&format!(" — INVALID: {r}"));
    }
    line
}

/// `3 first_byte_timeout, 1 rate_limited`: the failures of some rows by class, most frequent first.
fn failure_classes(rows: &[qexp_store::RequestRow]) -> String {
    let mut counts: BTreeMap<&str, u32> = BTreeMap::new();
    for class in rows
        .iter()
        .filter_map(|r| r.error_class.map(ErrorClass::as_str))
    {
        *counts.entry(class).or_default() += 1;
    }
    let mut counts: Vec<_> = counts.into_iter().collect();
    counts.sort_by_key(|c| std::cmp::Reverse(c.1));
    counts
        .iter()
        .map(|(c, n)| format!("{n} {c}"))
        .collect::<Vec<_>>()
        .join(", ")
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
