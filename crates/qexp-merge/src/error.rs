//! Why `qexp merge` refused or failed.

use std::path::PathBuf;

/// Why shards could not be merged into one run.
#[derive(Debug, thiserror::Error)]
pub enum MergeError {
    /// The shards do not make one run, or one is missing or incomplete;
    /// the sentence names the shard and what to do.
    #[error("{0}")]
    Refused(String),
    /// The plan the shards ran does not load.
    #[error("the shards' plan does not load")]
    Plan(#[source] qexp_plan::PlanError),
    /// A shard folder or the merged run could not be read or written.
    #[error(transparent)]
    Store(#[from] qexp_store::StoreError),
    /// A shard's Parquet rows could not be read.
    #[error("cannot read the rows of {}", dir.display())]
    Rows {
        /// The shard folder.
        dir: PathBuf,
        /// The cause.
        source: polars::error::PolarsError,
    },
}
