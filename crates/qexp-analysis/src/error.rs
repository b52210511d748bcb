//! Why a run could not be analysed: the one error type of the crate's
//! loading half, at the bottom so that every reader of a run can return it.

use polars::prelude::PolarsError;
use qexp_store::StoreError;
use std::path::PathBuf;

/// Why a run could not be analysed.
#[derive(Debug, thiserror::Error)]
pub enum AnalysisError {
    /// The run folder could not be read.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// A polars query failed (a column missing or of another type).
    #[error("cannot aggregate {}", path.display())]
    Query {
        /// The run folder.
        path: PathBuf,
        /// The cause.
        source: PolarsError,
    },
}
