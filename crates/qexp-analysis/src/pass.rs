//! Reads over a run's measured request rows, a (trial, point) at a time.
//!
//! A report of a hundred million requests cannot hold its rows, nor one
//! (trial, point)'s: the rows are read a few row groups at a time
//! ([`qexp_store::for_each_request_batch`]) and handed over as pieces, each
//! a run of rows of one (trial, point), then dropped. Statistics that are
//! sums or counts add the pieces up; exact percentiles of a (trial, point)
//! too large to hold read its rows again (`crate::stats::select`), so the
//! run may be read more than once, each time with the same rows. How many
//! measured rows each (trial, point) has is counted first, from the key
//! columns alone, and every read gives each (trial, point) exactly its
//! counted rows (the first ones, in file order; rows written since the
//! count, while the run was still running, are left out), then says that
//! it has ended.

use crate::columns::u32s;
use crate::error::AnalysisError;
use polars::prelude::*;
use qexp_store::requests as rq;
use std::collections::BTreeMap;
use std::path::Path;

/// A (trial, point): the key of every per-trial statistic.
pub(crate) type TrialPoint = (u32, u32);

/// What the count read finds: measured rows per (trial, point), and
/// whether any of them belongs to a multi-turn session or streamed
/// reasoning (the summaries of those hold a (trial, point)'s rows whole).
#[derive(Debug, Default)]
pub(crate) struct Counted {
    pub(crate) rows: BTreeMap<TrialPoint, usize>,
    pub(crate) turns: bool,
    pub(crate) reasoning: bool,
    /// The graded requests (`[accuracy]`) of each (trial, point), which
    /// the measured rows leave out.
    pub(crate) graded: BTreeMap<TrialPoint, Vec<crate::graded::Graded>>,
}

/// Counts the measured rows of the run's (trial, point)s from the key
/// columns (and notes turns and reasoning where the run has the columns).
pub(crate) fn count(
    dir: &Path,
    schema: &Schema,
    batch_rows: usize,
) -> Result<Counted, AnalysisError> {
    let mut counted = Counted::default();
    let mut columns = vec![rq::TRIAL, rq::POINT_ID, rq::WARMUP];
    let (turns, reasoning) = (
        schema.contains(rq::TURN),
        schema.contains(rq::REASONING_CHUNKS),
    );
    if turns {
        columns.push(rq::TURN);
    }
    if reasoning {
        columns.push(rq::REASONING_CHUNKS);
    }
    let graded = schema.contains(rq::ITEM_ID) && schema.contains(rq::CORRECT);
    if graded {
        columns.extend([rq::ITEM_ID, rq::CORRECT]);
    }
    qexp_store::for_each_request_batch(dir, &columns, batch_rows, |df| {
        if graded {
            crate::graded::collect(&df, &mut counted.graded)?;
        }
        let df = measured(df)?;
        if turns && !counted.turns {
            counted.turns = df.column(rq::TURN)?.null_count() < df.height();
        }
        if reasoning && !counted.reasoning {
            let chunks = df.column(rq::REASONING_CHUNKS)?.cast(&DataType::Float64)?;
            counted.reasoning = chunks.f64()?.iter().flatten().any(|c| c > 0.0);
        }
        for (key, piece) in blocks(&df)? {
            *counted.rows.entry(key).or_default() += piece.height();
        }
        Ok(())
    })?;
    Ok(counted)
}

/// One read of the run's measured rows with `columns` (those the run has;
/// [`rq::TRIAL`], [`rq::POINT_ID`] and [`rq::WARMUP`] always, and
/// [`rq::ITEM_ID`] when the run has `graded` rows to leave out), `batch_rows`
/// at a time: `each(key, Some(rows))` for each piece of a (trial, point), in
/// file order, and `each(key, None)` once its `expected` rows have all been
/// given (or, for one whose rows fell short of the count, at the end).
pub(crate) fn read(
    dir: &Path,
    graded: bool,
    expected: &BTreeMap<TrialPoint, usize>,
    columns: &[&str],
    batch_rows: usize,
    mut each: impl FnMut(TrialPoint, Option<DataFrame>) -> PolarsResult<()>,
) -> Result<(), AnalysisError> {
    let mut seen: BTreeMap<TrialPoint, usize> = BTreeMap::new();
    let keys = [rq::TRIAL, rq::POINT_ID, rq::WARMUP];
    let mut wanted = keys.to_vec();
    wanted.extend(columns.iter().filter(|c| !keys.contains(c)));
    // Graded rows are left out of every read as of the count.
    if graded && !wanted.contains(&rq::ITEM_ID) {
        wanted.push(rq::ITEM_ID);
    }
    qexp_store::for_each_request_batch(dir, &wanted, batch_rows, |df| {
        let df = measured(df)?;
        for (key, piece) in blocks(&df)? {
            let Some(&want) = expected.get(&key) else {
                continue;
            };
            let got = seen.entry(key).or_default();
            if *got >= want {
                continue;
            }
            let take = piece.height().min(want - *got);
            *got += take;
            each(key, Some(piece.slice(0, take)))?;
            if *got == want {
                each(key, None)?;
            }
        }
        Ok(())
    })?;
    // A (trial, point) with fewer rows than counted (its file replaced
    // since): ended with what there was.
    for (key, &want) in expected {
        if seen.get(key).copied().unwrap_or(0) < want {
            each(*key, None).map_err(|source| AnalysisError::Query {
                path: dir.to_path_buf(),
                source,
            })?;
        }
    }
    Ok(())
}

/// The measured (not warm-up, not graded) rows of `df`; `df` itself,
/// uncopied, when it has no other row (most batches of a long run). A
/// graded request loads the server like the others, but its prompt is an
/// item's, so its timing is no sample of the point's.
fn measured(df: DataFrame) -> PolarsResult<DataFrame> {
    let mut measured = !df.column(rq::WARMUP)?.bool()?;
    if let Ok(item) = df.column(rq::ITEM_ID) {
        measured = measured & item.is_null();
    }
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

#[cfg(test)]
mod tests {
    use super::*;
    use qexp_testkit::SynthRun;

    const PLAN: &str = "[experiment]\nname = \"pass\"\nversion = 1\n\n[target]\nbase_url = \"http://127.0.0.1:1\"\nmodel = \"m\"\n\n\
        [workload]\ninput_tokens = 100\noutput_tokens = 10\n\n[sweep]\nconcurrency = [1, 2]\n\n\
        [run]\nrequests = 12\ntrials = 2\n";

    /// Each read gives a (trial, point) exactly its counted rows, in
    /// pieces, then ends it once, however the batches cut them; rows beyond
    /// the count (written since, by a run still running) are left out.
    #[test]
    fn a_read_gives_each_trial_point_its_counted_rows_then_ends_it() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = SynthRun::new(PLAN, "r", "2026-12-01T10:00:00Z").write(tmp.path());
        let schema = qexp_store::scan_requests(&dir)
            .unwrap()
            .collect_schema()
            .unwrap();
        let actual = count(&dir, &schema, 5).unwrap().rows;
        assert_eq!(actual.len(), 4, "{actual:?}");
        let mut expected = actual.clone();
        for n in expected.values_mut() {
            *n -= 4;
        }
        let mut rows: BTreeMap<TrialPoint, usize> = BTreeMap::new();
        let mut ended: Vec<TrialPoint> = Vec::new();
        read(&dir, false, &expected, &[], 5, |key, piece| {
            assert!(!ended.contains(&key), "{key:?} given after its end");
            match piece {
                Some(p) => *rows.entry(key).or_default() += p.height(),
                None => ended.push(key),
            }
            Ok(())
        })
        .unwrap();
        assert_eq!(rows, expected);
        ended.sort();
        assert_eq!(ended, expected.keys().copied().collect::<Vec<_>>());
    }

    /// Batches decoded ahead on a thread of their own (a call from outside
    /// polars' pool) come in the same order, with the same rows, as those
    /// decoded in turn (a call from a pool worker); a failure in the
    /// caller's function ends either read with that error.
    #[test]
    fn batches_decoded_ahead_or_in_turn_are_the_same_and_a_failure_ends_the_read() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = SynthRun::new(PLAN, "r", "2026-12-01T10:00:00Z").write(tmp.path());
        let columns = [rq::TRIAL, rq::POINT_ID, rq::REQUEST_INDEX];
        let read_all = || {
            let mut batches: Vec<DataFrame> = Vec::new();
            qexp_store::for_each_request_batch(&dir, &columns, 5, |df| {
                batches.push(df);
                Ok(())
            })
            .unwrap();
            batches
        };
        let ahead = read_all();
        let in_turn = polars_core::runtime::RAYON.install(read_all);
        assert!(ahead.len() > 3, "{} batches", ahead.len());
        assert_eq!(ahead, in_turn);
        let fail_second = || {
            let mut calls = 0;
            let r = qexp_store::for_each_request_batch(&dir, &columns, 5, |_| {
                calls += 1;
                match calls {
                    2 => Err(PolarsError::ComputeError("stop here".into())),
                    _ => Ok(()),
                }
            });
            (r.map_err(|e| qexp_types::error::chain(&e)), calls)
        };
        for (r, calls) in [
            fail_second(),
            polars_core::runtime::RAYON.install(fail_second),
        ] {
            assert!(r.unwrap_err().contains("stop here"));
            assert_eq!(calls, 2);
        }
    }
}
