//! A small YAML writer for JSON values: block mappings and sequences,
//! strings quoted as JSON (a JSON string is a valid YAML double-quoted
//! scalar) unless they are multi-line, which become literal blocks (`|`)
//! so that a plan stays readable.

use serde_json::Value;

/// `v` as a YAML document (objects and arrays in block style).
pub fn to_yaml(v: &Value) -> String {
    let mut out = String::new();
    block(v, 0, &mut out);
    out
}

fn pad(n: usize) -> String {
    " ".repeat(n)
}

/// Writes the entries of a mapping or sequence at `indent`.
fn block(v: &Value, indent: usize, out: &mut String) {
    match v {
        Value::Object(map) => {
            if map.is_empty() {
                out.push_str(&format!("{}{{}}\n", pad(indent)));
            }
            for (k, val) in map {
                out.push_str(&format!("{}{}:", pad(indent), scalar_key(k)));
                value_after(val, indent, out);
            }
        }
        Value::Array(items) => {
            if items.is_empty() {
                out.push_str(&format!("{}[]\n", pad(indent)));
            }
            for item in items {
                out.push_str(&format!("{}-", pad(indent)));
                match item {
                    Value::Object(m) if !m.is_empty() => {
                        // The first key on the dash's line, the rest under it.
                        let mut first = String::new();
                        block(item, indent + 2, &mut first);
                        out.push(' ');
                        out.push_str(first.trim_start());
                    }
                    _ => value_after(item, indent, out),
                }
            }
        }
        other => {
            out.push_str(&pad(indent));
            out.push_str(&scalar(other, indent));
            out.push('\n');
        }
    }
}

/// A value after `key:` or `-`: nested blocks on the next lines, scalars inline.
fn value_after(v: &Value, indent: usize, out: &mut String) {
    match v {
        Value::Object(m) if !m.is_empty() => {
            out.push('\n');
            block(v, indent + 2, out);
        }
        Value::Array(a) if !a.is_empty() => {
            out.push('\n');
            block(v, indent + 2, out);
        }
        Value::Object(_) => out.push_str(" {}\n"),
        Value::Array(_) => out.push_str(" []\n"),
        other => {
            out.push(' ');
            out.push_str(&scalar(other, indent));
            out.push('\n');
        }
    }
}

fn scalar_key(k: &str) -> String {
    let plain = !k.is_empty()
        && k.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | '/'));
    if plain {
        k.to_string()
    } else {
        Value::String(k.to_string()).to_string()
    }
}

fn scalar(v: &Value, indent: usize) -> String {
    match v {
        Value::String(s) if s.contains('\n') && literal_ok(s) => {
            let mut out = String::from("|");
            if !s.ends_with('\n') {
                out.push('-');
            } else if s.ends_with("\n\n") {
                out.push('+');
            }
            let body = s.strip_suffix('\n').unwrap_or(s);
            for line in body.split('\n') {
                out.push('\n');
                if !line.is_empty() {
                    out.push_str(&pad(indent + 2));
                    out.push_str(line);
                }
            }
            out
        }
        // JSON's own quoting is valid YAML for strings, numbers, booleans and null.
        other => other.to_string(),
    }
}

/// A literal block keeps every character but tabs and other control
/// characters and trailing spaces. YAML takes its indentation from its
/// first line that is not empty, so that line must not start with a space
/// (it would be read as indentation: the text altered, or the YAML
/// invalid when a later line is less indented), and there must be one (a
/// block of empty lines reads as "").
fn literal_ok(s: &str) -> bool {
    s.split('\n')
        .find(|l| !l.is_empty())
        .is_some_and(|first| !first.starts_with(' '))
        && !s.chars().any(|c| c.is_control() && c != '\n')
        && !s.lines().any(|l| l.trim_end() != l)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn blocks_sequences_and_literals() {
        // Keys in sorted order: the same with or without serde_json's preserve_order.
        let v = json!({
            "a": 1,
            "empty": {},
            "list": [{"n": [1, 2], "name": "x"}, "s"],
            "odd key": "yes",
            "text": "line one\nline \"two\"\n",
        });
        assert_eq!(
            to_yaml(&v),
            "a: 1\nempty: {}\nlist:\n  - n:\n      - 1\n      - 2\n    name: \"x\"\n  - \"s\"\n\
             \"odd key\": \"yes\"\ntext: |\n  line one\n  line \"two\"\n"
        );
    }

    #[test]
    fn text_that_a_literal_block_would_change_is_quoted() {
        for s in [
            "trailing \nspace",
            " leading\nspace",
            "tab\t\nx",
            // The first line with text sets the block's indentation.
            "\n  # comment\n[experiment]\n",
            "\n\n  indented\nnot\n",
            "\n",
            "\n\n",
        ] {
            let y = to_yaml(&json!({ "t": s }));
            assert_eq!(y, format!("t: {}\n", Value::String(s.into())), "{s:?}");
        }
        assert!(to_yaml(&json!({"t": "no newline\nat end"})).starts_with("t: |-\n"));
        // Empty lines before the first with text are kept as they are.
        assert_eq!(
            to_yaml(&json!({"t": "\n\n# comment\n  indented\n"})),
            "t: |\n\n\n  # comment\n    indented\n"
        );
    }
}
