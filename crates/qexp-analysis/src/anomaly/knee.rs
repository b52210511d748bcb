//! The saturation knee: the concurrency beyond which aggregate throughput
//! gains less than `knee_gain` per doubling of concurrency while TTFT keeps
//! growing. A finding about the server, not an error.
//!
//! Between neighbouring concurrencies c1 < c2 with median aggregate
//! throughputs a1, a2 the gain per doubling is `(a2/a1)^(1/log2(c2/c1)) - 1`,
//! so uneven steps (64 → 100) compare fairly with doublings. The knee is the
//! first concurrency from which every later step gains less than `knee_gain`,
//! and it is reported only when median TTFT at the highest concurrency
//! exceeds the knee's by more than `min_change`: flat throughput with flat
//! latency is a lightly loaded sweep, not saturation. The founding run
//! (73, 140, 260, 420, 480, 505, 506, 505 tok/s at C = 1 … 100) has its knee at
//! C = 32 with the default 5%.

use super::direction::groups;
use super::{Flag, Thresholds};
use crate::metrics::{Axis, PointSummary};

/// At most one knee per group of points that differ only in concurrency.
pub fn detect(points: &[PointSummary], t: &Thresholds) -> Vec<Flag> {
    let mut flags = Vec::new();
    for group in groups(points, Axis::Concurrency) {
        let pts: Vec<(&PointSummary, f64)> = group
            .into_iter()
            .filter_map(|p| Some((p, p.agg_tok_s.as_ref()?.median)))
            .filter(|(_, a)| a.is_finite() && *a > 0.0)
            .collect();
        let gains: Vec<f64> = pts
            .windows(2)
            .map(|w| {
                let doublings = (f64::from(w[1].0.point.concurrency)
                    / f64::from(w[0].0.point.concurrency))
                .log2();
                (w[1].1 / w[0].1).powf(1.0 / doublings) - 1.0
            })
            .collect();
        let mut knee = gains.len();
        while knee > 0 && gains[knee - 1] < t.knee_gain {
            knee -= 1;
        }
        let (Some(&(p, agg)), Some(&(last, _))) = (pts.get(knee), pts.last()) else {
            continue;
        };
        if knee == gains.len() {
            continue; // still scaling at the last step
        }
        let ttft = |p: &PointSummary| p.ttft_s.as_ref().map_or(f64::NAN, |s| s.median);
        let (t0, t1) = (ttft(p), ttft(last));
        if !(t0.is_finite() && t1.is_finite() && t1 > t0 * (1.0 + t.min_change)) {
            continue;
        }
        flags.push(Flag::SaturationKnee {
            point_id: p.point.id,
            concurrency: p.point.concurrency,
            agg_tok_s: agg,
            gain_per_doubling: gains[knee..].iter().copied().fold(f64::MIN, f64::max),
            last_concurrency: last.point.concurrency,
            ttft_s: t0,
            last_ttft_s: t1,
        });
    }
    flags
}

#[cfg(test)]
mod tests {
    use super::super::fixtures::{curve, founding_longctx, founding_throughput, THROUGHPUT_C};
    use super::*;

    fn sweep(agg: &[f64], ttft: &[f64]) -> Vec<PointSummary> {
        let params: Vec<(u32, u32, u32)> = THROUGHPUT_C.iter().map(|&c| (c, 1000, 500)).collect();
        let values: Vec<Vec<_>> = agg
            .iter()
            .zip(ttft)
            .map(|(&a, &t)| vec![(a, 54.0, t, t + 9.0)])
            .collect();
        curve(&params, &values)
    }

    #[test]
    fn founding_throughput_knee_at_32() {
        let flags = detect(&founding_throughput(), &Thresholds::default());
        let [Flag::SaturationKnee {
            point_id,
            concurrency,
            agg_tok_s,
            gain_per_doubling,
            last_concurrency,
            ttft_s,
            last_ttft_s,
        }] = flags.as_slice()
        else {
            panic!("one knee expected: {flags:?}");
        };
        assert_eq!((*point_id, *concurrency, *last_concurrency), (5, 32, 100));
        assert_eq!((*agg_tok_s, *ttft_s, *last_ttft_s), (505.0, 9.0, 61.0));
        // Largest gain beyond 32 is 32 → 64: 506/505 - 1.
        assert!((gain_per_doubling - (506.0 / 505.0 - 1.0)).abs() < 1e-12);
        assert_eq!(
            flags[0].to_string(),
            "Aggregate throughput stops scaling at concurrency 32 (505 tok/s): beyond it, it gains at most 0.198% per doubling up to concurrency 100 while median TTFT grows from 9 s to 61 s. Higher concurrency only queues requests; serve near 32 concurrent requests, or add capacity to go higher."
        );
    }

    #[test]
    fn knee_is_first_concurrency_below_the_threshold() {
        // Gains per doubling: 16 → 32 is 5.2%, 8 → 16 is 14.3%.
        let at = |gain: f64| {
            let t = Thresholds {
                knee_gain: gain,
                ..Thresholds::default()
            };
            detect(&founding_throughput(), &t)
                .first()
                .and_then(Flag::point_id)
        };
        assert_eq!(at(0.10), Some(4)); // C = 16
        assert_eq!(at(0.20), Some(3)); // C = 8
                                       // 32 → 64 still gains 0.198%, above 0.1%; 64 → 100 falls.
        assert_eq!(at(0.001), Some(6));
    }

    #[test]
    fn no_knee_while_throughput_scales() {
        let agg: Vec<f64> = THROUGHPUT_C.iter().map(|&c| 70.0 * f64::from(c)).collect();
        let ttft = [0.3; 8];
        assert!(detect(&sweep(&agg, &ttft), &Thresholds::default()).is_empty());
        // Flat over the last step only: the knee is at 64.
        let mut agg = agg;
        agg[7] = agg[6];
        let ttft = [0.3, 0.3, 0.3, 0.3, 0.3, 0.3, 0.3, 5.0];
        let flags = detect(&sweep(&agg, &ttft), &Thresholds::default());
        assert_eq!(flags.first().and_then(Flag::point_id), Some(6));
    }

    #[test]
    fn flat_throughput_with_flat_ttft_is_not_a_knee() {
        let agg = [500.0, 505.0, 503.0, 506.0, 504.0, 505.0, 506.0, 505.0];
        assert!(detect(&sweep(&agg, &[0.3; 8]), &Thresholds::default()).is_empty());
    }

    #[test]
    fn no_concurrency_sweep_no_knee() {
        assert!(detect(&founding_longctx(1), &Thresholds::default()).is_empty());
    }
}
