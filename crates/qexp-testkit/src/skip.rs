//! Tests that need what a machine may lack (a real inference server, the
//! Kubernetes schema validator, an S3 server, network namespaces) skip
//! through [`skip`], so that a skip is never a silent `ok`:
//!
//! - the line `SKIPPED <test>: <why>` goes straight to the terminal (written
//!   to stderr itself, not through `eprintln!`, which the test harness
//!   captures and shows only for failing tests), and is appended to the file
//!   named by `QEXP_SKIP_LOG` when it is set (`.ci/run` prints that file at
//!   the end of a run);
//! - where the thing is required, the skip is a failure instead: each
//!   [`Need`] has its own `QEXP_REQUIRE_*` variable, which `.ci/run` sets for
//!   what it provides (docs/architecture.md, "Tests that skip").

use std::io::Write;

/// The variable naming the file that every skip is appended to, one line each.
pub const SKIP_LOG: &str = "QEXP_SKIP_LOG";

/// What a test needs that a machine may not have.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Need {
    /// A real inference server (vLLM, llama.cpp, SmolLM2) whose URL is in an
    /// environment variable (scripts/real-servers/start.sh).
    RealServer,
    /// Python with kubernetes-validate (scripts/kube/install-validator.sh).
    KubeValidator,
    /// Python with moto's S3 server (scripts/objstore/install.sh).
    ObjectStore,
    /// Network namespaces: root and iproute2 (scripts/netns/install.sh).
    NetworkNamespaces,
    /// Python with jsonschema and llm-d-benchmark's Benchmark Report schema
    /// (scripts/llmd/install-validator.sh).
    LlmdSchema,
}

impl Need {
    /// The variable that, set to a non-empty value other than `0`, turns a
    /// skip for lack of this into a failure.
    pub fn require_var(self) -> &'static str {
        match self {
            Need::RealServer => "QEXP_REQUIRE_REAL_SERVERS",
            Need::KubeValidator => "QEXP_REQUIRE_KUBE_VALIDATE",
            Need::ObjectStore => "QEXP_REQUIRE_OBJSTORE",
            Need::NetworkNamespaces => "QEXP_REQUIRE_NETNS",
            Need::LlmdSchema => "QEXP_REQUIRE_LLMD_SCHEMA",
        }
    }

    /// Whether this run requires it (its [`require_var`](Need::require_var) is set).
    pub fn required(self) -> bool {
        std::env::var(self.require_var()).is_ok_and(|v| !v.trim().is_empty() && v.trim() != "0")
    }
}

/// Skips the running test for lack of `need`, saying `why`; panics instead
/// when `need` is required. The caller returns right after.
pub fn skip(need: Need, why: &str) {
    let test = test_name();
    assert!(
        !need.required(),
        "{test} cannot run: {why}, and {} is set, so it must not skip",
        need.require_var()
    );
    let line = format!(
        "SKIPPED {test}: {why} (set {} to make this a failure)\n",
        need.require_var()
    );
    // Straight to the process's stderr: the harness captures only the
    // print macros, so the line shows among the `test … ok` lines.
    let _ = std::io::stderr().lock().write_all(line.as_bytes());
    if let Some(path) = std::env::var_os(SKIP_LOG).filter(|p| !p.is_empty()) {
        let written = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .and_then(|mut f| f.write_all(line.as_bytes()));
        if let Err(e) = written {
            panic!(
                "{test} skipped but {SKIP_LOG}={} cannot be written: {e}",
                path.display()
            );
        }
    }
}

/// The running test's name: the harness names each test's thread after it
/// (`module::test`); `#[tokio::test]` bodies run on that thread.
fn test_name() -> String {
    let current = std::thread::current();
    match current.name() {
        Some(name) if name != "main" => name.to_string(),
        _ => "a test".to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::{Command, Output};

    const CHILD: &str = "skip::tests::a_skip_in_a_child_process";
    const MARK: &str = "QEXP_TESTKIT_SKIP_CHILD";

    /// The body that [`child`] runs; outside a child it is a no-op.
    #[test]
    fn a_skip_in_a_child_process() {
        if std::env::var_os(MARK).is_some() {
            skip(Need::ObjectStore, "no moto here");
        }
    }

    /// Runs [`a_skip_in_a_child_process`] alone in a child of this test
    /// binary, with `require` as QEXP_REQUIRE_OBJSTORE and `log` as the log.
    fn child(require: Option<&str>, log: &std::path::Path) -> Output {
        let mut cmd = Command::new(std::env::current_exe().unwrap());
        cmd.args(["--exact", CHILD, "--test-threads=1"])
            .env(MARK, "1")
            .env(SKIP_LOG, log)
            .env_remove(Need::ObjectStore.require_var());
        if let Some(v) = require {
            cmd.env(Need::ObjectStore.require_var(), v);
        }
        cmd.output().unwrap()
    }

    #[test]
    fn a_skip_shows_on_stderr_and_in_the_log() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("skipped.log");
        for require in [None, Some(""), Some("0")] {
            let out = child(require, &log);
            assert!(out.status.success(), "{out:?}");
            let line = format!(
                "SKIPPED {CHILD}: no moto here (set QEXP_REQUIRE_OBJSTORE to make this a failure)"
            );
            assert!(
                String::from_utf8_lossy(&out.stderr).contains(&line),
                "{out:?}"
            );
        }
        let logged = std::fs::read_to_string(&log).unwrap();
        assert_eq!(logged.lines().count(), 3, "{logged}");
        assert!(logged
            .lines()
            .all(|l| l.starts_with(&format!("SKIPPED {CHILD}: "))));
    }

    #[test]
    fn a_required_skip_fails_and_logs_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("skipped.log");
        let out = child(Some("1"), &log);
        assert!(!out.status.success(), "{out:?}");
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(
            text.contains("QEXP_REQUIRE_OBJSTORE is set, so it must not skip"),
            "{text}"
        );
        assert!(!log.exists());
    }
}
