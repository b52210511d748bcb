//! The report's open-loop section: service latency beside response time
//! from the schedule, planned / scheduled / achieved rates, send lag and
//! its cause, SLO attainment, goodput and capacity. Numbers come from
//! [`qexp_analysis::schedule`]; this module only formats them.

use crate::format::num;
use qexp_analysis::schedule::{Capacity, CapacityBound, LoadAxis, ScheduleAnalysis, SchedulePoint};
use serde::Serialize;

/// One point's row.
#[derive(Debug, Clone, Serialize)]
pub struct OpenLoopRow {
    /// The point's label.
    pub point: String,
    /// Planned rate, req/s (dash for closed-loop points).
    pub planned_rate: String,
    /// Rate of the drawn schedule, req/s.
    pub scheduled_rate: String,
    /// Rate of the actual sends, req/s.
    pub achieved_rate: String,
    /// Send lag p50 / p99, ms.
    pub send_lag: String,
    /// TTFT p50 / p99 from the send, s.
    pub service_ttft: String,
    /// TTFT p50 / p99 from the schedule, s.
    pub response_ttft: String,
    /// E2E p99 from the send / from the schedule, s.
    pub e2e_p99: String,
    /// Share of requests meeting every SLO.
    pub attainment: String,
    /// Requests/s meeting every SLO.
    pub goodput: String,
}

/// The whole section.
#[derive(Debug, Clone, Serialize)]
pub struct OpenLoopView {
    /// Rows in plan order.
    pub rows: Vec<OpenLoopRow>,
    /// The SLOs in one sentence, if the plan has any.
    pub slo: Option<String>,
    /// One sentence per capacity found.
    pub capacity: Vec<String>,
}

fn pair(a: f64, b: f64, scale: f64) -> String {
    format!("{} / {}", num(a * scale), num(b * scale))
}

fn row(p: &SchedulePoint) -> OpenLoopRow {
    let m = &p.median;
    OpenLoopRow {
        point: p.point.label(),
        planned_rate: p.planned_rate.map_or("–".into(), num),
        scheduled_rate: num(m.scheduled_rate),
        achieved_rate: num(m.achieved_rate),
        send_lag: pair(m.send_lag_p50_s, m.send_lag_p99_s, 1000.0),
        service_ttft: pair(m.service_ttft_p50_s, m.service_ttft_p99_s, 1.0),
        response_ttft: pair(m.response_ttft_p50_s, m.response_ttft_p99_s, 1.0),
        e2e_p99: pair(m.service_e2e_p99_s, m.response_e2e_p99_s, 1.0),
        attainment: m
            .slo_attainment
            .map_or("–".into(), |a| format!("{}%", num(a * 100.0))),
        goodput: m.goodput_rps.map_or("–".into(), num),
    }
}

/// The section, or None when the run has neither open-loop points nor SLOs.
pub(crate) fn open_loop_view(s: &ScheduleAnalysis) -> Option<OpenLoopView> {
    if s.points.is_empty() {
        return None;
    }
    let rows: Vec<OpenLoopRow> = s.points.iter().map(row).collect();
    let slo = s.slo.as_ref().map(|slo| {
        let mut parts = Vec::new();
        if let Some(t) = slo.ttft_s {
            parts.push(format!("TTFT ≤ {} s", num(t)));
        }
        if let Some(t) = slo.tpot_s {
            parts.push(format!("TPOT ≤ {} ms", num(t * 1000.0)));
        }
        if let Some(t) = slo.e2e_s {
            parts.push(format!("E2E ≤ {} s", num(t)));
        }
        format!(
            "SLOs: {} (from the scheduled send), met by at least {}% of requests.",
            parts.join(", "),
            num(slo.percentile * 100.0)
        )
    });
    let capacity = s.capacity.iter().map(capacity_sentence).collect();
    Some(OpenLoopView {
        rows,
        slo,
        capacity,
    })
}

/// One capacity in a sentence: the load, how it was found, the goodput there.
pub(crate) fn capacity_sentence(c: &Capacity) -> String {
    format!("Capacity {}", capacity_clause(c))
}

/// [`capacity_sentence`] less its first word, for where `Capacity` is the
/// label already (the headline): `of mtp at in=1000 out=200: about 7 req/s …`.
pub(crate) fn capacity_clause(c: &Capacity) -> String {
    let unit = match c.axis {
        LoadAxis::Rate => "req/s",
        LoadAxis::Concurrency => "requests in flight",
    };
    let value = num(c.value);
    let what = match c.bound {
        CapacityBound::Interpolated => {
            format!("about {value} {unit} (interpolated between the measured points)")
        }
        CapacityBound::AtLeast => {
            format!("at least {value} {unit} (every measured point held its SLOs)")
        }
        CapacityBound::Below => {
            format!("below {value} {unit} (no measured point held its SLOs)")
        }
    };
    let goodput = c
        .goodput_rps
        .map(|g| format!("; goodput there {} req/s", num(g)))
        .unwrap_or_default();
    let of = c
        .deployment
        .as_ref()
        .map_or_else(String::new, |d| format!("of {d} "));
    format!(
        "{of}at in={} out={}: {what}{goodput}.",
        c.input_tokens, c.output_tokens
    )
}
