//! Nothing measured is lost: the real `qexp` binary runs a long plan against
//! the simulator behind a test-local server that logs every stream it
//! finished, and is killed (`kill -9`), interrupted (SIGINT once, SIGTERM
//! twice), or made to fail a write (a journal on /dev/full). What is on disk
//! is held against the server's own count, `--resume` completes the run with
//! exactly the planned rows, and `qexp report` renders it.

use crate::common::qexp;
use crate::counting_proxy::CountingProxy;
use qexp_plan::ApiKind;
use qexp_testkit::PlanFixture;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output};
use std::time::{Duration, Instant};

/// 2 points × (1 warmup + 12 measured); at 50 ms + 20 × 10 ms a request, the
/// c=1 point alone runs about 3 s.
fn plan(base_url: &str) -> PlanFixture {
    PlanFixture::new("lost")
        .target(base_url)
        .api(ApiKind::Chat)
        .ignore_eos()
        .input(100)
        .output(20)
        .concurrency(&[1, 2])
        .requests(12)
        .warmup(1)
        .trials(1)
        .seed(5)
        .set("run.shuffle", false)
}

const PLANNED_ROWS: usize = 2 * (1 + 12);

struct Setup {
    tmp: tempfile::TempDir,
    plan: PathBuf,
    results: PathBuf,
    proxy: CountingProxy,
    _sim: qexp_sim::SimServer,
}

async fn setup() -> Setup {
    let profile = qexp_sim::SimProfile::by_name("exact").expect("the exact profile");
    let sim = qexp_sim::SimServer::start(profile).await.unwrap();
    let proxy = CountingProxy::start(sim.addr()).await;
    let tmp = tempfile::tempdir().unwrap();
    let plan = plan(&proxy.base_url).write(tmp.path());
    let results = tmp.path().join("results");
    Setup {
        tmp,
        plan,
        results,
        proxy,
        _sim: sim,
    }
}

fn spawn_run(s: &Setup) -> Child {
    qexp(&[
        "run",
        s.plan.to_str().unwrap(),
        "--out",
        s.results.to_str().unwrap(),
        "--no-report",
    ])
    .spawn()
    .unwrap()
}

/// Waits (bounded) until `cond` holds.
async fn wait_until(what: &str, mut cond: impl FnMut() -> bool) {
    let start = Instant::now();
    while !cond() {
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "timed out waiting for {what}"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// Waits (bounded) for `child` to exit.
async fn exit_of(mut child: Child) -> Output {
    let start = Instant::now();
    while child.try_wait().unwrap().is_none() {
        assert!(
            start.elapsed() < Duration::from_secs(90),
            "qexp did not exit"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    child.wait_with_output().unwrap()
}

fn signal(child: &Child, sig: &str) {
    let ok = Command::new("kill")
        .args([sig, &child.id().to_string()])
        .status()
        .unwrap()
        .success();
    assert!(ok, "kill {sig}");
}

/// The one run folder under `results/lost/`.
fn the_run(results: &Path) -> Option<PathBuf> {
    let exp = results.join("lost");
    let mut runs: Vec<PathBuf> = std::fs::read_dir(exp)
        .ok()?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .collect();
    assert!(runs.len() <= 1, "one run only: {runs:?}");
    runs.pop()
}

/// (trial, point_id, request_index, failed) of every request row.
fn rows(run: &Path) -> Vec<(u32, u32, u32, bool)> {
    let df = qexp_store::scan_requests(run).unwrap().collect().unwrap();
    let u = |n: &str| -> Vec<u32> {
        df.column(n)
            .unwrap()
            .u32()
            .unwrap()
            .into_no_null_iter()
            .collect()
    };
    let (t, p, i) = (u("trial"), u("point_id"), u("request_index"));
    let failed = df.column("error_class").unwrap().is_not_null();
    let mut r: Vec<_> = (0..df.height())
        .map(|k| (t[k], p[k], i[k], failed.get(k).unwrap()))
        .collect();
    r.sort();
    r
}

/// (trial, point_id, request_index) → (answer hash, kept text) of every row.
type Answers = std::collections::BTreeMap<(u32, u32, u32), (Option<u64>, Option<String>)>;

fn answers(run: &Path) -> Answers {
    let df = qexp_store::scan_requests(run).unwrap().collect().unwrap();
    let u = |n: &str| df.column(n).unwrap().u32().unwrap().clone();
    let (t, p, i) = (u("trial"), u("point_id"), u("request_index"));
    let hash = df.column("answer_hash").unwrap().u64().unwrap().clone();
    let text = df.column("answer_text").unwrap().str().unwrap().clone();
    (0..df.height())
        .map(|k| {
            let key = (t.get(k).unwrap(), p.get(k).unwrap(), i.get(k).unwrap());
            (key, (hash.get(k), text.get(k).map(str::to_string)))
        })
        .collect()
}

fn text(o: &[u8]) -> String {
    String::from_utf8_lossy(o).into_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_9_mid_point_loses_only_requests_in_flight_and_resume_completes_the_run() {
    let _serial = crate::common::heavy().await;
    let s = setup().await;
    let mut child = spawn_run(&s);
    // Mid-way through the first point (c=1: one request in flight).
    wait_until("5 finished streams", || s.proxy.finished() >= 5).await;
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    let server_finished = s.proxy.finished();
    let run = the_run(&s.results).expect("the run folder exists");
    let on_disk = rows(&run);
    eprintln!(
        "kill -9: the server finished {server_finished} streams, {} rows on disk",
        on_disk.len()
    );
    // At c=1 one request is in flight: it may have finished on the server
    // but not yet in qexp when the kill came.
    assert!(
        on_disk.len() == server_finished || on_disk.len() + 1 == server_finished,
        "server finished {server_finished}, on disk {}",
        on_disk.len()
    );
    assert!(on_disk.iter().all(|r| !r.3), "no failures: {on_disk:?}");
    // Every finished request kept its answer's fingerprint, and the first
    // three measured requests of each (trial, point) their text (the
    // default `keep_answers = "sample"`), the cut point's included.
    let killed = answers(&run);
    assert_eq!(killed.len(), on_disk.len());
    for ((_, _, index), (hash, kept)) in &killed {
        assert!(hash.is_some(), "request {index} has its hash");
        assert_eq!(
            kept.is_some(),
            (1..=3).contains(index),
            "request {index}: {kept:?}"
        );
    }
    let m = qexp_store::read_manifest(&run).unwrap();
    assert_eq!(
        m.status,
        qexp_store::RunStatus::Running,
        "a killed run says running"
    );
    // The killed run reads: `qexp report` renders it as it is.
    let reports = s.tmp.path().join("reports");
    let report = |run: &Path| {
        qexp(&[
            "report",
            run.to_str().unwrap(),
            "--out-dir",
            reports.to_str().unwrap(),
        ])
        .output()
        .unwrap()
    };
    let out = report(&run);
    assert!(
        out.status.success(),
        "report of a killed run: {}",
        text(&out.stderr)
    );
    // The point the kill cut lives only in the journal: the report says so.
    let md = reports
        .join("lost")
        .join(run.file_name().unwrap())
        .join("report.md");
    let md = std::fs::read_to_string(md).unwrap();
    assert!(
        md.contains("only its journal survived") && md.contains("Invalid trial"),
        "{md}"
    );

    // The plan file changed since: resume refuses, naming what differs.
    let plan_text = std::fs::read_to_string(&s.plan).unwrap();
    std::fs::write(&s.plan, format!("# edited\n{plan_text}")).unwrap();
    let out = qexp(&["run", "--resume", run.to_str().unwrap(), "--no-report"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    let err = text(&out.stderr);
    assert!(
        err.starts_with(&format!(
            "error: cannot resume {}: the plan {} changed since the run started (hash ",
            run.display(),
            s.plan.display()
        )) && err
            .trim_end()
            .ends_with("; pass --force to resume anyway (recorded in the manifest)")
            && err.lines().count() == 1,
        "{err}"
    );
    assert_eq!(
        rows(&run).len(),
        on_disk.len(),
        "a refused resume touches nothing"
    );

    let before_resume = s.proxy.finished();
    let out = qexp(&[
        "run",
        "--resume",
        run.to_str().unwrap(),
        "--force",
        "--no-report",
    ])
    .output()
    .unwrap();
    assert!(out.status.success(), "resume: {}", text(&out.stderr));
    let after = rows(&run);
    let resumed_streams = s.proxy.finished() - before_resume;
    eprintln!(
        "--resume: {resumed_streams} streams run again, {} rows after (planned {PLANNED_ROWS})",
        after.len()
    );
    // Exactly the planned rows: each (trial, point, index) once.
    let mut want: Vec<_> = (0..2u32)
        .flat_map(|p| (0..13u32).map(move |i| (1, p, i, false)))
        .collect();
    want.sort();
    assert_eq!(after, want);
    // The simulator answers a prompt the same way every time, and a resume
    // sends the same prompts: every answer the kill left on disk is the
    // run's answer still, hash and kept text alike.
    let resumed = answers(&run);
    for (key, before) in &killed {
        assert_eq!(resumed.get(key), Some(before), "{key:?}");
    }
    assert!(resumed.values().all(|(hash, _)| hash.is_some()));
    let m = qexp_store::read_manifest(&run).unwrap();
    assert_eq!(m.status, qexp_store::RunStatus::Complete);
    assert_eq!(m.resumes.len(), 1);
    assert!(m.resumes[0].forced, "--force is recorded");
    assert!(m.resumes[0].differences[0].contains("changed since the run started"));
    assert!(
        run.join("requests.parquet").is_file(),
        "merged for pyarrow and DuckDB"
    );
    let out = report(&run);
    assert!(out.status.success(), "report: {}", text(&out.stderr));
    let md = reports
        .join("lost")
        .join(run.file_name().unwrap())
        .join("report.md");
    assert!(std::fs::read_to_string(md)
        .unwrap()
        .contains("| Concurrency (requests) |"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_being_written_cannot_be_resumed_at_the_same_time() {
    let _serial = crate::common::shared().await;
    let s = setup().await;
    let child = spawn_run(&s);
    wait_until("3 finished streams", || s.proxy.finished() >= 3).await;
    let run = the_run(&s.results).expect("the run folder exists");
    let out = qexp(&["run", "--resume", run.to_str().unwrap(), "--no-report"])
        .output()
        .unwrap();
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("another qexp process is writing") && err.lines().count() == 1,
        "{err}"
    );
    signal(&child, "-INT");
    let out = exit_of(child).await;
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    // Once the first process let go, the resume may go ahead.
    let out = qexp(&["run", "--resume", run.to_str().unwrap(), "--no-report"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigint_stops_sending_lets_requests_in_flight_finish_and_marks_the_run_interrupted() {
    let _serial = crate::common::shared().await;
    let s = setup().await;
    let child = spawn_run(&s);
    wait_until("4 finished streams", || s.proxy.finished() >= 4).await;
    signal(&child, "-INT");
    let out = exit_of(child).await;
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    let server_finished = s.proxy.finished();
    let run = the_run(&s.results).unwrap();
    let on_disk = rows(&run);
    eprintln!(
        "SIGINT: the server finished {server_finished} streams, {} rows on disk",
        on_disk.len()
    );
    // The request in flight had the grace period to finish: nothing cut.
    assert_eq!(on_disk.len(), server_finished);
    assert!(on_disk.iter().all(|r| !r.3), "none cancelled: {on_disk:?}");
    assert!(on_disk.len() < PLANNED_ROWS, "it stopped sending");
    let m = qexp_store::read_manifest(&run).unwrap();
    assert_eq!(m.status, qexp_store::RunStatus::Interrupted);
    assert!(m.stop_reason.unwrap().contains("interrupted"));
    assert!(
        text(&out.stdout).contains("qexp run --resume"),
        "{}",
        text(&out.stdout)
    );
    // A resume completes it.
    let out = qexp(&["run", "--resume", run.to_str().unwrap(), "--no-report"])
        .output()
        .unwrap();
    assert!(out.status.success(), "resume: {}", text(&out.stderr));
    assert_eq!(rows(&run).len(), PLANNED_ROWS);
    // The pair the interrupt cut (if it cut one) is superseded; no empty
    // `incomplete/` or `journal/`, no lock.
    let mut left = crate::common::entries(&run);
    left.retain(|n| n != "superseded");
    assert_eq!(
        left,
        ["manifest.json", "points.parquet", "requests.parquet"]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_sigterm_exits_at_once_and_leaves_readable_files() {
    let _serial = crate::common::heavy().await;
    let s = setup().await;
    let child = spawn_run(&s);
    wait_until("3 finished streams", || s.proxy.finished() >= 3).await;
    // SIGTERM is handled like Ctrl-C (unhandled, it would kill qexp: no exit code).
    signal(&child, "-TERM");
    tokio::time::sleep(Duration::from_millis(50)).await;
    signal(&child, "-TERM");
    let out = exit_of(child).await;
    assert_eq!(out.status.code(), Some(130), "{}", text(&out.stderr));
    let run = the_run(&s.results).unwrap();
    let on_disk = rows(&run);
    assert!(on_disk.len() >= 3 && on_disk.len() <= s.proxy.finished());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_write_failure_stops_the_run_with_one_sentence_and_keeps_what_was_written() {
    let _serial = crate::common::shared().await;
    let s = setup().await;
    let child = spawn_run(&s);
    // Once the first point's journal exists, the second point's journal goes
    // to /dev/full, which answers every write as a full disk does.
    let journal = || the_run(&s.results).map(|r| r.join("journal"));
    wait_until("the first journal", || {
        journal().is_some_and(|j| j.join("requests-t0001-p00000.jsonl").exists())
    })
    .await;
    let second = journal().unwrap().join("requests-t0001-p00001.jsonl");
    std::os::unix::fs::symlink("/dev/full", &second).unwrap();
    let out = exit_of(child).await;
    let err = text(&out.stderr);
    let sentence = format!(
        "error: cannot write {}: No space left on device (os error 28)",
        second.display()
    );
    eprintln!("write failure printed: {sentence}");
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.lines().any(|l| l == sentence), "{err}");
    let run = the_run(&s.results).unwrap();
    let m = qexp_store::read_manifest(&run).unwrap();
    assert_eq!(m.status, qexp_store::RunStatus::Interrupted);
    assert_eq!(m.stop_reason.as_deref(), sentence.strip_prefix("error: "));
    // The first point is whole and readable.
    let first: Vec<_> = rows(&run).into_iter().filter(|r| r.1 == 0).collect();
    assert_eq!(first.len(), 13);
    let reports = s.tmp.path().join("reports");
    let out = qexp(&[
        "report",
        run.to_str().unwrap(),
        "--out-dir",
        reports.to_str().unwrap(),
    ])
    .output()
    .unwrap();
    assert!(out.status.success(), "report: {}", text(&out.stderr));
}

#[test]
fn bad_runs_are_answered_in_one_sentence_with_exit_2() {
    let tmp = tempfile::tempdir().unwrap();
    let missing = tmp.path().join("no-such-run");
    let not_a_run = tmp.path().join("plain-folder");
    std::fs::create_dir(&not_a_run).unwrap();
    let newer = tmp.path().join("newer");
    std::fs::create_dir(&newer).unwrap();
    std::fs::write(
        newer.join("manifest.json"),
        r#"{"schema_version": 999, "something": "else"}"#,
    )
    .unwrap();
    let cases: [(&[&str], String); 5] = [
        (
            &["report", missing.to_str().unwrap()],
            format!("error: {} is not a qexp run (no manifest.json); give a folder like results/<experiment>/<run-id>", missing.display()),
        ),
        (
            &["report", not_a_run.to_str().unwrap()],
            format!("error: {} is not a qexp run (no manifest.json); give a folder like results/<experiment>/<run-id>", not_a_run.display()),
        ),
        (
            &["report", newer.to_str().unwrap()],
            format!("error: {} was written by a newer qexp (schema_version 999; this qexp reads up to {}); upgrade qexp to read it", newer.join("manifest.json").display(), qexp_store::SCHEMA_VERSION),
        ),
        (
            &["run", "--resume", newer.to_str().unwrap()],
            format!("error: {} was written by a newer qexp (schema_version 999; this qexp reads up to {}); upgrade qexp to read it", newer.join("manifest.json").display(), qexp_store::SCHEMA_VERSION),
        ),
        (
            &["run", "--resume", missing.to_str().unwrap()],
            format!("error: {} is not a qexp run (no manifest.json); give a folder like results/<experiment>/<run-id>", missing.display()),
        ),
    ];
    for (args, want) in cases {
        let out = qexp(args).output().unwrap();
        assert_eq!(
            out.status.code(),
            Some(2),
            "{args:?}: {}",
            text(&out.stderr)
        );
        assert_eq!(text(&out.stderr).trim_end(), want, "{args:?}");
    }
}
