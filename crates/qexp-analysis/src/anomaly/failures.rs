//! Failed requests and trials the runner marked invalid. Any failure is
//! flagged: a benchmark's medians describe only the requests that succeeded.
//! The flag names the failures' error classes, and its advice follows them
//! ([`advice`]): a timeout asks for a longer timeout or less load, a rate
//! limit for a higher limit, a broken stream for the server's log.

use super::Flag;
use crate::failures::FailureGroup;
use crate::metrics::PointSummary;
use qexp_types::ErrorClass;

/// What to do about failures of `class`: a sentence fragment.
pub fn advice(class: ErrorClass) -> &'static str {
    use ErrorClass as E;
    match class {
        E::FirstByteTimeout | E::Timeout | E::IdleTimeout => {
            "timeouts at high concurrency mean the plan's [timeouts] (first_byte_s, \
             idle_s, total_s) are shorter than the server's queue: raise them or lower the load"
        }
        E::RateLimited => {
            "HTTP 429 is a rate limit (the server's or a gateway's): these numbers measure \
             the limiter; raise the limit for the benchmark's key or lower the rate"
        }
        E::Unavailable => {
            "HTTP 503 means the server was overloaded or still starting (its Retry-After is \
             in error_message): wait until it is ready before measuring, or cap the load \
             ([load] max_in_flight, lower concurrency)"
        }
        E::StreamBroken | E::ConnectionClosed => {
            "connections broke mid-answer: look in the server's log for a crash, restart or \
             out-of-memory, and at any proxy between (idle timeouts, connection limits)"
        }
        E::Connect => "no connection could be made: the server was down or unreachable",
        E::ContextLength => {
            "prompt and answer do not fit the model's context: shorten the lengths or raise \
             the server's context limit"
        }
        E::HttpStatus | E::ServerError | E::NoOutput => {
            "the server answered with errors: read error_message and the server's log"
        }
        E::Protocol
        | E::MalformedJson
        | E::MissingDone
        | E::OversizedEvent
        | E::InvalidUtf8
        | E::ContentType => {
            "the stream is not what an OpenAI-compatible server sends: check [target] api \
             (chat or completions) and any proxy between"
        }
        E::Cancelled => "qexp stopped them: the run was interrupted",
        E::Skipped => "an earlier turn of their conversation failed first",
    }
}

/// Names the error classes of each failures flag from the run's failed
/// requests grouped by point and class (largest first).
pub fn name_classes(flags: &mut [Flag], groups: &[FailureGroup]) {
    for f in flags {
        if let Flag::Failures {
            point_id, classes, ..
        } = f
        {
            *classes = groups
                .iter()
                .filter(|g| g.point_id == *point_id)
                .filter_map(|g| Some((ErrorClass::from_name(&g.class)?, g.count)))
                .collect();
        }
    }
}

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
                classes: Vec::new(),
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
                classes: Vec::new(),
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

    #[test]
    fn advice_follows_the_failure_class() {
        let flag = |classes: Vec<(ErrorClass, u64)>| {
            let mut flags = vec![Flag::Failures {
                point_id: 7,
                failures: classes.iter().map(|c| c.1).sum(),
                requests: 40,
                trials: vec![1],
                classes: Vec::new(),
            }];
            let groups: Vec<FailureGroup> = classes
                .iter()
                .map(|(c, n)| FailureGroup {
                    point_id: 7,
                    class: c.as_str().into(),
                    count: *n,
                    trials: vec![1],
                    message: String::new(),
                })
                .collect();
            name_classes(&mut flags, &groups);
            flags[0].to_string()
        };
        for class in [
            ErrorClass::StreamBroken,
            ErrorClass::Unavailable,
            ErrorClass::RateLimited,
            ErrorClass::ContextLength,
        ] {
            let text = flag(vec![(class, 3)]);
            assert!(
                text.contains(&format!("({class} 3)")) && !text.contains("first_byte_s"),
                "{text}"
            );
        }
        let text = flag(vec![
            (ErrorClass::FirstByteTimeout, 5),
            (ErrorClass::RateLimited, 2),
        ]);
        assert!(
            text.contains("(first_byte_timeout 5, rate_limited 2)")
                && text.contains("first_byte_s")
                && text.contains("rate limit"),
            "{text}"
        );
        // Two classes with the same advice say it once.
        let text = flag(vec![
            (ErrorClass::StreamBroken, 1),
            (ErrorClass::ConnectionClosed, 1),
        ]);
        assert_eq!(text.matches("broke mid-answer").count(), 1, "{text}");
    }
}
