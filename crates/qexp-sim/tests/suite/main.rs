//! qexp-sim's integration tests, as one test binary: the simulated
//! server's HTTP surface, its answers, its prefix cache and its timing
//! model, all over a real loopback socket on 127.0.0.1:0.

mod answers;
mod common;
mod endpoints;
mod prefix_cache;
mod timing;
