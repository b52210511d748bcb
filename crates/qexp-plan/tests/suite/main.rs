//! qexp-plan's integration tests, as one test binary: plans parsed and
//! expanded, every mistake located at file:line:col (snapshotted), the
//! workload kinds, open-loop keys and deployments, and a bounded fuzz of
//! the parser.

// Tests may panic: the ban on `unwrap` and `expect` (root Cargo.toml,
// [workspace.lints]) is for the code qexp ships.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod deployments;
mod fuzz;
mod open_loop;
mod plans;
mod power;
mod workloads;
