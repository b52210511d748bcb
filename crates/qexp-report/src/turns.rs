//! Tables for workload kinds that only some runs have: per turn of
//! multi-turn conversations (how TTFT, prompt length and the cached share
//! move from a conversation's first turn to its last), and reasoning vs
//! answer TTFT for reasoning models.

use crate::format::{center, spread};
use qexp_analysis::{stats::Summary, PointSummary, ReasoningSummary, TurnSummary};
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

/// The label of point `id`.
fn label(points: &[PointSummary], id: u32) -> String {
    points
        .iter()
        .find(|p| p.point.id == id)
        .map_or_else(|| format!("point {id}"), |p| p.point.label())
}

/// A summary's median through `f`, or a dash.
fn median(s: &Option<Summary>, f: fn(f64) -> String) -> String {
    s.as_ref().map_or("–".into(), |s| f(s.median))
}

fn percent(v: f64) -> String {
    format!("{:.1}%", v * 100.0)
}

/// Rows for every turn summary, in point then turn order.
pub(crate) fn turn_rows(points: &[PointSummary], turns: &[TurnSummary]) -> Vec<TurnRow> {
    turns
        .iter()
        .map(|t| TurnRow {
            point: label(points, t.point_id),
            turn: t.turn,
            n: t.ttft_s.as_ref().map_or(0, |s| s.n),
            ttft: center(&t.ttft_s),
            ttft_spread: spread(&t.ttft_s),
            prompt_tokens: median(&t.prompt_tokens, |v| format!("{v:.0}")),
            cached_share: median(&t.cached_share, percent),
            failed: format!("{} / {}", t.failures, t.requests),
        })
        .collect()
}

/// One point of a run whose requests streamed reasoning, formatted.
#[derive(Debug, Clone, Serialize)]
pub struct ReasoningRow {
    /// The point's label.
    pub point: String,
    /// Trials with data.
    pub n: usize,
    /// Median time to the first reasoning chunk across trials (s).
    pub ttft_reasoning: String,
    /// Median time to the first answer chunk across trials (s).
    pub ttft_answer: String,
    /// Its spread across trials.
    pub ttft_answer_spread: String,
    /// Median share of chunks that carried reasoning.
    pub reasoning_share: String,
}

/// Rows for every point with reasoning, in point order.
pub(crate) fn reasoning_rows(
    points: &[PointSummary],
    reasoning: &[ReasoningSummary],
) -> Vec<ReasoningRow> {
    reasoning
        .iter()
        .map(|r| ReasoningRow {
            point: label(points, r.point_id),
            n: r.ttft_answer_s.as_ref().map_or(0, |s| s.n),
            ttft_reasoning: center(&r.ttft_reasoning_s),
            ttft_answer: center(&r.ttft_answer_s),
            ttft_answer_spread: spread(&r.ttft_answer_s),
            reasoning_share: median(&r.reasoning_share, percent),
        })
        .collect()
}
