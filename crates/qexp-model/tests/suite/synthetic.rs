//! Fits of observations made by the model itself: every coefficient comes
//! back, and what a grid cannot tell is warned about, not made up.

use qexp_model::{
    fit, predicted, simulate, Arrivals, Coef, FitOptions, FitWarning, Load, ModelMetric,
    Observation, Params, Schedule,
};

fn truth() -> Params {
    Params {
        prefill_fixed_s: 0.1,
        prefill_s_per_token: 1e-5,
        prefill_s_per_token2: 2e-9,
        step_base_s: 0.008,
        step_per_seq_s: 0.002,
        step_per_context_token_s: 3e-7,
        tokens_per_step: 2.0,
        max_batch: Some(3),
        schedule: Schedule::Separate,
    }
}

/// One trial's observation of `p` at (c, l), as the analysis would report it.
fn observe(p: &Params, c: u32, l: f64, trial: u32) -> Observation {
    let load = Load {
        arrivals: Arrivals::Closed { concurrency: c },
        input_tokens: l,
        output_tokens: 24.0,
        requests: 2 * c,
    };
    let o = simulate(p, &load);
    let m = |m| predicted(&o, 24.0, m);
    Observation {
        label: format!("c={c} in={l}"),
        trial,
        concurrency: c,
        rate_per_s: None,
        input_tokens: l,
        output_tokens: 24.0,
        requests: 2 * c,
        requests_recorded: true,
        ttft_s: m(ModelMetric::TtftS),
        ttft_p90_s: m(ModelMetric::TtftP90S),
        e2e_s: m(ModelMetric::E2eS),
        decode_tok_s: 1.0 / m(ModelMetric::TpotS),
        agg_tok_s: m(ModelMetric::AggTokS),
        tokens_per_chunk: 2.0,
    }
}

fn grid(p: &Params, cs: &[u32], ls: &[f64]) -> Vec<Observation> {
    let mut v = Vec::new();
    for trial in 0..2 {
        for &c in cs {
            for &l in ls {
                v.push(observe(p, c, l, trial));
            }
        }
    }
    v
}

#[test]
fn every_coefficient_comes_back_from_a_grid() {
    recovers(truth());
}

#[test]
fn every_coefficient_and_the_mixed_schedule_come_back_from_a_grid() {
    recovers(Params {
        schedule: Schedule::Mixed,
        ..truth()
    });
}

/// The fit of a 3 × 3 grid observed on `t` gives `t` back: its schedule,
/// and every coefficient within 1%.
fn recovers(t: Params) {
    let model = fit(
        &grid(&t, &[1, 2, 4], &[1000.0, 4000.0, 8000.0]),
        &FitOptions::default(),
    )
    .unwrap();
    assert!(model.unknown.is_empty(), "{:?}", model.warnings);
    assert_eq!(model.params.schedule, t.schedule);
    for c in Coef::ALL {
        let (got, want) = (c.get(&model.params).unwrap(), c.get(&t).unwrap());
        assert!(
            (got / want - 1.0).abs() < 0.01,
            "{}: {got} vs {want}",
            c.name()
        );
    }
}

#[test]
fn one_input_length_leaves_the_length_terms_unknown() {
    let t = truth();
    let model = fit(&grid(&t, &[1, 2, 4], &[4000.0]), &FitOptions::default()).unwrap();
    assert!(model
        .warnings
        .contains(&FitWarning::OneInputLength { tokens: 4000.0 }));
    assert!(model.unknown.contains(&Coef::PrefillPerToken2));
    assert!(model.unknown.contains(&Coef::PrefillPerToken));
    // Not made up: the unknown terms are 0 and have no interval.
    assert_eq!(model.params.prefill_s_per_token2, 0.0);
    assert!(model.interval(Coef::PrefillPerToken2).is_none());
    let text = FitWarning::OneInputLength { tokens: 4000.0 }.to_string();
    assert!(
        text.contains("L² prefill term") && text.contains("8K apart"),
        "{text}"
    );
}

#[test]
fn a_limit_no_point_reached_is_unknown() {
    let t = truth();
    let model = fit(
        &grid(&t, &[1, 2], &[1000.0, 4000.0, 8000.0]),
        &FitOptions::default(),
    )
    .unwrap();
    assert!(model
        .warnings
        .contains(&FitWarning::NoBatchLimit { concurrency: 2 }));
    assert_eq!(model.params.max_batch, None);
}

#[test]
fn one_concurrency_leaves_the_schedule_unknown() {
    // A mixed deployment seen only alone: nothing tells it from separate.
    let t = Params {
        schedule: Schedule::Mixed,
        ..truth()
    };
    let model = fit(&grid(&t, &[1], &[1000.0, 4000.0]), &FitOptions::default()).unwrap();
    assert!(model.warnings.contains(&FitWarning::ScheduleUnknown));
    assert_eq!(model.params.schedule, Schedule::Separate);
    let full = fit(
        &grid(&t, &[1, 2, 4], &[1000.0, 4000.0]),
        &FitOptions::default(),
    )
    .unwrap();
    assert!(!full.warnings.contains(&FitWarning::ScheduleUnknown));
}
