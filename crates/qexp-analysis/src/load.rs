//! Loads a run's Parquet files and computes per-(trial, point) metrics with
//! polars; cross-trial statistics are then plain Rust over a few numbers.

use crate::metrics::{PointSummary, TrialMetrics};
use crate::stats::quantile_in_place;
use polars::prelude::*;
use qexp_store::{scan_points, scan_requests, Manifest, StoreError};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Why a run could not be analysed.
#[derive(Debug, thiserror::Error)]
pub enum AnalysisError {
    /// The run folder could not be read.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// A polars query failed (a column missing or of another type).
    #[error("cannot aggregate {}: {source}", path.display())]
    Query {
        /// The run folder.
        path: PathBuf,
        /// The cause.
        source: PolarsError,
    },
}

/// A run with its per-point statistics.
#[derive(Debug, Clone)]
pub struct RunAnalysis {
    /// The run folder.
    pub dir: PathBuf,
    /// Its manifest.
    pub manifest: Manifest,
    /// One summary per planned point, in plan order (points without data have n = 0).
    pub points: Vec<PointSummary>,
    /// Multi-turn runs: one summary per (point, turn), by point then turn; empty otherwise.
    pub turns: Vec<crate::TurnSummary>,
    /// Response time from the schedule, achieved rate, goodput and capacity;
    /// None unless the run has open-loop points or `[slo]`.
    pub schedule: Option<crate::schedule::ScheduleAnalysis>,
}

const F: DataType = DataType::Float64;

/// Request rows read at a time for the pooled ITL: four row groups of a
/// merged file (about a million rows; 16 chunk offsets each are 128 MB).
pub const ITL_BATCH_ROWS: usize = 4 * 512 * 512;

/// Reads a run folder and summarises every point across trials.
pub fn analyze(dir: &Path) -> Result<RunAnalysis, AnalysisError> {
    analyze_in_batches(dir, ITL_BATCH_ROWS)
}

/// [`analyze`], reading request rows for the pooled ITL `batch_rows` at a
/// time (tests use small batches to cross batch boundaries).
#[doc(hidden)]
pub fn analyze_in_batches(dir: &Path, batch_rows: usize) -> Result<RunAnalysis, AnalysisError> {
    let manifest = qexp_store::read_manifest(dir)?;
    let q = |source| AnalysisError::Query {
        path: dir.to_path_buf(),
        source,
    };
    let is_measured = col("warmup").not();
    let requests = scan_requests(dir)?;
    // Runs written before the workload columns existed planned every request alike.
    let has = |name: &str| {
        requests
            .clone()
            .collect_schema()
            .is_ok_and(|s| s.contains(name))
    };
    let planned_input = if has("input_tokens_planned") {
        col("input_tokens_planned")
    } else {
        col("input_tokens_target")
    };
    let planned_output = if has("output_tokens_planned") {
        col("output_tokens_planned")
    } else {
        col("output_tokens_target")
    };
    let expected_cached = if has("cached_tokens_expected") {
        col("cached_tokens_expected").cast(F)
    } else {
        lit(0.0)
    };
    // Runs written before multi-turn sessions existed have no turns.
    let has_turns = has("turn");
    let measured = requests.filter(is_measured.clone());
    let turns = if has_turns {
        crate::turns::turn_summaries(measured.clone()).map_err(q)?
    } else {
        Vec::new()
    };
    let ok = col("error_class").is_null();
    let mismatch = ok.clone().and(
        col("completion_tokens")
            .is_null()
            .or(col("completion_tokens").lt(col("client_tokens")))
            .or(col("finish_reason")
                .eq(lit("length"))
                .and(col("completion_tokens").neq(planned_output.clone()))),
    );
    let per_trial = measured
        .clone()
        .group_by([col("trial"), col("point_id")])
        .agg([
            len().cast(F).alias("requests"),
            col("error_class")
                .is_not_null()
                .sum()
                .cast(F)
                .alias("failures"),
            (lit(1.0) / col("tpot_s"))
                .filter(ok.clone())
                .median()
                .alias("decode_tok_s"),
            col("ttft_s").filter(ok.clone()).median().alias("ttft_s"),
            col("ttft_s")
                .filter(ok.clone())
                .quantile(lit(0.9), QuantileMethod::Linear)
                .alias("ttft_p90_s"),
            col("e2e_s").filter(ok.clone()).median().alias("e2e_s"),
            (col("completion_tokens").filter(ok.clone()).cast(F).sum()
                / col("chunks").filter(ok.clone()).cast(F).sum())
            .alias("tokens_per_chunk"),
            col("prompt_tokens")
                .filter(ok.clone())
                .cast(F)
                .median()
                .alias("prompt_tokens"),
            planned_input
                .clone()
                .filter(ok.clone())
                .cast(F)
                .median()
                .alias("input_planned"),
            col("completion_tokens")
                .filter(ok.clone())
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
            col("cached_tokens").cast(F).sum().alias("cached_tokens"),
            (col("cached_tokens").filter(ok.clone()).cast(F).sum()
                / col("prompt_tokens").filter(ok.clone()).cast(F).sum())
            .alias("cached_share"),
            (expected_cached.filter(ok.clone()).sum()
                / planned_input.filter(ok.clone()).cast(F).sum())
            .alias("cached_share_expected"),
            mismatch.sum().cast(F).alias("token_mismatches"),
        ])
        .collect()
        .map_err(q)?;
    let points = scan_points(dir)?
        .select([
            col("trial"),
            col("point_id"),
            col("agg_output_tok_s").cast(F),
            col("send_lag_max_s").cast(F),
            col("invalid_reason"),
            col("server_prefix_cache_queries").cast(F),
            col("server_prefix_cache_hits").cast(F),
            col("server_preemptions").cast(F),
            col("server_ttft_count").cast(F),
            col("server_ttft_sum_s").cast(F),
            col("server_spec_acceptance_length").cast(F),
        ])
        .collect()
        .map_err(q)?;

    let mut by_key: BTreeMap<(u32, u32), TrialMetrics> = BTreeMap::new();
    let trial = u32s(&per_trial, "trial").map_err(q)?;
    let pid = u32s(&per_trial, "point_id").map_err(q)?;
    let get = |name: &str| f64s(&per_trial, name);
    let (share, share_expected, planned_in, completion, vary) = (
        get("cached_share").map_err(q)?,
        get("cached_share_expected").map_err(q)?,
        get("input_planned").map_err(q)?,
        get("completion_tokens").map_err(q)?,
        get("lengths_vary").map_err(q)?,
    );
    let (req, fail, dec, ttft, p90, e2e, tpc, pt, cached, mism) = (
        get("requests").map_err(q)?,
        get("failures").map_err(q)?,
        get("decode_tok_s").map_err(q)?,
        get("ttft_s").map_err(q)?,
        get("ttft_p90_s").map_err(q)?,
        get("e2e_s").map_err(q)?,
        get("tokens_per_chunk").map_err(q)?,
        get("prompt_tokens").map_err(q)?,
        get("cached_tokens").map_err(q)?,
        get("token_mismatches").map_err(q)?,
    );
    let ok_rows = (0..per_trial.height())
        .map(|i| ((trial[i], pid[i]), (req[i] - fail[i]) as usize))
        .collect();
    // The same predicate that counted `ok_rows`, so the counts agree.
    let itl = itl_percentiles(dir, is_measured.and(ok), ok_rows, batch_rows)?;
    for i in 0..per_trial.height() {
        let key = (pid[i], trial[i]);
        let [itl_p50_s, itl_p90_s, itl_p99_s] = itl
            .get(&(trial[i], pid[i]))
            .copied()
            .unwrap_or([f64::NAN; 3]);
        by_key.insert(
            key,
            TrialMetrics {
                trial: trial[i],
                point_id: pid[i],
                requests: req[i] as u32,
                failures: fail[i] as u32,
                decode_tok_s: dec[i],
                ttft_s: ttft[i],
                ttft_p90_s: p90[i],
                e2e_s: e2e[i],
                itl_p50_s,
                itl_p90_s,
                itl_p99_s,
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
                ..TrialMetrics::default()
            },
        );
    }
    let ptrial = u32s(&points, "trial").map_err(q)?;
    let ppid = u32s(&points, "point_id").map_err(q)?;
    let agg = f64s(&points, "agg_output_tok_s").map_err(q)?;
    let lag = f64s(&points, "send_lag_max_s").map_err(q)?;
    let server = |name: &str| -> Result<Vec<Option<f64>>, AnalysisError> {
        let v = f64s(&points, name).map_err(q)?;
        Ok(v.into_iter().map(|x| x.is_finite().then_some(x)).collect())
    };
    let (queries, hits, preempt, ttft_n, ttft_sum, accept) = (
        server("server_prefix_cache_queries")?,
        server("server_prefix_cache_hits")?,
        server("server_preemptions")?,
        server("server_ttft_count")?,
        server("server_ttft_sum_s")?,
        server("server_spec_acceptance_length")?,
    );
    let ratio = |num: Option<f64>, den: Option<f64>| match (num, den) {
        (Some(n), Some(d)) if d > 0.0 => Some(n / d),
        _ => None,
    };
    let invalid = points
        .column("invalid_reason")
        .and_then(|c| c.str().cloned())
        .map_err(q)?;
    for i in 0..points.height() {
        let m = by_key
            .entry((ppid[i], ptrial[i]))
            .or_insert_with(|| TrialMetrics::without_requests(ptrial[i], ppid[i]));
        m.agg_tok_s = agg[i];
        m.send_lag_max_s = lag[i];
        m.invalid_reason = invalid.get(i).map(str::to_string);
        m.server_prefix_hit_rate = ratio(hits[i], queries[i]);
        m.server_preemptions = preempt[i];
        m.server_ttft_s = ratio(ttft_sum[i], ttft_n[i]);
        m.spec_acceptance_length = accept[i];
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
    let schedule = crate::schedule::for_run(dir, &manifest)?;
    Ok(RunAnalysis {
        dir: dir.to_path_buf(),
        manifest,
        points: summaries,
        turns,
        schedule,
    })
}

/// p50, p90 and p99 of the inter-chunk gaps of the rows `measured_ok` keeps
/// (measured, successful requests), pooled per (trial, point).
///
/// A run holds one gap per chunk, so its gaps outnumber its requests many
/// times over (10 million requests of 16 chunks: 150 million gaps, 1.2 GB).
/// The rows are read `batch_rows` at a time, and a (trial, point) is
/// summarised and its gaps dropped as soon as all of its `expected`
/// successful rows have been seen; since the runner writes each (trial,
/// point) as one block, about one (trial, point) is held at a time.
fn itl_percentiles(
    dir: &Path,
    measured_ok: Expr,
    expected: BTreeMap<(u32, u32), usize>,
    batch_rows: usize,
) -> Result<BTreeMap<(u32, u32), [f64; 3]>, AnalysisError> {
    let mut open: BTreeMap<(u32, u32), (usize, Vec<f64>)> = BTreeMap::new();
    let mut done: BTreeMap<(u32, u32), [f64; 3]> = BTreeMap::new();
    let finish = |g: &mut Vec<f64>| {
        g.retain(|x| x.is_finite());
        [0.5, 0.9, 0.99].map(|q| quantile_in_place(g, q).unwrap_or(f64::NAN))
    };
    let columns = [
        "trial",
        "point_id",
        "warmup",
        "error_class",
        "chunk_offsets_s",
    ];
    qexp_store::for_each_request_batch(dir, &columns, batch_rows, |df| {
        let df = df
            .lazy()
            .filter(measured_ok.clone())
            .select([col("trial"), col("point_id"), col("chunk_offsets_s")])
            .collect()?;
        let trial = u32s(&df, "trial")?;
        let pid = u32s(&df, "point_id")?;
        // Walk the list column's flat offsets and values directly: one pass,
        // no per-row allocation.
        let lists = df.column("chunk_offsets_s")?.list()?;
        let mut row = 0usize;
        for arr in lists.downcast_iter() {
            // Offsets index this array's own (unsliced) values buffer.
            let inner = Series::try_from((PlSmallStr::EMPTY, arr.values().clone()))?;
            let inner = inner.f64()?;
            let values = inner.cont_slice()?;
            for w in arr.offsets().as_slice().windows(2) {
                let key = (trial[row], pid[row]);
                row += 1;
                let offs = &values[w[0] as usize..w[1] as usize];
                let (seen, gaps) = open.entry(key).or_default();
                gaps.extend(offs.windows(2).map(|g| g[1] - g[0]));
                *seen += 1;
                if *seen >= expected.get(&key).copied().unwrap_or(usize::MAX) {
                    let (_, mut gaps) = open.remove(&key).unwrap_or_default();
                    // First result wins: rows of a finished key arriving
                    // later (a count that disagreed) never replace it.
                    done.entry(key).or_insert_with(|| finish(&mut gaps));
                }
            }
        }
        Ok(())
    })?;
    // Groups whose count never matched (not expected to happen) still count.
    for (key, (_, mut gaps)) in open {
        done.entry(key).or_insert_with(|| finish(&mut gaps));
    }
    Ok(done)
}

pub(crate) fn u32s(df: &DataFrame, name: &str) -> PolarsResult<Vec<u32>> {
    let c = df.column(name)?.cast(&DataType::UInt32)?;
    Ok(c.u32()?.iter().map(|v| v.unwrap_or(0)).collect())
}

/// A float column; nulls become NaN (statistics drop them).
pub(crate) fn f64s(df: &DataFrame, name: &str) -> PolarsResult<Vec<f64>> {
    let c = df.column(name)?.cast(&F)?;
    Ok(c.f64()?.iter().map(|v| v.unwrap_or(f64::NAN)).collect())
}
