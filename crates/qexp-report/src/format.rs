//! Cells for people: a summary's median and spread where Rust writes a
//! cell (the templates' filters format the axis tables' values), and
//! Markdown escaping. The numbers themselves are
//! formatted by qexp-analysis' one formatting module, re-exported here.

pub use qexp_analysis::format::{num, percent1, percent_prose, sig3, tokens};
use qexp_analysis::stats::Summary;

/// `median` and `[min–max]` of a summary, or dashes when absent.
pub fn center(s: &Option<Summary>) -> String {
    s.as_ref().map_or("–".into(), |s| num(s.median))
}

/// The spread shown beside a median: min–max across trials.
pub fn spread(s: &Option<Summary>) -> String {
    match s {
        Some(s) if s.n > 1 => format!("{}–{}", num(s.min), num(s.max)),
        Some(_) => "n=1".into(),
        None => "–".into(),
    }
}

/// Escapes text for a Markdown table cell.
pub fn md_cell(s: &str) -> String {
    s.replace('|', "\\|").replace('\n', " ")
}

/// Makes text from a run (a model name, an error message) inert inside
/// Markdown that is later turned into HTML: every character that could open
/// markup (`<`, `&`, links, emphasis, code, table cells) is backslash-escaped,
/// which CommonMark turns back into the literal character, and newlines become
/// spaces so the text stays inside its paragraph or cell.
pub fn md_text(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '\\' | '`' | '*' | '_' | '[' | ']' | '<' | '>' | '&' | '|' | '#' | '!' | '~' => {
                out.push('\\');
                out.push(c);
            }
            '\n' | '\r' => out.push(' '),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn md_text_neutralises_markup() {
        assert_eq!(
            md_text("<script>a|b</script>"),
            "\\<script\\>a\\|b\\</script\\>"
        );
        assert_eq!(
            md_text("[x](javascript:1)\nnext"),
            "\\[x\\](javascript:1) next"
        );
        assert_eq!(md_text("Qwen/Qwen3.6-27B"), "Qwen/Qwen3.6-27B");
    }
}
