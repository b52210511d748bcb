//! Runs as the deployment model's observations, and runs checked against a
//! fitted model (docs/model.md). The model itself (equations, fit,
//! predictions) is qexp-model's; this module only hands it the per-(trial,
//! point) medians the analysis computed, and judges measured medians
//! against its predictions.

use crate::metrics::PointSummary;
use crate::run::RunAnalysis;
use qexp_model::{Check, ModelFile, Observation, PowerObservation, Source, TRIALS_PER_RUN};
use qexp_types::cost::Price;

/// A run's points as observations: one per (trial, point) with timing.
#[derive(Debug, Clone, PartialEq)]
pub struct RunObservations {
    /// Where they came from.
    pub source: Source,
    /// The observations.
    pub rows: Vec<Observation>,
    /// Points left out, with why (multi-stage or trace loads, another deployment).
    pub skipped: Vec<String>,
    /// Each observed (trial, point)'s mean power, where it was measured
    /// and its energy trusted (numbered as `rows`).
    pub power: Vec<PowerObservation>,
    /// GPUs measured (or rented, `[cost] gpus`), the most of any trial.
    pub gpus: Option<u32>,
    /// The price of the plan's `[cost]`.
    pub price: Option<Price>,
}

/// The observations of `run` (the `index`-th of those fitted together),
/// only `deployment`'s points when given.
pub fn run_observations(
    run: &RunAnalysis,
    index: u32,
    deployment: Option<&str>,
) -> RunObservations {
    let m = &run.manifest;
    let mut rows = Vec::new();
    let mut skipped = Vec::new();
    let mut power = Vec::new();
    let mut gpus = None;
    for p in &run.points {
        if deployment.is_some() && p.point.deployment.as_deref() != deployment {
            continue;
        }
        match point_rows(p, index) {
            Ok(r) => {
                power.extend(power_rows(p, &r));
                gpus = gpus.max(
                    p.trials
                        .iter()
                        .filter_map(|t| t.energy.as_ref()?.gpus)
                        .max(),
                );
                rows.extend(r);
            }
            Err(why) => skipped.push(format!("{}: {why}", p.point.label())),
        }
    }
    RunObservations {
        source: Source {
            id: m.run_id.clone(),
            experiment: m.experiment.clone(),
            plan_hash: m.plan_hash.clone(),
            path: run.dir.clone(),
            deployment: deployment.map(str::to_owned).or_else(|| {
                let all = run_deployments(run);
                (all.len() == 1).then(|| all[0].clone())
            }),
        },
        rows,
        skipped,
        power,
        gpus,
        price: crate::energy::price(m).map(|(price, _)| price),
    }
}

/// The mean power of each of `rows` (the point's observations) whose
/// trial measured it with a trusted energy.
fn power_rows(p: &PointSummary, rows: &[Observation]) -> Vec<PowerObservation> {
    rows.iter()
        .filter_map(|o| {
            let t = p
                .trials
                .iter()
                .find(|t| t.trial == o.trial % TRIALS_PER_RUN)?;
            let e = t.energy.as_ref().filter(|e| e.invalid_reason.is_none())?;
            (e.power_avg_w.is_finite() && e.power_avg_w > 0.0).then(|| PowerObservation {
                label: o.label.clone(),
                trial: o.trial,
                power_w: e.power_avg_w,
            })
        })
        .collect()
}

/// The deployments of a run (empty for a run without `[[deployment]]`).
pub fn run_deployments(run: &RunAnalysis) -> Vec<String> {
    let mut d: Vec<String> = run
        .points
        .iter()
        .filter_map(|p| p.point.deployment.clone())
        .collect();
    d.sort();
    d.dedup();
    d
}

fn point_rows(p: &PointSummary, index: u32) -> Result<Vec<Observation>, String> {
    let rate = match &p.point.open_loop {
        None => None,
        Some(o) if o.trace.is_none() && o.stages.len() == 1 => o.stages.first().map(|s| s.rate),
        Some(_) => return Err("a multi-step or trace load has no single rate to model".into()),
    };
    let finite_or = |v: f64, d: f64| if v.is_finite() { v } else { d };
    let images = p.point.images.as_ref().is_some_and(|i| i.count > 0);
    Ok(p.trials
        .iter()
        .filter(|t| t.invalid_reason.is_none() && t.requests > t.failures)
        .map(|t| {
            let text = finite_or(t.input_planned, f64::from(p.point.input_tokens));
            // The server counts a prompt's image tokens in its usage; the
            // plan's length is the text's.
            let image_tokens = if images && t.prompt_tokens.is_finite() {
                (t.prompt_tokens - text).max(0.0)
            } else {
                0.0
            };
            (t, text + image_tokens, image_tokens)
        })
        .map(|(t, input_tokens, image_tokens)| Observation {
            label: p.point.label(),
            trial: index.saturating_mul(TRIALS_PER_RUN).saturating_add(t.trial),
            concurrency: p.point.concurrency,
            rate_per_s: rate,
            input_tokens,
            image_tokens,
            output_tokens: finite_or(t.completion_tokens, f64::from(p.point.output_tokens)),
            answers: t.answer_spread,
            requests: p.point.requests,
            requests_recorded: true,
            ttft_s: t.ttft_s,
            ttft_p90_s: t.ttft_p90_s,
            e2e_s: t.e2e_s,
            decode_tok_s: t.decode_tok_s,
            agg_tok_s: t.agg_tok_s,
            tokens_per_chunk: t.tokens_per_chunk,
            itl_p50_s: t.itl_p50_s,
        })
        .collect())
}

/// Every point of `run` with timing, predicted by `model` and compared
/// (measured median across trials against the prediction's interval); only
/// the points of the deployment the model was fitted on, when the run has it.
pub fn check_against_model(run: &RunAnalysis, model: &ModelFile) -> Vec<Check> {
    let ours = run_deployments(run);
    let fitted = model
        .sources
        .iter()
        .filter_map(|s| s.deployment.as_deref())
        .find(|d| ours.iter().any(|o| o == d));
    let rows = run_observations(run, 0, fitted).rows;
    let mut checks = qexp_model::check(model, &rows);
    for c in &mut checks {
        c.floor = client_floor(run, &c.point, c.metric);
    }
    checks
}

/// What the client's measurement adds to `metric` at the point labelled
/// `label`: its trials' median event-loop lag p99 for the times counted
/// from the send, 0 otherwise or when not recorded.
fn client_floor(run: &RunAnalysis, label: &str, metric: qexp_model::ModelMetric) -> f64 {
    use qexp_model::ModelMetric as M;
    if !matches!(metric, M::TtftS | M::TtftP90S | M::E2eS) {
        return 0.0;
    }
    let lags: Vec<f64> = run
        .points
        .iter()
        .filter(|p| p.point.label() == label)
        .flat_map(|p| p.trials.iter().map(|t| t.client_loop_lag_p99_s))
        .collect();
    crate::stats::Summary::of(&lags).map_or(0.0, |s| s.median)
}
