//! Flags from the schedule: requests that waited before they were sent, and
//! a send rate below the schedule's.
//!
//! A point is flagged for waiting when its TTFT p99 from the scheduled send
//! exceeds its p99 from the send by more than the send-lag limit
//! ([`Thresholds::send_lag_limit`] at the median service TTFT), with the
//! cause the schedule analysis ([`crate::schedule`]) found. A point is flagged as
//! client-paced when its achieved send rate is more than `rate_shortfall`
//! below the rate of its own drawn schedule (not the planned mean, which a
//! short Poisson schedule misses by chance).

use super::{Flag, Thresholds};
use crate::metrics::PointSummary;
use crate::schedule::{LagCause, ScheduleAnalysis};

/// The lag cause at a point, if the point has schedule metrics.
pub fn cause_at(s: &ScheduleAnalysis, point_id: u32) -> Option<LagCause> {
    s.points
        .iter()
        .find(|p| p.point.id == point_id)
        .map(|p| p.median.lag_cause)
}

/// Every schedule flag, in plan order; `points` give qexp's own CPU use
/// at each, which says whether a late client was short of CPU.
pub fn detect(s: &ScheduleAnalysis, points: &[PointSummary], t: &Thresholds) -> Vec<Flag> {
    let mut flags = Vec::new();
    for p in &s.points {
        let m = &p.median;
        let cpu_cores = points
            .iter()
            .filter(|q| q.point.id == p.point.id)
            .flat_map(|q| q.trials.iter().map(|t| t.client_cpu_cores))
            .fold(f64::NAN, f64::max);
        let limit = t.send_lag_limit(m.service_ttft_p50_s);
        let gap = m.response_ttft_p99_s - m.service_ttft_p99_s;
        if gap.is_finite() && gap > limit {
            flags.push(Flag::ScheduleDelay {
                point_id: p.point.id,
                cause: m.lag_cause,
                service_ttft_p99_s: m.service_ttft_p99_s,
                response_ttft_p99_s: m.response_ttft_p99_s,
                limit_s: limit,
                cpu_cores,
            });
        }
        let open = p.point.open_loop.is_some();
        let short = m.achieved_rate < m.scheduled_rate * (1.0 - t.rate_shortfall);
        // Behind a full cap the rate is the server's; the delay flag says so.
        if open && short && m.lag_cause == LagCause::Client {
            flags.push(Flag::RateShortfall {
                point_id: p.point.id,
                scheduled_rate: m.scheduled_rate,
                achieved_rate: m.achieved_rate,
                tolerance: t.rate_shortfall,
                cpu_cores,
            });
        }
    }
    flags
}
