//! Measured medians against a model's predictions: held-out errors,
//! interval coverage, and the points a model cannot explain.

use crate::des::{quantile, Arrivals, Load};
use crate::file::{ModelFile, ModelMetric};
use crate::fit::Observation;
use crate::predict::predict;
use serde::Serialize;
use std::collections::BTreeMap;

/// One point and metric: the median across trials against the prediction.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Check {
    /// The point's label.
    pub point: String,
    /// The metric.
    pub metric: ModelMetric,
    /// Median across trials.
    pub measured: f64,
    /// The model's prediction.
    pub predicted: f64,
    /// Lower end of its 90% interval.
    pub lo: f64,
    /// Upper end of its 90% interval.
    pub hi: f64,
    /// The point lies outside the fitted ranges.
    pub extrapolated: bool,
    /// What the client's own measurement adds, in the metric's unit: the
    /// point's event-loop lag (its trials' median p99) for the times that
    /// start at the send (TTFT, its p90, E2E); 0 for TPOT and throughput,
    /// and where the run did not record it.
    pub floor: f64,
}

/// Relative slack around a prediction's interval before a median is called
/// unexplained: the intervals come from resampling the fitted trials and
/// hold the deployment's noise, not what a second client, host or build
/// adds, which moves a compressed simulator's 18 ms TTFT by a few percent.
pub const CHECK_TOLERANCE: f64 = 0.10;

impl Check {
    /// Relative error of the prediction: predicted / measured − 1.
    pub fn error(&self) -> f64 {
        self.predicted / self.measured - 1.0
    }

    /// The measured median is outside the prediction's 90% interval (what
    /// interval coverage counts).
    pub fn outside(&self) -> bool {
        self.measured < self.lo || self.measured > self.hi
    }

    /// The interval widened by what the measurement adds: [`CHECK_TOLERANCE`]
    /// of each end and the client's [`Check::floor`].
    pub fn bounds(&self) -> (f64, f64) {
        (
            self.lo * (1.0 - CHECK_TOLERANCE) - self.floor,
            self.hi * (1.0 + CHECK_TOLERANCE) + self.floor,
        )
    }

    /// The measured median is outside even the widened interval
    /// ([`Check::bounds`]): the model cannot explain it (a cliff, a cache
    /// effect, a restart), and the client's own measurement cannot either.
    pub fn unexplained(&self) -> bool {
        let (lo, hi) = self.bounds();
        self.measured < lo || self.measured > hi
    }
}

/// Predicts every point of `rows` and compares each measured metric.
pub fn check(model: &ModelFile, rows: &[Observation]) -> Vec<Check> {
    let mut by_point: BTreeMap<&str, Vec<&Observation>> = BTreeMap::new();
    for r in rows {
        by_point.entry(r.label.as_str()).or_default().push(r);
    }
    let mut out = Vec::new();
    for (label, mine) in by_point {
        let Some(first) = mine.first() else { continue };
        let mut load: Load = first.load();
        if let Arrivals::Rate { per_s, .. } = load.arrivals {
            load.arrivals = Arrivals::Rate { per_s, seed: 1 };
        }
        let pred = predict(model, &load);
        for m in ModelMetric::ALL {
            let v: Vec<f64> = mine.iter().map(|r| r.measured(m)).collect();
            let measured = quantile(&v, 0.5);
            let Some(p) = pred.get(m) else { continue };
            if measured.is_finite() && measured > 0.0 && p.value.is_finite() {
                out.push(Check {
                    point: label.to_owned(),
                    metric: m,
                    measured,
                    predicted: p.value,
                    lo: p.lo,
                    hi: p.hi,
                    extrapolated: !pred.extrapolated.is_empty(),
                    floor: 0.0,
                });
            }
        }
    }
    out
}

/// Per metric: the median absolute relative error and the interval coverage.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct ErrorSummary {
    /// The metric.
    pub metric: ModelMetric,
    /// Points compared.
    pub n: usize,
    /// Median of |predicted / measured − 1|.
    pub median_abs_error: f64,
    /// Points whose measured median lies inside the 90% interval.
    pub covered: usize,
}

/// [`ErrorSummary`] of each metric that has checks.
pub fn summarize(checks: &[Check]) -> Vec<ErrorSummary> {
    ModelMetric::ALL
        .into_iter()
        .filter_map(|metric| {
            let mine: Vec<&Check> = checks.iter().filter(|c| c.metric == metric).collect();
            (!mine.is_empty()).then(|| ErrorSummary {
                metric,
                n: mine.len(),
                median_abs_error: quantile(
                    &mine.iter().map(|c| c.error().abs()).collect::<Vec<_>>(),
                    0.5,
                ),
                covered: mine.iter().filter(|c| !c.outside()).count(),
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn c(measured: f64) -> Check {
        Check {
            point: "c=1".into(),
            metric: ModelMetric::TtftS,
            measured,
            predicted: 1.0,
            lo: 0.9,
            hi: 1.2,
            extrapolated: false,
            floor: 0.0,
        }
    }

    #[test]
    fn a_median_outside_the_widened_interval_is_unexplained() {
        assert!(!c(1.0).outside() && !c(0.9).outside() && !c(1.2).outside());
        assert!(c(0.89).outside() && c(1.5).outside());
        // 10% beyond either end is still explained; further is not.
        assert!(!c(0.89).unexplained() && !c(1.3).unexplained());
        assert!(c(0.8).unexplained() && c(1.5).unexplained());
        // The client's floor widens it further, in the metric's unit.
        let floored = Check {
            floor: 0.2,
            ..c(1.5)
        };
        assert!(!floored.unexplained() && floored.outside());
        assert!((c(0.8).error() - 0.25).abs() < 1e-12);
        let s = summarize(&[c(1.0), c(2.0), c(0.5)]);
        assert_eq!((s[0].n, s[0].covered), (3, 1));
        assert!((s[0].median_abs_error - 0.5).abs() < 1e-12);
    }
}
