//! The diff as a terminal table. Colour (ANSI) only when the caller says the
//! output is a terminal; columns are padded by characters, not bytes, so the
//! en dashes and markers line up.

use super::{DiffContext, RowView};

const GREEN: &str = "\x1b[1;32m";
const RED: &str = "\x1b[1;31m";
const YELLOW: &str = "\x1b[33m";
const BOLD: &str = "\x1b[1m";
const RESET: &str = "\x1b[0m";

fn paint(on: bool, code: &str, s: &str) -> String {
    if on {
        format!("{code}{s}{RESET}")
    } else {
        s.to_string()
    }
}

fn width(s: &str) -> usize {
    s.chars().count()
}

#[derive(Clone, Copy, PartialEq)]
enum Align {
    Left,
    Right,
}

/// Pads every cell to its column's width; `style` may colour a cell after padding.
fn table(
    head: &[&str],
    align: &[Align],
    rows: &[Vec<String>],
    style: &dyn Fn(usize, usize, String) -> String,
) -> String {
    let mut w: Vec<usize> = head.iter().map(|h| width(h)).collect();
    for r in rows {
        for (i, c) in r.iter().enumerate() {
            w[i] = w[i].max(width(c));
        }
    }
    let pad = |i: usize, s: &str| {
        let fill = " ".repeat(w[i] - width(s));
        match align[i] {
            Align::Left => format!("{s}{fill}"),
            Align::Right => format!("{fill}{s}"),
        }
    };
    let line = |cells: Vec<String>| cells.join("  ").trim_end().to_string() + "\n";
    let mut out = line(head.iter().enumerate().map(|(i, h)| pad(i, h)).collect());
    for (r, row) in rows.iter().enumerate() {
        out.push_str(&line(
            row.iter()
                .enumerate()
                .map(|(i, c)| style(r, i, pad(i, c)))
                .collect(),
        ));
    }
    out
}

/// Renders the diff for a terminal; `color` adds ANSI colours (verdicts, differing keys, warnings).
pub fn render_term(ctx: &DiffContext, color: bool) -> String {
    let mut out = header(ctx, color);
    out.push_str(&deployment(ctx, color));
    out.push_str(&workload(ctx));
    out.push_str(&comparison(ctx, color));
    out.push_str(&footer(ctx));
    out
}

/// One line per run (name, experiment/run id, target, model, trials, status), then the warnings.
fn header(ctx: &DiffContext, color: bool) -> String {
    let mut out = String::new();
    for s in [&ctx.a, &ctx.b] {
        out.push_str(&format!(
            "{}  {}/{}  {}  model {}  {} trials  {}\n",
            paint(color, BOLD, &s.name),
            s.experiment,
            s.run_id,
            s.target,
            s.model,
            s.trials,
            s.status
        ));
    }
    if !ctx.warnings.is_empty() {
        out.push('\n');
        for w in &ctx.warnings {
            out.push_str(&format!("{} {w}\n", paint(color, YELLOW, "warning:")));
        }
    }
    out
}

/// The deployment keys of both runs side by side, differing ones marked ≠ (and yellow).
fn deployment(ctx: &DiffContext, color: bool) -> String {
    let mut out = format!(
        "\nDeployment ({} of {} keys differ, marked ≠)\n",
        ctx.deployment_differs,
        ctx.deployment.len()
    );
    let rows: Vec<Vec<String>> = ctx
        .deployment
        .iter()
        .map(|k| {
            vec![
                if k.differs { "≠" } else { " " }.to_string(),
                k.key.clone(),
                k.a.clone(),
                k.b.clone(),
            ]
        })
        .collect();
    let differs: Vec<bool> = ctx.deployment.iter().map(|k| k.differs).collect();
    out.push_str(&table(
        &[" ", "key", "A", "B"],
        &[Align::Left; 4],
        &rows,
        &|r, _, s| {
            if differs[r] {
                paint(color, YELLOW, &s)
            } else {
                s
            }
        },
    ));
    out
}

/// One line: how many workload keys the runs share, and the ignored ones with both values.
fn workload(ctx: &DiffContext) -> String {
    let same = ctx.workload.iter().filter(|k| !k.differs).count();
    let mut out = format!(
        "\nWorkload: {same} of {} keys the same in both runs",
        ctx.workload.len()
    );
    if ctx.workload_ignored.is_empty() {
        out.push('\n');
    } else {
        let ignored: Vec<String> = ctx
            .workload_ignored
            .iter()
            .map(|k| format!("{} (A: {}, B: {})", k.key, k.a, k.b))
            .collect();
        out.push_str(&format!("; ignored: {}\n", ignored.join(", ")));
    }
    out
}

/// The per-point, per-metric comparison table, verdicts in green (better) or red (worse).
fn comparison(ctx: &DiffContext, color: bool) -> String {
    let mut out = String::from("\n");
    if !ctx.fixed.is_empty() {
        out.push_str(&format!("Every point: {}\n", ctx.fixed));
    }
    let p_head = "p (Holm)";
    let ci_head = format!("{}% CI", ctx.level);
    let rows: Vec<Vec<String>> = ctx.rows.iter().map(comparison_cells).collect();
    let classes: Vec<&str> = ctx.rows.iter().map(|r| r.class.as_str()).collect();
    use Align::{Left as L, Right as R};
    out.push_str(&table(
        &[
            "point",
            "metric",
            "A: median [min–max]",
            "B: median [min–max]",
            "B/A",
            &ci_head,
            p_head,
            "p= (Holm)",
            "verdict",
            "trials to decide",
        ],
        &[L, L, R, R, R, L, R, R, L, R],
        &rows,
        &|r, c, s| match (c, classes[r]) {
            (8, "better") => paint(color, GREEN, &s),
            (8, "worse") => paint(color, RED, &s),
            _ => s,
        },
    ));
    out
}

/// One comparison row's cells; the point is named only on its first metric's row.
fn comparison_cells(r: &RowView) -> Vec<String> {
    vec![
        if r.first {
            r.point.clone()
        } else {
            String::new()
        },
        r.metric.clone(),
        r.a.clone(),
        r.b.clone(),
        r.ratio.clone(),
        r.ci.clone(),
        // Untested rows say why ("all equal", "no data in A") in the p column.
        if r.p_holm == "–" {
            r.p.clone()
        } else {
            r.p_holm.clone()
        },
        r.p_equivalent.clone(),
        r.verdict.clone(),
        r.needed.clone(),
    ]
}

/// The points only one run has, then the summary line and its notes.
fn footer(ctx: &DiffContext) -> String {
    let mut out = String::new();
    if !ctx.unpaired.is_empty() {
        out.push_str("\nNot compared (no point with the same parameters in the other run):\n");
        for u in &ctx.unpaired {
            out.push_str(&format!(
                "  only in {}: {} ({} trials)\n",
                u.side, u.point, u.n
            ));
        }
    }
    out.push_str(&format!("\n{}\n", ctx.summary));
    for n in &ctx.notes {
        out.push_str(&format!("  {}\n", n.replace('`', "")));
    }
    out
}
