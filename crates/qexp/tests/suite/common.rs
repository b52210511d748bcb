//! What the suite's modules share beyond qexp-testkit: the lock that keeps
//! process-timing tests apart, the `qexp` command, and a plan run in-process.

use std::process::Command;
use std::time::Instant;
use tokio::sync::{Mutex, MutexGuard};

/// Held by every test that times running processes (runs, servers,
/// signals): on a 2-core machine two such tests at once would each
/// measure the other's load. Tests that only read or render files run
/// beside them.
static HEAVY: Mutex<()> = Mutex::const_new(());

/// The heavy-test lock, from an async test.
pub async fn heavy() -> Heavy {
    let asked = Instant::now();
    let guard = HEAVY.lock().await;
    Heavy::held(guard, asked)
}

/// The heavy-test lock, from a plain (non-async) test.
pub fn heavy_blocking() -> Heavy {
    let asked = Instant::now();
    let guard = HEAVY.blocking_lock();
    Heavy::held(guard, asked)
}

/// The held heavy-test lock. With `QEXP_TEST_HEAVY_LOG=FILE`, each test
/// appends a line there on release: its name, the seconds it waited for the
/// lock and the seconds it held it (where the suite's time goes).
pub struct Heavy {
    _guard: MutexGuard<'static, ()>,
    asked: Instant,
    got: Instant,
}

impl Heavy {
    fn held(guard: MutexGuard<'static, ()>, asked: Instant) -> Heavy {
        Heavy {
            _guard: guard,
            asked,
            got: Instant::now(),
        }
    }
}

impl Drop for Heavy {
    fn drop(&mut self) {
        let Some(log) = std::env::var_os("QEXP_TEST_HEAVY_LOG") else {
            return;
        };
        let name = std::thread::current().name().unwrap_or("?").to_owned();
        let line = format!(
            "{name}\t{:.1}\t{:.1}\n",
            (self.got - self.asked).as_secs_f64(),
            self.got.elapsed().as_secs_f64()
        );
        let file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(log);
        if let Ok(mut file) = file {
            use std::io::Write;
            let _ = file.write_all(line.as_bytes());
        }
    }
}

/// `qexp ARGS…` (the binary under test), output captured.
pub fn qexp(args: &[&str]) -> Command {
    qexp_testkit::command(env!("CARGO_BIN_EXE_qexp"), args)
}

/// Writes the plan under `dir`, runs it in-process into `<dir>/results`
/// and analyses the run.
pub async fn run_plan(
    dir: &std::path::Path,
    plan: &qexp_testkit::PlanFixture,
) -> qexp_analysis::RunAnalysis {
    run_loaded(dir, plan.load(dir)).await
}

/// Runs a plan given as TOML text, written to `<dir>/<name>.toml`, and analyses it.
pub async fn run_plan_text(
    dir: &std::path::Path,
    name: &str,
    text: &str,
) -> qexp_analysis::RunAnalysis {
    let plan_path = dir.join(format!("{name}.toml"));
    std::fs::write(&plan_path, text).unwrap();
    run_loaded(dir, qexp_plan::Plan::load(&plan_path).unwrap()).await
}

async fn run_loaded(dir: &std::path::Path, plan: qexp_plan::Plan) -> qexp_analysis::RunAnalysis {
    let opts = qexp_runner::RunOptions {
        plan,
        out: dir.join("results"),
        overrides: Default::default(),
        shard: None,
        folder: Default::default(),
    };
    let (_tx, rx) = tokio::sync::watch::channel(false);
    let result = qexp_runner::run(opts, rx).await.expect("run succeeds");
    qexp_analysis::analyze(&result.dir).expect("analysis")
}

/// The names in a folder, dot files included, sorted.
pub fn entries(dir: &std::path::Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

/// The smallest plan that runs: one point of two 40-token requests for 2
/// tokens each, no warmup, one trial; no server named.
pub fn tiny_plan(name: &str) -> qexp_testkit::PlanFixture {
    qexp_testkit::PlanFixture::new(name)
        .input(40)
        .output(2)
        .requests(2)
        .warmup(0)
        .trials(1)
}
