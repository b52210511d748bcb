//! Why the benchmark stopped: below the scenarios that return it and the
//! entry point that runs them.

/// Why the benchmark stopped.
#[derive(Debug, thiserror::Error)]
pub enum BenchError {
    /// The bench server did not answer.
    #[error("the bench server did not answer: {url}")]
    Server {
        /// The URL asked.
        url: String,
        /// What the HTTP client said.
        #[source]
        source: reqwest::Error,
    },
    /// A generated plan was rejected (a bug in the benchmark).
    #[error("bench plan rejected")]
    Plan(#[source] qexp_plan::PlanError),
    /// A run failed.
    #[error("bench run failed")]
    Run(#[source] qexp_runner::RunError),
    /// A run's folder could not be opened.
    #[error("cannot read bench rows")]
    Store(#[source] qexp_store::StoreError),
    /// Rows could not be read back.
    #[error("cannot read bench rows")]
    Read(#[source] polars::prelude::PolarsError),
}
