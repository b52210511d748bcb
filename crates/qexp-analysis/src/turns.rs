//! Metrics per turn of multi-turn conversations: a later turn resends the
//! whole conversation, so its TTFT grows with the history unless the
//! server's prefix cache serves it. Per (trial, point, turn): the median
//! TTFT and prompt length and the cached share of the successful requests;
//! then, as for points, the median and spread across trials.

use crate::columns::{f64s, u32s};
use crate::stats::Summary;
use polars::prelude::*;
use qexp_store::requests as rq;
use serde::Serialize;
use std::collections::BTreeMap;

/// One turn index of one point, across trials.
#[derive(Debug, Clone, Serialize)]
pub struct TurnSummary {
    /// The point's id.
    pub point_id: u32,
    /// The turn within its conversation, from 1.
    pub turn: u32,
    /// Measured requests at this turn, all trials.
    pub requests: u64,
    /// Failed (or skipped) requests at this turn, all trials.
    pub failures: u64,
    /// Median TTFT per trial, across trials.
    pub ttft_s: Option<Summary>,
    /// Median server-reported prompt tokens per trial, across trials.
    pub prompt_tokens: Option<Summary>,
    /// Cached over prompt tokens per trial, as the server reported them, across trials.
    pub cached_share: Option<Summary>,
}

/// The per-(trial, point, turn) aggregates of `measured` multi-turn rows
/// (any set of whole (trial, point)s: the analysis feeds one at a time).
pub(crate) fn turn_frame(measured: LazyFrame) -> LazyFrame {
    let f = DataType::Float64;
    let ok = col(rq::ERROR_CLASS).is_null();
    measured
        .filter(col(rq::TURN).is_not_null())
        .group_by([col(rq::TRIAL), col(rq::POINT_ID), col(rq::TURN)])
        .agg([
            len().cast(f.clone()).alias("requests"),
            col(rq::ERROR_CLASS)
                .is_not_null()
                .sum()
                .cast(f.clone())
                .alias("failures"),
            col(rq::TTFT_S).filter(ok.clone()).median().alias("ttft_s"),
            col(rq::PROMPT_TOKENS)
                .filter(ok.clone())
                .cast(f.clone())
                .median()
                .alias("prompt_tokens"),
            (col(rq::CACHED_TOKENS)
                .filter(ok.clone())
                .cast(f.clone())
                .sum()
                / col(rq::PROMPT_TOKENS).filter(ok).cast(f.clone()).sum())
            .alias("cached_share"),
        ])
}

/// Per-turn summaries from [`turn_frame`]'s rows, by point then turn; empty
/// when no row has a turn.
pub(crate) fn turn_summaries(df: &DataFrame) -> PolarsResult<Vec<TurnSummary>> {
    let (pid, turn) = (u32s(df, rq::POINT_ID)?, u32s(df, rq::TURN)?);
    let (req, fail, ttft, prompt, share) = (
        f64s(df, "requests")?,
        f64s(df, "failures")?,
        f64s(df, "ttft_s")?,
        f64s(df, "prompt_tokens")?,
        f64s(df, "cached_share")?,
    );
    // (point, turn) → one [requests, failures, ttft, prompt, share] per trial.
    let mut by_turn: BTreeMap<(u32, u32), Vec<[f64; 5]>> = BTreeMap::new();
    for i in 0..df.height() {
        by_turn
            .entry((pid[i], turn[i]))
            .or_default()
            .push([req[i], fail[i], ttft[i], prompt[i], share[i]]);
    }
    Ok(by_turn
        .into_iter()
        .map(|((point_id, turn), trials)| {
            let of = |k: usize| Summary::of(&trials.iter().map(|t| t[k]).collect::<Vec<_>>());
            let total = |k: usize| trials.iter().map(|t| t[k] as u64).sum();
            TurnSummary {
                point_id,
                turn,
                requests: total(0),
                failures: total(1),
                ttft_s: of(2),
                prompt_tokens: of(3),
                cached_share: of(4),
            }
        })
        .collect())
}
