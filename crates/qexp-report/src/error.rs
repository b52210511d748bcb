//! Why a report could not be rendered.

use crate::charts::ChartError;
use std::path::PathBuf;

/// Why a report could not be rendered.
#[derive(Debug, thiserror::Error)]
pub enum RenderError {
    /// A template failed to parse or render.
    #[error("template {name}: {message}")]
    Template {
        /// Template name.
        name: String,
        /// The cause, with tera's chain.
        message: String,
    },
    /// A chart could not be drawn.
    #[error(transparent)]
    Chart(#[from] ChartError),
    /// A file could not be written or read.
    #[error("{action} {}", path.display())]
    Io {
        /// What qexp was doing.
        action: &'static str,
        /// The path.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
}
