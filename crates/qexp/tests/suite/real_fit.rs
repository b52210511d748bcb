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

/// Outside the grid on each axis: more users, a length between, a longer prompt.
const HELD_OUT: &str = "[workload]\ninput_tokens = 256\noutput_tokens = 32\n\n\
    [sweep]\nconcurrency = [4]\ninput_tokens = [256, 1024]\n\n\
    [run]\nrequests = \"4x\"\nwarmup_requests = 1\ntrials = 3\nseed = 4\n";

/// Known miss, kept as the target: on the 2-core host shared with builds
/// the held-out TPOT came out 86–96% low (measured 9.9 ms at c=4 in=256 and
/// 58.5 ms at in=1024 against 1.0 ms per step alone). Two causes, measured
/// on the stream's chunk times:
/// - with a compute thread per core, llama.cpp's threads meet at a spinning
///   barrier after every op, and one descheduled by the client or a build
///   stalls the pass (280–290 ms gaps in every stream at c=4): the server
///   now runs one thread (scripts/real-servers, `QEXP_LLAMA_THREADS`);
/// - every prefill stalls the decoding batch (llama.cpp puts it in the
///   step's batch): at c=4 in=1024 the streams show 110–220 ms gaps, one
///   per other request's prompt, which the model has no term for; at c ≤ 2
///   the closed loop keeps requests in lockstep, so the grid never sees it.
///
/// With one thread, a Python client running this grid and these points
/// measured TPOT −76% / +83% and E2E −27% / −23% (in=1024 / in=256) for
/// the model as it is; a stall term (not in the model: it needs the
/// simulator to follow) brought TPOT to +8% / −10% but E2E to −7% / −47%,
/// since llama.cpp prefills the four prompts of a wave as one batch where
/// the model serializes them. Run it with
/// `QEXP_LLAMACPP_URL=… cargo test --workspace -- --ignored real_fit --nocapture`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "known miss: held-out TPOT/E2E on llama.cpp CPU are 70-96% off (see the doc comment)"]
async fn llamacpp_fit_predicts_points_outside_its_grid() {
    let Some(url) = server("QEXP_LLAMACPP_URL") else {
        return;
    };
    let _guard = crate::common::heavy().await;
    let tmp = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(tmp.path().join("grid")).unwrap();
    std::fs::create_dir_all(tmp.path().join("held")).unwrap();
    let grid = run_plan(&tmp.path().join("grid"), &url, GRID).await;
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
    let held = run_plan(&tmp.path().join("held"), &url, HELD_OUT).await;
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
    for m in [ModelMetric::TpotS, ModelMetric::E2eS] {
        let mine: Vec<_> = checks.iter().filter(|c| c.metric == m).collect();
        assert_eq!(mine.len(), 2, "{m:?} at both held-out points");
        for c in mine {
            assert!(
                c.error().abs() <= 0.20,
                "{} {}: {:+.1}%",
                c.point,
                m.name(),
                100.0 * c.error()
            );
        }
    }
}
