//! One pass over a run's measured request rows, a (trial, point) at a time.
//!
//! A report of a hundred million requests cannot hold its rows: the rows are
//! read a few row groups at a time ([`qexp_store::for_each_request_batch`]),
//! and each (trial, point)'s rows are handed over whole, as one frame, as
//! soon as the last of them has been read, then dropped. The runner writes
//! each (trial, point) as one block, so about one (trial, point) is held at a
//! time, whatever the run's length: memory grows with the largest (trial,
//! point), not with the run. How many measured rows each (trial, point) has
//! is counted first, from the two key columns alone, so that a block's end
//! is known when it is read and a (trial, point) whose rows are spread out
//! (a resumed run's journal) still comes whole, once.
//!
//! Every per-(trial, point) statistic is computed from that frame, so each
//! one is exact (percentiles over all of a (trial, point)'s requests, never
//! merged from pieces).

use crate::columns::u32s;
use crate::error::AnalysisError;
use polars::prelude::*;
use qexp_store::requests as rq;
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// A (trial, point): the key of every per-trial statistic.
pub(crate) type TrialPoint = (u32, u32);

/// Rows of one (trial, point) read so far.
#[derive(Default)]
struct Open {
    rows: usize,
    pieces: Vec<DataFrame>,
}

/// Calls `each` with every (trial, point) of the run's measured (not
/// warm-up) request rows, in the order their last row is read, with its
/// `columns` (those of them the run has; [`rq::TRIAL`], [`rq::POINT_ID`] and
/// [`rq::WARMUP`] always) as one frame, once. Rows are read `batch_rows` at
/// a time. `expected` is [`measured_rows`] of the run: rows of a (trial,
/// point) read after its counted rows (written since the count, while the
/// run was still running) are left out.
pub(crate) fn for_each_trial_point(
    dir: &Path,
    expected: &BTreeMap<TrialPoint, usize>,
    columns: &[&str],
    batch_rows: usize,
    mut each: impl FnMut(TrialPoint, DataFrame) -> PolarsResult<()>,
) -> Result<(), AnalysisError> {
    let mut open: BTreeMap<TrialPoint, Open> = BTreeMap::new();
    // Handed over already: rows of these read later were written after the
    // count (a run still running), and are left out, so that a (trial,
    // point) is handed over once, whole as counted.
    let mut done: BTreeSet<TrialPoint> = BTreeSet::new();
    let keys = [rq::TRIAL, rq::POINT_ID, rq::WARMUP];
    let mut wanted = keys.to_vec();
    wanted.extend(columns.iter().filter(|c| !keys.contains(c)));
    qexp_store::for_each_request_batch(dir, &wanted, batch_rows, |df| {
        let df = measured(df)?;
        for (key, piece) in blocks(&df)? {
            if done.contains(&key) {
                continue;
            }
            let group = open.entry(key).or_default();
            group.rows += piece.height();
            group.pieces.push(piece);
            if group.rows >= expected.get(&key).copied().unwrap_or(usize::MAX) {
                if let Some(group) = open.remove(&key) {
                    done.insert(key);
                    each(key, stack(group.pieces)?)?;
                }
            }
        }
        Ok(())
    })?;
    // A (trial, point) whose count disagreed (not expected): still handed over.
    let q = |source| AnalysisError::Query {
        path: dir.to_path_buf(),
        source,
    };
    for (key, group) in open {
        each(key, stack(group.pieces).map_err(q)?).map_err(q)?;
    }
    Ok(())
}

/// Measured rows per (trial, point), from the key columns alone: read
/// before the pass, so that a (trial, point)'s end is known when it is read
/// and what depends on a point's trials (their count) is known before any.
pub(crate) fn measured_rows(
    dir: &Path,
    batch_rows: usize,
) -> Result<BTreeMap<TrialPoint, usize>, AnalysisError> {
    let mut counts: BTreeMap<TrialPoint, usize> = BTreeMap::new();
    let columns = [rq::TRIAL, rq::POINT_ID, rq::WARMUP];
    qexp_store::for_each_request_batch(dir, &columns, batch_rows, |df| {
        for (key, piece) in blocks(&measured(df)?)? {
            *counts.entry(key).or_default() += piece.height();
        }
        Ok(())
    })?;
    Ok(counts)
}

/// The measured (not warm-up) rows of `df`; `df` itself, uncopied, when
/// it has no warm-up row (most batches of a long run).
fn measured(df: DataFrame) -> PolarsResult<DataFrame> {
    let measured = !df.column(rq::WARMUP)?.bool()?;
    if measured.all() {
        return Ok(df);
    }
    df.filter(&measured)
}

/// `df` cut into its runs of rows with one (trial, point) (slices, no copy).
fn blocks(df: &DataFrame) -> PolarsResult<Vec<(TrialPoint, DataFrame)>> {
    let (trial, point) = (u32s(df, rq::TRIAL)?, u32s(df, rq::POINT_ID)?);
    let mut out = Vec::new();
    let mut start = 0;
    for i in 1..=df.height() {
        let key = (trial[start], point[start]);
        if i == df.height() || (trial[i], point[i]) != key {
            out.push((key, df.slice(start as i64, i - start)));
            start = i;
        }
    }
    Ok(out)
}

/// The pieces of one (trial, point) as one frame (their chunks appended, not copied).
fn stack(pieces: Vec<DataFrame>) -> PolarsResult<DataFrame> {
    let mut pieces = pieces.into_iter();
    let Some(mut df) = pieces.next() else {
        return Ok(DataFrame::empty());
    };
    for p in pieces {
        df.vstack_mut_owned(p)?;
    }
    Ok(df)
}

#[cfg(test)]
mod tests {
    use super::*;
    use qexp_testkit::SynthRun;

    const PLAN: &str = "[experiment]\nname = \"pass\"\nversion = 1\n\n[target]\nbase_url = \"http://127.0.0.1:1\"\nmodel = \"m\"\n\n\
        [workload]\ninput_tokens = 100\noutput_tokens = 10\n\n[sweep]\nconcurrency = [1, 2]\n\n\
        [run]\nrequests = 12\ntrials = 2\n";

    /// Rows written after the count (a run still running) are left out: each
    /// (trial, point) is handed over once, with at least its counted rows.
    #[test]
    fn a_trial_point_is_handed_over_once_even_when_rows_outnumber_the_count() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = SynthRun::new(PLAN, "r", "2026-12-01T10:00:00Z").write(tmp.path());
        let actual = measured_rows(&dir, 5).unwrap();
        assert_eq!(actual.len(), 4, "{actual:?}");
        let mut expected = actual.clone();
        for n in expected.values_mut() {
            *n -= 4;
        }
        let mut seen: Vec<(TrialPoint, usize)> = Vec::new();
        for_each_trial_point(&dir, &expected, &[], 5, |key, rows| {
            seen.push((key, rows.height()));
            Ok(())
        })
        .unwrap();
        let keys: BTreeSet<TrialPoint> = seen.iter().map(|(k, _)| *k).collect();
        assert_eq!(seen.len(), 4, "{seen:?}");
        assert_eq!(keys.len(), 4, "{seen:?}");
        for (key, height) in seen {
            assert!(
                height >= expected[&key] && height <= actual[&key],
                "{key:?}: {height}"
            );
        }
    }
}
