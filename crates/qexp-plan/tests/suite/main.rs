//! qexp-plan's integration tests, as one test binary: plans parsed and
//! expanded, every mistake located at file:line:col (snapshotted), the
//! workload kinds, open-loop keys and deployments, and a bounded fuzz of
//! the parser.

mod deployments;
mod fuzz;
mod open_loop;
mod plans;
mod workloads;
