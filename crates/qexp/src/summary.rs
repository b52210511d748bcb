//! What `qexp run` prints at the end, from the analysed Parquet: the table
//! of medians, then the flags.

use qexp_analysis::RunAnalysis;
use qexp_report::format_summary_cell as cell;

/// A plain-text table: one line per point, medians across trials with
/// min–max; a point whose answers are broken says so after its figures.
pub(crate) fn table(a: &RunAnalysis) -> String {
    if !a.manifest.target.api.streams() {
        return answered_once(a);
    }
    let mut out = format!(
        "{:<28} {:>3} {:>22} {:>22} {:>22} {:>9}\n",
        "point", "n", "aggregate tok/s", "decode tok/s", "TTFT s", "failed"
    );
    for p in &a.points {
        out.push_str(&format!(
            "{:<28} {:>3} {:>22} {:>22} {:>22} {:>9}\n",
            p.point.label(),
            p.n,
            cell(&p.agg_tok_s),
            cell(&p.decode_tok_s),
            cell(&p.ttft_s),
            format!("{}/{}", p.failures, p.requests)
        ));
        if p.answers.broken() {
            out.pop();
            out.push_str("  measured on broken output\n");
        }
    }
    out
}

/// The table of a run whose API answers once (embeddings, rerank): its
/// metrics are requests/s, input tok/s and E2E (no TTFT, no output).
fn answered_once(a: &RunAnalysis) -> String {
    let mut out = format!(
        "{:<28} {:>3} {:>22} {:>22} {:>22} {:>9}\n",
        "point", "n", "requests/s", "input tok/s", "E2E s", "failed"
    );
    for p in &a.points {
        out.push_str(&format!(
            "{:<28} {:>3} {:>22} {:>22} {:>22} {:>9}\n",
            p.point.label(),
            p.n,
            cell(&p.req_s),
            cell(&p.input_tok_s),
            cell(&p.e2e_s),
            format!("{}/{}", p.failures, p.requests)
        ));
    }
    out
}

/// One line per flag, with the sentence the report shows; a line saying so
/// when the thresholds are qexp's defaults rather than the plan's.
pub(crate) fn flag_lines(a: &RunAnalysis) -> Vec<String> {
    let mut lines = qexp_analysis::anomaly::summary_lines(&a.points, &a.flags);
    if let qexp_analysis::anomaly::ThresholdSource::Defaults { reason } = &a.threshold_source {
        lines.push(format!(
            "[note] flags use qexp's default thresholds: {reason}"
        ));
    }
    lines
}
