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

/// Known miss, kept as the target. Causes, measured on the stream's chunk
/// times on the 2-core host shared with builds:
/// - with a compute thread per core, llama.cpp's threads meet at a spinning
///   barrier after every op, and one descheduled by the client or a build
///   stalls the pass (280–290 ms gaps in every stream at c=4): the server
///   now runs one thread (scripts/real-servers, `QEXP_LLAMA_THREADS`);
/// - llama.cpp puts a prompt in the step's batch, so every prefill stalls
///   the decoding sequences (at c=4 in=1024 the streams show 110–220 ms
///   gaps, one per other request's prompt). The model's mixed schedule
///   (docs/model.md "Schedules") has that stall, and the fit picks it on
///   this grid in every run.
///
/// At load average 3.2–4.5 (three runs) the fit picked it, with no batch
/// limit: TTFT within 3–25%, but TPOT −64% to −72% (in=1024) and −40% to
/// −62% (in=256), E2E −23% to −42% (the separate schedule forced on the
/// same runs: TPOT −76% to −88%); the fit missed its own grid at c=2
/// (TTFT −29% to −39%, E2E −18% to −28%). At load 1.4–1.9 (two runs) c=2
/// gained almost no throughput over c=1, and the fit explained the grid as
/// one request at a time (N = 1, where the two schedules are the same):
/// E2E −7% to +11%, but TPOT −65% to −83% and TTFT +34% to +54%. A grid of
/// c = 1, 2, 3 (one run, load 1.3) picked mixed with no limit and gave
/// E2E −5% / −17%, TTFT +23% / −5%, TPOT −54% / −33%. What the model lacks: its replay is
/// deterministic, so requests that arrive together stay grouped and stall
/// each other once per group, where llama.cpp's streams drift apart and
/// each prompt stalls the others alone; llama.cpp caps a step at
/// `n_batch` (2048) tokens, which the model does not; and `d1` and the
/// `L²` term are barely identified by c ≤ 2 and two lengths. Run it with
/// `QEXP_LLAMACPP_URL=… cargo test --workspace -- --ignored real_fit --nocapture`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "known miss: held-out TPOT on llama.cpp CPU is 33-88% off, E2E up to 42% (see the doc comment)"]
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
