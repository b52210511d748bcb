//! Latency distributions and a per-request timeline for each point, sized
//! for charts whatever the run's size: per (point, trial) the TTFT and E2E
//! quantile functions at [`CDF_QUANTILES`] evenly spaced levels (0, 1%, …,
//! 100%; linear interpolation, as every percentile in qexp), and per point
//! at most [`TIMELINE_MAX`] requests' send time (from the trial's first
//! measured send) against TTFT, thinned deterministically: each trial keeps
//! at most an equal share, its span of sends cut into that many equal
//! slots and the first request sent in each kept, so warm-up effects stay
//! visible at any size and a stall shows as a gap. What is kept depends on
//! the requests, not on the order they are read in.
//!
//! [`point_distribution`] takes one point's measured requests. The report's
//! reads of a run (`crate::pass`) never hold more of a (trial, point) than
//! a bounded number of values: they find the quantiles by selection
//! (`crate::stats::select`), learn a trial's span of sends on the first read
//! and fill its slots (`Thinning`) at its end, or on a second read when the
//! trial had too many requests to hold (the point's trial count, known
//! before the reads, sets each trial's share), then join the trials' parts
//! with `from_parts`.

use crate::stats::quantiles_in_place;
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

impl RequestSample {
    /// Whether it is on the timeline and in the quantiles: a success with
    /// a TTFT and a send time.
    pub(crate) fn good(&self) -> bool {
        self.ok && self.ttft_s.is_finite() && self.sent_unix_s.is_finite()
    }
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

/// One trial's part of a point's distributions: its quantile functions
/// and its share of the timeline.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct TrialPart {
    pub(crate) distribution: TrialDistribution,
    pub(crate) timeline: Vec<TimelinePoint>,
}

/// The timeline share of each trial at a point with `trials` trials.
pub(crate) fn share(trials: usize) -> usize {
    (TIMELINE_MAX / trials.max(1)).max(1)
}

/// One trial's part from its measured requests at a point (any order),
/// keeping at most `share` of them on the timeline.
pub(crate) fn trial_part(trial: u32, rows: &[RequestSample], share: usize) -> TrialPart {
    let start = rows
        .iter()
        .map(|r| r.sent_unix_s)
        .filter(|t| t.is_finite())
        .fold(f64::NAN, f64::min);
    let good: Vec<&RequestSample> = rows.iter().filter(|r| r.good()).collect();
    let mut span = Span::default();
    good.iter().for_each(|r| span.add(r.sent_unix_s));
    let mut thinning = Thinning::new(share, good.len(), span);
    good.iter()
        .for_each(|r| thinning.offer(r.sent_unix_s, r.ttft_s));
    TrialPart {
        distribution: TrialDistribution {
            trial,
            requests: good.len(),
            ttft_s: quantiles(good.iter().map(|r| r.ttft_s)),
            e2e_s: quantiles(good.iter().map(|r| r.e2e_s)),
        },
        timeline: timeline(trial, start, thinning.kept()),
    }
}

/// The first and last send of a trial's requests on the timeline (Unix seconds).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Span {
    lo: f64,
    hi: f64,
}

impl Default for Span {
    fn default() -> Span {
        Span {
            lo: f64::INFINITY,
            hi: f64::NEG_INFINITY,
        }
    }
}

impl Span {
    /// One more send.
    pub(crate) fn add(&mut self, sent: f64) {
        self.lo = self.lo.min(sent);
        self.hi = self.hi.max(sent);
    }
}

/// Picks a trial's timeline from its `good` requests offered in any order:
/// all of them when there are at most `share`; otherwise its span of sends
/// cut into `share` equal slots, the first request sent in each (ties by
/// TTFT), so the result does not depend on the order.
pub(crate) struct Thinning {
    span: Span,
    /// All of them (at most `share`), or one per slot.
    all: bool,
    kept: Vec<Option<(f64, f64)>>,
}

impl Thinning {
    pub(crate) fn new(share: usize, good: usize, span: Span) -> Thinning {
        let all = good <= share;
        Thinning {
            span,
            all,
            kept: match all {
                true => Vec::with_capacity(good),
                false => vec![None; share.max(1)],
            },
        }
    }

    /// A request with a TTFT and a send time: (sent, TTFT).
    pub(crate) fn offer(&mut self, sent: f64, ttft: f64) {
        if self.all {
            self.kept.push(Some((sent, ttft)));
            return;
        }
        let slots = self.kept.len();
        let width = self.span.hi - self.span.lo;
        let at = match width > 0.0 {
            true => ((sent - self.span.lo) / width * slots as f64) as usize,
            false => 0,
        };
        let slot = &mut self.kept[at.min(slots - 1)];
        let earlier = |(s, t): (f64, f64)| sent.total_cmp(&s).then(ttft.total_cmp(&t)).is_lt();
        if slot.is_none_or(earlier) {
            *slot = Some((sent, ttft));
        }
    }

    /// The kept requests, (sent, TTFT).
    pub(crate) fn kept(self) -> Vec<(f64, f64)> {
        self.kept.into_iter().flatten().collect()
    }
}

/// A trial's timeline from its kept requests ((sent, TTFT), Unix seconds),
/// timed from `start` (its first send), in send order.
pub(crate) fn timeline(trial: u32, start: f64, mut kept: Vec<(f64, f64)>) -> Vec<TimelinePoint> {
    kept.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.total_cmp(&b.1)));
    kept.into_iter()
        .map(|(sent, ttft_s)| TimelinePoint {
            trial,
            sent_s: sent - start,
            ttft_s,
        })
        .collect()
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
            .map(|(trial, rows)| trial_part(trial, &rows, share)),
    )
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
