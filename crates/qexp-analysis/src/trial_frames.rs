//! The per-(trial, point) statistics over requests: the report's pass
//! (`crate::pass`) hands each (trial, point)'s measured rows to
//! [`TrialFrames::add`], which summarises them into small frames (one row
//! per (trial, point), or per turn or failure class), the pooled ITL and the
//! latency distributions, then drops them. Nothing here holds a column of
//! the whole run.

use crate::columns::{f64s, u32s, F};
use crate::distribution::{self, PointDistribution, TrialPart};
use crate::metrics::TrialMetrics;
use crate::pass::TrialPoint;
use crate::reasoning::ReasoningSummary;
use crate::schedule::{ScheduleAnalysis, ScheduleFrames};
use crate::stats::quantiles_in_place;
use crate::turns::TurnSummary;
use polars::prelude::*;
use qexp_store::{requests as rq, Manifest};
use std::collections::BTreeMap;

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
/// per turn or failure class), the pooled ITL and the trial's part of the
/// point's latency distributions, then dropped.
///
/// This is the one place a per-(trial, point) statistic over requests is
/// computed: a new one reads `rows` in [`TrialFrames::add`].
pub(crate) struct TrialFrames {
    schema: Schema,
    /// Trials with measured rows at each point (sets timeline shares).
    trials_at: BTreeMap<u32, usize>,
    per_trial: Vec<DataFrame>,
    reasoning: Vec<DataFrame>,
    turns: Vec<DataFrame>,
    failures: Vec<DataFrame>,
    itl: BTreeMap<(u32, u32), [f64; 3]>,
    /// Keyed by (point, trial).
    medians: BTreeMap<(u32, u32), Medians>,
    /// Keyed by (point, trial).
    distributions: BTreeMap<(u32, u32), TrialPart>,
    /// For runs with open-loop points or `[slo]`.
    schedule: Option<ScheduleFrames>,
    /// The statistics thread's buffers, kept from one (trial, point) to
    /// the next.
    scratch: Scratch,
}

/// Buffers the size of a (trial, point), reused: freeing and allocating
/// them anew for each one made the kernel clear their pages every time
/// (millions of page faults in a report of 100 M requests).
#[derive(Default)]
struct Scratch {
    samples: Vec<distribution::RequestSample>,
    values: Vec<f64>,
    gaps: Vec<f64>,
}

impl TrialFrames {
    /// Ready for the (trial, point)s of `expected` (the pass's counts), of a
    /// run whose request rows have `schema`.
    pub(crate) fn new(
        schema: &Schema,
        expected: &BTreeMap<TrialPoint, usize>,
        manifest: &Manifest,
    ) -> TrialFrames {
        let mut trials_at: BTreeMap<u32, usize> = BTreeMap::new();
        for (_, point) in expected.keys() {
            *trials_at.entry(*point).or_default() += 1;
        }
        TrialFrames {
            schema: schema.clone(),
            trials_at,
            per_trial: Vec::new(),
            reasoning: Vec::new(),
            turns: Vec::new(),
            failures: Vec::new(),
            itl: BTreeMap::new(),
            medians: BTreeMap::new(),
            distributions: BTreeMap::new(),
            schedule: ScheduleFrames::for_run(manifest),
            scratch: Scratch::default(),
        }
    }

    /// The request columns [`TrialFrames::add`] reads that the run has.
    pub(crate) fn columns(&self) -> Vec<&'static str> {
        let schedule = match self.schedule {
            Some(_) => &crate::schedule::COLUMNS[..],
            None => &[],
        };
        let mut columns: Vec<&'static str> = Vec::new();
        for c in [REQUEST_COLUMNS, &distribution::COLUMNS[..], schedule].concat() {
            if self.schema.contains(c) && !columns.contains(&c) {
                columns.push(c);
            }
        }
        columns
    }

    /// Summarises one (trial, point)'s measured rows.
    pub(crate) fn add(&mut self, (trial, point): TrialPoint, rows: DataFrame) -> PolarsResult<()> {
        let share = distribution::share(self.trials_at.get(&point).copied().unwrap_or(1));
        let offsets = ok_offsets(&rows)?;
        let mut scratch = std::mem::take(&mut self.scratch);
        // The plain-Rust statistics (distributions, pooled ITL, the
        // medians) run on a second core beside polars' aggregations of the
        // same rows. They call nothing that waits on polars' thread pool, so
        // an analysis that itself runs on that pool cannot deadlock on them.
        let planned = or_target(
            &self.schema,
            rq::INPUT_TOKENS_PLANNED,
            rq::INPUT_TOKENS_TARGET,
        );
        let (part, itl, medians) = std::thread::scope(|s| {
            let plain = s.spawn(|| {
                let sc = &mut scratch;
                distribution::samples_into(&rows, &mut sc.samples)?;
                let part = distribution::trial_part(trial, &mut sc.samples, share);
                let medians = Medians::of(&rows, planned, &mut sc.values)?;
                itl_percentiles(&offsets, &mut sc.gaps).map(|itl| (part, itl, medians))
            });
            let frames = self.add_frames((trial, point), &rows);
            let plain = plain
                .join()
                .map_err(|_| PolarsError::ComputeError("a statistics thread panicked".into()))?;
            frames.and(plain)
        })?;
        self.scratch = scratch;
        self.distributions.insert((point, trial), part);
        self.itl.insert((point, trial), itl);
        self.medians.insert((point, trial), medians);
        Ok(())
    }

    /// The schedule and polars' per-(trial, point) frames of `rows`.
    fn add_frames(&mut self, key: TrialPoint, rows: &DataFrame) -> PolarsResult<()> {
        if let Some(schedule) = &mut self.schedule {
            schedule.add(key, rows)?;
        }
        let ok = col(rq::ERROR_CLASS).is_null();
        let lazy = rows.clone().lazy();
        self.per_trial
            .push(per_trial_frame(lazy.clone(), &self.schema, ok).collect()?);
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
            .push(crate::failures::failure_frame(lazy).collect()?);
        Ok(())
    }

    /// Every point's latency distributions, in the order of `point_ids`;
    /// points without measured requests are left out.
    pub(crate) fn distributions(&self, point_ids: &[u32]) -> Vec<PointDistribution> {
        point_ids
            .iter()
            .filter_map(|&id| {
                let mut parts = self
                    .distributions
                    .range((id, 0)..=(id, u32::MAX))
                    .peekable();
                parts.peek()?;
                Some(distribution::from_parts(id, parts.map(|(_, p)| p.clone())))
            })
            .collect()
    }

    /// The schedule analysis, for runs with open-loop points or `[slo]`.
    pub(crate) fn schedule(&mut self) -> Option<ScheduleAnalysis> {
        self.schedule.take().map(ScheduleFrames::finish)
    }

    /// The request metrics of each (trial, point), keyed by (point, trial).
    pub(crate) fn request_metrics(&self) -> PolarsResult<BTreeMap<(u32, u32), TrialMetrics>> {
        let mut by_key = request_metrics(&stacked(&self.per_trial)?)?;
        for (key, m) in by_key.iter_mut() {
            [m.itl_p50_s, m.itl_p90_s, m.itl_p99_s] =
                self.itl.get(key).copied().unwrap_or([f64::NAN; 3]);
            let d = self.medians.get(key).copied().unwrap_or(Medians::NONE);
            m.decode_tok_s = d.decode_tok_s;
            m.ttft_s = d.ttft_s;
            m.ttft_p90_s = d.ttft_p90_s;
            m.e2e_s = d.e2e_s;
            m.prompt_tokens = d.prompt_tokens;
            m.input_planned = d.input_planned;
            m.completion_tokens = d.completion_tokens;
        }
        Ok(by_key)
    }

    /// Per-turn, reasoning and failure summaries over every (trial, point).
    #[allow(clippy::type_complexity)]
    pub(crate) fn summaries(
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

/// The column of what was planned per request, or, in runs written before
/// the workload columns existed (every request planned alike), the target.
fn or_target(schema: &Schema, planned: &'static str, target: &'static str) -> &'static str {
    if schema.contains(planned) {
        planned
    } else {
        target
    }
}

/// One row with the request metrics of one (trial, point)'s measured rows.
fn per_trial_frame(measured: LazyFrame, schema: &Schema, ok: Expr) -> LazyFrame {
    let planned_input = col(or_target(
        schema,
        rq::INPUT_TOKENS_PLANNED,
        rq::INPUT_TOKENS_TARGET,
    ));
    let planned_output = col(or_target(
        schema,
        rq::OUTPUT_TOKENS_PLANNED,
        rq::OUTPUT_TOKENS_TARGET,
    ));
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
    // One (trial, point): a plain select, not a group-by that gathers
    // every column through its one group's row indices.
    measured.select([
        col(rq::TRIAL).first(),
        col(rq::POINT_ID).first(),
        len().cast(F).alias("requests"),
        col(rq::ERROR_CLASS)
            .is_not_null()
            .sum()
            .cast(F)
            .alias("failures"),
        (good(col(rq::COMPLETION_TOKENS)).cast(F).sum() / good(col(rq::CHUNKS)).cast(F).sum())
            .alias("tokens_per_chunk"),
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

/// The request metrics of each (trial, point), keyed by (point, trial); ITL,
/// the medians and the point-row values are filled in later.
fn request_metrics(df: &DataFrame) -> PolarsResult<BTreeMap<(u32, u32), TrialMetrics>> {
    let trial = u32s(df, rq::TRIAL)?;
    let pid = u32s(df, rq::POINT_ID)?;
    let get = |name: &str| f64s(df, name);
    let (req, fail, tpc, cached, mism) = (
        get("requests")?,
        get("failures")?,
        get("tokens_per_chunk")?,
        get("cached_tokens")?,
        get("token_mismatches")?,
    );
    let (share, share_expected, vary) = (
        get("cached_share")?,
        get("cached_share_expected")?,
        get("lengths_vary")?,
    );
    Ok((0..df.height())
        .map(|i| {
            let m = TrialMetrics {
                trial: trial[i],
                point_id: pid[i],
                requests: req[i] as u32,
                failures: fail[i] as u32,
                tokens_per_chunk: tpc[i],
                cached_tokens: if cached[i].is_finite() {
                    cached[i] as u64
                } else {
                    0
                },
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

/// The per-(trial, point) medians (and TTFT p90) over the successful
/// requests. They are taken by selection, in O(n) ([`quantiles_in_place`]):
/// polars' median sorts a column that has nulls or more than one chunk,
/// which a (trial, point) read in batches always has, and those sorts were
/// a sixth of a large report's time.
#[derive(Debug, Clone, Copy)]
struct Medians {
    decode_tok_s: f64,
    ttft_s: f64,
    ttft_p90_s: f64,
    e2e_s: f64,
    prompt_tokens: f64,
    input_planned: f64,
    completion_tokens: f64,
}

impl Medians {
    /// No successful request.
    const NONE: Medians = Medians {
        decode_tok_s: f64::NAN,
        ttft_s: f64::NAN,
        ttft_p90_s: f64::NAN,
        e2e_s: f64::NAN,
        prompt_tokens: f64::NAN,
        input_planned: f64::NAN,
        completion_tokens: f64::NAN,
    };

    /// The medians of one (trial, point)'s successful requests (`rows`;
    /// `planned` is the column of their planned input, [`or_target`]), one
    /// column at a time: each column's values are copied out, selected and
    /// dropped before the next. Reads the rows' arrays only (no call waits
    /// on polars' thread pool).
    fn of(rows: &DataFrame, planned: &str, buf: &mut Vec<f64>) -> PolarsResult<Medians> {
        let error = rows.column(rq::ERROR_CLASS)?;
        let ok = (error.null_count() < rows.height()).then(|| error.is_null());
        let mut quantiles = |name: &str, qs: &[f64], f: fn(f64) -> f64| -> PolarsResult<Vec<f64>> {
            good_values(rows, ok.as_ref(), name, buf)?;
            buf.iter_mut().for_each(|x| *x = f(*x));
            Ok(quantiles_in_place(buf, qs)
                .into_iter()
                .map(|x| x.unwrap_or(f64::NAN))
                .collect())
        };
        let ttft = quantiles(rq::TTFT_S, &[0.5, 0.9], |x| x)?;
        Ok(Medians {
            decode_tok_s: quantiles(rq::TPOT_S, &[0.5], |x| 1.0 / x)?[0],
            ttft_s: ttft[0],
            ttft_p90_s: ttft[1],
            e2e_s: quantiles(rq::E2E_S, &[0.5], |x| x)?[0],
            prompt_tokens: quantiles(rq::PROMPT_TOKENS, &[0.5], |x| x)?[0],
            input_planned: quantiles(planned, &[0.5], |x| x)?[0],
            completion_tokens: quantiles(rq::COMPLETION_TOKENS, &[0.5], |x| x)?[0],
        })
    }
}

/// The non-null values of column `name` in the rows where `ok` holds (all
/// rows when `ok` is None), as f64, into `out` (emptied first).
fn good_values(
    rows: &DataFrame,
    ok: Option<&BooleanChunked>,
    name: &str,
    out: &mut Vec<f64>,
) -> PolarsResult<()> {
    out.clear();
    let s = rows.column(name)?.as_materialized_series();
    // Every request succeeded (most (trial, point)s): the arrays' values
    // are copied straight, without a per-row option.
    match (ok, s.dtype()) {
        (None, DataType::Float64) => {
            non_null(s.f64()?, |x| x, out);
            return Ok(());
        }
        (None, DataType::UInt32) => {
            non_null(s.u32()?, f64::from, out);
            return Ok(());
        }
        _ => {}
    }
    let c = s.cast(&F)?;
    let values = c.f64()?.iter();
    match ok {
        None => out.extend(values.flatten()),
        Some(ok) => out.extend(
            values
                .zip(ok.iter())
                .filter_map(|(v, ok)| v.filter(|_| ok == Some(true))),
        ),
    }
    Ok(())
}

/// Appends the non-null values of `ca`, in order, as f64, to `out`.
fn non_null<T: PolarsNumericType>(
    ca: &ChunkedArray<T>,
    f: impl Fn(T::Native) -> f64,
    out: &mut Vec<f64>,
) {
    out.reserve(ca.len() - ca.null_count());
    for arr in ca.downcast_iter() {
        if arr.validity().is_none_or(|v| v.unset_bits() == 0) {
            out.extend(arr.values().iter().map(|&x| f(x)));
        } else {
            out.extend(arr.iter().flatten().map(|&x| f(x)));
        }
    }
}

/// The chunk offsets of the successful requests of `rows`.
fn ok_offsets(rows: &DataFrame) -> PolarsResult<DataFrame> {
    // Most (trial, point)s have no failure: their offsets need no filtered copy.
    if rows.column(rq::ERROR_CLASS)?.null_count() == rows.height() {
        return rows.select([rq::CHUNK_OFFSETS_S]);
    }
    rows.clone()
        .lazy()
        .filter(col(rq::ERROR_CLASS).is_null())
        .select([col(rq::CHUNK_OFFSETS_S)])
        .collect()
}

/// p50, p90 and p99 of the inter-chunk gaps of one (trial, point)'s
/// successful requests (`rows`: their chunk offsets), pooled.
fn itl_percentiles(rows: &DataFrame, gaps: &mut Vec<f64>) -> PolarsResult<[f64; 3]> {
    let lists = rows.column(rq::CHUNK_OFFSETS_S)?.list()?;
    gaps.clear();
    gaps.reserve(lists.downcast_iter().map(|a| a.values().len()).sum());
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
    let q = quantiles_in_place(gaps, &[0.5, 0.9, 0.99]);
    Ok([0, 1, 2].map(|i| q.get(i).copied().flatten().unwrap_or(f64::NAN)))
}
