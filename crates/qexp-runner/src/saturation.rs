//! `[run] stop_past_saturation`: a concurrency or rate sweep stops climbing
//! once the server is past saturation, so a sweep to 512 users does not
//! spend an hour measuring a queue.
//!
//! The test, over the last three points measured in a series (the points
//! that differ only in load), by increasing load `x` with output tok/s `y`
//! and median TTFT `t`: throughput no longer rises, `y₃ < (1 + 5%)·y₁`, and
//! TTFT grows with the load on both steps, `tⱼ/tⱼ₋₁ ≥ 0.8·xⱼ/xⱼ₋₁`. That is
//! Little's law past the limit: at a fixed throughput, every added user
//! (or request per second) only adds waiting, so the time to the first
//! token grows in proportion to the load and without bound. The higher
//! loads of that series are then not measured in that trial, and the
//! manifest says which and why.

use qexp_plan::Point;
use qexp_store::SaturationStop;

/// Throughput gain over the last two steps below which it no longer rises.
pub const SATURATION_GAIN: f64 = 0.05;

/// TTFT must grow at least this share as fast as the load on each step.
pub const SATURATION_TTFT_SHARE: f64 = 0.8;

/// What one measured point gives the test.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PointFigures {
    /// Output tok/s of the (trial, point).
    pub tok_s: f64,
    /// Median TTFT of its successful requests, seconds.
    pub ttft_s: f64,
}

/// The load of a point: its concurrency, or its planned rate (open loop).
fn load(p: &Point) -> f64 {
    p.rate().unwrap_or(f64::from(p.concurrency))
}

/// The points of `p`'s series: same lengths, images and deployment, any load.
fn same_series(a: &Point, b: &Point) -> bool {
    a.same_workload(b) && a.open_loop.is_some() == b.open_loop.is_some()
}

/// One trial's measured figures, and the stops it has made.
#[derive(Debug, Default)]
pub(crate) struct Saturation {
    measured: Vec<(Point, PointFigures)>,
}

impl Saturation {
    /// Records `point`'s figures; when its series is now past saturation,
    /// the stop: its higher-load points in `points` not yet measured.
    pub(crate) fn after(
        &mut self,
        trial: u32,
        point: &Point,
        figures: PointFigures,
        points: &[Point],
    ) -> Option<SaturationStop> {
        self.measured.push((point.clone(), figures));
        let mut series: Vec<&(Point, PointFigures)> = self
            .measured
            .iter()
            .filter(|(p, _)| same_series(p, point))
            .collect();
        series.sort_by(|a, b| load(&a.0).total_cmp(&load(&b.0)));
        let [a, b, c] = series.get(series.len().checked_sub(3)?..)? else {
            return None;
        };
        if load(&c.0) != load(point) {
            return None;
        }
        let reason = past_saturation([a, b, c].map(|(p, f)| (load(p), *f)))?;
        let skipped: Vec<u32> = points
            .iter()
            .filter(|p| same_series(p, point) && load(p) > load(point))
            .filter(|p| !self.measured.iter().any(|(m, _)| m.id == p.id))
            .map(|p| p.id)
            .collect();
        (!skipped.is_empty()).then_some(SaturationStop {
            trial,
            point_id: point.id,
            skipped,
            reason,
        })
    }
}

/// The test on three points by increasing load: the sentence that says why
/// the server is past saturation, or None.
pub fn past_saturation(points: [(f64, PointFigures); 3]) -> Option<String> {
    let [(x1, f1), (x2, f2), (x3, f3)] = points;
    let finite = [f1, f2, f3]
        .iter()
        .all(|f| f.tok_s.is_finite() && f.ttft_s.is_finite() && f.ttft_s > 0.0 && f.tok_s > 0.0);
    if !(finite && x1 < x2 && x2 < x3) {
        return None;
    }
    let flat = f3.tok_s < (1.0 + SATURATION_GAIN) * f1.tok_s;
    let grows = |(xa, fa): (f64, PointFigures), (xb, fb): (f64, PointFigures)| {
        fb.ttft_s / fa.ttft_s >= SATURATION_TTFT_SHARE * xb / xa
    };
    (flat && grows((x1, f1), (x2, f2)) && grows((x2, f2), (x3, f3))).then(|| {
        format!(
            "past saturation at load {x3}: output {:.1} tok/s against {:.1} at load {x1} (under {:.0}% more) while the median TTFT grew {:.2} s → {:.2} s → {:.2} s, at least {:.0}% as fast as the load",
            f3.tok_s,
            f1.tok_s,
            SATURATION_GAIN * 100.0,
            f1.ttft_s,
            f2.ttft_s,
            f3.ttft_s,
            SATURATION_TTFT_SHARE * 100.0
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f(tok_s: f64, ttft_s: f64) -> PointFigures {
        PointFigures { tok_s, ttft_s }
    }

    #[test]
    fn a_flat_throughput_with_a_queue_is_past_saturation() {
        let r = past_saturation([
            (8.0, f(500.0, 0.4)),
            (16.0, f(505.0, 0.9)),
            (32.0, f(506.0, 1.9)),
        ]);
        assert!(r.is_some_and(|r| r.contains("load 32")));
    }

    #[test]
    fn rising_throughput_or_a_ttft_that_holds_is_not() {
        // Still scaling.
        assert_eq!(
            past_saturation([
                (8.0, f(400.0, 0.4)),
                (16.0, f(480.0, 0.9)),
                (32.0, f(560.0, 1.9))
            ]),
            None
        );
        // Flat, but TTFT holds: the workload, not a queue (e.g. a client limit).
        assert_eq!(
            past_saturation([
                (8.0, f(500.0, 0.4)),
                (16.0, f(505.0, 0.45)),
                (32.0, f(506.0, 0.5))
            ]),
            None
        );
        // Loads out of order or missing numbers.
        assert_eq!(
            past_saturation([
                (16.0, f(500.0, 0.4)),
                (8.0, f(505.0, 0.9)),
                (32.0, f(506.0, 1.9))
            ]),
            None
        );
        assert_eq!(
            past_saturation([
                (8.0, f(f64::NAN, 0.4)),
                (16.0, f(505.0, 0.9)),
                (32.0, f(506.0, 1.9))
            ]),
            None
        );
    }
}
