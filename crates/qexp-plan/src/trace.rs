//! Request traces for replay: one request per line, with its offset from
//! the start (seconds), prompt length and output length. CSV (with a header
//! naming `offset_s`, `input_tokens`, `output_tokens` in any order) or JSONL
//! (one object per line with those keys), chosen by the file's extension.

use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};

/// One request of a trace.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TraceEntry {
    /// Seconds after the trace's start, before the speed factor.
    pub offset_s: f64,
    /// Prompt tokens.
    pub input_tokens: u32,
    /// Output tokens.
    pub output_tokens: u32,
}

/// A trace as read, in file order (offsets never decrease).
#[derive(Debug, Clone)]
pub struct Trace {
    /// The requests.
    pub entries: Vec<TraceEntry>,
    /// SHA-256 of the file's bytes, hex.
    pub sha256: String,
}

/// Why a trace could not be used; names the file and line.
#[derive(Debug, thiserror::Error)]
pub enum TraceError {
    /// The file could not be read.
    #[error("cannot read trace {}", path.display())]
    Io {
        /// The trace's path.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// A line is not a valid entry.
    #[error("{}:{line}: {message}", path.display())]
    Line {
        /// The trace's path.
        path: PathBuf,
        /// 1-based line.
        line: usize,
        /// What is wrong.
        message: String,
    },
    /// The file holds no entries.
    #[error("{}: the trace has no requests", path.display())]
    Empty {
        /// The trace's path.
        path: PathBuf,
    },
}

const KEYS: [&str; 3] = ["offset_s", "input_tokens", "output_tokens"];

impl Trace {
    /// Reads a `.csv` or `.jsonl` trace.
    pub fn load(path: &Path) -> Result<Trace, TraceError> {
        let bytes = std::fs::read(path).map_err(|source| TraceError::Io {
            path: path.to_path_buf(),
            source,
        })?;
        let text = String::from_utf8_lossy(&bytes);
        let jsonl = path
            .extension()
            .is_some_and(|e| e.eq_ignore_ascii_case("jsonl") || e.eq_ignore_ascii_case("json"));
        let line_err = |line: usize, message: String| TraceError::Line {
            path: path.to_path_buf(),
            line,
            message,
        };
        let entries = if jsonl {
            parse_jsonl(&text).map_err(|(l, m)| line_err(l, m))?
        } else {
            parse_csv(&text).map_err(|(l, m)| line_err(l, m))?
        };
        if entries.is_empty() {
            return Err(TraceError::Empty {
                path: path.to_path_buf(),
            });
        }
        Ok(Trace {
            entries,
            sha256: hex::encode(Sha256::digest(&bytes)),
        })
    }

    /// Offset of the last entry, seconds (before the speed factor).
    pub fn span_s(&self) -> f64 {
        self.entries.last().map_or(0.0, |e| e.offset_s)
    }
}

type LineResult<T> = Result<T, (usize, String)>;

fn entry(line: usize, values: [Option<f64>; 3], prev: f64) -> LineResult<TraceEntry> {
    let [offset, input, output] = values;
    let missing = |k: &str| (line, format!("`{k}` is missing"));
    let offset = offset.ok_or_else(|| missing(KEYS[0]))?;
    if !(offset.is_finite() && offset >= 0.0) {
        return Err((line, "`offset_s` must be 0 or more seconds".into()));
    }
    if offset < prev {
        return Err((
            line,
            format!("`offset_s` {offset} is before the previous line's {prev}; sort the trace by offset"),
        ));
    }
    let tokens = |v: Option<f64>, k: &str| -> LineResult<u32> {
        let v = v.ok_or_else(|| missing(k))?;
        if v.fract() == 0.0 && v >= 1.0 && v <= f64::from(u32::MAX) {
            Ok(v as u32)
        } else {
            Err((
                line,
                format!("`{k}` must be a whole number of tokens, at least 1"),
            ))
        }
    };
    Ok(TraceEntry {
        offset_s: offset,
        input_tokens: tokens(input, KEYS[1])?,
        output_tokens: tokens(output, KEYS[2])?,
    })
}

fn parse_csv(text: &str) -> LineResult<Vec<TraceEntry>> {
    let mut lines = text
        .lines()
        .enumerate()
        .map(|(i, l)| (i + 1, l.trim()))
        .filter(|(_, l)| !l.is_empty() && !l.starts_with('#'));
    let Some((hline, header)) = lines.next() else {
        return Ok(Vec::new());
    };
    let names: Vec<&str> = header
        .split(',')
        .map(|h| h.trim().trim_matches('"'))
        .collect();
    let mut cols = [0usize; 3];
    for (k, c) in KEYS.iter().zip(cols.iter_mut()) {
        *c = names.iter().position(|n| n == k).ok_or_else(|| {
            (
                hline,
                format!("the header must name `offset_s`, `input_tokens` and `output_tokens`; `{k}` is missing"),
            )
        })?;
    }
    let mut out = Vec::new();
    for (line, l) in lines {
        let fields: Vec<&str> = l.split(',').map(str::trim).collect();
        let mut values = [None; 3];
        for (j, v) in values.iter_mut().enumerate() {
            let f = fields.get(cols[j]).copied().unwrap_or("");
            *v = match f.parse::<f64>() {
                Ok(x) => Some(x),
                Err(_) if f.is_empty() => None,
                Err(_) => return Err((line, format!("`{}` is not a number: {f:?}", KEYS[j]))),
            };
        }
        let prev = out.last().map_or(0.0, |e: &TraceEntry| e.offset_s);
        out.push(entry(line, values, prev)?);
    }
    Ok(out)
}

fn parse_jsonl(text: &str) -> LineResult<Vec<TraceEntry>> {
    let mut out = Vec::new();
    for (i, l) in text.lines().enumerate() {
        let line = i + 1;
        if l.trim().is_empty() {
            continue;
        }
        let v: serde_json::Value =
            serde_json::from_str(l).map_err(|e| (line, format!("not a JSON object: {e}")))?;
        let get = |k: &str| v.get(k).and_then(serde_json::Value::as_f64);
        let prev = out.last().map_or(0.0, |e: &TraceEntry| e.offset_s);
        out.push(entry(line, KEYS.map(get), prev)?);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn csv_columns_in_any_order() {
        let t = parse_csv("output_tokens,offset_s,input_tokens\n10,0,100\n20,0.5,200\n").unwrap();
        assert_eq!(t.len(), 2);
        assert_eq!(t[1].offset_s, 0.5);
        assert_eq!(t[1].input_tokens, 200);
        assert_eq!(t[1].output_tokens, 20);
    }

    #[test]
    fn csv_errors_name_the_line() {
        let e = parse_csv("offset_s,input_tokens,output_tokens\n0,1,1\n\n0.2,x,1\n").unwrap_err();
        assert_eq!(e.0, 4);
        assert!(e.1.contains("input_tokens"), "{}", e.1);
        let e = parse_csv("offset_s,input_tokens\n0,1\n").unwrap_err();
        assert_eq!(e.0, 1);
        let e = parse_csv("offset_s,input_tokens,output_tokens\n1,1,1\n0.5,1,1\n").unwrap_err();
        assert!(e.1.contains("sort"), "{}", e.1);
    }

    #[test]
    fn jsonl_reads_objects() {
        let t = parse_jsonl(
            "{\"offset_s\":0,\"input_tokens\":5,\"output_tokens\":7}\n\n{\"offset_s\":1.5,\"input_tokens\":6,\"output_tokens\":8}\n",
        )
        .unwrap();
        assert_eq!(t.len(), 2);
        assert_eq!(t[1].offset_s, 1.5);
        let e = parse_jsonl("{\"offset_s\":0,\"input_tokens\":5}\n").unwrap_err();
        assert!(e.1.contains("output_tokens"), "{}", e.1);
        let e =
            parse_jsonl("{\"offset_s\":0,\"input_tokens\":0.5,\"output_tokens\":1}\n").unwrap_err();
        assert!(e.1.contains("whole number"), "{}", e.1);
    }
}
