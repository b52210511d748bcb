//! `qexp report` as a workspace: a notebook named on the command line is
//! rendered under `<out-dir>/notebooks/<stem>/`, every call writes the index
//! of every run under `--results` (and so does `qexp run`, beside the run's
//! report), and a notebook without front matter is bad input (one line,
//! exit 2).

use crate::common::qexp;
use qexp_testkit::SynthRun;

const THROUGHPUT: &str = include_str!("../../../../experiments/throughput.toml");
const LONGCTX: &str = include_str!("../../../../experiments/longctx.toml");

fn founding() -> String {
    concat!(env!("CARGO_MANIFEST_DIR"), "/../../notebooks/founding.md").to_string()
}

#[test]
fn report_renders_the_founding_notebook_and_the_index() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let results = tmp.path().join("results");
    let reports = tmp.path().join("reports");
    SynthRun::new(
        THROUGHPUT,
        "20261201T100000Z-aaaaaa",
        "2026-12-01T10:00:00Z",
    )
    .write(&results);
    SynthRun::new(LONGCTX, "20261201T110000Z-bbbbbb", "2026-12-01T11:00:00Z").write(&results);
    let (r, o) = (
        results.to_str().expect("utf-8"),
        reports.to_str().expect("utf-8"),
    );
    let out = qexp(&["report", &founding(), "--results", r, "--out-dir", o])
        .output()
        .expect("qexp runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let nb = reports.join("notebooks").join("founding");
    for f in [
        "notebook.md",
        "notebook.html",
        "throughput-agg_vs_concurrency.svg",
    ] {
        assert!(nb.join(f).is_file(), "{f} missing: {stdout}");
    }
    // A notebook alone renders no run report, but the index lists both runs.
    assert!(!reports.join("throughput").exists());
    let index = std::fs::read_to_string(reports.join("index.md")).expect("index.md");
    assert!(
        index.contains("`20261201T100000Z-aaaaaa`") && index.contains("`20261201T110000Z-bbbbbb`")
    );
    assert!(reports.join("index.html").is_file());
    assert!(stdout.contains("index: "), "{stdout}");

    // Without arguments: the newest run's reports, and the index links them.
    let out = qexp(&[
        "report",
        "--results",
        r,
        "--out-dir",
        o,
        "--history-metric",
        "agg_tok_s",
    ])
    .output()
    .expect("qexp runs");
    assert!(out.status.success());
    let index = std::fs::read_to_string(reports.join("index.md")).expect("index.md");
    assert!(
        index.contains("(throughput/20261201T100000Z-aaaaaa/report.html)"),
        "{index}"
    );
    assert!(index.contains("(`agg_tok_s`)"), "{index}");

    let out = qexp(&["report", "--results", r, "--out-dir", o, "--no-index"])
        .output()
        .expect("qexp runs");
    assert!(out.status.success());
    assert!(!String::from_utf8_lossy(&out.stdout).contains("index: "));
}

#[test]
fn a_run_refreshes_the_index_beside_its_report() {
    // It runs a load: not beside a test that times a server.
    let _serial = crate::common::shared_blocking();
    let tmp = tempfile::tempdir().expect("tempdir");
    let (results, reports) = (tmp.path().join("results"), tmp.path().join("reports"));
    SynthRun::new(
        THROUGHPUT,
        "20261201T100000Z-aaaaaa",
        "2026-12-01T10:00:00Z",
    )
    .write(&results);
    let plan = crate::common::tiny_plan("first")
        .target("sim:fast")
        .write(tmp.path());
    let s = |p: &std::path::Path| p.to_str().expect("utf-8").to_string();
    let out = qexp(&[
        "run",
        &s(&plan),
        "--out",
        &s(&results),
        "--reports",
        &s(&reports),
    ])
    .output()
    .expect("qexp runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let run = crate::common::entries(&results.join("first")).remove(0);
    assert!(reports
        .join("first")
        .join(&run)
        .join("report.html")
        .is_file());
    assert!(reports.join("index.html").is_file(), "{stdout}");
    // The index of the whole results root, the new run linked to its report.
    let index = std::fs::read_to_string(reports.join("index.md")).expect("index.md");
    assert!(
        index.contains(&format!("(first/{run}/report.html)")),
        "{index}"
    );
    assert!(index.contains("`20261201T100000Z-aaaaaa`"), "{index}");
    assert!(stdout.contains("index: "), "{stdout}");
}

#[test]
fn a_notebook_without_front_matter_is_bad_input() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let nb = tmp.path().join("plain.md");
    std::fs::write(&nb, "# Just prose\n").expect("write");
    let out = qexp(&[
        "report",
        nb.to_str().expect("utf-8"),
        "--results",
        tmp.path().to_str().expect("utf-8"),
        "--out-dir",
        tmp.path().join("reports").to_str().expect("utf-8"),
    ])
    .output()
    .expect("qexp runs");
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("front-matter block"), "{err}");
    let out = qexp(&["report", "--history-metric", "failures"])
        .output()
        .expect("qexp runs");
    assert_eq!(out.status.code(), Some(2));
}
