//! The request journal: while a (trial, point) runs, each finished request
//! is appended to `journal/requests-tTTTT-pPPPPP.jsonl` as one JSON line,
//! in one write, the moment it finishes. A `kill -9` therefore loses only
//! the requests in flight. The file is synced to the device on the first
//! append [`JOURNAL_SYNC_EVERY`] or more after the last sync, and when the
//! run finishes; when the pair is written as Parquet (itself synced) its
//! journal is removed.

use crate::error::StoreError;
use crate::layout::{pair_file, JOURNAL, REQUESTS};
use crate::rows::RequestRow;
use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// Least time between two syncs of a journal to the device.
pub const JOURNAL_SYNC_EVERY: Duration = Duration::from_secs(1);

/// The open journal of one (trial, point).
#[derive(Debug)]
pub struct Journal {
    path: PathBuf,
    file: File,
    synced: Instant,
}

impl Journal {
    /// Opens (creating) the journal of (`trial`, `point_id`) in `run`.
    pub(crate) fn open(run: &Path, trial: u32, point_id: u32) -> Result<Journal, StoreError> {
        let dir = run.join(JOURNAL);
        std::fs::create_dir_all(&dir).map_err(StoreError::io("cannot create", &dir))?;
        let path = dir.join(pair_file(REQUESTS, trial, point_id, "jsonl"));
        let file = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .map_err(StoreError::io("cannot create", &path))?;
        Ok(Journal {
            path,
            file,
            synced: Instant::now(),
        })
    }

    /// The journal file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Appends one finished request (one `write`, so a crash never splits
    /// rows other than the last one).
    pub fn append(&mut self, row: &RequestRow) -> Result<(), StoreError> {
        let mut line = serde_json::to_vec(row).map_err(|e| StoreError::Journal {
            path: self.path.clone(),
            line: 0,
            message: e.to_string(),
        })?;
        line.push(b'\n');
        self.file
            .write_all(&line)
            .map_err(StoreError::io("cannot write", &self.path))?;
        if self.synced.elapsed() >= JOURNAL_SYNC_EVERY {
            self.sync()?;
        }
        Ok(())
    }

    /// Forces what was appended to the device.
    pub(crate) fn sync(&mut self) -> Result<(), StoreError> {
        self.synced = Instant::now();
        self.file
            .sync_data()
            .map_err(StoreError::io("cannot write", &self.path))
    }
}

/// The rows of a journal file. A last line cut short by a crash is skipped;
/// any other line that does not parse is an error naming file and line.
pub(crate) fn read_journal(path: &Path) -> Result<Vec<RequestRow>, StoreError> {
    let file = File::open(path).map_err(StoreError::io("cannot open", path))?;
    let mut rows = Vec::new();
    let mut bad: Option<(usize, String)> = None;
    for (i, line) in BufReader::new(file).lines().enumerate() {
        let line = line.map_err(StoreError::io("cannot read", path))?;
        if let Some((n, message)) = bad.take() {
            // A bad line followed by another line was not cut by a crash.
            return Err(StoreError::Journal {
                path: path.to_path_buf(),
                line: n,
                message,
            });
        }
        if line.trim().is_empty() {
            continue;
        }
        match serde_json::from_str(&line) {
            Ok(row) => rows.push(row),
            Err(e) => bad = Some((i + 1, e.to_string())),
        }
    }
    Ok(rows)
}
