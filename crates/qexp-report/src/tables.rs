//! The founding table layout, one table per swept axis and combination of
//! the other parameters: medians across trials with min–max spread and n,
//! units in headers, flag markers beside their points.

use crate::format::{center, center_ms, ci95, cv, iqr, md_text, num, percent1, spread, spread_ms};
use crate::labels::Along;
use crate::views::{FlagView, Row, RowValues, Stat, Table};
use qexp_analysis::stats::Summary;
use qexp_analysis::{Axis, PointSummary, ServerMetric, ServerUnit};
use qexp_plan::Point;

/// One table per swept axis (a plan parameter, or the offered rate of an
/// open-loop sweep); the other parameters split it into groups.
pub(crate) fn tables(points: &[PointSummary], flags: &[FlagView]) -> Vec<Table> {
    let plain: Vec<&Point> = points.iter().map(|p| &p.point).collect();
    let mut axes = Along::swept(&plain);
    if axes.is_empty() {
        // Nothing swept: one table along the run's load.
        axes.push(match plain.iter().any(|p| p.open_loop.is_some()) {
            true => Along::Rate,
            false => Along::Param(Axis::Concurrency),
        });
    }
    let applicable = Along::applicable(plain.iter().copied());
    let mut out = Vec::new();
    for &axis in &axes {
        let others: Vec<Along> = applicable.iter().copied().filter(|a| *a != axis).collect();
        // A run with deployments has one table per deployment and combination.
        type Key = (Option<String>, Vec<String>);
        let mut groups: Vec<(Key, Vec<&PointSummary>)> = Vec::new();
        for p in points {
            let key: Key = (
                p.point.deployment.clone(),
                others.iter().map(|a| a.cell(&p.point)).collect(),
            );
            match groups.iter_mut().find(|(k, _)| *k == key) {
                Some((_, v)) => v.push(p),
                None => groups.push((key, vec![p])),
            }
        }
        for ((deployment, key), mut group) in groups {
            let at = |p: &PointSummary| axis.value(&p.point).unwrap_or(f64::INFINITY);
            group.sort_by(|a, b| at(a).total_cmp(&at(b)));
            let fixed = deployment
                .iter()
                .map(|d| format!("deployment {d}"))
                .chain(
                    others
                        .iter()
                        .zip(&key)
                        .map(|(a, v)| format!("{} = {v}", a.header())),
                )
                .collect::<Vec<_>>()
                .join(", ");
            out.push(table(axis, &group, fixed, flags));
        }
    }
    out
}

/// One table: the group's rows along `axis`, and each of its Markdown forms.
fn table(axis: Along, group: &[&PointSummary], fixed: String, flags: &[FlagView]) -> Table {
    let rows: Vec<Row> = group.iter().map(|p| row(axis, p, flags)).collect();
    let any = |f: fn(&PointSummary) -> bool| group.iter().any(|p| f(p));
    Table {
        axis: axis.name().into(),
        title: axis.title(),
        axis_header: axis.header().to_string(),
        markdown: table_markdown(axis, &rows),
        latency_markdown: latency_markdown(axis, &rows),
        spread_markdown: spread_markdown(axis, &rows),
        server_headers: server_headers(),
        server_markdown: if any(has_server_counters) {
            server_markdown(axis, &rows)
        } else {
            String::new()
        },
        energy_headers: crate::energy::headers(),
        energy_markdown: if any(|p| p.energy.is_some()) {
            crate::energy::markdown(axis, &rows)
        } else {
            String::new()
        },
        cache_markdown: if any(has_cache_data) {
            cache_markdown(axis, &rows)
        } else {
            String::new()
        },
        lengths_markdown: if any(|p| p.trials.iter().any(|t| t.lengths_vary)) {
            lengths_markdown(axis, &rows)
        } else {
            String::new()
        },
        fixed,
        rows,
    }
}

fn row(axis: Along, p: &PointSummary, flags: &[FlagView]) -> Row {
    let notes: Vec<String> = p
        .trials
        .iter()
        .filter_map(|t| {
            t.invalid_reason
                .as_ref()
                .map(|r| format!("trial {}: {r}", t.trial))
        })
        .collect();
    let marks: Vec<&str> = flags
        .iter()
        .filter(|f| f.point_id == Some(p.point.id))
        .map(|f| f.marker.as_str())
        .collect();
    // A number measured on broken answers must not read as a plain one.
    let agg = match p.answers.broken() {
        true => format!("{} (measured on broken output)", center(&p.agg_tok_s)),
        false => center(&p.agg_tok_s),
    };
    Row {
        point_id: p.point.id,
        value: axis.cell(&p.point),
        n: p.n,
        agg,
        agg_spread: spread(&p.agg_tok_s),
        req_s: center(&p.req_s),
        req_s_spread: spread(&p.req_s),
        input_tok_s: center(&p.input_tok_s),
        input_tok_s_spread: spread(&p.input_tok_s),
        decode: center(&p.decode_tok_s),
        decode_spread: spread(&p.decode_tok_s),
        ttft: center(&p.ttft_s),
        ttft_spread: spread(&p.ttft_s),
        ttft_p90: center(&p.ttft_p90_s),
        e2e: center(&p.e2e_s),
        e2e_spread: spread(&p.e2e_s),
        itl_p50: center_ms(&p.itl_p50_s),
        itl_p90: center_ms(&p.itl_p90_s),
        itl_p99: center_ms(&p.itl_p99_s),
        itl_p99_spread: spread_ms(&p.itl_p99_s),
        agg_iqr: iqr(&p.agg_tok_s),
        agg_ci: ci95(&p.agg_tok_s),
        agg_cv: cv(&p.agg_tok_s),
        ttft_iqr: iqr(&p.ttft_s),
        ttft_ci: ci95(&p.ttft_s),
        ttft_cv: cv(&p.ttft_s),
        input_planned: tokens(&p.input_planned),
        input_sent: tokens(&p.prompt_tokens),
        output_planned: tokens(&p.output_planned),
        output_sent: tokens(&p.completion_tokens),
        cached_share: share(&p.cached_share),
        cached_share_expected: share(&p.cached_share_expected),
        server: server_columns().iter().map(|c| c.cell(p)).collect(),
        energy: crate::energy::cells(p),
        failures: format!("{}/{}", p.failures, p.requests),
        flags: marks.join(" "),
        note: notes.join("; "),
        values: row_values(axis, p, &marks, notes),
    }
}

/// The numbers behind a row's cells (the HTML table's sort keys and the
/// JSON's values), unrounded.
fn row_values(axis: Along, p: &PointSummary, marks: &[&str], notes: Vec<String>) -> RowValues {
    RowValues {
        axis: axis.value(&p.point),
        agg: Stat::of(&p.agg_tok_s, "tok/s", 1.0),
        req_s: Stat::of(&p.req_s, "req/s", 1.0),
        input_tok_s: Stat::of(&p.input_tok_s, "tok/s", 1.0),
        decode: Stat::of(&p.decode_tok_s, "tok/s", 1.0),
        ttft: Stat::of(&p.ttft_s, "s", 1.0),
        ttft_p90: Stat::of(&p.ttft_p90_s, "s", 1.0),
        e2e: Stat::of(&p.e2e_s, "s", 1.0),
        itl_p50: Stat::of(&p.itl_p50_s, "ms", 1e3),
        itl_p90: Stat::of(&p.itl_p90_s, "ms", 1e3),
        itl_p99: Stat::of(&p.itl_p99_s, "ms", 1e3),
        input_planned: Stat::of(&p.input_planned, "tokens", 1.0),
        input_sent: Stat::of(&p.prompt_tokens, "tokens", 1.0),
        output_planned: Stat::of(&p.output_planned, "tokens", 1.0),
        output_sent: Stat::of(&p.completion_tokens, "tokens", 1.0),
        cached_share: Stat::of(&p.cached_share, "share", 1.0),
        cached_share_expected: Stat::of(&p.cached_share_expected, "share", 1.0),
        server: server_columns().iter().map(|c| c.stat(p)).collect(),
        failures: p.failures,
        requests: p.requests,
        flags: marks.iter().map(|m| m.to_string()).collect(),
        notes,
        broken: p.answers.broken(),
    }
}

impl Stat {
    /// The values of a summary across trials, multiplied by `scale` (seconds to ms: 1000), in `unit`.
    pub(crate) fn of(s: &Option<Summary>, unit: &'static str, scale: f64) -> Stat {
        let Some(s) = s else {
            return Stat {
                unit,
                ..Stat::default()
            };
        };
        let x = |v: f64| Some(v * scale);
        Stat {
            unit,
            n: s.n,
            median: x(s.median),
            min: x(s.min),
            max: x(s.max),
            q1: x(s.q1),
            q3: x(s.q3),
            iqr: x(s.iqr),
            ci95: s.ci95.map(|(lo, hi)| [lo * scale, hi * scale]),
            cv: s.cv,
        }
    }
}

/// A Markdown table with one row per point: the axis value and n, then
/// `columns` (header, right-aligned?) filled by `cells`.
pub(crate) fn markdown_table(
    axis: Along,
    columns: &[(&str, bool)],
    rows: &[Row],
    cells: impl Fn(&Row) -> Vec<String>,
) -> String {
    let line = |cells: Vec<String>| format!("| {} |\n", cells.join(" | "));
    let mut header = vec![axis.header().to_string(), "n".into()];
    header.extend(columns.iter().map(|(h, _)| h.to_string()));
    let mut align = vec!["---:".to_string(); 2];
    align.extend(
        columns
            .iter()
            .map(|&(_, right)| if right { "---:" } else { "---" }.to_string()),
    );
    let mut s = line(header);
    s.push_str(&format!("|{}|\n", align.join("|")));
    for r in rows {
        let mut row = vec![r.value.clone(), r.n.to_string()];
        row.extend(cells(r));
        s.push_str(&line(row));
    }
    s
}

/// The founding table layout: medians with spread and n, units in headers.
fn table_markdown(axis: Along, rows: &[Row]) -> String {
    let columns = [
        ("Aggregate (tok/s)", true),
        ("spread", true),
        ("Per-request decode (tok/s)", true),
        ("spread", true),
        ("TTFT (s)", true),
        ("spread", true),
        ("Failed / requests", true),
        ("Flags and notes", false),
    ];
    markdown_table(axis, &columns, rows, |r| {
        let notes = [r.flags.clone(), md_text(&r.note)]
            .into_iter()
            .filter(|s| !s.is_empty())
            .collect::<Vec<_>>()
            .join(" ");
        vec![
            r.agg.clone(),
            r.agg_spread.clone(),
            r.decode.clone(),
            r.decode_spread.clone(),
            r.ttft.clone(),
            r.ttft_spread.clone(),
            r.failures.clone(),
            notes,
        ]
    })
}

/// Latency beyond the median TTFT: its tail, E2E, and the pooled gaps
/// between chunks (ITL), each a median across trials.
fn latency_markdown(axis: Along, rows: &[Row]) -> String {
    let columns = [
        ("TTFT p90 (s)", true),
        ("E2E (s)", true),
        ("spread", true),
        ("ITL p50 (ms)", true),
        ("ITL p90 (ms)", true),
        ("ITL p99 (ms)", true),
        ("spread", true),
    ];
    markdown_table(axis, &columns, rows, |r| {
        vec![
            r.ttft_p90.clone(),
            r.e2e.clone(),
            r.e2e_spread.clone(),
            r.itl_p50.clone(),
            r.itl_p90.clone(),
            r.itl_p99.clone(),
            r.itl_p99_spread.clone(),
        ]
    })
}

/// How much the trials disagree, for the headline metrics: IQR, the 95%
/// confidence interval of the median (order statistics) and the CV.
fn spread_markdown(axis: Along, rows: &[Row]) -> String {
    let columns = [
        ("Aggregate IQR (tok/s)", true),
        ("95% CI of median", true),
        ("CV", true),
        ("TTFT IQR (s)", true),
        ("95% CI of median", true),
        ("CV", true),
    ];
    markdown_table(axis, &columns, rows, |r| {
        vec![
            r.agg_iqr.clone(),
            r.agg_ci.clone(),
            r.agg_cv.clone(),
            r.ttft_iqr.clone(),
            r.ttft_ci.clone(),
            r.ttft_cv.clone(),
        ]
    })
}

fn has_server_counters(p: &PointSummary) -> bool {
    !p.server.is_empty()
}

/// A column of the server-counter table.
#[derive(Debug, Clone, Copy)]
enum ServerColumn {
    /// A number derived from the server's counters.
    Metric(ServerMetric),
    /// The client's median TTFT, beside the server's own for comparison.
    ClientTtft,
}

/// The server-counter table's columns: every [`ServerMetric`] in its
/// declared order, with the client's TTFT after the server's.
fn server_columns() -> Vec<ServerColumn> {
    let mut out = Vec::new();
    for m in ServerMetric::ALL {
        out.push(ServerColumn::Metric(m));
        if m == ServerMetric::ServerTtftS {
            out.push(ServerColumn::ClientTtft);
        }
    }
    out
}

impl ServerColumn {
    fn header(self) -> &'static str {
        match self {
            ServerColumn::Metric(m) => m.spec().header,
            ServerColumn::ClientTtft => "Client TTFT (s)",
        }
    }

    /// The point's values across trials, in the column's unit.
    fn stat(self, p: &PointSummary) -> Stat {
        let m = match self {
            ServerColumn::Metric(m) => m,
            ServerColumn::ClientTtft => return Stat::of(&p.ttft_s, "s", 1.0),
        };
        let unit = match m.spec().unit {
            ServerUnit::Fraction => "share",
            ServerUnit::Count => "count",
            ServerUnit::Seconds => "s",
            ServerUnit::Ratio => "ratio",
        };
        Stat::of(&p.server(m).cloned(), unit, 1.0)
    }

    /// The point's median across trials, formatted for its unit.
    fn cell(self, p: &PointSummary) -> String {
        let m = match self {
            ServerColumn::Metric(m) => m,
            ServerColumn::ClientTtft => return center(&p.ttft_s),
        };
        let Some(s) = p.server(m) else {
            return "–".into();
        };
        match m.spec().unit {
            ServerUnit::Fraction => percent1(s.median),
            // A count: whole numbers without decimals (a median of two may be x.5).
            ServerUnit::Count if s.median.fract() == 0.0 => format!("{:.0}", s.median),
            ServerUnit::Count => format!("{:.1}", s.median),
            ServerUnit::Seconds | ServerUnit::Ratio => num(s.median),
        }
    }
}

/// The server-counter table's headers, in column order.
/// Drops the TTFT columns (the server's and the client's) from the
/// server-counter tables of a run whose API does not stream: such a run
/// has no TTFT, and a server's TTFT for it would be its E2E.
pub(crate) fn without_ttft(tables: &mut [Table]) {
    let ttft: Vec<usize> = server_columns()
        .iter()
        .enumerate()
        .filter(|(_, c)| {
            matches!(
                c,
                ServerColumn::ClientTtft | ServerColumn::Metric(ServerMetric::ServerTtftS)
            )
        })
        .map(|(i, _)| i)
        .collect();
    for t in tables {
        for &i in ttft.iter().rev() {
            if i < t.server_headers.len() {
                t.server_headers.remove(i);
            }
            for r in &mut t.rows {
                if i < r.server.len() {
                    r.server.remove(i);
                }
                if i < r.values.server.len() {
                    r.values.server.remove(i);
                }
            }
        }
    }
}

pub(crate) fn server_headers() -> Vec<String> {
    server_columns()
        .iter()
        .map(|c| c.header().to_string())
        .collect()
}

/// What the server's own counters said over each point (deltas of its
/// Prometheus metrics, scraped before and after each trial of the point).
fn server_markdown(axis: Along, rows: &[Row]) -> String {
    let headers = server_headers();
    let columns: Vec<(&str, bool)> = headers.iter().map(|h| (h.as_str(), true)).collect();
    markdown_table(axis, &columns, rows, |r| r.server.clone())
}

/// A median share as a percentage, or a dash.
fn share(s: &Option<qexp_analysis::stats::Summary>) -> String {
    s.as_ref()
        .map_or("–".into(), |s| format!("{:.1}%", s.median * 100.0))
}

/// A median token count, whole tokens (a median of two may be x.5).
fn tokens(s: &Option<qexp_analysis::stats::Summary>) -> String {
    s.as_ref()
        .map_or("–".into(), |s| format!("{:.0}", s.median))
}

/// Medians of what was planned and sent when lengths are drawn per request.
fn lengths_markdown(axis: Along, rows: &[Row]) -> String {
    let columns = [
        ("Input planned, median (tokens)", true),
        ("Input sent, median (tokens)", true),
        ("Output planned, median (tokens)", true),
        ("Output counted, median (tokens)", true),
    ];
    markdown_table(axis, &columns, rows, |r| {
        vec![
            r.input_planned.clone(),
            r.input_sent.clone(),
            r.output_planned.clone(),
            r.output_sent.clone(),
        ]
    })
}

/// Whether the plan expects cached prompt tokens at the point or the server reported some.
fn has_cache_data(p: &PointSummary) -> bool {
    let positive =
        |s: &Option<qexp_analysis::stats::Summary>| s.as_ref().is_some_and(|s| s.max > 0.0);
    positive(&p.cached_share) || positive(&p.cached_share_expected)
}

/// Cached share of prompt tokens per point: what the server reported in
/// its responses beside what the plan's shared prefixes should give.
fn cache_markdown(axis: Along, rows: &[Row]) -> String {
    let columns = [
        ("Cached, reported", true),
        ("Cached, expected by the plan", true),
        ("TTFT (s)", true),
    ];
    markdown_table(axis, &columns, rows, |r| {
        vec![
            r.cached_share.clone(),
            r.cached_share_expected.clone(),
            r.ttft.clone(),
        ]
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use qexp_analysis::TrialMetrics;
    use qexp_plan::Point;
    use qexp_types::ServerCounter;

    fn point(id: u32, concurrency: u32, counters: bool) -> PointSummary {
        let p = Point {
            id,
            concurrency,
            input_tokens: 1000,
            output_tokens: 100,
            requests: 4,
            warmup: 0,
            open_loop: None,
            deployment: None,
            images: None,
        };
        let trials = (1..=3)
            .map(|trial| TrialMetrics {
                trial,
                point_id: id,
                ttft_s: 0.2,
                server: if counters {
                    [
                        (ServerCounter::PrefixCacheQueries, 4.0),
                        (ServerCounter::PrefixCacheHits, f64::from(trial)),
                        (ServerCounter::Preemptions, 0.0),
                        (ServerCounter::TtftCount, 1.0),
                        (ServerCounter::TtftSumS, 0.18),
                    ]
                    .into()
                } else {
                    Default::default()
                },
                ..TrialMetrics::default()
            })
            .collect();
        PointSummary::new(p, trials)
    }

    #[test]
    fn server_counters_table_only_when_scraped() {
        let scraped = tables(&[point(0, 1, true), point(1, 4, false)], &[]);
        let md = &scraped[0].server_markdown;
        // Median of 25%, 50%, 75%; a point without counters shows dashes.
        assert!(
            md.contains("| 1 | 3 | 50.0% | 0 | 0.180 | 0.200 | – |"),
            "{md}"
        );
        assert!(md.contains("| 4 | 3 | – | – | – | 0.200 | – |"), "{md}");
        let plain = tables(&[point(0, 1, false), point(1, 4, false)], &[]);
        assert_eq!(plain[0].server_markdown, "");
        assert_eq!(plain[0].cache_markdown, "", "no cache data, no cache table");
    }

    #[test]
    fn cache_table_shows_reported_beside_expected() {
        let mut shared = point(0, 1, false);
        for t in &mut shared.trials {
            t.cached_share = 0.5 + 0.01 * f64::from(t.trial);
            t.cached_share_expected = 0.52;
        }
        let shared = PointSummary::new(shared.point.clone(), shared.trials);
        let md = &tables(&[shared, point(1, 4, false)], &[])[0].cache_markdown;
        assert!(
            md.contains("| Cached, reported | Cached, expected by the plan |"),
            "{md}"
        );
        assert!(md.contains("| 1 | 3 | 52.0% | 52.0% | 0.200 |"), "{md}");
        assert!(md.contains("| 4 | 3 | 0.0% | 0.0% | 0.200 |"), "{md}");
    }
}
