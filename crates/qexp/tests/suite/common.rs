//! What the suite's modules share beyond qexp-testkit: the lock that keeps
//! tests that time running processes apart, the `qexp` command, and a plan run in-process.

use std::process::Command;
use std::time::Instant;
use tokio::sync::RwLock;

/// The lock over tests that run a load. A test whose assertions read
/// measured time (a fitted coefficient, a verdict on speed, a noise flag
/// that must or must not be raised, a schedule's lag) holds it alone
/// ([`heavy`]): on a 2-core machine two such tests at once would each
/// measure the other's load. A test that runs a load but whose assertions
/// do not hang on timing precision (rows, files, exit codes, resume,
/// merges, answers; or a timing with a margin many times what a busy host
/// takes from it) shares it with others like it ([`shared`]), never with a
/// test that holds it alone. Tests that only read or render files take
/// neither.
static LOAD: RwLock<()> = RwLock::const_new(());

/// The lock, alone, from an async test: for a test that measures time.
pub async fn heavy() -> Heavy {
    let asked = Instant::now();
    Heavy::held(asked, "alone", Box::new(LOAD.write().await))
}

/// The lock, alone, from a plain (non-async) test.
pub fn heavy_blocking() -> Heavy {
    let asked = Instant::now();
    Heavy::held(asked, "alone", Box::new(LOAD.blocking_write()))
}

/// The lock, shared, from an async test: for a test that runs a load and
/// asserts nothing that a second such test beside it could move.
pub async fn shared() -> Heavy {
    let asked = Instant::now();
    Heavy::held(asked, "shared", Box::new(LOAD.read().await))
}

/// The lock, shared, from a plain (non-async) test.
pub fn shared_blocking() -> Heavy {
    let asked = Instant::now();
    Heavy::held(asked, "shared", Box::new(LOAD.blocking_read()))
}

/// The held load lock. With `QEXP_TEST_HEAVY_LOG=FILE`, each test appends
/// a line there on release: its name, the seconds it waited for the lock,
/// the seconds it held it, and how (`alone` or `shared`): where the
/// suite's time goes.
pub struct Heavy {
    _guard: Box<dyn Send>,
    how: &'static str,
    asked: Instant,
    got: Instant,
}

impl Heavy {
    fn held(asked: Instant, how: &'static str, guard: Box<dyn Send>) -> Heavy {
        Heavy {
            _guard: guard,
            how,
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
            "{name}\t{:.1}\t{:.1}\t{}\n",
            (self.got - self.asked).as_secs_f64(),
            self.got.elapsed().as_secs_f64(),
            self.how
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
