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
//!
//! A query reads the run and nothing else: the statement is parsed first and
//! every table it names must be one of the three (or a `WITH` name of its
//! own), so polars' table functions (`read_parquet(…)`, `read_csv(…)`) and
//! other files are refused. A result with no `ORDER BY` at its top comes
//! back sorted by its columns, left to right: polars returns `GROUP BY`
//! groups in no fixed order, and a pinned notebook must render the same
//! bytes every time. For the same reason a `LIMIT` (or `OFFSET`, `FETCH`,
//! `TOP`) without an `ORDER BY` is refused. Rows that tie on an `ORDER BY`
//! keep the order polars gives them: order by every column that tells them
//! apart.

use crate::error::AnalysisError;
use polars::prelude::*;
use polars::sql::SQLContext;
use qexp_store::{requests as rq, scan_points, scan_requests};
use sqlparser::ast::{Query, SetExpr, Statement, TableFactor, Visit, Visitor};
use sqlparser::dialect::GenericDialect;
use sqlparser::parser::{Parser, ParserOptions};
use std::collections::BTreeSet;
use std::ops::ControlFlow;
use std::path::{Path, PathBuf};

/// The tables a query may read.
pub const TABLES: [&str; 3] = ["requests", "all_requests", "points"];

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
    /// The query names a table that is not the run's, or a table function.
    #[error("a query reads only the run's tables (requests, all_requests, points); {what} is not one of them")]
    Source {
        /// What was named, as written (`nowhere`, `read_parquet(…)`).
        what: String,
    },
    /// The query keeps some rows without an order that says which.
    #[error("`{what}` without ORDER BY keeps rows in no fixed order: add an ORDER BY, so that the notebook renders the same rows every time")]
    Unordered {
        /// The clause, as written (`LIMIT 3`).
        what: String,
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
    let sql_err = |e: PolarsError| QueryError::Sql {
        path: dir.to_path_buf(),
        message: one_line(&e.to_string()),
    };
    let ordered = check(sql).map_err(|e| match e {
        Checked::Refused(e) => e,
        Checked::Parse(message) => QueryError::Sql {
            path: dir.to_path_buf(),
            message,
        },
    })?;
    let all = scan_requests(dir).map_err(AnalysisError::from)?;
    let points = scan_points(dir).map_err(AnalysisError::from)?;
    let mut ctx = SQLContext::new();
    ctx.register("requests", all.clone().filter(col(rq::WARMUP).not()));
    ctx.register("all_requests", all);
    ctx.register("points", points);
    let mut df = ctx
        .execute(sql)
        .and_then(|lf| lf.collect())
        .map_err(sql_err)?;
    if !ordered {
        df = sorted(df).map_err(sql_err)?;
    }
    table(&df).map_err(sql_err)
}

/// Why [`check`] refused a statement.
enum Checked {
    /// Not a query qexp runs.
    Refused(QueryError),
    /// Not SQL: the parser's message.
    Parse(String),
}

/// Parses `sql` as polars does and refuses anything but one query over the
/// run's tables; tells whether its result has an order of its own (a
/// top-level `ORDER BY`).
fn check(sql: &str) -> Result<bool, Checked> {
    let start: String = sql.split_whitespace().take(3).collect::<Vec<_>>().join(" ");
    let not_select = || {
        Checked::Refused(QueryError::NotSelect {
            start: start.clone(),
        })
    };
    let mut statements = Parser::new(&GenericDialect)
        .with_options(ParserOptions::new().with_trailing_commas(true))
        .try_with_sql(sql)
        .and_then(|mut p| p.parse_statements())
        .map_err(|e| Checked::Parse(one_line(&e.to_string())))?;
    let query = match (statements.pop(), statements.is_empty()) {
        (Some(Statement::Query(q)), true) => q,
        _ => return Err(not_select()),
    };
    if !matches!(
        *query.body,
        SetExpr::Select(_) | SetExpr::Query(_) | SetExpr::SetOperation { .. }
    ) {
        return Err(not_select());
    }
    let mut names = WithNames::default();
    let _ = query.visit(&mut names);
    if let ControlFlow::Break(what) = query.visit(&mut Sources(&names.0)) {
        return Err(Checked::Refused(QueryError::Source { what }));
    }
    if let ControlFlow::Break(what) = query.visit(&mut Unordered) {
        return Err(Checked::Refused(QueryError::Unordered { what }));
    }
    Ok(ordered(&query))
}

/// Whether a query's result has an order of its own: an `ORDER BY` at its
/// top, or on the parenthesised query that is its whole body.
fn ordered(q: &Query) -> bool {
    match (&q.order_by, q.body.as_ref()) {
        (Some(_), _) => true,
        (None, SetExpr::Query(inner)) => ordered(inner),
        _ => false,
    }
}

/// Breaks on the first query that keeps some rows (`LIMIT`, `OFFSET`,
/// `FETCH`, `TOP`) without an `ORDER BY` to say which: polars would pick
/// them in no fixed order.
struct Unordered;

impl Visitor for Unordered {
    type Break = String;
    fn pre_visit_query(&mut self, q: &Query) -> ControlFlow<String> {
        let top = match q.body.as_ref() {
            SetExpr::Select(s) => s.top.is_some(),
            _ => false,
        };
        let cut = match (&q.limit_clause, &q.fetch, top) {
            (Some(l), _, _) => Some(l.to_string()),
            (None, Some(f), _) => Some(f.to_string()),
            (None, None, true) => Some("TOP".to_string()),
            (None, None, false) => None,
        };
        match (cut, &q.order_by) {
            (Some(what), None) => ControlFlow::Break(what.trim().to_string()),
            _ => ControlFlow::Continue(()),
        }
    }
}

/// Every `WITH` name a statement declares, at any depth.
#[derive(Default)]
struct WithNames(BTreeSet<String>);

impl Visitor for WithNames {
    type Break = ();
    fn pre_visit_query(&mut self, q: &Query) -> ControlFlow<()> {
        for cte in q.with.iter().flat_map(|w| &w.cte_tables) {
            self.0.insert(cte.alias.name.value.to_ascii_lowercase());
        }
        ControlFlow::Continue(())
    }
}

/// Breaks with the first table factor that is not the run's: a table
/// function, another name, or a kind polars reads from elsewhere.
struct Sources<'a>(&'a BTreeSet<String>);

impl Visitor for Sources<'_> {
    type Break = String;
    fn pre_visit_table_factor(&mut self, t: &TableFactor) -> ControlFlow<String> {
        match t {
            TableFactor::Table { name, args, .. } => {
                let text = name.to_string();
                if args.is_some() {
                    return ControlFlow::Break(format!("`{text}(…)`"));
                }
                // One name, quoted or not, that is the run's or the query's own.
                let known = match name.0.as_slice() {
                    [part] => part.as_ident().is_some_and(|i| {
                        let lower = i.value.to_ascii_lowercase();
                        TABLES.contains(&lower.as_str()) || self.0.contains(&lower)
                    }),
                    _ => false,
                };
                if known {
                    ControlFlow::Continue(())
                } else {
                    ControlFlow::Break(format!("`{text}`"))
                }
            }
            TableFactor::Derived { .. } | TableFactor::NestedJoin { .. } => {
                ControlFlow::Continue(())
            }
            other => ControlFlow::Break(format!("`{other}`")),
        }
    }
}

/// The result sorted by its columns, left to right, nulls last: one order
/// for a result whose query gave it none. Columns of values that have no
/// order (lists, structs) are passed over.
fn sorted(df: DataFrame) -> PolarsResult<DataFrame> {
    let by: Vec<PlSmallStr> = df
        .columns()
        .iter()
        .filter(|c| {
            let d = c.dtype();
            d.is_primitive_numeric() || d.is_bool() || d.is_string() || d.is_temporal()
        })
        .map(|c| c.name().clone())
        .collect();
    if by.is_empty() || df.height() < 2 {
        return Ok(df);
    }
    let opts = SortMultipleOptions::default()
        .with_nulls_last(true)
        .with_maintain_order(true);
    df.sort(by, opts)
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
