//! The server's output on its way to the log, with the run's key taken out.
//!
//! A server handed the key (`{api_key}` in its argv or environment) may
//! print it: an engine that logs its arguments at start, a debug line.
//! When the run has a key, the server writes into a pipe rather than the
//! log file, and a thread copies the pipe to the file with every
//! occurrence of the key replaced by [`REDACTED`], a key split between two
//! reads included. Without a key the server writes the file directly.

use std::fs::File;
use std::io::{self, Read, Write};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::time::Duration;

use qexp_types::REDACTED;

/// How much the copier reads at a time.
const CHUNK: usize = 64 * 1024;

/// A running copy; [`Copier::wait`] returns once the server's last writer
/// has closed the pipe and every byte is in the file.
pub(crate) struct Copier {
    done: Option<Receiver<()>>,
}

impl Copier {
    /// Starts copying `from` into `to`, hiding `key` (not empty).
    pub(crate) fn start(from: io::PipeReader, to: File, key: String) -> io::Result<Self> {
        let (tx, rx) = mpsc::channel();
        std::thread::Builder::new()
            .name("qexp-server-log".to_owned())
            .spawn(move || {
                copy(from, to, key.as_bytes());
                let _ = tx.send(());
            })?;
        Ok(Self { done: Some(rx) })
    }

    /// Waits at most `limit` for the copy to end; true if it has.
    pub(crate) fn wait(&mut self, limit: Duration) -> bool {
        let Some(done) = &self.done else {
            return true;
        };
        match done.recv_timeout(limit) {
            Ok(()) | Err(RecvTimeoutError::Disconnected) => {
                self.done = None;
                true
            }
            Err(RecvTimeoutError::Timeout) => false,
        }
    }
}

/// Copies until end of input. A write that fails (a full disk) drops what
/// it held but the reading goes on, so that the server never blocks on a
/// full pipe; the first failure is logged.
fn copy(mut from: impl Read, mut to: impl Write, key: &[u8]) {
    let mut hider = Hider::new(key);
    let mut buf = vec![0u8; CHUNK];
    let mut failed = false;
    let mut put = |bytes: &[u8]| {
        if let Err(e) = to.write_all(bytes) {
            if !failed {
                tracing::warn!(error = %e, "cannot write the server's log; its output is dropped");
                failed = true;
            }
        }
    };
    loop {
        match from.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => put(&hider.push(&buf[..n])),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(_) => break,
        }
    }
    put(&hider.finish());
}

/// Replaces a key in a stream that arrives in pieces.
struct Hider<'k> {
    key: &'k [u8],
    /// Bytes that may be the start of a key the next piece completes.
    held: Vec<u8>,
}

impl<'k> Hider<'k> {
    fn new(key: &'k [u8]) -> Self {
        Self {
            key,
            held: Vec::new(),
        }
    }

    /// What can be written now of everything pushed so far.
    fn push(&mut self, piece: &[u8]) -> Vec<u8> {
        self.held.extend_from_slice(piece);
        let mut out = Vec::with_capacity(self.held.len());
        let mut from = 0;
        while let Some(at) = find(&self.held[from..], self.key) {
            out.extend_from_slice(&self.held[from..from + at]);
            out.extend_from_slice(REDACTED.as_bytes());
            from += at + self.key.len();
        }
        // The last key.len() - 1 bytes may begin a key: hold them back,
        // but not a finished line where the key holds no line break, so
        // that the log has every whole line the server wrote.
        let rest = &self.held[from..];
        let after_line = match rest.iter().rposition(|&b| b == b'\n') {
            Some(nl) if !self.key.contains(&b'\n') => rest.len() - nl - 1,
            _ => rest.len(),
        };
        let keep = (self.key.len() - 1).min(after_line);
        let upto = self.held.len() - keep;
        out.extend_from_slice(&self.held[from..upto]);
        self.held.drain(..upto);
        out
    }

    /// The bytes held back, at the end of the stream.
    fn finish(&mut self) -> Vec<u8> {
        std::mem::take(&mut self.held)
    }
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn through(pieces: &[&str], key: &str) -> String {
        let mut h = Hider::new(key.as_bytes());
        let mut out = Vec::new();
        for p in pieces {
            out.extend(h.push(p.as_bytes()));
        }
        out.extend(h.finish());
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn hides_a_key_whole_or_split_between_reads() {
        let text = "args: --api-key sk-123 --port 8 sk-123\n";
        let want = "args: --api-key <redacted> --port 8 <redacted>\n";
        assert_eq!(through(&[text], "sk-123"), want);
        // Every split of the text into two pieces, and one byte a piece.
        for i in 0..=text.len() {
            assert_eq!(through(&[&text[..i], &text[i..]], "sk-123"), want, "{i}");
        }
        let bytes: Vec<String> = text.chars().map(String::from).collect();
        let pieces: Vec<&str> = bytes.iter().map(String::as_str).collect();
        assert_eq!(through(&pieces, "sk-123"), want);
    }

    #[test]
    fn a_prefix_of_the_key_at_the_end_is_kept() {
        assert_eq!(through(&["done sk-1", "2"], "sk-123"), "done sk-12");
        assert_eq!(through(&["kk"], "k"), "<redacted><redacted>");
        // A key that the replacement itself contains is not replaced twice.
        assert_eq!(through(&["a", "-d-"], "d"), "a-<redacted>-");
    }

    #[test]
    fn whole_lines_are_never_held_back() {
        let mut h = Hider::new(b"secret");
        assert_eq!(h.push(b"line one\nsec"), b"line one\n");
        assert_eq!(h.push(b"ond"), b"s");
        assert_eq!(h.push(b"\n"), b"econd\n");
        assert!(h.push(b"x").is_empty());
        assert_eq!(h.finish(), b"x");
    }

    #[test]
    fn a_failing_writer_does_not_stop_the_reading() {
        struct Full;
        impl Write for Full {
            fn write(&mut self, _: &[u8]) -> io::Result<usize> {
                Err(io::Error::other("disk full"))
            }
            fn flush(&mut self) -> io::Result<()> {
                Ok(())
            }
        }
        let input = vec![b'x'; 3 * CHUNK];
        let mut reader = io::Cursor::new(input);
        copy(&mut reader, Full, b"k");
        assert_eq!(reader.position(), 3 * CHUNK as u64);
    }
}
