//! Failed requests by point and error class, each with how many failed, in
//! which trials, and one of their messages: what a reader needs to tell a
//! server that refused (HTTP 503, context length) from a stream that broke.

use crate::columns::{f64s, u32s};
use polars::prelude::*;
use qexp_store::requests as rq;
use serde::Serialize;

/// Measured requests of one point that failed with one error class.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FailureGroup {
    /// The point's id.
    pub point_id: u32,
    /// The error class, as stored (`stream_broken`, `http_5xx`, …).
    pub class: String,
    /// Failed requests of this class at the point, over every trial.
    pub count: u64,
    /// The trials they happened in, ascending.
    pub trials: Vec<u32>,
    /// One of their messages (the first written), as the client recorded it.
    pub message: String,
}

/// The failures of `measured` rows counted by (point, class, trial), each
/// with its first message (any set of whole (trial, point)s: the analysis
/// feeds one at a time).
pub(crate) fn failure_frame(measured: LazyFrame) -> LazyFrame {
    measured
        .filter(col(rq::ERROR_CLASS).is_not_null())
        .group_by([col(rq::POINT_ID), col(rq::ERROR_CLASS), col(rq::TRIAL)])
        .agg([
            len().cast(DataType::Float64).alias("n"),
            col(rq::ERROR_MESSAGE).first().alias("message"),
        ])
}

/// The failure groups from [`failure_frame`]'s rows, by point then by count
/// (largest first).
pub(crate) fn failure_groups(df: &DataFrame) -> PolarsResult<Vec<FailureGroup>> {
    let df = df.sort(
        [rq::POINT_ID, rq::ERROR_CLASS, rq::TRIAL],
        SortMultipleOptions::default(),
    )?;
    let (pid, trial, n) = (
        u32s(&df, rq::POINT_ID)?,
        u32s(&df, rq::TRIAL)?,
        f64s(&df, "n")?,
    );
    let class = df.column(rq::ERROR_CLASS)?.str()?.clone();
    let message = df.column("message")?.str()?.clone();
    let mut out: Vec<FailureGroup> = Vec::new();
    for i in 0..df.height() {
        let c = class.get(i).unwrap_or_default();
        match out.last_mut() {
            Some(g) if g.point_id == pid[i] && g.class == c => {
                g.count += n[i] as u64;
                g.trials.push(trial[i]);
            }
            _ => out.push(FailureGroup {
                point_id: pid[i],
                class: c.to_string(),
                count: n[i] as u64,
                trials: vec![trial[i]],
                message: message.get(i).unwrap_or_default().to_string(),
            }),
        }
    }
    out.sort_by(|a, b| a.point_id.cmp(&b.point_id).then(b.count.cmp(&a.count)));
    Ok(out)
}
