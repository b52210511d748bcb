//! The request journal: while a (trial, point) runs, each finished request
//! is appended to `journal/requests-tTTTT-pPPPPP.jsonl` as one JSON line,
//! in one write, by a thread of the journal's own, the moment it finishes:
//! it is then in the operating system's hands, so a `kill -9` or a crash of
//! qexp loses only the requests in flight. The journal is not synced to the
//! device while the pair runs, so that no device wait sits beside the
//! measurement; the pair's Parquet files are synced when it ends, and its
//! journal is then removed.

use crate::error::StoreError;
use crate::layout::{pair_file, JOURNAL, REQUESTS};
use crate::rows::RequestRow;
use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::sync::{mpsc, Arc, Mutex};
use std::thread::JoinHandle;

/// The open journal of one (trial, point). Lines go to a thread of its own
/// that writes them: the caller is the thread that timestamps requests, and
/// a busy disk must never delay it.
#[derive(Debug)]
pub struct Journal {
    path: PathBuf,
    lines: Option<mpsc::Sender<Vec<u8>>>,
    writer: Option<JoinHandle<()>>,
    failed: Arc<Mutex<Option<std::io::Error>>>,
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
        let (tx, rx) = mpsc::channel::<Vec<u8>>();
        let failed: Arc<Mutex<Option<std::io::Error>>> = Arc::default();
        let report = failed.clone();
        let writer = std::thread::spawn(move || {
            if let Err(e) = write_lines(file, &rx) {
                *report.lock().unwrap_or_else(|p| p.into_inner()) = Some(e);
            }
        });
        Ok(Journal {
            path,
            lines: Some(tx),
            writer: Some(writer),
            failed,
        })
    }

    /// The journal file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Hands one finished request to the journal's thread, which appends it
    /// in one write; fails when an earlier write failed.
    pub fn append(&mut self, row: &RequestRow) -> Result<(), StoreError> {
        self.check()?;
        let mut line = serde_json::to_vec(row).map_err(|e| StoreError::Journal {
            path: self.path.clone(),
            line: 0,
            message: e.to_string(),
        })?;
        line.push(b'\n');
        let sent = self.lines.as_ref().is_some_and(|tx| tx.send(line).is_ok());
        if !sent {
            // The thread ended: it failed (reported by `check`) or was closed.
            self.check()?;
        }
        Ok(())
    }

    /// Waits until every line handed over is written (and synced); reports
    /// the first failure.
    pub(crate) fn close(&mut self) -> Result<(), StoreError> {
        self.lines = None;
        if let Some(w) = self.writer.take() {
            let _ = w.join();
        }
        self.check()
    }

    fn check(&self) -> Result<(), StoreError> {
        match self.failed.lock().unwrap_or_else(|p| p.into_inner()).take() {
            Some(e) => Err(StoreError::io("cannot write", &self.path)(e)),
            None => Ok(()),
        }
    }
}

impl Drop for Journal {
    fn drop(&mut self) {
        // Lets the thread write what it holds, without waiting for it.
        self.lines = None;
    }
}

/// The journal thread: appends each line as it comes (each is in the
/// operating system's hands at once), and syncs the file once at the end.
fn write_lines(mut file: File, rx: &mpsc::Receiver<Vec<u8>>) -> std::io::Result<()> {
    while let Ok(line) = rx.recv() {
        file.write_all(&line)?;
    }
    file.sync_data()
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
