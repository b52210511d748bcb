//! qexp-sim's integration tests, as one test binary: the simulated
//! server's HTTP surface, its answers, its prefix cache and its timing
//! model, all over a real loopback socket on 127.0.0.1:0.

// Tests may panic: the ban on `unwrap` and `expect` (root Cargo.toml,
// [workspace.lints]) is for the code qexp ships.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod answers;
mod common;
mod endpoints;
mod prefix_cache;
mod timing;
