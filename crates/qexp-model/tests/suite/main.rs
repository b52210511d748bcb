//! qexp-model's integration tests: the founding tables and their fit.

// Tests may panic: the ban on `unwrap` and `expect` (root Cargo.toml,
// [workspace.lints]) is for the code qexp ships.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod founding;
mod synthetic;
mod tails;
