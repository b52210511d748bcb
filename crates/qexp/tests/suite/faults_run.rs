//! Whole runs against a simulator that misbehaves: every fault class lands
//! in `requests.parquet` as a failure row of its own class, with its times
//! and message, while the other requests measure normally; a server that
//! stops answering mid-run ends each request by its timeout and the run
//! still completes; the exit code says when failures exceed the tolerance.

use clap::Parser as _;
use polars::prelude::*;
use qexp_client::ErrorClass;
use qexp_runner::{run, RunOptions, RunResult};
use qexp_sim::{Fault, FaultPlan};
use qexp_testkit::PlanFixture;
use std::collections::BTreeMap;
use std::path::Path;

/// Every fault a run can meet; `close` is tested alone (its resend takes a
/// second request index, which would shift the seeded draw).
const MIX: &str = "reset=2:0.06,http_429:0.06,http_500:0.06,http_503=3:0.06,malformed_json:0.06,\
                   no_done:0.06,stall:0.06,slow_headers:0.06,huge_chunk:0.06,invalid_utf8:0.06,\
                   wrong_content_type:0.06,context_length:0.06";

const REQUESTS: u64 = 48;

/// REQUESTS requests at c = 4, timeouts of 0.5 s to the first byte and
/// between events, and at most `tolerance` of them failed.
fn plan(target: &str, tolerance: f64) -> PlanFixture {
    PlanFixture::new("faults")
        .target(target)
        .input(60)
        .output(8)
        .concurrency(&[4])
        .requests(REQUESTS as u32)
        .warmup(0)
        .trials(1)
        .set("timeouts.first_byte_s", 0.5)
        .set("timeouts.idle_s", 0.5)
        .set("timeouts.total_s", 10)
        .set("tolerance.max_failed_fraction", tolerance)
}

fn class_of(fault: Fault) -> ErrorClass {
    match fault {
        Fault::Close => ErrorClass::ConnectionClosed,
        Fault::Reset(_) => ErrorClass::StreamBroken,
        Fault::RateLimited => ErrorClass::RateLimited,
        Fault::Internal => ErrorClass::HttpStatus,
        Fault::Unavailable(_) => ErrorClass::Unavailable,
        Fault::MalformedJson => ErrorClass::MalformedJson,
        Fault::NoDone => ErrorClass::MissingDone,
        Fault::Stall(_) => ErrorClass::IdleTimeout,
        Fault::SlowHeaders(_) => ErrorClass::FirstByteTimeout,
        Fault::HugeChunk(_) => ErrorClass::OversizedEvent,
        Fault::InvalidUtf8 => ErrorClass::InvalidUtf8,
        Fault::WrongContentType => ErrorClass::ContentType,
        Fault::ContextLength => ErrorClass::ContextLength,
    }
}

/// The first seed whose draw over the run's requests hits every fault of the mix.
fn seed_hitting_every_fault() -> (u64, BTreeMap<&'static str, u32>) {
    (0..1000)
        .find_map(|seed| {
            let plan = FaultPlan::parse(MIX, seed).unwrap();
            let mut expected = BTreeMap::new();
            for i in 0..REQUESTS {
                if let Some(f) = plan.pick(i) {
                    *expected.entry(class_of(f).as_str()).or_insert(0) += 1;
                }
            }
            (expected.len() == plan.rules.len()).then_some((seed, expected))
        })
        .expect("some seed below 1000 hits all 12 faults in 48 requests")
}

async fn run_plan(dir: &Path, plan: &PlanFixture) -> RunResult {
    let opts = RunOptions {
        plan: plan.load(dir),
        out: dir.join("results"),
        overrides: Default::default(),
        shard: None,
        folder: Default::default(),
    };
    let (_tx, rx) = tokio::sync::watch::channel(false);
    let run = tokio::time::timeout(std::time::Duration::from_secs(60), run(opts, rx));
    run.await.expect("the run ends").expect("the run completes")
}

/// The request rows of a run that must have completed with every planned request.
fn complete_rows(result: &RunResult) -> DataFrame {
    assert_eq!(result.manifest.status, qexp_store::RunStatus::Complete);
    let df = qexp_store::scan_requests(&result.dir)
        .unwrap()
        .collect()
        .unwrap();
    assert_eq!(df.height() as u64, REQUESTS);
    df
}

fn strings(df: &DataFrame, name: &str) -> Vec<Option<String>> {
    df.column(name)
        .unwrap()
        .str()
        .unwrap()
        .iter()
        .map(|s| s.map(str::to_string))
        .collect()
}

fn numbers(df: &DataFrame, name: &str) -> Vec<Option<f64>> {
    let col = df.column(name).unwrap().cast(&DataType::Float64).unwrap();
    col.f64().unwrap().iter().collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_fault_becomes_a_row_of_its_class_and_the_rest_measure_normally() {
    let _heavy = crate::common::shared().await;
    let (seed, expected) = seed_hitting_every_fault();
    let tmp = tempfile::tempdir().unwrap();
    let target = format!("sim:exact?faults={MIX}&seed={seed}");
    let result = run_plan(tmp.path(), &plan(&target, 1.0)).await;
    assert!(result.over_tolerance.is_empty());
    let df = complete_rows(&result);
    let classes = strings(&df, "error_class");
    let messages = strings(&df, "error_message");
    let tokens = numbers(&df, "completion_tokens");
    let chunks = numbers(&df, "chunks");
    let sent = numbers(&df, "sent_unix_s");
    let end = numbers(&df, "end_s");
    let mut seen: BTreeMap<&str, u32> = BTreeMap::new();
    let headers = numbers(&df, "headers_s");
    let ttft = numbers(&df, "ttft_s");
    let status = numbers(&df, "http_status");
    for i in 0..df.height() {
        if let Some(c) = &classes[i] {
            // What each class recorded, for people reading the test log (--nocapture).
            println!(
                "{c}: status {:?}, headers {:?} s, first token {:?} s, end {:.3} s, {} chunks: {}",
                status[i],
                headers[i].map(|h| (h * 1e3).round() / 1e3),
                ttft[i].map(|t| (t * 1e3).round() / 1e3),
                end[i].unwrap_or(f64::NAN),
                chunks[i].unwrap_or(0.0),
                messages[i].as_deref().unwrap_or("")
            );
        }
        assert!(sent[i].unwrap() > 1.6e9 && end[i].unwrap() >= 0.0);
        match &classes[i] {
            Some(c) => {
                let class = ErrorClass::from_name(c).expect("a known class");
                *seen.entry(class.as_str()).or_insert(0) += 1;
                assert!(messages[i].as_deref().is_some_and(|m| !m.is_empty()));
                assert!(end[i].unwrap() < 5.0, "{c} ended at {:?}", end[i]);
            }
            None => {
                // Unaffected: every token of every chunk, as on a healthy server.
                assert_eq!(tokens[i], Some(8.0));
                assert_eq!(chunks[i], Some(8.0));
                assert!(messages[i].is_none());
            }
        }
    }
    assert_eq!(seen, expected, "failure rows by class");

    let points = qexp_store::scan_points(&result.dir)
        .unwrap()
        .collect()
        .unwrap();
    let failures: u32 = expected.values().sum();
    assert_eq!(numbers(&points, "failures")[0], Some(f64::from(failures)));
    // The analysis groups them by class, each with one of its messages (the
    // report's failures table).
    let a = qexp_analysis::analyze(&result.dir).unwrap();
    let grouped: u64 = a.failures.iter().map(|g| g.count).sum();
    assert_eq!(grouped, u64::from(failures));
    for g in &a.failures {
        assert!(ErrorClass::from_name(&g.class).is_some(), "{g:?}");
        assert!(!g.message.is_empty() && g.trials == [1], "{g:?}");
    }
    let classes: Vec<&str> = a.failures.iter().map(|g| g.class.as_str()).collect();
    assert_eq!(
        classes.len(),
        expected.len(),
        "one group per class: {classes:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_stops_answering_mid_run_ends_each_request_by_its_timeout() {
    let _heavy = crate::common::shared().await;
    let tmp = tempfile::tempdir().unwrap();
    let started = std::time::Instant::now();
    let result = run_plan(
        tmp.path(),
        &plan("sim:exact?faults=slow_headers:1&from=20", 1.0),
    )
    .await;
    let df = complete_rows(&result);
    let classes = strings(&df, "error_class");
    let ok = classes.iter().filter(|c| c.is_none()).count();
    assert_eq!(ok, 20, "the requests before the server hung");
    assert!(classes
        .iter()
        .flatten()
        .all(|c| c == ErrorClass::FirstByteTimeout.as_str()));
    // 28 hung requests, 4 at a time, 0.5 s each: about 3.5 s, far below the total timeout.
    assert!(started.elapsed().as_secs_f64() < 30.0);
}

#[test]
fn the_exit_code_says_whether_failures_exceeded_the_tolerance() {
    let _heavy = crate::common::shared_blocking();
    let tmp = tempfile::tempdir().unwrap();
    let exit = |tolerance: f64| {
        let target = "sim:exact?faults=http_500:0.25&seed=1";
        let plan = plan(target, tolerance).write(tmp.path());
        let out = tmp.path().join("results");
        let cli = qexp::Cli::parse_from([
            "qexp",
            "run",
            plan.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
            "--no-report",
        ]);
        qexp::main_with(cli)
    };
    assert_eq!(exit(0.0), qexp::EXIT_OVER_TOLERANCE);
    assert_eq!(exit(0.9), 0);
}
