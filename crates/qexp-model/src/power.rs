//! What the deployment's GPUs draw against its load, at its simplest
//! (docs/model.md "Power and cost"): `P = idle + per sequence × sequences
//! in flight`, fitted by least squares on each (trial, point)'s mean power,
//! with each point's sequences in flight from its replay on the fitted
//! timing model, so that a prediction at a load nobody ran reads the same
//! quantity. Its intervals come from the timing fit's own resampling: the
//! same trials drawn, each refit's replay giving its sequences in flight.
//! This file holds the model and what it predicts; power_fit.rs fits it.

use crate::des::{quantile, Load, Outcome};
use qexp_types::cost::{Price, Spent};
use serde::{Deserialize, Serialize};

/// One (trial, point)'s mean power, numbered as its [`Observation`](crate::Observation).
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

impl PowerModel {
    /// The power at `in_flight` sequences, W.
    pub fn power_w(&self, in_flight: f64) -> f64 {
        // A line fitted on noisy points can reach below zero when it is
        // carried far from them; a GPU draws nothing less than nothing.
        (self.idle_w + self.per_seq_w * in_flight).max(0.0)
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
        let n = load.requests.max(1) as usize;
        let tokens: f64 = (0..n).map(|i| load.answer_tokens(i, n)).sum();
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
            let (a, b) = (value * (1.0 - rel).max(0.0), value * (1.0 + rel));
            let (mut lo, mut hi) = (a.min(b), a.max(b));
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
            image_tokens: 0.0,
            output_tokens: 100.0,
            answers: None,
            requests: 10,
        };
        let o = Outcome {
            ttft_s: vec![],
            e2e_s: vec![],
            output_tokens: vec![],
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
