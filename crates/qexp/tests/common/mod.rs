//! Helpers shared by the CLI's integration tests.

pub mod counting_proxy;
