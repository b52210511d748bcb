//! Why an import could not be made, naming the file and the field.

use std::path::PathBuf;

/// Why an import could not be made. Each names the file and, where the
/// file is at fault, the field.
#[derive(Debug, thiserror::Error)]
pub enum ImportError {
    /// A source file could not be read.
    #[error("cannot read {}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// A source file is not valid JSON (truncated, or another format).
    #[error("{}:{line}:{column}: not valid JSON ({message}); is it a whole {tool} result file?", path.display())]
    Json {
        /// The file.
        path: PathBuf,
        /// Where parsing stopped.
        line: usize,
        /// Where parsing stopped.
        column: usize,
        /// serde_json's account.
        message: String,
        /// The tool the format belongs to.
        tool: &'static str,
    },
    /// A field is missing, of the wrong type, unknown, or inconsistent.
    #[error("{}: field `{field}` {problem}", path.display())]
    Field {
        /// The file.
        path: PathBuf,
        /// The field (a JSON key, or `key[i]`).
        field: String,
        /// What is wrong with it, as the end of a sentence.
        problem: String,
    },
    /// The `--plan` file is not a valid plan.
    #[error(transparent)]
    Plan(#[from] qexp_plan::PlanError),
    /// An imported configuration matches no point of the `--plan` file.
    #[error("{} does not match {}: {why}", file.display(), plan.display())]
    PlanMismatch {
        /// The source file.
        file: PathBuf,
        /// The plan.
        plan: PathBuf,
        /// Why, as the end of a sentence.
        why: String,
    },
    /// The run's rows could not be turned into a report.
    #[error("cannot export the run")]
    Export(#[source] Box<dyn std::error::Error + Send + Sync>),
    /// A report could not be written.
    #[error("cannot write {}", path.display())]
    Write {
        /// The file or folder.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// No file was given.
    #[error("no file to import")]
    NoFiles,
    /// Writing the run failed.
    #[error(transparent)]
    Store(#[from] qexp_store::StoreError),
    /// Reading the written run back for the recomputation failed.
    #[error("cannot recompute the imported run's metrics")]
    Analysis(#[from] qexp_analysis::AnalysisError),
}
