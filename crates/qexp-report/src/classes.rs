//! Tables for runs whose requests carry classes (`[[workload.class]]`):
//! each point's latency per class, and its fairness — each class's share
//! of the requests against its plan, its TTFT against the other classes',
//! its output (or goodput, with `[slo]`) against its share, and whether it
//! is starved. The figures and the starvation test are qexp-analysis'
//! ([`qexp_analysis::classes`]); this module only formats them.

use crate::format::{center, num, percent1, spread};
use crate::labels;
use qexp_analysis::classes::{ClassAnalysis, ClassPoint, STARVED_GROWTH};
use qexp_analysis::PointSummary;
use serde::Serialize;

/// One class at one point, formatted.
#[derive(Debug, Clone, Serialize)]
pub struct ClassRow {
    /// The point's short label.
    pub point: String,
    /// The class's name.
    pub class: String,
    /// Its priority, or a dash.
    pub priority: String,
    /// Trials with data.
    pub n: usize,
    /// Failed / requests, all trials.
    pub failed: String,
    /// Median TTFT (s) across trials.
    pub ttft: String,
    /// Its spread across trials.
    pub ttft_spread: String,
    /// p90 TTFT (s), median across trials.
    pub ttft_p90: String,
    /// Median per-request decode tok/s across trials.
    pub decode: String,
    /// Median E2E (s) across trials.
    pub e2e: String,
    /// The other classes' median TTFT (s).
    pub others_ttft: String,
    /// Planned share of the requests.
    pub planned: String,
    /// Achieved share of the requests.
    pub achieved: String,
    /// Output tok/s (or goodput req/s with `[slo]`), median across trials.
    pub served: String,
    /// Its share of the point's output (or goodput).
    pub served_share: String,
    /// The share it should get as planned: of the output, its planned share
    /// of the requests weighted by their planned output tokens; of the
    /// goodput, its planned share of the requests.
    pub served_share_expected: String,
    /// `starved`, or empty.
    pub note: String,
}

/// The class section of a report: rows, the starved lines, and what the
/// served column measures.
#[derive(Debug, Clone, Default, Serialize)]
pub struct ClassView {
    /// By point, then class.
    pub rows: Vec<ClassRow>,
    /// One sentence per starved class and point.
    pub starved: Vec<String>,
    /// The served column's header.
    pub served_header: String,
    /// How a class is found starved, for the table's note.
    pub rule: String,
}

/// The class view of a run; None when its requests carry no classes.
pub(crate) fn class_view(points: &[PointSummary], c: &ClassAnalysis) -> Option<ClassView> {
    if c.rows.is_empty() {
        return None;
    }
    let swept = labels::swept(points.iter().map(|p| &p.point));
    let label = |id: u32| {
        points.iter().find(|p| p.point.id == id).map_or_else(
            || format!("point {id}"),
            |p| labels::short(&p.point, &swept),
        )
    };
    let rows = c.rows.iter().map(|r| row(r, &label, c.slo)).collect();
    Some(ClassView {
        rows,
        starved: c.starved_lines(label),
        served_header: match c.slo {
            true => "Goodput (req/s)".into(),
            false => "Output (tok/s)".into(),
        },
        rule: format!(
            "A low-priority class (a `priority` above another class's) or a small one (a planned share below 1/k of k classes) is starved at a point when its median TTFT is above the other classes' in every trial there and grew more than {STARVED_GROWTH}× as much as theirs from the lowest load with the same lengths."
        ),
    })
}

fn row(r: &ClassPoint, label: &impl Fn(u32) -> String, slo: bool) -> ClassRow {
    let (served, served_share) = match slo {
        true => (&r.goodput_rps, r.goodput_share),
        false => (&r.tok_s, r.tok_share),
    };
    ClassRow {
        point: label(r.point_id),
        class: r.class.clone(),
        priority: r.priority.map_or("–".into(), |p| p.to_string()),
        n: r.ttft_p50_s.as_ref().map_or(0, |s| s.n),
        failed: format!("{} / {}", r.failures, r.requests),
        ttft: center(&r.ttft_p50_s),
        ttft_spread: spread(&r.ttft_p50_s),
        ttft_p90: center(&r.ttft_p90_s),
        decode: center(&r.decode_tok_s),
        e2e: center(&r.e2e_p50_s),
        others_ttft: center(&r.others_ttft_p50_s),
        planned: r.planned_share.map_or("–".into(), percent1),
        achieved: percent1(r.share),
        served: center(served),
        served_share: served_share.map_or("–".into(), percent1),
        served_share_expected: match slo {
            true => r.planned_share,
            false => r.tok_share_expected,
        }
        .map_or("–".into(), percent1),
        note: match &r.starved {
            Some(s) => format!(
                "starved (TTFT ×{} vs ×{})",
                num(s.growth),
                num(s.others_growth)
            ),
            None => String::new(),
        },
    }
}
