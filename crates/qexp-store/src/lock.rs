//! One writer per run folder. The process that writes a run — `qexp run`,
//! or `qexp run --resume` — holds an exclusive lock on `<run>/.lock` for as
//! long as it writes; a second writer is refused with a sentence instead of
//! interleaving its parts, journals and manifest with the first. The lock
//! is the operating system's (`flock`): it ends with the process, however
//! that ends, so a `kill -9` never leaves a stale lock behind. The file
//! goes with the hold: a writer that lets go removes it (a folder the
//! writer is done with holds only results), and a writer that takes a lock
//! on a file someone removed meanwhile takes the new one instead.

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
        loop {
            let file = OpenOptions::new()
                .create(true)
                .truncate(false)
                .write(true)
                .open(&path)
                .map_err(StoreError::io("cannot open", &path))?;
            match file.try_lock() {
                // The holder before us removed the file as it let go: the
                // lock to take is the file now at the path.
                Ok(()) if !still_at(&file, &path) => continue,
                Ok(()) => return Ok(RunLock { _file: file, path }),
                Err(TryLockError::WouldBlock) => {
                    return Err(StoreError::Locked {
                        path: run.to_path_buf(),
                    })
                }
                Err(TryLockError::Error(e)) => return Err(StoreError::io("cannot lock", &path)(e)),
            }
        }
    }

    /// The lock file.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for RunLock {
    /// Removes the lock file while still holding it, then lets go: a
    /// finished run folder keeps no `.lock`.
    fn drop(&mut self) {
        // Nothing to do when it is gone already; a file left behind is
        // only an empty, unlocked file.
        let _ = std::fs::remove_file(&self.path);
    }
}

/// True when `path` is still the file `file` has open.
#[cfg(unix)]
fn still_at(file: &File, path: &Path) -> bool {
    use std::os::unix::fs::MetadataExt as _;
    match (file.metadata(), std::fs::metadata(path)) {
        (Ok(open), Ok(now)) => open.dev() == now.dev() && open.ino() == now.ino(),
        _ => false,
    }
}

/// Elsewhere a file is not removed while open, so it is always still there.
#[cfg(not(unix))]
fn still_at(_file: &File, _path: &Path) -> bool {
    true
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
        assert!(!dir.path().join(LOCK_FILE).exists(), "removed on drop");
        let again = RunLock::acquire(dir.path());
        assert!(again.is_ok(), "released on drop");
    }

    /// A writer that opened the lock file before its holder removed it
    /// takes the file now at the path, so two writers never hold two files.
    #[test]
    fn a_lock_taken_on_a_removed_file_moves_to_the_new_one() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let path = dir.path().join(LOCK_FILE);
        let stale = File::create(&path).unwrap_or_else(|e| panic!("{e}"));
        std::fs::remove_file(&path).unwrap_or_else(|e| panic!("{e}"));
        assert!(!still_at(&stale, &path));
        let held = RunLock::acquire(dir.path()).unwrap_or_else(|e| panic!("{e}"));
        assert!(still_at(&held._file, &path));
        assert!(
            RunLock::acquire(dir.path()).is_err(),
            "the new file is held"
        );
    }
}
