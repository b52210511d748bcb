//! qexp-report's integration tests, as one test binary (one link of
//! polars): reports and diffs rendered from fixture runs, snapshotted;
//! notebooks across runs and the workspace index over runs written to disk.

// Tests may panic: the ban on `unwrap` and `expect` (root Cargo.toml,
// [workspace.lints]) is for the code qexp ships.
#![allow(clippy::unwrap_used, clippy::expect_used)]
// A test tells one story end to end; the 80-line limit is for the code
// qexp ships.
#![allow(clippy::too_many_lines)]

mod diff;
mod fit;
mod fixture;
mod index;
mod model;
mod notebook;
mod report;
