//! Latency distributions and a per-request timeline for each point, sized
//! for charts whatever the run's size: per (point, trial) the TTFT and E2E
//! quantile functions at [`CDF_QUANTILES`] evenly spaced levels (0, 1%, …,
//! 100%; linear interpolation, as every percentile in qexp), and per point
//! at most [`TIMELINE_MAX`] requests' send time (from the trial's first
//! measured send) against TTFT, thinned deterministically: each trial keeps
//! an equal share, evenly spaced in send order, so warm-up effects and
//! stalls stay visible at any size.
//!
//! [`point_distribution`] takes one point's measured requests. The report's
//! pass over a run (`crate::pass`) holds one (trial, point) at a time, so it
//! builds each trial's part with `trial_part` (the point's trial count,
//! known before the pass, sets each trial's timeline share) and joins them
//! with `from_parts`: no column of the whole run is ever held.

use crate::columns::{f64s, u32s};
use crate::stats::quantiles_in_place;
use polars::prelude::*;
use qexp_store::requests as rq;
use serde::Serialize;
use std::collections::BTreeMap;

/// Levels of each quantile function: 0, 0.01, …, 1.
pub const CDF_QUANTILES: usize = 101;
/// The most requests a point's timeline keeps.
pub const TIMELINE_MAX: usize = 500;

/// One measured request, as the distributions need it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RequestSample {
    /// Trial number.
    pub trial: u32,
    /// Sent, Unix seconds.
    pub sent_unix_s: f64,
    /// TTFT, seconds (NaN when none).
    pub ttft_s: f64,
    /// E2E, seconds (NaN when none).
    pub e2e_s: f64,
    /// Whether it succeeded; failed requests only mark the trial's start.
    pub ok: bool,
}

/// One trial's latency quantile functions at a point.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TrialDistribution {
    /// Trial number.
    pub trial: u32,
    /// Successful requests with a TTFT the quantiles are of.
    pub requests: usize,
    /// TTFT at levels 0, 0.01, …, 1 (seconds); empty without requests.
    pub ttft_s: Vec<f64>,
    /// E2E at the same levels (seconds); empty without requests.
    pub e2e_s: Vec<f64>,
}

/// One request on a point's timeline.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct TimelinePoint {
    /// Trial number.
    pub trial: u32,
    /// Sent, seconds after the trial's first measured send at the point.
    pub sent_s: f64,
    /// Its TTFT, seconds.
    pub ttft_s: f64,
}

/// A point's distributions: one per trial, and its thinned timeline.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PointDistribution {
    /// The point.
    pub point_id: u32,
    /// Per trial, by trial number.
    pub trials: Vec<TrialDistribution>,
    /// At most [`TIMELINE_MAX`] requests, by trial, then send time.
    pub timeline: Vec<TimelinePoint>,
    /// Successful requests with a TTFT before thinning (all trials).
    pub timeline_of: usize,
}

/// The quantile function of `values` at [`CDF_QUANTILES`] levels; empty when none is finite.
fn quantiles(values: impl Iterator<Item = f64>) -> Vec<f64> {
    let mut v: Vec<f64> = values.filter(|x| x.is_finite()).collect();
    let last = (CDF_QUANTILES - 1) as f64;
    let levels: Vec<f64> = (0..CDF_QUANTILES).map(|i| i as f64 / last).collect();
    quantiles_in_place(&mut v, &levels)
        .into_iter()
        .flatten()
        .collect()
}

/// `keep` evenly spaced items of `items` (all when there are no more).
fn thin<T: Copy>(items: &[T], keep: usize) -> Vec<T> {
    let n = items.len();
    if n <= keep {
        return items.to_vec();
    }
    (0..keep)
        .filter_map(|i| items.get(i * n / keep).copied())
        .collect()
}

/// One trial's part of a point's distributions: its quantile functions
/// and its share of the timeline.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct TrialPart {
    distribution: TrialDistribution,
    timeline: Vec<TimelinePoint>,
}

/// The timeline share of each trial at a point with `trials` trials.
pub(crate) fn share(trials: usize) -> usize {
    (TIMELINE_MAX / trials.max(1)).max(1)
}

/// One trial's part from its measured requests at a point (any order),
/// keeping at most `share` of them on the timeline.
pub(crate) fn trial_part(trial: u32, rows: &mut [RequestSample], share: usize) -> TrialPart {
    rows.sort_by(|a, b| a.sent_unix_s.total_cmp(&b.sent_unix_s));
    let start = rows
        .iter()
        .map(|r| r.sent_unix_s)
        .find(|t| t.is_finite())
        .unwrap_or(f64::NAN);
    let good: Vec<&RequestSample> = rows
        .iter()
        .filter(|r| r.ok && r.ttft_s.is_finite() && r.sent_unix_s.is_finite())
        .collect();
    let timeline = thin(&good, share)
        .into_iter()
        .map(|r| TimelinePoint {
            trial,
            sent_s: r.sent_unix_s - start,
            ttft_s: r.ttft_s,
        })
        .collect();
    TrialPart {
        distribution: TrialDistribution {
            trial,
            requests: good.len(),
            ttft_s: quantiles(good.iter().map(|r| r.ttft_s)),
            e2e_s: quantiles(good.iter().map(|r| r.e2e_s)),
        },
        timeline,
    }
}

/// A point's distributions from its trials' parts, in trial order.
pub(crate) fn from_parts(
    point_id: u32,
    parts: impl IntoIterator<Item = TrialPart>,
) -> PointDistribution {
    let (mut trials, mut timeline) = (Vec::new(), Vec::new());
    for part in parts {
        timeline.extend(part.timeline);
        trials.push(part.distribution);
    }
    PointDistribution {
        point_id,
        timeline_of: trials.iter().map(|t| t.requests).sum(),
        trials,
        timeline,
    }
}

/// The distributions of one point from its measured requests (any order).
pub fn point_distribution(point_id: u32, samples: &[RequestSample]) -> PointDistribution {
    let mut by_trial: BTreeMap<u32, Vec<RequestSample>> = BTreeMap::new();
    for s in samples {
        by_trial.entry(s.trial).or_default().push(*s);
    }
    let share = share(by_trial.len());
    from_parts(
        point_id,
        by_trial
            .into_iter()
            .map(|(trial, mut rows)| trial_part(trial, &mut rows, share)),
    )
}

/// The columns [`samples`] reads.
pub(crate) const COLUMNS: [&str; 5] = [
    rq::TRIAL,
    rq::SENT_UNIX_S,
    rq::TTFT_S,
    rq::E2E_S,
    rq::ERROR_CLASS,
];

/// The measured requests of `df` (a frame with [`COLUMNS`]), in its order,
/// into `out` (emptied first: a buffer kept from one (trial, point) to the
/// next).
pub(crate) fn samples_into(df: &DataFrame, out: &mut Vec<RequestSample>) -> PolarsResult<()> {
    let trial = u32s(df, rq::TRIAL)?;
    let (sent, ttft, e2e) = (
        f64s(df, rq::SENT_UNIX_S)?,
        f64s(df, rq::TTFT_S)?,
        f64s(df, rq::E2E_S)?,
    );
    let ok = df.column(rq::ERROR_CLASS)?.is_null();
    out.clear();
    out.extend(ok.iter().enumerate().map(|(i, ok)| RequestSample {
        trial: trial[i],
        sent_unix_s: sent[i],
        ttft_s: ttft[i],
        e2e_s: e2e[i],
        ok: ok.unwrap_or(false),
    }));
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(trial: u32, sent: f64, ttft: f64) -> RequestSample {
        RequestSample {
            trial,
            sent_unix_s: 1000.0 + sent,
            ttft_s: ttft,
            e2e_s: ttft + 1.0,
            ok: true,
        }
    }

    #[test]
    fn quantiles_run_from_min_to_max_by_linear_interpolation() {
        // TTFT 1..=5 in trial 1: level 0.5 is 3, level 0.25 is 2, level 0.01 is 1.04.
        let rows: Vec<RequestSample> = (1..=5)
            .map(|i| sample(1, f64::from(i), f64::from(i)))
            .collect();
        let d = point_distribution(7, &rows);
        let t = &d.trials[0];
        assert_eq!((d.point_id, t.trial, t.requests), (7, 1, 5));
        assert_eq!(t.ttft_s.len(), CDF_QUANTILES);
        assert_eq!(
            (t.ttft_s[0], t.ttft_s[25], t.ttft_s[50], t.ttft_s[100]),
            (1.0, 2.0, 3.0, 5.0)
        );
        assert!((t.ttft_s[1] - 1.04).abs() < 1e-12);
        assert_eq!(t.e2e_s[50], 4.0);
        assert!(t.ttft_s.windows(2).all(|w| w[0] <= w[1]));
    }

    #[test]
    fn timeline_counts_from_the_trial_start_and_leaves_failures_out() {
        let mut rows = vec![
            sample(2, 5.0, 0.3),
            sample(1, 2.0, 0.1),
            sample(2, 4.0, 0.2),
        ];
        // A failed request is the first send of trial 1: the start, but no point.
        rows.push(RequestSample {
            ok: false,
            ttft_s: f64::NAN,
            ..sample(1, 1.5, 0.0)
        });
        let d = point_distribution(0, &rows);
        let got: Vec<(u32, f64, f64)> = d
            .timeline
            .iter()
            .map(|p| (p.trial, p.sent_s, p.ttft_s))
            .collect();
        assert_eq!(got, vec![(1, 0.5, 0.1), (2, 0.0, 0.2), (2, 1.0, 0.3)]);
        assert_eq!(d.timeline_of, 3);
        assert_eq!(d.trials[0].requests, 1);
    }

    #[test]
    fn big_points_are_thinned_evenly_and_the_same_way_every_time() {
        // 3 trials × 2000 requests: 166 per trial, every 12th or so, first request kept.
        let rows: Vec<RequestSample> = (1..=3)
            .flat_map(|t| (0..2000).map(move |i| sample(t, f64::from(i) * 0.01, 0.1)))
            .rev()
            .collect();
        let d = point_distribution(0, &rows);
        assert_eq!(d.timeline.len(), 3 * (TIMELINE_MAX / 3));
        assert!(d.timeline.len() <= TIMELINE_MAX);
        assert_eq!(d.timeline_of, 6000);
        let first: Vec<&TimelinePoint> = d.timeline.iter().filter(|p| p.trial == 1).collect();
        assert_eq!(first[0].sent_s, 0.0);
        // Evenly spread over the trial's 20 s of sends.
        assert!(first.last().map_or(0.0, |p| p.sent_s) > 19.8);
        let mut shuffled = rows.clone();
        shuffled.rotate_left(1234);
        assert_eq!(point_distribution(0, &shuffled), d);
    }

    #[test]
    fn a_trial_without_successes_has_empty_quantiles() {
        let rows = vec![RequestSample {
            ok: false,
            ..sample(1, 0.0, f64::NAN)
        }];
        let d = point_distribution(0, &rows);
        assert!(d.trials[0].ttft_s.is_empty() && d.timeline.is_empty());
        assert_eq!(d.trials[0].requests, 0);
    }
}
