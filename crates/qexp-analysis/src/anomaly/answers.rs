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

/// A parse-rate flag per closed-loop point whose answers parsed less
/// often than at the lowest concurrency of the same lengths and
/// deployment, the whole interval of the change (Newcombe's) below zero.
/// The points compared with one lowest load share the parse rate's
/// confidence (Bonferroni: each interval at 1 − (1 − confidence)/m), so a
/// sweep of many points is not flagged by chance more often than one.
pub fn parse_drops(points: &[PointSummary]) -> Vec<Flag> {
    let pairs: Vec<(&PointSummary, &PointSummary)> = points
        .iter()
        .filter(|p| p.answers.parse.is_some() && p.point.open_loop.is_none())
        .filter_map(|p| {
            let base = points
                .iter()
                .filter(|q| like(p, q) && q.answers.parse.is_some())
                .min_by_key(|q| (q.point.concurrency, q.point.id))?;
            (base.point.concurrency < p.point.concurrency).then_some((p, base))
        })
        .collect();
    let compared = |base: u32| {
        let m = pairs.iter().filter(|(_, b)| b.point.id == base).count();
        u32::try_from(m).unwrap_or(u32::MAX)
    };
    pairs
        .iter()
        .filter_map(|&(p, base)| {
            let (rate, base_rate) = (p.answers.parse.as_ref()?, base.answers.parse.as_ref()?);
            let m = compared(base.point.id);
            let confidence = 1.0 - (1.0 - crate::answers::PARSE_CONFIDENCE) / f64::from(m);
            let interval = crate::stats::wilson::newcombe_difference(
                (base_rate.parsed, base_rate.checked),
                (rate.parsed, rate.checked),
                confidence,
            )?;
            (interval.1 < 0.0).then(|| Flag::ParseRateFalls {
                point_id: p.point.id,
                concurrency: p.point.concurrency,
                baseline_concurrency: base.point.concurrency,
                rate: rate.clone(),
                baseline_rate: base_rate.clone(),
                change_interval: interval,
                compared: m,
                trend: along(points, p, |q| q.answers.parse.as_ref().map(|r| r.share)),
            })
        })
        .collect()
}

/// Whether `q` differs from `p` at most in its concurrency (closed loop both).
fn like(p: &PointSummary, q: &PointSummary) -> bool {
    q.point.same_workload(&p.point) && q.point.open_loop.is_none()
}

/// `value` of the points like `p`, by concurrency (empty when `p` is the only one).
fn along(
    points: &[PointSummary],
    p: &PointSummary,
    value: impl Fn(&PointSummary) -> Option<f64>,
) -> Vec<(u32, f64)> {
    let mut along: Vec<(u32, f64)> = points
        .iter()
        .filter(|q| like(p, q))
        .filter_map(|q| Some((q.point.concurrency, value(q)?)))
        .collect();
    along.sort_by_key(|(c, _)| *c);
    along.dedup_by_key(|(c, _)| *c);
    if along.len() < 2 {
        along.clear();
    }
    along
}

/// The worst issue's share along concurrency among the points that differ
/// from `p` only in it (empty when `p` is the only one).
fn trend(points: &[PointSummary], p: &PointSummary) -> Vec<(u32, f64)> {
    along(points, p, |q| {
        (q.answers.checked > 0).then(|| q.answers.worst_share())
    })
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
            parse_checked: 0,
            parsed: 0,
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

    fn parsing(id: u32, concurrency: u32, parsed: u64, checked: u64) -> PointSummary {
        let mut p = with_loops(id, concurrency, 0);
        p.trials[0].answers.parse_checked = checked;
        p.trials[0].answers.parsed = parsed;
        PointSummary::new(p.point, p.trials)
    }

    #[test]
    fn a_parse_rate_that_falls_beyond_the_noise_is_flagged() {
        // 40/40 at c=1; 37/40 at c=8 is within the noise; 20/40 at c=64 is not.
        let pts = vec![
            parsing(0, 1, 40, 40),
            parsing(1, 8, 37, 40),
            parsing(2, 64, 20, 40),
        ];
        let flags = parse_drops(&pts);
        assert_eq!(flags.len(), 1, "{flags:?}");
        let Flag::ParseRateFalls {
            point_id,
            baseline_concurrency,
            change_interval,
            trend,
            ..
        } = &flags[0]
        else {
            panic!("{flags:?}")
        };
        assert_eq!((*point_id, *baseline_concurrency), (2, 1));
        assert!(
            change_interval.1 < 0.0 && change_interval.0 > -1.0,
            "{change_interval:?}"
        );
        assert_eq!(trend, &[(1, 1.0), (8, 0.925), (64, 0.5)]);
        let text = flags[0].to_string();
        assert!(
            text.starts_with(
                "50% of answers parsed at concurrency 64 (20/40) against 100% at 1 (40/40)"
            ),
            "{text}"
        );
        assert_eq!(flags[0].title(), "Parse rate falls under load");
        // A fall the interval of one comparison excludes zero for is not
        // flagged when it is one of many compared with the same lowest load.
        let one = vec![parsing(0, 1, 40, 40), parsing(1, 8, 33, 40)];
        assert_eq!(parse_drops(&one).len(), 1, "one comparison");
        let mut many = one.clone();
        many.extend((2..8).map(|i| parsing(i, 8 * i, 40, 40)));
        assert!(parse_drops(&many).is_empty(), "seven comparisons");
        // Rising or level rates, or one point alone, are not flagged.
        assert!(parse_drops(&[parsing(0, 1, 20, 40), parsing(1, 64, 40, 40)]).is_empty());
        assert!(parse_drops(&[parsing(0, 64, 20, 40)]).is_empty());
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
