//! The history's step search on synthetic runs: no marks on runs of one
//! distribution, a 10% step found at the run it begins, the false-mark rate
//! and the power measured over many seeded histories, and histories built
//! from analysed runs keep workloads apart and leave out incomplete runs.

use qexp_analysis::history::{history, steps, HistoryInput, StepOptions};
use qexp_analysis::stats::Rng;
use qexp_analysis::{Metric, PointSummary, RunAnalysis, TrialMetrics};
use qexp_plan::Point;
use qexp_testkit::ManifestFixture;
use std::path::PathBuf;

/// A standard normal draw (Box–Muller).
fn normal(rng: &mut Rng) -> f64 {
    let u = rng.next_f64().max(1e-300);
    let v = rng.next_f64();
    (-2.0 * u.ln()).sqrt() * (2.0 * std::f64::consts::PI * v).cos()
}

/// Trial values of one run: `trials` draws around `level` with a 3% CV,
/// shifted together by a 1% run-to-run term (a server restart, a new day).
fn trials(rng: &mut Rng, level: f64, trials: usize) -> Vec<f64> {
    let run = 1.0 + 0.01 * normal(rng);
    (0..trials)
        .map(|_| level * run * (1.0 + 0.03 * normal(rng)))
        .collect()
}

fn median(v: &[f64]) -> f64 {
    qexp_analysis::stats::median(v).unwrap_or(f64::NAN)
}

/// Run medians of a history of `n` runs of 3 trials, the level multiplied
/// by `step` from run `at` (0-based) on.
fn history_values(rng: &mut Rng, n: usize, at: usize, step: f64) -> Vec<f64> {
    (0..n)
        .map(|i| {
            let level = if i >= at { 100.0 * step } else { 100.0 };
            median(&trials(rng, level, 3))
        })
        .collect()
}

#[test]
fn ten_runs_of_one_distribution_mark_nothing() {
    let mut rng = Rng::new(18);
    let v = history_values(&mut rng, 10, 10, 1.0);
    assert!(steps(&v, &StepOptions::default()).is_empty(), "{v:?}");
}

#[test]
fn a_ten_percent_step_after_run_five_is_marked_at_run_six() {
    let mut rng = Rng::new(18);
    let v = history_values(&mut rng, 10, 5, 1.10);
    let s = steps(&v, &StepOptions::default());
    assert_eq!(s.len(), 1, "{v:?}: {s:?}");
    // Index 5 is the sixth run.
    assert_eq!(s[0].index, 5);
    assert!((s[0].relative - 0.10).abs() < 0.03, "{s:?}");
}

/// Measured over 4,000 seeded histories of 10 runs (3 trials each, 3% trial
/// CV, 1% run-to-run noise): the share of histories with any mark when
/// nothing changed (false marks), and the share in which a 10% step after
/// run 5 is marked at run 6 and nowhere else (power). Printed for the
/// docs; `cargo test -- --nocapture history_error_rates` shows them.
#[test]
fn history_error_rates() {
    let opts = StepOptions::default();
    let n = 4000;
    let mut rng = Rng::new(2026);
    let false_marks = (0..n)
        .filter(|_| !steps(&history_values(&mut rng, 10, 10, 1.0), &opts).is_empty())
        .count();
    let found = (0..n)
        .filter(|_| {
            let s = steps(&history_values(&mut rng, 10, 5, 1.10), &opts);
            s.len() == 1 && s[0].index == 5
        })
        .count();
    let (fm, power) = (false_marks as f64 / n as f64, found as f64 / n as f64);
    eprintln!("history: false-mark rate {fm:.4} ({false_marks}/{n}), power at a 10% step {power:.4} ({found}/{n})");
    // The bound: alpha (0.005) is a Bonferroni bound per point, so the rate
    // must stay under it, with room for sampling error (2 × alpha).
    assert!(fm <= 2.0 * opts.alpha, "false-mark rate {fm}");
    // Measured 0.77 with these seeds: Bonferroni over the splits is
    // conservative; a weaker step, or more noise, is found less often.
    assert!(power >= 0.7, "power {power}");
}

fn point(id: u32, c: u32) -> Point {
    Point {
        id,
        concurrency: c,
        input_tokens: 1000,
        output_tokens: 500,
        requests: 2 * c,
        warmup: 1,
        open_loop: None,
        deployment: None,
        images: None,
    }
}

/// A complete run started `day` days after the first, TTFT `ttft` in each of 3 trials.
fn run(day: u32, workload: &str, status: &str, ttft: [f64; 2]) -> RunAnalysis {
    let points = [point(0, 1), point(1, 64)];
    let summaries = points
        .iter()
        .zip(ttft)
        .map(|(p, t)| {
            let trials = (1..=3)
                .map(|k| TrialMetrics {
                    trial: k,
                    point_id: p.id,
                    requests: p.requests,
                    ttft_s: t * (1.0 + 0.002 * f64::from(k)),
                    ..TrialMetrics::default()
                })
                .collect();
            PointSummary::new(p.clone(), trials)
        })
        .collect();
    let id = format!("202612{:02}T100000Z-{day:06}", day + 1);
    let m = ManifestFixture::new("throughput", &points, 3)
        .with("run_id", &id)
        .with("started_at", format!("2026-12-{:02}T10:00:00Z", day + 1))
        .with("status", status)
        .with("comparability.workload_hash", workload)
        .build();
    RunAnalysis::new(
        PathBuf::from(format!("results/throughput/{id}")),
        m,
        summaries,
        Vec::new(),
        Vec::new(),
        None,
    )
}

#[test]
fn histories_keep_workloads_apart_and_mark_the_run_where_a_point_stepped() {
    let mut runs: Vec<RunAnalysis> = (0..10)
        .map(|d| {
            // TTFT at c=64 gets 20% worse from the sixth run on; c=1 stays.
            let wobble = [1.0, 1.01, 0.99, 1.005, 0.995][d as usize % 5];
            let slow = if d >= 5 { 1.2 } else { 1.0 };
            run(d, "aa", "complete", [0.3 * wobble, 42.0 * slow * wobble])
        })
        .collect();
    // Another workload in between, much faster: never joined to the first.
    runs.push(run(3, "bb", "complete", [0.1, 1.0]));
    runs.push(run(4, "bb", "complete", [0.1, 1.1]));
    // An interrupted run would look like a step: left out.
    runs.push(run(11, "aa", "interrupted", [3.0, 400.0]));
    // Any order in, time order out.
    runs.reverse();
    let inputs: Vec<HistoryInput> = runs.iter().map(HistoryInput::of).collect();
    let refs: Vec<&HistoryInput> = inputs.iter().collect();
    let h = history(&refs, Metric::TtftS, &StepOptions::default());
    assert_eq!(h.len(), 2);
    let aa = h
        .iter()
        .find(|w| w.workload_hash == "aa")
        .expect("workload aa");
    let bb = h
        .iter()
        .find(|w| w.workload_hash == "bb")
        .expect("workload bb");
    assert_eq!(aa.runs.len(), 10);
    assert_eq!(bb.runs.len(), 2);
    assert!(aa
        .runs
        .windows(2)
        .all(|w| w[0].started_unix_s < w[1].started_unix_s));
    assert_eq!(aa.points.len(), 2);
    let c1 = &aa.points[0];
    let c64 = &aa.points[1];
    assert_eq!(c1.point.concurrency, 1);
    assert!(c1.values.iter().all(|v| v.step.is_none()));
    let marked: Vec<usize> = c64
        .values
        .iter()
        .filter(|v| v.step.is_some())
        .map(|v| v.run)
        .collect();
    assert_eq!(marked, vec![5]);
    assert_eq!(aa.runs[5].run_id, "20261206T100000Z-000005");
    assert_eq!(aa.marked_runs(), vec![5]);
    assert!(bb.marked_runs().is_empty());
}

/// `r` with every request at concurrency `c` failed in every trial: no
/// TTFT there, and a throughput of 0.
fn lose_point(r: RunAnalysis, c: u32) -> RunAnalysis {
    crate::support::with_point_failed(&r, c, |t| TrialMetrics {
        failures: t.requests,
        ttft_s: f64::NAN,
        agg_tok_s: 0.0,
        ..t.clone()
    })
}

/// A run that lost a point (every request failed there) is listed as having
/// lost it, for every metric, rather than left out of the point's history
/// without a word, or drawn at a throughput of 0.
#[test]
fn a_run_that_lost_a_point_is_listed_as_lost_there() {
    let runs: Vec<RunAnalysis> = (0..6)
        .map(|d| {
            let r = run(d, "aa", "complete", [0.3, 42.0]);
            if d == 3 {
                lose_point(r, 64)
            } else {
                r
            }
        })
        .collect();
    let inputs: Vec<HistoryInput> = runs.iter().map(HistoryInput::of).collect();
    let refs: Vec<&HistoryInput> = inputs.iter().collect();
    for metric in [Metric::TtftS, Metric::AggTokS] {
        let h = history(&refs, metric, &StepOptions::default());
        assert_eq!(h.len(), 1);
        let c64 = h[0]
            .points
            .iter()
            .find(|p| p.point.concurrency == 64)
            .expect("c=64");
        assert_eq!(c64.lost, vec![3], "{metric:?}");
        let with_values: Vec<usize> = c64.values.iter().map(|v| v.run).collect();
        assert_eq!(with_values, vec![0, 1, 2, 4, 5], "{metric:?}");
        let c1 = h[0]
            .points
            .iter()
            .find(|p| p.point.concurrency == 1)
            .expect("c=1");
        assert!(c1.lost.is_empty());
    }
}
