//! A load generator that fell behind: requests left the client later than
//! scheduled, so the run measured the client, not the server.
//!
//! A trial is flagged when its largest scheduled → sent lag exceeds both
//! `send_lag_s` (default 10 ms: below it, timer and scheduler jitter) and
//! `send_lag_fraction` of the trial's median TTFT (default 5%: a lag that
//! small against the latencies measured cannot change what they say). The
//! founding run's C = 1 point (TTFT 0.3 s) thus tolerates 15 ms, its C = 100
//! point (TTFT 61 s) about 3 s; a 5 ms TTFT tolerates only the 10 ms floor.

use super::{Flag, Thresholds};
use crate::metrics::PointSummary;

/// One flag per point with at least one late trial.
pub fn detect(points: &[PointSummary], t: &Thresholds) -> Vec<Flag> {
    points
        .iter()
        .filter_map(|p| {
            let late: Vec<(u32, f64, f64)> = p
                .trials
                .iter()
                .map(|tr| (tr.trial, tr.send_lag_max_s, t.send_lag_limit(tr.ttft_s)))
                .filter(|&(_, lag, limit)| lag.is_finite() && lag > limit)
                .collect();
            let worst = late.iter().max_by(|a, b| a.1.total_cmp(&b.1))?;
            Some(Flag::LoadGeneratorBehind {
                point_id: p.point.id,
                trials: late.iter().map(|l| l.0).collect(),
                send_lag_s: worst.1,
                limit_s: worst.2,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::super::fixtures::{founding_throughput, resummarise};
    use super::*;

    fn with_lags(index: usize, lags: [f64; 3]) -> Vec<PointSummary> {
        let mut p = founding_throughput().swap_remove(index);
        for (tr, lag) in p.trials.iter_mut().zip(lags) {
            tr.send_lag_max_s = lag;
        }
        vec![resummarise(&p)]
    }

    #[test]
    fn late_trials_at_short_ttft_are_flagged() {
        // C = 1: TTFT 0.297, 0.3, 0.303 s, so the limit is max(10 ms, 5% of TTFT) ≈ 15 ms.
        let flags = detect(&with_lags(0, [0.016, 0.120, 0.002]), &Thresholds::default());
        let [Flag::LoadGeneratorBehind {
            point_id,
            trials,
            send_lag_s,
            limit_s,
        }] = flags.as_slice()
        else {
            panic!("one flag expected: {flags:?}");
        };
        assert_eq!(
            (*point_id, trials.as_slice(), *send_lag_s),
            (0, &[1, 2][..], 0.120)
        );
        assert!((limit_s - 0.05 * 0.3).abs() < 1e-12, "{limit_s}");
        assert_eq!(
            flags[0].to_string(),
            "Requests left the client up to 120 ms after they were due in trials 1, 2 (limit 15 ms): the load generator fell behind, so these numbers describe the client, not the server. Give qexp more CPU, lower the concurrency, or split the load across client machines and merge the results."
        );
    }

    #[test]
    fn lag_small_against_ttft_or_jitter_is_not_flagged() {
        let t = Thresholds::default();
        // C = 100, TTFT about 61 s: 2 s of lag is 3%.
        assert!(detect(&with_lags(7, [2.0, 1.5, 0.5]), &t).is_empty());
        // Under the 10 ms floor however short the TTFT.
        assert!(detect(&with_lags(0, [0.009, 0.009, 0.0]), &t).is_empty());
        // Unknown lag (NaN) says nothing.
        assert!(detect(&with_lags(0, [f64::NAN; 3]), &t).is_empty());
        assert!(detect(&founding_throughput(), &t).is_empty());
    }

    #[test]
    fn floor_applies_when_ttft_is_unknown() {
        let mut pts = with_lags(0, [0.011, 0.0, 0.0]);
        pts[0].trials[0].ttft_s = f64::NAN; // every request of the trial failed
        let flags = detect(&pts, &Thresholds::default());
        assert_eq!(flags.len(), 1, "{flags:?}");
        let stricter = Thresholds {
            send_lag_s: 0.05,
            ..Thresholds::default()
        };
        assert!(detect(&pts, &stricter).is_empty());
    }
}
