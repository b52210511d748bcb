//! Why a plan could not be used, at file:line:col and key.

use std::ops::Range;
use std::path::{Path, PathBuf};

/// A value the plan cannot take: where in the text (byte span), the dotted
/// key, and what is wrong. [`PlanError::at`] turns it into file:line:col.
pub(crate) type Invalid = (Range<usize>, Option<String>, String);

/// Why a plan could not be used. Messages name file, line, column and key.
#[derive(Debug, thiserror::Error)]
pub enum PlanError {
    /// The plan file could not be read.
    #[error("cannot read plan {}", path.display())]
    Io {
        /// The plan's path.
        path: PathBuf,
        /// The underlying error.
        source: std::io::Error,
    },
    /// The plan is not valid TOML or does not match the schema.
    #[error("{}:{line}:{column}: {}{message}", path.display(), key.as_deref().map(|k| format!("`{k}`: ")).unwrap_or_default())]
    Invalid {
        /// The plan's path.
        path: PathBuf,
        /// 1-based line of the offending text.
        line: usize,
        /// 1-based column of the offending text.
        column: usize,
        /// Dotted key the error is about, when known.
        key: Option<String>,
        /// What is wrong, in one sentence.
        message: String,
    },
}

impl PlanError {
    pub(crate) fn from_toml(path: &Path, text: &str, e: &toml::de::Error) -> PlanError {
        let span = e.span().unwrap_or(0..0);
        let message = e.message().trim().replace('\n', " ");
        let key = key_at(text, span.start);
        Self::at(path, text, span, key, message)
    }

    pub(crate) fn at(
        path: &Path,
        text: &str,
        span: Range<usize>,
        key: Option<String>,
        message: String,
    ) -> PlanError {
        let (line, column) = line_col(text, span.start);
        PlanError::Invalid {
            path: path.to_path_buf(),
            line,
            column,
            key,
            message,
        }
    }
}

/// 1-based line and column (in characters) of a byte offset.
fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let offset = offset.min(text.len());
    let before = &text[..floor_char_boundary(text, offset)];
    let line = before.matches('\n').count() + 1;
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    let column = before[line_start..].chars().count() + 1;
    (line, column)
}

fn floor_char_boundary(text: &str, mut i: usize) -> usize {
    while !text.is_char_boundary(i) {
        i -= 1;
    }
    i
}

/// Best-effort dotted key for the text at `offset`: the enclosing `[table]`
/// plus the `key =` on that line. Used only to make messages easier to act on.
pub(crate) fn key_at(text: &str, offset: usize) -> Option<String> {
    let offset = floor_char_boundary(text, offset.min(text.len()));
    let mut table: Option<String> = None;
    let mut key: Option<String> = None;
    let mut pos = 0;
    for raw in text.split_inclusive('\n') {
        let line = raw.trim();
        let line_end = pos + raw.len();
        if line.starts_with('[') {
            if pos > offset {
                break;
            }
            table = Some(
                line.trim_matches(|c| c == '[' || c == ']')
                    .trim()
                    .to_string(),
            );
            key = None;
        } else if let Some((k, _)) = line.split_once('=') {
            if !line.starts_with('#') && pos <= offset {
                key = Some(k.trim().trim_matches('"').to_string());
            }
        }
        if offset < line_end {
            break;
        }
        pos = line_end;
    }
    match (table, key) {
        (Some(t), Some(k)) => Some(format!("{t}.{k}")),
        (Some(t), None) => Some(t),
        (None, Some(k)) => Some(k),
        (None, None) => None,
    }
}

/// The span of the value the text sets at a dotted key (`analysis.min_change`),
/// when it sets one: how a check of a value deserialised without its span
/// still points at it.
pub(crate) fn value_span(text: &str, key: &str) -> Option<Range<usize>> {
    let doc = toml::de::DeTable::parse(text).ok()?;
    let mut table = doc.get_ref();
    let mut parts = key.split('.').peekable();
    while let Some(part) = parts.next() {
        let (_, value) = table.iter().find(|(k, _)| k.get_ref() == part)?;
        if parts.peek().is_none() {
            return Some(value.span());
        }
        match value.get_ref() {
            toml::de::DeValue::Table(t) => table = t,
            _ => return None,
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_col_counts_from_one() {
        let t = "a = 1\nbb = 2\n";
        assert_eq!(line_col(t, 0), (1, 1));
        assert_eq!(line_col(t, 6), (2, 1));
        assert_eq!(line_col(t, 11), (2, 6));
    }

    #[test]
    fn value_span_finds_the_value_of_a_dotted_key() {
        let t = "[run]\ntrials = 0\n[analysis]\nmin_change = 0\n";
        assert_eq!(value_span(t, "analysis.min_change"), Some(41..42));
        assert_eq!(value_span(t, "run.trials"), Some(15..16));
        assert_eq!(value_span(t, "analysis.knee_gain"), None);
        assert_eq!(value_span(t, "run.trials.x"), None);
        assert_eq!(value_span("a = [", "a"), None);
    }

    #[test]
    fn key_at_finds_table_and_key() {
        let t = "[target]\nbase_url = 1\n[run]\ntrials = 0\n";
        assert_eq!(key_at(t, 20).as_deref(), Some("target.base_url"));
        assert_eq!(key_at(t, t.len() - 2).as_deref(), Some("run.trials"));
        assert_eq!(key_at(t, 2).as_deref(), Some("target"));
    }
}
