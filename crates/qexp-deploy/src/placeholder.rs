//! `{word}` placeholders in a deployment's argv and environment.
//!
//! Only `{` followed by a word (`[A-Za-z_][A-Za-z0-9_]*`) and `}` is a
//! placeholder, so JSON arguments such as `{"method": "mtp"}` pass through
//! untouched. `{{` writes a literal `{` (`{{port}` gives `{port}`).

use std::collections::BTreeMap;

use crate::LaunchError;

/// Replaces every placeholder in `arg` with its value from `values`.
pub(crate) fn resolve(arg: &str, values: &BTreeMap<String, String>) -> Result<String, LaunchError> {
    let mut out = String::with_capacity(arg.len());
    let mut rest = arg;
    while let Some(open) = rest.find('{') {
        out.push_str(&rest[..open]);
        let after = &rest[open + 1..];
        if let Some(escaped) = after.strip_prefix('{') {
            out.push('{');
            rest = escaped;
            continue;
        }
        match word_then_close(after) {
            Some(word) => {
                let value = values
                    .get(word)
                    .ok_or_else(|| LaunchError::BadPlaceholder {
                        name: word.to_owned(),
                        arg: arg.to_owned(),
                    })?;
                out.push_str(value);
                rest = &after[word.len() + 1..];
            }
            None => {
                out.push('{');
                rest = after;
            }
        }
    }
    out.push_str(rest);
    Ok(out)
}

/// The word at the start of `s` if a `}` follows it directly.
fn word_then_close(s: &str) -> Option<&str> {
    let end = s.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))?;
    let word = &s[..end];
    let starts_well = word.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_');
    (starts_well && s[end..].starts_with('}')).then_some(word)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn values() -> BTreeMap<String, String> {
        [("port", "8123"), ("run_dir", "/runs/a")]
            .into_iter()
            .map(|(k, v)| (k.to_owned(), v.to_owned()))
            .collect()
    }

    fn ok(arg: &str) -> String {
        match resolve(arg, &values()) {
            Ok(s) => s,
            Err(e) => panic!("{arg}: {e}"),
        }
    }

    #[test]
    fn replaces_known_words() {
        assert_eq!(ok("--port={port}"), "--port=8123");
        assert_eq!(ok("{run_dir}/log-{port}.txt"), "/runs/a/log-8123.txt");
    }

    #[test]
    fn leaves_json_and_stray_braces_alone() {
        let json = r#"{"method":"mtp","inner":{"n":1}}"#;
        assert_eq!(ok(json), json);
        assert_eq!(ok("{} { port} {1x} }"), "{} { port} {1x} }");
        assert_eq!(ok("tail{"), "tail{");
    }

    #[test]
    fn double_brace_is_a_literal_brace() {
        assert_eq!(ok("{{port}"), "{port}");
        assert_eq!(ok("{{{port}"), "{8123");
    }

    #[test]
    fn unknown_word_names_itself_and_the_argument() {
        match resolve("--x={nope}", &values()) {
            Err(LaunchError::BadPlaceholder { name, arg }) => {
                assert_eq!(name, "nope");
                assert_eq!(arg, "--x={nope}");
            }
            other => panic!("expected BadPlaceholder, got {other:?}"),
        }
    }
}
