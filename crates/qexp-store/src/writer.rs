use crate::error::StoreError;
use crate::manifest::{Manifest, RunStatus, MANIFEST_FILE};
use crate::rows::{points_frame, requests_frame, PointRow, RequestRow};
use chrono::{DateTime, Utc};
use polars::prelude::*;
use rand::Rng;
use std::io::Write;
use std::path::{Path, PathBuf};

const PARTS: &str = "parts";

/// A run id: UTC start time plus a short random suffix, sortable by time.
pub fn new_run_id(now: DateTime<Utc>) -> String {
    let suffix: u32 = rand::rng().random_range(0..0x100_0000);
    format!("{}-{suffix:06x}", now.format("%Y%m%dT%H%M%SZ"))
}

/// Writes one run folder as the run goes: the manifest first, then a
/// Parquet part per finished (trial, point), merged by [`RunWriter::finish`].
/// A crash leaves the manifest (status `running`) and every finished part.
#[derive(Debug)]
pub struct RunWriter {
    dir: PathBuf,
    manifest: Manifest,
    parts: u32,
}

impl RunWriter {
    /// Creates `<root>/<experiment>/<run-id>/` and writes the manifest.
    pub fn create(root: &Path, manifest: Manifest) -> Result<RunWriter, StoreError> {
        let dir = root.join(&manifest.experiment).join(&manifest.run_id);
        std::fs::create_dir_all(dir.join(PARTS)).map_err(StoreError::io("cannot create", &dir))?;
        let w = RunWriter {
            dir,
            manifest,
            parts: 0,
        };
        w.save_manifest()?;
        Ok(w)
    }

    /// The run folder.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The manifest as it will next be saved.
    pub fn manifest(&self) -> &Manifest {
        &self.manifest
    }

    /// Mutable manifest; call [`RunWriter::save_manifest`] to persist.
    pub fn manifest_mut(&mut self) -> &mut Manifest {
        &mut self.manifest
    }

    /// Writes `manifest.json` atomically.
    pub fn save_manifest(&self) -> Result<(), StoreError> {
        let json = serde_json::to_vec_pretty(&self.manifest).map_err(|e| StoreError::Manifest {
            path: self.dir.join(MANIFEST_FILE),
            message: e.to_string(),
        })?;
        write_atomic(&self.dir.join(MANIFEST_FILE), |f| f.write_all(&json))
    }

    /// Persists one finished (trial, point): its request rows and its point row.
    pub fn write_point(
        &mut self,
        requests: &[RequestRow],
        point: &PointRow,
    ) -> Result<(), StoreError> {
        self.parts += 1;
        let n = self.parts;
        let parts = self.dir.join(PARTS);
        let mut req = requests_frame(requests).map_err(StoreError::pq("cannot encode", &parts))?;
        write_parquet(&parts.join(format!("requests-{n:05}.parquet")), &mut req)?;
        let mut pts = points_frame(std::slice::from_ref(point))
            .map_err(StoreError::pq("cannot encode", &parts))?;
        write_parquet(&parts.join(format!("points-{n:05}.parquet")), &mut pts)
    }

    /// Merges the parts into `requests.parquet` and `points.parquet`, then
    /// records the end time and status. Returns the run folder.
    pub fn finish(
        mut self,
        status: RunStatus,
        reason: Option<String>,
    ) -> Result<PathBuf, StoreError> {
        merge_parts(&self.dir)?;
        self.manifest.status = status;
        self.manifest.stop_reason = reason;
        self.manifest.ended_at = Some(Utc::now());
        self.save_manifest()?;
        Ok(self.dir)
    }
}

/// Concatenates `parts/*-NNNNN.parquet` into the two run files and removes
/// the parts. Safe to run again on a folder whose merge was interrupted.
///
/// Parts are streamed: read one at a time, gathered until they reach
/// [`MERGE_ROW_GROUP`] rows, and written as row groups of at most that many
/// (the gathered rest may make a smaller one), so a run of millions of
/// requests merges in the memory of about one row group, not of the run.
pub(crate) fn merge_parts(dir: &Path) -> Result<(), StoreError> {
    let parts = dir.join(PARTS);
    for (prefix, empty) in [
        ("requests", requests_frame(&[])),
        ("points", points_frame(&[])),
    ] {
        let target = dir.join(format!("{prefix}.parquet"));
        let files = part_files(&parts, prefix)?;
        if files.is_empty() {
            let mut df = empty.map_err(StoreError::pq("cannot encode", &target))?;
            write_parquet(&target, &mut df)?;
            continue;
        }
        let read = |f: &Path| -> Result<DataFrame, StoreError> {
            let file = std::fs::File::open(f).map_err(StoreError::io("cannot open", f))?;
            ParquetReader::new(file)
                .finish()
                .map_err(StoreError::pq("cannot read", f))
        };
        let first = read(&files[0])?;
        let schema = first.schema().clone();
        write_atomic(&target, |out| {
            let io = std::io::Error::other;
            let mut w = ParquetWriter::new(out)
                .with_compression(ParquetCompression::Zstd(None))
                .batched(&schema)
                .map_err(io)?;
            // Writes `df` as row groups of at most MERGE_ROW_GROUP rows.
            let mut flush = |df: &mut DataFrame| -> std::io::Result<()> {
                df.rechunk_mut();
                for start in (0..df.height()).step_by(MERGE_ROW_GROUP) {
                    w.write_batch(&df.slice(start as i64, MERGE_ROW_GROUP))
                        .map_err(io)?;
                }
                Ok(())
            };
            let mut pending = first;
            for f in &files[1..] {
                if pending.height() >= MERGE_ROW_GROUP {
                    flush(&mut pending)?;
                    pending = DataFrame::empty_with_schema(&schema);
                }
                let next = read(f).map_err(std::io::Error::other)?;
                pending.vstack_mut(&next).map_err(io)?;
            }
            flush(&mut pending)?;
            w.finish().map(|_| ()).map_err(io)
        })?;
    }
    if parts.exists() {
        std::fs::remove_dir_all(&parts).map_err(StoreError::io("cannot remove", &parts))?;
    }
    Ok(())
}

/// Rows per row group of a merged run file (polars' own default).
const MERGE_ROW_GROUP: usize = 512 * 512;

/// Part files for `prefix`, in write order.
pub(crate) fn part_files(parts: &Path, prefix: &str) -> Result<Vec<PathBuf>, StoreError> {
    if !parts.exists() {
        return Ok(Vec::new());
    }
    let mut files: Vec<PathBuf> = std::fs::read_dir(parts)
        .map_err(StoreError::io("cannot list", parts))?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with(&format!("{prefix}-")) && n.ends_with(".parquet"))
        })
        .collect();
    files.sort();
    Ok(files)
}

fn write_parquet(path: &Path, df: &mut DataFrame) -> Result<(), StoreError> {
    write_atomic(path, |f| {
        ParquetWriter::new(f)
            .with_compression(ParquetCompression::Zstd(None))
            .finish(df)
            .map(|_| ())
            .map_err(std::io::Error::other)
    })
}

/// Writes to `<path>.tmp`, syncs, then renames: readers never see half a file.
fn write_atomic(
    path: &Path,
    write: impl FnOnce(&mut std::fs::File) -> std::io::Result<()>,
) -> Result<(), StoreError> {
    let tmp = path.with_extension("tmp");
    let mut f = std::fs::File::create(&tmp).map_err(StoreError::io("cannot create", &tmp))?;
    write(&mut f).and_then(|_| f.sync_all()).map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        StoreError::Io {
            action: "cannot write",
            path: path.to_path_buf(),
            source: e,
        }
    })?;
    std::fs::rename(&tmp, path).map_err(StoreError::io("cannot rename into", path))
}
