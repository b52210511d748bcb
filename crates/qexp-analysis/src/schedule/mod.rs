//! Latency from the schedule, achieved rate and goodput: what open-loop
//! load (and closed-loop load under SLOs) says beyond the service latencies.
//!
//! A request's *service* latency counts from its send; its *response time*
//! counts from when it was scheduled to go (`queue_s` + service latency).
//! The two differ when the client sent late (its own lag) or an arrival
//! waited for a slot under `load.max_in_flight` (the server's backlog); a
//! benchmark that reports only the first hides that queueing (coordinated
//! omission). Goodput counts requests meeting every `[slo]` threshold,
//! measured from the schedule; capacity is the highest load at which the
//! share meeting them stays at the SLO's percentile.

mod capacity;
mod trial;

pub use capacity::{capacity, Capacity, CapacityBound, LoadAxis};
pub(crate) use trial::meets_slo;
pub use trial::{LagCause, ScheduleTrial};

use crate::stats::median;
use polars::prelude::*;
use qexp_plan::{Point, SloSection};
use qexp_store::requests as rq;
use serde::Serialize;
use std::collections::BTreeMap;

/// A point's schedule metrics across trials.
#[derive(Debug, Clone, Serialize)]
pub struct SchedulePoint {
    /// The point.
    pub point: Point,
    /// Planned mean rate (open-loop points), requests/s.
    pub planned_rate: Option<f64>,
    /// The median across trials of every per-trial value (`trial` 0,
    /// `requests` summed; the lag cause most trials had).
    pub median: ScheduleTrial,
    /// Whether the SLOs hold: median attainment at or above the SLO percentile.
    pub slo_holds: Option<bool>,
    /// Per-trial values.
    pub trials: Vec<ScheduleTrial>,
}

/// Every point's schedule metrics, and capacity where a load axis is swept.
#[derive(Debug, Clone, Serialize)]
pub struct ScheduleAnalysis {
    /// The plan's SLOs, if any.
    pub slo: Option<SloSection>,
    /// One entry per point with data, plan order.
    pub points: Vec<SchedulePoint>,
    /// Capacity per group of points that differ only in load.
    pub capacity: Vec<Capacity>,
}

/// The request columns [`ScheduleFrames::add`] reads.
pub(crate) const COLUMNS: [&str; 10] = [
    rq::TRIAL,
    rq::POINT_ID,
    rq::ERROR_CLASS,
    rq::SCHEDULED_UNIX_S,
    rq::SENT_UNIX_S,
    rq::QUEUE_S,
    rq::TTFT_S,
    rq::E2E_S,
    rq::TPOT_S,
    rq::END_S,
];

/// A run's schedule metrics, built one (trial, point) at a time by the
/// report's pass over the run (`crate::pass`), so no column of the whole run
/// is held.
pub(crate) struct ScheduleFrames {
    points: Vec<Point>,
    slo: Option<SloSection>,
    /// Keyed by (point, trial).
    trials: BTreeMap<(u32, u32), ScheduleTrial>,
}

impl ScheduleFrames {
    /// For a run whose plan has open-loop points or `[slo]`; `None` otherwise.
    pub(crate) fn for_run(manifest: &qexp_store::Manifest) -> Option<ScheduleFrames> {
        let slo = SloSection::from_plan_text(&manifest.plan_text);
        if slo.is_none() && manifest.points.iter().all(|p| p.open_loop.is_none()) {
            return None;
        }
        Some(ScheduleFrames {
            points: manifest.points.clone(),
            slo,
            trials: BTreeMap::new(),
        })
    }

    /// One (trial, point)'s measured rows (with [`COLUMNS`]); a point the
    /// manifest does not name is left out.
    pub(crate) fn add(&mut self, (trial, point): (u32, u32), df: &DataFrame) -> PolarsResult<()> {
        let Some(p) = self.points.iter().find(|p| p.id == point) else {
            return Ok(());
        };
        let rows = trial::Rows::from_frame(df)?;
        let idx: Vec<usize> = (0..rows.len()).collect();
        let metrics = ScheduleTrial::of(trial, &rows, &idx, p, self.slo.as_ref());
        self.trials.insert((point, trial), metrics);
        Ok(())
    }

    /// Every point's schedule metrics (plan order, points with data), and
    /// capacity where a load axis is swept.
    pub(crate) fn finish(self) -> ScheduleAnalysis {
        let slo = self.slo.as_ref();
        let mut out = Vec::new();
        for p in &self.points {
            let trials: Vec<ScheduleTrial> = self
                .trials
                .range((p.id, 0)..=(p.id, u32::MAX))
                .map(|(_, t)| t.clone())
                .collect();
            if trials.is_empty() {
                continue;
            }
            out.push(SchedulePoint::new(p.clone(), trials, slo));
        }
        let capacity = slo.map(|s| capacity(&out, s)).unwrap_or_default();
        ScheduleAnalysis {
            slo: self.slo,
            points: out,
            capacity,
        }
    }
}

impl SchedulePoint {
    fn new(point: Point, trials: Vec<ScheduleTrial>, slo: Option<&SloSection>) -> SchedulePoint {
        let m = |f: fn(&ScheduleTrial) -> f64| {
            median(&trials.iter().map(f).collect::<Vec<_>>()).unwrap_or(f64::NAN)
        };
        let mo = |f: fn(&ScheduleTrial) -> Option<f64>| {
            let v: Vec<f64> = trials.iter().filter_map(f).collect();
            median(&v)
        };
        let backlog = trials
            .iter()
            .filter(|t| t.lag_cause == LagCause::Backlog)
            .count();
        let median = ScheduleTrial {
            trial: 0,
            requests: trials.iter().map(|t| t.requests).sum(),
            scheduled_rate: m(|t| t.scheduled_rate),
            achieved_rate: m(|t| t.achieved_rate),
            service_ttft_p50_s: m(|t| t.service_ttft_p50_s),
            service_ttft_p99_s: m(|t| t.service_ttft_p99_s),
            response_ttft_p50_s: m(|t| t.response_ttft_p50_s),
            response_ttft_p99_s: m(|t| t.response_ttft_p99_s),
            service_e2e_p50_s: m(|t| t.service_e2e_p50_s),
            service_e2e_p99_s: m(|t| t.service_e2e_p99_s),
            response_e2e_p50_s: m(|t| t.response_e2e_p50_s),
            response_e2e_p99_s: m(|t| t.response_e2e_p99_s),
            send_lag_p50_s: m(|t| t.send_lag_p50_s),
            send_lag_p99_s: m(|t| t.send_lag_p99_s),
            lag_cause: if 2 * backlog > trials.len() {
                LagCause::Backlog
            } else {
                LagCause::Client
            },
            slo_attainment: mo(|t| t.slo_attainment),
            goodput_rps: mo(|t| t.goodput_rps),
        };
        SchedulePoint {
            planned_rate: point.rate(),
            slo_holds: slo
                .zip(median.slo_attainment)
                .map(|(s, a)| a >= s.percentile),
            median,
            point,
            trials,
        }
    }
}
