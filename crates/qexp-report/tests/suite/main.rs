//! qexp-report's integration tests, as one test binary (one link of
//! polars): reports and diffs rendered from fixture runs, snapshotted.

mod diff;
mod fit;
mod fixture;
mod report;
