//! Tables of measured medians (one trial per point), such as the founding
//! deployment's two hand-made tables: `qexp fit --table FILE` fits them as
//! it fits runs. The format is the one of `data/founding.toml`.

use crate::fit::Observation;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The founding deployment's tables (DESIGN.md numbers, with their sources).
pub const FOUNDING_TABLE: &str = include_str!("../data/founding.toml");

/// Where [`FOUNDING_TABLE`] lives in the repository.
pub const FOUNDING_TABLE_PATH: &str = "crates/qexp-model/data/founding.toml";

/// Where [`FOUNDING_MODEL`] lives in the repository.
pub const FOUNDING_MODEL_PATH: &str = "crates/qexp-model/data/founding.model.json";

/// The fit of [`FOUNDING_TABLE`], which the simulator's `founding` profile serves.
pub const FOUNDING_MODEL: &str = include_str!("../data/founding.model.json");

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct TableFile {
    name: String,
    full_attention_share: Option<f64>,
    tokens_per_chunk: Option<f64>,
    table: Vec<Table>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Table {
    name: String,
    input_tokens: Option<f64>,
    output_tokens: Option<f64>,
    concurrency: Option<u32>,
    requests: Option<u32>,
    requests_per_concurrency: Option<u32>,
    row: Vec<Row>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Row {
    concurrency: Option<u32>,
    input_tokens: Option<f64>,
    output_tokens: Option<f64>,
    agg_tok_s: Option<f64>,
    decode_tok_s: Option<f64>,
    ttft_s: Option<f64>,
    ttft_p90_s: Option<f64>,
    e2e_s: Option<f64>,
    #[serde(default)]
    exclude: BTreeMap<String, String>,
}

/// A parsed table file.
#[derive(Debug, Clone, PartialEq)]
pub struct MedianTable {
    /// Its name (the model's source id).
    pub name: String,
    /// `f`, when the file gives it.
    pub full_attention_share: Option<f64>,
    /// Every row, recorded numbers or not.
    pub rows: Vec<TableRow>,
}

/// One row: what it measured (NaN where not recorded or excluded).
#[derive(Debug, Clone, PartialEq)]
pub struct TableRow {
    /// `<table> c=… in=… out=…`.
    pub label: String,
    /// The row as an observation (trial 0).
    pub obs: Observation,
    /// Recorded numbers left out of fits, with why: (field, value, reason).
    pub excluded: Vec<(String, f64, String)>,
}

impl TableRow {
    /// Whether the row records any number the fit uses.
    pub fn has_data(&self) -> bool {
        let o = &self.obs;
        [o.agg_tok_s, o.decode_tok_s, o.ttft_s, o.ttft_p90_s, o.e2e_s]
            .iter()
            .any(|v| v.is_finite())
    }
}

/// A table file that cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum TableError {
    /// Not readable.
    #[error("table {path}")]
    Io {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// Not a table.
    #[error("table {path}")]
    Parse {
        /// The file.
        path: PathBuf,
        /// Why.
        source: Box<toml::de::Error>,
    },
    /// A row without a needed value.
    #[error("table {path}: table `{table}` row {row}: {why}")]
    Row {
        /// The file.
        path: PathBuf,
        /// The table.
        table: String,
        /// 1-based row number in the table.
        row: usize,
        /// What is missing or wrong.
        why: String,
    },
}

impl MedianTable {
    /// Reads a table file.
    pub fn read(path: &Path) -> Result<MedianTable, TableError> {
        let text = std::fs::read_to_string(path).map_err(|source| TableError::Io {
            path: path.to_path_buf(),
            source,
        })?;
        MedianTable::parse(&text, path)
    }

    /// The founding tables.
    pub fn founding() -> Result<MedianTable, TableError> {
        MedianTable::parse(FOUNDING_TABLE, Path::new(FOUNDING_TABLE_PATH))
    }

    /// Parses a table file's text (`path` is for messages).
    pub fn parse(text: &str, path: &Path) -> Result<MedianTable, TableError> {
        let file: TableFile = toml::from_str(text).map_err(|source| TableError::Parse {
            path: path.to_path_buf(),
            source: Box::new(source),
        })?;
        let mut rows = Vec::new();
        for t in &file.table {
            for (i, r) in t.row.iter().enumerate() {
                let bad = |why: String| TableError::Row {
                    path: path.to_path_buf(),
                    table: t.name.clone(),
                    row: i + 1,
                    why,
                };
                rows.push(row(&file, t, r).map_err(bad)?);
            }
        }
        Ok(MedianTable {
            name: file.name,
            full_attention_share: file.full_attention_share,
            rows,
        })
    }

    /// The rows with data, as observations.
    pub fn observations(&self) -> Vec<Observation> {
        self.rows
            .iter()
            .filter(|r| r.has_data())
            .map(|r| r.obs.clone())
            .collect()
    }
}

fn row(file: &TableFile, t: &Table, r: &Row) -> Result<TableRow, String> {
    let concurrency = r
        .concurrency
        .or(t.concurrency)
        .ok_or("no concurrency (in the row or its table)")?;
    let input = r
        .input_tokens
        .or(t.input_tokens)
        .ok_or("no input_tokens (in the row or its table)")?;
    let output = r
        .output_tokens
        .or(t.output_tokens)
        .ok_or("no output_tokens (in the row or its table)")?;
    let requests = t
        .requests
        .or(t
            .requests_per_concurrency
            .map(|k| k.saturating_mul(concurrency)))
        .unwrap_or(concurrency.saturating_mul(2));
    let label = format!("{} c={concurrency} in={input} out={output}", t.name);
    let mut obs = Observation {
        label: label.clone(),
        trial: 0,
        concurrency,
        rate_per_s: None,
        input_tokens: input,
        image_tokens: 0.0,
        output_tokens: output,
        answers: None,
        requests,
        // A table of medians records no request counts: they are assumptions.
        requests_recorded: false,
        ttft_s: r.ttft_s.unwrap_or(f64::NAN),
        ttft_p90_s: r.ttft_p90_s.unwrap_or(f64::NAN),
        e2e_s: r.e2e_s.unwrap_or(f64::NAN),
        decode_tok_s: r.decode_tok_s.unwrap_or(f64::NAN),
        agg_tok_s: r.agg_tok_s.unwrap_or(f64::NAN),
        tokens_per_chunk: file.tokens_per_chunk.unwrap_or(f64::NAN),
        itl_p50_s: f64::NAN,
    };
    let mut excluded = Vec::new();
    for (field, why) in &r.exclude {
        let slot = match field.as_str() {
            "ttft_s" => &mut obs.ttft_s,
            "ttft_p90_s" => &mut obs.ttft_p90_s,
            "e2e_s" => &mut obs.e2e_s,
            "decode_tok_s" => &mut obs.decode_tok_s,
            "agg_tok_s" => &mut obs.agg_tok_s,
            other => return Err(format!("exclude names `{other}`, not a measured field")),
        };
        excluded.push((field.clone(), *slot, why.clone()));
        *slot = f64::NAN;
    }
    Ok(TableRow {
        label,
        obs,
        excluded,
    })
}
