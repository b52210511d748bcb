//! qexp-runner's integration tests, as one test binary (one link of
//! polars): the closed- and open-loop schedulers on a fake backend and
//! tokio's paused clock.

// Tests may panic: the ban on `unwrap` and `expect` (root Cargo.toml,
// [workspace.lints]) is for the code qexp ships.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod open_loop;
mod scheduler;
