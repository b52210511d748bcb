//! What the suite's modules share beyond qexp-testkit: the lock that keeps
//! process-timing tests apart, and the `qexp` command.

use std::process::Command;
use tokio::sync::{Mutex, MutexGuard};

/// Held by every test that times running processes (runs, servers,
/// signals): on a 2-core machine two such tests at once would each
/// measure the other's load. Tests that only read or render files run
/// beside them.
static HEAVY: Mutex<()> = Mutex::const_new(());

/// The heavy-test lock, from an async test.
pub async fn heavy() -> MutexGuard<'static, ()> {
    HEAVY.lock().await
}

/// The heavy-test lock, from a plain (non-async) test.
pub fn heavy_blocking() -> MutexGuard<'static, ()> {
    HEAVY.blocking_lock()
}

/// `qexp ARGS…` (the binary under test), output captured.
pub fn qexp(args: &[&str]) -> Command {
    qexp_testkit::command(env!("CARGO_BIN_EXE_qexp"), args)
}
