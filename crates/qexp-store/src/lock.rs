//! One writer per run folder. The process that writes a run — `qexp run`,
//! or `qexp run --resume` — holds an exclusive lock on `<run>/.lock` for as
//! long as it writes; a second writer is refused with a sentence instead of
//! interleaving its parts, journals and manifest with the first. The lock
//! is the operating system's (`flock`): it ends with the process, however
//! that ends, so a `kill -9` never leaves a stale lock behind.

use crate::error::StoreError;
use std::fs::{File, OpenOptions, TryLockError};
use std::path::{Path, PathBuf};

/// The lock file's name inside a run folder.
pub(crate) const LOCK_FILE: &str = ".lock";

/// Held while a process writes a run folder; released when dropped.
#[derive(Debug)]
pub struct RunLock {
    _file: File,
    path: PathBuf,
}

impl RunLock {
    /// Takes the run folder's lock, or says who has it.
    pub fn acquire(run: &Path) -> Result<RunLock, StoreError> {
        let path = run.join(LOCK_FILE);
        let file = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)
            .map_err(StoreError::io("cannot open", &path))?;
        match file.try_lock() {
            Ok(()) => Ok(RunLock { _file: file, path }),
            Err(TryLockError::WouldBlock) => Err(StoreError::Locked {
                path: run.to_path_buf(),
            }),
            Err(TryLockError::Error(e)) => Err(StoreError::io("cannot lock", &path)(e)),
        }
    }

    /// The lock file.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_writer_is_refused_until_the_first_lets_go() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let first = RunLock::acquire(dir.path()).unwrap_or_else(|e| panic!("{e}"));
        let second = RunLock::acquire(dir.path());
        let msg = second.err().map(|e| e.to_string()).unwrap_or_default();
        assert!(msg.contains("another qexp process is writing"), "{msg}");
        drop(first);
        assert!(RunLock::acquire(dir.path()).is_ok(), "released on drop");
    }
}
