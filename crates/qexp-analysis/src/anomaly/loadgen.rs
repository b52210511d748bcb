//! A load generator that fell behind: requests left the client later than
//! scheduled, so the run measured the client, not the server.
//!
//! A trial is flagged when its largest scheduled → sent lag exceeds both
//! `send_lag_s` (default 10 ms: below it, timer and scheduler jitter) and
//! `send_lag_fraction` of the trial's median TTFT (default 5%: a lag that
//! small against the latencies measured cannot change what they say). The
//! founding run's C = 1 point (TTFT 0.3 s) thus tolerates 15 ms, its C = 100
//! point (TTFT 61 s) about 3 s; a 5 ms TTFT tolerates only the 10 ms floor.
//!
//! The same limit holds for qexp's own event-loop lag (p99 of how late a
//! due timer was woken while the point ran, recorded by the runner): chunk
//! arrivals are stamped that late, so a trial above it is flagged as the
//! client having been too busy to time the server. Below
//! [`CLIENT_CPU_SHORT_CORES`] of qexp's own CPU use, qexp was not short of
//! CPU: the late wake-ups were the host's (another process on its cores,
//! timer granularity, a virtual machine's stolen time), and the flag says
//! so rather than asking for more CPU.

use super::{Flag, Thresholds};
use crate::metrics::PointSummary;

/// qexp's CPU use (cores, over the point) below which a late event loop is
/// not qexp being short of CPU: a client that busy uses at least half a
/// core (`qexp bench` measures about one core per 1.5 million tokens/s).
pub const CLIENT_CPU_SHORT_CORES: f64 = 0.5;

/// Whether qexp's late wake-ups at `cores` of CPU use are the host's doing
/// rather than qexp's own load (false when the use is unknown: NaN, or 0
/// where a run did not record it).
pub fn host_delayed(cores: f64) -> bool {
    cores > 0.0 && cores < CLIENT_CPU_SHORT_CORES
}

/// One flag per point with at least one late trial.
pub fn detect(points: &[PointSummary], t: &Thresholds) -> Vec<Flag> {
    points
        .iter()
        .filter_map(|p| {
            let late: Vec<(u32, f64, f64, f64)> = p
                .trials
                .iter()
                .map(|tr| {
                    let limit = t.send_lag_limit(tr.ttft_s);
                    (tr.trial, tr.send_lag_max_s, limit, tr.client_cpu_cores)
                })
                .filter(|&(_, lag, limit, _)| lag.is_finite() && lag > limit)
                .collect();
            let worst = late.iter().max_by(|a, b| a.1.total_cmp(&b.1))?;
            Some(Flag::LoadGeneratorBehind {
                point_id: p.point.id,
                trials: late.iter().map(|l| l.0).collect(),
                send_lag_s: worst.1,
                limit_s: worst.2,
                cpu_cores: worst.3,
            })
        })
        .collect()
}

/// One flag per point with at least one trial whose event loop lagged.
pub fn detect_busy(points: &[PointSummary], t: &Thresholds) -> Vec<Flag> {
    points
        .iter()
        .filter_map(|p| {
            let busy: Vec<(u32, f64, f64, f64)> = p
                .trials
                .iter()
                .map(|tr| {
                    let limit = t.send_lag_limit(tr.ttft_s);
                    (
                        tr.trial,
                        tr.client_loop_lag_p99_s,
                        tr.client_cpu_cores,
                        limit,
                    )
                })
                .filter(|&(_, lag, _, limit)| lag.is_finite() && lag > limit)
                .collect();
            let worst = busy.iter().max_by(|a, b| a.1.total_cmp(&b.1))?;
            Some(Flag::ClientBusy {
                point_id: p.point.id,
                trials: busy.iter().map(|b| b.0).collect(),
                loop_lag_p99_s: worst.1,
                cpu_cores: worst.2,
                limit_s: worst.3,
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
            ..
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

    #[test]
    fn late_sends_at_low_cpu_are_the_hosts() {
        let mut pts = with_lags(0, [0.016, 0.120, 0.002]);
        for tr in &mut pts[0].trials {
            tr.client_cpu_cores = 0.1;
        }
        let flags = detect(&pts, &Thresholds::default());
        assert_eq!(flags[0].title(), "Client host delayed the sends");
        let text = flags[0].to_string();
        assert!(
            text.contains("not short of CPU") && !text.contains("Give qexp more CPU"),
            "{text}"
        );
    }

    #[test]
    fn a_lagging_event_loop_is_flagged_and_a_quiet_one_is_not() {
        let mut p = founding_throughput().swap_remove(0);
        // C = 1, TTFT about 0.3 s: limit about 15 ms.
        for (tr, (lag, cores)) in
            p.trials
                .iter_mut()
                .zip([(0.002, 0.3), (0.040, 1.9), (f64::NAN, f64::NAN)])
        {
            tr.client_loop_lag_p99_s = lag;
            tr.client_cpu_cores = cores;
        }
        let flags = detect_busy(&[resummarise(&p)], &Thresholds::default());
        let [Flag::ClientBusy {
            point_id,
            trials,
            loop_lag_p99_s,
            cpu_cores,
            limit_s,
        }] = flags.as_slice()
        else {
            panic!("one flag expected: {flags:?}");
        };
        assert_eq!((*point_id, trials.as_slice()), (p.point.id, &[2][..]));
        assert_eq!((*loop_lag_p99_s, *cpu_cores), (0.040, 1.9));
        assert!((0.014..0.016).contains(limit_s), "{limit_s}");
        let text = flags[0].to_string();
        assert!(
            text.contains("1.90 cores") && text.contains("trial 2"),
            "{text}"
        );

        for tr in &mut p.trials {
            tr.client_loop_lag_p99_s = 0.012;
        }
        assert!(detect_busy(&[resummarise(&p)], &Thresholds::default()).is_empty());
    }

    #[test]
    fn a_late_loop_at_low_cpu_is_the_hosts() {
        let mut p = founding_throughput().swap_remove(0);
        for tr in &mut p.trials {
            tr.client_loop_lag_p99_s = 0.032;
            tr.client_cpu_cores = 0.05;
        }
        let flags = detect_busy(&[resummarise(&p)], &Thresholds::default());
        assert_eq!(flags.len(), 1, "{flags:?}");
        assert_eq!(flags[0].title(), "Client host delayed qexp");
        let text = flags[0].to_string();
        assert!(
            text.contains("not short of CPU") && !text.contains("Give qexp more CPU"),
            "{text}"
        );
        // At the limit's other side, qexp itself was busy.
        for tr in &mut p.trials {
            tr.client_cpu_cores = CLIENT_CPU_SHORT_CORES;
        }
        let flags = detect_busy(&[resummarise(&p)], &Thresholds::default());
        assert_eq!(flags[0].title(), "Load generator busy");
        assert!(flags[0].to_string().contains("Give qexp more CPU"));
    }
}
