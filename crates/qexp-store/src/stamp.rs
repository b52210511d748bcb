//! A stamp of what a run folder holds, so that what was derived from it (the
//! index's digest of a run) can be kept and trusted until the folder changes.

use crate::error::StoreError;
use crate::lock::LOCK_FILE;
use sha2::{Digest, Sha256};
use std::path::Path;
use std::time::UNIX_EPOCH;

/// How deep a run folder's files sit (`parts/`, `incomplete/`, `journal/`, deployment logs).
const MAX_DEPTH: usize = 3;

/// SHA-256 (hex) over every file under `run` — its path inside the folder,
/// size and modification time, links followed — the lock file left out
/// (below `MAX_DEPTH` levels, a folder stands for what it holds by its own
/// time). A write, a resume or a merge changes it; reading the folder does
/// not.
pub fn folder_stamp(run: &Path) -> Result<String, StoreError> {
    let mut entries = Vec::new();
    walk(run, "", 0, &mut entries)?;
    entries.sort();
    let mut h = Sha256::new();
    for e in entries {
        h.update(e.as_bytes());
        h.update(b"\n");
    }
    Ok(hex::encode(h.finalize()))
}

fn walk(dir: &Path, prefix: &str, depth: usize, out: &mut Vec<String>) -> Result<(), StoreError> {
    let read = std::fs::read_dir(dir).map_err(StoreError::io("cannot list", dir))?;
    for entry in read {
        let entry = entry.map_err(StoreError::io("cannot list", dir))?;
        let name = entry.file_name().to_string_lossy().into_owned();
        // Skipped before it is read: a lock released meanwhile is no error.
        if depth == 0 && name == LOCK_FILE {
            continue;
        }
        let path = entry.path();
        // A link is followed (a linked Parquet file changes with its
        // target); a dangling one is stamped as the link itself.
        let meta = std::fs::metadata(&path)
            .or_else(|_| std::fs::symlink_metadata(&path))
            .map_err(StoreError::io("cannot read", &path))?;
        let rel = format!("{prefix}{name}");
        if meta.is_dir() && depth + 1 < MAX_DEPTH {
            walk(&path, &format!("{rel}/"), depth + 1, out)?;
        } else {
            // A file, or a folder deeper than qexp writes (its own time
            // changes when an entry is added or removed).
            let modified = meta
                .modified()
                .ok()
                .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
                .map_or(0, |d| d.as_nanos());
            out.push(format!("{rel}\0{}\0{modified}", meta.len()));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_write_changes_the_stamp_and_the_lock_does_not() -> Result<(), Box<dyn std::error::Error>> {
        let tmp = tempfile::tempdir()?;
        std::fs::write(tmp.path().join("manifest.json"), "{}")?;
        std::fs::create_dir(tmp.path().join("parts"))?;
        std::fs::write(tmp.path().join("parts/requests-1.parquet"), "a")?;
        let first = folder_stamp(tmp.path())?;
        assert_eq!(folder_stamp(tmp.path())?, first);
        std::fs::write(tmp.path().join(LOCK_FILE), "")?;
        assert_eq!(folder_stamp(tmp.path())?, first);
        std::fs::write(tmp.path().join("parts/requests-2.parquet"), "b")?;
        let second = folder_stamp(tmp.path())?;
        assert_ne!(second, first);
        std::fs::write(tmp.path().join("parts/requests-2.parquet"), "bb")?;
        assert_ne!(folder_stamp(tmp.path())?, second);
        Ok(())
    }

    #[cfg(unix)]
    #[test]
    fn a_linked_file_is_stamped_by_its_target() -> Result<(), Box<dyn std::error::Error>> {
        let tmp = tempfile::tempdir()?;
        let (run, elsewhere) = (tmp.path().join("run"), tmp.path().join("data.parquet"));
        std::fs::create_dir(&run)?;
        std::fs::write(&elsewhere, "a")?;
        std::os::unix::fs::symlink(&elsewhere, run.join("requests.parquet"))?;
        let first = folder_stamp(&run)?;
        std::fs::write(&elsewhere, "ab")?;
        assert_ne!(folder_stamp(&run)?, first);
        std::fs::remove_file(&elsewhere)?;
        folder_stamp(&run)?;
        Ok(())
    }
}
