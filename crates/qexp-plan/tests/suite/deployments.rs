//! `[[deployment]]` tables: what they expand into, and every mistake told
//! at its file:line:col with the key.

use qexp_plan::{Order, Plan, PlanError, PortSpec, Restart};
use std::path::Path;

const BASE: &str = r#"
[experiment]
name = "d"
version = 1

[target]
model = "m"

[workload]
input_tokens = 100
output_tokens = 20

[sweep]
concurrency = [1, 4]

[run]
trials = 3
"#;

const TWO: &str = r#"
[[deployment]]
name = "mtp"
command = ["vllm", "serve", "{model}", "--port", "{port}"]
env = { HF_HUB_OFFLINE = "1" }
ready_path = "/health"

[[deployment]]
name = "prod"
base_url = "http://127.0.0.1:9000"
"#;

fn parse(text: &str) -> Result<Plan, PlanError> {
    Plan::parse(Path::new("experiments/d.toml"), text)
}

fn err(text: &str) -> String {
    parse(text).expect_err("rejected").to_string()
}

#[test]
fn every_point_runs_once_per_deployment() {
    let plan = parse(&format!("{BASE}{TWO}")).unwrap();
    let points = plan.points();
    assert_eq!(points.len(), 4);
    let got: Vec<(u32, Option<&str>, u32)> = points
        .iter()
        .map(|p| (p.id, p.deployment.as_deref(), p.concurrency))
        .collect();
    assert_eq!(
        got,
        [
            (0, Some("mtp"), 1),
            (1, Some("mtp"), 4),
            (2, Some("prod"), 1),
            (3, Some("prod"), 4)
        ]
    );
    assert_eq!(points[1].label(), "mtp: c=4 in=100 out=20");
    assert_eq!(plan.baseline(), Some("mtp"));
    assert_eq!(
        (plan.order(), plan.restart()),
        (Order::Interleaved, Restart::PerBlock)
    );
    let d = &plan.deployments()[0];
    assert!(d.is_launched() && !plan.deployments()[1].is_launched());
    assert_eq!(d.port.as_ref().map(|p| p.get_ref().clone()), None);
    assert_eq!(d.ready_timeout_s.get_ref(), &900.0);
}

#[test]
fn a_plan_without_deployments_keeps_its_points() {
    let text = BASE.replace("model = \"m\"", "base_url = \"sim:exact\"");
    let plan = parse(&text).unwrap();
    assert!(plan.deployments().is_empty() && plan.baseline().is_none());
    assert!(plan.points().iter().all(|p| p.deployment.is_none()));
    // The manifest's point list, and so old runs' resume check, is unchanged.
    let json = serde_json::to_string(&plan.points()[0]).unwrap();
    assert!(!json.contains("deployment"), "{json}");
}

#[test]
fn the_hash_follows_the_definition_but_not_the_labels() {
    let a = parse(&format!("{BASE}{TWO}")).unwrap();
    let labelled = TWO.replace(
        "ready_path = \"/health\"",
        "ready_path = \"/health\"\nlabels = { x = \"y\" }",
    );
    let b = parse(&format!("{BASE}{labelled}")).unwrap();
    assert_eq!(a.deployments()[0].hash(), b.deployments()[0].hash());
    let changed = TWO.replace("--port", "--listen-port");
    let c = parse(&format!("{BASE}{changed}")).unwrap();
    assert_ne!(a.deployments()[0].hash(), c.deployments()[0].hash());
    assert_eq!(a.deployments()[1].hash(), c.deployments()[1].hash());
}

#[test]
fn order_restart_port_and_baseline_are_read() {
    let text = format!(
        "{}\n{}",
        BASE.replace(
            "trials = 3",
            "trials = 3\norder = \"blocked\"\nrestart = \"once\""
        ),
        TWO.replace("ready_path", "port = 8123\nready_path")
    ) + "\n[analysis]\nbaseline = \"prod\"\n";
    let plan = parse(&text).unwrap();
    assert_eq!(
        (plan.order(), plan.restart()),
        (Order::Blocked, Restart::Once)
    );
    assert_eq!(plan.baseline(), Some("prod"));
    let port = plan.deployments()[0]
        .port
        .as_ref()
        .map(|p| p.get_ref().clone());
    assert_eq!(port, Some(PortSpec::Fixed(8123)));
}

#[test]
fn mistakes_are_located() {
    let with = |d: &str| format!("{BASE}{d}");
    let cases = [
        (
            with("[[deployment]]\nname = \"a\"\n"),
            "experiments/d.toml:19:8: `deployment[0].command`: give `command` (an argv that starts the server) or `base_url` (a server already running)",
        ),
        (
            with("[[deployment]]\nname = \"a\"\ncommand = [\"x\"]\nbase_url = \"http://h:1\"\n"),
            "experiments/d.toml:21:12: `deployment[0].base_url`: give either `command` (qexp launches the server) or `base_url` (it is already running), not both",
        ),
        (
            with("[[deployment]]\nname = \"a\"\ncommand = []\n"),
            "experiments/d.toml:20:11: `deployment[0].command`: the argv is empty; give the program and its arguments",
        ),
        (
            with("[[deployment]]\nname = \"a b\"\ncommand = [\"x\"]\n"),
            "experiments/d.toml:19:8: `deployment[0].name`: use only letters, digits, '-', '_' and '.' (it names log files)",
        ),
        (
            with("[[deployment]]\nname = \"a\"\ncommand = [\"x\"]\n[[deployment]]\nname = \"a\"\nbase_url = \"http://h:1\"\n"),
            "experiments/d.toml:22:8: `deployment[1].name`: `a` names two deployments; names must differ",
        ),
        (
            with("[[deployment]]\nname = \"a\"\ncommand = [\"x\"]\nport = \"any\"\n"),
            "experiments/d.toml:21:8: `deployment[0].port`: expected a port from 1 to 65535, or \"auto\"",
        ),
        (
            with("[[deployment]]\nname = \"a\"\ncommand = [\"x\"]\nready_timeout_s = 0\n"),
            "experiments/d.toml:21:19: `deployment[0].ready_timeout_s`: must be a positive number of seconds, at most a week",
        ),
        (
            with("[[deployment]]\nname = \"a\"\ncommand = [\"x\"]\nstop_grace_s = 1e20\n"),
            "experiments/d.toml:21:16: `deployment[0].stop_grace_s`: must be a number of seconds, 0 or more, at most a week",
        ),
        (
            with("[[deployment]]\nname = \"a\"\ncommand = [\"x\"]\nreadiness = \"/h\"\n"),
            "experiments/d.toml:21:1: `deployment.readiness`: unknown field `readiness`, expected one of `name`, `command`",
        ),
        (
            with("[[deployment]]\nname = \"a\"\ncommand = [\"x\"]\n[analysis]\nbaseline = \"b\"\n"),
            "experiments/d.toml:22:12: `analysis.baseline`: no deployment is named `b`; the plan has a",
        ),
        (
            BASE.replace("trials = 3", "trials = 3\norder = \"blocked\""),
            "experiments/d.toml:18:9: `run.order`: needs [[deployment]] tables to order or restart",
        ),
        (
            BASE.replace("model = \"m\"", "model = \"m\"\nbase_url = \"http://h:1\"") + TWO,
            "experiments/d.toml:8:12: `target.base_url`: a plan with [[deployment]] tables takes its servers from them; remove target.base_url",
        ),
    ];
    for (text, want) in cases {
        let got = err(&text);
        assert!(
            got.starts_with(want) || got == want,
            "\n got: {got}\nwant: {want}"
        );
    }
}

#[test]
fn a_plan_without_a_server_takes_it_from_target_or_is_refused() {
    let plan = parse(BASE).expect("a plan may leave its server to --target");
    assert_eq!(plan.target(Some("sim:fast")).unwrap(), "sim:fast");
    assert_eq!(
        plan.target(None).unwrap_err().to_string(),
        "experiments/d.toml:1:1: `target.base_url`: missing: give the server's http://host:port \
         (or sim:<profile>) here or with --target URL, or [[deployment]] tables"
    );
    let named =
        parse(&BASE.replace("model = \"m\"", "model = \"m\"\nbase_url = \"sim:exact\"")).unwrap();
    assert_eq!(named.target(None).unwrap(), "sim:exact");
    assert_eq!(named.target(Some("http://h:1")).unwrap(), "http://h:1");
    // Without a [target] table at all: its defaults, as an empty table gives them.
    let bare = parse(&BASE.replace("[target]\nmodel = \"m\"\n", "")).unwrap();
    let empty = parse(&BASE.replace("model = \"m\"\n", "")).unwrap();
    assert!(bare.target(None).is_err());
    assert_eq!(bare.target(Some("sim:fast")).unwrap(), "sim:fast");
    assert_eq!(
        format!("{:?}", bare.file.target),
        format!("{:?}", empty.file.target)
    );
}

#[test]
fn the_shipped_deployment_plan_parses() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../experiments/mtp.toml");
    let plan = Plan::load(&path).unwrap();
    let names: Vec<&str> = plan.deployments().iter().map(|d| d.name()).collect();
    assert_eq!(names, ["mtp", "no-mtp"]);
    assert_eq!(plan.baseline(), Some("no-mtp"));
    assert_eq!(plan.points().len(), 6);
}

/// A credential written into the plan would be stored with every run (the
/// manifest keeps the plan's text): refused, with where it belongs instead.
#[test]
fn a_credential_in_the_plan_is_refused_and_told_where_it_goes() {
    let with = |d: &str| format!("{BASE}{d}");
    let cases = [
        (
            with("[[deployment]]\nname = \"a\"\ncommand = [\"x\"]\nenv = { HF_TOKEN = \"hf_abc\" }\n"),
            "experiments/d.toml:19:8: `deployment[0].env.HF_TOKEN`: holds a credential: the plan's text is stored with every run",
        ),
        (
            with("[[deployment]]\nname = \"a\"\ncommand = [\"vllm\", \"--api-key\", \"sk-1\"]\n"),
            "experiments/d.toml:20:11: `deployment[0].command`: the value of `--api-key` is a credential; write it as {api_key}: the plan's text is stored with every run",
        ),
        (
            with("[[deployment]]\nname = \"a\"\nbase_url = \"https://me:sk-1@h:1\"\n"),
            "experiments/d.toml:20:12: `deployment[0].base_url`: a user or password in the URL: the plan's text is stored with every run",
        ),
        (
            format!(
                "{}\n[[deployment]]\nname = \"a\"\ncommand = [\"x\"]\n",
                BASE.replace("model = \"m\"", "model = \"m\"\nextra_body = { kw = { api_key = \"sk-1\" } }")
            ),
            "`target.extra_body.kw.api_key`: holds a credential: the plan's text is stored with every run",
        ),
    ];
    for (text, want) in cases {
        let got = err(&text);
        assert!(got.contains(want), "\n got: {got}\nwant: {want}");
        assert!(
            got.contains("api_key_env") && got.contains("HF_TOKEN"),
            "{got}"
        );
        for secret in ["hf_abc", "sk-1"] {
            assert!(!got.contains(secret), "the error repeats the key: {got}");
        }
    }
    // What a credential's name may hold: the run's key through its
    // placeholder, or nothing; and names that only look alike.
    let fine = with(
        "[[deployment]]\nname = \"a\"\ncommand = [\"x\"]\n\
         env = { VLLM_API_KEY = \"{api_key}\", HF_TOKEN = \"\", TOKENIZERS_PARALLELISM = \"false\" }\n",
    );
    parse(&fine).expect("accepted");
}
