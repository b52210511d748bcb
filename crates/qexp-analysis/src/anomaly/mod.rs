//! Anomaly detectors over a run's per-point summaries. Each finding is a
//! [`Flag`] value whose `Display` says what was seen, with numbers and units,
//! and what to do; the report shows it next to its point and in a summary
//! list, the terminal prints the summary after `qexp report`.
//!
//! One module per family: [`direction`] (a curve going the wrong way along a
//! swept axis, beyond the noise of both points), [`noise`] (noisy points,
//! outlier trials), [`failures`] (failed requests, invalid trials),
//! [`tokens`] (token-count mismatches, unexpected cache hits), [`knee`] (the
//! saturation knee, a finding rather than a warning) and [`loadgen`] (a load
//! generator that fell behind) and [`schedule`] (waiting before the send,
//! a send rate below the schedule's) and [`gpu`] (GPUs held back by their
//! power limit or temperature, named as a cause in the others). Every limit comes from [`Thresholds`], read
//! from the plan's `[analysis]` section, and is printed in the report.

pub mod answers;
pub mod direction;
pub mod failures;
pub(crate) mod flag;
pub mod gpu;
pub mod knee;
pub mod loadgen;
pub mod noise;
pub mod schedule;
mod text;
pub(crate) mod thresholds;
pub mod tokens;

#[cfg(test)]
pub(crate) mod fixtures;

pub use flag::{Flag, MetricCv, OutlierValue, Queueing, Severity};
pub use thresholds::{ThresholdOrigin, ThresholdRow, ThresholdSource, Thresholds};

pub use crate::metric::Metric;
use crate::metrics::PointSummary;
use crate::run::RunAnalysis;

/// Runs every detector on a run's points; see [`detect_points`].
pub fn detect(run: &RunAnalysis, t: &Thresholds) -> Vec<Flag> {
    let mut flags = detect_points(&run.points, t);
    if let Some(s) = &run.schedule {
        // Lag spent waiting for a slot under the cap is the server's backlog,
        // which the schedule flag names; it is no sign of a slow client.
        flags.retain(|f| match f {
            Flag::LoadGeneratorBehind { point_id, .. } => {
                schedule::cause_at(s, *point_id) != Some(crate::schedule::LagCause::Backlog)
            }
            _ => true,
        });
        flags.extend(schedule::detect(s, &run.points, t));
        if let Some(holding) = knee::slo_holding(s) {
            knee::with_slo(&mut flags, &run.points, &holding);
        }
    }
    flags.extend(answers::accuracy_drops(run));
    sort(&run.points, &mut flags);
    flags
}

/// Runs every detector on points in plan order; flags come sorted by point (plan order), then kind.
pub fn detect_points(points: &[PointSummary], t: &Thresholds) -> Vec<Flag> {
    let mut flags = Vec::new();
    flags.extend(answers::detect(points));
    flags.extend(answers::parse_drops(points));
    flags.extend(direction::detect(points, t));
    flags.extend(noise::detect_noisy(points, t));
    flags.extend(noise::detect_outliers(points, t));
    flags.extend(failures::detect(points));
    flags.extend(tokens::detect(points, t));
    flags.extend(knee::detect(points, t));
    flags.extend(loadgen::detect(points, t));
    flags.extend(loadgen::detect_busy(points, t));
    flags.extend(gpu::detect(points));
    gpu::name_causes(&mut flags, points);
    sort(points, &mut flags);
    flags
}

/// Sorts flags by point (plan order), then kind; broken answers come
/// first of all, since every other number of their point is measured on them.
fn sort(points: &[PointSummary], flags: &mut [Flag]) {
    let index = |f: &Flag| {
        f.point_id()
            .and_then(|id| points.iter().position(|p| p.point.id == id))
            .unwrap_or(usize::MAX)
    };
    // A stable sort keeps each detector's own order within a (point, kind).
    flags.sort_by_key(|f| (!f.about_answers(), index(f), f.rank()));
}

/// Summary lines for the terminal: severity, title, point label and the flag's sentence.
pub fn summary_lines(points: &[PointSummary], flags: &[Flag]) -> Vec<String> {
    flags
        .iter()
        .map(|f| {
            let label = f
                .point_id()
                .and_then(|id| points.iter().find(|p| p.point.id == id))
                .map(|p| format!(" at {}", p.point.label()))
                .unwrap_or_default();
            format!("[{}] {}{label}: {f}", f.severity(), f.title())
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::fixtures::{founding_longctx, founding_throughput, point, trial};
    use super::*;

    #[test]
    fn clean_run_has_no_flags() {
        let pts = founding_throughput();
        let flags = detect_points(&pts, &Thresholds::default());
        // Only the knee: a finding, not a warning.
        assert_eq!(flags.len(), 1, "{flags:?}");
        assert_eq!(flags[0].severity(), Severity::Finding);
    }

    #[test]
    fn flags_are_sorted_by_plan_order_then_kind() {
        let mut pts = founding_longctx(1);
        // Point 0 gets a failure and an invalid trial, then moves last in plan order: order follows the plan, not ids.
        pts[0].trials[0].failures = 1;
        pts[0].trials[0].invalid_reason = Some("server restarted".into());
        pts[0] = PointSummary::new(pts[0].point.clone(), pts[0].trials.clone());
        pts.swap(0, 5);
        let flags = detect_points(&pts, &Thresholds::default());
        let order: Vec<(Option<u32>, &str)> =
            flags.iter().map(|f| (f.point_id(), f.title())).collect();
        assert_eq!(
            order,
            vec![
                (Some(5), "Wrong direction"),
                (Some(0), "Failed requests"),
                (Some(0), "Invalid trial"),
            ]
        );
    }

    #[test]
    fn summary_line_names_point_and_severity() {
        let p = point(0, 4, 1000, 500, vec![trial(1, 100.0, 50.0, 0.5, 10.0)]);
        let mut bad = p.trials.clone();
        bad[0].failures = 2;
        let pts = vec![PointSummary::new(p.point.clone(), bad)];
        let flags = detect_points(&pts, &Thresholds::default());
        let lines = summary_lines(&pts, &flags);
        assert_eq!(lines.len(), 1, "{lines:?}");
        assert!(
            lines[0].starts_with("[warning] Failed requests at c=4 in=1000 out=500: 2 of 4"),
            "{}",
            lines[0]
        );
    }

    #[test]
    fn flags_serialize_with_kind_tag() {
        let pts = founding_longctx(1);
        let flags = detect_points(&pts, &Thresholds::default());
        let json = serde_json::to_value(&flags).unwrap_or_default();
        assert_eq!(json[0]["kind"], "wrong_direction");
        assert_eq!(json[0]["metric"], "ttft_s");
        assert_eq!(json[0]["axis"], "input_tokens");
        assert_eq!(json[0]["cache_explains"], serde_json::Value::Null);
    }
}
