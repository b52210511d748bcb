//! qexp-report's integration tests, as one test binary (one link of
//! polars): reports and diffs rendered from fixture runs, snapshotted;
//! notebooks across runs and the workspace index over runs written to disk.

mod diff;
mod fit;
mod fixture;
mod index;
mod model;
mod notebook;
mod report;
