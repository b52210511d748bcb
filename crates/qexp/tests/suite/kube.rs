//! `qexp kube`'s objects validated offline against the Kubernetes API
//! schema by kubernetes-validate (PyPI; it bundles the schemas): the
//! generated YAML passes in strict mode, and the same YAML with a field
//! misspelt or of the wrong type fails, so the validator is seen to judge
//! what qexp wrote. The YAML for N = 8 in docs/kubernetes-job.yaml is the
//! one `qexp kube` writes. Without the validator the schema test says so
//! and skips, unless QEXP_REQUIRE_KUBE_VALIDATE=1 (CI installs it with
//! scripts/kube/install-validator.sh).

use crate::common::qexp;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The arguments that give docs/kubernetes-job.yaml.
const DOC_ARGS: [&str; 8] = [
    "--shards",
    "8",
    "--image",
    "ghcr.io/example/qexp:0.1.0",
    "--run-id",
    "20261203T150000Z-5a4d01",
    "--target",
    SERVER,
];

/// A server inside the cluster, for plans whose own target is `sim:`.
const SERVER: &str = "http://vllm.inference.svc:8000";

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn generate(out: &Path) -> String {
    let plan = root().join("experiments/throughput.toml");
    let mut args = vec!["kube", plan.to_str().unwrap()];
    args.extend(DOC_ARGS);
    args.extend(["--out", out.to_str().unwrap()]);
    let o = qexp(&args).output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    std::fs::read_to_string(out).unwrap()
}

/// The python with kubernetes_validate, or None after a skip
/// ([`qexp_testkit::skip`]; a failure where QEXP_REQUIRE_KUBE_VALIDATE is set).
pub(crate) fn validator() -> Option<String> {
    let python =
        std::env::var("QEXP_KUBE_VALIDATE_PYTHON").unwrap_or_else(|_| "python3".to_string());
    let found = Command::new(&python)
        .args(["-m", "kubernetes_validate", "--version"])
        .output()
        .is_ok_and(|o| o.status.success());
    if found {
        return Some(python);
    }
    let why = format!(
        "kubernetes-validate is not importable by `{python}` (install it with scripts/kube/install-validator.sh and set QEXP_KUBE_VALIDATE_PYTHON)"
    );
    qexp_testkit::skip(qexp_testkit::Need::KubeValidator, &why);
    None
}

/// Runs the validator in strict mode (unknown fields are errors) on `file`.
pub(crate) fn validate(python: &str, file: &Path) -> (bool, String) {
    let o = Command::new(python)
        .args(["-m", "kubernetes_validate", "--strict", "--quiet"])
        .arg(file)
        .output()
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    (o.status.success() && !text.contains("ERROR"), text)
}

#[test]
fn generated_objects_pass_the_kubernetes_schema() {
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("qexp.yaml");
    let yaml = generate(&file);
    for kind in ["ConfigMap", "Service", "PersistentVolumeClaim", "Job"] {
        assert!(
            yaml.contains(&format!("kind: \"{kind}\"")),
            "{kind} missing:\n{yaml}"
        );
    }
    let Some(python) = validator() else { return };
    let (ok, out) = validate(&python, &file);
    assert!(ok, "the generated objects fail the schema:\n{out}\n{yaml}");
    // The validator judges what qexp wrote: a misspelt field and a wrong
    // type each fail.
    for (from, to) in [
        ("parallelism: 8", "parallelizm: 8"),
        ("completions: 8", "completions: \"eight\""),
    ] {
        assert!(yaml.contains(from), "{from}");
        let broken = tmp.path().join("broken.yaml");
        std::fs::write(&broken, yaml.replace(from, to)).unwrap();
        let (ok, out) = validate(&python, &broken);
        assert!(!ok, "`{to}` passed the schema:\n{out}");
    }
}

#[test]
fn the_documented_job_is_the_one_qexp_writes() {
    let tmp = tempfile::tempdir().unwrap();
    let yaml = generate(&tmp.path().join("qexp.yaml"));
    let doc = std::fs::read_to_string(root().join("docs/kubernetes-job.yaml")).unwrap();
    assert_eq!(
        doc, yaml,
        "docs/kubernetes-job.yaml is stale: regenerate it with `qexp kube experiments/throughput.toml {} --out docs/kubernetes-job.yaml`",
        DOC_ARGS.join(" ")
    );
}

#[test]
fn bad_kube_input_is_one_line_and_exit_2() {
    let plan = root().join("experiments/throughput.toml");
    for (args, says) in [
        (vec!["--shards", "0", "--image", "x"], "--shards"),
        (
            vec![
                "--shards", "2", "--image", "x", "--target", SERVER, "--cpu", "lots",
            ],
            "--cpu",
        ),
        (
            vec!["--shards", "2", "--image", "x"],
            "`qexp sim --profile founding",
        ),
    ] {
        let mut a = vec!["kube", plan.to_str().unwrap()];
        a.extend(args);
        let o = qexp(&a).output().unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{err}");
        assert!(
            err.starts_with("error: ") && err.contains(says) && err.lines().count() == 1,
            "{err}"
        );
    }
}

/// A plan that reads a dataset beside it (`../datasets/…`) and an API key
/// from the environment: the dataset travels in the ConfigMap to the place
/// the plan reads it from, the key is a Secret reference, never a value,
/// and the objects pass the schema.
#[test]
fn a_plans_dataset_and_api_key_reach_the_pods() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(tmp.path().join("experiments")).unwrap();
    std::fs::create_dir_all(tmp.path().join("datasets")).unwrap();
    let plan_text = std::fs::read_to_string(root().join("experiments/dataset.toml"))
        .unwrap()
        .replace("[target]\n", "[target]\napi_key_env = \"QEXP_TEST_KEY\"\n");
    let plan = tmp.path().join("experiments/dataset.toml");
    std::fs::write(&plan, &plan_text).unwrap();
    let data = std::fs::read_to_string(root().join("datasets/sample-chat.jsonl")).unwrap();
    std::fs::write(tmp.path().join("datasets/sample-chat.jsonl"), &data).unwrap();
    let out = tmp.path().join("qexp.yaml");
    let base = [
        "kube",
        plan.to_str().unwrap(),
        "--shards",
        "2",
        "--image",
        "x:1",
        "--target",
        SERVER,
    ];

    let o = qexp(&base)
        .env("QEXP_TEST_KEY", "sk-secret-value")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("$QEXP_TEST_KEY: give --api-key-secret"),
        "{err}"
    );

    let mut args = base.to_vec();
    args.extend([
        "--api-key-secret",
        "llm-key",
        "--out",
        out.to_str().unwrap(),
    ]);
    let o = qexp(&args)
        .env("QEXP_TEST_KEY", "sk-secret-value")
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let yaml = std::fs::read_to_string(&out).unwrap();
    assert!(!yaml.contains("sk-secret-value"), "{yaml}");
    assert!(yaml.contains("secretKeyRef"), "{yaml}");
    assert!(yaml.contains("\"experiments/dataset.toml\""), "{yaml}");
    assert!(yaml.contains("\"datasets/sample-chat.jsonl\""), "{yaml}");
    assert!(
        yaml.contains("\"/plan/experiments/dataset.toml\""),
        "{yaml}"
    );
    // The dataset's lines are in the ConfigMap, as a YAML block.
    for line in data.lines().filter(|l| !l.is_empty()) {
        assert!(yaml.contains(&format!("    {line}\n")), "{line}");
    }
    let Some(python) = validator() else { return };
    let (ok, out) = validate(&python, &out);
    assert!(ok, "the objects fail the schema:\n{out}\n{yaml}");
}

/// A dataset named by its absolute path (built into the image, or on the
/// results claim) is read where it is: not shipped, and not refused.
#[test]
fn a_dataset_named_by_an_absolute_path_is_not_shipped() {
    let tmp = tempfile::tempdir().unwrap();
    let data = root().join("datasets/sample-chat.jsonl");
    let plan_text = std::fs::read_to_string(root().join("experiments/dataset.toml"))
        .unwrap()
        .replace(
            "\"../datasets/sample-chat.jsonl\"",
            &format!("\"{}\"", data.display()),
        );
    assert!(plan_text.contains(&data.display().to_string()));
    let plan = tmp.path().join("dataset.toml");
    std::fs::write(&plan, &plan_text).unwrap();
    let o = qexp(&[
        "kube",
        plan.to_str().unwrap(),
        "--shards",
        "2",
        "--image",
        "x:1",
        "--target",
        SERVER,
    ])
    .output()
    .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    assert!(
        err.contains("by its absolute path: it is not shipped"),
        "{err}"
    );
    let yaml = String::from_utf8_lossy(&o.stdout);
    assert!(!yaml.contains("file-0"), "{yaml}");
    assert!(yaml.contains("\"/plan/plan.toml\""), "{yaml}");
}

/// The documents of a YAML stream as PyYAML reads them (PyYAML comes with
/// kubernetes-validate), as JSON.
fn yaml_documents(python: &str, file: &Path) -> Vec<serde_json::Value> {
    let o = Command::new(python)
        .args([
            "-c",
            "import json, sys, yaml; print(json.dumps(list(yaml.safe_load_all(open(sys.argv[1])))))",
        ])
        .arg(file)
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "PyYAML cannot read {}:\n{}",
        file.display(),
        String::from_utf8_lossy(&o.stderr)
    );
    serde_json::from_slice(&o.stdout).unwrap()
}

/// The plan reaches the pods as written, whatever its first lines: one
/// whose first line with text is indented (a comment under a blank line)
/// would have set a YAML literal block's indentation, and been altered or
/// made the YAML invalid.
#[test]
fn the_plan_in_the_configmap_reads_back_as_written() {
    let tmp = tempfile::tempdir().unwrap();
    let throughput = std::fs::read_to_string(root().join("experiments/throughput.toml")).unwrap();
    let indented = format!("\n  # indented comment\n{throughput}");
    let plans = [("plain.toml", throughput), ("indented.toml", indented)];
    let mut written = Vec::new();
    for (name, text) in &plans {
        let plan = tmp.path().join(name);
        std::fs::write(&plan, text).unwrap();
        let out = tmp.path().join(format!("{name}.yaml"));
        let o = qexp(&[
            "kube",
            plan.to_str().unwrap(),
            "--shards",
            "2",
            "--image",
            "x:1",
            "--target",
            SERVER,
            "--out",
            out.to_str().unwrap(),
        ])
        .output()
        .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        written.push(out);
    }
    // The plain plan stays a readable literal block.
    let plain = std::fs::read_to_string(&written[0]).unwrap();
    assert!(plain.contains("  plan.toml: |\n"), "{plain}");
    let Some(python) = validator() else { return };
    for ((name, text), out) in plans.iter().zip(&written) {
        let docs = yaml_documents(&python, out);
        assert_eq!(docs[0]["kind"], "ConfigMap", "{name}");
        assert_eq!(
            docs[0]["data"]["plan.toml"].as_str(),
            Some(text.as_str()),
            "{name}"
        );
        let (ok, report) = validate(&python, out);
        assert!(ok, "{name}: the objects fail the schema:\n{report}");
    }
}

/// `qexp kube plan.toml`, the plan named by a bare file name in the
/// working folder: the files it reads beside it are shipped as from any
/// other folder (a bare name's parent is the empty path).
#[test]
fn a_plan_named_by_a_bare_file_name_ships_its_files() {
    let tmp = tempfile::tempdir().unwrap();
    let plan_text = std::fs::read_to_string(root().join("experiments/dataset.toml"))
        .unwrap()
        .replace("\"../datasets/sample-chat.jsonl\"", "\"sample-chat.jsonl\"");
    assert!(plan_text.contains("\"sample-chat.jsonl\""));
    std::fs::write(tmp.path().join("dataset.toml"), &plan_text).unwrap();
    let data = std::fs::read_to_string(root().join("datasets/sample-chat.jsonl")).unwrap();
    std::fs::write(tmp.path().join("sample-chat.jsonl"), &data).unwrap();
    let o = qexp(&[
        "kube",
        "dataset.toml",
        "--shards",
        "2",
        "--image",
        "x:1",
        "--target",
        SERVER,
    ])
    .current_dir(tmp.path())
    .output()
    .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let yaml = String::from_utf8_lossy(&o.stdout);
    // The plan and its dataset keep their places beside each other.
    assert!(yaml.contains("- \"/plan/dataset.toml\"\n"), "{yaml}");
    assert!(yaml.contains("path: \"sample-chat.jsonl\"\n"), "{yaml}");
    for line in data.lines().filter(|l| !l.is_empty()) {
        assert!(yaml.contains(&format!("    {line}\n")), "{line}");
    }
}
