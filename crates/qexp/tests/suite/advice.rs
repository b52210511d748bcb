//! The advice of the shipped plans on the simulator they ship with: the
//! saturation knee on the founding throughput sweep recommends a load whose
//! TTFT is still near its low-load value (or says what TTFT the user pays),
//! `experiments/lengths.toml`'s length distributions are not called noise,
//! and `experiments/rate.toml` finds a capacity rather than a bound.

use crate::common::{heavy, run_plan_text};
use qexp_analysis::schedule::CapacityBound;
use qexp_analysis::{Flag, Metric};

/// `experiments/NAME.toml` with each `(from, to)` replaced once.
fn shipped(name: &str, edits: &[(&str, &str)]) -> String {
    let path = format!(
        "{}/../../experiments/{name}.toml",
        env!("CARGO_MANIFEST_DIR")
    );
    let mut text = std::fs::read_to_string(&path).unwrap();
    for (from, to) in edits {
        assert!(text.contains(from), "{path} no longer has `{from}`");
        text = text.replacen(from, to, 1);
    }
    text
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_knee_of_the_founding_sweep_recommends_a_load_on_the_ttft_plateau() {
    let _heavy = heavy().await;
    let tmp = tempfile::tempdir().unwrap();
    // The founding sweep on its 20×-compressed simulator, four of its
    // concurrencies, one trial.
    let plan = shipped(
        "throughput",
        &[
            ("base_url = \"sim:founding\"", "base_url = \"sim:fast\""),
            (
                "concurrency = [1, 2, 4, 8, 16, 32, 64, 100]",
                "concurrency = [1, 4, 8, 16, 32, 64, 100]",
            ),
            ("trials = 3", "trials = 1"),
        ],
    );
    let a = run_plan_text(tmp.path(), "throughput", &plan).await;
    let knee = a
        .flags
        .iter()
        .find(|f| matches!(f, Flag::SaturationKnee { .. }))
        .unwrap_or_else(|| panic!("no knee: {:#?}", a.flags));
    let Flag::SaturationKnee {
        concurrency,
        ttft_s,
        plateau,
        ..
    } = knee
    else {
        unreachable!()
    };
    let text = knee.to_string();
    let limit = plateau.factor * plateau.low.ttft_s;
    if *ttft_s > limit {
        // Past the plateau: the load recommended is the plateau's last, and
        // the sentence names what TTFT users pay at the knee.
        assert!(plateau.last.ttft_s <= limit, "{text}");
        let recommended = format!("serve near concurrency {}", plateau.last.concurrency);
        assert!(text.contains(&recommended), "{text}");
        assert!(
            text.contains(&format!("near {concurrency}, users wait")),
            "{text}"
        );
    } else {
        assert!(
            text.contains(&format!("serve near {concurrency} concurrent")),
            "{text}"
        );
    }
    println!("{text}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lengths_drawn_on_purpose_are_not_called_noise() {
    let _heavy = crate::common::shared().await;
    let tmp = tempfile::tempdir().unwrap();
    let a = run_plan_text(tmp.path(), "lengths", &shipped("lengths", &[])).await;
    assert!(a
        .points
        .iter()
        .all(|p| p.trials.iter().all(|t| t.lengths_vary)));
    for f in &a.flags {
        if let Flag::NoisyPoint { metrics, .. } = f {
            // TTFT and E2E follow the drawn lengths: only their per-token values are judged.
            for m in metrics {
                let length_bound = matches!(m.metric, Metric::TtftS | Metric::E2eS);
                assert!(!length_bound || m.per_token, "{f}");
            }
            println!("{f}");
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_rate_plan_finds_its_capacity_on_the_simulator_it_ships_with() {
    let _heavy = heavy().await;
    let tmp = tempfile::tempdir().unwrap();
    let plan = shipped("rate", &[("trials = 3", "trials = 1")]);
    let started = std::time::Instant::now();
    let a = run_plan_text(tmp.path(), "rate", &plan).await;
    let schedule = a.schedule.as_ref().expect("a schedule analysis");
    let [capacity] = schedule.capacity.as_slice() else {
        panic!("one capacity expected: {:#?}", schedule.capacity);
    };
    assert_eq!(capacity.bound, CapacityBound::Interpolated, "{capacity:?}");
    println!(
        "capacity {:.1} req/s in {:.1} s",
        capacity.value,
        started.elapsed().as_secs_f64()
    );
}
