//! The per-turn table of multi-turn runs: how TTFT, prompt length and the
//! cached share move from a conversation's first turn to its last.

use crate::format::{center, spread};
use qexp_analysis::{stats::Summary, PointSummary, TurnSummary};
use serde::Serialize;

/// One (point, turn) of a multi-turn run, formatted.
#[derive(Debug, Clone, Serialize)]
pub struct TurnRow {
    /// The point's label, e.g. `c=4 in=1000 out=100`.
    pub point: String,
    /// The turn, from 1.
    pub turn: u32,
    /// Trials with data.
    pub n: usize,
    /// Median TTFT across trials (s).
    pub ttft: String,
    /// Its spread across trials.
    pub ttft_spread: String,
    /// Median prompt tokens the server counted.
    pub prompt_tokens: String,
    /// Median share of prompt tokens the server reported cached.
    pub cached_share: String,
    /// Failed or skipped / requests.
    pub failed: String,
}

/// Rows for every turn summary, in point then turn order.
pub(crate) fn turn_rows(points: &[PointSummary], turns: &[TurnSummary]) -> Vec<TurnRow> {
    let label = |id: u32| {
        points
            .iter()
            .find(|p| p.point.id == id)
            .map_or_else(|| format!("point {id}"), |p| p.point.label())
    };
    let median =
        |s: &Option<Summary>, f: fn(f64) -> String| s.as_ref().map_or("–".into(), |s| f(s.median));
    turns
        .iter()
        .map(|t| TurnRow {
            point: label(t.point_id),
            turn: t.turn,
            n: t.ttft_s.as_ref().map_or(0, |s| s.n),
            ttft: center(&t.ttft_s),
            ttft_spread: spread(&t.ttft_s),
            prompt_tokens: median(&t.prompt_tokens, |v| format!("{v:.0}")),
            cached_share: median(&t.cached_share, |v| format!("{:.1}%", v * 100.0)),
            failed: format!("{} / {}", t.failures, t.requests),
        })
        .collect()
}
