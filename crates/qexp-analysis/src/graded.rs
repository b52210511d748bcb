//! The graded requests of `[accuracy]` as the analysis reads them: each
//! non-warmup row's item and whether its answer was right, kept per
//! (trial, point), and a trial's share right. What they add up to per point
//! and how two sides compare is `accuracy`'s.

use polars::prelude::*;
use qexp_store::requests as rq;
use serde::Serialize;
use std::collections::BTreeMap;

/// One graded request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Graded {
    /// The item it asked.
    pub item: String,
    /// Right or wrong; None when the request failed (not graded).
    pub correct: Option<bool>,
}

/// Adds the graded (non-warmup) rows of `df` (columns trial, point id,
/// warmup, item id, correct) to their (trial, point)s.
pub(crate) fn collect(
    df: &DataFrame,
    into: &mut BTreeMap<(u32, u32), Vec<Graded>>,
) -> PolarsResult<()> {
    let item = df.column(rq::ITEM_ID)?.str()?.clone();
    if item.null_count() == item.len() {
        return Ok(());
    }
    let (trial, point) = (
        crate::columns::u32s(df, rq::TRIAL)?,
        crate::columns::u32s(df, rq::POINT_ID)?,
    );
    let warmup = df.column(rq::WARMUP)?.bool()?.clone();
    let correct = df.column(rq::CORRECT)?.bool()?.clone();
    for i in 0..df.height() {
        let (Some(id), false) = (item.get(i), warmup.get(i).unwrap_or(false)) else {
            continue;
        };
        into.entry((trial[i], point[i])).or_default().push(Graded {
            item: id.to_string(),
            correct: correct.get(i),
        });
    }
    Ok(())
}

/// A trial's accuracy (NaN when it graded nothing).
pub(crate) fn of_trial(graded: &[Graded]) -> f64 {
    let answered = graded.iter().filter(|g| g.correct.is_some()).count();
    let right = graded.iter().filter(|g| g.correct == Some(true)).count();
    right as f64 / answered as f64
}
