//! Predictions with intervals, and capacity under an SLO (docs/model.md
//! "Predicting"). A prediction replays the point on the fitted parameters;
//! its interval joins the replays on every resampled refit (5th–95th
//! percentile) with the fit's residual band, so it covers both what the
//! trials leave uncertain and what the model's form misses.

use crate::des::{simulate, Arrivals, Load};
use crate::file::{is_tail, MIN_TAIL_REQUESTS};
use crate::file::{ModelFile, ModelMetric, Ranges};
use crate::fit::predicted;
use crate::params::{Coef, Params};
use crate::slo::Slo;
use qexp_types::cost::Price;

/// Replicates replayed per prediction, at most (enough for a 5–95% interval).
const MAX_REPLICATES: usize = 40;

/// A predicted value with its 90% interval.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Predicted {
    /// The metric.
    pub metric: ModelMetric,
    /// On the fitted parameters.
    pub value: f64,
    /// Lower end.
    pub lo: f64,
    /// Upper end.
    pub hi: f64,
}

/// An axis of a load point.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Axis {
    /// Closed-loop concurrency.
    Concurrency,
    /// Open-loop rate.
    Rate,
    /// Input tokens.
    InputTokens,
    /// Output tokens.
    OutputTokens,
}

impl Axis {
    /// Its name in tables.
    pub fn name(self) -> &'static str {
        match self {
            Axis::Concurrency => "concurrency",
            Axis::Rate => "rate",
            Axis::InputTokens => "input",
            Axis::OutputTokens => "output",
        }
    }
}

/// The predictions at one point.
#[derive(Debug, Clone, PartialEq)]
pub struct Prediction {
    /// The point.
    pub load: Load,
    /// One per [`ModelMetric`] predicted (a refused tail is absent).
    pub metrics: Vec<Predicted>,
    /// Tails not predicted, and why.
    pub refused: Vec<TailRefused>,
    /// Axes outside the fitted ranges (empty: an interpolation).
    pub extrapolated: Vec<Axis>,
    /// Power, energy and cost, where the model has power.
    pub cost: Option<crate::power::CostPrediction>,
}

/// A tail the model does not predict at a point: too few requests there.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("{} not predicted: {requests} requests per point are too few for a 90th percentile (at least {MIN_TAIL_REQUESTS}; give --requests)", metric.name())]
pub struct TailRefused {
    /// The tail.
    pub metric: ModelMetric,
    /// The requests of the point.
    pub requests: u32,
}

impl Prediction {
    /// The prediction of `m`.
    pub fn get(&self, m: ModelMetric) -> Option<Predicted> {
        self.metrics.iter().find(|p| p.metric == m).copied()
    }
}

/// Requests replayed per point when the caller gives none: twice the
/// concurrency (the founding plans' `requests = "2x"`), or a minute of
/// arrivals (50 to 2000) in open loop.
pub fn default_requests(arrivals: Arrivals) -> u32 {
    match arrivals {
        Arrivals::Closed { concurrency } => concurrency.max(1).saturating_mul(2),
        Arrivals::Rate { per_s, .. } => (per_s * 60.0).clamp(50.0, 2000.0) as u32,
    }
}

/// Predicts every metric at `load`.
pub fn predict(model: &ModelFile, load: &Load) -> Prediction {
    predict_with(model, &model.params, load)
}

/// [`predict`] with `params` in place of the model's own (a what-if; the
/// replicates are shifted by the same change).
pub fn predict_with(model: &ModelFile, params: &Params, load: &Load) -> Prediction {
    let point = simulate(params, load);
    let reps: Vec<_> = model
        .replicates
        .iter()
        .take(MAX_REPLICATES)
        .map(|r| simulate(&shifted(r, &model.params, params), load))
        .collect();
    let value_of = |m| predicted(&point, m);
    let tails_ok = load.requests >= MIN_TAIL_REQUESTS;
    let refused: Vec<TailRefused> = ModelMetric::ALL
        .into_iter()
        .filter(|m| is_tail(*m) && !tails_ok)
        .map(|metric| TailRefused {
            metric,
            requests: load.requests,
        })
        .collect();
    let median_of = |m| match m {
        ModelMetric::TtftP90S => Some(value_of(ModelMetric::TtftS)),
        _ => None,
    };
    let metrics = ModelMetric::ALL
        .into_iter()
        .filter(|m| !refused.iter().any(|r| r.metric == *m))
        .map(|metric| {
            let value = value_of(metric);
            let rel = band(model, metric, &value_of);
            let (mut lo, mut hi) = (value * (1.0 - rel).max(0.0), value * (1.0 + rel));
            let v: Vec<f64> = reps.iter().map(|o| predicted(o, metric)).collect();
            if !v.is_empty() {
                lo = lo.min(crate::des::quantile(&v, 0.05));
                hi = hi.max(crate::des::quantile(&v, 0.95));
            }
            // A tail is never below its own median: the residual band (a
            // relative width that can pass 100%) stops there.
            if let Some(median) = median_of(metric) {
                lo = lo.max(median.min(value));
            }
            Predicted {
                metric,
                value,
                lo,
                hi,
            }
        })
        .collect();
    let cost = model.power.as_ref().map(|pw| {
        pw.predict(
            load,
            &point,
            &reps,
            band(model, ModelMetric::AggTokS, &value_of),
        )
    });
    Prediction {
        load: *load,
        metrics,
        refused,
        extrapolated: extrapolated(&model.ranges, load),
        cost,
    }
}

/// The residual band of `metric` at a point; E2E without a band of its own
/// combines TTFT's and TPOT's in proportion to the two parts of E2E.
fn band(model: &ModelFile, metric: ModelMetric, value: &dyn Fn(ModelMetric) -> f64) -> f64 {
    if let Some(b) = model.band(metric) {
        return b;
    }
    if metric != ModelMetric::E2eS {
        return 0.0;
    }
    let (ttft, e2e) = (value(ModelMetric::TtftS), value(ModelMetric::E2eS));
    let rt = model.band(ModelMetric::TtftS).unwrap_or(0.0) * ttft;
    let rp = model.band(ModelMetric::TpotS).unwrap_or(0.0) * (e2e - ttft);
    let b = (rt * rt + rp * rp).sqrt() / e2e;
    if b.is_finite() {
        b
    } else {
        0.0
    }
}

/// A replicate moved by a what-if: every coefficient the what-if changed
/// is scaled by the same factor (the replicate keeps its spread about the
/// new value), or takes the what-if's value where the fit had none to scale
/// (0, or the batch limit); the what-if's schedule, intake window and
/// prefill units replace the fitted ones.
fn shifted(rep: &Params, fitted: &Params, what_if: &Params) -> Params {
    let mut out = *rep;
    out.schedule = what_if.schedule;
    out.intake_s = what_if.intake_s;
    out.prefill_units = what_if.prefill_units;
    for c in crate::params::Coef::ALL {
        if c.get(fitted) == c.get(what_if) {
            continue;
        }
        match (c.get(what_if), c.get(fitted), c.get(rep)) {
            (Some(v), Some(f), Some(r)) if c != Coef::MaxBatch && f > 0.0 => {
                c.set(&mut out, r * v / f)
            }
            (Some(v), _, _) => c.set(&mut out, v),
            (None, _, _) => out.max_batch = None,
        }
    }
    out
}

/// The axes of `load` outside `ranges`.
pub fn extrapolated(ranges: &Ranges, load: &Load) -> Vec<Axis> {
    let outside =
        |r: Option<[f64; 2]>, v: f64| r.is_none_or(|[lo, hi]| v < lo - 1e-9 || v > hi + 1e-9);
    let mut out = Vec::new();
    match load.arrivals {
        Arrivals::Closed { concurrency } => {
            if outside(ranges.concurrency, f64::from(concurrency)) {
                out.push(Axis::Concurrency);
            }
        }
        Arrivals::Rate { per_s, .. } => {
            if outside(ranges.rate, per_s) {
                out.push(Axis::Rate);
            }
        }
    }
    if outside(ranges.input_tokens, load.input_tokens) {
        out.push(Axis::InputTokens);
    }
    if outside(ranges.output_tokens, load.output_tokens) {
        out.push(Axis::OutputTokens);
    }
    out
}

/// The highest load that holds an SLO, with its interval.
#[derive(Debug, Clone, PartialEq)]
pub struct Capacity {
    /// Concurrency or rate.
    pub axis: Axis,
    /// On the predictions' values; None: not even the lowest load holds it.
    pub value: Option<f64>,
    /// Where the pessimistic end of every interval still holds it.
    pub lo: Option<f64>,
    /// Where the optimistic end does.
    pub hi: Option<f64>,
    /// The search stopped at this bound (the capacity is at least it when equal).
    pub bound: f64,
    /// The capacity lies outside the fitted ranges.
    pub extrapolated: bool,
}

/// Which end of each interval a capacity search judges.
#[derive(Debug, Clone, Copy, PartialEq)]
enum End {
    Value,
    Pessimistic,
    Optimistic,
}

fn holds(pred: &Prediction, slo: &Slo, end: End) -> bool {
    slo.limits.iter().all(|(m, limit)| {
        pred.get(*m).is_some_and(|p| {
            let v = match end {
                End::Value => p.value,
                End::Pessimistic => p.hi,
                End::Optimistic => p.lo,
            };
            v <= *limit
        })
    })
}

/// What a capacity search varies and holds fixed.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CapacityQuery {
    /// Concurrency or rate.
    pub axis: Axis,
    /// Prompt tokens per request.
    pub input_tokens: f64,
    /// Image tokens per request (what the vision encoder makes of its images).
    pub image_tokens: f64,
    /// Output tokens per request.
    pub output_tokens: f64,
    /// The highest concurrency or rate tried.
    pub bound: f64,
    /// Requests replayed per load; None: [`default_requests`] of each.
    pub requests: Option<u32>,
}

/// The lowest rate a capacity search tries, requests per second (one
/// request in about three hours): below it, no rate holds the SLO.
pub const MIN_RATE: f64 = 1e-4;

/// The highest concurrency (1 to `q.bound`) or rate ([`MIN_RATE`] to
/// `q.bound`) holding `slo`, by bisection (the metrics grow with load).
/// An SLO on a tail replays each load with at least [`MIN_TAIL_REQUESTS`].
pub fn capacity(model: &ModelFile, params: &Params, slo: &Slo, q: &CapacityQuery) -> Capacity {
    let CapacityQuery { axis, bound, .. } = *q;
    let at = |x: f64| predict_with(model, params, &search_load(model, q, slo, x));
    let search = |end: End| match axis {
        Axis::Rate => bisect_rate(|x| holds(&at(x), slo, end), bound),
        _ => bisect_int(|x| holds(&at(x), slo, end), bound.max(1.0) as u32).map(f64::from),
    };
    let value = search(End::Value);
    let lo = search(End::Pessimistic);
    let hi = search(End::Optimistic);
    let range = match axis {
        Axis::Rate => model.ranges.rate,
        _ => model.ranges.concurrency,
    };
    let extrapolated = [value, lo, hi]
        .into_iter()
        .flatten()
        .any(|x| range.is_none_or(|[a, b]| x < a || x > b))
        || !extrapolated(&model.ranges, &at(1.0).load)
            .iter()
            .all(|a| matches!(a, Axis::Concurrency | Axis::Rate));
    Capacity {
        axis,
        value,
        lo,
        hi,
        bound,
        extrapolated,
    }
}

/// The load a search along `q.axis` replays at `x`, its answers spread as
/// `model`'s; an SLO on a tail is judged where the tail is predicted (at
/// least [`MIN_TAIL_REQUESTS`]).
fn search_load(model: &ModelFile, q: &CapacityQuery, slo: &Slo, x: f64) -> Load {
    let arrivals = match q.axis {
        Axis::Rate => Arrivals::Rate { per_s: x, seed: 1 },
        _ => Arrivals::Closed {
            concurrency: x.round().max(1.0) as u32,
        },
    };
    let mut requests = q.requests.unwrap_or_else(|| default_requests(arrivals));
    if slo.limits.iter().any(|(m, _)| is_tail(*m)) {
        requests = requests.max(MIN_TAIL_REQUESTS);
    }
    Load {
        arrivals,
        input_tokens: q.input_tokens,
        image_tokens: q.image_tokens,
        output_tokens: q.output_tokens,
        answers: model.answers_at(q.output_tokens),
        requests,
    }
}

/// What the cheapest load minimises.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CostObjective {
    /// Dollars per million output tokens (the model has a price).
    UsdPerMOut,
    /// Joules per output token (no price).
    JPerOutTok,
}

/// The cheapest concurrency that holds an SLO, and its prediction.
#[derive(Debug, Clone, PartialEq)]
pub struct Cheapest {
    /// What was minimised.
    pub objective: CostObjective,
    /// The concurrency.
    pub concurrency: u32,
    /// Its prediction (with its cost).
    pub prediction: Prediction,
}

/// Among the concurrencies from 1 to the capacity under `slo` (each
/// holding it on the predictions' values), the one of the lowest $ per
/// million output tokens, or of the lowest J per output token without a
/// price; None without power in the model, on the rate axis, or when no
/// load holds the SLO. Loads are compared on the fitted parameters; the
/// chosen one is predicted with its intervals.
pub fn cheapest(
    model: &ModelFile,
    params: &Params,
    slo: &Slo,
    q: &CapacityQuery,
) -> Option<Cheapest> {
    let power = model.power.as_ref()?;
    if q.axis == Axis::Rate {
        return None;
    }
    let top = capacity(model, params, slo, q).value? as u32;
    let objective = match (power.price, power.gpus) {
        (Some(Price::Energy { .. }), _) | (Some(Price::GpuHour { .. }), Some(_)) => {
            CostObjective::UsdPerMOut
        }
        _ => CostObjective::JPerOutTok,
    };
    let mut best: Option<(u32, f64)> = None;
    for c in 1..=top {
        let load = search_load(model, q, slo, f64::from(c));
        let o = simulate(params, &load);
        let cost = power.predict(&load, &o, &[], 0.0);
        let v = match objective {
            CostObjective::UsdPerMOut => cost.usd_per_m_out.map_or(f64::NAN, |s| s.value),
            CostObjective::JPerOutTok => cost.j_per_out_tok.value,
        };
        let fits = ModelMetric::ALL.into_iter().all(|m| {
            slo.limits
                .iter()
                .filter(|(l, _)| *l == m)
                .all(|(_, limit)| predicted(&o, m) <= *limit)
        });
        if fits && v.is_finite() && best.is_none_or(|(_, b)| v < b) {
            best = Some((c, v));
        }
    }
    let (concurrency, _) = best?;
    Some(Cheapest {
        objective,
        concurrency,
        prediction: predict_with(
            model,
            params,
            &search_load(model, q, slo, f64::from(concurrency)),
        ),
    })
}

/// The largest `x` in `1..=bound` with `ok(x)`, given `ok` holds below a threshold only.
fn bisect_int(ok: impl Fn(f64) -> bool, bound: u32) -> Option<u32> {
    if !ok(1.0) {
        return None;
    }
    if ok(f64::from(bound)) {
        return Some(bound);
    }
    let (mut good, mut bad) = (1u32, bound);
    while bad - good > 1 {
        let mid = good + (bad - good) / 2;
        if ok(f64::from(mid)) {
            good = mid;
        } else {
            bad = mid;
        }
    }
    Some(good)
}

/// The highest rate in `[MIN_RATE, bound]` with `ok`, to 1%: halving from
/// `bound` until a rate holds, then geometric bisection.
fn bisect_rate(ok: impl Fn(f64) -> bool, bound: f64) -> Option<f64> {
    if ok(bound) {
        return Some(bound);
    }
    let mut hi = bound;
    let mut lo = bound / 2.0;
    while !ok(lo) {
        if lo <= MIN_RATE {
            return None;
        }
        hi = lo;
        lo = (lo / 2.0).max(MIN_RATE);
    }
    while hi / lo > 1.01 {
        let mid = (lo * hi).sqrt();
        if ok(mid) {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    Some(lo)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::params::Schedule;
    use crate::table::{FOUNDING_MODEL, FOUNDING_MODEL_PATH};
    use std::path::Path;

    fn founding() -> ModelFile {
        ModelFile::parse(FOUNDING_MODEL, Path::new(FOUNDING_MODEL_PATH)).unwrap()
    }

    /// A what-if moves each replicate by the same factor and onto its
    /// schedule; it does not put every replicate on the point estimate.
    #[test]
    fn a_what_if_keeps_each_replicates_spread_and_takes_its_schedule() {
        let fitted = founding().params;
        let rep = Params {
            step_base_s: 1.1 * fitted.step_base_s,
            ..fitted
        };
        let what_if = Params {
            step_base_s: 2.0 * fitted.step_base_s,
            schedule: match fitted.schedule {
                Schedule::Separate => Schedule::Mixed,
                Schedule::Mixed => Schedule::Separate,
            },
            ..fitted
        };
        let out = shifted(&rep, &fitted, &what_if);
        assert_eq!(out.schedule, what_if.schedule);
        assert!((out.step_base_s / (2.2 * fitted.step_base_s) - 1.0).abs() < 1e-12);
        assert_eq!(out.prefill_fixed_s, rep.prefill_fixed_s);
        // A term the fit had at 0 takes the what-if's value.
        let zero = Params {
            step_per_context_token_s: 0.0,
            ..fitted
        };
        let set = Params {
            step_per_context_token_s: 1e-7,
            ..zero
        };
        assert_eq!(shifted(&zero, &zero, &set).step_per_context_token_s, 1e-7);
    }

    /// Under a second per request: a lone 100K prompt takes about 15 s, so
    /// no rate near the default bound's thousandth holds TTFT ≤ 30 s, but a
    /// low rate does.
    #[test]
    fn a_rate_capacity_far_below_the_bound_is_found() {
        let model = founding();
        let slo = Slo::parse("ttft=30s").unwrap();
        let q = CapacityQuery {
            axis: Axis::Rate,
            input_tokens: 100_000.0,
            image_tokens: 0.0,
            output_tokens: 200.0,
            bound: 1000.0,
            requests: Some(20),
        };
        let c = capacity(&model, &model.params, &slo, &q);
        let v = c.value.expect("a low rate holds it");
        assert!(v > MIN_RATE && v < 1000.0 / 1024.0, "{c:?}");
        let at = |per_s: f64| {
            let load = Load {
                arrivals: Arrivals::Rate { per_s, seed: 1 },
                input_tokens: 100_000.0,
                image_tokens: 0.0,
                output_tokens: 200.0,
                answers: None,
                requests: 20,
            };
            holds(&predict(&model, &load), &slo, End::Value)
        };
        assert!(at(v) && !at(1.02 * v), "{v}");
        let never = Slo::parse("ttft=1s").unwrap();
        assert_eq!(capacity(&model, &model.params, &never, &q).value, None);
    }

    /// The capacity is searched at the request count asked for: the
    /// highest concurrency holding the SLO at that count, and no higher.
    /// TTFT p90 depends on it: at twice the concurrency, half the requests
    /// are the first wave, all prefilling at once.
    #[test]
    fn a_capacity_is_searched_at_the_requests_given() {
        let model = founding();
        let slo = Slo::parse("ttft_p90=1s").unwrap();
        let mut found = Vec::new();
        for requests in [None, Some(400)] {
            let q = CapacityQuery {
                axis: Axis::Concurrency,
                input_tokens: 1000.0,
                image_tokens: 0.0,
                output_tokens: 500.0,
                bound: 256.0,
                requests,
            };
            let c = capacity(&model, &model.params, &slo, &q).value.unwrap() as u32;
            let at = |concurrency: u32| {
                let arrivals = Arrivals::Closed { concurrency };
                let load = Load {
                    arrivals,
                    input_tokens: 1000.0,
                    image_tokens: 0.0,
                    output_tokens: 500.0,
                    answers: None,
                    requests: requests.unwrap_or_else(|| default_requests(arrivals)),
                };
                holds(&predict(&model, &load), &slo, End::Value)
            };
            assert!(at(c) && !at(c + 1), "{requests:?}: {c}");
            found.push(c);
        }
        assert_ne!(found[0], found[1], "the request count made no difference");
    }
}
