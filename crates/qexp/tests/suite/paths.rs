//! Names read back from a run never become paths unchecked: a manifest
//! whose experiment or run id would climb out of the reports folder is
//! refused with one sentence (exit 2), and nothing is written outside.

use clap::Parser as _;
use qexp_testkit::PlanFixture;

fn qexp(args: &[&str]) -> u8 {
    let mut argv = vec!["qexp"];
    argv.extend_from_slice(args);
    qexp::main_with(qexp::Cli::parse_from(argv))
}

#[test]
fn a_manifest_naming_a_path_outside_the_reports_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("a").join("b");
    std::fs::create_dir_all(&root).unwrap();
    let plan = PlanFixture::new("paths")
        .target("sim:exact")
        .input(40)
        .output(2)
        .requests(2)
        .warmup(0)
        .trials(1)
        .write(&root);
    let results = root.join("results");
    let s = |p: &std::path::Path| p.to_str().unwrap().to_string();
    assert_eq!(
        qexp(&["run", &s(&plan), "--out", &s(&results), "--no-report"]),
        0
    );
    let run = std::fs::read_dir(results.join("paths"))
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let manifest_path = run.join("manifest.json");
    let original = std::fs::read_to_string(&manifest_path).unwrap();
    let reports = root.join("reports");
    let absolute = tmp.path().join("absolute");
    for (field, value) in [
        ("experiment", "../../escaped".to_string()),
        ("experiment", s(&absolute)),
        ("run_id", "../escaped".to_string()),
    ] {
        let mut m: serde_json::Value = serde_json::from_str(&original).unwrap();
        m[field] = serde_json::Value::from(value.clone());
        std::fs::write(&manifest_path, m.to_string()).unwrap();
        let code = qexp(&["report", &s(&run), "--out-dir", &s(&reports)]);
        assert_eq!(code, qexp::EXIT_BAD_INPUT, "{field} = {value}");
        assert!(!tmp.path().join("escaped").exists());
        assert!(!root.join("escaped").exists());
        assert!(!reports.join("escaped").exists());
        assert!(!absolute.exists());
    }
    std::fs::write(&manifest_path, original).unwrap();
    assert_eq!(qexp(&["report", &s(&run), "--out-dir", &s(&reports)]), 0);
}
