//! The top of the crate: loads a run's Parquet files, computes per-(trial,
//! point) metrics with polars (cross-trial statistics are then plain Rust
//! over a few numbers), and builds the [`RunAnalysis`], running every
//! detector and the deployment comparison.

use crate::anomaly::{self, Thresholds};
use crate::columns::{f64s, u32s, F};
use crate::error::AnalysisError;
use crate::metrics::{PointSummary, TrialMetrics};
use crate::reasoning::ReasoningSummary;
use crate::run::RunAnalysis;
use crate::schedule::ScheduleAnalysis;
use crate::trial_frames::TrialFrames;
use crate::turns::TurnSummary;
use polars::prelude::*;
use qexp_store::{points as pt, scan_points, scan_requests, Manifest};
use qexp_types::ServerCounter;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

impl RunAnalysis {
    /// A run's analysis from its per-point, per-turn and reasoning summaries
    /// and its schedule analysis: thresholds from its recorded plan (defaults, with
    /// the reason, when it no longer parses), then every anomaly detector.
    pub fn new(
        dir: PathBuf,
        manifest: Manifest,
        points: Vec<PointSummary>,
        turns: Vec<TurnSummary>,
        reasoning: Vec<ReasoningSummary>,
        schedule: Option<ScheduleAnalysis>,
    ) -> RunAnalysis {
        let (thresholds, threshold_source, plan) =
            Thresholds::of_recorded_plan(&manifest.plan_path, &manifest.plan_text);
        let threshold_rows = thresholds.rows_for(plan.as_ref());
        let description =
            qexp_plan::raw_str(&manifest.plan_text, "experiment.description").unwrap_or_default();
        let mut run = RunAnalysis {
            dir,
            manifest,
            points,
            description,
            thresholds,
            threshold_source,
            threshold_rows,
            flags: Vec::new(),
            turns,
            reasoning,
            schedule,
            deployments: None,
            accuracy_by_load: Vec::new(),
            equivalence: Vec::new(),
            failures: Vec::new(),
            distributions: Vec::new(),
            classes: crate::classes::ClassAnalysis::default(),
        };
        let defaults = crate::DiffOptions::default();
        run.accuracy_by_load =
            crate::accuracy::by_load(&run.points, defaults.alpha, defaults.level);
        // The schedule's flags need `run.schedule`, so they run on the whole value.
        run.flags = anomaly::detect(&run, &run.thresholds);
        // The comparison's verdicts use the plan's threshold, which the plan's
        // validation holds to what the diff accepts; a deployment the diff
        // still refuses is left out with a warning that the report shows.
        run.deployments =
            crate::deployments::compare_deployments(&run, &crate::DiffOptions::default());
        run
    }
}

/// Request rows read at a time: four row groups of a merged file (about a
/// million rows; 16 chunk offsets each are 128 MB).
pub const ITL_BATCH_ROWS: usize = 4 * 512 * 512;

/// Reads a run folder and summarises every point across trials.
pub fn analyze(dir: &Path) -> Result<RunAnalysis, AnalysisError> {
    analyze_in_batches(dir, ITL_BATCH_ROWS)
}

/// [`analyze`], reading request rows `batch_rows` at a time (tests use
/// small batches to cross batch boundaries).
#[doc(hidden)]
pub fn analyze_in_batches(dir: &Path, batch_rows: usize) -> Result<RunAnalysis, AnalysisError> {
    analyze_bounded(dir, batch_rows, crate::stats::select::HELD_MAX).map(|(run, _)| run)
}

/// [`analyze_in_batches`], each exact percentile's selection holding at
/// most `held_max` values (tests use a small one to make it read a
/// (trial, point) more than twice), with the number of reads of the
/// request rows it took (the count read included).
#[doc(hidden)]
pub fn analyze_bounded(
    dir: &Path,
    batch_rows: usize,
    held_max: usize,
) -> Result<(RunAnalysis, usize), AnalysisError> {
    let manifest = qexp_store::read_manifest(dir)?;
    let q = |source| AnalysisError::Query {
        path: dir.to_path_buf(),
        source,
    };
    let schema = scan_requests(dir)?.collect_schema().map_err(q)?;
    let mut counted = crate::pass::count(dir, &schema, batch_rows)?;
    let graded = std::mem::take(&mut counted.graded);
    let mut frames = TrialFrames::new(&schema, &counted, &manifest, held_max);
    let mut reads = 1;
    while let Some(columns) = frames.next_read() {
        reads += 1;
        crate::pass::read(
            dir,
            schema.contains(qexp_store::requests::ITEM_ID),
            &counted.rows,
            &columns,
            batch_rows,
            |key, piece| match piece {
                Some(rows) => frames.add(key, rows),
                None => frames.end(key),
            },
        )?;
    }
    let mut by_key = frames.request_metrics();
    for ((trial, point), g) in graded {
        by_key
            .entry((point, trial))
            .or_insert_with(|| TrialMetrics::without_requests(trial, point))
            .graded = g;
    }
    let with_rows = add_point_rows(dir, &mut by_key)?;
    add_energies(dir, &manifest, &mut by_key)?;
    mark_journal_only(&mut by_key, &with_rows, &manifest);
    if !manifest.target.api.streams() {
        // Nothing is generated: no output throughput (never a fake zero).
        by_key.values_mut().for_each(|m| m.agg_tok_s = f64::NAN);
    }
    let summaries = manifest
        .points
        .iter()
        .map(|p| {
            let trials: Vec<TrialMetrics> = by_key
                .range((p.id, 0)..=(p.id, u32::MAX))
                .map(|(_, m)| m.clone())
                .collect();
            PointSummary::new(p.clone(), trials)
        })
        .collect();
    let schedule = frames.schedule();
    let (turns, reasoning, failures) = frames.summaries().map_err(q)?;
    let mut run = RunAnalysis::new(
        dir.to_path_buf(),
        manifest,
        summaries,
        turns,
        reasoning,
        schedule,
    );
    anomaly::failures::name_classes(&mut run.flags, &failures);
    run.failures = failures;
    run.equivalence = crate::equivalence::of_run(dir, &run.manifest, run.deployments.as_ref())?;
    run.classes = crate::classes::of_run(dir, &run.manifest)?;
    let ids: Vec<u32> = run.manifest.points.iter().map(|p| p.id).collect();
    run.distributions = frames.distributions(&ids);
    Ok((run, reads))
}

/// Fills in each (trial, point)'s energy where the run measured power,
/// from its own prompt tokens and throughput.
fn add_energies(
    dir: &Path,
    manifest: &qexp_store::Manifest,
    by_key: &mut BTreeMap<(u32, u32), TrialMetrics>,
) -> Result<(), AnalysisError> {
    let energies = crate::energy::of_points(dir, manifest, |key| {
        by_key.get(&key).map(|m| crate::energy::Measured {
            prompt_tokens_ok: m.prompt_tokens_ok,
            agg_tok_s: m.agg_tok_s,
        })
    })?;
    for (key, e) in energies {
        if let Some(m) = by_key.get_mut(&key) {
            m.energy = Some(e);
        }
    }
    Ok(())
}

/// Fills in what the point rows hold: aggregate tok/s, send lag, the
/// runner's invalid reason and every declared server counter. A counter
/// column that a run made before the counter existed lacks reads as absent.
fn add_point_rows(
    dir: &Path,
    by_key: &mut BTreeMap<(u32, u32), TrialMetrics>,
) -> Result<BTreeSet<(u32, u32)>, AnalysisError> {
    let q = |source| AnalysisError::Query {
        path: dir.to_path_buf(),
        source,
    };
    let mut scan = scan_points(dir)?;
    let schema = scan.collect_schema().map_err(q)?;
    let counters: Vec<(ServerCounter, String)> = ServerCounter::ALL
        .into_iter()
        .map(|c| (c, qexp_store::server_column(c)))
        .collect();
    // Columns a run made before they existed lacks read as NaN.
    let or_nan = |name: &str| {
        if schema.contains(name) {
            col(name).cast(F)
        } else {
            lit(f64::NAN).alias(name)
        }
    };
    let mut select = vec![
        col(pt::TRIAL),
        col(pt::POINT_ID),
        col(pt::AGG_OUTPUT_TOK_S).cast(F),
        col(pt::SEND_LAG_MAX_S).cast(F),
        col(pt::WINDOW_START_UNIX_S).cast(F),
        col(pt::WINDOW_END_UNIX_S).cast(F),
        or_nan(pt::CLIENT_LOOP_LAG_P99_S),
        or_nan(pt::CLIENT_CPU_CORES),
        col(pt::INVALID_REASON),
    ];
    select.extend(counters.iter().map(|(_, name)| or_nan(name)));
    let points = scan.select(select).collect().map_err(q)?;
    let ptrial = u32s(&points, pt::TRIAL).map_err(q)?;
    let ppid = u32s(&points, pt::POINT_ID).map_err(q)?;
    let agg = f64s(&points, pt::AGG_OUTPUT_TOK_S).map_err(q)?;
    let lag = f64s(&points, pt::SEND_LAG_MAX_S).map_err(q)?;
    let window_start = f64s(&points, pt::WINDOW_START_UNIX_S).map_err(q)?;
    let window_end = f64s(&points, pt::WINDOW_END_UNIX_S).map_err(q)?;
    let loop_lag = f64s(&points, pt::CLIENT_LOOP_LAG_P99_S).map_err(q)?;
    let cores = f64s(&points, pt::CLIENT_CPU_CORES).map_err(q)?;
    let server = counters
        .iter()
        .map(|(c, name)| Ok((*c, f64s(&points, name)?)))
        .collect::<PolarsResult<Vec<_>>>()
        .map_err(q)?;
    let invalid = points
        .column(pt::INVALID_REASON)
        .and_then(|c| c.str().cloned())
        .map_err(q)?;
    let mut with_rows = BTreeSet::new();
    for i in 0..points.height() {
        with_rows.insert((ppid[i], ptrial[i]));
        let m = by_key
            .entry((ppid[i], ptrial[i]))
            .or_insert_with(|| TrialMetrics::without_requests(ptrial[i], ppid[i]));
        m.agg_tok_s = agg[i];
        m.send_lag_max_s = lag[i];
        m.window_start_unix_s = window_start[i];
        m.window_s = window_end[i] - window_start[i];
        m.client_loop_lag_p99_s = loop_lag[i];
        m.client_cpu_cores = cores[i];
        m.invalid_reason = invalid.get(i).map(str::to_string);
        m.server = server
            .iter()
            .filter(|(_, v)| v[i].is_finite())
            .map(|(c, v)| (*c, v[i]))
            .collect();
    }
    Ok(with_rows)
}

/// A (trial, point) whose requests survive only in the journal (qexp was
/// killed or crashed while it ran, so no point row was written) is marked
/// invalid like a point an interrupt cut: its numbers cover only the
/// requests that finished before the end.
fn mark_journal_only(
    by_key: &mut BTreeMap<(u32, u32), TrialMetrics>,
    with_rows: &BTreeSet<(u32, u32)>,
    manifest: &Manifest,
) {
    for (key, m) in by_key.iter_mut() {
        if with_rows.contains(key) {
            continue;
        }
        let planned = manifest
            .points
            .iter()
            .find(|p| p.id == key.0)
            .map_or(0, |p| p.requests);
        m.invalid_reason = Some(format!(
            "the run stopped during this point (qexp was killed or crashed): only its journal \
             survived, with {} of {planned} measured requests; `qexp run --resume` measures it again",
            m.requests
        ));
    }
}
