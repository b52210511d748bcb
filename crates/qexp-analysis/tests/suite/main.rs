//! qexp-analysis's integration tests, as one test binary (one link of
//! polars): the diff on synthetic runs, its measured error rates, and the
//! pooled ITL read in batches, the history's step search and its error
//! rates, SQL over a run's rows, a run checked against a fitted model, and
//! the workspace's choice of a newest run.

// Tests may panic: the ban on `unwrap` and `expect` (root Cargo.toml,
// [workspace.lints]) is for the code qexp ships.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod diff;
mod diff_power;
mod distributions;
mod history;
mod itl;
mod model_check;
mod query;
mod support;
mod workspace;
