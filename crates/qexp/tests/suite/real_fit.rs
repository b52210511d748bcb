//! `qexp fit` on a real server: llama.cpp (CPU, the tiny model of
//! scripts/real-servers) over a small grid, then points outside the grid
//! predicted and run; per-metric errors and the interval coverage are
//! printed, and TPOT and E2E must be within 20%. Skips without
//! QEXP_LLAMACPP_URL, as every real-server test does.

use crate::real_servers::{run_plan_body as run_plan, server};
use qexp_model::{FitOptions, ModelMetric};

const GRID: &str = "[workload]\ninput_tokens = 128\noutput_tokens = 32\n\n\
    [sweep]\nconcurrency = [1, 2]\ninput_tokens = [128, 512]\n\n\
    [run]\nrequests = \"4x\"\nwarmup_requests = 1\ntrials = 3\nseed = 3\n";

/// Outside the grid on each axis: more users, lengths between and beyond.
const HELD_OUT: &str = "[workload]\ninput_tokens = 256\noutput_tokens = 32\n\n\
    [sweep]\nconcurrency = [3, 4]\ninput_tokens = [256, 384, 1024]\n\n\
    [run]\nrequests = \"4x\"\nwarmup_requests = 1\ntrials = 3\nseed = 4\n";

/// The grid's largest burst of prompt tokens: c=2 × in=512.
const GRID_BURST: u32 = 2 * 512;

/// TPOT and E2E must be within 20% at every held-out point whose burst of
/// prompt tokens (c × in, which a closed loop sends at once) is at most
/// twice the grid's largest (c=2 × in=512): c=3 and c=4 at in=256 and 384.
/// The points at in=1024 (bursts of 3,072 and 4,096 tokens) are predicted
/// and printed, not asserted: there llama.cpp's intake splits the burst
/// (at c=4 two prompts are prefilled in one step and the other two, arrived
/// a moment later, in the next, which stalls the first two by ~70 ms), and
/// the model, whose idle engine takes a burst whole (docs/model.md
/// "Schedules"), predicts TPOT about a third low there.
///
/// Measured on this 2-core host (llama.cpp with one compute thread,
/// scripts/real-servers): docs/model.md "Measured against llama.cpp". Earlier, with
/// the first prompt of a burst prefilled alone, the fit preferred the
/// separate schedule with one sequence at a time and missed TPOT by 33-88%.
/// Run it with
/// `QEXP_LLAMACPP_URL=… cargo test --workspace -- real_fit --nocapture`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn llamacpp_fit_predicts_points_outside_its_grid() {
    let Some(url) = server("QEXP_LLAMACPP_URL") else {
        return;
    };
    let _guard = crate::common::heavy().await;
    let mut misses = Vec::new();
    for attempt in 1..=FIT_RUNS {
        eprintln!("llama.cpp attempt {attempt}");
        let m = attempt_fit(&url).await;
        if m.is_empty() {
            return;
        }
        misses.push(format!("attempt {attempt}: {}", m.join("; ")));
    }
    panic!(
        "TPOT or E2E off by more than 20% in every attempt:\n{}",
        misses.join("\n")
    );
}

/// Attempts of grid and held-out runs the test may take: a stall of the
/// 2-core host (the suite's other tests, a build) slows some requests of a
/// run; a model that is wrong misses in every attempt.
const FIT_RUNS: usize = 3;

/// One attempt: the grid run, the fit, the held-out run; what misses.
async fn attempt_fit(url: &str) -> Vec<String> {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(tmp.path().join("grid")).unwrap();
    std::fs::create_dir_all(tmp.path().join("held")).unwrap();
    let grid = run_plan(&tmp.path().join("grid"), url, GRID).await;
    let a = qexp_analysis::analyze(&grid.dir).unwrap();
    let obs = qexp_analysis::run_observations(&a, 0, None);
    let model = qexp_model::fit(&obs.rows, &FitOptions::default()).unwrap();
    for c in qexp_model::Coef::ALL {
        let i = model.interval(c);
        eprintln!(
            "llama.cpp {:<26} {:>12.4e} 90% {}{}",
            c.name(),
            c.get(&model.params).unwrap_or(f64::NAN),
            i.map_or("-".into(), |i| format!("{:.4e} … {:.4e}", i.lo, i.hi)),
            if model.unknown.contains(&c) {
                " (unknown)"
            } else {
                ""
            }
        );
    }
    eprintln!("llama.cpp schedule {}", model.params.schedule);
    for r in &model.residuals {
        eprintln!(
            "llama.cpp fitted {:<22} {:<9} measured {:>9.4} fitted {:>9.4} {:>+6.1}%",
            r.point,
            r.metric.name(),
            r.measured,
            r.fitted,
            100.0 * r.error()
        );
    }
    for w in &model.warnings {
        eprintln!("llama.cpp fit warning: {w}");
    }
    let held = run_plan(&tmp.path().join("held"), url, HELD_OUT).await;
    let h = qexp_analysis::analyze(&held.dir).unwrap();
    let checks = qexp_analysis::check_against_model(&h, &model);
    for c in &checks {
        eprintln!(
            "llama.cpp held out {:<22} {:<9} measured {:>9.4} predicted {:>9.4} [{:.4} … {:.4}] {:>+6.1}%{}",
            c.point,
            c.metric.name(),
            c.measured,
            c.predicted,
            c.lo,
            c.hi,
            100.0 * c.error(),
            if c.unexplained() { " outside" } else { "" }
        );
    }
    for s in qexp_model::summarize(&checks) {
        eprintln!(
            "llama.cpp held out {:<9} median |error| {:>5.1}%  inside 90% interval {}/{}",
            s.metric.name(),
            100.0 * s.median_abs_error,
            s.covered,
            s.n
        );
    }
    // Each schedule forced, for the record (the fit chose one above).
    for schedule in qexp_model::Schedule::ALL {
        let opts = FitOptions {
            schedule: Some(schedule),
            ..FitOptions::default()
        };
        let forced = qexp_model::fit(&obs.rows, &opts).unwrap();
        for c in qexp_analysis::check_against_model(&h, &forced) {
            eprintln!(
                "llama.cpp forced {schedule:<8} N={:?} {:<22} {:<9} measured {:>9.4} predicted {:>9.4} {:>+6.1}%",
                forced.params.max_batch,
                c.point,
                c.metric.name(),
                c.measured,
                c.predicted,
                100.0 * c.error()
            );
        }
    }
    let burst = |label: &str| -> u32 {
        let field = |key: &str| -> u32 {
            let v = label.split(' ').find_map(|w| w.strip_prefix(key));
            v.and_then(|v| v.parse().ok()).unwrap_or(u32::MAX)
        };
        field("c=").saturating_mul(field("in="))
    };
    let mut misses = Vec::new();
    let mut judged = 0;
    for c in &checks {
        if ![ModelMetric::TpotS, ModelMetric::E2eS].contains(&c.metric)
            || burst(&c.point) > 2 * GRID_BURST
        {
            continue;
        }
        judged += 1;
        if c.error().abs() > 0.20 {
            misses.push(format!(
                "{} {}: {:+.1}%",
                c.point,
                c.metric.name(),
                100.0 * c.error()
            ));
        }
    }
    assert_eq!(judged, 8, "TPOT and E2E at the four near points");
    misses
}
