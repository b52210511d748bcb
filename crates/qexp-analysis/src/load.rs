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
use crate::stats::quantile_in_place;
use crate::turns::TurnSummary;
use polars::prelude::*;
use qexp_store::{points as pt, requests as rq, scan_points, scan_requests, Manifest};
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
            failures: Vec::new(),
            distributions: Vec::new(),
        };
        // The schedule's flags need `run.schedule`, so they run on the whole value.
        run.flags = anomaly::detect(&run, &run.thresholds);
        // The comparison's verdicts use the plan's threshold; a plan that
        // validated cannot give a bad one, so an error leaves it out.
        run.deployments =
            crate::deployments::compare_deployments(&run, &crate::DiffOptions::default())
                .ok()
                .flatten();
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
    let manifest = qexp_store::read_manifest(dir)?;
    let q = |source| AnalysisError::Query {
        path: dir.to_path_buf(),
        source,
    };
    let schema = scan_requests(dir)?.collect_schema().map_err(q)?;
    let mut frames = TrialFrames::new(&schema);
    let columns: Vec<&str> = REQUEST_COLUMNS
        .iter()
        .copied()
        .filter(|c| schema.contains(c))
        .collect();
    crate::pass::for_each_trial_point(dir, &columns, batch_rows, |key, rows| {
        frames.add(key, rows)
    })?;
    let mut by_key = frames.request_metrics().map_err(q)?;
    let with_rows = add_point_rows(dir, &mut by_key)?;
    mark_journal_only(&mut by_key, &with_rows, &manifest);
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
    let schedule = crate::schedule::for_run(dir, &manifest)?;
    let (turns, reasoning, failures) = frames.summaries().map_err(q)?;
    let mut run = RunAnalysis::new(
        dir.to_path_buf(),
        manifest,
        summaries,
        turns,
        reasoning,
        schedule,
    );
    run.failures = failures;
    let ids: Vec<u32> = run.manifest.points.iter().map(|p| p.id).collect();
    run.distributions = crate::distribution::for_run(dir, &ids)?;
    Ok(run)
}

/// Every request column the per-(trial, point) statistics read; a run made
/// before one existed lacks it, and the statistic that needs it is skipped
/// or falls back (see [`per_trial_frame`]).
const REQUEST_COLUMNS: &[&str] = &[
    rq::ERROR_CLASS,
    rq::ERROR_MESSAGE,
    rq::TPOT_S,
    rq::TTFT_S,
    rq::E2E_S,
    rq::COMPLETION_TOKENS,
    rq::CLIENT_TOKENS,
    rq::CHUNKS,
    rq::PROMPT_TOKENS,
    rq::CACHED_TOKENS,
    rq::CACHED_TOKENS_EXPECTED,
    rq::FINISH_REASON,
    rq::INPUT_TOKENS_PLANNED,
    rq::INPUT_TOKENS_TARGET,
    rq::OUTPUT_TOKENS_PLANNED,
    rq::OUTPUT_TOKENS_TARGET,
    rq::TTFT_REASONING_S,
    rq::TTFT_ANSWER_S,
    rq::REASONING_CHUNKS,
    rq::TURN,
    rq::CHUNK_OFFSETS_S,
];

/// The per-(trial, point) results of the pass: each (trial, point)'s rows
/// are summarised into these small frames (one row per (trial, point), or
/// per turn or failure class) and the pooled ITL, then dropped.
///
/// This is the one place a per-(trial, point) statistic over requests is
/// computed: a new one (a CDF, a timeline) reads `rows` in [`TrialFrames::add`].
struct TrialFrames {
    schema: Schema,
    per_trial: Vec<DataFrame>,
    reasoning: Vec<DataFrame>,
    turns: Vec<DataFrame>,
    failures: Vec<DataFrame>,
    itl: BTreeMap<(u32, u32), [f64; 3]>,
}

impl TrialFrames {
    fn new(schema: &Schema) -> TrialFrames {
        TrialFrames {
            schema: schema.clone(),
            per_trial: Vec::new(),
            reasoning: Vec::new(),
            turns: Vec::new(),
            failures: Vec::new(),
            itl: BTreeMap::new(),
        }
    }

    /// Summarises one (trial, point)'s measured rows.
    fn add(&mut self, (trial, point): (u32, u32), rows: DataFrame) -> PolarsResult<()> {
        let ok = col(rq::ERROR_CLASS).is_null();
        let lazy = rows.lazy();
        self.per_trial
            .push(per_trial_frame(lazy.clone(), &self.schema, ok.clone()).collect()?);
        // Runs written before reasoning was timed apart have no reasoning columns.
        if self.schema.contains(rq::REASONING_CHUNKS) {
            self.reasoning
                .push(crate::reasoning::reasoning_frame(lazy.clone()).collect()?);
        }
        // Runs written before multi-turn sessions existed have no turns.
        if self.schema.contains(rq::TURN) {
            self.turns
                .push(crate::turns::turn_frame(lazy.clone()).collect()?);
        }
        self.failures
            .push(crate::failures::failure_frame(lazy.clone()).collect()?);
        let ok_rows = lazy
            .filter(ok)
            .select([col(rq::CHUNK_OFFSETS_S)])
            .collect()?;
        self.itl.insert((point, trial), itl_percentiles(&ok_rows)?);
        Ok(())
    }

    /// The request metrics of each (trial, point), keyed by (point, trial).
    fn request_metrics(&self) -> PolarsResult<BTreeMap<(u32, u32), TrialMetrics>> {
        let mut by_key = request_metrics(&stacked(&self.per_trial)?)?;
        for (key, m) in by_key.iter_mut() {
            [m.itl_p50_s, m.itl_p90_s, m.itl_p99_s] =
                self.itl.get(key).copied().unwrap_or([f64::NAN; 3]);
        }
        Ok(by_key)
    }

    /// Per-turn, reasoning and failure summaries over every (trial, point).
    #[allow(clippy::type_complexity)]
    fn summaries(
        &self,
    ) -> PolarsResult<(
        Vec<TurnSummary>,
        Vec<ReasoningSummary>,
        Vec<crate::failures::FailureGroup>,
    )> {
        let turns = match self.turns.is_empty() {
            true => Vec::new(),
            false => crate::turns::turn_summaries(&stacked(&self.turns)?)?,
        };
        let reasoning = match self.reasoning.is_empty() {
            true => Vec::new(),
            false => crate::reasoning::reasoning_summaries(&stacked(&self.reasoning)?)?,
        };
        let failures = match self.failures.is_empty() {
            true => Vec::new(),
            false => crate::failures::failure_groups(&stacked(&self.failures)?)?,
        };
        Ok((turns, reasoning, failures))
    }
}

/// Small per-(trial, point) frames as one.
fn stacked(frames: &[DataFrame]) -> PolarsResult<DataFrame> {
    let mut all = frames.iter();
    let Some(first) = all.next() else {
        return Ok(DataFrame::empty());
    };
    let mut df = first.clone();
    for f in all {
        df.vstack_mut(f)?;
    }
    Ok(df)
}

/// One row per (trial, point) with the request metrics, from measured rows.
fn per_trial_frame(measured: LazyFrame, schema: &Schema, ok: Expr) -> LazyFrame {
    // Runs written before the workload columns existed planned every request alike.
    let or_target = |planned: &str, target: &str| {
        col(if schema.contains(planned) {
            planned
        } else {
            target
        })
    };
    let planned_input = or_target(rq::INPUT_TOKENS_PLANNED, rq::INPUT_TOKENS_TARGET);
    let planned_output = or_target(rq::OUTPUT_TOKENS_PLANNED, rq::OUTPUT_TOKENS_TARGET);
    let expected_cached = if schema.contains(rq::CACHED_TOKENS_EXPECTED) {
        col(rq::CACHED_TOKENS_EXPECTED).cast(F)
    } else {
        lit(0.0)
    };
    let mismatch = ok.clone().and(
        col(rq::COMPLETION_TOKENS)
            .is_null()
            .or(col(rq::COMPLETION_TOKENS).lt(col(rq::CLIENT_TOKENS)))
            .or(col(rq::FINISH_REASON)
                .eq(lit("length"))
                .and(col(rq::COMPLETION_TOKENS).neq(planned_output.clone()))),
    );
    let good = |e: Expr| e.filter(ok.clone());
    measured.group_by([col(rq::TRIAL), col(rq::POINT_ID)]).agg([
        len().cast(F).alias("requests"),
        col(rq::ERROR_CLASS)
            .is_not_null()
            .sum()
            .cast(F)
            .alias("failures"),
        (lit(1.0) / good(col(rq::TPOT_S)))
            .median()
            .alias("decode_tok_s"),
        good(col(rq::TTFT_S)).median().alias("ttft_s"),
        good(col(rq::TTFT_S))
            .quantile(lit(0.9), QuantileMethod::Linear)
            .alias("ttft_p90_s"),
        good(col(rq::E2E_S)).median().alias("e2e_s"),
        (good(col(rq::COMPLETION_TOKENS)).cast(F).sum() / good(col(rq::CHUNKS)).cast(F).sum())
            .alias("tokens_per_chunk"),
        good(col(rq::PROMPT_TOKENS))
            .cast(F)
            .median()
            .alias("prompt_tokens"),
        good(planned_input.clone())
            .cast(F)
            .median()
            .alias("input_planned"),
        good(col(rq::COMPLETION_TOKENS))
            .cast(F)
            .median()
            .alias("completion_tokens"),
        (planned_input
            .clone()
            .n_unique()
            .gt(lit(1))
            .or(planned_output.n_unique().gt(lit(1))))
        .cast(F)
        .alias("lengths_vary"),
        col(rq::CACHED_TOKENS).cast(F).sum().alias("cached_tokens"),
        (good(col(rq::CACHED_TOKENS)).cast(F).sum() / good(col(rq::PROMPT_TOKENS)).cast(F).sum())
            .alias("cached_share"),
        (good(expected_cached).sum() / good(planned_input).cast(F).sum())
            .alias("cached_share_expected"),
        mismatch.sum().cast(F).alias("token_mismatches"),
    ])
}

/// The request metrics of each (trial, point), keyed by (point, trial); ITL
/// and the point-row values are filled in later.
fn request_metrics(df: &DataFrame) -> PolarsResult<BTreeMap<(u32, u32), TrialMetrics>> {
    let trial = u32s(df, rq::TRIAL)?;
    let pid = u32s(df, rq::POINT_ID)?;
    let get = |name: &str| f64s(df, name);
    let (req, fail, dec, ttft, p90, e2e, tpc, pt, cached, mism) = (
        get("requests")?,
        get("failures")?,
        get("decode_tok_s")?,
        get("ttft_s")?,
        get("ttft_p90_s")?,
        get("e2e_s")?,
        get("tokens_per_chunk")?,
        get("prompt_tokens")?,
        get("cached_tokens")?,
        get("token_mismatches")?,
    );
    let (share, share_expected, planned_in, completion, vary) = (
        get("cached_share")?,
        get("cached_share_expected")?,
        get("input_planned")?,
        get("completion_tokens")?,
        get("lengths_vary")?,
    );
    Ok((0..df.height())
        .map(|i| {
            let m = TrialMetrics {
                trial: trial[i],
                point_id: pid[i],
                requests: req[i] as u32,
                failures: fail[i] as u32,
                decode_tok_s: dec[i],
                ttft_s: ttft[i],
                ttft_p90_s: p90[i],
                e2e_s: e2e[i],
                tokens_per_chunk: tpc[i],
                prompt_tokens: pt[i],
                cached_tokens: if cached[i].is_finite() {
                    cached[i] as u64
                } else {
                    0
                },
                input_planned: planned_in[i],
                completion_tokens: completion[i],
                lengths_vary: vary[i] > 0.0,
                cached_share: share[i],
                cached_share_expected: share_expected[i],
                token_mismatches: mism[i] as u32,
                agg_tok_s: f64::NAN,
                send_lag_max_s: 0.0,
                window_start_unix_s: f64::NAN,
                client_loop_lag_p99_s: f64::NAN,
                client_cpu_cores: f64::NAN,
                ..TrialMetrics::default()
            };
            ((pid[i], trial[i]), m)
        })
        .collect())
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

/// p50, p90 and p99 of the inter-chunk gaps of one (trial, point)'s
/// successful requests (`rows`: their chunk offsets), pooled.
fn itl_percentiles(rows: &DataFrame) -> PolarsResult<[f64; 3]> {
    let lists = rows.column(rq::CHUNK_OFFSETS_S)?.list()?;
    let mut gaps = Vec::new();
    // Walk the list column's flat offsets and values directly: one pass,
    // no per-row allocation.
    for arr in lists.downcast_iter() {
        // Offsets index this array's own (unsliced) values buffer.
        let inner = Series::try_from((PlSmallStr::EMPTY, arr.values().clone()))?;
        let inner = inner.f64()?;
        let values = inner.cont_slice()?;
        for w in arr.offsets().as_slice().windows(2) {
            let offs = &values[w[0] as usize..w[1] as usize];
            gaps.extend(offs.windows(2).map(|g| g[1] - g[0]));
        }
    }
    gaps.retain(|x| x.is_finite());
    Ok([0.5, 0.9, 0.99].map(|q| quantile_in_place(&mut gaps, q).unwrap_or(f64::NAN)))
}
