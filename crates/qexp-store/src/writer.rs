//! Writing a run folder as the run goes, so that a crash loses nothing
//! already measured.

use crate::error::StoreError;
use crate::journal::Journal;
use crate::layout::{
    files_of, merged, pair_file, parse_pair, INCOMPLETE, JOURNAL, PARTS, POINTS, REQUESTS,
    SUPERSEDED, WRITING,
};
use crate::lock::RunLock;
use crate::manifest::{Manifest, RunStatus, MANIFEST_FILE};
use crate::reader::{pairs_in, read_manifest};
use crate::rows::{points_frame, requests_frame, PointRow, RequestRow};
use chrono::{DateTime, Utc};
use polars::io::parquet::write::BatchedWriter as ParquetBatches;
use polars::prelude::*;
use rand::Rng;
use std::collections::BTreeSet;
use std::io::Write;
use std::path::{Path, PathBuf};

/// A run id: UTC start time plus a short random suffix, sortable by time.
pub fn new_run_id(now: DateTime<Utc>) -> String {
    let suffix: u32 = rand::rng().random_range(0..0x100_0000);
    format!("{}-{suffix:06x}", now.format("%Y%m%dT%H%M%SZ"))
}

/// Writes one run folder as the run goes: the manifest first; each finished
/// request to the journal of its (trial, point) as it finishes; a Parquet
/// part per finished (trial, point), merged by [`RunWriter::finish`].
/// A crash leaves the manifest (status `running`), every finished part and
/// the journal of the pair in progress; readers take all three.
#[derive(Debug)]
pub struct RunWriter {
    dir: PathBuf,
    manifest: Manifest,
    parts: u32,
    journal: Option<Journal>,
    complete: BTreeSet<(u32, u32)>,
    /// This process's hold on the folder, for as long as it writes.
    _lock: RunLock,
}

impl RunWriter {
    /// Creates `<root>/<experiment>/<run-id>/` (never an existing folder)
    /// and writes the manifest.
    pub fn create(root: &Path, manifest: Manifest) -> Result<RunWriter, StoreError> {
        let parent = root.join(&manifest.experiment);
        std::fs::create_dir_all(&parent).map_err(StoreError::io("cannot create", &parent))?;
        let dir = parent.join(manifest.folder_name());
        std::fs::create_dir(&dir).map_err(|source| match source.kind() {
            std::io::ErrorKind::AlreadyExists => StoreError::RunExists { path: dir.clone() },
            _ => StoreError::io("cannot create", &dir)(source),
        })?;
        let lock = RunLock::acquire(&dir)?;
        let parts = dir.join(PARTS);
        std::fs::create_dir(&parts).map_err(StoreError::io("cannot create", &parts))?;
        let w = RunWriter {
            dir,
            manifest,
            parts: 0,
            journal: None,
            complete: BTreeSet::new(),
            _lock: lock,
        };
        w.save_manifest()?;
        Ok(w)
    }

    /// Reopens a run for `qexp run --resume` ([`RunWriter::is_complete`]
    /// tells the pairs already complete). Merged files go back to being
    /// parts (merged again at the end); rows of incomplete pairs move to
    /// `superseded/`, so that the run ends with exactly its planned rows and
    /// nothing measured is deleted. `lock` is the folder's, taken before
    /// anything was asked of the server ([`RunLock::acquire`]).
    pub fn reopen(dir: &Path, lock: RunLock) -> Result<RunWriter, StoreError> {
        let manifest = read_manifest(dir)?;
        let parts = dir.join(PARTS);
        std::fs::create_dir_all(&parts).map_err(StoreError::io("cannot create", &parts))?;
        let list = |kind: &str| {
            files_of(&parts, kind, ".parquet").map_err(StoreError::io("cannot list", &parts))
        };
        for kind in [REQUESTS, POINTS] {
            let merged = merged(dir, kind);
            if !merged.exists() {
                continue;
            }
            // Parts beside a merged file are already in it.
            for stale in list(kind)? {
                std::fs::remove_file(&stale).map_err(StoreError::io("cannot remove", &stale))?;
            }
            let to = parts.join(format!("{kind}-00000.parquet"));
            std::fs::rename(&merged, &to).map_err(StoreError::io("cannot move", &merged))?;
        }
        let mut complete = BTreeSet::new();
        let mut last = 0;
        for f in list(POINTS)? {
            complete.extend(pairs_in(&f)?);
            last = last.max(part_number(&f).unwrap_or(0));
        }
        supersede(dir, &complete)?;
        let writer = RunWriter {
            dir: dir.to_path_buf(),
            manifest,
            parts: last,
            journal: None,
            complete,
            _lock: lock,
        };
        Ok(writer)
    }

    /// True when (`trial`, `point_id`) is complete in this run.
    pub fn is_complete(&self, trial: u32, point_id: u32) -> bool {
        self.complete.contains(&(trial, point_id))
    }

    /// How many (trial, point) pairs are complete in this run.
    pub fn complete_count(&self) -> usize {
        self.complete.len()
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

    /// Opens the journal of (`trial`, `point_id`): rows given to
    /// [`RunWriter::journal`] from now on go there.
    pub fn begin_point(&mut self, trial: u32, point_id: u32) -> Result<(), StoreError> {
        self.journal = Some(Journal::open(&self.dir, trial, point_id)?);
        Ok(())
    }

    /// Appends one finished request to the open journal (none open: a no-op).
    pub fn journal(&mut self, row: &RequestRow) -> Result<(), StoreError> {
        match &mut self.journal {
            Some(j) => j.append(row),
            None => Ok(()),
        }
    }

    /// Waits until the open journal holds every row given to it; reports
    /// the first failure to write it.
    pub fn flush_journal(&mut self) -> Result<(), StoreError> {
        match &mut self.journal {
            Some(j) => j.close(),
            None => Ok(()),
        }
    }

    /// Persists one complete (trial, point): its request rows and its point
    /// row, as a part to merge. Then drops its journal.
    pub fn write_point(
        &mut self,
        requests: &[RequestRow],
        point: &PointRow,
    ) -> Result<(), StoreError> {
        self.parts += 1;
        let n = self.parts;
        let names = [REQUESTS, POINTS].map(|kind| format!("{kind}-{n:05}.parquet"));
        self.write_pair(PARTS, names, requests, point)?;
        self.complete.insert((point.trial, point.point_id));
        Ok(())
    }

    /// Persists one (trial, point) an interrupt stopped part-way, under
    /// `incomplete/`: read with the run, never merged, measured again by
    /// `--resume`. Then drops its journal.
    pub fn write_incomplete_point(
        &mut self,
        requests: &[RequestRow],
        point: &PointRow,
    ) -> Result<(), StoreError> {
        let (t, p) = (point.trial, point.point_id);
        let names = [REQUESTS, POINTS].map(|kind| pair_file(kind, t, p, "parquet"));
        self.write_pair(INCOMPLETE, names, requests, point)
    }

    fn write_pair(
        &mut self,
        folder: &str,
        [req_name, pts_name]: [String; 2],
        requests: &[RequestRow],
        point: &PointRow,
    ) -> Result<(), StoreError> {
        let dir = self.dir.join(folder);
        std::fs::create_dir_all(&dir).map_err(StoreError::io("cannot create", &dir))?;
        let mut req = requests_frame(requests).map_err(StoreError::pq("cannot encode", &dir))?;
        write_parquet(&dir.join(req_name), &mut req)?;
        let mut pts = points_frame(std::slice::from_ref(point))
            .map_err(StoreError::pq("cannot encode", &dir))?;
        // The point row last: readers take a pair as written once it exists.
        write_parquet(&dir.join(pts_name), &mut pts)?;
        if let Some(mut j) = self.journal.take() {
            // Its rows are in Parquet now: a late journal failure loses nothing.
            let _ = j.close();
            let path = j.path().to_path_buf();
            std::fs::remove_file(&path).map_err(StoreError::io("cannot remove", &path))?;
        }
        Ok(())
    }

    /// Merges the parts into `requests.parquet` and `points.parquet`, then
    /// records the end time and status. Returns the run folder.
    pub fn finish(
        mut self,
        status: RunStatus,
        reason: Option<String>,
    ) -> Result<PathBuf, StoreError> {
        if let Some(mut j) = self.journal.take() {
            j.close()?;
        }
        merge_parts(&self.dir)?;
        self.manifest.status = status;
        self.manifest.stop_reason = reason;
        self.manifest.ended_at = Some(Utc::now());
        self.save_manifest()?;
        remove_empty_leftovers(&self.dir)?;
        // Dropping the writer lets go of the lock and removes its file.
        Ok(self.dir.clone())
    }
}

/// Writes a run made of other runs' request rows (`qexp merge`): creates
/// its folder (never an existing one, but for what a killed merge left),
/// takes request rows in the order they are to be stored, and writes them
/// straight into the run's request file as row groups of 262,144 rows, so
/// that at most about one row group is held and each row is written once;
/// then the point rows and the manifest. The request file is written under
/// a temporary name, renamed into place by [`MergeWriter::finish`]; the
/// manifest comes last, so a merge cut short leaves no manifest and no
/// reader takes the folder for a run.
pub struct MergeWriter {
    dir: PathBuf,
    /// The request file being written and a handle to sync it with; opened
    /// with the first row group (its schema is the rows').
    out: Option<(ParquetBatches<std::fs::File>, std::fs::File)>,
    pending: Vec<DataFrame>,
    pending_rows: usize,
}

impl MergeWriter {
    /// Creates `dir`; refuses a folder that exists, unless it is empty or
    /// all it holds is what a merge cut short (killed) leaves: its marker
    /// and the files it writes before its manifest, so no run. That folder
    /// is removed.
    pub fn create(dir: &Path) -> Result<MergeWriter, StoreError> {
        if let Some(parent) = dir.parent() {
            std::fs::create_dir_all(parent).map_err(StoreError::io("cannot create", parent))?;
        }
        if cut_short_merge(dir) {
            std::fs::remove_dir_all(dir).map_err(StoreError::io("cannot remove", dir))?;
        }
        std::fs::create_dir(dir).map_err(|source| match source.kind() {
            std::io::ErrorKind::AlreadyExists => StoreError::RunExists {
                path: dir.to_path_buf(),
            },
            _ => StoreError::io("cannot create", dir)(source),
        })?;
        // Says whose folder this is until the manifest does: a merge killed
        // before it ends leaves it, and the next merge knows the folder.
        let marker = dir.join(MERGING);
        std::fs::write(&marker, b"").map_err(StoreError::io("cannot create", &marker))?;
        Ok(MergeWriter {
            dir: dir.to_path_buf(),
            out: None,
            pending: Vec::new(),
            pending_rows: 0,
        })
    }

    /// Request rows, stored after those given before; written out a row
    /// group (262 144 rows) at a time.
    pub fn requests(&mut self, df: DataFrame) -> Result<(), StoreError> {
        self.pending_rows += df.height();
        self.pending.push(df);
        if self.pending_rows >= MERGE_ROW_GROUP {
            self.flush(false)?;
        }
        Ok(())
    }

    /// Writes the held rows as whole row groups; the rest (fewer than a row
    /// group) stays held, unless `last`.
    fn flush(&mut self, last: bool) -> Result<(), StoreError> {
        let target = merged(&self.dir, REQUESTS);
        let mut frames = std::mem::take(&mut self.pending).into_iter();
        self.pending_rows = 0;
        let Some(mut df) = frames.next() else {
            return Ok(());
        };
        for f in frames {
            df.vstack_mut_owned(f)
                .map_err(StoreError::pq("cannot encode", &target))?;
        }
        if self.out.is_none() {
            let tmp = target.with_extension(WRITING);
            let file =
                std::fs::File::create(&tmp).map_err(StoreError::io("cannot create", &tmp))?;
            let sync = file
                .try_clone()
                .map_err(StoreError::io("cannot open", &tmp))?;
            let w = ParquetWriter::new(file)
                .with_compression(ParquetCompression::Zstd(None))
                .batched(df.schema())
                .map_err(StoreError::pq("cannot encode", &target))?;
            self.out = Some((w, sync));
        }
        let Some((w, _)) = self.out.as_mut() else {
            return Ok(());
        };
        let whole = if last {
            df.height()
        } else {
            df.height() / MERGE_ROW_GROUP * MERGE_ROW_GROUP
        };
        // Each row group made one chunk (a copy of at most one row group;
        // a chunk is a row group to the writer).
        for start in (0..whole).step_by(MERGE_ROW_GROUP) {
            let len = MERGE_ROW_GROUP.min(whole - start);
            let mut group = df.slice(start as i64, len);
            group.rechunk_mut();
            w.write_batch(&group)
                .map_err(StoreError::pq("cannot write", &target))?;
        }
        if whole < df.height() {
            // Copied out, so that the rows written are freed now rather
            // than held with the rest until the next flush.
            let rest = df.height() - whole;
            let at: Vec<IdxSize> = (whole as IdxSize..df.height() as IdxSize).collect();
            let rest_df = df
                .take(&IdxCa::from_vec(PlSmallStr::EMPTY, at))
                .map_err(StoreError::pq("cannot encode", &target))?;
            self.pending_rows = rest;
            self.pending.push(rest_df);
        }
        Ok(())
    }

    /// Writes the rest of the request rows and renames their file into
    /// place, writes `points` as the point rows, then `manifest`: the
    /// folder is a run from here on.
    pub fn finish(mut self, manifest: &Manifest, points: &[PointRow]) -> Result<(), StoreError> {
        self.flush(true)?;
        let dir = &self.dir;
        let target = merged(dir, REQUESTS);
        match self.out.take() {
            Some((w, sync)) => {
                w.finish()
                    .map_err(StoreError::pq("cannot write", &target))?;
                let tmp = target.with_extension(WRITING);
                sync.sync_all()
                    .map_err(StoreError::io("cannot write", &target))?;
                std::fs::rename(&tmp, &target)
                    .map_err(StoreError::io("cannot rename into", &target))?;
            }
            None => {
                let mut df = requests_frame(&[]).map_err(StoreError::pq("cannot encode", dir))?;
                write_parquet(&target, &mut df)?;
            }
        }
        let mut pts = points_frame(points).map_err(StoreError::pq("cannot encode", dir))?;
        write_parquet(&merged(dir, POINTS), &mut pts)?;
        let json = serde_json::to_vec_pretty(manifest).map_err(|e| StoreError::Manifest {
            path: dir.join(MANIFEST_FILE),
            message: e.to_string(),
        })?;
        write_atomic(&dir.join(MANIFEST_FILE), |f| f.write_all(&json))?;
        let marker = dir.join(MERGING);
        std::fs::remove_file(&marker).map_err(StoreError::io("cannot remove", &marker))
    }
}

/// Once a run's results and manifest are on the device, removes the
/// folders that held files only while it ran and are empty now: the
/// journal's (every pair's rows are in Parquet), and `incomplete/` after a
/// `--resume` moved its pairs to `superseded/`. A folder that still holds
/// a file is kept: nothing measured is ever removed.
fn remove_empty_leftovers(dir: &Path) -> Result<(), StoreError> {
    // The renames that put the results in place, made durable first.
    std::fs::File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(StoreError::io("cannot sync", dir))?;
    for leftover in [JOURNAL, INCOMPLETE].map(|name| dir.join(name)) {
        let empty = std::fs::read_dir(&leftover).is_ok_and(|mut e| e.next().is_none());
        if empty {
            std::fs::remove_dir(&leftover).map_err(StoreError::io("cannot remove", &leftover))?;
        }
    }
    Ok(())
}

/// The file that marks a folder as a merge in progress (see [`MergeWriter`]).
const MERGING: &str = "merging.tmp";

/// True when `dir` is empty, or is a merge's (its marker) and holds only
/// what [`MergeWriter`] writes before its manifest: a merge killed
/// part-way. No manifest, no run; nothing else of anyone's.
fn cut_short_merge(dir: &Path) -> bool {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return false;
    };
    // Each file as written (under its temporary name) and as renamed.
    let files = [merged(dir, REQUESTS), merged(dir, POINTS)];
    let mut ours: Vec<PathBuf> = files.iter().map(|f| f.with_extension(WRITING)).collect();
    ours.extend(files);
    ours.push(dir.join(MANIFEST_FILE).with_extension(WRITING));
    ours.push(dir.join(MERGING));
    let ours: Vec<String> = ours
        .iter()
        .filter_map(|p| Some(p.file_name()?.to_string_lossy().into_owned()))
        .collect();
    let mut names = Vec::new();
    for e in entries {
        let Ok(e) = e else { return false };
        names.push(e.file_name().to_string_lossy().into_owned());
    }
    names.is_empty()
        || (names.iter().any(|n| n == MERGING) && names.iter().all(|n| ours.contains(n)))
}

/// `NNNNN` of `parts/<kind>-NNNNN.parquet`.
fn part_number(f: &Path) -> Option<u32> {
    let stem = f.file_stem()?.to_str()?;
    stem.rsplit_once('-')?.1.parse().ok()
}

/// Moves the journal and incomplete files of pairs not in `complete` to
/// `superseded/`; removes journals whose pair is complete (copies a crash
/// left between writing the part and removing the journal).
fn supersede(dir: &Path, complete: &BTreeSet<(u32, u32)>) -> Result<(), StoreError> {
    let to = dir.join(SUPERSEDED);
    let stamp = Utc::now().format("%Y%m%dT%H%M%S%.3fZ");
    for (from, is_journal) in [(dir.join(JOURNAL), true), (dir.join(INCOMPLETE), false)] {
        if !from.exists() {
            continue;
        }
        let entries = std::fs::read_dir(&from).map_err(StoreError::io("cannot list", &from))?;
        for entry in entries {
            let path = entry.map_err(StoreError::io("cannot list", &from))?.path();
            let Some(name) = path.file_name().and_then(|n| n.to_str()) else {
                continue;
            };
            let done = parse_pair(name).is_some_and(|p| complete.contains(&p));
            if done && is_journal {
                std::fs::remove_file(&path).map_err(StoreError::io("cannot remove", &path))?;
                continue;
            }
            std::fs::create_dir_all(&to).map_err(StoreError::io("cannot create", &to))?;
            let target = to.join(format!("{stamp}-{name}"));
            std::fs::rename(&path, &target).map_err(StoreError::io("cannot move", &path))?;
        }
    }
    Ok(())
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
    for (prefix, empty) in [(REQUESTS, requests_frame(&[])), (POINTS, points_frame(&[]))] {
        let target = merged(dir, prefix);
        let files =
            files_of(&parts, prefix, ".parquet").map_err(StoreError::io("cannot list", &parts))?;
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
    let tmp = path.with_extension(WRITING);
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
