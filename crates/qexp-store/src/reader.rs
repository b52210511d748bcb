//! Reading run folders: the manifest, and the rows of requests and points
//! from the merged Parquet files, their parts and the journal.

use crate::error::StoreError;
use crate::journal::read_journal;
use crate::layout::{files_of, merged, parse_pair, INCOMPLETE, JOURNAL, PARTS, POINTS, REQUESTS};
use crate::manifest::{Manifest, MANIFEST_FILE, SCHEMA_VERSION};
use crate::rows::{points_frame, requests as rq, requests_frame};
use chrono::{DateTime, Utc};
use polars::prelude::*;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// A run folder found on disk.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunRef {
    /// `results/<experiment>/<run-id>`.
    pub dir: PathBuf,
    /// The experiment folder's name.
    pub experiment: String,
    /// The run folder's name.
    pub run_id: String,
    /// When the run started (its manifest's `started_at`); None when the
    /// manifest does not read.
    pub started_at: Option<DateTime<Utc>>,
    /// True for one shard's folder of a run split over several processes
    /// (its manifest has `shard`): part of a run, at part of its load.
    pub shard: bool,
}

/// Reads a run's manifest; refuses one written by a newer qexp.
pub fn read_manifest(run: &Path) -> Result<Manifest, StoreError> {
    let path = run.join(MANIFEST_FILE);
    if !path.is_file() {
        return Err(StoreError::NotARun {
            path: run.to_path_buf(),
        });
    }
    let text = std::fs::read_to_string(&path).map_err(StoreError::io("cannot read", &path))?;
    let bad = |e: serde_json::Error| StoreError::Manifest {
        path: path.clone(),
        message: e.to_string(),
    };
    let value: serde_json::Value = serde_json::from_str(&text).map_err(bad)?;
    // Checked before the shape: a newer layout may not parse as this one.
    if let Some(found) = value.get("schema_version").and_then(|v| v.as_u64()) {
        if found > u64::from(SCHEMA_VERSION) {
            return Err(StoreError::NewerSchema {
                path: path.clone(),
                found,
                supported: SCHEMA_VERSION,
            });
        }
    }
    serde_json::from_value(value).map_err(bad)
}

/// Where a run's rows of one kind are, as a reader takes them: the merged
/// file (or, before the merge, the parts), the pairs an interrupt stopped,
/// and for requests the journal rows of pairs that reached no Parquet file.
struct Sources {
    parquet: Vec<PathBuf>,
    journal: Vec<PathBuf>,
}

fn sources(run: &Path, kind: &str) -> Result<Sources, StoreError> {
    read_manifest(run)?;
    let parquet = parquet_files(run, kind)?;
    let journal = if kind == REQUESTS {
        let written = written_pairs(run)?;
        let dir = run.join(JOURNAL);
        files_of(&dir, kind, ".jsonl")
            .map_err(StoreError::io("cannot list", &dir))?
            .into_iter()
            .filter(|f| {
                let pair = f.file_name().and_then(|n| n.to_str()).and_then(parse_pair);
                // A journal whose pair reached Parquet is a copy left by a crash.
                pair.is_none_or(|p| !written.contains(&p))
            })
            .collect()
    } else {
        Vec::new()
    };
    Ok(Sources { parquet, journal })
}

/// The Parquet files of `kind`: the merged file (or, before the merge, the
/// parts), then the pairs an interrupt stopped.
fn parquet_files(run: &Path, kind: &str) -> Result<Vec<PathBuf>, StoreError> {
    let list =
        |dir: &Path| files_of(dir, kind, ".parquet").map_err(StoreError::io("cannot list", dir));
    let merged = merged(run, kind);
    let mut files = if merged.exists() {
        // Parts left beside a merged file are copies the merge had not yet removed.
        vec![merged]
    } else {
        list(&run.join(PARTS))?
    };
    files.extend(list(&run.join(INCOMPLETE))?);
    Ok(files)
}

/// (trial, point) pairs that have a point row in a Parquet file.
pub(crate) fn written_pairs(run: &Path) -> Result<BTreeSet<(u32, u32)>, StoreError> {
    let mut pairs = BTreeSet::new();
    for f in parquet_files(run, POINTS)? {
        pairs.extend(pairs_in(&f)?);
    }
    Ok(pairs)
}

/// The (trial, point_id) pairs of the rows of one Parquet file (requests
/// and points name both columns alike).
pub(crate) fn pairs_in(f: &Path) -> Result<Vec<(u32, u32)>, StoreError> {
    let pq = |e| StoreError::pq("cannot read", f)(e);
    let file = std::fs::File::open(f).map_err(StoreError::io("cannot open", f))?;
    let df = ParquetReader::new(file)
        .with_columns(Some(vec![rq::TRIAL.into(), rq::POINT_ID.into()]))
        .finish()
        .map_err(pq)?;
    let trial = df
        .column(rq::TRIAL)
        .and_then(|c| c.u32().cloned())
        .map_err(pq)?;
    let point = df
        .column(rq::POINT_ID)
        .and_then(|c| c.u32().cloned())
        .map_err(pq)?;
    Ok(trial
        .iter()
        .zip(point.iter())
        .filter_map(|(t, p)| Some((t?, p?)))
        .collect())
}

/// The journal rows of `files` as one `requests` frame.
fn journal_frame(files: &[PathBuf]) -> Result<Option<DataFrame>, StoreError> {
    if files.is_empty() {
        return Ok(None);
    }
    let mut rows = Vec::new();
    for f in files {
        rows.extend(read_journal(f)?);
    }
    let df = requests_frame(&rows).map_err(StoreError::pq("cannot read", &files[0]))?;
    Ok(Some(df))
}

fn empty(kind: &str) -> PolarsResult<DataFrame> {
    if kind == REQUESTS {
        requests_frame(&[])
    } else {
        points_frame(&[])
    }
}

fn scan(run: &Path, name: &str) -> Result<LazyFrame, StoreError> {
    let src = sources(run, name)?;
    let mut frames = src
        .parquet
        .iter()
        .map(|f| {
            LazyFrame::scan_parquet(
                PlRefPath::new(f.to_string_lossy().as_ref()),
                ScanArgsParquet::default(),
            )
        })
        .collect::<PolarsResult<Vec<_>>>()
        .map_err(StoreError::pq("cannot read", run))?;
    if let Some(df) = journal_frame(&src.journal)? {
        frames.push(df.lazy());
    }
    if frames.is_empty() {
        // A run killed before its first request finished: no rows yet.
        return Ok(empty(name)
            .map_err(StoreError::pq("cannot read", run))?
            .lazy());
    }
    concat(frames, UnionArgs::default()).map_err(StoreError::pq("cannot read", run))
}

/// Lazily scans a run's request rows (merged file, or parts of a crashed run).
pub fn scan_requests(run: &Path) -> Result<LazyFrame, StoreError> {
    scan(run, REQUESTS)
}

/// Reads a run's request rows in file order, `batch_rows` rows at a time
/// (the last batch of each file may be shorter), only `columns`, and hands
/// each batch to `f`.
///
/// For the per-request data that outgrows memory when read whole (chunk
/// arrival offsets: one list per request). Only the row groups a batch
/// overlaps are decoded, in parallel; a merged file's row groups hold at most
/// 262 144 rows, so a multiple of that keeps batches aligned with them.
///
/// The next batch is decoded on a thread of its own while `f` takes the
/// current one (two batches held at most), except when called on a worker
/// of polars' pool (runs analysed side by side, `qexp report` over a
/// workspace): there every worker could be waiting on a reader whose
/// decoding waits on those workers, so each batch is decoded in turn.
pub fn for_each_request_batch(
    run: &Path,
    columns: &[&str],
    batch_rows: usize,
    mut f: impl FnMut(DataFrame) -> PolarsResult<()>,
) -> Result<(), StoreError> {
    let columns: Vec<String> = columns.iter().map(|c| c.to_string()).collect();
    let batch_rows = batch_rows.max(1);
    let src = sources(run, REQUESTS)?;
    let ahead = polars_core::runtime::RAYON.current_thread_index().is_none();
    for path in &src.parquet {
        let err = |e| StoreError::pq("cannot read", path)(e);
        let file = ParquetFile::open(path)?;
        let read = |offset: usize| {
            let len = batch_rows.min(file.rows - offset);
            file.read(Some(columns.clone()), offset, len)
        };
        let offsets = (0..file.rows).step_by(batch_rows);
        if !ahead {
            for offset in offsets {
                f(read(offset).map_err(err)?).map_err(err)?;
            }
            continue;
        }
        std::thread::scope(|s| -> Result<(), StoreError> {
            let (tx, rx) = std::sync::mpsc::sync_channel::<PolarsResult<DataFrame>>(0);
            s.spawn(move || {
                for offset in offsets {
                    let df = read(offset);
                    let failed = df.is_err();
                    // A closed channel: `f` failed, and nothing more is wanted.
                    if tx.send(df).is_err() || failed {
                        return;
                    }
                }
            });
            for df in rx {
                f(df.map_err(err)?).map_err(err)?;
            }
            Ok(())
        })?;
    }
    if let Some(df) = journal_frame(&src.journal)? {
        let df = df
            .select(columns.iter().map(|c| c.as_str()))
            .map_err(StoreError::pq("cannot read", run))?;
        for offset in (0..df.height()).step_by(batch_rows) {
            f(df.slice(offset as i64, batch_rows)).map_err(StoreError::pq("cannot read", run))?;
        }
    }
    Ok(())
}

/// One request file, its metadata read once for every slice read from it.
struct ParquetFile {
    path: PathBuf,
    metadata: polars::io::parquet::metadata::FileMetadataRef,
    rows: usize,
    /// The first row of each row group, and the file's row count last.
    group_starts: Vec<usize>,
}

impl ParquetFile {
    fn open(path: &Path) -> Result<ParquetFile, StoreError> {
        let file = std::fs::File::open(path).map_err(StoreError::io("cannot open", path))?;
        let mut reader = ParquetReader::new(file);
        let metadata = reader
            .get_metadata()
            .map_err(StoreError::pq("cannot read", path))?
            .clone();
        let mut group_starts = vec![0];
        for g in &metadata.row_groups {
            group_starts.push(group_starts[group_starts.len() - 1] + g.num_rows());
        }
        Ok(ParquetFile {
            path: path.to_path_buf(),
            rows: metadata.num_rows,
            metadata,
            group_starts,
        })
    }

    /// Rows in the row groups that rows `offset..offset + len` overlap.
    fn decoded_rows(&self, offset: usize, len: usize) -> usize {
        let end = offset + len;
        self.group_starts
            .windows(2)
            .filter(|g| g[0] < end && g[1] > offset)
            .map(|g| g[1] - g[0])
            .sum()
    }

    /// [`ParquetFile::read`], the rows copied out when they are a small
    /// part of the row groups decoded for them: a slice would keep those
    /// whole row groups alive for as long as it is held.
    fn read_owned(
        &self,
        columns: Option<Vec<String>>,
        offset: usize,
        len: usize,
    ) -> PolarsResult<DataFrame> {
        let df = self.read(columns, offset, len)?;
        if 2 * len >= self.decoded_rows(offset, len) {
            return Ok(df);
        }
        let all: Vec<IdxSize> = (0..df.height() as IdxSize).collect();
        df.take(&IdxCa::from_vec(PlSmallStr::EMPTY, all))
    }

    /// Rows `offset..offset + len`, `columns` of them (all when `None`);
    /// only the row groups the slice overlaps are decoded, in parallel.
    fn read(
        &self,
        columns: Option<Vec<String>>,
        offset: usize,
        len: usize,
    ) -> PolarsResult<DataFrame> {
        let file = std::fs::File::open(&self.path)?;
        let mut reader = ParquetReader::new(file);
        reader.set_metadata(self.metadata.clone());
        reader
            .with_columns(columns)
            .with_slice(Some((offset, len)))
            .read_parallel(ParallelStrategy::RowGroups)
            .finish()
    }
}

/// Where each (trial, point)'s request rows (warm-up included) lie in a
/// run's files: read once from the two key columns, so that one (trial,
/// point) at a time can then be read whole, without the rest of the run
/// (`qexp merge` recomputing each point row from the union of its shards).
pub struct RequestIndex {
    run: PathBuf,
    files: Vec<ParquetFile>,
    /// Per (trial, point): its blocks of rows, in file order.
    ranges: BTreeMap<(u32, u32), Vec<Block>>,
    /// Journal rows (pairs that reached no Parquet file; few), whole.
    journal: Option<DataFrame>,
}

/// Rows of one (trial, point) in a row, in one file.
#[derive(Debug, Clone, Copy)]
struct Block {
    /// Index of the file in [`RequestIndex::files`].
    file: usize,
    /// Its first row in the file.
    first: usize,
    rows: usize,
}

impl RequestIndex {
    /// Indexes the request rows of `run`, reading its key columns
    /// `batch_rows` rows at a time.
    pub fn of(run: &Path, batch_rows: usize) -> Result<RequestIndex, StoreError> {
        let batch_rows = batch_rows.max(1);
        let src = sources(run, REQUESTS)?;
        let mut index = RequestIndex {
            run: run.to_path_buf(),
            files: Vec::new(),
            ranges: BTreeMap::new(),
            journal: journal_frame(&src.journal)?,
        };
        let keys = Some(vec![rq::TRIAL.to_string(), rq::POINT_ID.to_string()]);
        for (i, path) in src.parquet.iter().enumerate() {
            let pq = |e| StoreError::pq("cannot read", path)(e);
            let file = ParquetFile::open(path)?;
            for offset in (0..file.rows).step_by(batch_rows) {
                let len = batch_rows.min(file.rows - offset);
                let df = file.read(keys.clone(), offset, len).map_err(pq)?;
                let (trial, point) = key_columns(&df).map_err(pq)?;
                let mut start = 0;
                for r in 1..=df.height() {
                    if r < df.height() && (trial[r], point[r]) == (trial[start], point[start]) {
                        continue;
                    }
                    let key = (trial[start].unwrap_or(0), point[start].unwrap_or(0));
                    let ranges = index.ranges.entry(key).or_default();
                    let at = offset + start;
                    match ranges.last_mut() {
                        // A block cut by the batch's end goes on in the next.
                        Some(b) if b.file == i && b.first + b.rows == at => b.rows += r - start,
                        _ => ranges.push(Block {
                            file: i,
                            first: at,
                            rows: r - start,
                        }),
                    }
                    start = r;
                }
            }
            index.files.push(file);
        }
        if let Some(df) = &index.journal {
            let (trial, point) = key_columns(df).map_err(StoreError::pq("cannot read", run))?;
            for (t, p) in trial.iter().zip(&point) {
                index
                    .ranges
                    .entry((t.unwrap_or(0), p.unwrap_or(0)))
                    .or_default();
            }
        }
        Ok(index)
    }

    /// The (trial, point)s with rows, in order.
    pub fn pairs(&self) -> impl Iterator<Item = (u32, u32)> + '_ {
        self.ranges.keys().copied()
    }

    /// The rows of (`trial`, `point`) in file order (warm-up included), with
    /// `columns` (all when `None`); `None` when it has none.
    pub fn read(
        &self,
        key: (u32, u32),
        columns: Option<&[&str]>,
    ) -> Result<Option<DataFrame>, StoreError> {
        let mut out: Option<DataFrame> = None;
        self.read_pieces(key, columns, usize::MAX, |df| match &mut out {
            Some(o) => o
                .vstack_mut_owned(df)
                .map(|_| ())
                .map_err(StoreError::pq("cannot read", &self.run)),
            None => {
                out = Some(df);
                Ok(())
            }
        })?;
        Ok(out)
    }

    /// [`RequestIndex::read`], handed to `f` at most `max_rows` rows at a
    /// time (the journal's rows, which are few, in one piece), so that a
    /// (trial, point) of any size can be gone through without holding it.
    pub fn read_pieces<E: From<StoreError>>(
        &self,
        (trial, point): (u32, u32),
        columns: Option<&[&str]>,
        max_rows: usize,
        mut f: impl FnMut(DataFrame) -> Result<(), E>,
    ) -> Result<(), E> {
        let names: Option<Vec<String>> = columns.map(|c| c.iter().map(|c| c.to_string()).collect());
        let max_rows = max_rows.max(1);
        for b in self.ranges.get(&(trial, point)).into_iter().flatten() {
            let file = &self.files[b.file];
            let pq = |e| StoreError::pq("cannot read", &file.path)(e);
            for start in (0..b.rows).step_by(max_rows) {
                let len = max_rows.min(b.rows - start);
                f(file
                    .read_owned(names.clone(), b.first + start, len)
                    .map_err(pq)?)?;
            }
        }
        if let Some(j) = &self.journal {
            let pq = |e| StoreError::pq("cannot read", &self.run)(e);
            let mask = j
                .column(rq::TRIAL)
                .and_then(|c| c.as_materialized_series().equal(trial))
                .and_then(|a| {
                    let b = j
                        .column(rq::POINT_ID)?
                        .as_materialized_series()
                        .equal(point)?;
                    Ok(a & b)
                })
                .map_err(pq)?;
            if mask.any() {
                let rows = j.filter(&mask).map_err(pq)?;
                let rows = match &names {
                    Some(c) => rows.select(c.iter().map(|c| c.as_str())).map_err(pq)?,
                    None => rows,
                };
                f(rows)?;
            }
        }
        Ok(())
    }
}

/// One u32 column's values.
type U32s = Vec<Option<u32>>;

/// The trial and point id columns of `df`.
fn key_columns(df: &DataFrame) -> PolarsResult<(U32s, U32s)> {
    let get = |name: &str| -> PolarsResult<U32s> {
        Ok(df
            .column(name)?
            .cast(&DataType::UInt32)?
            .u32()?
            .iter()
            .collect())
    };
    Ok((get(rq::TRIAL)?, get(rq::POINT_ID)?))
}

/// Lazily scans a run's point rows.
pub fn scan_points(run: &Path) -> Result<LazyFrame, StoreError> {
    scan(run, POINTS)
}

/// Every run folder under `root` (`<root>/<experiment>/<run-id>/manifest.json`),
/// by experiment, then oldest first by start (its manifest's `started_at`:
/// a run id given with `--run-id` says nothing of when the run started),
/// runs whose manifest does not read before the others.
pub fn find_runs(root: &Path) -> Vec<RunRef> {
    let mut runs = Vec::new();
    let Ok(exps) = std::fs::read_dir(root) else {
        return runs;
    };
    for exp in exps.filter_map(Result::ok).filter(|e| e.path().is_dir()) {
        let Ok(ids) = std::fs::read_dir(exp.path()) else {
            continue;
        };
        for id in ids.filter_map(Result::ok) {
            if id.path().join(MANIFEST_FILE).is_file() {
                let head = head(&id.path());
                runs.push(RunRef {
                    dir: id.path(),
                    experiment: exp.file_name().to_string_lossy().into_owned(),
                    run_id: id.file_name().to_string_lossy().into_owned(),
                    started_at: head.as_ref().map(|h| h.started_at),
                    shard: head.is_some_and(|h| h.shard.is_some()),
                });
            }
        }
    }
    runs.sort_by(|a, b| {
        (&a.experiment, a.started_at, &a.run_id).cmp(&(&b.experiment, b.started_at, &b.run_id))
    });
    runs
}

/// What [`find_runs`] reads of a manifest: its start, and whether it is a shard's.
#[derive(serde::Deserialize)]
struct Head {
    started_at: DateTime<Utc>,
    #[serde(default)]
    shard: Option<serde::de::IgnoredAny>,
}

/// A run's [`Head`], read from its manifest without the rest of it.
fn head(run: &Path) -> Option<Head> {
    let text = std::fs::read(run.join(MANIFEST_FILE)).ok()?;
    serde_json::from_slice::<Head>(&text).ok()
}

/// The run a command line names: a run folder, or a run id (or a prefix of
/// one that only one run has) under `results`. An id that one run has
/// exactly wins over runs it is only a prefix of, so a merged run `ID` is
/// found beside its shard folders `ID-shardK-of-N`.
pub fn resolve_run(run: &Path, results: &Path) -> Result<PathBuf, StoreError> {
    if run.join(MANIFEST_FILE).is_file() {
        return Ok(run.to_path_buf());
    }
    let name = run.to_string_lossy();
    // A path (or nothing) is a folder that is not a run, never an id.
    if name.is_empty() || run.components().count() != 1 || run.is_dir() {
        return Err(StoreError::NotARun {
            path: run.to_path_buf(),
        });
    }
    let found: Vec<RunRef> = find_runs(results)
        .into_iter()
        .filter(|r| r.run_id.starts_with(name.as_ref()))
        .collect();
    let exact: Vec<&RunRef> = found.iter().filter(|r| r.run_id == name).collect();
    match (exact.as_slice(), found.as_slice()) {
        ([one], _) => Ok(one.dir.clone()),
        ([], [one]) => Ok(one.dir.clone()),
        ([], []) => Err(StoreError::NoSuchRun {
            name: name.into_owned(),
            root: results.to_path_buf(),
        }),
        (_, many) => Err(StoreError::AmbiguousRunId {
            name: name.into_owned(),
            count: many.len(),
            root: results.to_path_buf(),
        }),
    }
}

/// The newest run of each experiment, by start ([`find_runs`] order);
/// shard folders are parts of a run, never an experiment's newest run.
pub fn latest_runs(root: &Path) -> Vec<RunRef> {
    let mut latest: Vec<RunRef> = Vec::new();
    for run in find_runs(root).into_iter().filter(|r| !r.shard) {
        match latest.last_mut() {
            Some(last) if last.experiment == run.experiment => *last = run,
            _ => latest.push(run),
        }
    }
    latest
}
