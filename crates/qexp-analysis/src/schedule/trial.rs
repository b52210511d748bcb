//! One (trial, point): response time from the schedule, send lag and what
//! caused it, achieved rate, SLO attainment and goodput.

use crate::columns::{f64s, u32s};
use crate::stats::quantile_in_place;
use polars::prelude::*;
use qexp_plan::{Point, SloSection};
use qexp_store::requests as rq;
use serde::Serialize;

/// What made requests leave later than scheduled.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum LagCause {
    /// The client sent late while slots were free: the load generator set the pace.
    Client,
    /// Arrivals waited for a slot under `load.max_in_flight`: the server's backlog.
    Backlog,
}

impl LagCause {
    /// In sentences.
    pub fn describe(self) -> &'static str {
        match self {
            LagCause::Client => "the client sent late (load-generator lag)",
            LagCause::Backlog => "arrivals queued behind the in-flight cap (server backlog)",
        }
    }
}

/// Schedule metrics of one (trial, point).
#[derive(Debug, Clone, Serialize)]
pub struct ScheduleTrial {
    /// Trial number.
    pub trial: u32,
    /// Measured requests.
    pub requests: u32,
    /// (n − 1) / scheduled span, requests/s.
    pub scheduled_rate: f64,
    /// (n − 1) / sent span, requests/s.
    pub achieved_rate: f64,
    /// TTFT p50 from the send (successful requests).
    pub service_ttft_p50_s: f64,
    /// TTFT p99 from the send.
    pub service_ttft_p99_s: f64,
    /// TTFT p50 from the schedule.
    pub response_ttft_p50_s: f64,
    /// TTFT p99 from the schedule.
    pub response_ttft_p99_s: f64,
    /// E2E p50 from the send.
    pub service_e2e_p50_s: f64,
    /// E2E p99 from the send.
    pub service_e2e_p99_s: f64,
    /// E2E p50 from the schedule.
    pub response_e2e_p50_s: f64,
    /// E2E p99 from the schedule.
    pub response_e2e_p99_s: f64,
    /// Send lag p50.
    pub send_lag_p50_s: f64,
    /// Send lag p99.
    pub send_lag_p99_s: f64,
    /// Where most of the lag was spent.
    pub lag_cause: LagCause,
    /// Share of requests meeting every SLO (failures never do).
    pub slo_attainment: Option<f64>,
    /// Requests meeting every SLO per second of the window (first send → last completion).
    pub goodput_rps: Option<f64>,
}

/// The request columns the schedule needs, as plain vectors (NaN for null).
pub(crate) struct Rows {
    pub trial: Vec<u32>,
    pub ok: Vec<bool>,
    pub scheduled: Vec<f64>,
    pub sent: Vec<f64>,
    pub queue: Vec<f64>,
    pub ttft: Vec<f64>,
    pub e2e: Vec<f64>,
    pub tpot: Vec<f64>,
    pub end: Vec<f64>,
}

impl Rows {
    pub(crate) fn from_frame(df: &DataFrame) -> PolarsResult<Rows> {
        let (f, u) = (|name| f64s(df, name), |name| u32s(df, name));
        Ok(Rows {
            trial: u(rq::TRIAL)?,
            ok: df
                .column(rq::ERROR_CLASS)?
                .is_null()
                .iter()
                .map(|v| v.unwrap_or(false))
                .collect(),
            scheduled: f(rq::SCHEDULED_UNIX_S)?,
            sent: f(rq::SENT_UNIX_S)?,
            queue: f(rq::QUEUE_S)?,
            ttft: f(rq::TTFT_S)?,
            e2e: f(rq::E2E_S)?,
            tpot: f(rq::TPOT_S)?,
            end: f(rq::END_S)?,
        })
    }

    pub(crate) fn len(&self) -> usize {
        self.trial.len()
    }
}

fn quantile(mut v: Vec<f64>, q: f64) -> f64 {
    v.retain(|x| x.is_finite());
    quantile_in_place(&mut v, q).unwrap_or(f64::NAN)
}

/// (n − 1) / (max − min) of the finite values.
fn rate(times: impl Iterator<Item = f64>) -> f64 {
    let (mut n, mut lo, mut hi) = (0usize, f64::INFINITY, f64::NEG_INFINITY);
    for t in times.filter(|t| t.is_finite()) {
        n += 1;
        lo = lo.min(t);
        hi = hi.max(t);
    }
    if n >= 2 && hi > lo {
        (n - 1) as f64 / (hi - lo)
    } else {
        f64::NAN
    }
}

/// Whether a successful request meets every threshold of `slo`: TTFT and
/// E2E from its scheduled send (`queue` before it was sent), and TPOT.
pub(crate) fn meets_slo(slo: &SloSection, queue: f64, ttft: f64, e2e: f64, tpot: f64) -> bool {
    let within = |limit: Option<f64>, v: f64| limit.is_none_or(|l| v.is_finite() && v <= l);
    within(slo.ttft_s, queue + ttft)
        && within(slo.e2e_s, queue + e2e)
        // A one-token answer has no TPOT: nothing to miss.
        && slo.tpot_s.is_none_or(|l| !tpot.is_finite() || tpot <= l)
}

impl ScheduleTrial {
    pub(crate) fn of(
        trial: u32,
        rows: &Rows,
        idx: &[usize],
        point: &Point,
        slo: Option<&SloSection>,
    ) -> ScheduleTrial {
        let ok: Vec<usize> = idx.iter().copied().filter(|&i| rows.ok[i]).collect();
        let pick = |f: &dyn Fn(usize) -> f64| ok.iter().map(|&i| f(i)).collect::<Vec<f64>>();
        let ttft = pick(&|i| rows.ttft[i]);
        let resp_ttft = pick(&|i| rows.queue[i] + rows.ttft[i]);
        let e2e = pick(&|i| rows.e2e[i]);
        let resp_e2e = pick(&|i| rows.queue[i] + rows.e2e[i]);
        let lag: Vec<f64> = idx.iter().map(|&i| rows.queue[i]).collect();
        let cap = point
            .open_loop
            .as_ref()
            .and_then(|o| o.max_in_flight)
            .or((point.open_loop.is_none()).then_some(point.concurrency));
        let meets = |i: usize| -> bool {
            slo.is_some_and(|s| {
                rows.ok[i] && meets_slo(s, rows.queue[i], rows.ttft[i], rows.e2e[i], rows.tpot[i])
            })
        };
        let n = idx.len();
        let good = idx.iter().filter(|&&i| meets(i)).count();
        let start = idx
            .iter()
            .map(|&i| rows.sent[i])
            .fold(f64::INFINITY, f64::min);
        let stop = idx
            .iter()
            .map(|&i| rows.sent[i] + rows.end[i])
            .fold(f64::NEG_INFINITY, f64::max);
        let window = stop - start;
        ScheduleTrial {
            trial,
            requests: n as u32,
            scheduled_rate: rate(idx.iter().map(|&i| rows.scheduled[i])),
            achieved_rate: rate(idx.iter().map(|&i| rows.sent[i])),
            service_ttft_p50_s: quantile(ttft.clone(), 0.5),
            service_ttft_p99_s: quantile(ttft, 0.99),
            response_ttft_p50_s: quantile(resp_ttft.clone(), 0.5),
            response_ttft_p99_s: quantile(resp_ttft, 0.99),
            service_e2e_p50_s: quantile(e2e.clone(), 0.5),
            service_e2e_p99_s: quantile(e2e, 0.99),
            response_e2e_p50_s: quantile(resp_e2e.clone(), 0.5),
            response_e2e_p99_s: quantile(resp_e2e, 0.99),
            send_lag_p50_s: quantile(lag.clone(), 0.5),
            send_lag_p99_s: quantile(lag, 0.99),
            lag_cause: lag_cause(rows, idx, cap),
            slo_attainment: (slo.is_some() && n > 0).then(|| good as f64 / n as f64),
            goodput_rps: (slo.is_some() && window > 0.0).then(|| good as f64 / window),
        }
    }
}

/// Backlog when most of the lag was spent by requests that, at their
/// scheduled time, found `cap` requests already in flight; otherwise the
/// client's own lag. Without a cap every lag is the client's.
fn lag_cause(rows: &Rows, idx: &[usize], cap: Option<u32>) -> LagCause {
    let Some(cap) = cap.filter(|c| *c > 0) else {
        return LagCause::Client;
    };
    let mut starts: Vec<f64> = idx.iter().map(|&i| rows.sent[i]).collect();
    let mut ends: Vec<f64> = idx.iter().map(|&i| rows.sent[i] + rows.end[i]).collect();
    starts.sort_by(f64::total_cmp);
    ends.sort_by(f64::total_cmp);
    // Requests in flight just before `t`: sent before it and not yet ended.
    let in_flight = |t: f64| {
        starts.partition_point(|&s| s < t) as i64 - ends.partition_point(|&e| e <= t) as i64
    };
    let (mut at_cap, mut total) = (0.0, 0.0);
    for &i in idx {
        let lag = rows.queue[i];
        if !(lag.is_finite() && lag > 0.0) {
            continue;
        }
        total += lag;
        if in_flight(rows.scheduled[i]) >= i64::from(cap) {
            at_cap += lag;
        }
    }
    if total > 0.0 && at_cap * 2.0 > total {
        LagCause::Backlog
    } else {
        LagCause::Client
    }
}
