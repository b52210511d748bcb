//! What a run imported from another benchmarking tool records about its
//! source (`manifest.json` `import`): the tool, its files, what it did not
//! record, and how its own figures compare with qexp's recomputation.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

/// The `import` section of an imported run's manifest.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ImportRecord {
    /// The format name given to `qexp import` (`vllm`).
    pub format: String,
    /// The tool that wrote the files, as its users call it (`vllm bench serve`).
    pub tool: String,
    /// The tool's version where the files or the user said it; never guessed.
    pub tool_version: Option<String>,
    /// Every source file, in the order given.
    pub files: Vec<SourceFile>,
    /// One sentence per thing the source did not record (host, commit,
    /// server fingerprint, …): unknown, never made up.
    pub unknown: Vec<String>,
    /// True when the source kept only summaries, no per-request data: the
    /// run then has no request rows and its figures have no spread.
    pub summaries_only: bool,
    /// The tool's own summary figures beside qexp's recomputation.
    pub checks: Vec<MetricCheck>,
    /// When the import ran.
    pub at: DateTime<Utc>,
}

/// One source file of an import.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SourceFile {
    /// The file's name as given.
    pub name: String,
    /// SHA-256 of its bytes, hex.
    pub sha256: String,
    /// The trial it became.
    pub trial: u32,
    /// The point it became.
    pub point_id: u32,
}

/// A figure the tool reported for one (trial, point) beside the same
/// figure recomputed by qexp from the tool's per-request data.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MetricCheck {
    /// Trial.
    pub trial: u32,
    /// Point id.
    pub point_id: u32,
    /// The tool's field (`median_ttft_ms`).
    pub source_field: String,
    /// The qexp metric it is compared with (`ttft_s`).
    pub metric: String,
    /// The tool's value, in qexp's unit (seconds, tok/s).
    pub source: f64,
    /// qexp's value under its own definition; null when it cannot be recomputed.
    pub qexp: Option<f64>,
    /// |source − qexp| / |qexp|.
    pub relative_difference: Option<f64>,
    /// The largest relative difference counted as agreement.
    pub tolerance: f64,
    /// Whether the two agree within the tolerance (null when not recomputed).
    pub agrees: Option<bool>,
    /// Where the definitions differ, why the figures may: one sentence.
    pub definition: String,
}
