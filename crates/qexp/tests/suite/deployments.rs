//! Deployments in the plan, end to end through the real `qexp` binary: it
//! launches each configuration as a process of its own (`qexp sim` on a
//! port it picks), interleaves them in blocks, records every start and
//! stop, compares them paired by block, survives a deployment that never
//! comes up, resumes exactly the missing cells, and leaves no process
//! behind. A simulator that slows down as time passes shows why the blocks
//! are interleaved.

use crate::common::qexp;
use qexp_plan::ApiKind;
use qexp_testkit::PlanFixture;
use std::io::Read as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

/// These tests time running processes: one at a time on a small machine.
fn serial() -> crate::common::Heavy {
    crate::common::heavy_blocking()
}

const QEXP: &str = env!("CARGO_BIN_EXE_qexp");

fn text(o: &[u8]) -> String {
    String::from_utf8_lossy(o).into_owned()
}

/// The clock of the deployments whose speeds a test compares: the `exact`
/// profiles at half time (5 ms decode steps against 5.5), so the runs take
/// half as long; the 10% between them is 0.5 ms a step, still about ten
/// times what the host adds to one (a few tens of microseconds).
const HALF: f64 = 0.5;

/// A deployment table launching `qexp sim --profile PROFILE --time-scale F`.
fn sim_deployment(name: &str, profile: &str, time_scale: f64) -> String {
    format!(
        r#"
[[deployment]]
name = "{name}"
command = ["{QEXP}", "sim", "--profile", "{profile}", "--time-scale", "{time_scale}", "--port", "{{port}}", "--model", "{{model}}"]
ready_timeout_s = 30
stop_grace_s = 5
labels = {{ profile = "{profile}" }}
"#
    )
}

/// Experiment `name` at c = 1 and 2 for the `[[deployment]]` tables
/// `deployments`; the caller sets `[run]`.
fn plan(name: &str, deployments: &str) -> PlanFixture {
    PlanFixture::new(name)
        .set("target.model", "m")
        .api(ApiKind::Chat)
        .ignore_eos()
        .input(100)
        .output(12)
        .concurrency(&[1, 2])
        .raw(deployments)
}

struct Dir {
    tmp: tempfile::TempDir,
}

impl Dir {
    fn new() -> Dir {
        Dir {
            tmp: tempfile::tempdir().unwrap(),
        }
    }

    fn write(&self, plan: &PlanFixture) -> PathBuf {
        plan.write(self.tmp.path())
    }

    fn results(&self) -> PathBuf {
        self.tmp.path().join("results")
    }

    /// `qexp run PLAN --out results --no-report`, waited for (bounded).
    fn run(&self, plan: &Path, extra: &[&str]) -> Output {
        wait(self.spawn(plan, extra), 180)
    }

    /// `qexp run PLAN` into the results folder, started and not waited for.
    fn spawn(&self, plan: &Path, extra: &[&str]) -> Child {
        let results = self.results();
        let mut args = vec![
            "run",
            plan.to_str().unwrap(),
            "--out",
            results.to_str().unwrap(),
            "--no-report",
        ];
        args.extend_from_slice(extra);
        qexp(&args).spawn().unwrap()
    }

    /// True once a run of `experiment` has journalled a measured request.
    fn measuring(&self, experiment: &str) -> bool {
        std::fs::read_dir(self.results().join(experiment))
            .into_iter()
            .flatten()
            .flatten()
            .any(|run| {
                std::fs::read_dir(run.path().join("journal"))
                    .into_iter()
                    .flatten()
                    .flatten()
                    .any(|f| f.metadata().is_ok_and(|m| m.len() > 0))
            })
    }

    /// The one run folder of `experiment`.
    fn the_run(&self, experiment: &str) -> PathBuf {
        let mut runs: Vec<PathBuf> = std::fs::read_dir(self.results().join(experiment))
            .unwrap()
            .filter_map(Result::ok)
            .map(|e| e.path())
            .collect();
        assert_eq!(runs.len(), 1, "{runs:?}");
        runs.remove(0)
    }
}

/// `qexp run --resume RUN`, waited for.
fn resume(run: &Path) -> Output {
    let args = ["run", "--resume", run.to_str().unwrap(), "--no-report"];
    wait(qexp(&args).spawn().unwrap(), 180)
}

/// Resumes `run`, which must then succeed and be complete with no process
/// of its left; returns its manifest and request rows.
fn resume_to_complete(run: &Path) -> (qexp_store::Manifest, polars::prelude::DataFrame) {
    let out = resume(run);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let m = qexp_store::read_manifest(run).unwrap();
    assert_eq!(m.status, qexp_store::RunStatus::Complete);
    nothing_left(&m);
    (
        m,
        qexp_store::scan_requests(run).unwrap().collect().unwrap(),
    )
}

/// Polls `check` every 20 ms until it holds; fails the test after 60 s.
fn until(what: &str, check: &dyn Fn() -> bool) {
    let start = Instant::now();
    while !check() {
        assert!(start.elapsed() < Duration::from_secs(60), "never: {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn wait(mut child: Child, limit_s: u64) -> Output {
    let start = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if start.elapsed() > Duration::from_secs(limit_s) {
            let _ = child.kill();
            panic!("qexp did not exit within {limit_s} s");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().unwrap()
}

/// Every server a run launched is gone and its port is free.
fn nothing_left(manifest: &qexp_store::Manifest) {
    for d in &manifest.deployments {
        for s in &d.starts {
            let Some(l) = &s.launch else { continue };
            let alive = Command::new("kill")
                .args(["-0", &l.pid.to_string()])
                .stderr(Stdio::null())
                .status()
                .unwrap()
                .success();
            assert!(!alive, "{} (pid {}) is still running", s.start_id, l.pid);
            let busy = std::net::TcpStream::connect(("127.0.0.1", l.port)).is_ok();
            assert!(!busy, "port {} of {} still answers", l.port, s.start_id);
            let stop = s.stop.as_ref().expect("every start was stopped");
            assert!(stop.port_freed, "{stop:?}");
        }
    }
}

#[test]
fn dry_run_prints_the_schedule_and_starts_nothing() {
    let shipped = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../experiments/mtp.toml");
    let dir = Dir::new();
    let out = dir.run(&shipped, &["--dry-run"]);
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{stdout}{}", text(&out.stderr));
    assert!(
        stdout.contains("2 deployments × 5 blocks, interleaved order"),
        "{stdout}"
    );
    assert!(stdout.contains("server starts: 10"), "{stdout}");
    // The count of points says what the list below it shows.
    let listed = stdout.lines().filter(|l| l.starts_with("  point ")).count();
    assert!(
        stdout.contains(&format!(
            "each block measures {} points on each deployment ({listed} points in all)",
            listed / 2
        )),
        "{stdout}"
    );
    // The commands are the ones a start runs: placeholders filled (the
    // plan's model, this qexp), the port picked at each start said so.
    let qexp = env!("CARGO_BIN_EXE_qexp");
    assert!(
        stdout.contains(&format!(
            "  mtp: launch {qexp} sim --profile fast --port PORT --model qwen3.6-27b\n"
        )),
        "{stdout}"
    );
    assert!(
        !stdout.contains('{'),
        "a placeholder left unfilled: {stdout}"
    );
    assert!(
        stdout.contains("(PORT: a free port, picked at each start)"),
        "{stdout}"
    );
    for b in 1..=5 {
        for d in ["mtp", "no-mtp"] {
            assert!(stdout.contains(&format!("block {b} → {d}\n")), "{stdout}");
        }
    }
    assert!(!dir.results().exists(), "a dry run writes nothing");
}

#[test]
fn launched_deployments_are_interleaved_compared_and_stopped() {
    let _s = serial();
    let dir = Dir::new();
    let deployments =
        sim_deployment("fast", "exact", HALF) + &sim_deployment("slow", "exact-slow", HALF);
    let p = dir.write(
        &plan("pair", &deployments)
            .requests(6)
            .warmup(1)
            .trials(5)
            .seed(3),
    );
    let out = dir.run(&p, &[]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let run = dir.the_run("pair");
    let m = qexp_store::read_manifest(&run).unwrap();
    assert_eq!(m.status, qexp_store::RunStatus::Complete);
    assert_eq!(m.schedule.len(), 10);
    for d in &m.deployments {
        // One fresh start per block, each recorded with its command and time to ready.
        assert_eq!(d.starts.len(), 5, "{}", d.name);
        for s in &d.starts {
            let l = s.launch.as_ref().unwrap();
            assert!(l.argv.iter().any(|a| a == "--port"), "{:?}", l.argv);
            assert!(l.time_to_ready_s > 0.0 && l.log.exists());
            assert_eq!(s.blocks.len(), 1);
        }
        assert!(d.failures.is_empty());
    }
    nothing_left(&m);
    // Rows carry their deployment, its hash and the start that answered.
    let df = qexp_store::scan_requests(&run).unwrap().collect().unwrap();
    assert_eq!(
        df.height(),
        2 * 5 * 2 * 7,
        "deployments × blocks × points × (1 + 6)"
    );
    let deps = df.column("deployment").unwrap().str().unwrap().clone();
    let starts = df.column("start_id").unwrap().str().unwrap().clone();
    for i in 0..df.height() {
        let (d, s) = (deps.get(i).unwrap(), starts.get(i).unwrap());
        assert!(s.starts_with(&format!("{d}-b")), "{d} {s}");
    }
    // Decode steps of the slow deployment take 10% longer: found, paired by block.
    let a = qexp_analysis::analyze(&run).unwrap();
    let c = a.deployments.as_ref().expect("a comparison");
    assert_eq!(c.baseline, "fast");
    assert_eq!(c.diffs.len(), 1);
    let decode: Vec<_> = c.diffs[0]
        .pairs
        .iter()
        .flat_map(|p| p.metrics.iter())
        .filter(|m| m.metric == qexp_analysis::DiffMetric::DecodeTokS)
        .collect();
    assert_eq!(decode.len(), 2);
    for m in decode {
        assert_eq!(m.verdict, qexp_analysis::diff::Verdict::Worse, "{m:?}");
        let t = m.test.unwrap();
        assert_eq!(t.method, qexp_analysis::diff::Method::PairedT);
        let r = m.ratio.unwrap();
        assert!((0.85..0.95).contains(&r), "ratio {r}");
    }
    // One deployment against the other with `qexp diff RUN#a RUN#b`.
    let ra = format!("{}#fast", run.display());
    let rb = format!("{}#slow", run.display());
    let out = qexp(&[
        "diff",
        &ra,
        &rb,
        "--metric",
        "decode_tok_s",
        "--fail-on-regression",
    ])
    .output()
    .unwrap();
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}{}",
        text(&out.stdout),
        text(&out.stderr)
    );
    // The report shows the deployments and their charts.
    let reports = dir.tmp.path().join("reports");
    let out = qexp(&[
        "report",
        run.to_str().unwrap(),
        "--out-dir",
        reports.to_str().unwrap(),
    ])
    .output()
    .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let run_id = run.file_name().unwrap().to_str().unwrap();
    let md = std::fs::read_to_string(reports.join("pair").join(run_id).join("report.md")).unwrap();
    assert!(md.contains("## Deployments"), "{md}");
    assert!(md.contains("### slow against fast"), "{md}");
    assert!(md.contains("| worse |"), "{md}");
    for chart in ["pareto.svg", "over_time.svg"] {
        assert!(
            reports.join("pair").join(run_id).join(chart).is_file(),
            "{chart}"
        );
    }
}

#[test]
fn deployments_that_fail_to_start_are_recorded_and_the_rest_run() {
    let _s = crate::common::shared_blocking();
    let dir = Dir::new();
    // A port that already serves something else: refused before any request.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let busy_port = listener.local_addr().unwrap().port();
    let received = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let seen = received.clone();
    std::thread::spawn(move || {
        for mut conn in listener.incoming().flatten() {
            let mut buf = [0u8; 1024];
            let _ = conn.set_read_timeout(Some(Duration::from_millis(500)));
            if let Ok(n) = conn.read(&mut buf) {
                seen.fetch_add(n, std::sync::atomic::Ordering::SeqCst);
            }
        }
    });
    let deployments = sim_deployment("good", "exact", 1.0)
        + r#"
[[deployment]]
name = "exits"
command = ["sh", "-c", "echo boom >&2; exit 3"]

[[deployment]]
name = "never-ready"
command = ["sleep", "30"]
ready_timeout_s = 1.5
stop_grace_s = 1
"# + &format!(
        r#"
[[deployment]]
name = "taken"
command = ["{QEXP}", "sim", "--profile", "exact", "--port", "{{port}}"]
port = {busy_port}
"#
    );
    let p = dir.write(
        &plan("broken", &deployments)
            .requests(2)
            .warmup(0)
            .trials(2)
            .seed(1),
    );
    let started = Instant::now();
    let out = dir.run(&p, &[]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    // After the run's own log (which names each failure as it happens),
    // the closing lines: one sentence per failed deployment.
    let closing = stderr.rsplit("\n\n").next().unwrap_or_default();
    for name in ["exits", "never-ready", "taken"] {
        let lines = closing
            .lines()
            .filter(|l| l.starts_with(&format!("qexp: deployment `{name}` did not start")))
            .count();
        assert_eq!(lines, 1, "one sentence for {name}: {stderr}");
    }
    // Each failed once and was skipped afterwards: the 1.5 s timeout ran once.
    assert!(started.elapsed() < Duration::from_secs(60));
    let run = dir.the_run("broken");
    let m = qexp_store::read_manifest(&run).unwrap();
    assert_eq!(m.status, qexp_store::RunStatus::Interrupted);
    let by = |n: &str| m.deployments.iter().find(|d| d.name == n).unwrap();
    assert_eq!(by("good").starts.len(), 2);
    let exits = &by("exits").failures;
    assert_eq!(exits.len(), 1);
    assert!(exits[0].message.contains('3'), "{:?}", exits[0]);
    assert!(exits[0].log_tail.as_deref().unwrap_or("").contains("boom"));
    assert!(by("never-ready").failures[0].message.contains("ready"));
    assert!(by("taken").failures[0].message.contains("already serving"));
    assert_eq!(
        received.load(std::sync::atomic::Ordering::SeqCst),
        0,
        "no request reached the taken port"
    );
    nothing_left(&m);
    // The good deployment was measured in full.
    let df = qexp_store::scan_requests(&run).unwrap().collect().unwrap();
    assert_eq!(df.height(), 2 * 2 * 2);
}

#[test]
fn an_interrupted_run_resumes_exactly_the_missing_cells() {
    let _s = crate::common::shared_blocking();
    let dir = Dir::new();
    let deployments = sim_deployment("a", "exact", 1.0) + &sim_deployment("b", "exact", 1.0);
    // 2 points × 8 requests of ~170 ms: about 1.5 s a cell, 8 cells.
    let p = dir.write(
        &plan("resume", &deployments)
            .requests(8)
            .warmup(0)
            .trials(4)
            .seed(2),
    );
    let child = dir.spawn(&p, &[]);
    // Interrupt once the third cell's server is up.
    let start = Instant::now();
    loop {
        let logs = dir.results().join("resume");
        let count = std::fs::read_dir(&logs)
            .ok()
            .and_then(|mut r| r.next())
            .and_then(Result::ok)
            .and_then(|run| std::fs::read_dir(run.path().join("deployments")).ok())
            .map_or(0, |r| r.count());
        if count >= 3 {
            break;
        }
        assert!(start.elapsed() < Duration::from_secs(60), "no third start");
        std::thread::sleep(Duration::from_millis(20));
    }
    std::thread::sleep(Duration::from_millis(300));
    let ok = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(ok.success());
    let out = wait(child, 60);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    let run = dir.the_run("resume");
    let m = qexp_store::read_manifest(&run).unwrap();
    assert_eq!(m.status, qexp_store::RunStatus::Interrupted);
    nothing_left(&m);

    let (m, df) = resume_to_complete(&run);
    // Exactly the planned rows: every (block, point) once, nothing twice.
    assert_eq!(df.height(), 2 * 4 * 2 * 8);
    let trial = df.column("trial").unwrap().u32().unwrap().clone();
    let point = df.column("point_id").unwrap().u32().unwrap().clone();
    let index = df.column("request_index").unwrap().u32().unwrap().clone();
    let mut keys: Vec<(u32, u32, u32)> = (0..df.height())
        .map(|i| {
            (
                trial.get(i).unwrap(),
                point.get(i).unwrap(),
                index.get(i).unwrap(),
            )
        })
        .collect();
    keys.sort_unstable();
    keys.dedup();
    assert_eq!(keys.len(), df.height());
    // The resumed starts are told apart from the first ones.
    let resumed = m
        .deployments
        .iter()
        .flat_map(|d| d.starts.iter())
        .filter(|s| s.start_id.ends_with("-r1"))
        .count();
    assert!(resumed >= 1, "{:?}", m.deployments);
}

/// Two identical deployments on a simulator whose every step grows 3% per
/// second of the run: measured one after the other (`blocked`), the later
/// one looks slower; interleaved in counterbalanced blocks, it does not.
#[test]
fn interleaved_blocks_keep_drift_from_passing_for_a_difference() {
    let _s = serial();
    let dir = Dir::new();
    let same = |name: &str| {
        format!("[[deployment]]\nname = \"{name}\"\nbase_url = \"sim:exact?drift=0.03\"\n")
    };
    let deployments = same("first") + &same("second");
    let mut verdicts = Vec::new();
    for order in ["blocked", "interleaved"] {
        let name = format!("drift-{order}");
        let p = dir.write(
            &plan(&name, &deployments)
                .requests(3)
                .warmup(0)
                .trials(4)
                .seed(9)
                .set("run.order", order),
        );
        let out = dir.run(&p, &[]);
        assert!(out.status.success(), "{}", text(&out.stderr));
        let a = qexp_analysis::analyze(&dir.the_run(&name)).unwrap();
        let c = a.deployments.expect("compared");
        let t = &c.diffs[0].tally;
        eprintln!(
            "drift, {order}: {} better, {} worse, {} =, {} ~",
            t.better, t.worse, t.equivalent, t.no_change
        );
        verdicts.push((t.better + t.worse, c.warnings.len()));
    }
    let (blocked, interleaved) = (verdicts[0], verdicts[1]);
    assert!(blocked.0 > 0, "blocked order reads drift as a difference");
    assert!(blocked.1 > 0, "and the comparison warns about its order");
    assert_eq!(
        interleaved,
        (0, 0),
        "interleaved blocks: no verdict, no warning"
    );
}

/// Whether any process of group `pgid` is alive (zombies count as gone).
fn group_alive(pgid: i32) -> bool {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return false;
    };
    entries.flatten().any(|e| {
        let stat = std::fs::read_to_string(e.path().join("stat")).unwrap_or_default();
        let Some(rest) = stat.rfind(')').map(|i| &stat[i + 1..]) else {
            return false;
        };
        let f: Vec<&str> = rest.split_whitespace().collect();
        f.len() > 2 && f[0] != "Z" && f[2] == pgid.to_string()
    })
}

/// Ctrl-C, then Ctrl-C again while qexp is stopping a server: qexp exits at
/// once, and the server's guard still stops its group. The server here is a
/// wrapper that shrugs off TERM, so only the KILL after the grace ends it.
#[test]
fn a_second_ctrl_c_during_a_stop_still_stops_the_server() {
    let _s = crate::common::shared_blocking();
    let dir = Dir::new();
    let pid_file = dir.tmp.path().join("server.pid");
    let term_file = dir.tmp.path().join("server.term");
    let deployments = format!(
        r#"
[[deployment]]
name = "stubborn"
command = ["sh", "-c", "trap 'echo term >> {term}' TERM; echo $$ > {pid}; {QEXP} sim --profile exact --port {{port}} --model {{model}} & while :; do sleep 0.1; done"]
ready_timeout_s = 30
stop_grace_s = 3
"#,
        term = term_file.display(),
        pid = pid_file.display(),
    );
    let p = dir.write(
        &plan("stubborn", &deployments)
            .requests(2000)
            .warmup(0)
            .trials(1)
            .seed(1),
    );
    let child = dir.spawn(&p, &[]);
    let sigint = || {
        let ok = Command::new("kill")
            .args(["-INT", &child.id().to_string()])
            .status()
            .unwrap()
            .success();
        assert!(ok, "kill -INT");
    };
    until("the server started", &|| {
        std::fs::read_to_string(&pid_file).is_ok_and(|s| s.trim().parse::<i32>().is_ok())
    });
    let pgid: i32 = std::fs::read_to_string(&pid_file)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    until("requests measured", &|| dir.measuring("stubborn"));
    sigint();
    // The stop has sent TERM and waits out the 3 s grace.
    until("the server got TERM", &|| term_file.exists());
    sigint();
    let out = wait(child, 30);
    let gone = {
        let start = Instant::now();
        while group_alive(pgid) && start.elapsed() < Duration::from_secs(10) {
            std::thread::sleep(Duration::from_millis(50));
        }
        !group_alive(pgid)
    };
    if !gone {
        let _ = Command::new("kill")
            .args(["-KILL", "--", &format!("-{pgid}")])
            .status();
    }
    assert_eq!(out.status.code(), Some(130), "{}", text(&out.stderr));
    assert!(gone, "the server's group {pgid} outlived qexp");
}

/// A server that dies while it is measured (here its simulator is KILLed,
/// as the kernel's OOM killer would) is seen after the point it was
/// measuring: that point is kept as incomplete, the run records the
/// deployment's failure with its exit status and log, skips the rest of its
/// blocks, exits 1 with a sentence naming it, and leaves nothing behind;
/// `--resume` then measures what is missing, and no request that failed
/// because the server was dead is left in the run.
#[test]
fn a_server_that_dies_while_measured_is_recorded_and_resumed() {
    let _s = crate::common::shared_blocking();
    let dir = Dir::new();
    let pid_file = dir.tmp.path().join("sim.pid");
    let deployments = format!(
        r#"
[[deployment]]
name = "dies"
command = ["sh", "-c", "echo serving; {QEXP} sim --profile exact --port {{port}} --model {{model}} & echo $! > {pid}; wait $!"]
ready_timeout_s = 30
stop_grace_s = 3
"#,
        pid = pid_file.display(),
    );
    // 2 points × 24 requests of ~170 ms, 2 blocks.
    let p = dir.write(
        &plan("dies", &deployments)
            .requests(24)
            .warmup(0)
            .trials(2)
            .seed(1),
    );
    let child = dir.spawn(&p, &[]);
    until("requests measured", &|| dir.measuring("dies"));
    let pid = std::fs::read_to_string(&pid_file).unwrap();
    let killed = Command::new("kill")
        .args(["-KILL", pid.trim()])
        .status()
        .unwrap()
        .success();
    assert!(killed, "kill -KILL {pid}");
    let out = wait(child, 120);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    let closing = stderr.rsplit("\n\n").next().unwrap_or_default();
    assert!(
        closing
            .lines()
            .any(|l| l.starts_with("qexp: deployment `dies` exited during block 1")),
        "{stderr}"
    );
    let run = dir.the_run("dies");
    let m = qexp_store::read_manifest(&run).unwrap();
    let d = &m.deployments[0];
    assert_eq!(d.starts.len(), 1, "block 2 was not started: {:?}", d.starts);
    assert_eq!(d.failures.len(), 1, "{:?}", d.failures);
    let f = &d.failures[0];
    assert_eq!(f.block, 1);
    assert!(f.message.contains("exited on its own"), "{f:?}");
    assert!(f.message.contains("137"), "{f:?}");
    assert!(
        f.log_tail.as_deref().unwrap_or("").contains("serving"),
        "{f:?}"
    );
    nothing_left(&m);

    let (_, df) = resume_to_complete(&run);
    assert_eq!(df.height(), 2 * 2 * 24, "exactly the planned requests");
    let errors = df.column("error_class").unwrap().null_count();
    assert_eq!(
        errors,
        df.height(),
        "no request failed in the run as resumed"
    );
}

/// `--model` names the model for the servers qexp starts too: `{model}` in
/// their command and the model their readiness check expects, as for the
/// requests.
#[test]
fn model_on_the_command_line_is_the_one_a_deployment_is_started_with() {
    let _s = crate::common::shared_blocking();
    let dir = Dir::new();
    let p = dir.write(
        &plan("override", &sim_deployment("a", "exact", 1.0))
            .requests(2)
            .warmup(0)
            .trials(1)
            .seed(1),
    );
    let out = dir.run(&p, &["--model", "other"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let m = qexp_store::read_manifest(&dir.the_run("override")).unwrap();
    let d = &m.deployments[0];
    let launch = d.starts[0].launch.as_ref().expect("launched");
    assert!(
        launch.argv.windows(2).any(|w| w == ["--model", "other"]),
        "{:?}",
        launch.argv
    );
    assert_eq!(d.model.as_deref(), Some("other"));
    nothing_left(&m);
}

/// The trap of speculative decoding: a verifier that accepts whatever the
/// draft says is faster, and its answers loop. Run as the shipped
/// `mtp.toml` runs its two arms, the broken arm is never called `better`:
/// its improvements read "faster on broken output", its points count as
/// regressions, and the report's first flag is its broken answers.
#[test]
fn a_corrupted_verifier_is_faster_on_broken_output_never_better() {
    let _s = serial();
    let dir = Dir::new();
    let deployments = sim_deployment("nospec", "fast-nospec", 1.0)
        + &sim_deployment("broken", "fast-broken-spec", 1.0);
    let p = dir.write(
        &plan("verifier", &deployments)
            .set("analysis.baseline", "nospec")
            .output(40)
            .requests(4)
            .warmup(1)
            .trials(3)
            .seed(5),
    );
    let out = dir.run(&p, &[]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let run = dir.the_run("verifier");
    let a = qexp_analysis::analyze(&run).unwrap();
    // Every point of the broken arm is broken, none of the healthy arm's.
    for p in &a.points {
        let broken = p.point.deployment.as_deref() == Some("broken");
        assert_eq!(p.answers.broken(), broken, "{:?}", p.answers);
        assert!(p.answers.checked > 0);
    }
    assert!(
        matches!(a.flags[0], qexp_analysis::Flag::BrokenAnswers { .. }),
        "{:?}",
        a.flags
    );
    let c = a.deployments.as_ref().expect("a comparison");
    let d = &c.diffs[0];
    let verdicts: Vec<_> = d
        .pairs
        .iter()
        .flat_map(|p| p.metrics.iter().map(|m| (m.metric, m.verdict)))
        .collect();
    assert!(
        verdicts
            .iter()
            .all(|(_, v)| *v != qexp_analysis::diff::Verdict::Better),
        "{verdicts:?}"
    );
    assert_eq!(d.tally.broken, d.pairs.len(), "{:?}", d.tally);
    assert!(d.has_regression());
    // The broken arm's speed: more tokens per step, so faster decode; the
    // verdict says on what.
    assert!(
        verdicts
            .iter()
            .any(|(m, v)| *m == qexp_analysis::DiffMetric::DecodeTokS
                && *v == qexp_analysis::diff::Verdict::BetterOnBrokenOutput),
        "{verdicts:?}"
    );
    // `qexp diff` of the two arms fails the CI gate and says why first.
    let ra = format!("{}#nospec", run.display());
    let rb = format!("{}#broken", run.display());
    let out = qexp(&["diff", &ra, &rb, "--fail-on-regression"])
        .output()
        .unwrap();
    let said = text(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{said}{}", text(&out.stderr));
    assert!(said.contains("BROKEN"), "{said}");
    assert!(said.contains("faster on broken output"), "{said}");
    // The report's summary leads with the answers, and the first flag is theirs.
    let reports = dir.tmp.path().join("reports");
    let out = qexp(&[
        "report",
        run.to_str().unwrap(),
        "--out-dir",
        reports.to_str().unwrap(),
    ])
    .output()
    .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let run_id = run.file_name().unwrap().to_str().unwrap();
    let md =
        std::fs::read_to_string(reports.join("verifier").join(run_id).join("report.md")).unwrap();
    let summary = md.split("## Summary").nth(1).unwrap_or_default();
    assert!(
        summary.trim_start().starts_with("- **Answers**: BROKEN"),
        "{summary}"
    );
    assert!(summary.contains("**⚑1 Broken answers**"), "{summary}");
    assert!(md.contains("(measured on broken output)"), "{md}");
    assert!(md.contains("faster on broken output"), "{md}");
}

/// Accuracy between deployments and under load, on the simulator's graded
/// arithmetic: a faster deployment that answers items wrongly is "faster
/// on less accurate output", never `better`, and its accuracy row is a
/// regression; a deployment that goes wrong only as its batch grows is
/// flagged at the loads where it does.
#[test]
fn a_faster_deployment_with_wrong_answers_is_not_better() {
    let _s = serial();
    let dir = Dir::new();
    let wrong = format!(
        r#"
[[deployment]]
name = "wrong"
command = ["{QEXP}", "sim", "--profile", "exact", "--time-scale", "{HALF}", "--port", "{{port}}", "--model", "{{model}}", "--wrong-share", "0.4", "--wrong-share-per-seq", "0.6"]
ready_timeout_s = 30
stop_grace_s = 5
"#
    );
    let deployments = sim_deployment("right", "exact-slow", HALF) + &wrong;
    let p = dir.write(
        &plan("graded", &deployments)
            .set("analysis.baseline", "right")
            .requests(16)
            .warmup(1)
            .trials(4)
            .seed(9)
            .raw("\n[accuracy]\nitems = \"arithmetic\"\nper_point = 8\n"),
    );
    let out = dir.run(&p, &[]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let run = dir.the_run("graded");
    let a = qexp_analysis::analyze(&run).unwrap();
    let acc = |name: &str, c: u32| {
        let p = a
            .points
            .iter()
            .find(|p| p.point.deployment.as_deref() == Some(name) && p.point.concurrency == c)
            .unwrap();
        qexp_analysis::accuracy::Accuracy::of(p).unwrap()
    };
    // The right deployment answers every item right; the wrong one 40% wrong
    // at c=1 and more at c=2 (0.4 + 0.6 per extra sequence in its batch).
    assert_eq!(acc("right", 1).share, 1.0);
    assert_eq!(acc("right", 2).share, 1.0);
    assert_eq!(acc("right", 1).answered, 32);
    assert!(acc("wrong", 2).share < acc("wrong", 1).share);
    // Under load: the wrong deployment's c=2 is worse than its c=1, flagged first.
    let drop = a
        .accuracy_by_load
        .iter()
        .find(|c| c.diff.verdict == qexp_analysis::diff::Verdict::Worse)
        .expect("an accuracy drop under load");
    assert!(a.flags[0].about_answers(), "{:?}", a.flags);
    assert!(
        a.flags
            .iter()
            .any(|f| matches!(f, qexp_analysis::Flag::AccuracyDrop { point_id, .. } if *point_id == drop.point_id)),
        "{:?}",
        a.flags
    );
    // Between deployments: accuracy worse, speed never plain better.
    let d = &a.deployments.as_ref().unwrap().diffs[0];
    let rows: Vec<_> = d
        .pairs
        .iter()
        .flat_map(|p| p.metrics.iter().map(|m| (m.metric, m.verdict)))
        .collect();
    use qexp_analysis::diff::Verdict;
    assert!(
        rows.contains(&(qexp_analysis::DiffMetric::Accuracy, Verdict::Worse)),
        "{rows:?}"
    );
    assert!(!rows.iter().any(|(_, v)| *v == Verdict::Better), "{rows:?}");
    assert!(
        rows.contains(&(
            qexp_analysis::DiffMetric::DecodeTokS,
            Verdict::BetterOnLessAccurateOutput
        )),
        "{rows:?}"
    );
    assert!(d.has_regression());
    // Half of each point's measured requests were graded: its first 8.
    let df = qexp_store::scan_requests(&run).unwrap().collect().unwrap();
    let graded = df.column("item_id").unwrap().str().unwrap().clone();
    let index = df.column("request_index").unwrap().u32().unwrap().clone();
    for i in 0..df.height() {
        let i_index = index.get(i).unwrap();
        assert_eq!(
            graded.get(i).is_some(),
            (1..9).contains(&i_index),
            "row {i}"
        );
    }
}
