//! Fits of observations made by the model itself: every coefficient comes
//! back, and what a grid cannot tell is warned about, not made up.

use qexp_model::{
    fit, predicted, simulate, AnswerSpread, Arrivals, Coef, FitOptions, FitWarning, Load,
    ModelFile, ModelMetric, Observation, Params, Schedule, TRIALS_PER_RUN,
};

fn truth() -> Params {
    Params {
        prefill_fixed_s: 0.1,
        prefill_s_per_token: 1e-5,
        prefill_s_per_token2: 2e-9,
        prefill_s_per_image_token: 0.0,
        step_base_s: 0.008,
        step_per_seq_s: 0.002,
        step_per_context_token_s: 3e-7,
        tokens_per_step: 2.0,
        max_batch: Some(3),
        schedule: Schedule::Separate,
        intake_s: qexp_model::INTAKE_S,
        prefill_units: Some(1),
    }
}

/// One trial's observation of `p` at (c, l), as the analysis would report it.
fn observe(p: &Params, c: u32, l: f64, trial: u32) -> Observation {
    observe_images(p, c, l, 0.0, trial)
}

/// [`observe`] of prompts of `l` text tokens and `i` image tokens.
fn observe_images(p: &Params, c: u32, l: f64, i: f64, trial: u32) -> Observation {
    observe_answers(p, c, l, i, None, trial)
}

/// [`observe_images`] of answers that spread as `answers` (None: all 24 tokens).
fn observe_answers(
    p: &Params,
    c: u32,
    l: f64,
    i: f64,
    answers: Option<AnswerSpread>,
    trial: u32,
) -> Observation {
    let load = Load {
        arrivals: Arrivals::Closed { concurrency: c },
        input_tokens: l + i,
        image_tokens: i,
        output_tokens: 24.0,
        answers,
        requests: 2 * c,
    };
    let o = simulate(p, &load);
    let m = |m| predicted(&o, m);
    Observation {
        label: format!("c={c} in={l} img={i}"),
        trial,
        concurrency: c,
        rate_per_s: None,
        input_tokens: l + i,
        image_tokens: i,
        output_tokens: 24.0,
        answers,
        requests: 2 * c,
        requests_recorded: true,
        ttft_s: m(ModelMetric::TtftS),
        ttft_p90_s: m(ModelMetric::TtftP90S),
        e2e_s: m(ModelMetric::E2eS),
        decode_tok_s: 1.0 / m(ModelMetric::TpotS),
        agg_tok_s: m(ModelMetric::AggTokS),
        tokens_per_chunk: 2.0,
        itl_p50_s: o.median_gap.map_or(f64::NAN, |(gap, _)| gap),
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

/// A mixed engine that starts its step with the prompt that woke it: the
/// fit tells it from one with the intake window.
#[test]
fn a_mixed_engine_without_an_intake_window_comes_back_from_a_grid() {
    recovers(Params {
        schedule: Schedule::Mixed,
        intake_s: 0.0,
        ..truth()
    });
}

/// Answers a model stopped: from 3 tokens to the cap of 40, the median 24.
fn spread() -> AnswerSpread {
    AnswerSpread([3.0, 9.0, 16.0, 21.0, 27.0, 34.0, 40.0, 40.0])
}

/// Answers that stop early send the users back out of step, one prompt at
/// a time into a running batch: the fit replays each point with its
/// answers' spread and gives the deployment back, which it does not when
/// told every answer had the median length.
#[test]
fn answers_of_many_lengths_are_replayed_as_they_were() {
    for intake_s in [qexp_model::INTAKE_S, 0.0] {
        let t = Params {
            schedule: Schedule::Mixed,
            intake_s,
            ..truth()
        };
        let mut rows = Vec::new();
        for trial in 0..2 {
            for c in [1, 2, 4] {
                for l in [1000.0, 4000.0, 8000.0] {
                    rows.push(observe_answers(&t, c, l, 0.0, Some(spread()), trial));
                }
            }
        }
        let model = recovers_from(&t, &rows);
        // A point not run, predicted with the answers spread as fitted.
        let at = Load {
            arrivals: Arrivals::Closed { concurrency: 3 },
            input_tokens: 2000.0,
            image_tokens: 0.0,
            output_tokens: 24.0,
            answers: model.answers_at(24.0),
            requests: 12,
        };
        assert_eq!(at.answers, Some(spread()), "{:?}", model.answers);
        let (want, got) = (simulate(&t, &at), qexp_model::predict(&model, &at));
        for m in [ModelMetric::TtftS, ModelMetric::TpotS, ModelMetric::E2eS] {
            let (w, g) = (predicted(&want, m), got.get(m).unwrap().value);
            assert!(
                (g / w - 1.0).abs() < 0.02,
                "{intake_s} {}: {g} against {w}",
                m.name()
            );
        }
        // The same runs, told every answer had the median length.
        let stripped: Vec<Observation> = rows
            .iter()
            .map(|r| Observation {
                answers: None,
                ..r.clone()
            })
            .collect();
        let model = fit(&stripped, &FitOptions::default()).unwrap();
        let off: Vec<String> = Coef::ALL
            .iter()
            .filter_map(|c| {
                let (got, want) = (c.get(&model.params)?, c.get(&t)?);
                let e = got / want - 1.0;
                (e.abs() > 0.05).then(|| format!("{} {:+.0}%", c.name(), 100.0 * e))
            })
            .collect();
        eprintln!("{intake_s}: answers at the median length: {off:?}");
        assert!(!off.is_empty(), "{intake_s}: the spread changed nothing");
    }
}

/// The fit of a 3 × 3 grid observed on `t` gives `t` back: its schedule,
/// and every coefficient within 1%.
fn recovers(t: Params) {
    let model = recovers_from(&t, &grid(&t, &[1, 2, 4], &[1000.0, 4000.0, 8000.0]));
    assert_eq!(model.answers, None, "answers of one length have no spread");
}

/// The fit of `rows`, observed on `t`, gives `t` back: its schedule, and
/// every coefficient within 1%.
fn recovers_from(t: &Params, rows: &[Observation]) -> ModelFile {
    let t = *t;
    let model = fit(rows, &FitOptions::default()).unwrap();
    assert!(model.unknown.is_empty(), "{:?}", model.warnings);
    assert_eq!(model.params.schedule, t.schedule);
    if t.schedule == Schedule::Mixed {
        assert_eq!(model.params.intake_s, t.intake_s);
    }
    for c in Coef::ALL {
        let (got, want) = (c.get(&model.params).unwrap(), c.get(&t).unwrap());
        assert!(
            (got / want - 1.0).abs() < 0.01 || (want == 0.0 && got == 0.0),
            "{}: {got} vs {want}",
            c.name()
        );
    }
    model
}

/// The truth with a vision encoder: 20 µs per image token.
fn with_images() -> Params {
    Params {
        prefill_s_per_image_token: 2e-5,
        ..truth()
    }
}

/// Text-only grid points, and at concurrency 1 prompts of two text lengths
/// with 0, 512 and 2048 image tokens.
fn image_grid(p: &Params, texts: &[f64]) -> Vec<Observation> {
    let mut v = grid(p, &[1, 2, 4], &[1000.0, 4000.0, 8000.0]);
    for trial in 0..2 {
        for &l in texts {
            for i in [512.0, 2048.0] {
                v.push(observe_images(p, 1, l, i, trial));
            }
        }
    }
    v
}

#[test]
fn the_image_term_comes_back_where_images_meet_two_text_lengths() {
    let t = with_images();
    let model = fit(&image_grid(&t, &[1000.0, 4000.0]), &FitOptions::default()).unwrap();
    assert!(model.unknown.is_empty(), "{:?}", model.warnings);
    for c in Coef::ALL {
        let (got, want) = (c.get(&model.params).unwrap(), c.get(&t).unwrap());
        assert!(
            (got / want - 1.0).abs() < 0.01,
            "{}: {got} vs {want}",
            c.name()
        );
    }
    let i = model
        .interval(Coef::PrefillPerImageToken)
        .expect("an interval");
    assert!(i.lo <= 2e-5 && 2e-5 <= i.hi, "{i:?}");
}

#[test]
fn images_at_one_text_length_leave_the_image_term_unknown_and_say_so() {
    // Only prompts with images, all of one text length: the image tokens
    // move the prompt's length with them.
    let t = with_images();
    let mut rows = Vec::new();
    for trial in 0..2 {
        for i in [0.0, 512.0, 1024.0, 2048.0] {
            rows.push(observe_images(&t, 1, 64.0, i, trial));
        }
        rows.push(observe_images(&t, 4, 64.0, 1024.0, trial));
    }
    let model = fit(&rows, &FitOptions::default()).unwrap();
    assert!(
        model.unknown.contains(&Coef::PrefillPerImageToken),
        "{:?}",
        model.warnings
    );
    let w = model
        .warnings
        .iter()
        .find(|w| matches!(w, FitWarning::ImagesNotSeparated { .. }))
        .expect("the warning");
    assert!(w.to_string().contains("second input length"), "{w}");
    assert_eq!(model.params.prefill_s_per_image_token, 0.0);
    // The per-token terms hold the image cost: TTFT alone is still right
    // within the points' range.
    let want = t.ttft_alone_s(64.0 + 1024.0) + t.image_compute_s(1024.0);
    let got = model.params.ttft_alone_s(64.0 + 1024.0);
    assert!((got / want - 1.0).abs() < 0.02, "{got} vs {want}");
}

/// On the mixed schedule the decode step is fitted on the median gap
/// between chunks, not the TPOT: a TPOT that holds stalls the replay does
/// not have (a server that split a burst's prompts over more steps) leaves
/// the step's coefficients as they were; the same rows without the gap
/// move them.
#[test]
fn the_mixed_step_comes_from_the_median_gap_not_the_stalled_tpot() {
    let t = Params {
        schedule: Schedule::Mixed,
        ..truth()
    };
    let stalled: Vec<Observation> = grid(&t, &[1, 2, 4], &[1000.0, 4000.0, 8000.0])
        .into_iter()
        .map(|o| Observation {
            decode_tok_s: o.decode_tok_s / 1.2,
            ..o
        })
        .collect();
    let opts = FitOptions {
        schedule: Some(Schedule::Mixed),
        ..FitOptions::default()
    };
    let step = [Coef::StepBase, Coef::StepPerSeq, Coef::StepPerContextToken];
    let model = fit(&stalled, &opts).unwrap();
    for c in step {
        let (got, want) = (c.get(&model.params).unwrap(), c.get(&t).unwrap());
        assert!(
            (got / want - 1.0).abs() < 0.01,
            "{}: {got} vs {want}",
            c.name()
        );
    }
    let no_gap: Vec<Observation> = stalled
        .into_iter()
        .map(|o| Observation {
            itl_p50_s: f64::NAN,
            ..o
        })
        .collect();
    let model = fit(&no_gap, &opts).unwrap();
    let moved = step.iter().any(|c| {
        let (got, want) = (c.get(&model.params).unwrap(), c.get(&t).unwrap());
        (got / want - 1.0).abs() > 0.05
    });
    assert!(moved, "{:?}", model.params);
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

/// Two runs fitted together, one sweeping concurrency at one input length,
/// the other input length alone: every refit draws each run's trials from
/// that run, so none loses the lengths or the batch sizes (which would fit
/// their terms as 0 and drag the intervals towards 0). The observations
/// are noiseless, so every refit gives the truth back and the intervals
/// hug it.
#[test]
fn runs_fitted_together_are_resampled_each_within_itself() {
    let t = Params {
        max_batch: None,
        ..truth()
    };
    let mut rows = Vec::new();
    for trial in 0..2 {
        for c in [1, 2, 4] {
            rows.push(observe(&t, c, 1000.0, trial));
        }
        for l in [1000.0, 4000.0, 8000.0] {
            rows.push(observe(&t, 1, l, TRIALS_PER_RUN + trial));
        }
    }
    let model = fit(&rows, &FitOptions::default()).unwrap();
    assert!(
        !model
            .warnings
            .iter()
            .any(|w| matches!(w, FitWarning::IncludesZero { .. } | FitWarning::OneTrial)),
        "{:?}",
        model.warnings
    );
    for c in [
        Coef::PrefillPerToken,
        Coef::PrefillPerToken2,
        Coef::StepPerSeq,
    ] {
        let i = model.interval(c).unwrap();
        let want = c.get(&t).unwrap();
        assert!(
            i.lo > 0.99 * want && i.hi < 1.01 * want,
            "{}: {i:?} against {want}",
            c.name()
        );
    }
}

/// Refits not asked for: the warning says so, not that there was one trial.
#[test]
fn no_refits_is_not_called_one_trial() {
    let t = truth();
    let opts = FitOptions {
        replicates: 0,
        ..FitOptions::default()
    };
    let model = fit(&grid(&t, &[1, 2, 4], &[1000.0, 4000.0, 8000.0]), &opts).unwrap();
    assert!(model.warnings.contains(&FitWarning::NoRefits { asked: 0 }));
    assert!(!model.warnings.contains(&FitWarning::OneTrial));
}

/// Steps of more tokens than a request asks for: the replay streams each
/// request in one chunk and has no TPOT to fit, though the server streamed
/// two. That residual is left out, so the model file written reads back.
#[test]
fn a_fit_with_no_replayed_tpot_still_reads_back() {
    let t = truth();
    let rows: Vec<Observation> = grid(&t, &[1, 2, 4], &[1000.0, 4000.0, 8000.0])
        .into_iter()
        .map(|o| Observation {
            output_tokens: 2.0,
            tokens_per_chunk: 2.6,
            ..o
        })
        .collect();
    let model = fit(&rows, &FitOptions::default()).unwrap();
    assert!(model.residuals.iter().all(|r| r.fitted.is_finite()));
    let back = ModelFile::parse(&model.to_json(), std::path::Path::new("m.json")).unwrap();
    assert_eq!(back.residuals.len(), model.residuals.len());
}

/// Two decode points that differ in batch and in context per sequence:
/// three step terms cannot come from two points. The last is named
/// unknown, not left at 0 unsaid.
#[test]
fn two_decode_points_leave_a_step_term_unknown() {
    let t = Params {
        max_batch: None,
        ..truth()
    };
    let rows = vec![observe(&t, 1, 1000.0, 0), observe(&t, 8, 4000.0, 0)];
    let model = fit(&rows, &FitOptions::default()).unwrap();
    assert!(
        model.warnings.iter().any(|w| matches!(
            w,
            FitWarning::DecodeUnresolved {
                coef: Coef::StepPerContextToken,
                points: 2
            }
        )),
        "{:?}",
        model.warnings
    );
    assert!(model.unknown.contains(&Coef::StepPerContextToken));
    assert!(model.interval(Coef::StepPerContextToken).is_none());
    assert_eq!(model.params.step_per_context_token_s, 0.0);
    // The two remaining terms are fitted from the two points.
    assert!(
        !model.unknown.contains(&Coef::StepPerSeq),
        "{:?}",
        model.warnings
    );
    assert!(model.params.step_per_seq_s > 0.0);
}
