//! Answers that stop early, fitted and predicted: the `known-mixed`
//! profile ending 60% of its answers before the plan's 32 tokens
//! (`stop=0.6`, requests without `ignore_eos`), run over real loopback HTTP
//! at 1, 2 and 4 users and two prompt lengths, fitted on 1 and 2 users, and
//! 4 (beyond the profile's 3 slots) predicted, the answers replayed at
//! their own lengths. What holds run after run (docs/model.md) is TTFT:
//! within 25% and within half the error of the same runs read as answers
//! all of the median length (the model before it kept their spread,
//! 42-55% off). TTFT p90 is held to 25% and E2E to 30%. TPOT is printed,
//! not held: the spread does not predict it better than one length here
//! (11-36% off against 13-22%). The median over the two lengths, each
//! time; two attempts.

use qexp_model::{FitOptions, ModelFile, ModelMetric, Observation};

fn plan() -> String {
    r#"
[experiment]
name = "known-stops"
version = 1

[target]
base_url = "sim:known-mixed?stop=0.6"
api = "chat"

[workload]
input_tokens = 1000
output_tokens = 32

[sweep]
concurrency = [1, 2, 4]
input_tokens = [1000, 4000]

[run]
requests = "4x"
warmup_requests = 1
trials = 2
seed = 13
"#
    .to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn answers_that_stop_early_are_predicted_at_their_own_lengths() {
    let _serial = crate::common::heavy().await;
    let mut tries = Vec::new();
    for attempt in 1..=ATTEMPTS {
        let misses = attempt_once().await;
        if misses.is_empty() {
            return;
        }
        eprintln!("answers: attempt {attempt} missed: {misses:?}");
        tries.push(misses);
    }
    panic!("held out at 4 users, every attempt: {tries:?}");
}

/// Runs of the plan the test may take: a stall of the 2-core host delays
/// some requests of a run; a model that is wrong misses on every run.
const ATTEMPTS: usize = 2;

/// One run, fitted both ways: what the kept reading misses.
async fn attempt_once() -> Vec<String> {
    let tmp = tempfile::tempdir().unwrap();
    let dir = super::run_plan(tmp.path(), &plan()).await;
    let a = qexp_analysis::analyze(&dir).unwrap();
    let rows = qexp_analysis::run_observations(&a, 0, None).rows;
    // A (trial, point) of 4 answers may by chance have none cut short.
    let spread = rows.iter().filter(|r| r.answers.is_some()).count();
    assert!(
        2 * spread >= rows.len(),
        "{spread} of {} (trial, point)s spread",
        rows.len()
    );
    let (grid, held): (Vec<Observation>, Vec<Observation>) =
        rows.iter().cloned().partition(|r| r.concurrency <= 2);
    let one_length = |v: &[Observation]| -> Vec<Observation> {
        v.iter()
            .map(|r| Observation {
                answers: None,
                ..r.clone()
            })
            .collect()
    };
    let kept = qexp_model::fit(&grid, &FitOptions::default()).unwrap();
    assert!(
        kept.answers.is_some(),
        "the model file keeps the answers' shape"
    );
    let kept = errors("kept", &kept, &held);
    let before = qexp_model::fit(&one_length(&grid), &FitOptions::default()).unwrap();
    let before = errors("one length", &before, &one_length(&held));
    let mut misses = Vec::new();
    if kept[&ModelMetric::TtftS] >= 0.5 * before[&ModelMetric::TtftS] {
        misses.push("TTFT not within half the error at one length".to_owned());
    }
    for (m, bound) in [
        (ModelMetric::TtftS, Some(0.25)),
        (ModelMetric::TtftP90S, Some(0.25)),
        (ModelMetric::TpotS, None),
        (ModelMetric::E2eS, Some(0.30)),
    ] {
        let (e, b) = (kept[&m], before[&m]);
        eprintln!(
            "answers: {} median |error| {:.1}% kept, {:.1}% at one length",
            m.name(),
            100.0 * e,
            100.0 * b
        );
        if let Some(bound) = bound.filter(|b| e > *b) {
            misses.push(format!(
                "{} {:.1}% (bound {:.0}%)",
                m.name(),
                100.0 * e,
                100.0 * bound
            ));
        }
    }
    misses
}

/// The median |error| of each metric at the points of `held`, predicted
/// by `model`; every prediction printed.
fn errors(
    name: &str,
    model: &ModelFile,
    held: &[Observation],
) -> std::collections::BTreeMap<ModelMetric, f64> {
    let checks = qexp_model::check(model, held);
    for c in &checks {
        eprintln!(
            "answers {name}: {} {} measured {:.4} predicted {:.4} ({:+.1}%)",
            c.point,
            c.metric.name(),
            c.measured,
            c.predicted,
            100.0 * c.error()
        );
    }
    qexp_model::summarize(&checks)
        .into_iter()
        .map(|s| (s.metric, s.median_abs_error))
        .collect()
}
