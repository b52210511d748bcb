//! qexp-client's integration tests, as one test binary: every fault class
//! through the client against the simulator, a server that closes kept-alive
//! connections, errors and keep-alives that engines put in their streams
//! (played by a scripted server), fingerprints from recorded server
//! responses, and a bounded fuzz of the SSE parser.

// Tests may panic: the ban on `unwrap` and `expect` (root Cargo.toml,
// [workspace.lints]) is for the code qexp ships.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod closing_server;
mod faults;
mod fingerprint;
mod first_event;
mod script;
mod sse_fuzz;
mod stream_errors;
