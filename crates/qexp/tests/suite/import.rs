//! `qexp import` on files the real tools wrote (crates/qexp-import/tests/
//! fixtures, made by scripts/import-fixtures/make.sh against qexp's
//! simulator): the recomputation under qexp's definitions beside the tool's
//! own summary, the manifest's record of the source, summaries-only files,
//! each kind of bad input (one sentence naming file and field, exit 2,
//! nothing written), `--plan` matching, and `qexp diff` of an imported
//! `vllm bench serve` run against qexp's run of the same server and workload.

use crate::common::qexp;
use serde_json::Value;
use std::path::{Path, PathBuf};

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../qexp-import/tests/fixtures")
}

fn vllm(name: &str) -> String {
    fixtures().join("vllm").join(name).display().to_string()
}

fn detailed() -> Vec<String> {
    fixture_files(5, |t| format!("vllm/detailed-trial{t}.json"))
}

fn plan() -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../scripts/import-fixtures/plan.toml")
        .display()
        .to_string()
}

/// The one run qexp measured with the same workload on the same server.
fn qexp_run() -> PathBuf {
    let dir = fixtures().join("qexp/import-vllm");
    let mut runs: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(runs.len(), 1, "one qexp run under {}", dir.display());
    runs.remove(0)
}

/// Runs `qexp import vllm FILES… --out OUT [extra…]`; (exit code, stdout, stderr).
fn import(out: &Path, files: &[String], extra: &[&str]) -> (i32, String, String) {
    run_import("vllm", out, files, extra)
}

/// Runs `qexp import FORMAT FILES… --out OUT [extra…]`.
fn run_import(format: &str, out: &Path, files: &[String], extra: &[&str]) -> (i32, String, String) {
    let mut args = vec!["import", format];
    args.extend(files.iter().map(String::as_str));
    let out = out.display().to_string();
    args.extend(["--out", out.as_str()]);
    args.extend(extra);
    let o = qexp(&args).output().unwrap();
    (
        o.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

/// The one run folder under `root/<experiment>`.
fn only_run(root: &Path, experiment: &str) -> PathBuf {
    let mut runs: Vec<PathBuf> = std::fs::read_dir(root.join(experiment))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(runs.len(), 1);
    runs.remove(0)
}

fn manifest(run: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(run.join("manifest.json")).unwrap()).unwrap()
}

fn json(path: &str) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

#[test]
fn vllm_detailed_files_become_trials_recomputed_under_qexps_definitions() {
    let tmp = tempfile::tempdir().unwrap();
    let (code, stdout, stderr) = import(tmp.path(), &detailed(), &["--tool-version", "0.32.0"]);
    assert_eq!(code, 0, "{stdout}{stderr}");
    let run = only_run(tmp.path(), "import-vllm");
    let m = manifest(&run);
    assert_eq!(
        m["trials"], 5,
        "five files of one configuration: five trials"
    );
    assert_eq!(m["points"].as_array().unwrap().len(), 1);
    let rec = &m["import"];
    assert_eq!(rec["tool"], "vllm bench serve");
    assert_eq!(rec["tool_version"], "0.32.0");
    assert_eq!(rec["summaries_only"], false);
    let files = rec["files"].as_array().unwrap();
    assert_eq!(files.len(), 5);
    for (f, t) in files.iter().zip(1..) {
        assert_eq!(f["trial"], t);
        let sha = f["sha256"].as_str().unwrap();
        assert_eq!(sha.len(), 64);
        assert!(f["name"]
            .as_str()
            .unwrap()
            .ends_with(&format!("detailed-trial{t}.json")));
    }
    let unknown = rec["unknown"].as_array().unwrap();
    assert!(unknown
        .iter()
        .any(|u| u.as_str().unwrap().contains("the host")));
    assert!(unknown.iter().any(|u| u
        .as_str()
        .unwrap()
        .contains("the send lag of closed-loop requests")));
    assert!(
        m["git"].is_null() && m["host"]["hostname"].is_null(),
        "unknown, never made up"
    );

    // Every figure vLLM summarised is recomputed from its per-request
    // arrays; on this data (one token per chunk, no empty chunk) the
    // definitions agree, so every figure must be within the tolerance.
    let checks = rec["checks"].as_array().unwrap();
    let fields = [
        "median_ttft_ms",
        "p90_ttft_ms",
        "median_tpot_ms",
        "median_e2el_ms",
        "median_itl_ms",
        "p99_itl_ms",
        "output_throughput",
    ];
    for field in fields {
        let of: Vec<&Value> = checks
            .iter()
            .filter(|c| c["source_field"] == field)
            .collect();
        assert_eq!(of.len(), 5, "{field}: one check per trial");
        for c in of {
            assert_eq!(c["agrees"], true, "{field}: {c}");
        }
    }
    // The tool's figure is the file's, in seconds; qexp's is its own.
    let t1 = json(&vllm("detailed-trial1.json"));
    let ttft = checks
        .iter()
        .find(|c| c["source_field"] == "median_ttft_ms" && c["trial"] == 1)
        .unwrap();
    let want = t1["median_ttft_ms"].as_f64().unwrap() / 1000.0;
    assert!((ttft["source"].as_f64().unwrap() - want).abs() < 1e-12);
    let qexp_ttft = ttft["qexp"].as_f64().unwrap();
    let mut ttfts: Vec<f64> = t1["ttfts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_f64().unwrap())
        .collect();
    ttfts.sort_by(f64::total_cmp);
    let n = ttfts.len();
    let median = if n % 2 == 1 {
        ttfts[n / 2]
    } else {
        (ttfts[n / 2 - 1] + ttfts[n / 2]) / 2.0
    };
    assert!(
        (qexp_ttft - median).abs() < 1e-12,
        "qexp's median TTFT is the median of the requests' TTFT"
    );
    assert!(
        stdout.contains("median_ttft_ms vs qexp's ttft_s"),
        "{stdout}"
    );

    let df = qexp_store::scan_requests(&run).unwrap().collect().unwrap();
    assert_eq!(df.height(), 40, "8 requests × 5 files");
    assert!(
        qexp_testkit::f64s(&df, "queue_s").iter().all(|q| *q == 0.0),
        "a closed loop's wait for a free slot is no send lag"
    );
    // TTFT is the first chunk's arrival, E2E the last's.
    let ttft = qexp_testkit::f64s(&df, "ttft_s");
    let e2e = qexp_testkit::f64s(&df, "e2e_s");
    let first: Vec<f64> = t1["ttfts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_f64().unwrap())
        .collect();
    let latency: Vec<f64> = t1["latencies"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_f64().unwrap())
        .collect();
    for i in 0..8 {
        assert!((ttft[i] - first[i]).abs() < 1e-12);
        assert!(
            (e2e[i] - latency[i]).abs() < 1e-9,
            "every chunk had content: E2E is vLLM's latency"
        );
    }
}

#[test]
fn a_tool_figure_off_qexps_recomputation_is_reported_per_metric() {
    let tmp = tempfile::tempdir().unwrap();
    let mut doc = json(&vllm("detailed-trial1.json"));
    let ttft = doc["median_ttft_ms"].as_f64().unwrap();
    doc["median_ttft_ms"] = Value::from(ttft * 1.05);
    let file = tmp.path().join("edited.json");
    std::fs::write(&file, doc.to_string()).unwrap();
    let (code, stdout, stderr) = import(
        &tmp.path().join("results"),
        &[file.display().to_string()],
        &[],
    );
    assert_eq!(code, 0, "{stdout}{stderr}");
    assert!(
        stdout.contains("median_ttft_ms vs qexp's ttft_s: largest difference 5.00%"),
        "{stdout}"
    );
    assert!(stdout.contains("DIFFERS by more than 1%"), "{stdout}");
    let m = manifest(&only_run(&tmp.path().join("results"), "import-vllm"));
    let checks = m["import"]["checks"].as_array().unwrap();
    let c = checks
        .iter()
        .find(|c| c["source_field"] == "median_ttft_ms")
        .unwrap();
    assert_eq!(c["agrees"], false);
    let tpot = checks
        .iter()
        .find(|c| c["source_field"] == "median_tpot_ms")
        .unwrap();
    assert_eq!(tpot["agrees"], true, "only the edited figure differs");
}

#[test]
fn a_summaries_only_import_is_marked_and_the_diff_refuses_it() {
    let tmp = tempfile::tempdir().unwrap();
    let (code, stdout, stderr) = import(tmp.path(), &[vllm("summary-only.json")], &[]);
    assert_eq!(code, 0, "{stdout}{stderr}");
    assert!(stdout.contains("summaries only"), "{stdout}");
    let run = only_run(tmp.path(), "import-vllm");
    let m = manifest(&run);
    assert_eq!(m["import"]["summaries_only"], true);
    let checks = m["import"]["checks"].as_array().unwrap();
    assert!(!checks.is_empty() && checks.iter().all(|c| c["qexp"].is_null()));
    let o = qexp(&["diff", qexp_run().to_str().unwrap(), run.to_str().unwrap()])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("kept only summaries, and medians without spread cannot give a verdict"),
        "{err}"
    );
    assert_eq!(err.trim().lines().count(), 1, "one sentence: {err}");
}

/// Each bad input: exit 2, one line naming the file and the field, no folder written.
#[test]
fn bad_inputs_name_file_and_field_and_write_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let base = json(&vllm("detailed-trial1.json"));
    let text = base.to_string();
    let mut newer = base.clone();
    newer["speculative_acceptance"] = Value::from(0.7);
    let mut uneven = base.clone();
    uneven["latencies"].as_array_mut().unwrap().pop();
    let cases: [(&str, String, &str); 4] = [
        (
            "wrong-format.json",
            r#"{"benchmarks": [{"requests": []}]}"#.to_string(),
            "`median_ttft_ms` is missing: this is not a vllm bench serve result",
        ),
        (
            "truncated.json",
            text[..text.len() / 2].to_string(),
            "not valid JSON",
        ),
        (
            "newer.json",
            newer.to_string(),
            "field `speculative_acceptance` is not in the vllm bench serve 0.32 format",
        ),
        (
            "uneven.json",
            uneven.to_string(),
            "field `latencies` has 7 entries where `ttfts` has 8",
        ),
    ];
    for (name, body, want) in cases {
        let file = tmp.path().join(name);
        std::fs::write(&file, body).unwrap();
        let out = tmp.path().join("results");
        let (code, stdout, stderr) = import(
            &out,
            &[vllm("detailed-trial2.json"), file.display().to_string()],
            &[],
        );
        assert_eq!(code, 2, "{name}: {stdout}{stderr}");
        assert!(
            stderr.contains(name) && stderr.contains(want),
            "{name}: {stderr}"
        );
        assert_eq!(
            stderr.trim().lines().count(),
            1,
            "{name}: one sentence: {stderr}"
        );
        assert!(!out.exists(), "{name}: nothing written");
    }
}

#[test]
fn plan_matching_checks_the_load_and_files_the_run_under_the_plan() {
    let tmp = tempfile::tempdir().unwrap();
    let other = tmp.path().join("c4.toml");
    std::fs::write(
        &other,
        std::fs::read_to_string(plan())
            .unwrap()
            .replace("concurrency = [2]", "concurrency = [4]"),
    )
    .unwrap();
    let out = tmp.path().join("results");
    let (code, _, stderr) = import(&out, &detailed(), &["--plan", other.to_str().unwrap()]);
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.contains("detailed-trial1.json does not match")
            && stderr.contains("its load (c=2) is none of the plan's (c=4)"),
        "{stderr}"
    );
    assert!(!out.exists());

    let (code, stdout, stderr) = import(&out, &detailed(), &["--plan", &plan()]);
    assert_eq!(code, 0, "{stdout}{stderr}");
    let m = manifest(&only_run(&out, "import-vllm"));
    let q = manifest(&qexp_run());
    assert_eq!(
        m["comparability"]["workload_hash"],
        q["comparability"]["workload_hash"]
    );
    assert_eq!(m["plan_hash"], q["plan_hash"]);
}

/// The same server (the simulator's `exact` profile) measured by qexp and
/// by `vllm bench serve` with the same workload: `=` where the definitions
/// match on this data.
#[test]
fn diff_of_an_imported_vllm_run_against_qexps_run_of_the_same_server() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("results");
    let (code, stdout, stderr) = import(&out, &detailed(), &["--plan", &plan()]);
    assert_eq!(code, 0, "{stdout}{stderr}");
    let run = only_run(&out, "import-vllm");
    let o = qexp(&[
        "diff",
        qexp_run().to_str().unwrap(),
        run.to_str().unwrap(),
        "--format",
        "md",
        "--out",
        tmp.path().join("diff").to_str().unwrap(),
    ])
    .output()
    .unwrap();
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let md = std::fs::read_to_string(tmp.path().join("diff/diff.md")).unwrap();
    let row = |label: &str| -> Vec<String> {
        let line = md
            .lines()
            .find(|l| l.contains(&format!("| {label} |")))
            .unwrap_or_else(|| panic!("no row for {label}:\n{md}"));
        line.split('|').map(|c| c.trim().to_string()).collect()
    };
    // The verdict is the last cell before the trials-to-decide one.
    let verdict = |label: &str| {
        let cells = row(label);
        cells[cells.len() - 3].clone()
    };
    for label in EQUAL {
        assert_eq!(verdict(label), "=", "{label} should be `=`:\n{md}");
    }
    // vLLM's TTFT counts from before it posts the request, qexp's from the
    // wire: vLLM's is longer by its client's overhead, and so is its E2E,
    // by the same milliseconds, a smaller share (docs/importing.md).
    let ratio = |label: &str| -> f64 { row(label)[5].parse().unwrap() };
    let (ttft, e2e) = (ratio("TTFT (s)"), ratio("E2E (s)"));
    assert!(ttft > 1.0 && e2e > 1.0 && e2e < ttft, "{md}");
    assert!(
        md.contains("was measured by vllm bench serve and imported"),
        "{md}"
    );
}

/// Where qexp's and vllm bench serve's definitions match on this data
/// (docs/importing.md gives the reason for each of the others).
const EQUAL: &[&str] = &["decode/req (tok/s)"];

fn guidellm_files() -> Vec<String> {
    fixture_files(3, |t| format!("guidellm/benchmarks-trial{t}.json"))
}

/// `fixtures()/name(t)` for t in 1..=n.
fn fixture_files(n: u32, name: impl Fn(u32) -> String) -> Vec<String> {
    (1..=n)
        .map(|t| fixtures().join(name(t)).display().to_string())
        .collect()
}

/// GuideLLM's report: per request only the first and last token times, so
/// TTFT, E2E and TPOT are recomputed; its "time per output token" (TTFT
/// included) is reported as far from qexp's TPOT, its "inter-token latency"
/// (qexp's TPOT under another name) as agreeing.
#[test]
fn guidellm_reports_are_recomputed_and_its_tpot_is_told_apart() {
    let tmp = tempfile::tempdir().unwrap();
    let files = guidellm_files();
    let (code, stdout, stderr) = import_as("guidellm", tmp.path(), &files);
    assert_eq!(code, 0, "{stdout}{stderr}");
    let run = only_run(tmp.path(), "import-guidellm");
    let m = manifest(&run);
    assert_eq!(m["trials"], 3);
    assert_eq!(m["import"]["tool"], "GuideLLM");
    assert_eq!(
        m["import"]["tool_version"], "0.8.1",
        "GuideLLM writes its version"
    );
    let checks = m["import"]["checks"].as_array().unwrap();
    let of = |field: &str| -> Vec<&Value> {
        checks
            .iter()
            .filter(|c| c["source_field"].as_str().unwrap().contains(field))
            .collect()
    };
    for c in of("time_per_output_token_ms.successful.median") {
        assert_eq!(c["agrees"], false, "{c}");
        let d = c["relative_difference"].as_f64().unwrap();
        assert!(d > 0.1, "TTFT over 16 tokens is far more than 1%: {c}");
    }
    for c in of("inter_token_latency_ms.successful.median") {
        assert!(c["relative_difference"].as_f64().unwrap() < 0.02, "{c}");
    }
    // Per request, qexp's TTFT is GuideLLM's own (same timestamps).
    let doc = json(&files[0]);
    let mut theirs: Vec<f64> = doc["benchmarks"][0]["requests"]["successful"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["time_to_first_token_ms"].as_f64().unwrap() / 1000.0)
        .collect();
    let df = qexp_store::scan_requests(&run).unwrap().collect().unwrap();
    let trial = qexp_testkit::u32s(&df, "trial");
    let mut ours: Vec<f64> = qexp_testkit::f64s(&df, "ttft_s")
        .into_iter()
        .zip(trial)
        .filter(|(_, t)| *t == 1)
        .map(|(v, _)| v)
        .collect();
    theirs.sort_by(f64::total_cmp);
    ours.sort_by(f64::total_cmp);
    assert_eq!(ours.len(), theirs.len());
    for (a, b) in ours.iter().zip(&theirs) {
        assert!((a - b).abs() < 1e-6, "{ours:?} vs {theirs:?}");
    }
}

#[test]
fn a_guidellm_report_of_another_layout_version_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let mut doc = json(&guidellm_files()[0]);
    doc["metadata"]["version"] = Value::from(3);
    let file = tmp.path().join("newer-guidellm.json");
    std::fs::write(&file, doc.to_string()).unwrap();
    let out = tmp.path().join("results");
    let o = qexp(&[
        "import",
        "guidellm",
        file.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ])
    .output()
    .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("newer-guidellm.json: field `metadata.version` is 3"),
        "{err}"
    );
    assert!(!out.exists());
}

/// `qexp export llmd` on qexp's own fixture run: one report per (trial,
/// point), its figures the run's, and valid against llm-d-benchmark's own
/// JSON schema of the Benchmark Report v0.2.1 where
/// scripts/llmd/install-validator.sh provided it (CI requires it); a report
/// with its required `run.uid` removed must fail that validation, so the
/// check is not vacuous.
#[test]
fn llmd_export_is_valid_against_the_benchmark_report_schema() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("llmd");
    let run = qexp_run();
    let o = qexp(&[
        "export",
        "llmd",
        run.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ])
    .output()
    .unwrap();
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let mut files: Vec<PathBuf> = std::fs::read_dir(&out)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    assert_eq!(files.len(), 5, "one report per trial of the one point");
    // Rust-side structure: what the schema requires, and the run's numbers.
    let r: Value = serde_json::from_str(&std::fs::read_to_string(&files[0]).unwrap()).unwrap();
    assert_eq!(r["version"], "0.2.1");
    assert!(r["run"]["uid"].as_str().unwrap().ends_with("-p0-t1"));
    let load = &r["scenario"]["load"]["standardized"];
    assert_eq!(load["tool"], "qexp");
    assert_eq!(load["concurrency"], 2);
    assert_eq!(load["input_seq_len"]["value"], 64);
    let agg = &r["results"]["request_performance"]["aggregate"];
    assert_eq!(agg["requests"]["total"], 8);
    assert_eq!(agg["requests"]["failures"], 0);
    let ttft = &agg["latency"]["time_to_first_token"];
    assert_eq!(ttft["units"], "s");
    let analysis = qexp_analysis::analyze(&run).unwrap();
    let t1 = &analysis.points[0].trials[0];
    assert!(
        (ttft["p50"].as_f64().unwrap() - t1.ttft_s).abs() < 1e-12,
        "the report's median TTFT is the analysis's"
    );
    assert!(
        (agg["throughput"]["output_token_rate"]["mean"]
            .as_f64()
            .unwrap()
            - t1.agg_tok_s)
            .abs()
            < 1e-9
    );

    let (python, schema) = match (
        std::env::var("QEXP_LLMD_PYTHON"),
        std::env::var("QEXP_LLMD_SCHEMA"),
    ) {
        (Ok(p), Ok(s)) if !p.is_empty() && !s.is_empty() => (p, s),
        _ => {
            qexp_testkit::skip(qexp_testkit::Need::LlmdSchema, "QEXP_LLMD_PYTHON / QEXP_LLMD_SCHEMA are not set (scripts/llmd/install-validator.sh)");
            return;
        }
    };
    let mut broken = r.clone();
    broken["run"].as_object_mut().unwrap().remove("uid");
    let broken_file = tmp.path().join("broken.json");
    std::fs::write(&broken_file, broken.to_string()).unwrap();
    let script = "import json, sys, jsonschema\n\
        schema = json.load(open(sys.argv[1]))\n\
        v = jsonschema.Draft202012Validator(schema, format_checker=jsonschema.FormatChecker())\n\
        for f in sys.argv[2:]:\n    errors = [e.message for e in v.iter_errors(json.load(open(f)))]\n    print(f, 'valid' if not errors else 'invalid: ' + '; '.join(errors))\n";
    let mut args = vec!["-c".to_string(), script.to_string(), schema];
    args.extend(files.iter().map(|f| f.display().to_string()));
    args.push(broken_file.display().to_string());
    let o = std::process::Command::new(python)
        .args(&args)
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&o.stdout);
    assert!(
        o.status.success(),
        "{said}{}",
        String::from_utf8_lossy(&o.stderr)
    );
    for f in &files {
        assert!(said.contains(&format!("{} valid", f.display())), "{said}");
    }
    assert!(
        said.contains("broken.json invalid: 'uid' is a required property"),
        "{said}"
    );
}

/// An import joins the plan's history with `--plan` (one workload, the qexp
/// run and the import in it) and keeps a history of its own without.
#[test]
fn an_import_joins_the_history_of_the_plan_it_matched() {
    use qexp_analysis::history::{history, HistoryInput, StepOptions};
    let tmp = tempfile::tempdir().unwrap();
    let with_plan = tmp.path().join("with");
    let without = tmp.path().join("without");
    assert_eq!(import(&with_plan, &detailed(), &["--plan", &plan()]).0, 0);
    assert_eq!(import(&without, &detailed(), &[]).0, 0);
    let input = |run: &Path| HistoryInput::of(&qexp_analysis::analyze(run).unwrap());
    let ours = input(&qexp_run());
    let matched = input(&only_run(&with_plan, "import-vllm"));
    let alone = input(&only_run(&without, "import-vllm"));
    let metric = qexp_analysis::Metric::from_key("ttft_s").unwrap();
    let joined = history(&[&ours, &matched], metric, &StepOptions::default());
    assert_eq!(joined.len(), 1, "one workload: the plan's");
    assert_eq!(joined[0].runs.len(), 2);
    let apart = history(&[&ours, &alone], metric, &StepOptions::default());
    assert_eq!(
        apart.len(),
        2,
        "without --plan the import has its own workload"
    );
}

fn aiperf_files() -> Vec<String> {
    fixture_files(2, |t| format!("aiperf/trial{t}/profile_export.jsonl"))
}

fn import_as(format: &str, out: &Path, files: &[String]) -> (i32, String, String) {
    run_import(format, out, files, &[])
}

/// AIPerf keeps every chunk gap: TTFT, chunk gaps and E2E are recomputed
/// and agree; its inter-token latency divides by its own tokenizer's count
/// of the text, not the server's, and is reported as far from qexp's TPOT
/// (the simulator's words are not the tiny tokenizer's tokens).
#[test]
fn aiperf_exports_are_recomputed_and_its_token_count_is_told_apart() {
    let tmp = tempfile::tempdir().unwrap();
    let (code, stdout, stderr) = import_as("aiperf", tmp.path(), &aiperf_files());
    assert_eq!(code, 0, "{stdout}{stderr}");
    let m = manifest(&only_run(tmp.path(), "import-aiperf"));
    assert_eq!(m["trials"], 2);
    assert_eq!(m["import"]["tool_version"], "0.13.0");
    let files = m["import"]["files"].as_array().unwrap();
    assert_eq!(
        files.len(),
        4,
        "each export and the summary beside it, with their SHA-256"
    );
    assert!(files[1]["name"]
        .as_str()
        .unwrap()
        .ends_with("profile_export_aiperf.json"));
    let checks = m["import"]["checks"].as_array().unwrap();
    for field in [
        "time_to_first_token.p50",
        "inter_chunk_latency.p50",
        "request_latency.p50",
    ] {
        for c in checks.iter().filter(|c| c["source_field"] == field) {
            assert_eq!(c["agrees"], true, "{c}");
        }
    }
    let itl: Vec<&Value> = checks
        .iter()
        .filter(|c| c["source_field"] == "inter_token_latency.p50")
        .collect();
    assert_eq!(itl.len(), 2);
    for c in itl {
        assert_eq!(c["agrees"], false, "{c}");
    }
}

#[test]
fn an_aiperf_export_without_its_summary_or_of_another_version_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let alone = tmp.path().join("alone");
    std::fs::create_dir(&alone).unwrap();
    let export = alone.join("profile_export.jsonl");
    std::fs::copy(&aiperf_files()[0], &export).unwrap();
    let out = tmp.path().join("results");
    let refused = |want: &str| {
        let (code, _, stderr) = import_as("aiperf", &out, &[export.display().to_string()]);
        assert_eq!(code, 2, "{stderr}");
        assert!(stderr.contains(want), "{stderr}");
        assert!(!out.exists());
    };
    refused("profile_export.jsonl: field `profile_export_aiperf.json` is not beside it");
    let summary = Path::new(&aiperf_files()[0]).with_file_name("profile_export_aiperf.json");
    let mut doc = json(summary.to_str().unwrap());
    doc["schema_version"] = Value::from("2.0");
    std::fs::write(alone.join("profile_export_aiperf.json"), doc.to_string()).unwrap();
    refused("profile_export_aiperf.json: field `schema_version` is 2.0");
}

fn inference_perf_files() -> Vec<String> {
    fixture_files(2, |t| {
        format!("inference-perf/trial{t}/per_request_lifecycle_metrics.json")
    })
}

/// inference-perf keeps every chunk's arrival: TTFT and E2E are recomputed
/// and agree with its summary; its TPOT and output throughput count the
/// output by re-tokenizing the text client-side, not the server's count, and
/// are reported as far from qexp's (the simulator's words are not the tiny
/// tokenizer's tokens).
#[test]
fn inference_perf_reports_are_recomputed_and_its_token_count_is_told_apart() {
    let tmp = tempfile::tempdir().unwrap();
    let (code, stdout, stderr) = run_import(
        "inference-perf",
        tmp.path(),
        &inference_perf_files(),
        &["--tool-version", "0.7.0"],
    );
    assert_eq!(code, 0, "{stdout}{stderr}");
    let m = manifest(&only_run(tmp.path(), "import-inference-perf"));
    assert_eq!(m["trials"], 2);
    assert_eq!(m["import"]["tool_version"], "0.7.0");
    let files = m["import"]["files"].as_array().unwrap();
    assert_eq!(files.len(), 6, "each report, its summary and stage report");
    assert!(m["import"]["unknown"]
        .as_array()
        .unwrap()
        .iter()
        .any(|u| u.as_str().unwrap().contains("inference-perf's version")));
    let checks = m["import"]["checks"].as_array().unwrap();
    let verdicts = |field: &str| -> Vec<bool> {
        checks
            .iter()
            .filter(|c| c["source_field"] == field)
            .map(|c| c["agrees"].as_bool().unwrap())
            .collect()
    };
    for field in [
        "successes.latency.time_to_first_token.median",
        "successes.latency.time_to_first_token.p90",
        "successes.latency.request_latency.median",
    ] {
        assert_eq!(verdicts(field), [true, true], "{field}");
    }
    for field in [
        "successes.latency.time_per_output_token.median",
        "successes.throughput.output_tokens_per_sec",
    ] {
        assert_eq!(verdicts(field), [false, false], "{field}");
    }
}

/// inference-perf's bad inputs: another format, a truncated report, fields
/// its 0.7 entries do not have, another version named: exit 2, one line
/// naming the file and the field, nothing written.
#[test]
fn inference_perf_bad_inputs_name_file_and_field_and_write_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let good = inference_perf_files();
    let base = json(&good[0]);
    let text = base.to_string();
    let mut newer = base.clone();
    newer[0]["queue_time"] = Value::from(0.1);
    let mut newer_info = base.clone();
    newer_info[1]["info"]["cache_hit"] = Value::from(true);
    let cases: [(&str, String, &[&str], &str); 5] = [
        (
            "wrong-format.json",
            std::fs::read_to_string(vllm("detailed-trial1.json")).unwrap(),
            &[],
            "field `(top level)` is not a list of requests",
        ),
        (
            "truncated.json",
            text[..text.len() / 2].to_string(),
            &[],
            "not valid JSON",
        ),
        (
            "newer.json",
            newer.to_string(),
            &[],
            "field `[0].queue_time` is not in inference-perf 0.7's per-request entry",
        ),
        (
            "newer-info.json",
            newer_info.to_string(),
            &[],
            "field `[1].info.cache_hit` is not in inference-perf 0.7's per-request entry",
        ),
        (
            "another-version.json",
            text.clone(),
            &["--tool-version", "0.8.0"],
            "field `--tool-version` is 0.8.0",
        ),
    ];
    for (name, body, extra, want) in cases {
        let file = tmp.path().join(name);
        std::fs::write(&file, body).unwrap();
        let out = tmp.path().join("results");
        let (code, stdout, stderr) =
            run_import("inference-perf", &out, &[file.display().to_string()], extra);
        assert_eq!(code, 2, "{name}: {stdout}{stderr}");
        assert!(
            stderr.contains(name) && stderr.contains(want),
            "{name}: {stderr}"
        );
        assert_eq!(stderr.trim().lines().count(), 1, "{name}: {stderr}");
        assert!(!out.exists(), "{name}: nothing written");
    }
}

/// A per-request report alone (its summary and stage report not beside it)
/// still imports: recomputed, nothing to check against, and the manifest
/// says what is missing.
#[test]
fn an_inference_perf_report_alone_imports_and_says_what_is_missing() {
    let tmp = tempfile::tempdir().unwrap();
    let alone = tmp.path().join("alone");
    std::fs::create_dir(&alone).unwrap();
    let report = alone.join("per_request_lifecycle_metrics.json");
    std::fs::copy(&inference_perf_files()[0], &report).unwrap();
    let out = tmp.path().join("results");
    let (code, stdout, stderr) =
        run_import("inference-perf", &out, &[report.display().to_string()], &[]);
    assert_eq!(code, 0, "{stdout}{stderr}");
    let m = manifest(&only_run(&out, "import-inference-perf"));
    assert_eq!(m["import"]["checks"].as_array().unwrap().len(), 0);
    assert!(m["import"]["tool_version"].is_null());
    let unknown = m["import"]["unknown"].to_string();
    assert!(
        unknown.contains("summary_lifecycle_metrics.json was not beside"),
        "{unknown}"
    );
    assert!(unknown.contains("the concurrency"), "{unknown}");
}

/// A plan whose experiment is not the import's default (`import-vllm`):
/// the run is filed under the plan's experiment, joins the history of the
/// plan's workload, and its report and the workspace index show the
/// target as not recorded (vLLM's JSON has no URL) rather than a blank.
#[test]
fn an_import_with_a_plan_is_filed_under_the_plans_experiment_and_history() {
    use qexp_analysis::history::{history, HistoryInput, StepOptions};
    let tmp = tempfile::tempdir().unwrap();
    let renamed = tmp.path().join("spring.toml");
    let text = std::fs::read_to_string(plan()).unwrap();
    assert!(text.contains("name = \"import-vllm\""));
    std::fs::write(
        &renamed,
        text.replace("name = \"import-vllm\"", "name = \"spring-baseline\""),
    )
    .unwrap();
    let out = tmp.path().join("results");
    let (code, stdout, stderr) = import(&out, &detailed(), &["--plan", renamed.to_str().unwrap()]);
    assert_eq!(code, 0, "{stdout}{stderr}");
    assert!(!out.join("import-vllm").exists(), "not under the default");
    let run = only_run(&out, "spring-baseline");
    let m = manifest(&run);
    assert_eq!(m["experiment"], "spring-baseline");
    assert_eq!(m["plan_path"], renamed.display().to_string());
    assert_ne!(m["plan_hash"], manifest(&qexp_run())["plan_hash"]);
    // One workload with qexp's run of the same workload: the history joins.
    let input = |run: &Path| HistoryInput::of(&qexp_analysis::analyze(run).unwrap());
    let metric = qexp_analysis::Metric::from_key("ttft_s").unwrap();
    let joined = history(
        &[&input(&qexp_run()), &input(&run)],
        metric,
        &StepOptions::default(),
    );
    assert_eq!(joined.len(), 1, "one workload: the plan's");
    assert_eq!(joined[0].runs.len(), 2);

    // --experiment still says where the run goes.
    let other = tmp.path().join("other");
    let args = [
        "--plan",
        renamed.to_str().unwrap(),
        "--experiment",
        "elsewhere",
    ];
    assert_eq!(import(&other, &detailed(), &args).0, 0);
    assert_eq!(
        manifest(&only_run(&other, "elsewhere"))["experiment"],
        "elsewhere"
    );

    let reports = tmp.path().join("reports");
    let o = qexp(&[
        "report",
        run.to_str().unwrap(),
        "--results",
        out.to_str().unwrap(),
        "--out-dir",
        reports.to_str().unwrap(),
    ])
    .output()
    .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let id = run.file_name().unwrap().to_str().unwrap();
    let md = std::fs::read_to_string(reports.join("spring-baseline").join(id).join("report.md"))
        .unwrap();
    assert!(
        md.contains("- Target: `not recorded by vllm bench serve`, model `sim-exact`"),
        "{md}"
    );
    let index = std::fs::read_to_string(reports.join("index.md")).unwrap();
    assert!(index.contains("spring-baseline"), "{index}");
    assert!(
        index.contains("not recorded by vllm bench serve (sim-exact)"),
        "{index}"
    );
}

/// The figures of a file, as f64s.
fn numbers(v: &Value) -> Vec<f64> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_f64().unwrap())
        .collect()
}

/// Runs the simulator failed (HTTP 500, or the stream cut after 3
/// chunks), as `vllm bench serve` and vllm-bench recorded them: each
/// request with an error is a failure under qexp's definition, of the
/// class its message names, counted as the tool counted it; figures are
/// recomputed over the requests that succeeded, as the tools' are, and
/// agree with theirs.
#[test]
fn failed_requests_the_tools_recorded_are_failures_under_qexps_definition() {
    for format in ["vllm", "vllm-bench"] {
        let tmp = tempfile::tempdir().unwrap();
        let file = fixtures().join(format).join("failures.json");
        let file = file.display().to_string();
        let (code, stdout, stderr) =
            run_import(format, tmp.path(), std::slice::from_ref(&file), &[]);
        assert_eq!(code, 0, "{format}: {stdout}{stderr}");
        let src = json(&file);
        let failed = src["failed"].as_u64().unwrap() as usize;
        let completed = src["completed"].as_u64().unwrap() as usize;
        assert!(
            failed > 0 && completed > 0,
            "{format}: the fixture has both"
        );
        let run = only_run(tmp.path(), &format!("import-{format}"));
        let df = qexp_store::scan_requests(&run).unwrap().collect().unwrap();
        let classes = qexp_testkit::strings(&df, "error_class");
        let ttft = qexp_testkit::f64s(&df, "ttft_s");
        let errors = src["errors"].as_array().unwrap();
        assert_eq!(classes.len(), failed + completed);
        for (i, e) in errors.iter().enumerate() {
            let e = e.as_str().unwrap();
            assert_eq!(e.is_empty(), classes[i].is_none(), "{format} #{i}: {e}");
            // A failure has no TTFT, even one whose stream was cut after its first chunks.
            assert_eq!(e.is_empty(), ttft[i].is_finite(), "{format} #{i}");
        }
        // The simulator's two faults, as the tools' messages name them.
        let mut seen: Vec<&str> = classes.iter().flatten().map(String::as_str).collect();
        seen.sort_unstable();
        seen.dedup();
        assert_eq!(seen, ["http_status", "stream_broken"], "{format}");
        let points = qexp_store::scan_points(&run).unwrap().collect().unwrap();
        assert_eq!(qexp_testkit::u32s(&points, "failures"), [failed as u32]);
        let analysis = qexp_analysis::analyze(&run).unwrap();
        let counted: u64 = analysis.failures.iter().map(|g| g.count).sum();
        assert_eq!(counted, failed as u64, "{format}: the report's failures");
        let checks = manifest(&run)["import"]["checks"].clone();
        for c in checks.as_array().unwrap() {
            assert_eq!(c["agrees"], true, "{format}: {c}");
        }
    }
}

/// The Rust vllm-bench's files (vLLM's layout, with fields of its own)
/// import as `vllm-bench`: trials recomputed under qexp's definitions and
/// set beside its figures, its own tokenizer's prompt lengths kept as the
/// planned lengths (the server's are unknown), and a file of either tool
/// given as the other's refused in one sentence naming the field.
#[test]
fn vllm_bench_files_are_recomputed_and_told_from_vllm_bench_serve() {
    let tmp = tempfile::tempdir().unwrap();
    let files = fixture_files(3, |t| format!("vllm-bench/detailed-trial{t}.json"));
    let (code, stdout, stderr) = run_import("vllm-bench", tmp.path(), &files, &[]);
    assert_eq!(code, 0, "{stdout}{stderr}");
    let run = only_run(tmp.path(), "import-vllm-bench");
    let m = manifest(&run);
    assert_eq!(m["trials"], 3);
    assert_eq!(m["import"]["tool"], "vllm-bench");
    assert_eq!(m["started_at"], "2026-12-06T23:51:26Z", "its RFC 3339 date");
    let unknown = m["import"]["unknown"].to_string();
    assert!(
        unknown.contains("the server's prompt token counts"),
        "{unknown}"
    );
    let checks = m["import"]["checks"].as_array().unwrap();
    assert_eq!(checks.len(), 3 * 8, "eight figures per trial");
    for c in checks {
        assert_eq!(c["agrees"], true, "{c}");
    }
    let df = qexp_store::scan_requests(&run).unwrap().collect().unwrap();
    assert_eq!(df.height(), 24);
    let src = json(&files[0]);
    let planned = qexp_testkit::u32s(&df, "input_tokens_planned");
    let lens = numbers(&src["input_lens"]);
    for i in 0..8 {
        assert_eq!(f64::from(planned[i]), lens[i]);
    }
    assert!(
        qexp_testkit::u32s(&df, "prompt_tokens")
            .iter()
            .all(|t| *t == 0),
        "the server's prompt counts are unknown (null)"
    );
    let ttft = qexp_testkit::f64s(&df, "ttft_s");
    for (i, t) in numbers(&src["ttfts"]).iter().enumerate() {
        assert!((ttft[i] - t).abs() < 1e-12);
    }
    // Its prompt lengths are its tokenizer's, not the server's: --plan says whose.
    let (code, _, stderr) = run_import(
        "vllm-bench",
        &tmp.path().join("p"),
        &files,
        &["--plan", &plan()],
    );
    assert_eq!(code, 2);
    assert!(
        stderr.contains("(by vllm-bench's own tokenizer, chat template excluded)"),
        "{stderr}"
    );

    let out = tmp.path().join("wrong");
    let (code, _, stderr) = import(&out, &files[..1], &[]);
    assert_eq!(code, 2);
    assert!(
        stderr.contains("import the file as `vllm-bench`"),
        "{stderr}"
    );
    let (code, _, stderr) = run_import("vllm-bench", &out, &[vllm("detailed-trial1.json")], &[]);
    assert_eq!(code, 2);
    assert!(
        stderr.contains("field `steady_state` is missing"),
        "{stderr}"
    );
    assert!(!out.exists());
}

/// inference-perf's fixtures ran the workload of plan-completions.toml
/// (ShareGPT-shaped prompts of 64 words on the completions endpoint, 16
/// output tokens): with that plan they match, by the server's counts, and
/// join its experiment; the chat plan of the vLLM fixtures is refused for
/// its API, before any length is compared.
#[test]
fn an_inference_perf_import_matches_the_plan_it_ran() {
    let tmp = tempfile::tempdir().unwrap();
    let plan = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../scripts/import-fixtures/plan-completions.toml")
        .display()
        .to_string();
    let files = inference_perf_files();
    let (code, stdout, stderr) =
        run_import("inference-perf", tmp.path(), &files, &["--plan", &plan]);
    assert_eq!(code, 0, "{stdout}{stderr}");
    let m = manifest(&only_run(tmp.path(), "import-inference-perf"));
    assert_eq!(m["plan_path"], plan);
    assert_eq!(m["comparability"]["workload"]["api"], "completions");
    assert_eq!(m["points"][0]["input_tokens"], 64);

    let out = tmp.path().join("chat");
    let (code, _, stderr) = run_import("inference-perf", &out, &files, &["--plan", &self::plan()]);
    assert_eq!(code, 2);
    assert!(
        stderr.contains("its requests went to the completions API, the plan's to the chat API"),
        "{stderr}"
    );
    assert!(!out.exists());
}

/// The bad inputs of the other formats: a file of another format, a cut
/// file, a field the tool's version does not write, per-request arrays of
/// different lengths (vLLM's layout): exit 2, one sentence naming the file
/// and the field (or line and column), nothing written.
#[test]
fn bad_inputs_of_every_format_name_file_and_field_and_write_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let cut = |path: &str| {
        let text = std::fs::read_to_string(path).unwrap();
        text[..text.len() / 2].to_string()
    };
    let with = |path: &str, set: &dyn Fn(&mut Value)| {
        let mut doc = json(path);
        set(&mut doc);
        doc.to_string()
    };
    let (guidellm, bench) = (
        &guidellm_files()[0],
        &fixtures()
            .join("vllm-bench/detailed-trial1.json")
            .display()
            .to_string(),
    );
    let aiperf = std::fs::read_to_string(&aiperf_files()[0]).unwrap();
    let first = aiperf.lines().next().unwrap();
    let mut record: Value = serde_json::from_str(first).unwrap();
    record["brand_new"] = Value::from(1);
    let aiperf_newer = aiperf.replacen(first, &record.to_string(), 1);
    let cases: Vec<(&str, &str, String, &str)> = vec![
        ("guidellm", "cut.json", cut(guidellm), "cut.json:1:"),
        (
            "guidellm",
            "vllm.json",
            std::fs::read_to_string(vllm("detailed-trial1.json")).unwrap(),
            "vllm.json: field `benchmarks` is missing: this is not a GuideLLM report",
        ),
        (
            "guidellm",
            "newer.json",
            with(guidellm, &|d| d["brand_new"] = Value::from(1)),
            "newer.json: field `brand_new` is not in the GuideLLM report layout",
        ),
        (
            "aiperf",
            "profile_export.jsonl",
            aiperf[..aiperf.len() / 2].to_string(),
            "not valid JSON",
        ),
        (
            "aiperf",
            "profile_export.jsonl",
            aiperf_newer,
            "field `line 1: brand_new` is not in AIPerf 0.13's per-request record",
        ),
        ("vllm-bench", "cut.json", cut(bench), "cut.json:1:"),
        (
            "vllm-bench",
            "newer.json",
            with(bench, &|d| d["brand_new"] = Value::from(1)),
            "newer.json: field `brand_new` is not in the vllm-bench 0.1 format",
        ),
        (
            "vllm-bench",
            "uneven.json",
            with(bench, &|d| {
                d["itls"].as_array_mut().unwrap().pop();
            }),
            "uneven.json: field `itls` has 7 entries where `ttfts` has 8",
        ),
    ];
    let summary = Path::new(&aiperf_files()[0]).with_file_name("profile_export_aiperf.json");
    for (i, (format, name, body, want)) in cases.into_iter().enumerate() {
        let dir = tmp.path().join(format!("case{i}"));
        std::fs::create_dir(&dir).unwrap();
        std::fs::copy(&summary, dir.join("profile_export_aiperf.json")).unwrap();
        let file = dir.join(name);
        std::fs::write(&file, body).unwrap();
        let out = tmp.path().join("results");
        let (code, stdout, stderr) = run_import(format, &out, &[file.display().to_string()], &[]);
        assert_eq!(code, 2, "{format} {name}: {stdout}{stderr}");
        assert!(stderr.contains(want), "{format} {name}: {stderr}");
        assert_eq!(stderr.trim().lines().count(), 1, "one sentence: {stderr}");
        assert!(!out.exists(), "{format} {name}: nothing written");
    }
}
