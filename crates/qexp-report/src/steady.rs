//! The steady-state table: each closed-loop point's window (where the
//! server held the point's load, ramp-up and drain left out) and the
//! throughput and latency over it, beside the whole-point figures.

use crate::format::{center, num, spread};
use qexp_analysis::stats::Summary;
use qexp_analysis::steady::{SHORT_WINDOW_S, SHORT_WINDOW_SHARE, STEADY_THETA};
use qexp_analysis::PointSummary;
use serde::Serialize;

/// One closed-loop point's steady-state window, formatted.
#[derive(Debug, Clone, Serialize)]
pub struct SteadyRow {
    /// The point's label.
    pub point: String,
    /// Trials with a window.
    pub n: usize,
    /// Median window length across trials (s).
    pub window: String,
    /// Its median share of the point.
    pub share: String,
    /// Output tok/s over the window, median across trials.
    pub tok_s: String,
    /// Its spread.
    pub tok_s_spread: String,
    /// The whole point's aggregate tok/s, median across trials.
    pub whole_tok_s: String,
    /// Median TTFT of the requests sent in the window (s).
    pub ttft: String,
    /// The whole point's median TTFT (s).
    pub whole_ttft: String,
    /// Median E2E of the requests sent in the window (s).
    pub e2e: String,
    /// The whole point's median E2E (s).
    pub whole_e2e: String,
    /// A warning when windows are short, else empty.
    pub note: String,
}

/// The rule, in a sentence, for the table's caption.
pub(crate) fn rule() -> String {
    format!(
        "Closed-loop points: the window opens when the requests the server is streaming (first chunk to last) first reach {}% of the most it streamed at once, and closes when they last fall below it, so the ramp-up and the drain are left out. Throughput over the window spreads each request's tokens evenly over its stream; TTFT and E2E are over the requests sent inside it. A window under {} s or {}% of its point is short. Diffs compare it as `steady_tok_s`, window against window.",
        num(STEADY_THETA * 100.0),
        num(SHORT_WINDOW_S),
        num(SHORT_WINDOW_SHARE * 100.0)
    )
}

/// One row per point with a window, in point order.
pub(crate) fn steady_rows(points: &[PointSummary]) -> Vec<SteadyRow> {
    points
        .iter()
        .filter_map(|p| {
            let s = p.steady.as_ref()?;
            let some = |s: &Summary| Some(s.clone());
            let note = match s.short {
                0 => String::new(),
                k => format!(
                    "⚠ short window in {k} of {} trials: its figures rest on little of the point; measure more requests per user",
                    s.n
                ),
            };
            Some(SteadyRow {
                point: p.point.label(),
                n: s.n,
                window: center(&some(&s.window_s)),
                share: format!("{:.0}%", s.share.median * 100.0),
                tok_s: center(&some(&s.tok_s)),
                tok_s_spread: spread(&some(&s.tok_s)),
                whole_tok_s: center(&p.agg_tok_s),
                ttft: center(&s.ttft_s),
                whole_ttft: center(&p.ttft_s),
                e2e: center(&s.e2e_s),
                whole_e2e: center(&p.e2e_s),
                note,
            })
        })
        .collect()
}
