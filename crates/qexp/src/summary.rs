//! The table printed at the end of `qexp run`, from the analysed Parquet.

use qexp_analysis::RunAnalysis;
use qexp_report::format_summary_cell as cell;

/// A plain-text table: one line per point, medians across trials with min–max.
pub(crate) fn table(a: &RunAnalysis) -> String {
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
    }
    out
}
