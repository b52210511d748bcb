//! The saturation knee: the concurrency beyond which aggregate throughput
//! gains less than `knee_gain` per doubling of concurrency while TTFT keeps
//! growing. A finding about the server, not an error.
//!
//! Throughput alone is half the answer: TTFT usually leaves its low-load
//! plateau before throughput stops rising, because requests start to wait
//! for a batch slot. The finding also says where TTFT first exceeds
//! `ttft_plateau` × its value at the lowest concurrency, and never
//! recommends a load past that without saying what TTFT users pay there.
//! When the plan has an `[slo]`, the highest concurrency at which it holds
//! decides the load to serve at.
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
use crate::schedule::ScheduleAnalysis;
use serde::Serialize;

/// A load on a concurrency sweep, with what it gave.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct LoadAt {
    /// Concurrency.
    pub concurrency: u32,
    /// Median aggregate output, tok/s.
    pub agg_tok_s: f64,
    /// Median TTFT, seconds.
    pub ttft_s: f64,
}

/// How far along a concurrency sweep TTFT stays near its low-load value.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Plateau {
    /// The lowest concurrency swept.
    pub low: LoadAt,
    /// The highest concurrency, from the lowest on, whose TTFT stays within
    /// `factor` × the lowest one's.
    pub last: LoadAt,
    /// The next concurrency, where TTFT left the plateau; None when it never did.
    pub climb: Option<LoadAt>,
    /// The plan's `ttft_plateau`.
    pub factor: f64,
}

/// What the plan's `[slo]` says about a concurrency sweep.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct SloLoad {
    /// The highest concurrency at which the SLOs hold; None when they hold at none.
    pub holds_up_to: Option<LoadAt>,
}

fn load_at(p: &PointSummary, agg: f64) -> LoadAt {
    LoadAt {
        concurrency: p.point.concurrency,
        agg_tok_s: agg,
        ttft_s: p.ttft_s.as_ref().map_or(f64::NAN, |s| s.median),
    }
}

/// Where TTFT leaves its plateau along `pts` (ordered by concurrency).
fn plateau(pts: &[LoadAt], factor: f64) -> Option<Plateau> {
    let low = *pts.iter().find(|l| l.ttft_s.is_finite())?;
    let climb_at = pts
        .iter()
        .position(|l| l.ttft_s.is_finite() && l.ttft_s > factor * low.ttft_s);
    let last = match climb_at {
        Some(i) => pts[..i].iter().rev().find(|l| l.ttft_s.is_finite())?,
        None => pts.iter().rev().find(|l| l.ttft_s.is_finite())?,
    };
    Some(Plateau {
        low,
        last: *last,
        climb: climb_at.map(|i| pts[i]),
        factor,
    })
}

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
        let loads: Vec<LoadAt> = pts.iter().map(|&(p, a)| load_at(p, a)).collect();
        let (t0, t1) = (loads[knee].ttft_s, loads[loads.len() - 1].ttft_s);
        if !(t0.is_finite() && t1.is_finite() && t1 > t0 * (1.0 + t.min_change)) {
            continue;
        }
        let Some(plateau) = plateau(&loads, t.ttft_plateau) else {
            continue;
        };
        flags.push(Flag::SaturationKnee {
            point_id: p.point.id,
            concurrency: p.point.concurrency,
            agg_tok_s: agg,
            gain_per_doubling: gains[knee..].iter().copied().fold(f64::MIN, f64::max),
            last_concurrency: last.point.concurrency,
            ttft_s: t0,
            last_ttft_s: t1,
            plateau,
            slo: None,
            sweep: pts.iter().map(|(p, _)| p.point.id).collect(),
        });
    }
    flags
}

/// Adds to each knee what the plan's `[slo]` says about its sweep, given
/// the points at which the SLOs hold: the highest such concurrency decides
/// the load to serve at.
pub fn with_slo(flags: &mut [Flag], points: &[PointSummary], holding: &[u32]) {
    for f in flags {
        let Flag::SaturationKnee { slo, sweep, .. } = f else {
            continue;
        };
        let holds_up_to = sweep
            .iter()
            .filter(|id| holding.contains(id))
            .filter_map(|id| {
                let p = points.iter().find(|p| p.point.id == *id)?;
                Some(load_at(p, p.agg_tok_s.as_ref()?.median))
            })
            .max_by_key(|l| l.concurrency);
        *slo = Some(SloLoad { holds_up_to });
    }
}

/// The points of `s` at which the plan's SLOs hold; None without `[slo]`.
pub fn slo_holding(s: &ScheduleAnalysis) -> Option<Vec<u32>> {
    s.slo.as_ref()?;
    Some(
        s.points
            .iter()
            .filter(|p| p.slo_holds == Some(true))
            .map(|p| p.point.id)
            .collect(),
    )
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
            ..
        }] = flags.as_slice()
        else {
            panic!("one knee expected: {flags:?}");
        };
        assert_eq!((*point_id, *concurrency, *last_concurrency), (5, 32, 100));
        assert_eq!((*agg_tok_s, *ttft_s, *last_ttft_s), (505.0, 9.0, 61.0));
        // Largest gain beyond 32 is 32 → 64: 506/505 - 1.
        assert!((gain_per_doubling - (506.0 / 505.0 - 1.0)).abs() < 1e-12);
        // TTFT 0.3 s at C = 1 stays within 2× up to C = 8 (0.4 s) and is 3 s at 16.
        let Flag::SaturationKnee { plateau, .. } = &flags[0] else {
            unreachable!()
        };
        let ends = (
            plateau.last.concurrency,
            plateau.climb.map(|l| l.concurrency),
        );
        assert_eq!(ends, (8, Some(16)));
        assert_eq!(
            flags[0].to_string(),
            "Aggregate throughput stops scaling at concurrency 32 (505 tok/s): beyond it, it gains at most 0.198% per doubling up to concurrency 100 while median TTFT grows from 9 s to 61 s; higher concurrency only queues requests. TTFT leaves its low-load plateau earlier: 300 ms at concurrency 1, 3 s (10×, over the 2× limit) at concurrency 16. For fast first tokens serve near concurrency 8 (420 tok/s, TTFT 400 ms); near 32, users wait 9 s (30×) for a first token for 20.2% more throughput. An [slo] in the plan decides between them."
        );
    }

    #[test]
    fn a_knee_on_the_plateau_is_recommended_as_it_is() {
        // TTFT flat until the last step: the knee at 64 is still on the plateau.
        let agg: Vec<f64> = THROUGHPUT_C.iter().map(|&c| 70.0 * f64::from(c)).collect();
        let mut agg = agg;
        agg[7] = agg[6];
        let ttft = [0.3, 0.3, 0.3, 0.3, 0.3, 0.3, 0.5, 5.0];
        let flags = detect(&sweep(&agg, &ttft), &Thresholds::default());
        let text = flags[0].to_string();
        assert!(
            text.contains("TTFT is still within 2× its low-load value there (500 ms against 300 ms at concurrency 1): serve near 64"),
            "{text}"
        );
        // A stricter plateau moves the advice before the knee.
        let t = Thresholds {
            ttft_plateau: 1.5,
            ..Thresholds::default()
        };
        let text = detect(&sweep(&agg, &ttft), &t)[0].to_string();
        assert!(text.contains("serve near concurrency 32"), "{text}");
    }

    #[test]
    fn the_plans_slo_decides_the_load() {
        let pts = founding_throughput();
        let mut flags = detect(&pts, &Thresholds::default());
        // The SLOs hold at C = 1, 2, 4 (ids 0–2) and at no point at all.
        with_slo(&mut flags, &pts, &[0, 1, 2]);
        let text = flags[0].to_string();
        assert!(
            text.ends_with("The plan's SLOs hold up to concurrency 4 (260 tok/s, TTFT 350 ms): serve there, or add capacity to go higher."),
            "{text}"
        );
        assert!(!text.contains("serve near"), "{text}");
        with_slo(&mut flags, &pts, &[]);
        assert!(flags[0]
            .to_string()
            .contains("SLOs hold at no concurrency swept"));
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
