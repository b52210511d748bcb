//! The steady-state window against a known truth: a simulator that
//! prefills one request at a time (so the first wave of a closed loop
//! queues: a slow start) and then streams at a fixed step, with many
//! requests per user. Its steady rate, its window and its whole-point
//! figure all follow from the profile.

use crate::common::{heavy, run_plan};
use qexp_plan::ApiKind;
use qexp_sim::{SimProfile, SimServer};
use qexp_testkit::PlanFixture;

const USERS: u32 = 4;
const ROUNDS: u32 = 8;
const INPUT: u32 = 800;
const OUTPUT: u32 = 32;
const PREFILL_TOK_S: f64 = 10_000.0;
const STEP_S: f64 = 0.01;
const SCALE: f64 = 1.0;

/// `exact` with a serialized prefill of `INPUT / PREFILL_TOK_S` seconds
/// and no fixed latency or prefix cache.
fn profile() -> SimProfile {
    let exact = SimProfile::by_name("exact").expect("built-in profile");
    SimProfile {
        name: "steady".into(),
        prefill_fixed_s: 0.0,
        prefill_tokens_per_s: PREFILL_TOK_S,
        step_base_s: STEP_S,
        prefix_cache_tokens: 0,
        time_scale: SCALE,
        ..exact
    }
}

/// User `u` of the first wave gets its first chunk after `(u + 1)·p` (the
/// prefills queue), then every user cycles in `T = p + (L − 1)·d` without
/// colliding (`(L − 1)·d ≥ (C − 1)·p`). Steady: `C·L/T`. The window
/// opens at the last first-wave chunk (`C·p`) and closes when user 0 ends
/// (`R·T`); the whole point ends when user `C − 1` does (`(C − 1)·p + R·T`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_window_holds_the_profiles_steady_rate_where_the_whole_point_does_not() {
    let _heavy = heavy().await;
    let sim = SimServer::start(profile()).await.expect("simulator starts");
    let tmp = tempfile::tempdir().unwrap();
    let plan = PlanFixture::new("steady")
        .target(&sim.base_url())
        .api(ApiKind::Completions)
        .ignore_eos()
        .input(INPUT)
        .output(OUTPUT)
        .concurrency(&[USERS])
        .requests(format!("{ROUNDS}x"))
        .warmup(0)
        .trials(1);
    let a = run_plan(tmp.path(), &plan).await;
    sim.shutdown().await;

    let (c, l, r) = (f64::from(USERS), f64::from(OUTPUT), f64::from(ROUNDS));
    let (p, d) = (f64::from(INPUT) / PREFILL_TOK_S * SCALE, STEP_S * SCALE);
    assert!((l - 1.0) * d >= (c - 1.0) * p, "the cycle must not collide");
    let cycle = p + (l - 1.0) * d;
    let steady = c * l / cycle;
    let whole_truth = c * r * l / ((c - 1.0) * p + r * cycle);
    let window_truth = r * cycle - c * p;

    let point = &a.points[0];
    let trial = &point.trials[0];
    let w = trial
        .steady
        .as_ref()
        .expect("a closed-loop point has a window");
    println!(
        "steady truth {steady:.1} tok/s; window {:.1} tok/s over {:.3} s (truth {window_truth:.3} s, {:.0}% of the point); whole point {:.1} tok/s (truth {whole_truth:.1})",
        w.tok_s,
        w.window_s,
        w.share * 100.0,
        trial.agg_tok_s
    );
    assert_eq!((w.peak, w.level), (USERS, USERS), "{w:?}");
    assert!((w.window_s / window_truth - 1.0).abs() < 0.05, "{w:?}");
    assert!(
        (w.tok_s / steady - 1.0).abs() < 0.02,
        "{} vs {steady}",
        w.tok_s
    );
    assert!(
        (trial.agg_tok_s / steady - 1.0).abs() > 0.02,
        "{}",
        trial.agg_tok_s
    );
    // Requests sent in the window waited only their own prefill.
    assert!((w.ttft_s / p - 1.0).abs() < 0.25, "{} vs {p}", w.ttft_s);
    assert!(
        trial.ttft_s > w.ttft_s,
        "the first wave's queue is in the whole point"
    );

    // The report shows both, and a diff can compare the window's figure.
    let templates = qexp_report::Templates::builtin().expect("built-in templates");
    let files = qexp_report::render_run(&a, &templates, &tmp.path().join("report"))
        .expect("report renders");
    let md = std::fs::read_to_string(&files[0]).unwrap();
    assert!(md.contains("### Steady state"), "{md}");
    let opts = qexp_analysis::DiffOptions {
        metrics: vec![qexp_analysis::DiffMetric::SteadyTokS],
        ..Default::default()
    };
    let d = qexp_analysis::diff(&a, &a, &opts).expect("a run compares with itself");
    let m = &d.pairs[0].metrics;
    assert_eq!(m.len(), 1);
    assert_eq!(m[0].metric, qexp_analysis::DiffMetric::SteadyTokS);
    assert!(m[0]
        .a
        .as_ref()
        .is_some_and(|s| (s.median - w.tok_s).abs() < 1e-9));
}

/// `[run] stop_past_saturation` on a server that holds 2 sequences at once
/// (`exact` with 2 slots): past 2 users its throughput is flat and TTFT
/// grows with the users, so the sweep stops climbing and the highest loads
/// are never sent;
/// on a server without a batch limit (`exact`) it climbs to the end.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sweep_stops_climbing_past_saturation_and_only_then() {
    let _heavy = heavy().await;
    let tmp = tempfile::tempdir().unwrap();
    let slots = SimServer::start(SimProfile {
        name: "two-slots".into(),
        prefill_fixed_s: 0.0,
        max_batch: 2,
        time_scale: 0.25,
        ..SimProfile::by_name("exact").expect("built-in profile")
    })
    .await
    .expect("simulator starts");
    let sweep = |name: &str, target: &str, levels: &[u32]| {
        PlanFixture::new(&format!("saturation-{name}"))
            .target(target)
            .api(ApiKind::Completions)
            .ignore_eos()
            .input(100)
            .output(8)
            .concurrency(levels)
            .requests("4x")
            .warmup(0)
            .trials(1)
            .set("run.stop_past_saturation", true)
    };
    let levels = [1, 2, 4, 8, 16, 32];
    let a = run_plan(tmp.path(), &sweep("two-slots", &slots.base_url(), &levels)).await;
    slots.shutdown().await;
    for p in &a.points {
        println!(
            "{}: {} tok/s, TTFT {} s",
            p.point.label(),
            p.agg_tok_s.as_ref().map_or(f64::NAN, |s| s.median),
            p.ttft_s.as_ref().map_or(f64::NAN, |s| s.median)
        );
    }
    let stops = &a.manifest.saturation_stops;
    assert_eq!(stops.len(), 1, "{stops:?}");
    let stop = &stops[0];
    let at = a.manifest.points[stop.point_id as usize].concurrency;
    println!("stopped after c={at}: {}", stop.reason);
    assert!((4..32).contains(&at), "{stop:?}");
    let skipped: Vec<u32> = stop
        .skipped
        .iter()
        .map(|&id| a.manifest.points[id as usize].concurrency)
        .collect();
    assert_eq!(
        skipped,
        levels
            .iter()
            .copied()
            .filter(|&c| c > at)
            .collect::<Vec<_>>()
    );
    // Nothing was sent at the skipped loads, and the run is complete.
    for p in &a.points {
        let measured = p.requests > 0;
        assert_eq!(measured, p.point.concurrency <= at, "{}", p.point.label());
    }
    assert_eq!(a.manifest.status, qexp_store::RunStatus::Complete);
    let templates = qexp_report::Templates::builtin().expect("built-in templates");
    let files = qexp_report::render_run(&a, &templates, &tmp.path().join("report"))
        .expect("report renders");
    let md = std::fs::read_to_string(&files[0]).unwrap();
    assert!(md.contains("stopped climbing past saturation"), "{md}");

    let b = run_plan(tmp.path(), &sweep("exact", "sim:exact", &[1, 2, 4, 8])).await;
    assert!(
        b.manifest.saturation_stops.is_empty(),
        "{:?}",
        b.manifest.saturation_stops
    );
    assert!(b.points.iter().all(|p| p.requests > 0));
}
