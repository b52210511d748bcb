//! Reasoning models stream their thinking before the answer: per point, the
//! time to the first reasoning chunk beside the time to the first answer
//! chunk (median per trial, then across trials), for points whose requests
//! streamed reasoning at all.

use crate::columns::{f64s, u32s};
use crate::stats::Summary;
use polars::prelude::*;
use qexp_store::requests as rq;
use serde::Serialize;
use std::collections::BTreeMap;

/// Reasoning timing of one point, across trials.
#[derive(Debug, Clone, Serialize)]
pub struct ReasoningSummary {
    /// The point's id.
    pub point_id: u32,
    /// Median sent → first reasoning chunk per trial, across trials.
    pub ttft_reasoning_s: Option<Summary>,
    /// Median sent → first answer chunk per trial, across trials.
    pub ttft_answer_s: Option<Summary>,
    /// Reasoning chunks over all chunks per trial, across trials.
    pub reasoning_share: Option<Summary>,
}

/// The per-(trial, point) reasoning aggregates of `measured` rows' successful
/// requests (any set of whole (trial, point)s: the analysis feeds one at a time).
pub(crate) fn reasoning_frame(measured: LazyFrame) -> LazyFrame {
    let f = DataType::Float64;
    measured
        .filter(col(rq::ERROR_CLASS).is_null())
        .group_by([col(rq::TRIAL), col(rq::POINT_ID)])
        .agg([
            col(rq::TTFT_REASONING_S).median().alias("ttft_reasoning_s"),
            col(rq::TTFT_ANSWER_S).median().alias("ttft_answer_s"),
            col(rq::REASONING_CHUNKS)
                .cast(f.clone())
                .sum()
                .alias("reasoning"),
            (col(rq::REASONING_CHUNKS).cast(f.clone()).sum() / col(rq::CHUNKS).cast(f).sum())
                .alias("share"),
        ])
}

/// Summaries from [`reasoning_frame`]'s rows for every point with reasoning
/// chunks, by point; empty when none streamed reasoning.
pub(crate) fn reasoning_summaries(df: &DataFrame) -> PolarsResult<Vec<ReasoningSummary>> {
    let pid = u32s(df, rq::POINT_ID)?;
    let (thinking, answer, reasoning, share) = (
        f64s(df, "ttft_reasoning_s")?,
        f64s(df, "ttft_answer_s")?,
        f64s(df, "reasoning")?,
        f64s(df, "share")?,
    );
    let mut by_point: BTreeMap<u32, Vec<[f64; 3]>> = BTreeMap::new();
    for i in (0..df.height()).filter(|&i| reasoning[i] > 0.0) {
        by_point
            .entry(pid[i])
            .or_default()
            .push([thinking[i], answer[i], share[i]]);
    }
    Ok(by_point
        .into_iter()
        .map(|(point_id, trials)| {
            let of = |k: usize| Summary::of(&trials.iter().map(|t| t[k]).collect::<Vec<_>>());
            ReasoningSummary {
                point_id,
                ttft_reasoning_s: of(0),
                ttft_answer_s: of(1),
                reasoning_share: of(2),
            }
        })
        .collect())
}
