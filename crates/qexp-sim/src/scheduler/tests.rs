//! The simulator against the replay: one schedule, two clocks.

use super::*;
use qexp_model::{Arrivals, Load, Params, Schedule};

fn params(schedule: Schedule, prefill_units: Option<u32>) -> Params {
    Params {
        prefill_fixed_s: 0.05,
        prefill_s_per_token: 1e-4,
        prefill_s_per_token2: 0.0,
        prefill_s_per_image_token: 0.0,
        step_base_s: 0.01,
        step_per_seq_s: 0.002,
        step_per_context_token_s: 1e-7,
        tokens_per_step: 2.0,
        max_batch: Some(3),
        schedule,
        intake_s: qexp_model::INTAKE_S,
        prefill_units,
    }
}

/// What the simulator's schedule reports when `sends[i]` is when
/// request `i` (a prompt of `load`'s length, unlike any other) arrives,
/// run on tokio's paused clock.
async fn served(p: &Params, load: &Load, sends: &[f64]) -> Vec<Output> {
    let (_stop_tx, stop) = watch::channel(false);
    let (tap, mut outputs) = mpsc::unbounded_channel();
    // The clock is paused: the engine's instant 0 is this one.
    let origin = Instant::now();
    let engine = Engine::tapped(SimProfile::from_params("compare", p), stop, Some(tap));
    let mut clients = Vec::new();
    for (i, &t) in sends.iter().enumerate() {
        let engine = Arc::clone(&engine);
        let at = origin + std::time::Duration::from_secs_f64(t);
        let base = 1_000_000 * (i as u32 + 1);
        let ids: Vec<u32> = (0..load.input_tokens as u32).map(|k| base + k).collect();
        let mut job = Job::prefill_only(None, "m", ids);
        job.max_tokens = load.output_tokens as u32;
        clients.push(tokio::spawn(async move {
            sleep_until(at).await;
            engine.generate_at(&job, at).collect::<Vec<u32>>().await
        }));
    }
    for client in clients {
        let chunks = client.await.unwrap();
        assert_eq!(chunks.iter().sum::<u32>(), load.output_tokens as u32);
    }
    let mut got = Vec::new();
    while let Ok(out) = outputs.try_recv() {
        got.push(out);
    }
    got
}

/// Same outputs in the same order, times within a microsecond (the
/// wall clock counts in nanoseconds).
fn assert_same(replayed: &[Output], served: &[Output]) {
    let close = |a: f64, b: f64| (a - b).abs() < 1e-6;
    assert_eq!(replayed.len(), served.len());
    for (k, (r, s)) in replayed.iter().zip(served).enumerate() {
        let same = match (r, s) {
            (
                Output::Admitted { id, at, batch },
                Output::Admitted {
                    id: id2,
                    at: at2,
                    batch: batch2,
                },
            ) => id == id2 && close(*at, *at2) && batch == batch2,
            (
                Output::Step {
                    at,
                    length,
                    decodes,
                    seen,
                },
                Output::Step {
                    at: at2,
                    length: length2,
                    decodes: decodes2,
                    seen: seen2,
                },
            ) => {
                close(*at, *at2)
                    && close(*length, *length2)
                    && decodes == decodes2
                    && seen.batch == seen2.batch
                    && close(seen.context, seen2.context)
                    && close(seen.stall_s, seen2.stall_s)
            }
            (
                Output::Chunk {
                    id,
                    at,
                    tokens,
                    last,
                },
                Output::Chunk {
                    id: id2,
                    at: at2,
                    tokens: tokens2,
                    last: last2,
                },
            ) => id == id2 && close(*at, *at2) && tokens == tokens2 && last == last2,
            _ => false,
        };
        assert!(same, "output {k}: replayed {r:?}, served {s:?}");
    }
}

/// The replay and the simulator run one schedule: on the same arrivals
/// (seeded Poisson, fast enough that requests queue for slots and
/// prefill units) every admission, step and chunk is the same, at the
/// same instant, on each schedule.
#[tokio::test(start_paused = true)]
async fn the_simulator_and_the_replay_take_the_same_steps() {
    let load = Load {
        arrivals: Arrivals::Rate {
            per_s: 12.0,
            seed: 7,
        },
        input_tokens: 600.0,
        image_tokens: 0.0,
        output_tokens: 9.0,
        answers: None,
        requests: 16,
    };
    for p in [
        params(Schedule::Separate, Some(1)),
        params(Schedule::Separate, None),
        params(Schedule::Mixed, None),
    ] {
        let (sends, replayed) = qexp_model::trace(&p, &load);
        let kinds = |f: fn(&Output) -> bool| replayed.iter().filter(|o| f(o)).count();
        assert_eq!(kinds(|o| matches!(o, Output::Admitted { .. })), 16);
        assert!(
            kinds(|o| matches!(o, Output::Step { .. })) > 16,
            "{replayed:?}"
        );
        // Requests waited for slots: some were admitted after they were ready.
        let waited = replayed.iter().any(|o| {
            matches!(o, Output::Admitted { id, at, .. }
                if *at > sends[*id as usize] + p.prefill_fixed_s + 1e-9)
        });
        assert!(waited, "{:?}: no request queued", p.schedule);
        let served = served(&p, &load, &sends).await;
        assert_same(&replayed, &served);
    }
}
