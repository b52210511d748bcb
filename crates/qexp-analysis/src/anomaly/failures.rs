//! Failed requests and trials the runner marked invalid. Any failure is
//! flagged: a benchmark's medians describe only the requests that succeeded.

use super::Flag;
use crate::metrics::PointSummary;

/// A failures flag per point with failed requests, then an invalid-trial flag per distinct reason.
pub fn detect(points: &[PointSummary]) -> Vec<Flag> {
    let mut flags = Vec::new();
    for p in points {
        let failed: Vec<u32> = p
            .trials
            .iter()
            .filter(|t| t.failures > 0)
            .map(|t| t.trial)
            .collect();
        if p.failures > 0 || !failed.is_empty() {
            flags.push(Flag::Failures {
                point_id: p.point.id,
                failures: p.failures,
                requests: p.requests,
                trials: failed,
            });
        }
        let mut reasons: Vec<(&str, Vec<u32>)> = Vec::new();
        for t in &p.trials {
            let Some(r) = t.invalid_reason.as_deref() else {
                continue;
            };
            match reasons.iter_mut().find(|(x, _)| *x == r) {
                Some((_, ts)) => ts.push(t.trial),
                None => reasons.push((r, vec![t.trial])),
            }
        }
        flags.extend(reasons.into_iter().map(|(r, trials)| Flag::PointInvalid {
            point_id: p.point.id,
            trials,
            reason: r.to_string(),
        }));
    }
    flags
}

#[cfg(test)]
mod tests {
    use super::super::fixtures::{founding_throughput, point, resummarise, trial};
    use super::*;

    #[test]
    fn failures_are_counted_and_trials_named() {
        let mut t1 = trial(1, 100.0, 50.0, 1.0, 11.0);
        let t2 = trial(2, 100.0, 50.0, 1.0, 11.0);
        let mut t3 = trial(3, 100.0, 50.0, 1.0, 11.0);
        t1.failures = 1;
        t3.failures = 3;
        let pts = vec![point(7, 4, 1000, 500, vec![t1, t2, t3])];
        let flags = detect(&pts);
        assert_eq!(
            flags,
            vec![Flag::Failures {
                point_id: 7,
                failures: 4,
                requests: 12,
                trials: vec![1, 3],
            }]
        );
        let text = flags[0].to_string();
        assert!(
            text.starts_with("4 of 12 requests failed (33.3%) in trials 1, 3; the medians use only the successful ones."),
            "{text}"
        );
    }

    #[test]
    fn clean_points_have_no_failure_flags() {
        assert!(detect(&founding_throughput()).is_empty());
    }

    #[test]
    fn invalid_trials_grouped_by_reason() {
        let mut p = founding_throughput().swap_remove(2);
        p.trials[0].invalid_reason = Some("server restarted mid-point".into());
        p.trials[2].invalid_reason = Some("server restarted mid-point".into());
        p.trials[1].invalid_reason = Some("prompt 1043 tokens, planned 1000".into());
        let flags = detect(&[resummarise(&p)]);
        assert_eq!(flags.len(), 2, "{flags:?}");
        assert_eq!(
            flags[0],
            Flag::PointInvalid {
                point_id: 2,
                trials: vec![1, 3],
                reason: "server restarted mid-point".into(),
            }
        );
        assert_eq!(flags[1].point_id(), Some(2));
        assert!(flags[1]
            .to_string()
            .starts_with("Trial 2 was marked invalid: prompt 1043"));
        assert_eq!(
            flags[0].to_string(),
            "Trials 1, 3 were marked invalid: server restarted mid-point. Their numbers are still in this point's statistics; fix the cause and rerun the point."
        );
    }
}
