//! Open-loop plan keys: `sweep.rate`, `[load]` (arrival, burstiness,
//! max_in_flight, duration_s, stages, trace) and `[slo]`.

use qexp_plan::{Arrival, Plan, PlanError};
use std::path::Path;

const HEAD: &str = r#"
[experiment]
name = "t"
version = 1

[target]
base_url = "sim:tiny"

[workload]
input_tokens = 100
output_tokens = 20
"#;

fn parse(tail: &str) -> Result<Plan, PlanError> {
    Plan::parse(Path::new("experiments/t.toml"), &format!("{HEAD}{tail}"))
}

fn err(tail: &str) -> String {
    parse(tail)
        .expect_err("plan should be rejected")
        .to_string()
}

#[test]
fn rate_sweep_makes_one_point_per_rate() {
    let p = parse(
        "[sweep]\nrate = [2, 10.5]\n[load]\narrival = \"gamma\"\nburstiness = 0.5\nmax_in_flight = 64\nduration_s = 10\n",
    )
    .unwrap();
    let pts = p.points();
    assert_eq!(pts.len(), 2);
    assert_eq!(pts[0].requests, 20);
    assert_eq!(pts[1].requests, 105);
    assert_eq!(pts[1].concurrency, 64);
    let ol = pts[1].open_loop.as_ref().unwrap();
    assert_eq!(ol.arrival, Arrival::Gamma);
    assert_eq!(ol.burstiness, 0.5);
    assert_eq!(ol.max_in_flight, Some(64));
    assert_eq!(pts[1].rate(), Some(10.5));
    assert_eq!(pts[1].label(), "rate=10.5/s in=100 out=20");
    // Without duration_s, run.requests counts: "Nx" is N seconds' worth.
    let p = parse("[sweep]\nrate = [4]\n[run]\nrequests = \"3x\"\n").unwrap();
    assert_eq!(p.points()[0].requests, 12);
    let p = parse("[sweep]\nrate = [4]\n[run]\nrequests = 7\n").unwrap();
    assert_eq!(p.points()[0].requests, 7);
}

#[test]
fn stages_make_one_point() {
    let p = parse(
        "[[load.stages]]\nrate = 5\nduration_s = 4\n[[load.stages]]\nrate = 50\nrequests = 100\n",
    )
    .unwrap();
    let pts = p.points();
    assert_eq!(pts.len(), 1);
    assert_eq!(pts[0].requests, 120);
    let ol = pts[0].open_loop.as_ref().unwrap();
    assert_eq!(ol.stages.len(), 2);
    assert_eq!(ol.stages[0].requests, 20);
    // 120 requests over 4 s + 2 s.
    assert!((ol.rate() - 20.0).abs() < 1e-9);
    assert_eq!(pts[0].label(), "2 stages in=100 out=20");
}

#[test]
fn closed_loop_plans_are_unchanged() {
    let p = parse("[sweep]\nconcurrency = [1, 8]\n").unwrap();
    assert!(p
        .points()
        .iter()
        .all(|p| p.open_loop.is_none() && p.rate().is_none()));
    assert_eq!(p.points()[1].label(), "c=8 in=100 out=20");
}

#[test]
fn trace_is_read_relative_to_the_plan() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("t.csv"),
        "offset_s,input_tokens,output_tokens\n0,50,10\n1.0,150,30\n2.0,100,5\n",
    )
    .unwrap();
    let text = format!("{HEAD}[load.trace]\npath = \"t.csv\"\nspeed = 2\n");
    let p = Plan::parse(&dir.path().join("plan.toml"), &text).unwrap();
    let pts = p.points();
    assert_eq!(pts.len(), 1);
    assert_eq!(pts[0].requests, 3);
    assert_eq!(pts[0].input_tokens, 150);
    assert_eq!(pts[0].output_tokens, 30);
    let t = pts[0].open_loop.as_ref().unwrap().trace.as_ref().unwrap();
    assert_eq!(t.span_s, 1.0);
    assert_eq!(t.sha256.len(), 64);
    // A broken trace is reported at the plan's key, naming the trace's line.
    std::fs::write(
        dir.path().join("t.csv"),
        "offset_s,input_tokens,output_tokens\n0,50\n",
    )
    .unwrap();
    let e = Plan::parse(&dir.path().join("plan.toml"), &text)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("plan.toml:") && e.contains("load.trace.path") && e.contains("t.csv:2"),
        "{e}"
    );
}

#[test]
fn bad_open_loop_keys_name_their_place() {
    insta::assert_snapshot!(
        "rate_with_concurrency",
        err("[sweep]\nconcurrency = [1]\nrate = [5]\n")
    );
    insta::assert_snapshot!(
        "rate_and_stages",
        err("[sweep]\nrate = [5]\n[[load.stages]]\nrate = 1\nrequests = 3\n")
    );
    insta::assert_snapshot!("zero_rate", err("[sweep]\nrate = [5, 0]\n"));
    insta::assert_snapshot!(
        "burstiness_without_gamma",
        err("[sweep]\nrate = [5]\n[load]\nburstiness = 0.5\n")
    );
    insta::assert_snapshot!("cap_without_open_loop", err("[load]\nmax_in_flight = 4\n"));
    insta::assert_snapshot!("stage_without_length", err("[[load.stages]]\nrate = 5\n"));
    insta::assert_snapshot!(
        "unknown_load_key",
        err("[sweep]\nrate = [5]\n[load]\nburst = 2\n")
    );
    insta::assert_snapshot!("missing_trace", err("[load.trace]\npath = \"nope.csv\"\n"));
    insta::assert_snapshot!("slo_without_threshold", err("[slo]\npercentile = 0.9\n"));
}

#[test]
fn slo_section_parses() {
    let p = parse("[slo]\nttft_s = 0.5\ntpot_s = 0.05\npercentile = 0.99\n").unwrap();
    let slo = p.file.slo.unwrap().into_inner();
    assert_eq!(slo.ttft_s, Some(0.5));
    assert_eq!(slo.e2e_s, None);
    assert_eq!(slo.percentile, 0.99);
}
