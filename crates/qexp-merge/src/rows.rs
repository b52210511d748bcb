//! The rows of a merged run: each shard's measured requests read back, and
//! each (trial, point)'s row recomputed from the union of the shards'
//! requests, never from the shards' own point rows (percentiles and
//! throughput do not average).
//!
//! Throughput is taken over the window in which every shard was sending:
//! from the latest shard's first send to the earliest shard's last
//! completion. The output tokens counted are those that arrived inside it,
//! each request's tokens spread evenly over its content chunks by their
//! arrival times. With a single shard (a partial merge of one) the window
//! is the point's first send to its last completion, as in any run.

use crate::error::MergeError;
use polars::prelude::*;
use qexp_client::{ErrorClass, ServerCounter, ServerCounters};
use qexp_plan::Point;
use qexp_runner::record::{Context, Tally};
use qexp_store::{points as pt, requests as rq, server_column, PointRow, RequestRow};
use std::collections::BTreeMap;
use std::path::Path;

/// A (trial, point id).
pub(crate) type Pair = (u32, u32);

/// What a shard's own point row says that its requests do not: the
/// client's health and the server's counters.
#[derive(Default, Clone)]
pub(crate) struct Health {
    pub cpu_cores: Option<f64>,
    pub loop_lag_p99_s: Option<f64>,
    pub prompt_units: u32,
    pub server: Option<ServerCounters>,
}

fn rows_err(dir: &Path) -> impl Fn(PolarsError) -> MergeError + '_ {
    move |source| MergeError::Rows {
        dir: dir.to_path_buf(),
        source,
    }
}

fn u32s(df: &DataFrame, name: &str) -> PolarsResult<Vec<Option<u32>>> {
    Ok(df
        .column(name)?
        .cast(&DataType::UInt32)?
        .u32()?
        .iter()
        .collect())
}

fn f64s(df: &DataFrame, name: &str) -> PolarsResult<Vec<Option<f64>>> {
    Ok(df
        .column(name)?
        .cast(&DataType::Float64)?
        .f64()?
        .iter()
        .collect())
}

/// The measured (not warm-up) requests among `df`'s rows (one (trial,
/// point) of the shard in `dir`), with the fields its point row reads: its
/// own, the shard that sent it and its content chunks' arrival offsets
/// from its send.
pub(crate) fn measured(
    df: &DataFrame,
    dir: &Path,
    shard: u32,
) -> Result<Vec<RequestRow>, MergeError> {
    let e = rows_err(dir);
    let warmup: Vec<bool> = df
        .column(rq::WARMUP)
        .and_then(|c| Ok(c.bool()?.iter().map(|w| w.unwrap_or(false)).collect()))
        .map_err(&e)?;
    let sent = f64s(df, rq::SENT_UNIX_S).map_err(&e)?;
    let end = f64s(df, rq::END_S).map_err(&e)?;
    let queue = f64s(df, rq::QUEUE_S).map_err(&e)?;
    let completion = u32s(df, rq::COMPLETION_TOKENS).map_err(&e)?;
    let client = u32s(df, rq::CLIENT_TOKENS).map_err(&e)?;
    let prompt = u32s(df, rq::PROMPT_TOKENS).map_err(&e)?;
    let planned = u32s(df, rq::INPUT_TOKENS_PLANNED).map_err(&e)?;
    let class: Vec<Option<String>> = df
        .column(rq::ERROR_CLASS)
        .and_then(|c| Ok(c.str()?.iter().map(|s| s.map(str::to_string)).collect()))
        .map_err(&e)?;
    let lists = df
        .column(rq::CHUNK_OFFSETS_S)
        .and_then(|c| c.list().cloned())
        .map_err(&e)?;
    let offsets = list_values(&lists).map_err(&e)?;
    let mut out = Vec::with_capacity(df.height());
    for (i, offsets) in offsets.into_iter().enumerate() {
        if warmup[i] {
            continue;
        }
        out.push(RequestRow {
            sent_unix_s: sent[i].unwrap_or(0.0),
            end_s: end[i].unwrap_or(0.0),
            queue_s: queue[i].unwrap_or(0.0),
            completion_tokens: completion[i],
            client_tokens: client[i].unwrap_or(0),
            prompt_tokens: prompt[i],
            input_tokens_planned: planned[i].unwrap_or(0),
            // An unknown name still counts as a failure.
            error_class: class[i]
                .as_deref()
                .map(|c| ErrorClass::from_name(c).unwrap_or(ErrorClass::Protocol)),
            shard: Some(shard),
            chunk_offsets_s: offsets,
            ..RequestRow::default()
        });
    }
    Ok(out)
}

/// Each row's list of f64s (chunk arrival offsets), read from the list
/// column's flat offsets and values.
fn list_values(lists: &ListChunked) -> PolarsResult<Vec<Vec<f64>>> {
    let mut out = Vec::with_capacity(lists.len());
    for arr in lists.downcast_iter() {
        // Offsets index this array's own (unsliced) values buffer.
        let inner = Series::try_from((PlSmallStr::EMPTY, arr.values().clone()))?;
        let inner = inner.cast(&DataType::Float64)?;
        let values: Vec<f64> = inner.f64()?.iter().map(|v| v.unwrap_or(f64::NAN)).collect();
        for w in arr.offsets().as_slice().windows(2) {
            out.push(values[w[0] as usize..w[1] as usize].to_vec());
        }
    }
    Ok(out)
}

/// The client's health and server counters of each (trial, point) of the shard in `dir`.
pub(crate) fn health(dir: &Path) -> Result<BTreeMap<Pair, Health>, MergeError> {
    let e = rows_err(dir);
    let df = qexp_store::scan_points(dir)?.collect().map_err(&e)?;
    let (trial, pid) = (
        u32s(&df, pt::TRIAL).map_err(&e)?,
        u32s(&df, pt::POINT_ID).map_err(&e)?,
    );
    let cpu = f64s(&df, pt::CLIENT_CPU_CORES).map_err(&e)?;
    let lag = f64s(&df, pt::CLIENT_LOOP_LAG_P99_S).map_err(&e)?;
    let units = u32s(&df, pt::PROMPT_UNITS).map_err(&e)?;
    let mut counters: Vec<(ServerCounter, Vec<Option<f64>>)> = Vec::new();
    for c in ServerCounter::ALL {
        counters.push((c, f64s(&df, &server_column(c)).map_err(&e)?));
    }
    let raw: Vec<Option<String>> = df
        .column(pt::SERVER_COUNTERS_JSON)
        .and_then(|c| Ok(c.str()?.iter().map(|s| s.map(str::to_string)).collect()))
        .map_err(&e)?;
    let mut out = BTreeMap::new();
    for i in 0..df.height() {
        let server = raw[i].as_deref().map(|json| ServerCounters {
            values: counters
                .iter()
                .filter_map(|(c, v)| Some((*c, v[i]?)))
                .collect(),
            raw: serde_json::from_str(json).unwrap_or_default(),
        });
        let h = Health {
            cpu_cores: cpu[i],
            loop_lag_p99_s: lag[i],
            prompt_units: units[i].unwrap_or(0),
            server,
        };
        out.insert((trial[i].unwrap_or(0), pid[i].unwrap_or(0)), h);
    }
    Ok(out)
}

/// The point row of (`ctx.trial`, `ctx.point`) from every shard's measured
/// requests (`tally`), the window in which every shard was sending with
/// the output tokens that arrived inside it (None with fewer than two
/// shards or no overlap), and each shard's health (`health` by shard,
/// lowest first).
pub(crate) fn merged_point(
    ctx: &Context<'_>,
    tally: &Tally,
    window: Option<((f64, f64), f64)>,
    health: &[(u32, Health)],
) -> PointRow {
    let units = health.first().map_or(0, |(_, h)| h.prompt_units);
    let mut p = tally.point_row(ctx, units);
    // The client's CPU adds up over the shards; the worst loop lag is the point's.
    let cpu: Vec<f64> = health.iter().filter_map(|(_, h)| h.cpu_cores).collect();
    p.client_cpu_cores = (!cpu.is_empty()).then(|| cpu.iter().sum());
    p.client_loop_lag_p99_s = health
        .iter()
        .filter_map(|(_, h)| h.loop_lag_p99_s)
        .reduce(f64::max);
    // Every shard scraped the one server over the same window: the first
    // shard's deltas are the point's (a sum would count them N times).
    p.server = health.iter().find_map(|(_, h)| h.server.clone());
    if let Some(((start, end), tokens)) = window {
        p.window_start_unix_s = start;
        p.window_end_unix_s = end;
        p.agg_output_tok_s = Some(tokens / (end - start));
    }
    p
}

/// The columns [`Spans::add`] reads.
pub(crate) const SPAN_COLUMNS: [&str; 3] = [rq::WARMUP, rq::SENT_UNIX_S, rq::END_S];

/// Each shard's first send and last completion over its measured requests
/// of one (trial, point), added up piece by piece.
#[derive(Default)]
pub(crate) struct Spans(BTreeMap<u32, (f64, f64)>);

impl Spans {
    /// A piece of the rows of shard `shard` (in `dir`), with [`SPAN_COLUMNS`].
    pub(crate) fn add(&mut self, df: &DataFrame, dir: &Path, shard: u32) -> Result<(), MergeError> {
        let e = rows_err(dir);
        let warmup = df
            .column(rq::WARMUP)
            .and_then(|c| c.bool().cloned())
            .map_err(&e)?;
        let sent = f64s(df, rq::SENT_UNIX_S).map_err(&e)?;
        let end = f64s(df, rq::END_S).map_err(&e)?;
        for ((w, s), took) in warmup.iter().zip(sent).zip(end) {
            if w.unwrap_or(false) {
                continue;
            }
            // As `measured` reads them: a missing time is 0.
            let s = s.unwrap_or(0.0);
            let e = s + took.unwrap_or(0.0);
            let span = self.0.entry(shard).or_insert((s, e));
            span.0 = span.0.min(s);
            span.1 = span.1.max(e);
        }
        Ok(())
    }

    /// The window in which every shard with requests was sending: from the
    /// latest first send to the earliest last completion; None with fewer
    /// than two shards or no overlap.
    pub(crate) fn common(&self) -> Option<(f64, f64)> {
        if self.0.len() < 2 {
            return None;
        }
        let start = self
            .0
            .values()
            .map(|s| s.0)
            .fold(f64::NEG_INFINITY, f64::max);
        let end = self.0.values().map(|s| s.1).fold(f64::INFINITY, f64::min);
        (end > start).then_some((start, end))
    }
}

/// Adds to `tokens` the output tokens of the successful `rows` that arrived
/// inside `(start, end)`, each request's tokens spread evenly over its
/// content chunks by their arrival times.
pub(crate) fn add_tokens_inside(tokens: &mut f64, rows: &[RequestRow], (start, end): (f64, f64)) {
    for m in rows.iter().filter(|m| m.error_class.is_none()) {
        let n = m.completion_tokens.unwrap_or(m.client_tokens);
        if m.chunk_offsets_s.is_empty() {
            continue;
        }
        let per_chunk = f64::from(n) / m.chunk_offsets_s.len() as f64;
        let inside = m
            .chunk_offsets_s
            .iter()
            .map(|o| m.sent_unix_s + o)
            .filter(|t| (start..=end).contains(t))
            .count();
        *tokens += per_chunk * inside as f64;
    }
}

/// The position of `point` in `trial`'s recorded order.
pub(crate) fn order_of(orders: &[Vec<u32>], trial: u32, point: &Point) -> u32 {
    (trial as usize)
        .checked_sub(1)
        .and_then(|t| orders.get(t))
        .and_then(|o| o.iter().position(|p| *p == point.id))
        .map_or(point.id, |p| p as u32)
}
