//! The workspace index over runs written to disk: every run listed with its
//! facts and a link where its report exists, an unreadable run listed with
//! its error, one history chart per workload (never one line across two),
//! and the run where TTFT stepped marked (snapshot of index.md); the
//! digest cache renders the same index, and a run that changes is read again.

use qexp_analysis::Metric;
use qexp_report::index::{digests, render_index, CacheUse};
use qexp_testkit::SynthRun;

const PLAN: &str = r#"[experiment]
name = "tput"
version = 1
description = "A small sweep for the index"

[target]
base_url = "sim:fast"

[workload]
input_tokens = 1000
output_tokens = 20

[sweep]
concurrency = [1, 8]

[run]
requests = "2x"
warmup_requests = 0
trials = 3
"#;

#[test]
fn index_lists_runs_draws_a_history_per_workload_and_marks_the_step() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let results = tmp.path().join("results");
    let reports = tmp.path().join("reports");
    for k in 0..8u32 {
        // TTFT 25% worse from the sixth run on, with a little run-to-run wobble.
        let wobble = 1.0 + 0.004 * f64::from((k * 7) % 3) - 0.004;
        let level = if k >= 5 { 1.25 } else { 1.0 } * wobble;
        SynthRun {
            level,
            ..SynthRun::new(
                PLAN,
                &format!("202612{:02}T100000Z-00000{k}", k + 1),
                &format!("2026-12-{:02}T10:00:00Z", k + 1),
            )
        }
        .write(&results);
    }
    // The same experiment with longer outputs: another workload.
    let other = PLAN.replace("output_tokens = 20", "output_tokens = 40");
    for k in 0..2u32 {
        SynthRun::new(
            &other,
            &format!("202612{:02}T120000Z-10000{k}", k + 3),
            &format!("2026-12-{:02}T12:00:00Z", k + 3),
        )
        .write(&results);
    }
    // A folder whose manifest cannot be read.
    let bad = results.join("tput").join("20261220T100000Z-badbad");
    std::fs::create_dir_all(&bad).expect("mkdir");
    std::fs::write(bad.join("manifest.json"), "{}").expect("write");
    // One run has a rendered report to link to.
    let linked = reports.join("tput").join("20261208T100000Z-000007");
    std::fs::create_dir_all(&linked).expect("mkdir");
    std::fs::write(linked.join("report.html"), "<html></html>").expect("write");

    let (runs, _) = digests(&results, None, 2);
    assert_eq!(runs.len(), 11);
    let r = render_index(&runs, Metric::TtftS, &reports, None).expect("index renders");
    cache_renders_the_same(&results, &tmp.path().join("cache"), &r.files);
    let names: Vec<&str> = r.files.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(
        names,
        [
            "index.md",
            "index.html",
            "history-tput-1.svg",
            "history-tput-2.svg"
        ]
    );
    let md = &r.files[0].1;
    let html = &r.files[1].1;
    assert!(
        md.contains("[`20261208T100000Z-000007`](tput/20261208T100000Z-000007/report.html)"),
        "{md}"
    );
    assert!(md.contains("| `20261207T100000Z-000006` |"), "{md}");
    assert!(md.contains("unreadable: "), "{md}");
    // Both points stepped at the sixth run of the first workload, and only there.
    let step_rows: Vec<&str> = md.lines().filter(|l| l.contains("| worse |")).collect();
    assert_eq!(step_rows.len(), 2, "{md}");
    assert!(
        step_rows
            .iter()
            .all(|l| l.contains("`20261206T100000Z-000005`")),
        "{md}"
    );
    // The second workload's chart has its own two runs.
    assert!(
        md.contains("No steps in 2 complete runs of workload"),
        "{md}"
    );
    assert_eq!(html.matches("<svg").count(), 2);
    let opts = roxmltree::ParsingOptions {
        allow_dtd: true,
        ..Default::default()
    };
    if let Err(e) = roxmltree::Document::parse_with_options(html, opts) {
        panic!("index.html is not well-formed: {e}");
    }
    insta::with_settings!({filters => vec![
        (r"\b[0-9a-f]{8}\b", "[HASH]"),
        (r"unreadable: [^|]*", "unreadable: [WHY] "),
    ]}, {
        insta::assert_snapshot!("index_md", md);
    });
}

/// The index from cached digests is the one from analysed runs, byte for
/// byte; a run whose folder changed is analysed again, the others are not.
fn cache_renders_the_same(
    results: &std::path::Path,
    cache: &std::path::Path,
    want: &[(String, String)],
) {
    let reports = results.parent().expect("root").join("reports");
    let render = |used_want: CacheUse| {
        let (runs, used) = digests(results, Some(cache), 2);
        assert_eq!(used, used_want);
        render_index(&runs, Metric::TtftS, &reports, None)
            .expect("index renders")
            .files
    };
    // 10 readable runs are analysed and cached; the unreadable one has no digest.
    assert_eq!(
        render(CacheUse {
            kept: 0,
            analysed: 11
        }),
        want
    );
    assert_eq!(
        render(CacheUse {
            kept: 10,
            analysed: 1
        }),
        want
    );
    // A run that changes (here: the first, written again slower) is read again.
    std::fs::remove_dir_all(results.join("tput/20261201T100000Z-000000")).expect("rm");
    SynthRun {
        level: 3.0,
        ..SynthRun::new(PLAN, "20261201T100000Z-000000", "2026-12-01T10:00:00Z")
    }
    .write(results);
    let changed = render(CacheUse {
        kept: 9,
        analysed: 2,
    });
    assert_ne!(changed, want);
    let (fresh, _) = digests(results, None, 2);
    let fresh = render_index(&fresh, Metric::TtftS, &reports, None).expect("index renders");
    assert_eq!(changed, fresh.files);
}
