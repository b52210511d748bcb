//! `query(sql="…")` in a notebook: SQL over a run's rows (qexp-analysis runs
//! it; see [`qexp_analysis::query`]), placed as a Markdown table. Numbers
//! are formatted as the report's tables format them; text from the run is
//! made inert.

use crate::format::{md_text, num};
use qexp_analysis::query::{query, Cell, QueryTable};
use serde_json::Value;
use std::collections::HashMap;
use std::path::Path;

/// Runs `sql=` over the run in `dir` and returns the result as Markdown.
pub(crate) fn query_md(dir: &Path, args: &HashMap<String, Value>) -> tera::Result<Value> {
    let sql = args.get("sql").and_then(Value::as_str).ok_or(
        "query() needs sql=\"SELECT … FROM requests …\" (tables: requests, all_requests, points)",
    )?;
    let table = query(dir, sql).map_err(|e| tera::Error::msg(qexp_types::error::chain(&e)))?;
    Ok(Value::from(markdown(&table)))
}

/// A GitHub-flavoured Markdown table; numbers right-aligned.
pub(crate) fn markdown(t: &QueryTable) -> String {
    if t.columns.is_empty() {
        return "*(the query returned no columns)*\n".into();
    }
    let numeric: Vec<bool> = (0..t.columns.len())
        .map(|c| {
            t.rows
                .iter()
                .all(|r| matches!(r.get(c), Some(Cell::Int(_) | Cell::Float(_) | Cell::Null)))
        })
        .collect();
    let mut out = String::new();
    let header: Vec<String> = t.columns.iter().map(|c| md_text(c)).collect();
    out.push_str(&format!("| {} |\n", header.join(" | ")));
    let rule: Vec<&str> = numeric
        .iter()
        .map(|n| if *n { "---:" } else { "---" })
        .collect();
    out.push_str(&format!("|{}|\n", rule.join("|")));
    for row in &t.rows {
        let cells: Vec<String> = row.iter().map(cell).collect();
        out.push_str(&format!("| {} |\n", cells.join(" | ")));
    }
    if t.rows.is_empty() {
        out.push_str("\n*(no rows)*\n");
    } else if t.total_rows > t.rows.len() {
        out.push_str(&format!(
            "\n*(first {} of {} rows)*\n",
            t.rows.len(),
            t.total_rows
        ));
    }
    out
}

fn cell(c: &Cell) -> String {
    match c {
        Cell::Null => "–".into(),
        Cell::Bool(b) => b.to_string(),
        Cell::Int(i) => i.to_string(),
        Cell::Float(x) => num(*x),
        Cell::Text(s) => md_text(s),
    }
}
