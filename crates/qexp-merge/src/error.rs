//! Why `qexp merge` refused or failed.

use std::path::PathBuf;

/// Why shards could not be merged into one run.
#[derive(Debug, thiserror::Error)]
pub enum MergeError {
    /// Shards missing or incomplete, merged without `--partial`: one
    /// sentence for each, naming the shard and what to do.
    #[error("{}; or merge what there is with --partial", .0.join("; "))]
    Missing(Vec<String>),
    /// No shard given is complete.
    #[error("no shard is complete: there is nothing to merge")]
    NoneComplete,
    /// No folder was given.
    #[error("give the shard folders to merge")]
    NoShards,
    /// A folder whose manifest records no shard.
    #[error("{} is not a shard (its manifest records no --shard); merge the folders `qexp run --shard K/N` wrote", .0.display())]
    NotAShard(PathBuf),
    /// One shard given as two folders.
    #[error("shard {index} of {count} is given twice: {} and {}", first.display(), second.display())]
    GivenTwice {
        /// The shard's index.
        index: u32,
        /// The run's shard count.
        count: u32,
        /// The folder given first.
        first: PathBuf,
        /// The folder given again.
        second: PathBuf,
    },
    /// Two folders that are shards of different runs.
    #[error("{} and {} are not shards of one run: their {what} differs ({a} vs {b})", first.display(), other.display())]
    NotOneRun {
        /// The first shard given.
        first: PathBuf,
        /// The shard that differs from it.
        other: PathBuf,
        /// What differs (run id, plan hash, shard count, trial count,
        /// target, model, workload hash).
        what: &'static str,
        /// The first shard's value.
        a: String,
        /// The other's.
        b: String,
    },
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
