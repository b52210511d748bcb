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
    let from = len.saturating_sub(TAIL_BYTES);
    file.seek(SeekFrom::Start(from))?;
    let mut bytes = Vec::new();
    file.read_to_end(&mut bytes)?;
    // Read from the middle of a line, its start is cut: it is left out, so
    // that no piece of a secret the line held (which redaction, matching
    // whole secrets, would miss) is quoted.
    if from > 0 {
        let start = bytes
            .iter()
            .position(|&b| b == b'\n')
            .map_or(bytes.len(), |i| i + 1);
        bytes.drain(..start);
    }
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
    fn a_line_cut_by_the_read_is_left_out() {
        // The read starts 5 bytes into the secret, which ends the first line.
        let dir = std::env::temp_dir().join(format!("qexp-logfile-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap_or_default();
        let path = dir.join("server.log");
        let last = "B".repeat(TAIL_BYTES as usize - 9);
        let text = format!("{}secretkey123\n{last}\n", "A".repeat(100));
        assert_eq!(text.len() as u64 - TAIL_BYTES, 105);
        std::fs::write(&path, &text).unwrap_or_default();
        let got = tail(&path);
        let _ = std::fs::remove_dir_all(&dir);
        assert!(!got.contains("key123"), "a piece of the cut line was kept");
        assert_eq!(got, last);
    }

    #[test]
    fn missing_log_says_so() {
        assert!(tail(Path::new("/nonexistent/qexp/x.log")).contains("cannot read"));
    }
}
