//! End to end in-process: a plan against the simulator's `exact` profile
//! (TTFT 50 ms, 10 ms per token, one token per chunk) over real loopback
//! HTTP; the Parquet rows and the measured timing must match what the
//! server is known to do, and the report must render.

use polars::prelude::*;
use qexp_plan::ApiKind;
use qexp_runner::{run, RunOptions};
use qexp_testkit::{f64s, PlanFixture};
use std::path::Path;

/// 2 requests per slot at c = 1 and 4 against `sim:exact`, one warmup, 2 trials.
fn plan() -> PlanFixture {
    PlanFixture::new("e2e")
        .target("sim:exact")
        .api(ApiKind::Chat)
        .ignore_eos()
        .input(200)
        .output(21)
        .concurrency(&[1, 4])
        .requests("2x")
        .warmup(1)
        .trials(2)
        .seed(3)
}

fn opts(dir: &Path, plan: &PlanFixture) -> RunOptions {
    RunOptions {
        plan: plan.load(dir),
        out: dir.join("results"),
        overrides: Default::default(),
        shard: None,
        folder: Default::default(),
    }
}

/// How many runs the timing may take to show before it counts as wrong.
const TIMING_RUNS: usize = 3;

/// The value at quantile `q` (nearest rank) of `v`.
fn quantile(mut v: Vec<f64>, q: f64) -> f64 {
    v.sort_by(f64::total_cmp);
    v[((v.len() - 1) as f64 * q).round() as usize]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_against_known_timing_writes_exact_rows_and_timing() {
    let _serial = crate::common::heavy().await;
    // What a run writes is checked exactly on every run; its timing is
    // judged on the lower quartile of the measured requests, and a run whose
    // timing is off is made again, up to TIMING_RUNS times. Why: a busy host
    // (a parallel build, two busy loops on the 2-core VM) stalls qexp or the
    // simulator for tens of milliseconds on a few requests of most runs (12
    // of 20 runs failed when every request had to be within 50 ± 15 ms), and
    // a stall only ever delays. A timing that is really wrong — a server
    // whose TTFT is 100 ms, a client that adds 20 ms or stamps too early —
    // moves every request, so the lower quartile of every run, and still
    // fails.
    let mut misses = Vec::new();
    for run_no in 1..=TIMING_RUNS {
        let tmp = tempfile::tempdir().unwrap();
        let (_tx, rx) = tokio::sync::watch::channel(false);
        let result = run(opts(tmp.path(), &plan()), rx)
            .await
            .expect("run succeeds");
        let measured = check_rows(&result);
        let a = qexp_analysis::analyze(&result.dir).unwrap();
        check_report(&a, tmp.path());
        match timing_misses(&measured, &a) {
            None => return,
            Some(why) => misses.push(format!("run {run_no}: {why}")),
        }
    }
    panic!(
        "the timing was off in all {TIMING_RUNS} runs:\n{}",
        misses.join("\n")
    );
}

/// Checks the rows a run wrote (exactly: none of this depends on timing)
/// and returns its measured (not warm-up) requests.
fn check_rows(result: &qexp_runner::RunResult) -> DataFrame {
    assert_eq!(result.manifest.status, qexp_store::RunStatus::Complete);
    assert!(result.manifest.target.simulated);
    // The simulator is plain HTTP: qexp's own reader timed it, with the
    // kernel's receive stamps where the platform has them.
    let off = std::env::var("QEXP_RX_TIMESTAMPS").is_ok_and(|v| v == "off");
    let expected = if cfg!(target_os = "linux") && !off {
        qexp_client::ClientTiming::Http1KernelStamps
    } else {
        qexp_client::ClientTiming::Http1FromWire
    };
    assert_eq!(result.manifest.client_timing, Some(expected));
    // A finished run holds what docs/results.md lists, no lock or empty journal.
    assert_eq!(
        crate::common::entries(&result.dir),
        ["manifest.json", "points.parquet", "requests.parquet"]
    );

    let df = qexp_store::scan_requests(&result.dir)
        .unwrap()
        .collect()
        .unwrap();
    // 2 trials × (c=1: 1 warmup + 2, c=4: 1 warmup + 8) = 2 × 12 rows.
    assert_eq!(df.height(), 24);
    let warm = df.column("warmup").unwrap().bool().unwrap().sum().unwrap();
    assert_eq!(warm, 4);
    assert_eq!(
        df.column("error_class").unwrap().null_count(),
        24,
        "no failures"
    );

    let measured = df.lazy().filter(col("warmup").not()).collect().unwrap();
    let prompt = f64s(&measured, "prompt_tokens");
    assert!(
        prompt.iter().all(|p| (p - 200.0).abs() <= 2.0),
        "prompt tokens within 1%: {prompt:?}"
    );
    assert!(f64s(&measured, "completion_tokens")
        .iter()
        .all(|c| *c == 21.0));
    assert!(f64s(&measured, "chunks").iter().all(|c| *c == 21.0));

    let pts = qexp_store::scan_points(&result.dir)
        .unwrap()
        .collect()
        .unwrap();
    assert_eq!(pts.height(), 4);
    assert!(pts.column("invalid_reason").unwrap().null_count() == 4);
    measured
}

/// Why a run's timing is not the `exact` profile's (TTFT 50 ms, 10 ms per
/// token), if it is not.
fn timing_misses(measured: &DataFrame, a: &qexp_analysis::RunAnalysis) -> Option<String> {
    let mut misses = Vec::new();
    let ttft = f64s(measured, "ttft_s");
    let tpot = f64s(measured, "tpot_s");
    let ttft_q25 = quantile(ttft.clone(), 0.25);
    if (ttft_q25 - 0.050).abs() >= 0.015 {
        misses.push(format!("TTFT lower quartile {ttft_q25} should be 50 ms"));
    }
    let tpot_q25 = quantile(tpot.clone(), 0.25);
    if (tpot_q25 - 0.010).abs() >= 0.002 {
        misses.push(format!("TPOT lower quartile {tpot_q25} should be 10 ms"));
    }
    assert_eq!(a.points.len(), 2);
    for p in &a.points {
        assert_eq!(p.n, 2);
        let decode = p.decode_tok_s.as_ref().unwrap().median;
        if (decode - 100.0).abs() >= 15.0 {
            misses.push(format!("decode {decode} tok/s should be ~100"));
        }
    }
    // c=4 keeps four streams going: aggregate ≈ 4 × 21 tokens / 0.25 s.
    let agg1 = a.points[0].agg_tok_s.as_ref().unwrap().median;
    let agg4 = a.points[1].agg_tok_s.as_ref().unwrap().median;
    if agg4 <= 3.0 * agg1 {
        misses.push(format!(
            "aggregate should scale with concurrency: {agg1} → {agg4}"
        ));
    }
    (!misses.is_empty()).then(|| format!("{}; TTFT {ttft:?}; TPOT {tpot:?}", misses.join("; ")))
}

/// The run's report renders and says the numbers are simulated.
fn check_report(a: &qexp_analysis::RunAnalysis, dir: &Path) {
    let out = dir.join("reports");
    let files =
        qexp_report::render_run(a, &qexp_report::Templates::builtin().unwrap(), &out).unwrap();
    let md = std::fs::read_to_string(&files[0]).unwrap();
    assert!(md.contains("| Concurrency (requests) |"), "{md}");
    assert!(
        md.contains("Simulated"),
        "report must say the numbers are simulated"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unreachable_target_fails_before_writing_anything() {
    let tmp = tempfile::tempdir().unwrap();
    // Bind then drop a listener so the port is (almost certainly) closed.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let plan = plan().target(&format!("http://127.0.0.1:{port}"));
    let (_tx, rx) = tokio::sync::watch::channel(false);
    let err = run(opts(tmp.path(), &plan), rx)
        .await
        .expect_err("must fail");
    let msg = err.to_string();
    assert!(
        msg.contains(&format!("127.0.0.1:{port}")) && msg.contains("cannot reach"),
        "{msg}"
    );
    assert!(
        !tmp.path().join("results").exists(),
        "no half-written result may exist"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_point_beyond_the_context_window_is_refused_before_any_load() {
    let tmp = tempfile::tempdir().unwrap();
    // sim:exact serves 131072 tokens of context; 140000 + 21 does not fit.
    let plan = plan().input(140_000);
    let (_tx, rx) = tokio::sync::watch::channel(false);
    let err = run(opts(tmp.path(), &plan), rx)
        .await
        .expect_err("must refuse");
    assert!(
        matches!(err, qexp_runner::RunError::ContextTooSmall { .. }),
        "{err}"
    );
    let msg = err.to_string();
    assert!(
        msg.starts_with("point c=4 in=140000 out=21 needs 140021 tokens of context, but qexp-sim at http://127.0.0.1:"),
        "{msg}"
    );
    assert!(
        msg.ends_with(
            "allows 131072 (/v1/models data[].max_model_len); restart the server with a larger \
             max_context (another simulator profile), or shrink the point"
        ),
        "{msg}"
    );
    assert!(
        !tmp.path().join("results").exists(),
        "no results folder may be written"
    );
}

#[test]
fn the_cli_exits_2_on_a_plan_that_does_not_fit() {
    use clap::Parser as _;
    let tmp = tempfile::tempdir().unwrap();
    let plan = plan().input(140_000).write(tmp.path());
    let out = tmp.path().join("results");
    let cli = qexp::Cli::parse_from([
        "qexp",
        "run",
        plan.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
        "--no-report",
    ]);
    assert_eq!(qexp::main_with(cli), qexp::EXIT_BAD_INPUT);
    assert!(!out.exists());
}

#[test]
fn target_on_the_command_line_stands_in_for_a_missing_base_url() {
    // It runs a load: not beside a test that times a server.
    let _serial = crate::common::shared_blocking();
    let tmp = tempfile::tempdir().unwrap();
    let plan = crate::common::tiny_plan("untargeted").write(tmp.path());
    let out = tmp.path().join("results");
    let (plan, out) = (plan.to_str().unwrap(), out.to_str().unwrap());
    let run = |extra: &[&str]| {
        let mut args = vec!["run", plan, "--out", out, "--no-report"];
        args.extend_from_slice(extra);
        crate::common::qexp(&args).output().expect("qexp runs")
    };
    let refused = run(&[]);
    let err = String::from_utf8_lossy(&refused.stderr);
    assert_eq!(refused.status.code(), Some(2), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("`target.base_url`: missing") && err.contains("--target URL"),
        "{err}"
    );
    assert!(!tmp.path().join("results").exists());
    let ran = run(&["--target", "sim:fast"]);
    assert!(
        ran.status.success(),
        "{}",
        String::from_utf8_lossy(&ran.stderr)
    );
    let runs = crate::common::entries(&tmp.path().join("results").join("untargeted"));
    assert_eq!(runs.len(), 1, "{runs:?}");
}
