//! Keeping the API key out of everything a server sends back. A server (or
//! a proxy in front of it) may echo request headers in an error message, a
//! document or a stream; whatever qexp keeps from a server passes through
//! [`Redactor`] first, so the key never reaches a manifest, a Parquet row,
//! a report or a log.

use serde_json::Value;
use std::sync::Arc;

/// What replaces the key in server text.
pub const REDACTED: &str = "[redacted]";

/// Replaces every occurrence of the run's secrets (the API key, header
/// values read from the environment) in text and JSON. Cheap to clone (each
/// streamed request's measurement holds one).
#[derive(Clone, Default)]
pub(crate) struct Redactor {
    /// Longest first, so a secret inside another is not replaced in part.
    secrets: Option<Arc<[Box<str>]>>,
}

impl Redactor {
    /// A redactor for `secret`; none for an empty one, which occurs everywhere.
    pub fn new(secret: Option<&str>) -> Redactor {
        Redactor::default().with(secret.map(str::to_string))
    }

    /// This redactor, also replacing `more` (empty ones are left out).
    pub fn with(&self, more: impl IntoIterator<Item = String>) -> Redactor {
        let mut all: Vec<Box<str>> = self
            .secrets
            .iter()
            .flat_map(|s| s.iter().cloned())
            .collect();
        all.extend(
            more.into_iter()
                .filter(|s| !s.is_empty())
                .map(String::into_boxed_str),
        );
        all.sort_by(|a, b| b.len().cmp(&a.len()).then_with(|| a.cmp(b)));
        all.dedup();
        Redactor {
            secrets: (!all.is_empty()).then(|| Arc::from(all)),
        }
    }

    fn all(&self) -> impl Iterator<Item = &str> {
        self.secrets.iter().flat_map(|s| s.iter()).map(|s| &**s)
    }

    /// Replaces the secrets in `text` where they occur, copying nothing
    /// when none does (an answer's text: most requests have one).
    pub fn in_place(&self, text: &mut String) {
        if self.all().any(|s| text.contains(s)) {
            *text = self.text(text);
        }
    }

    /// `text` with the secrets replaced.
    pub fn text(&self, text: &str) -> String {
        let mut out = text.to_string();
        for s in self.all() {
            if out.contains(s) {
                out = out.replace(s, REDACTED);
            }
        }
        out
    }

    /// Server text fit for a one-line message: the secret replaced first,
    /// then cut to an excerpt. Cut first, a secret across the cut would
    /// keep its first part, which no later redaction recognises.
    pub fn excerpt(&self, text: &str) -> String {
        excerpt(&self.text(text))
    }

    /// Every string (and key) of `value` with the secrets replaced.
    pub fn value(&self, value: Value) -> Value {
        if self.secrets.is_none() {
            return value;
        }
        match value {
            Value::String(s) => Value::String(self.text(&s)),
            Value::Array(a) => Value::Array(a.into_iter().map(|v| self.value(v)).collect()),
            Value::Object(m) => Value::Object(
                m.into_iter()
                    .map(|(k, v)| (self.text(&k), self.value(v)))
                    .collect(),
            ),
            other => other,
        }
    }
}

/// `s` on one line, cut to 300 characters. Server text goes through
/// [`Redactor::excerpt`] instead, which takes the key out before the cut.
pub(crate) fn excerpt(s: &str) -> String {
    const MAX: usize = 300;
    let s = s.trim().replace(['\n', '\r'], " ");
    match s.char_indices().nth(MAX) {
        Some((i, _)) => format!("{}…", &s[..i]),
        None => s,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_secret_is_replaced_in_text_and_nested_json() {
        let r = Redactor::new(Some("sk-test-123"));
        assert_eq!(
            r.text("Bearer sk-test-123 and sk-test-123"),
            format!("Bearer {REDACTED} and {REDACTED}")
        );
        let v = r.value(json!({"headers": {"authorization": "Bearer sk-test-123"}, "sk-test-123": [1, "sk-test-123"]}));
        assert!(!v.to_string().contains("sk-test-123"), "{v}");
        assert_eq!(Redactor::new(Some("")).text("abc"), "abc");
        assert_eq!(Redactor::new(None).value(json!("x")), json!("x"));
    }

    #[test]
    fn every_secret_is_replaced_the_longest_first() {
        let r = Redactor::new(Some("tenant-a")).with(["tenant-a-key".to_string(), String::new()]);
        assert_eq!(
            r.text("x-tenant: tenant-a-key, then tenant-a"),
            format!("x-tenant: {REDACTED}, then {REDACTED}")
        );
        let mut t = "nothing here".to_string();
        r.in_place(&mut t);
        assert_eq!(t, "nothing here");
        assert_eq!(Redactor::new(None).with([String::new()]).text("a"), "a");
    }

    #[test]
    fn a_secret_across_the_excerpt_s_cut_leaves_no_piece() {
        let r = Redactor::new(Some("sk-test-0123456789"));
        let text = format!("{} sk-test-0123456789 refused", "x".repeat(285));
        let cut = r.excerpt(&text);
        assert!(!cut.contains("sk-test"), "{cut}");
        assert!(cut.contains(REDACTED), "{cut}");
        assert!(cut.ends_with('…'), "{cut}");
    }
}
