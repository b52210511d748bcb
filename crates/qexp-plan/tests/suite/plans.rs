use qexp_plan::{ApiKind, Plan, PlanError, Requests};
use std::path::Path;

const GOOD: &str = r#"
[experiment]
name = "t"
version = 2

[target]
base_url = "http://127.0.0.1:8000"
api = "completions"
api_key_env = "MY_KEY"
extra_body = { ignore_eos = true }

[workload]
input_tokens = 100
output_tokens = 20

[sweep]
concurrency = [1, 4]
input_tokens = [100, 200, 300]

[run]
requests = "3x"
trials = 2
"#;

fn parse(text: &str) -> Result<Plan, PlanError> {
    Plan::parse(Path::new("experiments/t.toml"), text)
}

fn err(text: &str) -> String {
    parse(text)
        .expect_err("plan should be rejected")
        .to_string()
}

#[test]
fn good_plan_expands_to_points() {
    let plan = parse(GOOD).unwrap();
    assert_eq!(plan.file.target.api, ApiKind::Completions);
    assert_eq!(plan.file.run.requests(), Requests::PerConcurrency(3));
    let points = plan.points();
    assert_eq!(points.len(), 6);
    assert_eq!(points[1].concurrency, 4);
    assert_eq!(points[1].requests, 12);
    assert_eq!(points[5].input_tokens, 300);
    assert_eq!(points[5].id, 5);
    assert_eq!(plan.trials(), 2);
    assert_eq!(plan.hash().len(), 64);
}

#[test]
fn hash_changes_with_text() {
    let a = parse(GOOD).unwrap().hash();
    let b = parse(&GOOD.replace("trials = 2", "trials = 3"))
        .unwrap()
        .hash();
    assert_ne!(a, b);
}

#[test]
fn shipped_plans_parse() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../experiments");
    let mut seen = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "toml") {
            Plan::load(&path).unwrap_or_else(|e| panic!("{e}"));
            seen += 1;
        }
    }
    assert!(seen >= 3, "expected the shipped plans, found {seen}");
    let tp = Plan::load(&dir.join("throughput.toml")).unwrap();
    let c: Vec<u32> = tp.points().iter().map(|p| p.concurrency).collect();
    assert_eq!(c, [1, 2, 4, 8, 16, 32, 64, 100]);
    let lc = Plan::load(&dir.join("longctx.toml")).unwrap();
    let i: Vec<u32> = lc.points().iter().map(|p| p.input_tokens).collect();
    assert_eq!(i, [1000, 10000, 30000, 60000, 100000, 120000]);
}

#[test]
fn unknown_key_names_line_column_and_key() {
    let msg = err(&GOOD.replace(
        "api = \"completions\"",
        "api = \"completions\"\nbase_ulr = \"x\"",
    ));
    insta::assert_snapshot!("unknown_key", msg);
}

#[test]
fn wrong_type_names_line_column_and_key() {
    let msg = err(&GOOD.replace("output_tokens = 20", "output_tokens = \"twenty\""));
    insta::assert_snapshot!("wrong_type", msg);
}

#[test]
fn missing_required_key_is_reported() {
    let msg = err(&GOOD.replace("output_tokens = 20\n", ""));
    insta::assert_snapshot!("missing_key", msg);
}

#[test]
fn invalid_values_point_at_the_value() {
    let msg = err(&GOOD.replace("concurrency = [1, 4]", "concurrency = []"));
    insta::assert_snapshot!("empty_list", msg);
    let msg = err(&GOOD.replace("requests = \"3x\"", "requests = \"three\""));
    insta::assert_snapshot!("bad_requests", msg);
    let msg = err(&GOOD.replace("http://127.0.0.1:8000", "127.0.0.1:8000"));
    insta::assert_snapshot!("bad_url", msg);
}

#[test]
fn malformed_toml_is_located() {
    let msg = err("[experiment]\nname = \"x\nversion = 1\n");
    assert!(msg.starts_with("experiments/t.toml:2:"), "{msg}");
}

#[test]
fn min_change_must_be_above_zero_as_qexp_diff_requires() {
    for bad in ["0", "0.0", "-0.01", "1.0", "nan"] {
        let msg = err(&format!("{GOOD}\n[analysis]\nmin_change = {bad}\n"));
        assert!(
            msg.contains("analysis.min_change") && msg.contains("more than 0"),
            "{bad}: {msg}"
        );
    }
    let plan = parse(&format!("{GOOD}\n[analysis]\nmin_change = 0.005\n")).unwrap();
    assert_eq!(plan.file.analysis.min_change, 0.005);
}

#[test]
fn stop_past_saturation_needs_a_sweep_to_climb_in_order() {
    let climb = GOOD.replace("concurrency = [1, 4]", "concurrency = [1, 4, 16]");
    let on = |text: &str, extra: &str| text.replace("trials = 2", &format!("trials = 2\n{extra}"));
    let plan = parse(&on(&climb, "stop_past_saturation = true")).unwrap();
    assert!(plan.stop_past_saturation());
    assert!(!parse(&climb).unwrap().stop_past_saturation());
    assert_eq!(
        err(&on(GOOD, "stop_past_saturation = true")),
        "experiments/t.toml:23:24: `run.stop_past_saturation`: needs a sweep of at least 3 concurrency levels or rates to judge saturation by"
    );
    assert_eq!(
        err(&on(&climb, "shuffle = true\nstop_past_saturation = true")),
        "experiments/t.toml:24:24: `run.stop_past_saturation`: judges each series in increasing load; drop run.shuffle"
    );
    // Off, it asks nothing of the sweep.
    assert!(parse(&on(GOOD, "stop_past_saturation = false")).is_ok());
}

#[test]
fn batch_is_for_the_apis_that_answer_once() {
    let with = |api: &str, extra: &str| {
        GOOD.replace("api = \"completions\"", &format!("api = \"{api}\""))
            .replace(
                "output_tokens = 20",
                &format!("output_tokens = 20\n{extra}"),
            )
    };
    let plan = parse(&with("embeddings", "batch = 8")).unwrap();
    assert!(plan.points().iter().all(|p| p.output_tokens == 0));
    assert!(parse(&with("rerank", "batch = 4")).is_ok());
    assert_eq!(
        err(&with("completions", "batch = 8")),
        "experiments/t.toml:15:9: `workload.batch`: is for api = \"embeddings\" or \"rerank\"; this plan's api is \"completions\""
    );
    assert_eq!(
        err(&with("embeddings", "batch = 0")),
        "experiments/t.toml:15:9: `workload.batch`: must be at least 1"
    );
    let swept = with("embeddings", "").replace(
        "input_tokens = [100, 200, 300]",
        "input_tokens = [100, 200, 300]\noutput_tokens = [10, 20]",
    );
    assert_eq!(
        err(&swept),
        "experiments/t.toml:20:17: `sweep.output_tokens`: api = \"embeddings\" answers once, without generated text: drop the output sweep"
    );
}
