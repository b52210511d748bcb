//! SQL over one run's raw rows, for notebooks that ask what no built-in
//! table answers ("the p95 TTFT of requests with more than 900 prompt tokens,
//! per concurrency"). The query runs in polars' SQL engine (the convention of
//! Evidence.dev and Quarto with DuckDB: SQL over the data, a table out) over
//! three tables of the run folder:
//!
//! - `requests`: the measured request rows of `requests.parquet` (warm-ups
//!   left out, so a percentile is over what the report measures);
//! - `all_requests`: every request row, warm-ups included (`warmup` marks them);
//! - `points`: one row per (trial, point) of `points.parquet`.
//!
//! Columns are the stored ones (docs/results.md). Percentiles:
//! `QUANTILE_CONT(col, 0.95)` interpolates linearly, as numpy and the
//! report do. Only one `SELECT` (or `WITH … SELECT`) statement is taken; a
//! result longer than [`MAX_ROWS`] is cut, and says so.

use crate::error::AnalysisError;
use polars::prelude::*;
use polars::sql::SQLContext;
use qexp_store::{requests as rq, scan_points, scan_requests};
use std::path::{Path, PathBuf};

/// Rows a query result keeps; the rest are counted, not shown.
pub const MAX_ROWS: usize = 1000;

/// Why a query gave no table.
#[derive(Debug, thiserror::Error)]
pub enum QueryError {
    /// The run could not be read.
    #[error(transparent)]
    Run(#[from] AnalysisError),
    /// Not a single SELECT statement.
    #[error("a query is one SELECT (or WITH … SELECT) statement; got `{start}`")]
    NotSelect {
        /// The statement's first words.
        start: String,
    },
    /// polars refused or failed the query (a syntax error, an unknown column).
    #[error("query over {}: {message}", path.display())]
    Sql {
        /// The run folder.
        path: PathBuf,
        /// polars' message, on one line.
        message: String,
    },
}

/// One cell of a result, typed so that the report formats numbers as
/// numbers and escapes text.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
#[serde(untagged)]
pub enum Cell {
    /// SQL NULL.
    Null,
    /// A boolean.
    Bool(bool),
    /// Any integer type.
    Int(i64),
    /// Any float type.
    Float(f64),
    /// Text, and anything else as polars prints it (lists, dates).
    Text(String),
}

/// A query's result.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct QueryTable {
    /// Column names, in the query's order.
    pub columns: Vec<String>,
    /// Rows, at most [`MAX_ROWS`].
    pub rows: Vec<Vec<Cell>>,
    /// Rows the query returned, including those cut.
    pub total_rows: usize,
}

/// Runs `sql` over the run in `dir` (tables `requests`, `all_requests`, `points`).
pub fn query(dir: &Path, sql: &str) -> Result<QueryTable, QueryError> {
    let start: String = sql.split_whitespace().take(3).collect::<Vec<_>>().join(" ");
    let first = start
        .split_whitespace()
        .next()
        .unwrap_or("")
        .to_ascii_uppercase();
    if first != "SELECT" && first != "WITH" {
        return Err(QueryError::NotSelect { start });
    }
    let all = scan_requests(dir).map_err(AnalysisError::from)?;
    let points = scan_points(dir).map_err(AnalysisError::from)?;
    let ctx = SQLContext::new();
    ctx.register("requests", all.clone().filter(col(rq::WARMUP).not()));
    ctx.register("all_requests", all);
    ctx.register("points", points);
    let sql_err = |e: PolarsError| QueryError::Sql {
        path: dir.to_path_buf(),
        message: one_line(&e.to_string()),
    };
    let mut ctx = ctx;
    let df = ctx
        .execute(sql)
        .and_then(|lf| lf.collect())
        .map_err(sql_err)?;
    table(&df).map_err(sql_err)
}

/// polars' messages span lines (a plan, a hint); a notebook shows one.
fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn table(df: &DataFrame) -> PolarsResult<QueryTable> {
    let kept = df.height().min(MAX_ROWS);
    let columns: Vec<String> = df
        .get_column_names()
        .iter()
        .map(|n| n.to_string())
        .collect();
    let mut rows = vec![Vec::with_capacity(columns.len()); kept];
    for c in df.columns() {
        for (i, row) in rows.iter_mut().enumerate() {
            row.push(cell(c.get(i)?));
        }
    }
    Ok(QueryTable {
        columns,
        rows,
        total_rows: df.height(),
    })
}

fn cell(v: AnyValue) -> Cell {
    match v {
        AnyValue::Null => Cell::Null,
        AnyValue::Boolean(b) => Cell::Bool(b),
        AnyValue::Int8(x) => Cell::Int(x.into()),
        AnyValue::Int16(x) => Cell::Int(x.into()),
        AnyValue::Int32(x) => Cell::Int(x.into()),
        AnyValue::Int64(x) => Cell::Int(x),
        AnyValue::UInt8(x) => Cell::Int(x.into()),
        AnyValue::UInt16(x) => Cell::Int(x.into()),
        AnyValue::UInt32(x) => Cell::Int(x.into()),
        // Counts beyond i64 do not occur in a run; shown as floats if they did.
        AnyValue::UInt64(x) => i64::try_from(x).map_or(Cell::Float(x as f64), Cell::Int),
        AnyValue::Float32(x) => float(x.into()),
        AnyValue::Float64(x) => float(x),
        AnyValue::String(s) => Cell::Text(s.to_string()),
        AnyValue::StringOwned(s) => Cell::Text(s.to_string()),
        other => Cell::Text(other.to_string()),
    }
}

/// NaN (a metric of a failed request) reads as a missing value, not a number.
fn float(x: f64) -> Cell {
    if x.is_nan() {
        Cell::Null
    } else {
        Cell::Float(x)
    }
}
