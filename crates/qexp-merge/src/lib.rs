//! qexp-merge, `qexp merge SHARD_DIR… --out RUN`: the shards of one run (`qexp run
//! --shard K/N`) put together into one ordinary run folder that `report`,
//! `diff` and `--resume` read like any other.
//!
//! The shards must share their run id, plan hash and shard count, and
//! every shard must be complete, unless `--partial` (the run is then
//! marked partial and lacks the missing shards' requests). The request
//! rows are concatenated as the shards wrote them: their times are on
//! shard 0's clock already and their `shard` column says who sent them.
//! Each (trial, point) row is recomputed from the union of the requests
//! (see `rows.rs`).

mod check;
mod error;
mod rows;

pub use error::MergeError;

use qexp_client::ClientTiming;
use qexp_plan::{InputTolerance, Plan};
use qexp_runner::record::{AnswerKeeping, Context, Tally};
use qexp_store::{
    LostShard, Manifest, MergeRecord, MergeWriter, MergedShard, PointRow, RequestIndex, RunStatus,
};
use rows::{Health, Pair};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// What `qexp merge` was asked to do.
#[derive(Debug, Clone)]
pub struct MergeOptions {
    /// The shard folders.
    pub shards: Vec<PathBuf>,
    /// The merged run's folder (must not exist).
    pub out: PathBuf,
    /// Merge even when shards are missing or incomplete, marking the run partial.
    pub partial: bool,
    /// Rows of a (trial, point) read at a time ([`MERGE_PIECE_ROWS`]; tests
    /// use few, to cut (trial, point)s into many pieces).
    pub piece_rows: usize,
}

/// A merged run.
#[derive(Debug, Clone)]
pub struct Merged {
    /// Its folder.
    pub dir: PathBuf,
    /// Its manifest.
    pub manifest: Manifest,
    /// Measured requests in it.
    pub requests: usize,
    /// One sentence per shard left out (`--partial`).
    pub missing: Vec<String>,
}

/// Merges the shards of `opts` into `opts.out`.
pub fn merge(opts: &MergeOptions) -> Result<Merged, MergeError> {
    let roll = check::roll(&opts.shards)?;
    if !roll.missing.is_empty() && !opts.partial {
        return Err(MergeError::Missing(
            roll.missing.values().cloned().collect(),
        ));
    }
    let Some((_, (_, base))) = roll.complete.iter().next() else {
        return Err(MergeError::NoneComplete);
    };
    let plan =
        Plan::parse(Path::new(&base.plan_path), &base.plan_text).map_err(MergeError::Plan)?;
    let tolerance = plan.file.workload.prompt_tolerance();
    let mut shards = Vec::new();
    let mut health: BTreeMap<Pair, Vec<(u32, Health)>> = BTreeMap::new();
    for (k, (dir, _)) in &roll.complete {
        shards.push(Shard {
            index: *k,
            dir: dir.clone(),
            rows: RequestIndex::of(dir, BATCH_ROWS)?,
        });
        for (pair, h) in rows::health(dir)? {
            health.entry(pair).or_default().push((*k, h));
        }
    }
    let manifest = merged_manifest(&roll, base);
    let mut out = MergeWriter::create(&opts.out)?;
    let written = point_rows(base, &shards, &health, tolerance, opts.piece_rows, &mut out)
        .and_then(|(points, requests)| {
            out.finish(&manifest, &points)?;
            Ok(requests)
        });
    let requests = match written {
        Ok(n) => n,
        Err(e) => {
            // The folder is this merge's own and holds no run: a merge
            // that failed leaves nothing in the way of the next try.
            let _ = std::fs::remove_dir_all(&opts.out);
            return Err(e);
        }
    };
    Ok(Merged {
        dir: opts.out.clone(),
        manifest,
        requests,
        missing: roll.missing.into_values().collect(),
    })
}

/// Rows of a shard's key columns read at a time when indexing it: a
/// multiple of a merged file's row group (262 144 rows).
const BATCH_ROWS: usize = 4 * 262_144;
/// Rows of a (trial, point) read at a time in a merge: one row group of a
/// merged file.
pub const MERGE_PIECE_ROWS: usize = 262_144;

/// A complete shard and where its (trial, point)s' rows lie.
struct Shard {
    index: u32,
    dir: PathBuf,
    rows: RequestIndex,
}

/// One row per (trial, point) of the run, from the union of the shards'
/// requests, and how many measured requests there were; every request row
/// goes to `out` as it is read, (trial, point) by (trial, point), each one's
/// rows shard by shard. A (trial, point) is read a piece (a row group) at
/// a time and added up ([`Tally`], [`rows::Spans`]), so a merge of hundreds
/// of millions of requests holds neither the run nor a (trial, point) of
/// it; and the merged file keeps each (trial, point) in one block, which is
/// what lets the report's pass over it read one at a time too.
fn point_rows(
    base: &Manifest,
    shards: &[Shard],
    health: &BTreeMap<Pair, Vec<(u32, Health)>>,
    tolerance: InputTolerance,
    piece_rows: usize,
    out: &mut MergeWriter,
) -> Result<(Vec<PointRow>, usize), MergeError> {
    let mut points = Vec::new();
    let mut requests = 0;
    let bar = progress_bar(u64::from(base.trials) * base.points.len() as u64);
    for trial in 1..=base.trials {
        for point in &base.points {
            let key = (trial, point.id);
            let structured = qexp_plan::structured::Structured::default();
            let ctx = Context {
                items: &[],
                structured: &structured,
                classes: &[],
                run_id: &base.run_id,
                client_host: "",
                trial,
                point,
                point_order: rows::order_of(&base.point_order, trial, point),
                deployment: None,
                shard: None,
                shift_s: 0.0,
                requests_planned: point.requests,
                // Rows are copied from the shards as they are: none is made here.
                answers: AnswerKeeping::new(qexp_plan::KeepAnswers::None, &[], 0),
            };
            // Two reads of the (trial, point), a piece at a time: the
            // window every shard was sending in first; then every column,
            // each piece written out as it comes and added up.
            let window = sending_window(shards, key, piece_rows)?;
            let mut tally = Tally::new(tolerance);
            let mut tokens = 0.0;
            for s in shards {
                s.rows
                    .read_pieces(key, None, piece_rows, |df| -> Result<(), MergeError> {
                        let measured = rows::measured(&df, &s.dir, s.index)?;
                        measured.iter().for_each(|r| tally.add(r));
                        if let Some(w) = window {
                            rows::add_tokens_inside(&mut tokens, &measured, w);
                        }
                        out.requests(df)?;
                        Ok(())
                    })?;
            }
            requests += tally.measured();
            let h = health.get(&key).map_or(&[][..], Vec::as_slice);
            let window = window.map(|w| (w, tokens));
            points.push(rows::merged_point(&ctx, &tally, window, h));
            bar.inc(1);
        }
    }
    bar.finish_and_clear();
    // Rows of a (trial, point) the plan does not name are kept as they were.
    let planned: BTreeSet<Pair> = (1..=base.trials)
        .flat_map(|t| base.points.iter().map(move |p| (t, p.id)))
        .collect();
    for s in shards {
        for key in s.rows.pairs().filter(|k| !planned.contains(k)) {
            s.rows
                .read_pieces(key, None, piece_rows, |df| out.requests(df))?;
        }
    }
    Ok((points, requests))
}

/// A merge of millions of requests takes a while: a bar on a terminal.
fn progress_bar(len: u64) -> indicatif::ProgressBar {
    let bar = indicatif::ProgressBar::new(len);
    bar.set_style(
        indicatif::ProgressStyle::with_template(
            "merge: point rows [{bar:30}] {pos}/{len} {elapsed}",
        )
        .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar())
        .progress_chars("=> "),
    );
    bar
}

/// The window in which every shard of the run was sending the (trial,
/// point) `key` ([`rows::Spans::common`]), read from the shards' spans of
/// sends (three columns) a piece at a time; none for a run of one shard.
fn sending_window(
    shards: &[Shard],
    key: Pair,
    piece_rows: usize,
) -> Result<Option<(f64, f64)>, MergeError> {
    if shards.len() < 2 {
        return Ok(None);
    }
    let mut spans = rows::Spans::default();
    for s in shards {
        s.rows
            .read_pieces(key, Some(&rows::SPAN_COLUMNS), piece_rows, |df| {
                spans.add(&df, &s.dir, s.index)
            })?;
    }
    Ok(spans.common())
}

/// The merged shards that did not run in step with the others to the end:
/// each one another merged shard declared lost (the first such record),
/// and each one that went on alone once it could not reach shard 0 (not
/// one that saw shard 0 stop while its rendezvous still served).
fn out_of_step(roll: &check::Roll) -> Vec<LostShard> {
    let lost_by = |m: &Manifest| m.shard.as_ref().map(|s| s.lost.clone()).unwrap_or_default();
    let mut out = Vec::new();
    for k in roll.complete.keys() {
        let seen = roll
            .complete
            .iter()
            .filter(|(j, _)| *j != k)
            .flat_map(|(_, (_, m))| lost_by(m))
            .filter(|l| l.shard == *k)
            .min_by_key(|l| l.at);
        let alone = || {
            let (_, m) = &roll.complete[k];
            (*k != 0)
                .then(|| {
                    lost_by(m)
                        .into_iter()
                        .find(|l| l.shard == 0 && l.message.ends_with(qexp_store::WENT_ON_ALONE))
                })
                .flatten()
                .map(|l| LostShard { shard: *k, ..l })
        };
        if let Some(l) = seen.or_else(alone) {
            out.push(l);
        }
    }
    out
}

/// The merged run's manifest: the first complete shard's, less its shard
/// record, with what was merged.
fn merged_manifest(roll: &check::Roll, base: &Manifest) -> Manifest {
    let shards = roll
        .complete
        .iter()
        .map(|(k, (dir, m))| MergedShard {
            index: *k,
            dir: dir.display().to_string(),
            host: m.host.hostname.clone(),
            clock_offset_s: m.shard.as_ref().map_or(0.0, |s| s.clock_offset_s),
        })
        .collect();
    let all = || roll.complete.values().map(|(_, m)| m);
    let partial = !roll.missing.is_empty();
    Manifest {
        shard: None,
        merged: Some(MergeRecord {
            count: roll.count,
            shards,
            missing: roll.missing.keys().copied().collect(),
            partial,
            out_of_step: out_of_step(roll),
            at: chrono::Utc::now(),
        }),
        status: RunStatus::Complete,
        stop_reason: partial.then(|| {
            format!(
                "partial merge (--partial): {}",
                roll.missing
                    .values()
                    .cloned()
                    .collect::<Vec<_>>()
                    .join("; ")
            )
        }),
        client_timing: merged_timing(all().map(|m| m.client_timing)),
        started_at: all().map(|m| m.started_at).min().unwrap_or(base.started_at),
        ended_at: all().filter_map(|m| m.ended_at).max(),
        ..base.clone()
    }
}

/// The timing the merged rows had: the shards' common one, or, when they
/// differ, one that does not claim kernel stamps for every read (a shard
/// that fell back read without them).
fn merged_timing(mut timings: impl Iterator<Item = Option<ClientTiming>>) -> Option<ClientTiming> {
    let first = timings.next().flatten();
    let mut all = vec![first];
    all.extend(timings);
    if all.iter().all(|t| *t == first) {
        return first;
    }
    all.into_iter()
        .flatten()
        .find(|t| *t != ClientTiming::Http1KernelStamps)
        .or(Some(ClientTiming::Http1FromWire))
}

#[cfg(test)]
mod tests {
    use super::merged_timing;
    use qexp_client::ClientTiming::{Http1FromWire, Http1KernelStamps, ReqwestFromWire};

    #[test]
    fn shards_that_agree_keep_their_timing() {
        let t = [Some(Http1KernelStamps), Some(Http1KernelStamps)];
        assert_eq!(merged_timing(t.into_iter()), Some(Http1KernelStamps));
        assert_eq!(merged_timing([None, None].into_iter()), None);
    }

    #[test]
    fn one_shard_that_fell_back_takes_the_kernel_claim_away() {
        let t = [
            Some(Http1KernelStamps),
            Some(Http1FromWire),
            Some(Http1KernelStamps),
        ];
        assert_eq!(merged_timing(t.into_iter()), Some(Http1FromWire));
        let t = [Some(Http1KernelStamps), None];
        assert_eq!(merged_timing(t.into_iter()), Some(Http1FromWire));
        let t = [Some(Http1KernelStamps), Some(ReqwestFromWire)];
        assert_eq!(merged_timing(t.into_iter()), Some(ReqwestFromWire));
    }
}
