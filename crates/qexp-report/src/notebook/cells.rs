//! Errors in place. A notebook is first rendered whole; when that fails, it
//! is cut into cells — paragraphs separated by blank lines, kept together
//! while a tera block (`{% for %}`, `{% if %}`, a comment) is open, and each
//! top-level `{% set %}` on its own — and every cell is rendered on its own,
//! after the `set`s before it that rendered. A cell that fails shows its
//! error where it stood; the others render as they would have.

use crate::format::md_text;

/// One cell of a notebook body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Cell {
    /// Its text.
    pub text: String,
    /// Its first line in the notebook, from 1.
    pub line: usize,
    /// A top-level `{% set … %}` (it shapes later cells, prints nothing).
    pub is_set: bool,
}

/// The opening or closing tags in `line`: +1 per block opened, −1 per block closed.
fn depth_change(line: &str) -> i64 {
    const OPEN: [&str; 6] = ["for", "if", "macro", "filter", "block", "raw"];
    let mut d = 0i64;
    let mut rest = line;
    while let Some(i) = rest.find("{%") {
        rest = &rest[i + 2..];
        let word: String = rest
            .trim_start_matches(['-', ' ', '\t'])
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect();
        if OPEN.contains(&word.as_str()) {
            d += 1;
        } else if word.strip_prefix("end").is_some_and(|w| OPEN.contains(&w)) {
            d -= 1;
        }
    }
    d + line.matches("{#").count() as i64 - line.matches("#}").count() as i64
}

fn is_set(line: &str) -> bool {
    let t = line.trim();
    let inner = t
        .strip_prefix("{%")
        .map(|r| r.trim_start_matches('-').trim_start());
    inner.is_some_and(|r| {
        (r.starts_with("set ") || r.starts_with("set_global "))
            && t.ends_with("%}")
            && t.matches("{%").count() == 1
    })
}

/// Cuts `body` (starting at notebook line `first_line`) into cells.
pub(crate) fn cells(body: &str, first_line: usize) -> Vec<Cell> {
    let mut out: Vec<Cell> = Vec::new();
    let mut current = String::new();
    let mut start = first_line;
    let mut depth = 0i64;
    let flush = |current: &mut String, start: usize, out: &mut Vec<Cell>| {
        if !current.trim().is_empty() {
            out.push(Cell {
                text: std::mem::take(current),
                line: start,
                is_set: false,
            });
        }
        current.clear();
    };
    for (i, line) in body.lines().enumerate() {
        let n = first_line + i;
        if depth <= 0 && line.trim().is_empty() {
            flush(&mut current, start, &mut out);
            continue;
        }
        if depth <= 0 && is_set(line) {
            flush(&mut current, start, &mut out);
            out.push(Cell {
                text: line.to_string(),
                line: n,
                is_set: true,
            });
            continue;
        }
        if current.is_empty() {
            start = n;
        }
        current.push_str(line);
        current.push('\n');
        depth += depth_change(line);
    }
    flush(&mut current, start, &mut out);
    out
}

/// Renders each cell with `render` (the text of the `set`s that rendered
/// before it, then the cell); a failing cell becomes its error, explained by
/// `explain` (which may name a missing run), as a Markdown callout.
pub(crate) fn render_cells(
    cells: &[Cell],
    mut render: impl FnMut(&str) -> Result<String, String>,
    explain: impl Fn(&Cell, String) -> String,
) -> String {
    let mut prelude = String::new();
    let mut parts: Vec<String> = Vec::new();
    for c in cells {
        let text = format!("{prelude}{}", c.text);
        match render(&text) {
            Ok(out) if c.is_set => {
                prelude.push_str(&c.text);
                prelude.push('\n');
                // A `set` prints nothing; anything else it printed is kept.
                if !out.trim().is_empty() {
                    parts.push(out.trim().to_string());
                }
            }
            Ok(out) => {
                if !out.trim().is_empty() {
                    parts.push(out.trim().to_string());
                }
            }
            Err(e) => parts.push(callout(c.line, &explain(c, e))),
        }
    }
    let mut md = parts.join("\n\n");
    md.push('\n');
    md
}

/// An error shown in place.
pub(crate) fn callout(line: usize, message: &str) -> String {
    format!("> **⚠ Notebook error** (line {line}): {}", md_text(message))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paragraphs_blocks_and_sets_become_cells() {
        let body = "{% set a = 1 %}\nOne {{ a }}\nstill one\n\n{% for x in [1,2] %}\n\n{{ x }}\n\n{% endfor %}\n\n{# a\n\ncomment #}\nlast\n";
        let c = cells(body, 10);
        let kinds: Vec<(usize, bool)> = c.iter().map(|c| (c.line, c.is_set)).collect();
        assert_eq!(
            kinds,
            vec![(10, true), (11, false), (14, false), (20, false)]
        );
        assert!(c[2].text.contains("endfor"));
        assert!(c[3].text.contains("last"));
    }

    #[test]
    fn a_failing_cell_shows_its_error_and_the_rest_render() {
        let c = cells("{% set a = 1 %}\nok {{ a }}\n\nbad\n\nfine {{ a }}\n", 1);
        let md = render_cells(
            &c,
            |t| {
                if t.contains("bad") {
                    Err("boom <x>".into())
                } else {
                    Ok(t.replace("{% set a = 1 %}", "").replace("{{ a }}", "1"))
                }
            },
            |_, e| e,
        );
        assert_eq!(
            md,
            "ok 1\n\n> **⚠ Notebook error** (line 4): boom \\<x\\>\n\nfine 1\n"
        );
    }
}
