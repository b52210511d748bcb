use crate::error::StoreError;
use crate::manifest::{Manifest, MANIFEST_FILE};
use crate::writer::part_files;
use polars::prelude::*;
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

/// Reads a run's manifest.
pub fn read_manifest(run: &Path) -> Result<Manifest, StoreError> {
    let path = run.join(MANIFEST_FILE);
    if !path.exists() {
        return Err(StoreError::NotARun {
            path: run.to_path_buf(),
        });
    }
    let text = std::fs::read_to_string(&path).map_err(StoreError::io("cannot read", &path))?;
    serde_json::from_str(&text).map_err(|e| StoreError::Manifest {
        path,
        message: e.to_string(),
    })
}

/// The Parquet files that hold a run's `name` rows, in write order.
fn files(run: &Path, name: &str) -> Result<Vec<PathBuf>, StoreError> {
    let merged = run.join(format!("{name}.parquet"));
    let files = if merged.exists() {
        vec![merged]
    } else {
        // A run that crashed before merging still has its parts.
        part_files(&run.join("parts"), name)?
    };
    if files.is_empty() {
        return Err(StoreError::NotARun {
            path: run.to_path_buf(),
        });
    }
    Ok(files)
}

fn scan(run: &Path, name: &str) -> Result<LazyFrame, StoreError> {
    let files = files(run, name)?;
    let frames = files
        .iter()
        .map(|f| {
            LazyFrame::scan_parquet(
                PlRefPath::new(f.to_string_lossy().as_ref()),
                ScanArgsParquet::default(),
            )
        })
        .collect::<PolarsResult<Vec<_>>>()
        .map_err(StoreError::pq("cannot read", run))?;
    concat(frames, UnionArgs::default()).map_err(StoreError::pq("cannot read", run))
}

/// Lazily scans a run's request rows (merged file, or parts of a crashed run).
pub fn scan_requests(run: &Path) -> Result<LazyFrame, StoreError> {
    scan(run, "requests")
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
    for path in files(run, "requests")? {
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
    Ok(())
}

/// Lazily scans a run's point rows.
pub fn scan_points(run: &Path) -> Result<LazyFrame, StoreError> {
    scan(run, "points")
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
