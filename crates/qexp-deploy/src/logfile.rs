//! The server's log file: one per start, stdout and stderr appended to it.

use std::fs::{self, File, OpenOptions};
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use crate::{LaunchError, StartRequest};

/// How many lines of the log an error quotes.
const TAIL_LINES: usize = 20;
/// How far from the end of the log the tail is looked for.
const TAIL_BYTES: u64 = 16 * 1024;

/// The log file's path for a start.
pub(crate) fn path_for(start: &StartRequest) -> PathBuf {
    start.log_dir.join(format!("{}.log", start.start_id))
}

/// Opens (creating the folder and file) the log for appending.
pub(crate) fn open(path: &Path) -> Result<File, LaunchError> {
    let log_err = |source| LaunchError::Log {
        path: path.to_owned(),
        source,
    };
    if let Some(dir) = path.parent() {
        fs::create_dir_all(dir).map_err(log_err)?;
    }
    OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .map_err(log_err)
}

/// The last lines of the log, or a note saying why they cannot be read.
pub(crate) fn tail(path: &Path) -> String {
    match read_end(path) {
        Ok(text) => last_lines(&text, TAIL_LINES),
        Err(e) => format!("(cannot read the log: {e})"),
    }
}

fn read_end(path: &Path) -> std::io::Result<String> {
    let mut file = File::open(path)?;
    let len = file.metadata()?.len();
    file.seek(SeekFrom::Start(len.saturating_sub(TAIL_BYTES)))?;
    let mut bytes = Vec::new();
    file.read_to_end(&mut bytes)?;
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}

fn last_lines(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text.trim_end().lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_the_last_lines_only() {
        let text: String = (1..=30).map(|i| format!("line {i}\n")).collect();
        let tail = last_lines(&text, 20);
        assert!(tail.starts_with("line 11\n"), "{tail}");
        assert!(tail.ends_with("line 30"), "{tail}");
        assert_eq!(last_lines("", 20), "");
    }

    #[test]
    fn missing_log_says_so() {
        assert!(tail(Path::new("/nonexistent/qexp/x.log")).contains("cannot read"));
    }
}
