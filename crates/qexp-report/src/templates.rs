//! Loading tera templates: the built-in set with a user's folder over it,
//! HTML escaping and the filters; and the one layout of an axis's main
//! table (the `axis_table` macro), which the Markdown report and
//! narratives' `tables.<axis>` both print.

use crate::error::RenderError;
use crate::views::Table;
use qexp_types::error::chain;
use std::path::Path;

/// The macros `report.md.tera` imports: the axis table's one layout, which
/// narratives' `tables.<axis>` print too.
pub(crate) const TABLES_MD: &str = "tables.md.tera";

pub(crate) const TABLES_MD_TEXT: &str = include_str!("../../../templates/tables.md.tera");

/// A tera error as the report's, its causes in one line.
pub(crate) fn tera_err(name: &str, e: tera::Error) -> RenderError {
    RenderError::Template {
        name: name.to_string(),
        message: chain(&e),
    }
}

/// HTML escaping for `.html.tera` templates: the five characters that matter, nothing else.
fn escape_html(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

fn names(builtin: &[(&str, &str)]) -> String {
    builtin
        .iter()
        .map(|(n, _)| *n)
        .collect::<Vec<_>>()
        .join(", ")
}

/// A tera instance with `builtin` templates, each replaced by the file of
/// the same name in `dir` when there is one: HTML templates autoescape, and
/// every template gets the filters of [`crate::filters`].
pub(crate) fn load_templates(
    builtin: &[(&str, &str)],
    dir: Option<&Path>,
) -> Result<tera::Tera, RenderError> {
    let mut texts = Vec::with_capacity(builtin.len());
    for &(name, text) in builtin {
        let path = dir.map(|d| d.join(name)).filter(|p| p.exists());
        let text = match path {
            Some(path) => std::fs::read_to_string(&path).map_err(|source| RenderError::Io {
                action: "cannot read",
                path: path.clone(),
                source,
            })?,
            None => text.to_string(),
        };
        texts.push((name, text));
    }
    // All at once: a user's template may extend or import another of the set.
    let mut tera = tera::Tera::default();
    tera.add_raw_templates(texts.iter().map(|(n, t)| (*n, t.as_str())))
        .map_err(|e| tera_err(&names(builtin), e))?;
    // Only HTML templates escape; Markdown uses the `md_cell` filter where a cell needs it.
    tera.autoescape_on(vec![".html.tera", ".html"]);
    tera.set_escape_fn(escape_html);
    crate::filters::register(&mut tera);
    Ok(tera)
}

/// One axis table in Markdown as the built-in report prints it (the
/// `axis_table` macro of `tables.md.tera`), for narratives' `tables.<axis>`.
pub(crate) fn axis_table_markdown(t: &Table, streams: bool) -> Result<String, RenderError> {
    const CALL: &str = "axis_table.md.tera";
    let call =
        r#"{% import "tables.md.tera" as tables %}{{ tables::axis_table(t=t, streams=streams) }}"#;
    let tera = load_templates(&[(TABLES_MD, TABLES_MD_TEXT), (CALL, call)], None)?;
    let mut c = tera::Context::new();
    c.insert("t", t);
    c.insert("streams", &streams);
    tera.render(CALL, &c).map_err(|e| tera_err(CALL, e))
}
