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

/// Answers a model stopped: request `i` of a point answers 8, 16, … 64
/// tokens, cycling (the plan's cap is 64).
fn stopped(_: &SynthRun, _: u32, _: &Point, i: u32) -> u32 {
    8 * (1 + i % 8)
}

/// A run whose answers stop before the plan's length hands the model the
/// spread of their lengths, point by point, to replay; a run of answers
/// forced to length hands none (every answer is the plan's length).
#[test]
fn answers_that_stop_early_reach_the_model_as_their_spread() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let forced = SynthRun::new(PLAN, "20261201T100000Z-aaaaaa", "2026-12-01T10:00:00Z")
        .write(&tmp.path().join("a"));
    let a = qexp_analysis::analyze(&forced).expect("analysable");
    let rows = qexp_analysis::run_observations(&a, 0, None).rows;
    assert!(!rows.is_empty() && rows.iter().all(|r| r.answers.is_none()));
    let unforced = SynthRun {
        answer: stopped,
        ..SynthRun::new(PLAN, "20261202T100000Z-bbbbbb", "2026-12-02T10:00:00Z")
    }
    .write(&tmp.path().join("b"));
    let a = qexp_analysis::analyze(&unforced).expect("analysable");
    let rows = qexp_analysis::run_observations(&a, 0, None).rows;
    assert!(!rows.is_empty());
    for r in &rows {
        let s = r.answers.expect("a spread").0;
        assert!(s.windows(2).all(|w| w[0] <= w[1]), "{}: {s:?}", r.label);
        assert!(
            s[0] >= 8.0 && s[7] <= 64.0 && s[7] - s[0] >= 8.0,
            "{}: {s:?}",
            r.label
        );
        assert!(
            r.output_tokens >= s[0] && r.output_tokens <= s[7],
            "{}",
            r.label
        );
        // The replay's answers are read off the spread, into both its tails.
        let load = r.load();
        let n = load.requests as usize;
        let lengths: Vec<f64> = (0..n).map(|i| load.answer_tokens(i, n)).collect();
        assert!(
            lengths
                .iter()
                .all(|&x| x >= s[0].floor() && x <= s[7].ceil()),
            "{}: {lengths:?}",
            r.label
        );
        let (lo, hi) = (
            lengths.iter().fold(f64::MAX, |a, &b| a.min(b)),
            lengths.iter().fold(0.0, |a: f64, &b| a.max(b)),
        );
        assert!(
            lo <= s[1] && hi >= s[6],
            "{}: {lengths:?} against {s:?}",
            r.label
        );
        let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
        assert!(
            (mean(&lengths) / mean(&s) - 1.0).abs() < 0.05,
            "{}: {lengths:?} against {s:?}",
            r.label
        );
    }
}
