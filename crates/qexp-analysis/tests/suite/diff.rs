//! `qexp diff` on synthetic runs whose truth is known: a 10% throughput gain
//! over 5 trials is found with an interval around 1.10; identical
//! distributions over a 20-point grid give no better/worse verdict (Holm's
//! correction absorbing the raw p-values below alpha); a 1% change is never
//! better/worse, and is `=` when certain; the threshold comes from the plan
//! or the option; differing workloads are refused by key unless ignored.

use qexp_analysis::anomaly::ThresholdSource;
use qexp_analysis::diff::{DiffWarning, MinChangeSource, Side, Untested, Verdict};
use qexp_analysis::stats::Rng;
use qexp_analysis::{
    compare_deployments, diff, DiffError, DiffMetric, DiffOptions, PointSummary, RunAnalysis,
    TrialMetrics,
};
use qexp_plan::Point;
use qexp_testkit::{ManifestFixture, PlanFixture};
use serde_json::json;
use std::collections::BTreeMap;

/// Baseline per-trial values of a point at concurrency `c`.
fn base(c: u32) -> (f64, f64, f64, f64, f64) {
    let c = f64::from(c);
    // agg, decode, ttft, e2e, itl_p99
    (
        70.0 * c.min(9.0),
        73.0 - c,
        0.3 + 0.1 * c,
        7.0 + 0.2 * c,
        0.06,
    )
}

/// A trial whose throughputs are scaled by `speed` and latencies divided by it, each times `1 + noise()`.
fn trial(n: u32, c: u32, speed: f64, noise: &mut dyn FnMut() -> f64) -> TrialMetrics {
    let (agg, dec, ttft, e2e, itl) = base(c);
    TrialMetrics {
        trial: n,
        requests: 4 * c,
        agg_tok_s: agg * speed * (1.0 + noise()),
        decode_tok_s: dec * speed * (1.0 + noise()),
        ttft_s: ttft / speed * (1.0 + noise()),
        e2e_s: e2e / speed * (1.0 + noise()),
        itl_p99_s: itl / speed * (1.0 + noise()),
        // Unreported, so the token-count detector stays out of these tests.
        prompt_tokens: f64::NAN,
        ..TrialMetrics::default()
    }
}

/// A uniform noise source on `±width`.
fn uniform(seed: u64, width: f64) -> impl FnMut() -> f64 {
    let mut rng = Rng::new(seed);
    move || (rng.next_f64() * 2.0 - 1.0) * width
}

fn run(
    id: &str,
    concurrencies: &[u32],
    trials: u32,
    speed: f64,
    noise: &mut dyn FnMut() -> f64,
    workload: &[(&str, &str)],
) -> RunAnalysis {
    let points: Vec<PointSummary> = concurrencies
        .iter()
        .enumerate()
        .map(|(i, &c)| {
            let point = Point {
                id: i as u32,
                concurrency: c,
                input_tokens: 1000,
                output_tokens: 500,
                requests: 4 * c,
                warmup: 1,
                open_loop: None,
                deployment: None,
                images: None,
            };
            let t = (1..=trials)
                .map(|n| TrialMetrics {
                    point_id: point.id,
                    ..trial(n, c, speed, noise)
                })
                .collect();
            PointSummary::new(point, t)
        })
        .collect();
    let wl: BTreeMap<&str, &str> = workload.iter().copied().collect();
    let pts: Vec<&Point> = points.iter().map(|p| &p.point).collect();
    let manifest = ManifestFixture::new("synthetic", &[], trials)
        .with("run_id", id)
        .with("plan_path", "synthetic.toml")
        .with("points", pts)
        .with("point_order", Vec::<Vec<u32>>::new())
        .simulated(id, 0.05)
        .with("target.model", "m")
        .with("server", json!({}))
        .with(
            "comparability",
            json!({"workload": wl, "deployment": {"model": format!("sim-{id}")}, "workload_hash": "00"}),
        )
        .with("started_at", "2026-01-01T00:00:00Z")
        .with("status", "complete")
        .build();
    RunAnalysis::new(id.into(), manifest, points, Vec::new(), Vec::new(), None)
}

const WORKLOAD: [(&str, &str); 2] = [("output_tokens", "500"), ("prompt", "RandomWords")];

#[test]
fn ten_percent_faster_b_is_a_significant_improvement_with_an_interval_around_1_10() {
    let a = run("a", &[4], 5, 1.0, &mut uniform(1, 0.02), &WORKLOAD);
    let b = run("b", &[4], 5, 1.10, &mut uniform(2, 0.02), &WORKLOAD);
    let d = diff(&a, &b, &DiffOptions::default()).expect("comparable");
    assert_eq!(d.pairs.len(), 1);
    // Five metrics tested; failures are 0 everywhere, so not a test.
    assert_eq!((d.tests, d.equivalence_tests, d.all_equal), (5, 5, 1));
    // The plan text is empty, so the threshold is the plan default.
    assert_eq!(d.min_change, 0.02);
    for m in &d.pairs[0].metrics {
        if m.metric == DiffMetric::Failures {
            assert_eq!(m.untested, Some(Untested::AllEqual));
            assert_eq!(m.verdict, Verdict::NoChange);
            continue;
        }
        // Throughput up and latency down are both improvements.
        assert_eq!(m.verdict, Verdict::Better, "{m:?}");
        let want = if m.metric == DiffMetric::AggTokS || m.metric == DiffMetric::DecodeTokS {
            1.10
        } else {
            1.0 / 1.10
        };
        let (lo, hi) = m.ci.expect("interval");
        assert!(
            lo <= want && want <= hi,
            "{:?}: {lo}..{hi} misses {want}",
            m.metric
        );
        assert!(
            hi - lo < 0.1,
            "{:?}: interval {lo}..{hi} too wide",
            m.metric
        );
        let t = m.test.expect("tested");
        assert!(t.p_holm <= 0.05 && t.p_holm >= t.p, "{t:?}");
    }
    assert_eq!((d.tally.better, d.tally.worse), (4 + 1, 0));
    assert!(!d.has_regression());

    // The same runs the other way round: every improvement becomes a regression.
    let back = diff(&b, &a, &DiffOptions::default()).expect("comparable");
    assert_eq!((back.tally.better, back.tally.worse), (0, 5));
    assert!(back.has_regression());
}

#[test]
fn the_diff_is_deterministic() {
    let a = run("a", &[1, 4], 5, 1.0, &mut uniform(1, 0.05), &WORKLOAD);
    let b = run("b", &[1, 4], 5, 1.02, &mut uniform(2, 0.05), &WORKLOAD);
    let opts = DiffOptions::default();
    assert_eq!(diff(&a, &b, &opts), diff(&a, &b, &opts));
}

#[test]
fn identical_distributions_on_a_20_point_grid_give_no_significant_verdict() {
    let grid: Vec<u32> = (1..=20).collect();
    let a = run("a", &grid, 5, 1.0, &mut uniform(11, 0.05), &WORKLOAD);
    let b = run("b", &grid, 5, 1.0, &mut uniform(12, 0.05), &WORKLOAD);
    let d = diff(&a, &b, &DiffOptions::default()).expect("comparable");
    assert_eq!((d.pairs.len(), d.tests, d.all_equal), (20, 100, 20));
    let raw: Vec<f64> = d
        .pairs
        .iter()
        .flat_map(|p| &p.metrics)
        .filter_map(|m| m.test.map(|t| t.p))
        .collect();
    // Uncorrected, some of 100 tests of equal distributions fall below alpha ...
    let raw_hits = raw.iter().filter(|p| **p <= 0.05).count();
    assert!(raw_hits >= 2, "{raw_hits} raw p <= 0.05");
    // ... Holm's correction keeps every one of them from becoming a verdict.
    assert_eq!((d.tally.better, d.tally.worse), (0, 0));
    // ±5% noise over 5 trials cannot prove a change within ±2% either.
    assert_eq!(d.tally.no_change + d.tally.equivalent, 100 + 20);
    assert!(!d.has_regression());
}

#[test]
fn a_small_certain_change_is_equivalent_and_the_threshold_can_be_lowered() {
    // B is 1% faster everywhere, trial noise ±0.2%: certain, but under 2%.
    let a = run("a", &[4], 5, 1.0, &mut uniform(1, 0.002), &WORKLOAD);
    let b = run("b", &[4], 5, 1.01, &mut uniform(2, 0.002), &WORKLOAD);
    let d = diff(&a, &b, &DiffOptions::default()).expect("comparable");
    let verdicts: Vec<Verdict> = d.pairs[0].metrics.iter().map(|m| m.verdict).collect();
    assert_eq!(
        verdicts,
        [
            Verdict::Equivalent,
            Verdict::Equivalent,
            Verdict::Equivalent,
            Verdict::Equivalent,
            Verdict::Equivalent,
            Verdict::NoChange // failures: all zero
        ]
    );
    assert_eq!(d.tally.equivalent, 5);
    // With a 0.5% threshold the same 1% change is a verdict.
    let opts = DiffOptions {
        min_change: Some(0.005),
        ..DiffOptions::default()
    };
    let d = diff(&a, &b, &opts).expect("comparable");
    assert_eq!((d.tally.better, d.min_change), (5, 0.005));
    assert_eq!(d.min_change_source, MinChangeSource::Option);
    for bad in [0.0, 1.0, f64::NAN] {
        let opts = DiffOptions {
            min_change: Some(bad),
            ..DiffOptions::default()
        };
        assert!(matches!(
            diff(&a, &b, &opts),
            Err(DiffError::BadMinChange(_))
        ));
    }
}

#[test]
fn three_trials_with_a_twenty_percent_change_and_what_noisy_runs_would_need() {
    let a = run("a", &[4], 3, 1.0, &mut uniform(1, 0.02), &WORKLOAD);
    let b = run("b", &[4], 3, 1.2, &mut uniform(2, 0.02), &WORKLOAD);
    let d = diff(&a, &b, &DiffOptions::default()).expect("comparable");
    assert_eq!((d.tally.better, d.tally.worse), (5, 0));

    // ±15% noise, 3 trials, a 5% change: undecided, and a trial count is named.
    let a = run("a", &[4], 3, 1.0, &mut uniform(3, 0.15), &WORKLOAD);
    let b = run("b", &[4], 3, 1.05, &mut uniform(4, 0.15), &WORKLOAD);
    let one = DiffOptions {
        metrics: vec![DiffMetric::AggTokS],
        ..DiffOptions::default()
    };
    let d = diff(&a, &b, &one).expect("comparable");
    let m = &d.pairs[0].metrics[0];
    assert_eq!(m.verdict, Verdict::NoChange);
    let u = m.undecided.expect("undecided says what would decide");
    assert!(u.needed.is_some_and(|n| n > 3), "{u:?}");
}

#[test]
fn different_workloads_are_refused_by_key_unless_ignored() {
    let a = run("a", &[4], 3, 1.0, &mut uniform(1, 0.01), &WORKLOAD);
    let b = run(
        "b",
        &[4],
        3,
        1.0,
        &mut uniform(2, 0.01),
        &[("output_tokens", "200"), ("prompt", "RandomWords")],
    );
    let err = diff(&a, &b, &DiffOptions::default()).expect_err("refused");
    let DiffError::Incomparable { keys } = &err else {
        panic!("{err:?}")
    };
    assert_eq!(keys.len(), 1);
    assert_eq!(keys[0].key, "output_tokens");
    assert_eq!(
        err.to_string(),
        "the runs asked for different workloads, so their numbers are not comparable: \
         output_tokens (A: \"500\", B: \"200\"). To compare anyway, name the key with --ignore output_tokens"
    );

    let opts = DiffOptions {
        ignore: vec!["output_tokens".into(), "tokenizer".into()],
        ..DiffOptions::default()
    };
    let d = diff(&a, &b, &opts).expect("ignored");
    assert_eq!(d.workload.ignored.len(), 1);
    assert!(
        matches!(&d.warnings[0], DiffWarning::IgnoredWorkload { keys } if keys[0].key == "output_tokens")
    );
    assert!(d.warnings[0]
        .to_string()
        .contains("compared anyway because --ignore names it"));
    assert_eq!(
        d.warnings[1],
        DiffWarning::UnusedIgnore {
            key: "tokenizer".into(),
            known: false
        }
    );
}

#[test]
fn unpaired_points_are_listed() {
    let a = run("a", &[1, 4, 8], 3, 1.0, &mut uniform(1, 0.01), &WORKLOAD);
    let b = run("b", &[4, 8, 16], 3, 1.0, &mut uniform(2, 0.01), &WORKLOAD);
    let d = diff(&a, &b, &DiffOptions::default()).expect("comparable");
    let paired: Vec<u32> = d.pairs.iter().map(|p| p.point_a.concurrency).collect();
    assert_eq!(paired, [4, 8]);
    let unpaired: Vec<(Side, u32)> = d
        .unpaired
        .iter()
        .map(|u| (u.side, u.point.concurrency))
        .collect();
    assert_eq!(unpaired, [(Side::A, 1), (Side::B, 16)]);
    assert_eq!(
        d.warnings,
        [
            DiffWarning::Unpaired {
                side: Side::A,
                count: 1
            },
            DiffWarning::Unpaired {
                side: Side::B,
                count: 1
            }
        ]
    );
}

#[test]
fn runs_timed_by_different_clients_are_said_to_be() {
    let a = run("a", &[4], 3, 1.0, &mut uniform(1, 0.01), &WORKLOAD);
    let mut b = run("b", &[4], 3, 1.0, &mut uniform(2, 0.01), &WORKLOAD);
    // Neither recorded (older runs): nothing to say.
    let d = diff(&a, &b, &DiffOptions::default()).expect("comparable");
    assert!(d.warnings.is_empty(), "{:?}", d.warnings);
    b.manifest.client_timing = Some(qexp_types::ClientTiming::Http1FromWire);
    let d = diff(&a, &b, &DiffOptions::default()).expect("comparable");
    assert_eq!(
        d.warnings,
        [DiffWarning::ClientTiming {
            a: None,
            b: Some(qexp_types::ClientTiming::Http1FromWire)
        }]
    );
    let text = d.warnings[0].to_string();
    assert!(
        text.contains("older qexp") && text.contains("B: qexp-http1"),
        "{text}"
    );
}

/// `r` again with every request at concurrency `c` failed in every trial:
/// its trials there have failures and no values, as when a server times
/// out on every request of a point.
fn fail_every_request_at(r: &RunAnalysis, c: u32) -> RunAnalysis {
    crate::support::with_point_failed(r, c, |t| TrialMetrics {
        requests: t.requests,
        failures: t.requests,
        ..TrialMetrics::without_requests(t.trial, t.point_id)
    })
}

#[test]
fn a_point_where_b_failed_every_request_is_lost_and_a_regression() {
    let a = run("a", &[1, 4, 16], 5, 1.0, &mut uniform(1, 0.02), &WORKLOAD);
    let b = run("b", &[1, 4, 16], 5, 1.0, &mut uniform(2, 0.02), &WORKLOAD);
    let b = fail_every_request_at(&b, 16);
    let d = diff(&a, &b, &DiffOptions::default()).expect("comparable");
    assert!(d.has_regression(), "{:?}", d.tally);
    let warned: Vec<String> = d.warnings.iter().map(ToString::to_string).collect();
    assert!(
        warned
            .iter()
            .any(|w| w.contains("run B") && w.contains("c=16") && w.contains("320 of 320")),
        "{warned:?}"
    );
}

/// `a` and `b` as the deployments `base` and `new` of one run whose
/// recorded plan is `plan_text`, trial n of each being block n.
fn deployments_run(a: &RunAnalysis, b: &RunAnalysis, plan_text: &str) -> RunAnalysis {
    let mut points: Vec<PointSummary> = Vec::new();
    for (name, r) in [("base", a), ("new", b)] {
        for p in &r.points {
            let mut point = p.point.clone();
            point.id = points.len() as u32;
            point.deployment = Some(name.into());
            let trials = p
                .trials
                .iter()
                .map(|t| TrialMetrics {
                    point_id: point.id,
                    ..t.clone()
                })
                .collect();
            points.push(PointSummary::new(point, trials));
        }
    }
    let pts: Vec<&Point> = points.iter().map(|p| &p.point).collect();
    let manifest = ManifestFixture::new("synthetic", &[], a.manifest.trials)
        .with("run_id", "d")
        .with("plan_path", "synthetic.toml")
        .with("plan_text", plan_text)
        .with("points", pts)
        .with("point_order", Vec::<Vec<u32>>::new())
        .with("status", "complete")
        .build();
    RunAnalysis::new("d".into(), manifest, points, Vec::new(), Vec::new(), None)
}

#[test]
fn a_run_whose_plan_says_min_change_0_still_compares_its_deployments() {
    let a = run("a", &[1, 4], 5, 1.0, &mut uniform(1, 0.02), &WORKLOAD);
    let b = run("b", &[1, 4], 5, 1.10, &mut uniform(2, 0.02), &WORKLOAD);
    // A plan that an older qexp accepted, but that `qexp diff` refuses.
    let plan = PlanFixture::new("synthetic")
        .target("sim:x")
        .concurrency(&[1, 4])
        .set("analysis.min_change", 0.0)
        .toml();
    let r = deployments_run(&a, &b, &plan);
    match &r.threshold_source {
        ThresholdSource::Defaults { reason } => {
            assert!(reason.contains("more than 0"), "{reason}");
        }
        ThresholdSource::Plan => panic!("min_change = 0 validated"),
    }
    let c = r
        .deployments
        .as_ref()
        .expect("the deployments are compared");
    assert_eq!(c.diffs.len(), 1);
    assert_eq!(c.diffs[0].min_change, 0.02);
    assert!(c.warnings.is_empty(), "{:?}", c.warnings);
    // Options the diff refuses leave the deployment out, and say why.
    let bad = DiffOptions {
        alpha: 2.0,
        ..DiffOptions::default()
    };
    let c = compare_deployments(&r, &bad).expect("a run with deployments");
    assert!(c.diffs.is_empty());
    let said: Vec<String> = c.warnings.iter().map(ToString::to_string).collect();
    assert!(
        said.iter()
            .any(|w| w.contains("`new` is left out") && w.contains("alpha must be")),
        "{said:?}"
    );
}
