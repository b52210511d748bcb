//! Predictions with intervals, and capacity under an SLO (docs/model.md
//! "Predicting"). A prediction replays the point on the fitted parameters;
//! its interval joins the replays on every resampled refit (5th–95th
//! percentile) with the fit's residual band, so it covers both what the
//! trials leave uncertain and what the model's form misses.

use crate::des::{simulate, Arrivals, Load};
use crate::file::{ModelFile, ModelMetric, Ranges};
use crate::fit::predicted;
use crate::params::Params;
use crate::slo::Slo;

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
    /// One per [`ModelMetric`].
    pub metrics: Vec<Predicted>,
    /// Axes outside the fitted ranges (empty: an interpolation).
    pub extrapolated: Vec<Axis>,
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
    let value_of = |m| predicted(&point, load.output_tokens, m);
    let metrics = ModelMetric::ALL
        .into_iter()
        .map(|metric| {
            let value = value_of(metric);
            let rel = band(model, metric, &value_of);
            let (mut lo, mut hi) = (value * (1.0 - rel).max(0.0), value * (1.0 + rel));
            let v: Vec<f64> = reps
                .iter()
                .map(|o| predicted(o, load.output_tokens, metric))
                .collect();
            if !v.is_empty() {
                lo = lo.min(crate::des::quantile(&v, 0.05));
                hi = hi.max(crate::des::quantile(&v, 0.95));
            }
            Predicted {
                metric,
                value,
                lo,
                hi,
            }
        })
        .collect();
    Prediction {
        load: *load,
        metrics,
        extrapolated: extrapolated(&model.ranges, load),
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
/// takes the what-if's value.
fn shifted(rep: &Params, fitted: &Params, what_if: &Params) -> Params {
    let mut out = *rep;
    for c in crate::params::Coef::ALL {
        if c.get(fitted) != c.get(what_if) {
            match c.get(what_if) {
                Some(v) => c.set(&mut out, v),
                None => out.max_batch = None,
            }
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

/// The highest concurrency (1 to `bound`) or rate holding `slo` at
/// `input`/`output` tokens, by bisection (the metrics grow with load).
pub fn capacity(
    model: &ModelFile,
    params: &Params,
    slo: &Slo,
    axis: Axis,
    input: f64,
    output: f64,
    bound: f64,
) -> Capacity {
    let at = |x: f64| {
        let arrivals = match axis {
            Axis::Rate => Arrivals::Rate { per_s: x, seed: 1 },
            _ => Arrivals::Closed {
                concurrency: x.round().max(1.0) as u32,
            },
        };
        let load = Load {
            arrivals,
            input_tokens: input,
            output_tokens: output,
            requests: default_requests(arrivals),
        };
        predict_with(model, params, &load)
    };
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

/// The highest rate in `(0, bound]` with `ok`, to 1% (geometric bisection).
fn bisect_rate(ok: impl Fn(f64) -> bool, bound: f64) -> Option<f64> {
    let mut lo = bound / 1024.0;
    if !ok(lo) {
        return None;
    }
    if ok(bound) {
        return Some(bound);
    }
    let mut hi = bound;
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
