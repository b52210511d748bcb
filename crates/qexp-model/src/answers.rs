//! How long a point's answers are, where the model stopped them before the
//! plan's length: their spread at eight quantiles ([`AnswerSpread`], from
//! a run), its shape around the median ([`AnswerShape`], kept in the model
//! file), and which length each request of a replay gets, in each of the
//! orders the replay pools (docs/model.md, "Measured against SmolLM2").

use crate::des::quantile;

/// How many quantiles of a point's answer lengths an [`AnswerSpread`] holds.
pub const ANSWER_QUANTILES: usize = 8;

/// A point's answer lengths, in tokens, at the probabilities
/// [`AnswerSpread::LEVELS`]: a model answering real prompts stops some
/// answers after a few tokens and runs others to the cap, and its users
/// then come back out of step, so prompts arrive one at a time into a
/// running batch instead of together.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct AnswerSpread(pub [f64; ANSWER_QUANTILES]);

impl AnswerSpread {
    /// The probabilities of its quantiles: the middles of eight equal bins.
    pub const LEVELS: [f64; ANSWER_QUANTILES] = {
        let mut l = [0.0; ANSWER_QUANTILES];
        let mut k = 0;
        while k < ANSWER_QUANTILES {
            l[k] = (2 * k + 1) as f64 / (2 * ANSWER_QUANTILES) as f64;
            k += 1;
        }
        l
    };

    /// The spread of answers measured at [`AnswerSpread::LEVELS`], when
    /// they do spread: None when every quantile is within a token of the
    /// others (answers of the plan's length) or one is not a number.
    pub fn measured(quantiles: [f64; ANSWER_QUANTILES]) -> Option<AnswerSpread> {
        let (lo, hi) = quantiles
            .iter()
            .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), &q| {
                (lo.min(q), hi.max(q))
            });
        (lo.is_finite() && hi.is_finite() && hi - lo >= 1.0).then_some(AnswerSpread(quantiles))
    }

    /// The length of the `i`-th of `n` requests in the `order`-th of
    /// [`ANSWER_ORDERS`] orders: the length at the middle of the request's
    /// own one of `n` equal bins, the bins visited in a stride (coprime
    /// with `n`, from another share of `n` in each order) that starts at
    /// another bin in each order, so that consecutive requests, which a
    /// closed loop hands to different users, are not sorted by length.
    pub fn length(&self, order: usize, i: usize, n: usize) -> f64 {
        let n = n.max(1);
        let k = order % ANSWER_ORDERS;
        let from = k * n / ANSWER_ORDERS;
        let bin = ((i % n) * stride(n, STRIDES[k]) + from) % n;
        self.at((bin as f64 + 0.5) / n as f64)
    }

    /// The length, at least one token, at probability `u`: linear between
    /// the quantiles, flat beyond the outer ones.
    pub fn at(&self, u: f64) -> f64 {
        let l = &Self::LEVELS;
        let q = &self.0;
        let v = if u <= l[0] {
            q[0]
        } else if u >= l[ANSWER_QUANTILES - 1] {
            q[ANSWER_QUANTILES - 1]
        } else {
            let k = l.iter().rposition(|&x| x <= u).unwrap_or(0);
            q[k] + (q[k + 1] - q[k]) * (u - l[k]) / (l[k + 1] - l[k])
        };
        v.round().max(1.0)
    }
}

/// How a deployment's answers spread, as shares of the median answer at
/// [`AnswerSpread::LEVELS`]: what the fitted runs showed, kept in the model
/// file so that a prediction at `out` tokens (the median answer's length,
/// as the fit reads every point) replays answers spread as they were.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct AnswerShape(pub [f64; ANSWER_QUANTILES]);

impl AnswerShape {
    /// The shape of the points' answers, each point given as its median
    /// answer and its spread: at each quantile, the median share across
    /// the points. None unless at least half the points spread (answers
    /// forced to length, or a simulator's, have none).
    pub fn of(points: &[(f64, Option<AnswerSpread>)]) -> Option<AnswerShape> {
        let spread: Vec<(f64, AnswerSpread)> = points
            .iter()
            .filter_map(|&(median, s)| Some((median, s?)))
            .filter(|(median, _)| median.is_finite() && *median > 0.0)
            .collect();
        if spread.is_empty() || 2 * spread.len() < points.len() {
            return None;
        }
        Some(AnswerShape(std::array::from_fn(|k| {
            let shares: Vec<f64> = spread.iter().map(|(m, s)| s.0[k] / m).collect();
            quantile(&shares, 0.5)
        })))
    }

    /// The spread of answers whose median is `median` tokens.
    pub fn at(&self, median: f64) -> AnswerSpread {
        AnswerSpread(self.0.map(|share| share * median))
    }
}

/// How many orders of its answers' lengths a point whose answers spread is
/// replayed in, pooled: which user's answer ends when decides which
/// prompts meet in a step, and one order would make a prediction of it.
pub const ANSWER_ORDERS: usize = 4;

/// Where each order's stride starts, as a share of the requests.
const STRIDES: [f64; ANSWER_ORDERS] = [0.618, 0.382, 0.854, 0.236];

/// A stride through `n` bins that visits each once: the first number from
/// `share` of `n` up that shares no factor with `n`.
fn stride(n: usize, share: f64) -> usize {
    let gcd = |mut a: usize, mut b: usize| {
        while b != 0 {
            (a, b) = (b, a % b);
        }
        a
    };
    let start = ((n as f64) * share).round() as usize;
    (start.max(1)..).find(|&s| gcd(s, n) == 1).unwrap_or(1)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    pub(crate) fn spread() -> AnswerSpread {
        AnswerSpread([3.0, 8.0, 15.0, 30.0, 48.0, 48.0, 48.0, 48.0])
    }

    #[test]
    fn a_spread_is_kept_only_where_answers_differ() {
        assert_eq!(AnswerSpread::measured([48.0; ANSWER_QUANTILES]), None);
        assert_eq!(AnswerSpread::measured([47.5; ANSWER_QUANTILES]), None);
        let mut q = [48.0; ANSWER_QUANTILES];
        q[0] = f64::NAN;
        assert_eq!(AnswerSpread::measured(q), None);
        assert_eq!(AnswerSpread::measured(spread().0), Some(spread()));
        assert_eq!(AnswerSpread::LEVELS[0], 1.0 / 16.0);
        assert_eq!(AnswerSpread::LEVELS[7], 15.0 / 16.0);
    }

    #[test]
    fn the_shape_of_answers_is_kept_where_most_points_spread() {
        let twice = AnswerSpread(spread().0.map(|x| 2.0 * x));
        let shape = AnswerShape::of(&[(30.0, Some(spread())), (60.0, Some(twice)), (48.0, None)])
            .expect("two of three points spread");
        for (k, share) in shape.0.iter().enumerate() {
            assert!((share - spread().0[k] / 30.0).abs() < 1e-12, "{k}: {share}");
        }
        let back = shape.at(30.0).0;
        assert!(
            back.iter()
                .zip(spread().0)
                .all(|(a, b)| (a - b).abs() < 1e-9),
            "{back:?}"
        );
        assert_eq!(
            AnswerShape::of(&[(30.0, Some(spread())), (48.0, None), (48.0, None)]),
            None
        );
        assert_eq!(AnswerShape::of(&[]), None);
    }
}
