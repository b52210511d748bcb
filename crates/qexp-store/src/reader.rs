use crate::error::StoreError;
use crate::journal::read_journal;
use crate::layout::{files_of, merged, parse_pair, INCOMPLETE, JOURNAL, PARTS, POINTS, REQUESTS};
use crate::manifest::{Manifest, MANIFEST_FILE, SCHEMA_VERSION};
use crate::rows::{points_frame, requests as rq, requests_frame};
use polars::prelude::*;
use std::collections::BTreeSet;
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
pub fn for_each_request_batch(
    run: &Path,
    columns: &[&str],
    batch_rows: usize,
    mut f: impl FnMut(DataFrame) -> PolarsResult<()>,
) -> Result<(), StoreError> {
    let columns: Vec<String> = columns.iter().map(|c| c.to_string()).collect();
    let batch_rows = batch_rows.max(1);
    let src = sources(run, REQUESTS)?;
    for path in src.parquet {
        let err = |e| StoreError::pq("cannot read", &path)(e);
        let open = || std::fs::File::open(&path).map_err(StoreError::io("cannot open", &path));
        let mut reader = ParquetReader::new(open()?);
        let metadata = reader.get_metadata().map_err(err)?.clone();
        let total = metadata.num_rows;
        for offset in (0..total).step_by(batch_rows) {
            let mut reader = ParquetReader::new(open()?);
            reader.set_metadata(metadata.clone());
            let df = reader
                .with_columns(Some(columns.clone()))
                .with_slice(Some((offset, batch_rows.min(total - offset))))
                .read_parallel(ParallelStrategy::RowGroups)
                .finish()
                .map_err(err)?;
            f(df).map_err(err)?;
        }
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

/// Lazily scans a run's point rows.
pub fn scan_points(run: &Path) -> Result<LazyFrame, StoreError> {
    scan(run, POINTS)
}

/// Every run folder under `root` (`<root>/<experiment>/<run-id>/manifest.json`).
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
                runs.push(RunRef {
                    dir: id.path(),
                    experiment: exp.file_name().to_string_lossy().into_owned(),
                    run_id: id.file_name().to_string_lossy().into_owned(),
                });
            }
        }
    }
    runs.sort_by(|a, b| (&a.experiment, &a.run_id).cmp(&(&b.experiment, &b.run_id)));
    runs
}

/// The newest run of each experiment (run ids sort by start time).
pub fn latest_runs(root: &Path) -> Vec<RunRef> {
    let mut latest: Vec<RunRef> = Vec::new();
    for run in find_runs(root) {
        match latest.last_mut() {
            Some(last) if last.experiment == run.experiment => *last = run,
            _ => latest.push(run),
        }
    }
    latest
}
