//! Request classes end to end: a class share that does not add up stops the
//! plan before anything is sent; against the simulator, a low-priority
//! class's TTFT rises with load while the high-priority class's holds, each
//! row carries its class and its class's lengths, and the fairness table
//! flags the low class as starved; a diff of a priority change compares
//! each class on its own and calls the slowed class worse.

use crate::common::{qexp, run_plan_text};
use qexp_analysis::diff::Verdict;
use qexp_analysis::DiffMetric;

/// Two classes on `target`: `high` (priority 0, a quarter of the requests,
/// its own adapter) and `low` (priority 10, 48-token answers).
fn plan(name: &str, target: &str, low_share: &str) -> String {
    format!(
        r#"[experiment]
name = "{name}"
version = 1

[target]
base_url = "{target}"
api = "chat"

[workload]
input_tokens = 64
output_tokens = 32

[[workload.class]]
name = "high"
share = 0.25
model = "adapter-a"
priority = 0
headers = {{ "x-tenant" = "a" }}

[[workload.class]]
name = "low"
share = {low_share}
priority = 10
output_tokens = 48

[sweep]
concurrency = [2, 32]

[run]
requests = 64
warmup_requests = 0
trials = 1
seed = 9
"#
    )
}

#[test]
fn class_shares_that_do_not_add_up_stop_the_run_before_anything_is_sent() {
    let tmp = tempfile::tempdir().unwrap();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let text = plan("bad-shares", &url, "0.7");
    let path = tmp.path().join("bad-shares.toml");
    std::fs::write(&path, &text).unwrap();
    let out = qexp(&["run", path.to_str().unwrap()]).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    let line = text.lines().position(|l| l == "share = 0.7").unwrap() + 1;
    let lines: Vec<&str> = stderr.lines().filter(|l| !l.trim().is_empty()).collect();
    assert_eq!(lines.len(), 1, "one sentence: {stderr}");
    assert!(
        lines[0].contains(&format!(
            "bad-shares.toml:{line}:9: `workload.class.share`: "
        )),
        "{stderr}"
    );
    assert!(lines[0].contains("add up to 0.95, not 1"), "{stderr}");
    assert!(
        matches!(listener.accept(), Err(e) if e.kind() == std::io::ErrorKind::WouldBlock),
        "nothing may reach the server"
    );
    assert!(!tmp.path().join("results").exists(), "no run folder");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_low_priority_class_is_starved_under_load_while_the_high_class_holds() {
    let _serial = crate::common::heavy().await;
    let tmp = tempfile::tempdir().unwrap();
    // `fast` has 10 batch slots: at 2 users nobody waits; at 32 the high
    // class (about 8 in flight) finds a slot while the low class queues.
    let run = run_plan_text(tmp.path(), "classes", &plan("classes", "sim:fast", "0.75")).await;
    let df = qexp_store::scan_requests(&run.dir)
        .unwrap()
        .collect()
        .unwrap();
    let class = df.column("class").unwrap().str().unwrap().clone();
    let planned = qexp_testkit::u32s(&df, "output_tokens_planned");
    let mut counts = [0u32; 2];
    for (i, c) in class.iter().enumerate() {
        let c = c.expect("every row carries its class");
        let (k, out) = match c {
            "high" => (0, 32),
            "low" => (1, 48),
            other => panic!("unknown class {other}"),
        };
        counts[k] += 1;
        assert_eq!(planned[i], out, "the class's own output length");
    }
    // 128 requests, a quarter high: the Weyl assignment keeps the share within a few.
    assert!((26..=38).contains(&counts[0]), "{counts:?}");
    let c = &run.classes;
    let at = |point: usize, name: &str| {
        c.at(run.points[point].point.id)
            .find(|r| r.class == name)
            .unwrap_or_else(|| panic!("{name} at point {point}: {c:?}"))
            .clone()
    };
    let ttft = |r: &qexp_analysis::classes::ClassPoint| r.ttft_p50_s.as_ref().unwrap().median;
    let (high1, low1, high32, low32) = (at(0, "high"), at(0, "low"), at(1, "high"), at(1, "low"));
    eprintln!(
        "TTFT high {:.4} → {:.4} s, low {:.4} → {:.4} s",
        ttft(&high1),
        ttft(&high32),
        ttft(&low1),
        ttft(&low32)
    );
    assert!(
        ttft(&low32) > 4.0 * ttft(&low1),
        "the low class's TTFT rises"
    );
    assert!(ttft(&high32) < 3.0 * ttft(&high1), "the high class's holds");
    assert!(ttft(&low32) > 3.0 * ttft(&high32));
    assert!(low32.starved.is_some(), "{low32:?}");
    assert!(high32.starved.is_none(), "{high32:?}");
    assert_eq!(high1.planned_share, Some(0.25));
    assert!((high1.share - 0.25).abs() < 0.1, "{high1:?}");
    // Output as planned: a quarter of the requests at 32 tokens against
    // three quarters at 48 gives the high class 8 / 44 of the tokens, and
    // at two users, where nobody waits, it gets about that.
    let expected = high1.tok_share_expected.expect("an expected share");
    assert!((expected - 8.0 / 44.0).abs() < 1e-9, "{high1:?}");
    let got = high1.tok_share.expect("a share of the output");
    assert!((got - expected).abs() < 0.06, "{high1:?}");
    // The report gives the fairness table and says who is starved.
    let templates = qexp_report::Templates::builtin().unwrap();
    let written = qexp_report::render_run(&run, &templates, &tmp.path().join("report")).unwrap();
    let md = std::fs::read_to_string(&written[0]).unwrap();
    assert!(md.contains("#### Fairness"), "{md}");
    assert!(md.contains("class `low` is starved at"), "{md}");
    // And a chart of each class's TTFT against the load.
    assert!(md.contains("ttft_by_class"), "{md}");
    let svg = std::fs::read_to_string(tmp.path().join("report/ttft_by_class.svg")).unwrap();
    assert!(
        svg.contains("class low") && svg.contains("class high"),
        "{svg}"
    );
    let html = std::fs::read_to_string(&written[1]).unwrap();
    assert!(html.contains("class `low` is starved at"), "{html}");
}

#[test]
fn the_example_plan_of_classes_loads() {
    let plan = qexp_plan::Plan::load(std::path::Path::new(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../experiments/classes.toml"
    )))
    .unwrap();
    let names: Vec<&str> = plan
        .file
        .workload
        .class
        .iter()
        .map(|c| c.name.get_ref().as_str())
        .collect();
    assert_eq!(names, ["interactive", "batch"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_diff_names_the_class_that_a_priority_change_slowed() {
    let _serial = crate::common::heavy().await;
    let tmp = tempfile::tempdir().unwrap();
    // At 32 users on `fast` (10 slots), A gives both classes priority 0 and
    // they queue alike; B gives `low` priority 10, so `high` overtakes it.
    let text = plan("prio", "sim:fast", "0.75")
        .replace("concurrency = [2, 32]", "concurrency = [32]")
        .replace("trials = 1", "trials = 3");
    let (dir_a, dir_b) = (tmp.path().join("a"), tmp.path().join("b"));
    std::fs::create_dir_all(&dir_a).unwrap();
    std::fs::create_dir_all(&dir_b).unwrap();
    let a = run_plan_text(
        &dir_a,
        "prio",
        &text.replace("priority = 10", "priority = 0"),
    )
    .await;
    let b = run_plan_text(&dir_b, "prio", &text).await;
    let opts = qexp_analysis::diff::DiffOptions {
        ignore: vec!["classes".into()],
        ..Default::default()
    };
    let d = qexp_analysis::diff(&a, &b, &opts).expect("the runs compare once classes are ignored");
    let pair = &d.pairs[0];
    let names: Vec<&str> = pair.classes.iter().map(|c| c.class.as_str()).collect();
    assert_eq!(names, ["high", "low"], "{pair:?}");
    let ttft = |name: &str| {
        pair.classes
            .iter()
            .find(|c| c.class == name)
            .and_then(|c| c.metrics.iter().find(|m| m.metric == DiffMetric::TtftS))
            .unwrap_or_else(|| panic!("{name}'s TTFT compared: {pair:?}"))
            .clone()
    };
    let (high, low) = (ttft("high"), ttft("low"));
    eprintln!(
        "class TTFT B/A: high {:?} ({:?}), low {:?} ({:?})",
        high.ratio, high.verdict, low.ratio, low.verdict
    );
    assert_eq!(low.verdict, Verdict::Worse, "{low:?}");
    assert_eq!(high.verdict, Verdict::Better, "{high:?}");
    assert!(d.has_regression(), "a class's regression is one");
    let tested = |m: &&qexp_analysis::diff::MetricDiff| m.test.is_some();
    let point_tests = pair.metrics.iter().filter(tested).count();
    assert_eq!(d.tests, pair.comparisons().filter(tested).count());
    assert_eq!(d.tests, point_tests + 6, "the class tests join the family");
    // The diff's table names the class on its own rows.
    let templates = qexp_report::diff::DiffTemplates::builtin().unwrap();
    let files =
        qexp_report::diff::render_diff(&d, &templates, &[qexp_report::diff::DiffFormat::Markdown])
            .unwrap();
    let md = &files[0].1;
    assert!(md.contains("TTFT (s), class low"), "{md}");
    assert!(md.contains("class NAME"), "{md}");
}
