//! Why a results folder could not be written or read.

use std::path::PathBuf;

/// Why a results directory could not be written or read.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// A file operation failed.
    #[error("{action} {}", path.display())]
    Io {
        /// What qexp was doing ("cannot write", …).
        action: &'static str,
        /// The file or folder.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// Parquet encoding or decoding failed.
    #[error("{action} {}", path.display())]
    Parquet {
        /// What qexp was doing.
        action: &'static str,
        /// The file.
        path: PathBuf,
        /// The cause.
        source: polars::error::PolarsError,
    },
    /// The manifest is missing or not valid JSON of the expected shape.
    #[error("{} is not a qexp manifest: {message}", path.display())]
    Manifest {
        /// The file.
        path: PathBuf,
        /// The cause.
        message: String,
    },
    /// A journal line that is not a request row (and not a last line cut by a crash).
    #[error("{}:{line} is not a qexp journal line: {message}", path.display())]
    Journal {
        /// The journal file.
        path: PathBuf,
        /// The line, from 1 (0: while writing).
        line: usize,
        /// The cause.
        message: String,
    },
    /// The run was written by a newer qexp than this one.
    #[error("{} was written by a newer qexp (schema_version {found}; this qexp reads up to {supported}); upgrade qexp to read it", path.display())]
    NewerSchema {
        /// The manifest.
        path: PathBuf,
        /// The run's schema version.
        found: u64,
        /// The newest version this qexp reads.
        supported: u32,
    },
    /// The run folder already exists: qexp never writes into another run.
    #[error("{} already exists; qexp never writes into another run's folder (start the run again for a new run id)", path.display())]
    RunExists {
        /// The folder.
        path: PathBuf,
    },
    /// Another process holds the run folder's lock (it is running or resuming it).
    #[error("another qexp process is writing {} (it holds {}/.lock); let it finish, or stop it, then try again", path.display(), path.display())]
    Locked {
        /// The run folder.
        path: PathBuf,
    },
    /// A bare name that is neither a run folder nor a run id under the results root.
    #[error("no run {name:?}: not a folder with manifest.json, nor a run id under {}", root.display())]
    NoSuchRun {
        /// The name as given.
        name: String,
        /// The results root it was looked up under.
        root: PathBuf,
    },
    /// A run id prefix that more than one run starts with.
    #[error("run id {name:?} matches {count} runs under {}; give more of it or the folder", root.display())]
    AmbiguousRunId {
        /// The prefix as given.
        name: String,
        /// How many runs start with it.
        count: usize,
        /// The results root it was looked up under.
        root: PathBuf,
    },
    /// The folder is not a run (no manifest).
    #[error("{} is not a qexp run (no manifest.json); give a folder like results/<experiment>/<run-id>", path.display())]
    NotARun {
        /// The folder.
        path: PathBuf,
    },
}

impl StoreError {
    pub(crate) fn io(
        action: &'static str,
        path: impl Into<PathBuf>,
    ) -> impl FnOnce(std::io::Error) -> StoreError {
        let path = path.into();
        move |source| StoreError::Io {
            action,
            path,
            source,
        }
    }

    pub(crate) fn pq(
        action: &'static str,
        path: impl Into<PathBuf>,
    ) -> impl FnOnce(polars::error::PolarsError) -> StoreError {
        let path = path.into();
        move |source| StoreError::Parquet {
            action,
            path,
            source,
        }
    }
}
