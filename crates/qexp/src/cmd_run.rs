//! `qexp run`: a plan measured, with progress, Ctrl-C and the summary at
//! the end.

use crate::{cmd_report, summary, CliError, RunArgs};
use anyhow::Context as _;
use qexp_plan::Plan;
use qexp_runner::{
    Cancel, RendezvousOptions, ResumeOptions, RunError, RunOptions, Shard, ShardOptions,
    JOB_INDEX_ENV,
};
use qexp_store::Overrides;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

/// Exit code when a second Ctrl-C/SIGTERM ends qexp at once (128 + SIGINT).
const EXIT_ABORTED: i32 = 130;

/// `qexp run`: returns the exit code (0 complete, 1 interrupted, 3 complete
/// with more failures than the plan tolerates).
pub(crate) async fn run(args: RunArgs) -> Result<u8, CliError> {
    let cancel = watch_signals();
    let job = match (&args.resume, &args.plan) {
        (Some(dir), _) => Job::Resume(ResumeOptions {
            dir: dir.clone(),
            force: args.force,
            target: args.target.clone(),
        }),
        (None, Some(plan)) if args.dry_run => return dry_run(&options(&args, plan)?),
        (None, Some(plan)) => Job::Run(Box::new(options(&args, plan)?)),
        // clap requires one of the two.
        (None, None) => {
            return Err(CliError::input(anyhow::anyhow!(
                "give a plan, or --resume RUN_DIR"
            )))
        }
    };
    let follow = match &args.upload {
        Some(url) => Some(follow(url, &job, args.upload_every).await?),
        None => None,
    };
    let result = match job {
        Job::Resume(r) => qexp_runner::resume(r, cancel).await,
        Job::Run(o) => qexp_runner::run(*o, cancel).await,
    };
    // The last upload, whatever the run's outcome: a run that failed still
    // leaves what it measured in the store.
    let uploaded = match (follow, &args.upload) {
        (Some(f), Some(url)) => crate::cmd_objstore::finish(f, url).await,
        _ => Ok(()),
    };
    let result = result.map_err(run_error);
    let result = match (result, &uploaded) {
        (Ok(r), _) => r,
        (Err(e), Err(_)) => {
            // Both said: the run's failure is the exit code.
            say_upload(&uploaded);
            return Err(e);
        }
        (Err(e), Ok(())) => return Err(e),
    };
    let analysis = qexp_analysis::analyze(&result.dir)
        .with_context(|| {
            format!(
                "the run is saved in {}, but cannot be summarised",
                result.dir.display()
            )
        })
        .map_err(CliError::failure)
        .inspect_err(|_| say_upload(&uploaded))?;
    eprintln!();
    println!("{}", summary::table(&analysis));
    for line in summary::flag_lines(&analysis) {
        println!("{line}");
    }
    if !args.no_report {
        cmd_report::render_one(&analysis, None, &args.reports)
            .map_err(CliError::failure)
            .inspect_err(|_| say_upload(&uploaded))?;
        refresh_index(&result.dir, &args.reports);
    }
    let code = said_at_the_end(&result);
    uploaded?;
    Ok(code)
}

/// The lines after the summary (the results folder, failures over the
/// tolerance, deployments that failed, how to finish an incomplete run)
/// and the exit code they come to.
fn said_at_the_end(result: &qexp_runner::RunResult) -> u8 {
    let complete = result.manifest.status == qexp_store::RunStatus::Complete;
    println!("results: {}", result.dir.display());
    for line in &result.over_tolerance {
        eprintln!("qexp: over the failure tolerance: {line}");
    }
    for line in &result.failed_deployments {
        eprintln!("qexp: {line}");
    }
    if !complete {
        println!(
            "the run is incomplete; finish it with: qexp run --resume {}",
            result.dir.display()
        );
    }
    if !complete {
        crate::EXIT_FAILURE
    } else if !result.over_tolerance.is_empty() {
        crate::EXIT_OVER_TOLERANCE
    } else {
        0
    }
}

/// Starts following the run's folder into the object store at `url`.
async fn follow(url: &str, job: &Job, every_s: f64) -> Result<qexp_objstore::Follow, CliError> {
    let (experiment, folder) = job.followed()?;
    let fresh = job.fresh_folder();
    crate::cmd_objstore::follow(url, &experiment, fresh.as_deref(), folder, every_s).await
}

/// A run's error as the command's: bad input (nothing was sent, or the run
/// to resume is not resumable) exits 2, anything else 1.
fn run_error(e: RunError) -> CliError {
    match e {
        RunError::Target(_)
        | RunError::SimProfile(_)
        | RunError::MissingApiKey(_)
        | RunError::MissingHeaderEnv { .. }
        | RunError::ContextTooSmall { .. }
        | RunError::NoEndpoint { .. }
        | RunError::TooManyImages { .. }
        | RunError::Dataset(_)
        | RunError::DatasetImagesNotChat { .. }
        | RunError::DatasetTooManyImages { .. }
        | RunError::Plan(_)
        | RunError::ResumeRefused { .. }
        | RunError::Shard(_)
        | RunError::PowerRequired { .. }
        | RunError::Store(
            qexp_store::StoreError::NotARun { .. }
            | qexp_store::StoreError::NewerSchema { .. }
            | qexp_store::StoreError::Locked { .. },
        ) => CliError::input(e),
        other => CliError::failure(other),
    }
}

/// The workspace index under `reports`, refreshed after the run's report
/// as `qexp report` writes it. A failure is said in one line and does not
/// fail the run: its results and report are saved by then.
fn refresh_index(run: &Path, reports: &Path) {
    // A run folder is <results root>/<experiment>/<run folder>, resumed or new.
    let Some(results) = run.parent().and_then(Path::parent) else {
        return;
    };
    let metric = qexp_analysis::history::DEFAULT_METRIC;
    if let Err(e) = cmd_report::write_index(results, reports, metric, None) {
        eprintln!(
            "qexp: warning: the index {} is not refreshed ({}); `qexp report` writes it",
            reports.join("index.html").display(),
            crate::one_sentence(&e)
        );
    }
}

/// A failed upload, said before another error ends `qexp run`.
fn say_upload(uploaded: &Result<(), CliError>) {
    if let Err(u) = uploaded {
        eprintln!("qexp: {:#}", u.error);
    }
}

/// A new run, or a run to resume.
enum Job {
    Run(Box<RunOptions>),
    Resume(ResumeOptions),
}

impl Job {
    /// A new shard's folder name, known before it starts (its run id is
    /// given); None for a resume, and for a new run, whose id is new.
    fn fresh_folder(&self) -> Option<String> {
        match self {
            Job::Run(o) => o
                .shard
                .as_ref()
                .map(|s| qexp_store::shard_folder_name(&s.run_id, s.shard.index, s.shard.count)),
            Job::Resume(_) => None,
        }
    }

    /// The experiment and the cell that will name the run folder, for
    /// `--upload` (a resumed run's folder is known already).
    fn followed(&self) -> Result<(String, Arc<OnceLock<PathBuf>>), CliError> {
        match self {
            Job::Run(o) => Ok((o.plan.name().to_string(), Arc::clone(&o.folder))),
            Job::Resume(r) => {
                let m = qexp_store::read_manifest(&r.dir).map_err(CliError::input)?;
                Ok((m.experiment, Arc::new(OnceLock::from(r.dir.clone()))))
            }
        }
    }
}

/// `qexp run --dry-run`: what the run would do, with nothing started.
fn dry_run(opts: &RunOptions) -> Result<u8, CliError> {
    let plan = &opts.plan;
    let trials = opts.overrides.trials.unwrap_or(plan.trials());
    let points = plan.points();
    if plan.deployments().is_empty() {
        println!(
            "{} points × {trials} trials against {}",
            points.len(),
            plan.target(opts.overrides.target.as_deref())
                .map_err(CliError::input)?
        );
    } else {
        print!("{}", qexp_runner::blocks::describe(plan, trials));
        print_launches(opts);
    }
    for p in plan.points().iter().take(50) {
        println!(
            "  point {}: {} ({} requests, {} warmup)",
            p.id,
            p.label(),
            p.requests,
            p.warmup
        );
    }
    if points.len() > 50 {
        println!("  … {} more points", points.len() - 50);
    }
    Ok(0)
}

/// Each deployment's command as a start would run it (PORT where each start
/// picks a free port, RUN_ID for the id the run gets), or where it already
/// runs.
fn print_launches(opts: &RunOptions) {
    let (mut auto_port, mut run_id) = (false, false);
    for d in opts.plan.deployments() {
        match (&d.command, &d.base_url) {
            (Some(_), _) => match qexp_runner::launch_preview(d, opts) {
                Ok(argv) => {
                    let fixed = d.port.as_ref().and_then(|p| p.get_ref().fixed());
                    auto_port |= fixed.is_none() && argv.iter().any(|a| a.contains("PORT"));
                    run_id |= argv.iter().any(|a| a.contains("RUN_ID"));
                    println!("  {}: launch {}", d.name(), argv.join(" "));
                }
                Err(e) => println!(
                    "  {}: cannot launch: {}",
                    d.name(),
                    qexp_types::error::chain(&e)
                ),
            },
            (None, Some(u)) => println!("  {}: already running at {}", d.name(), u.get_ref()),
            (None, None) => {}
        }
    }
    let notes: Vec<&str> = [
        (auto_port, "PORT: a free port, picked at each start"),
        (run_id, "RUN_ID: the id the run gets when it starts"),
    ]
    .into_iter()
    .filter_map(|(shown, note)| shown.then_some(note))
    .collect();
    if !notes.is_empty() {
        println!("  ({})", notes.join("; "));
    }
}

/// The runner's options for a new run of `plan`.
fn options(args: &RunArgs, plan: &std::path::Path) -> Result<RunOptions, CliError> {
    let plan = Plan::load(plan).map_err(CliError::input)?;
    if plan.deployments().is_empty() {
        // Bad input found before anything starts (an upload, a dry run).
        plan.target(args.target.as_deref())
            .map_err(CliError::input)?;
    }
    if args.trials == Some(0) {
        return Err(CliError::input(anyhow::anyhow!(
            "--trials must be at least 1"
        )));
    }
    Ok(RunOptions {
        plan,
        out: args.out.clone(),
        overrides: Overrides {
            trials: args.trials,
            target: args.target.clone(),
            model: args.model.clone(),
        },
        shard: shard_options(args)?,
        folder: Default::default(),
    })
}

/// `--shard`, `--run-id` and `--rendezvous` as the runner takes them.
fn shard_options(args: &RunArgs) -> Result<Option<ShardOptions>, CliError> {
    let Some(spec) = &args.shard else {
        return Ok(None);
    };
    let job_index = std::env::var(JOB_INDEX_ENV).ok();
    let shard = Shard::parse(spec, job_index.as_deref()).map_err(CliError::input)?;
    // clap requires --run-id with --shard.
    let run_id = args.run_id.clone().unwrap_or_default();
    let id_ok = !run_id.is_empty()
        && run_id.len() <= 100
        && run_id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
        && !run_id.starts_with('.');
    if !id_ok {
        return Err(CliError::input(anyhow::anyhow!(
            "--run-id `{run_id}`: use letters, digits, `.`, `_` and `-` only (it names the run's folder)"
        )));
    }
    let seconds = |name: &str, v: f64| match std::time::Duration::try_from_secs_f64(v) {
        Ok(d) if v > 0.0 => Ok(d),
        _ => Err(CliError::input(anyhow::anyhow!(
            "--{name} {v}: give a number of seconds above 0"
        ))),
    };
    let lost_after = seconds("shard-lost-after", args.shard_lost_after)?;
    let join_timeout = seconds("shard-join-timeout", args.shard_join_timeout)?;
    if !args.clock_skew_s.is_finite() {
        return Err(CliError::input(anyhow::anyhow!(
            "--clock-skew-s must be finite"
        )));
    }
    Ok(Some(ShardOptions {
        shard,
        run_id,
        rendezvous: args.rendezvous.as_ref().map(|addr| RendezvousOptions {
            addr: addr.clone(),
            bind: args.rendezvous_bind.clone(),
            lost_after,
            join_timeout,
        }),
        clock_skew_s: args.clock_skew_s,
        clock_offset_s: 0.0,
    }))
}

/// Ctrl-C or SIGTERM raises the flag the runner watches; a second one ends
/// the process at once. Every file qexp writes is appended line by line or
/// renamed into place whole, so exiting at any moment leaves readable files.
fn watch_signals() -> Cancel {
    let (tx, rx) = tokio::sync::watch::channel(false);
    tokio::spawn(async move {
        if next_signal().await {
            eprintln!(
                "\nqexp: interrupted — no new requests; those in flight get {} s, then everything \
                 is saved; Ctrl-C again to exit at once",
                qexp_runner::STOP_GRACE.as_secs()
            );
            let _ = tx.send(true);
            if next_signal().await {
                eprintln!("qexp: exiting at once; what reached the run folder stays readable");
                std::process::exit(EXIT_ABORTED);
            }
        }
    });
    rx
}

/// Waits for Ctrl-C or SIGTERM; false when signals cannot be watched.
async fn next_signal() -> bool {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        let Ok(mut term) = signal(SignalKind::terminate()) else {
            return tokio::signal::ctrl_c().await.is_ok();
        };
        tokio::select! {
            c = tokio::signal::ctrl_c() => c.is_ok(),
            t = term.recv() => t.is_some(),
        }
    }
    #[cfg(not(unix))]
    {
        tokio::signal::ctrl_c().await.is_ok()
    }
}
