//! A run measured against a model fitted on another run of the same plan:
//! a point the model cannot explain (here a planted TTFT cliff) is flagged
//! outside its interval, and only where it was planted.

use qexp_plan::Point;
use qexp_testkit::{founding_like, SynthRun};

const PLAN: &str = r#"[experiment]
name = "model-check"
version = 1

[target]
base_url = "http://127.0.0.1:1"

[workload]
input_tokens = 1000
output_tokens = 64

[sweep]
concurrency = [1, 2, 4]
input_tokens = [1000, 4000, 8000]

[run]
requests = "4x"
trials = 3
"#;

/// The founding-like timing with TTFT tripled at c=2, input 4000.
fn with_cliff(run: &SynthRun, trial: u32, p: &Point, i: u32) -> (f64, f64) {
    let (ttft, decode) = founding_like(run, trial, p, i);
    let cliff = p.concurrency == 2 && p.input_tokens == 4000;
    (if cliff { 3.0 * ttft } else { ttft }, decode)
}

fn unexplained_ttft(run: &std::path::Path, model: &qexp_model::ModelFile) -> Vec<String> {
    let a = qexp_analysis::analyze(run).expect("analysable");
    let checks = qexp_analysis::check_against_model(&a, model);
    assert!(!checks.is_empty());
    checks
        .iter()
        .filter(|c| c.metric == qexp_model::ModelMetric::TtftS && c.unexplained())
        .map(|c| c.point.clone())
        .collect()
}

#[test]
fn a_planted_cliff_is_flagged_outside_the_model_and_only_there() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let clean = SynthRun::new(PLAN, "20261201T100000Z-aaaaaa", "2026-12-01T10:00:00Z")
        .write(&tmp.path().join("a"));
    let a = qexp_analysis::analyze(&clean).expect("analysable");
    let obs = qexp_analysis::run_observations(&a, 0, None);
    let model = qexp_model::fit(&obs.rows, &qexp_model::FitOptions::default()).expect("fit");
    assert_eq!(unexplained_ttft(&clean, &model), Vec::<String>::new());
    let cliff = SynthRun {
        timing: with_cliff,
        ..SynthRun::new(PLAN, "20261202T100000Z-bbbbbb", "2026-12-02T10:00:00Z")
    }
    .write(&tmp.path().join("b"));
    let flagged = unexplained_ttft(&cliff, &model);
    assert_eq!(flagged.len(), 1, "{flagged:?}");
    assert!(
        flagged[0].starts_with("c=2 ") && flagged[0].contains("in=4000"),
        "{flagged:?}"
    );
}
