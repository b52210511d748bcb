//! What the deployment's GPUs draw against its load, at its simplest
//! (docs/model.md "Power and cost"): `P = idle + per sequence × sequences
//! in flight`, fitted by least squares on each (trial, point)'s mean power,
//! with each point's sequences in flight from its replay on the fitted
//! timing model, so that a prediction at a load nobody ran reads the same
//! quantity. Its intervals come from the timing fit's own resampling: the
//! same trials drawn, each refit's replay giving its sequences in flight.

use crate::des::{quantile, simulate, Load, Outcome};
use crate::file::ModelFile;
use crate::fit::{draws, resampled_interval, strata, FitOptions, Observation};
use crate::ols::{t95, wls};
use crate::params::Params;
use qexp_types::cost::{Price, Spent};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// One (trial, point)'s mean power, numbered as its [`Observation`].
#[derive(Debug, Clone, PartialEq)]
pub struct PowerObservation {
    /// The point's label (as its observation's).
    pub label: String,
    /// The trial (as its observation's).
    pub trial: u32,
    /// Mean power of the deployment's GPUs together over the window, W.
    pub power_w: f64,
}

/// The fitted power of the deployment's GPUs together.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PowerModel {
    /// Power with nothing in flight, W.
    pub idle_w: f64,
    /// Power added by each sequence in flight, W.
    pub per_seq_w: f64,
    /// 90% interval of `idle_w`.
    pub idle_interval: [f64; 2],
    /// 90% interval of `per_seq_w`.
    pub per_seq_interval: [f64; 2],
    /// Mean sequences in flight at the points fitted, lowest and highest:
    /// a prediction outside is extrapolated.
    pub in_flight_range: [f64; 2],
    /// Relative half-width of the 90% band of the fit's residuals (1.645 ×
    /// their root mean square, on the medians across trials).
    pub band: f64,
    /// GPUs measured (what a price per GPU-hour multiplies).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpus: Option<u32>,
    /// The price of the runs' `[cost]`, if they had one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub price: Option<Price>,
    /// `[idle, per sequence]` of each resampled refit.
    pub replicates: Vec<[f64; 2]>,
}

/// Why no power model was fitted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum PowerGap {
    /// No (trial, point) with a trusted mean power.
    #[error("no point measured power ([power] in the plan): the model has no cost")]
    NoPower,
    /// Power at only one load.
    #[error(
        "power was measured at one load only: the per-sequence power is unknown; sweep concurrency"
    )]
    OneLoad,
}

/// A value with its 90% interval.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Span {
    /// The prediction.
    pub value: f64,
    /// Lower end.
    pub lo: f64,
    /// Upper end.
    pub hi: f64,
}

/// What a point costs, as predicted.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CostPrediction {
    /// Mean sequences in flight in the replay.
    pub in_flight: f64,
    /// Power of the GPUs together, W.
    pub power_w: Span,
    /// Joules per output token.
    pub j_per_out_tok: Span,
    /// Dollars per million output tokens (with a price; a price per
    /// GPU-hour also needs the GPU count).
    pub usd_per_m_out: Option<Span>,
    /// The sequences in flight lie outside those fitted.
    pub extrapolated: bool,
}

/// Fits the power model on `power`, beside `model` fitted on `rows` with
/// `opts` (its resampled refits are redrawn from the same seed).
pub fn fit_power(
    model: &ModelFile,
    rows: &[Observation],
    power: &[PowerObservation],
    opts: &FitOptions,
) -> Result<PowerModel, PowerGap> {
    let loads: BTreeMap<&str, Load> = rows.iter().map(|r| (r.label.as_str(), r.load())).collect();
    let power: Vec<&PowerObservation> = power
        .iter()
        .filter(|p| p.power_w.is_finite() && p.power_w > 0.0 && loads.contains_key(&*p.label))
        .collect();
    if power.is_empty() {
        return Err(PowerGap::NoPower);
    }
    let x = in_flight(&loads, &model.params);
    let point = regress(&power, &x).ok_or(PowerGap::OneLoad)?;
    let refs: Vec<&Observation> = rows.iter().collect();
    let drawn = draws(&strata(&refs), opts);
    let replicates: Vec<[f64; 2]> = drawn
        .iter()
        .enumerate()
        .filter_map(|(i, trials)| {
            // The timing refit of the same draw, where every refit succeeded.
            let params = match model.replicates.len() == drawn.len() {
                true => &model.replicates[i],
                false => &model.params,
            };
            let sample: Vec<&PowerObservation> = trials
                .iter()
                .flat_map(|t| power.iter().copied().filter(move |p| p.trial == *t))
                .collect();
            regress(&sample, &in_flight(&loads, params)).map(|(b, _)| b)
        })
        .collect();
    let df = strata(&refs)
        .values()
        .map(|t| t.len().saturating_sub(1))
        .sum();
    let ([idle_w, per_seq_w], se) = point;
    let interval = |j: usize, value: f64| {
        let reps: Vec<f64> = replicates.iter().map(|r| r[j]).collect();
        let [lo, hi] = resampled_interval(value, &reps, df);
        let half = se[j];
        if half.is_finite() {
            [lo.min(value - half), hi.max(value + half)]
        } else {
            [lo, hi]
        }
    };
    let xs: Vec<f64> = power
        .iter()
        .filter_map(|p| x.get(&*p.label).copied())
        .collect();
    Ok(PowerModel {
        idle_w,
        per_seq_w,
        idle_interval: interval(0, idle_w),
        per_seq_interval: interval(1, per_seq_w),
        in_flight_range: [
            xs.iter().copied().fold(f64::INFINITY, f64::min),
            xs.iter().copied().fold(f64::NEG_INFINITY, f64::max),
        ],
        band: band(&power, &x, idle_w, per_seq_w),
        gpus: None,
        price: None,
        replicates,
    })
}

/// Each point's mean sequences in flight, replayed on `params`.
fn in_flight<'a>(loads: &BTreeMap<&'a str, Load>, params: &Params) -> BTreeMap<&'a str, f64> {
    loads
        .iter()
        .map(|(k, l)| (*k, simulate(params, l).mean_in_flight))
        .collect()
}

/// Least squares of power on `1, x`: `[idle, per sequence]` and the half
/// widths of their t-intervals; None with fewer than two loads.
fn regress(rows: &[&PowerObservation], x: &BTreeMap<&str, f64>) -> Option<([f64; 2], [f64; 2])> {
    let (xs, ys): (Vec<Vec<f64>>, Vec<f64>) = rows
        .iter()
        .filter_map(|p| Some((vec![1.0, *x.get(&*p.label)?], p.power_w)))
        .unzip();
    let distinct = xs
        .iter()
        .any(|r| xs.first().is_some_and(|f| (r[1] - f[1]).abs() > 1e-6));
    if !distinct {
        return None;
    }
    let fit = wls(&xs, &ys, &vec![1.0; ys.len()])?;
    let half = |j: usize| t95(fit.df) * fit.se[j];
    Some(([fit.beta[0], fit.beta[1]], [half(0), half(1)]))
}

/// 1.645 × the root mean square of the relative residuals of each point's
/// median power across trials.
fn band(rows: &[&PowerObservation], x: &BTreeMap<&str, f64>, idle: f64, per_seq: f64) -> f64 {
    let mut by_point: BTreeMap<&str, Vec<f64>> = BTreeMap::new();
    for p in rows {
        by_point.entry(&p.label).or_default().push(p.power_w);
    }
    let e: Vec<f64> = by_point
        .iter()
        .filter_map(|(k, v)| {
            let fitted = idle + per_seq * x.get(k)?;
            Some(fitted / quantile(v, 0.5) - 1.0)
        })
        .filter(|e| e.is_finite())
        .collect();
    if e.is_empty() {
        return 0.0;
    }
    1.645 * (e.iter().map(|v| v * v).sum::<f64>() / e.len() as f64).sqrt()
}

impl PowerModel {
    /// The power at `in_flight` sequences, W.
    pub fn power_w(&self, in_flight: f64) -> f64 {
        self.idle_w + self.per_seq_w * in_flight
    }

    /// What `load` costs, from its replay on the fitted parameters
    /// (`point`) and on each resampled refit (`reps`, in the order of the
    /// file's replicates); `agg_band` is the aggregate rate's residual band.
    pub fn predict(
        &self,
        load: &Load,
        point: &Outcome,
        reps: &[Outcome],
        agg_band: f64,
    ) -> CostPrediction {
        let tokens = load.output_tokens.max(1.0) * f64::from(load.requests.max(1));
        let figures = |idle: f64, per_seq: f64, o: &Outcome| {
            let p = idle + per_seq * o.mean_in_flight;
            let j = p / o.agg_tok_s;
            let seconds = tokens / o.agg_tok_s;
            let usd = self.price.and_then(|price| {
                let spent = Spent {
                    seconds,
                    gpus: self.gpus?,
                    energy_j: Some(p * seconds),
                };
                price.usd_per_million(&spent, tokens)
            });
            (p, j, usd)
        };
        let (p, j, usd) = figures(self.idle_w, self.per_seq_w, point);
        let r: Vec<(f64, f64, Option<f64>)> = self
            .replicates
            .iter()
            .zip(reps)
            .map(|(b, o)| figures(b[0], b[1], o))
            .collect();
        let j_band = (self.band * self.band + agg_band * agg_band).sqrt();
        let span = |value: f64, v: Vec<f64>, rel: f64| {
            let (mut lo, mut hi) = (value * (1.0 - rel).max(0.0), value * (1.0 + rel));
            if !v.is_empty() {
                lo = lo.min(quantile(&v, 0.05));
                hi = hi.max(quantile(&v, 0.95));
            }
            Span { value, lo, hi }
        };
        let [a, b] = self.in_flight_range;
        let x = point.mean_in_flight;
        CostPrediction {
            in_flight: x,
            power_w: span(p, r.iter().map(|t| t.0).collect(), self.band),
            j_per_out_tok: span(j, r.iter().map(|t| t.1).collect(), j_band),
            usd_per_m_out: usd.map(|u| span(u, r.iter().filter_map(|t| t.2).collect(), j_band)),
            extrapolated: x < a - 1e-6 || x > b + 1e-6,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::des::Arrivals;

    /// The cost of a replayed point by hand: 2 GPUs at $2 per GPU-hour,
    /// or $0.15 per kWh at PUE 1.3.
    #[test]
    fn a_points_cost_is_its_power_over_its_rate() {
        let m = PowerModel {
            idle_w: 100.0,
            per_seq_w: 40.0,
            idle_interval: [100.0, 100.0],
            per_seq_interval: [40.0, 40.0],
            in_flight_range: [1.0, 4.0],
            band: 0.0,
            gpus: Some(2),
            price: Some(Price::GpuHour { usd: 2.0 }),
            replicates: Vec::new(),
        };
        let load = Load {
            arrivals: Arrivals::Closed { concurrency: 2 },
            input_tokens: 10.0,
            output_tokens: 100.0,
            requests: 10,
        };
        let o = Outcome {
            ttft_s: vec![],
            e2e_s: vec![],
            agg_tok_s: 50.0,
            mean_in_flight: 2.0,
            mean_batch: 2.0,
            mean_context: 0.0,
            batch_seen: vec![],
            context_seen: vec![],
            stall_seen: vec![],
            median_gap: None,
        };
        let c = m.predict(&load, &o, &[], 0.0);
        // 180 W over 50 tok/s = 3.6 J per token; 1000 tokens take 20 s:
        // 2 × $2 × 20 / 3600 = $0.0222, $22.22 per million.
        assert!((c.power_w.value - 180.0).abs() < 1e-9);
        assert!((c.j_per_out_tok.value - 3.6).abs() < 1e-9);
        let usd = c.usd_per_m_out.unwrap().value;
        assert!(
            (usd - 2.0 * 2.0 * 20.0 / 3600.0 / 1000.0 * 1e6).abs() < 1e-9,
            "{usd}"
        );
        assert!(!c.extrapolated);
        // By energy: 3.6 J × 1e6 / 3.6e6 J/kWh × $0.15 × 1.3 = $0.195 per million.
        let kwh = PowerModel {
            price: Some(Price::Energy {
                usd_per_kwh: 0.15,
                pue: 1.3,
            }),
            ..m.clone()
        };
        let usd = kwh
            .predict(&load, &o, &[], 0.0)
            .usd_per_m_out
            .unwrap()
            .value;
        assert!((usd - 0.195).abs() < 1e-9, "{usd}");
        let far = Outcome {
            mean_in_flight: 8.0,
            ..o
        };
        assert!(m.predict(&load, &far, &[], 0.0).extrapolated);
    }
}
