//! The energy and cost table: per point, what its GPUs drew over the
//! measured window and what a token cost, medians across trials with
//! their min–max, and the trials whose energy could not be trusted.

use crate::format::num;
use qexp_analysis::stats::Summary;
use qexp_analysis::{EnergySummary, PointSummary};

/// A column: its header and where its numbers are.
type Column = (&'static str, fn(&EnergySummary) -> &Option<Summary>);

const COLUMNS: [Column; 8] = [
    ("Energy (J)", |e| &e.energy_j),
    ("Power, mean (W)", |e| &e.power_avg_w),
    ("J per output token", |e| &e.j_per_out_tok),
    ("J per token", |e| &e.j_per_tok),
    ("Output tokens per J", |e| &e.out_tok_per_j),
    ("tok/s per W", |e| &e.tok_s_per_w),
    ("$ per 1M output tokens", |e| &e.usd_per_m_out),
    ("$ per 1M tokens", |e| &e.usd_per_m_tok),
];

/// The table's headers, in column order.
pub(crate) fn headers() -> Vec<String> {
    COLUMNS
        .iter()
        .map(|(h, _)| h.to_string())
        .chain(["GPU power-capped".into(), "Energy notes".into()])
        .collect()
}

/// A point's cells, in column order.
pub(crate) fn cells(p: &PointSummary) -> Vec<String> {
    let Some(e) = &p.energy else {
        return headers().iter().map(|_| "–".to_string()).collect();
    };
    let cell = |s: &Option<Summary>| match s {
        Some(s) if s.n > 1 => format!("{} ({}–{})", num(s.median), num(s.min), num(s.max)),
        Some(s) => num(s.median),
        None => "–".into(),
    };
    COLUMNS
        .iter()
        .map(|(_, f)| cell(f(e)))
        .chain([
            e.power_capped_share
                .map_or("–".into(), |s| format!("{:.0}% of the window", s * 100.0)),
            e.invalid
                .iter()
                .map(|(t, why)| format!("trial {t}: not trusted: {why}"))
                .chain(e.notes.iter().map(|(t, note)| format!("trial {t}: {note}")))
                .collect::<Vec<_>>()
                .join("; "),
        ])
        .collect()
}
