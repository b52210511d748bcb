//! The founding table layout, one table per swept axis and combination of
//! the other parameters: medians across trials with min–max spread and n,
//! units in headers, flag markers beside their points.

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

/// One table: the group's rows along `axis`, and which of its side tables
/// have anything to show.
fn table(axis: Along, group: &[&PointSummary], fixed: String, flags: &[FlagView]) -> Table {
    let rows: Vec<Row> = group.iter().map(|p| row(axis, p, flags)).collect();
    let any = |f: fn(&PointSummary) -> bool| group.iter().any(|p| f(p));
    Table {
        axis: axis.name().into(),
        title: axis.title(),
        axis_header: axis.header().to_string(),
        server_headers: server_headers(),
        server: any(has_server_counters),
        energy_headers: crate::energy::headers(),
        energy: any(has_energy_figures),
        cache: any(has_cache_data),
        lengths: any(|p| p.trials.iter().any(|t| t.lengths_vary)),
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
    Row {
        point_id: p.point.id,
        value: axis.cell(&p.point),
        n: p.n,
        energy: crate::energy::cells(p),
        values: row_values(axis, p, &marks, notes),
    }
}

/// The numbers behind a row's cells, unrounded; the templates format them.
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

/// Whether the point has an energy or cost figure, or a note about one:
/// a run whose points file carries the energy columns with nothing in them
/// gets no table of dashes.
fn has_energy_figures(p: &PointSummary) -> bool {
    p.energy.is_some()
        && crate::energy::cells(p)
            .iter()
            .any(|c| !c.is_empty() && c != "–")
}

/// Whether the plan expects cached prompt tokens at the point or the server reported some.
fn has_cache_data(p: &PointSummary) -> bool {
    let positive =
        |s: &Option<qexp_analysis::stats::Summary>| s.as_ref().is_some_and(|s| s.max > 0.0);
    positive(&p.cached_share) || positive(&p.cached_share_expected)
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

    /// The medians of a table's rows for one cell.
    fn medians(t: &Table, f: fn(&RowValues) -> &Stat) -> Vec<Option<f64>> {
        t.rows.iter().map(|r| f(&r.values).median).collect()
    }

    #[test]
    fn server_counters_table_only_when_scraped() {
        let scraped = tables(&[point(0, 1, true), point(1, 4, false)], &[]);
        let t = &scraped[0];
        assert!(t.server, "a point was scraped");
        // The hit rate: median of 25%, 50%, 75%; a point without counters has none.
        assert_eq!(medians(t, |r| &r.server[0]), [Some(0.5), None]);
        assert_eq!(t.rows[0].values.server[0].unit, "share");
        let plain = tables(&[point(0, 1, false), point(1, 4, false)], &[]);
        assert!(!plain[0].server);
        assert!(!plain[0].cache, "no cache data, no cache table");
    }

    #[test]
    fn an_energy_table_of_dashes_is_not_shown() {
        let mut empty = point(0, 1, false);
        empty.energy = Some(qexp_analysis::EnergySummary::default());
        assert!(!tables(&[empty.clone()], &[])[0].energy);
        let mut measured = empty;
        measured.energy = Some(qexp_analysis::EnergySummary {
            energy_j: Summary::of(&[120.0, 130.0]),
            ..Default::default()
        });
        assert!(tables(&[measured, point(1, 4, false)], &[])[0].energy);
    }

    #[test]
    fn cache_table_shows_reported_beside_expected() {
        let mut shared = point(0, 1, false);
        for t in &mut shared.trials {
            t.cached_share = 0.5 + 0.01 * f64::from(t.trial);
            t.cached_share_expected = 0.52;
        }
        let shared = PointSummary::new(shared.point.clone(), shared.trials);
        let t = &tables(&[shared, point(1, 4, false)], &[])[0];
        assert!(t.cache);
        let got = medians(t, |r| &r.cached_share);
        assert!((got[0].unwrap() - 0.52).abs() < 1e-12, "{got:?}");
        assert_eq!(got[1], Some(0.0));
        let expected = medians(t, |r| &r.cached_share_expected);
        assert_eq!(expected, [Some(0.52), Some(0.0)]);
    }
}
