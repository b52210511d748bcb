//! Broken answers: a point whose answers loop, are empty or garbled, stop
//! before a forced length, end without a finish reason, or miss the asked
//! length on the mean (classes and thresholds in qexp-types' `answer`
//! module). Its flag comes before every other: a fast point that answered
//! garbage is the most misleading number a benchmark can print.

use super::Flag;
use crate::metrics::PointSummary;

/// A broken-answers flag per point whose answers are broken.
pub fn detect(points: &[PointSummary]) -> Vec<Flag> {
    points
        .iter()
        .filter(|p| p.answers.broken())
        .map(|p| {
            let h = &p.answers;
            let mut issues: Vec<_> = h.broken_issues().cloned().collect();
            issues.sort_by(|a, b| b.share.total_cmp(&a.share));
            Flag::BrokenAnswers {
                point_id: p.point.id,
                checked: h.checked,
                issues,
                length: h.length.clone(),
                trend: trend(points, p),
                excerpt: h.excerpt.clone(),
            }
        })
        .collect()
}

/// An accuracy-drop flag per point whose graded answers are significantly
/// worse than at the lowest load (`RunAnalysis::accuracy_by_load`).
pub fn accuracy_drops(run: &crate::RunAnalysis) -> Vec<Flag> {
    let concurrency = |id: u32| {
        run.points
            .iter()
            .find(|p| p.point.id == id)
            .map_or(0, |p| p.point.concurrency)
    };
    run.accuracy_by_load
        .iter()
        .filter(|c| c.diff.verdict == crate::diff::Verdict::Worse)
        .filter_map(|c| {
            let t = c.diff.test?;
            Some(Flag::AccuracyDrop {
                point_id: c.point_id,
                concurrency: concurrency(c.point_id),
                baseline_concurrency: concurrency(c.baseline_point_id),
                change: t.estimate,
                p_holm: t.p_holm,
            })
        })
        .collect()
}

/// The worst issue's share along concurrency among the points that differ
/// from `p` only in it (empty when `p` is the only one).
fn trend(points: &[PointSummary], p: &PointSummary) -> Vec<(u32, f64)> {
    let like = |q: &&PointSummary| {
        q.point.input_tokens == p.point.input_tokens
            && q.point.output_tokens == p.point.output_tokens
            && q.point.deployment == p.point.deployment
            && q.point.open_loop.is_none()
            && q.answers.checked > 0
    };
    let mut along: Vec<(u32, f64)> = points
        .iter()
        .filter(like)
        .map(|q| (q.point.concurrency, q.answers.worst_share()))
        .collect();
    along.sort_by_key(|(c, _)| *c);
    along.dedup_by_key(|(c, _)| *c);
    if along.len() < 2 {
        along.clear();
    }
    along
}

#[cfg(test)]
mod tests {
    use super::super::fixtures::{point, trial};
    use super::*;
    use crate::answers::AnswerTally;
    use qexp_types::AnswerIssue;

    fn with_loops(id: u32, concurrency: u32, loops: u64) -> PointSummary {
        let mut t = trial(1, 100.0, 50.0, 1.0, 11.0);
        t.answers = AnswerTally {
            checked: 20,
            issues: [(AnswerIssue::Loop, loops)]
                .into_iter()
                .filter(|(_, n)| *n > 0)
                .collect(),
            output_tokens: 2000.0,
            output_planned: 2000.0,
            forced: 20,
            excerpt: (loops > 0).then(|| (AnswerIssue::Loop, "lambda lambda".into())),
        };
        let p = point(id, concurrency, 1000, 100, vec![t]);
        PointSummary::new(p.point, p.trials)
    }

    #[test]
    fn broken_points_are_flagged_with_the_trend() {
        let pts = vec![
            with_loops(0, 1, 0),
            with_loops(1, 8, 1),
            with_loops(2, 64, 10),
        ];
        // 1 of 20 at c=8 is 5%, BROKEN_SHARE: broken too.
        let flags = detect(&pts);
        assert_eq!(flags.len(), 2, "{flags:?}");
        let Flag::BrokenAnswers {
            point_id,
            issues,
            trend,
            excerpt,
            ..
        } = &flags[1]
        else {
            panic!("{flags:?}")
        };
        assert_eq!(*point_id, 2);
        assert_eq!(issues[0].share, 0.5);
        assert_eq!(trend, &[(1, 0.0), (8, 0.05), (64, 0.5)]);
        assert_eq!(
            excerpt.as_ref().map(|e| e.1.as_str()),
            Some("lambda lambda")
        );
        assert!(detect(&[with_loops(0, 1, 0)]).is_empty());
    }

    #[test]
    fn broken_answers_sort_before_everything() {
        let mut pts = crate::anomaly::fixtures::founding_throughput();
        let last = pts.len() - 1;
        let p = with_loops(pts[last].point.id, pts[last].point.concurrency, 10);
        pts[last].trials[0].answers = p.trials[0].answers.clone();
        pts[last] = PointSummary::new(pts[last].point.clone(), pts[last].trials.clone());
        let flags = crate::anomaly::detect_points(&pts, &crate::Thresholds::default());
        assert_eq!(flags[0].title(), "Broken answers", "{flags:?}");
    }
}
