//! Capacity: the highest load (rate, or concurrency for closed-loop
//! sweeps) at which the SLOs still hold, i.e. the share of requests meeting
//! every SLO is at least the SLO's percentile. Between the last point that
//! holds and the first that does not, the crossing is found by linear
//! interpolation of the attainment and marked as interpolated; outside the
//! measured range only a bound is given.

use super::SchedulePoint;
use qexp_plan::SloSection;
use serde::Serialize;

/// What kind of answer the measured points allow.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum CapacityBound {
    /// Interpolated between a point that holds and the next that does not.
    Interpolated,
    /// Every measured load held: capacity is at least `value`.
    AtLeast,
    /// No measured load held: capacity is below `value`.
    Below,
}

/// The load a capacity is counted in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum LoadAxis {
    /// Open-loop arrivals, requests/s.
    Rate,
    /// Closed-loop requests in flight.
    Concurrency,
}

/// Capacity of one group of points that differ only in load.
#[derive(Debug, Clone, Serialize)]
pub struct Capacity {
    /// The load `value` counts: rate (requests/s) or concurrency (requests in flight).
    pub axis: LoadAxis,
    /// Planned prompt tokens of the group.
    pub input_tokens: u32,
    /// Planned output tokens of the group.
    pub output_tokens: u32,
    /// The capacity, or the bound.
    pub value: f64,
    /// How `value` was obtained.
    pub bound: CapacityBound,
    /// Goodput (requests/s meeting every SLO) at the highest load that held, if any.
    pub goodput_rps: Option<f64>,
    /// The deployment of the group, in a run with deployments.
    pub deployment: Option<String>,
}

/// Capacity per (input, output, deployment) group with at least two loads.
pub fn capacity(points: &[SchedulePoint], slo: &SloSection) -> Vec<Capacity> {
    // (input, output, deployment)
    type Key = (u32, u32, Option<String>);
    let mut groups: Vec<(Key, Vec<&SchedulePoint>)> = Vec::new();
    for p in points {
        // Multi-stage and trace points have no single load value.
        let single = p
            .point
            .open_loop
            .as_ref()
            .is_none_or(|o| o.stages.len() == 1);
        if !single {
            continue;
        }
        let key = (
            p.point.input_tokens,
            p.point.output_tokens,
            p.point.deployment.clone(),
        );
        match groups.iter_mut().find(|g| g.0 == key) {
            Some(g) => g.1.push(p),
            None => groups.push((key, vec![p])),
        }
    }
    groups
        .into_iter()
        .filter_map(|((input_tokens, output_tokens, deployment), mut ps)| {
            let open = ps[0].point.open_loop.is_some();
            let load = |p: &SchedulePoint| {
                if open {
                    p.planned_rate.unwrap_or(f64::NAN)
                } else {
                    f64::from(p.point.concurrency)
                }
            };
            ps.retain(|p| p.median.slo_attainment.is_some() && load(p).is_finite());
            ps.sort_by(|a, b| load(a).total_cmp(&load(b)));
            ps.dedup_by(|a, b| load(a) == load(b));
            if ps.len() < 2 {
                return None;
            }
            let att = |p: &SchedulePoint| p.median.slo_attainment.unwrap_or(0.0);
            let target = slo.percentile;
            let (value, bound, at) = match ps.iter().position(|p| att(p) < target) {
                None => (
                    load(ps[ps.len() - 1]),
                    CapacityBound::AtLeast,
                    ps.last().copied(),
                ),
                Some(0) => (load(ps[0]), CapacityBound::Below, None),
                Some(k) => {
                    let (a, b) = (ps[k - 1], ps[k]);
                    let (x0, x1, y0, y1) = (load(a), load(b), att(a), att(b));
                    let x = x0 + (y0 - target) / (y0 - y1) * (x1 - x0);
                    (x, CapacityBound::Interpolated, Some(a))
                }
            };
            Some(Capacity {
                axis: if open {
                    LoadAxis::Rate
                } else {
                    LoadAxis::Concurrency
                },
                input_tokens,
                output_tokens,
                value,
                bound,
                goodput_rps: at.and_then(|p| p.median.goodput_rps),
                deployment,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schedule::{LagCause, ScheduleTrial};
    use qexp_plan::{Arrival, OpenLoop, Point, Stage};

    fn at(rate: f64, attainment: f64) -> SchedulePoint {
        let point = Point {
            id: 0,
            concurrency: 0,
            input_tokens: 100,
            output_tokens: 10,
            requests: 10,
            warmup: 0,
            open_loop: Some(OpenLoop {
                arrival: Arrival::Poisson,
                burstiness: 1.0,
                max_in_flight: None,
                stages: vec![Stage { rate, requests: 10 }],
                trace: None,
            }),
            deployment: None,
            images: None,
        };
        SchedulePoint {
            planned_rate: point.rate(),
            median: ScheduleTrial {
                trial: 0,
                requests: 10,
                scheduled_rate: rate,
                achieved_rate: rate,
                service_ttft_p50_s: 0.1,
                service_ttft_p99_s: 0.1,
                response_ttft_p50_s: 0.1,
                response_ttft_p99_s: 0.1,
                service_e2e_p50_s: 1.0,
                service_e2e_p99_s: 1.0,
                response_e2e_p50_s: 1.0,
                response_e2e_p99_s: 1.0,
                send_lag_p50_s: 0.0,
                send_lag_p99_s: 0.0,
                lag_cause: LagCause::Client,
                slo_attainment: Some(attainment),
                goodput_rps: Some(rate * attainment),
            },
            slo_holds: Some(attainment >= 0.9),
            point,
            trials: Vec::new(),
        }
    }

    fn slo() -> SloSection {
        SloSection {
            ttft_s: Some(1.0),
            tpot_s: None,
            e2e_s: None,
            percentile: 0.9,
        }
    }

    #[test]
    fn interpolates_between_the_last_hold_and_the_first_miss() {
        // Attainment 1.0 at 4 req/s, 0.95 at 8, 0.75 at 16: 0.9 is crossed
        // a quarter of the way from 8 to 16.
        let ps = vec![at(16.0, 0.75), at(4.0, 1.0), at(8.0, 0.95)];
        let c = capacity(&ps, &slo());
        assert_eq!(c.len(), 1);
        assert_eq!(c[0].bound, CapacityBound::Interpolated);
        assert!((c[0].value - 10.0).abs() < 1e-9, "{}", c[0].value);
        assert_eq!(c[0].axis, LoadAxis::Rate);
        assert_eq!(c[0].goodput_rps, Some(8.0 * 0.95));
    }

    #[test]
    fn each_deployment_has_its_own_capacity() {
        let of = |d: &str, rate: f64, attainment: f64| {
            let mut p = at(rate, attainment);
            p.point.deployment = Some(d.into());
            p
        };
        let ps = [
            of("a", 4.0, 1.0),
            of("a", 8.0, 0.95),
            of("b", 4.0, 0.95),
            of("b", 8.0, 0.5),
        ];
        let c = capacity(&ps, &slo());
        let got: Vec<(Option<&str>, CapacityBound, f64)> = c
            .iter()
            .map(|c| (c.deployment.as_deref(), c.bound, c.value))
            .collect();
        assert_eq!(got.len(), 2, "{got:?}");
        assert_eq!(got[0].0, Some("a"));
        assert_eq!((got[0].1, got[0].2), (CapacityBound::AtLeast, 8.0));
        assert_eq!(
            (got[1].0, got[1].1),
            (Some("b"), CapacityBound::Interpolated)
        );
        assert!((got[1].2 - (4.0 + 4.0 / 9.0)).abs() < 1e-9, "{}", got[1].2);
    }

    #[test]
    fn bounds_outside_the_measured_range() {
        let c = capacity(&[at(1.0, 1.0), at(2.0, 0.95)], &slo());
        assert_eq!((c[0].bound, c[0].value), (CapacityBound::AtLeast, 2.0));
        let c = capacity(&[at(1.0, 0.5), at(2.0, 0.2)], &slo());
        assert_eq!((c[0].bound, c[0].value), (CapacityBound::Below, 1.0));
        assert_eq!(c[0].goodput_rps, None);
        // One load alone says nothing about capacity.
        assert!(capacity(&[at(1.0, 1.0)], &slo()).is_empty());
    }
}
