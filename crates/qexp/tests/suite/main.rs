//! qexp's integration tests, as one test binary: each module drives the
//! real `qexp` binary (or the runner) against servers it starts on
//! 127.0.0.1:0 — the simulator, hostile and counting servers, real vLLM and
//! llama.cpp when CI started them. One binary links polars once where
//! eleven did. Tests that run a load take one lock ([`common::heavy`] alone
//! where they measure time, [`common::shared`] where they do not), so a
//! test that measures never measures another's load.

// Tests may panic: the ban on `unwrap` and `expect` (root Cargo.toml,
// [workspace.lints]) is for the code qexp ships.
#![allow(clippy::unwrap_used, clippy::expect_used)]
// A test tells one story end to end; the 80-line limit is for the code
// qexp ships.
#![allow(clippy::too_many_lines)]

mod advice;
mod classes;
mod common;
mod counting_proxy;
mod deployments;
mod diff_cli;
mod faults_run;
mod fit;
mod help;
mod hostile_server;
mod images;
mod import;
mod kube;
mod netns;
mod nothing_lost;
mod objstore;
mod open_loop_e2e;
mod open_loop_noise;
mod paths;
mod pooling;
mod power;
mod power_fit;
mod readme;
mod real_fit;
mod real_servers;
// After the other real-server modules (tests start in name order): the
// llama.cpp fit measured right after SmolLM2's runs missed its bounds.
mod real_smollm2;
mod real_smollm2_fit;
mod run_e2e;
mod rx_timestamps;
mod shards;
mod steady;
mod structured;
mod workloads;
mod workspace;
