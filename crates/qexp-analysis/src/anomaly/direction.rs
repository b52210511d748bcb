//! A curve that goes the wrong way along a swept axis: TTFT or E2E falling as
//! input grows, E2E falling as output grows, decode rate rising with context,
//! aggregate throughput falling as concurrency grows.
//!
//! Points that share every other parameter are ordered along the axis and
//! neighbours compared by their medians. A change smaller than `min_change` is
//! never flagged. With at least two trials on both sides the change must be
//! beyond the noise of both points: their intervals (the 95% order-statistic
//! CI of the median when both have one, else min–max) do not overlap, or a
//! two-sided Mann–Whitney U test gives p < alpha where the trial counts can
//! reach it. With one trial on a side the flag is *unverified* (unless that
//! value lies inside the other side's range, i.e. within its noise) and says
//! how many trials per point would settle it.

use super::tokens::cache_share;
use super::{Flag, Metric, Thresholds};
use crate::metric::Direction;
use crate::metrics::{Axis, PointSummary};
use crate::server::ServerMetric;
use crate::stats::{mann_whitney_u, min_attainable_p, trials_needed, Summary};

/// Which way a metric may not move as an axis grows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Expectation {
    /// True when a fall is the wrong way; false when a rise is.
    pub fall_is_wrong: bool,
    should: &'static str,
}

impl Expectation {
    /// What the metric should do, e.g. `grow with input length`.
    pub fn should(self) -> &'static str {
        self.should
    }
}

/// The expected direction of `metric` along `axis`; None when the pair is not checked.
pub fn expectation(axis: Axis, metric: Metric) -> Option<Expectation> {
    let (fall_is_wrong, should) = match (axis, metric) {
        (Axis::InputTokens, Metric::TtftS | Metric::E2eS) => (true, "grow with input length"),
        (Axis::InputTokens, Metric::DecodeTokS) => (false, "not rise as context grows"),
        (Axis::OutputTokens, Metric::E2eS) => (true, "grow with output length"),
        (Axis::ImagePixels, Metric::TtftS) => (true, "grow with image pixels"),
        (Axis::Concurrency, Metric::AggTokS) => (true, "not fall as concurrency grows"),
        _ => return None,
    };
    Some(Expectation {
        fall_is_wrong,
        should,
    })
}

/// Wrong-direction flags, one per offending neighbour pair and metric.
///
/// E2E is not flagged where TTFT is already flagged for the same pair: E2E
/// contains TTFT, so it is the same anomaly.
pub fn detect(points: &[PointSummary], t: &Thresholds) -> Vec<Flag> {
    let plan: Vec<qexp_plan::Point> = points.iter().map(|p| p.point.clone()).collect();
    // Cache data: cached tokens in the responses, or the server's own
    // prefix-cache counters (present even when they count no hit).
    let has_cache = points.iter().any(|p| {
        p.server(ServerMetric::PrefixHitRate).is_some()
            || p.trials.iter().any(|t| t.cached_tokens > 0)
    });
    let mut flags = Vec::new();
    for axis in Axis::swept(&plan) {
        for group in groups(points, axis) {
            let mut ttft_pairs = Vec::new();
            for metric in [
                Metric::TtftS,
                Metric::E2eS,
                Metric::DecodeTokS,
                Metric::AggTokS,
            ] {
                let Some(exp) = expectation(axis, metric) else {
                    continue;
                };
                let with: Vec<&PointSummary> = group
                    .iter()
                    .copied()
                    .filter(|p| metric.summary(p).is_some())
                    .collect();
                for w in with.windows(2) {
                    let pair = (w[0].point.id, w[1].point.id);
                    if metric == Metric::E2eS && ttft_pairs.contains(&pair) {
                        continue;
                    }
                    if let Some(f) = judge(w[0], w[1], axis, metric, exp, t, has_cache) {
                        if metric == Metric::TtftS {
                            ttft_pairs.push(pair);
                        }
                        flags.push(f);
                    }
                }
            }
        }
    }
    flags
}

/// Points sharing every parameter but `axis` (the deployment included),
/// each group ordered along it; groups in plan order.
pub(super) fn groups(points: &[PointSummary], axis: Axis) -> Vec<Vec<&PointSummary>> {
    let key = |p: &PointSummary| {
        let q = &p.point;
        let other = |a: Axis, v: u32| if a == axis { 0 } else { v };
        (
            [
                other(Axis::Concurrency, q.concurrency),
                other(Axis::InputTokens, q.input_tokens),
                other(Axis::OutputTokens, q.output_tokens),
                other(Axis::ImagePixels, Axis::ImagePixels.value(q)),
            ],
            q.deployment.clone(),
        )
    };
    type Key = ([u32; 4], Option<String>);
    let mut out: Vec<(Key, Vec<&PointSummary>)> = Vec::new();
    for p in points {
        match out.iter_mut().find(|(k, _)| *k == key(p)) {
            Some((_, g)) => g.push(p),
            None => out.push((key(p), vec![p])),
        }
    }
    out.into_iter()
        .map(|(_, mut g)| {
            g.sort_by_key(|p| axis.value(&p.point));
            g.dedup_by_key(|p| axis.value(&p.point));
            g
        })
        .collect()
}

fn judge(
    a: &PointSummary,
    b: &PointSummary,
    axis: Axis,
    metric: Metric,
    exp: Expectation,
    t: &Thresholds,
    has_cache: bool,
) -> Option<Flag> {
    let (sa, sb) = (metric.summary(a)?, metric.summary(b)?);
    let (va, vb) = (sa.median, sb.median);
    let wrong = if exp.fall_is_wrong { vb < va } else { vb > va };
    if !wrong || va == 0.0 || ((vb - va) / va).abs() <= t.min_change {
        return None;
    }
    let (verified, p_value) = if sa.n >= 2 && sb.n >= 2 {
        let (p, separated) = beyond_noise(a, b, sa, sb, metric, t.alpha);
        if !separated {
            return None;
        }
        (true, p)
    } else {
        // One trial on a side: a value inside the other side's range is within its noise.
        let inside = |s: &Summary, v: f64| s.n >= 2 && s.min <= v && v <= s.max;
        if inside(sa, vb) || inside(sb, va) {
            return None;
        }
        (false, None)
    };
    Some(Flag::WrongDirection {
        point_id: b.point.id,
        prev_point_id: a.point.id,
        axis,
        axis_value: axis.value(&b.point),
        prev_axis_value: axis.value(&a.point),
        metric,
        value: vb,
        prev_value: va,
        verified,
        p_value,
        trials_needed: (!verified).then(|| trials_needed(t.alpha)),
        cache_explains: cache_explains(a, b, metric, t, has_cache),
        gpu: None,
    })
}

/// (Mann–Whitney p where attainable, whether the two points are separated beyond noise).
fn beyond_noise(
    a: &PointSummary,
    b: &PointSummary,
    sa: &Summary,
    sb: &Summary,
    metric: Metric,
    alpha: f64,
) -> (Option<f64>, bool) {
    let ((la, ha), (lb, hb)) = match (sa.ci95, sb.ci95) {
        (Some(x), Some(y)) => (x, y),
        _ => ((sa.min, sa.max), (sb.min, sb.max)),
    };
    let disjoint = hb < la || ha < lb;
    let values =
        |p: &PointSummary| -> Vec<f64> { p.trials.iter().map(|t| metric.of_trial(t)).collect() };
    let p = (min_attainable_p(sa.n, sb.n) <= alpha)
        .then(|| mann_whitney_u(&values(a), &values(b)))
        .flatten()
        .map(|r| r.p_value);
    (p, disjoint || p.is_some_and(|p| p < alpha))
}

/// Whether the better-looking point had materially less prompt left to prefill after cache hits.
///
/// The share of the prompt served from cache comes from the responses'
/// cached tokens, else from the server's prefix-cache counters (hits /
/// queries). None when the run has neither (the server may not report
/// them) or for decode rate, which prefix caching does not change.
fn cache_explains(
    a: &PointSummary,
    b: &PointSummary,
    metric: Metric,
    t: &Thresholds,
    has_cache: bool,
) -> Option<bool> {
    if !has_cache || metric == Metric::DecodeTokS {
        return None;
    }
    let share = |p: &PointSummary| {
        let from_responses = p.trials.iter().any(|t| t.cached_tokens > 0);
        let from_counters = p.server(ServerMetric::PrefixHitRate).map(|s| s.median);
        match (from_responses, from_counters) {
            (false, Some(rate)) => rate.clamp(0.0, 1.0),
            _ => cache_share(p).unwrap_or(0.0),
        }
    };
    let uncached = |p: &PointSummary| f64::from(p.point.input_tokens) * (1.0 - share(p));
    // Latency falling: the later point looks better; throughput falling: the earlier one.
    let (good, other) = match metric.direction() {
        Direction::HigherIsBetter => (a, b),
        Direction::LowerIsBetter => (b, a),
    };
    Some(uncached(good) < uncached(other) * (1.0 - t.min_change))
}

#[cfg(test)]
mod tests {
    use super::super::detect_points;
    use super::super::fixtures::{
        curve, founding_longctx, founding_longctx_noisy, founding_throughput, resummarise,
    };
    use super::*;
    use qexp_types::ServerCounter;

    /// Two points along input length (C=1, 200 out) with per-trial TTFTs; E2E = TTFT + 3 s.
    fn pair(a: &[f64], b: &[f64]) -> Vec<PointSummary> {
        let v = |ts: &[f64]| ts.iter().map(|&t| (60.0, 66.0, t, t + 3.0)).collect();
        curve(&[(1, 100_000, 200), (1, 120_000, 200)], &[v(a), v(b)])
    }

    fn one(flags: &[Flag]) -> &Flag {
        assert_eq!(flags.len(), 1, "{flags:?}");
        &flags[0]
    }

    #[test]
    fn founding_longctx_single_trial_flags_120k_ttft_unverified() {
        let flags = detect_points(&founding_longctx(1), &Thresholds::default());
        let f = one(&flags);
        assert_eq!(
            *f,
            Flag::WrongDirection {
                point_id: 5,
                prev_point_id: 4,
                axis: Axis::InputTokens,
                axis_value: 120_000,
                prev_axis_value: 100_000,
                metric: Metric::TtftS,
                value: 9.8,
                prev_value: 15.1,
                verified: false,
                p_value: None,
                trials_needed: Some(4),
                cache_explains: None,
                gpu: None,
            }
        );
        assert_eq!(
            f.to_string(),
            "TTFT fell from 15.1 s at 100K input tokens to 9.8 s at 120K input tokens (-35.1%), \
             but it should grow with input length. With a single trial this cannot be told from \
             noise: run with --trials 4 to settle it. The run has no cached-token data, so \
             prefix-cache reuse is not ruled out: check the server's /metrics prefix-cache \
             counters, or enable its cache report (SGLang --enable-cache-report, vLLM \
             --enable-prompt-tokens-details)."
        );
    }

    #[test]
    fn founding_longctx_noisy_trials_overlapping_give_no_direction_flag() {
        let flags = detect_points(&founding_longctx_noisy(), &Thresholds::default());
        assert!(detect(&founding_longctx_noisy(), &Thresholds::default()).is_empty());
        // What remains is the honest noise flag on the two overlapping points.
        let got: Vec<(Option<u32>, &str)> =
            flags.iter().map(|f| (f.point_id(), f.title())).collect();
        assert_eq!(
            got,
            vec![(Some(4), "Noisy point"), (Some(5), "Noisy point")]
        );
    }

    #[test]
    fn founding_throughput_plateau_within_noise_is_not_wrong() {
        // 506 → 505 tok/s at C = 64 → 100 with overlapping ±1% trials.
        assert!(detect(&founding_throughput(), &Thresholds::default()).is_empty());
    }

    #[test]
    fn separated_drop_is_verified_with_rank_test() {
        let pts = pair(&[15.0, 15.1, 15.2, 14.9, 15.3], &[9.8, 9.7, 9.9, 10.0, 9.6]);
        let flags = detect(&pts, &Thresholds::default());
        let Flag::WrongDirection {
            verified,
            p_value,
            trials_needed,
            ..
        } = one(&flags)
        else {
            panic!("{flags:?}");
        };
        assert!(*verified);
        assert_eq!(*trials_needed, None);
        // Exact two-sided p for complete separation of 5 vs 5: 2 / C(10, 5).
        assert!(
            (p_value.unwrap_or(1.0) - 2.0 / 252.0).abs() < 1e-12,
            "{p_value:?}"
        );
        let text = flags[0].to_string();
        assert!(
            text.contains("beyond the noise of both points (Mann–Whitney p = 0.00794)"),
            "{text}"
        );
    }

    #[test]
    fn disjoint_ranges_verify_when_the_test_cannot_reach_alpha() {
        // Three trials a side: the smallest attainable p is 0.1, so the ranges decide.
        let flags = detect(
            &pair(&[15.0, 15.1, 15.2], &[9.7, 9.8, 9.9]),
            &Thresholds::default(),
        );
        let Flag::WrongDirection {
            verified, p_value, ..
        } = one(&flags)
        else {
            panic!("{flags:?}");
        };
        assert_eq!((*verified, *p_value), (true, None));
    }

    #[test]
    fn rank_test_verifies_when_ranges_touch() {
        // One trial of 120K lies inside 100K's range, but U = 1: p = 2 * 2/252.
        let pts = pair(
            &[15.0, 15.1, 15.2, 15.3, 15.4],
            &[9.7, 9.8, 9.9, 10.0, 15.05],
        );
        let flags = detect(&pts, &Thresholds::default());
        let Flag::WrongDirection {
            verified, p_value, ..
        } = one(&flags)
        else {
            panic!("{flags:?}");
        };
        assert!(*verified);
        assert!(
            (p_value.unwrap_or(1.0) - 4.0 / 252.0).abs() < 1e-12,
            "{p_value:?}"
        );
    }

    #[test]
    fn dips_within_noise_or_margin_are_not_flagged() {
        let t = Thresholds::default();
        // Median 15.1 → 14.5 (-4%), but the trials overlap.
        assert!(detect(&pair(&[14.0, 15.1, 16.0], &[13.5, 14.5, 16.5]), &t).is_empty());
        // Single trials 1.3% apart: below min_change.
        assert!(detect(&pair(&[15.1], &[14.9]), &t).is_empty());
        // A single value inside the other point's range is within its noise.
        assert!(detect(&pair(&[13.0, 14.0, 15.0, 16.0, 17.0], &[14.0]), &t).is_empty());
        // Noisy (CV ~ 20%) but monotonic.
        assert!(detect(&pair(&[10.0, 15.0, 12.0], &[12.5, 19.0, 14.0]), &t).is_empty());
    }

    #[test]
    fn decode_rising_with_context_is_flagged() {
        let v = |d: f64, t: f64| vec![(d, d, t, t + 199.0 / d)];
        let pts = curve(
            &[(1, 30_000, 200), (1, 60_000, 200)],
            &[v(71.0, 5.5), v(78.0, 9.6)],
        );
        let flags = detect(&pts, &Thresholds::default());
        let Flag::WrongDirection {
            metric,
            verified,
            cache_explains,
            ..
        } = one(&flags)
        else {
            panic!("{flags:?}");
        };
        assert_eq!(
            (*metric, *verified, *cache_explains),
            (Metric::DecodeTokS, false, None)
        );
        let text = flags[0].to_string();
        assert!(text.starts_with("Per-request decode rate rose from 71 tok/s at 30K input tokens to 78 tok/s at 60K input tokens (+9.86%), but it should not rise as context grows."), "{text}");
        assert!(!text.contains("cache"), "{text}");
    }

    #[test]
    fn throughput_falling_with_concurrency_beyond_noise() {
        let v = |a: f64| {
            [0.99, 1.0, 1.01]
                .iter()
                .map(|m| (m * a, 54.0, 9.0, 18.0))
                .collect()
        };
        let pts = curve(&[(32, 1000, 500), (64, 1000, 500)], &[v(505.0), v(450.0)]);
        let flags = detect(&pts, &Thresholds::default());
        let Flag::WrongDirection {
            metric,
            axis,
            verified,
            ..
        } = one(&flags)
        else {
            panic!("{flags:?}");
        };
        assert_eq!(
            (*metric, *axis, *verified),
            (Metric::AggTokS, Axis::Concurrency, true)
        );
        assert!(flags[0].to_string().starts_with("Aggregate throughput fell from 505 tok/s at concurrency 32 to 450 tok/s at concurrency 64 (-10.9%), but it should not fall as concurrency grows."));
    }

    #[test]
    fn e2e_is_flagged_alone_along_output_length() {
        let pts = curve(
            &[(1, 1000, 500), (1, 1000, 1000)],
            &[vec![(70.0, 70.0, 0.3, 7.4)], vec![(70.0, 70.0, 0.3, 6.0)]],
        );
        let flags = detect(&pts, &Thresholds::default());
        let Flag::WrongDirection { metric, axis, .. } = one(&flags) else {
            panic!("{flags:?}");
        };
        assert_eq!((*metric, *axis), (Metric::E2eS, Axis::OutputTokens));
    }

    #[test]
    fn neighbours_are_compared_only_within_the_other_parameters() {
        // Plan order: in=1000 at C=1, 2; in=10000 at C=1, 2. Each curve is fine on its own.
        let v = |a: f64, t: f64| vec![(a, 60.0, t, t + 8.0)];
        let pts = curve(
            &[
                (1, 1000, 500),
                (2, 1000, 500),
                (1, 10_000, 500),
                (2, 10_000, 500),
            ],
            &[v(100.0, 0.3), v(190.0, 0.35), v(60.0, 2.6), v(110.0, 2.9)],
        );
        assert!(detect(&pts, &Thresholds::default()).is_empty());
    }

    #[test]
    fn cache_hits_explain_the_dip_or_do_not() {
        let t = Thresholds::default();
        let mut pts = founding_longctx(1);
        pts[5].trials[0].cached_tokens = 240_000; // half of 4 × 120K prompt tokens
        pts[5] = resummarise(&pts[5]);
        let flags = detect(&pts, &t);
        let Flag::WrongDirection { cache_explains, .. } = one(&flags) else {
            panic!("{flags:?}");
        };
        assert_eq!(*cache_explains, Some(true));
        assert!(flags[0]
            .to_string()
            .contains("Prefix-cache hits explain it"));

        // The server reports cache hits elsewhere in the run, none at 100K/120K.
        let mut pts = founding_longctx(1);
        pts[0].trials[0].cached_tokens = 16;
        pts[0] = resummarise(&pts[0]);
        let flags = detect(&pts, &t);
        let Flag::WrongDirection { cache_explains, .. } = one(&flags) else {
            panic!("{flags:?}");
        };
        assert_eq!(*cache_explains, Some(false));
        assert!(flags[0]
            .to_string()
            .ends_with("Prefix-cache hits do not explain it."));
    }

    #[test]
    fn server_prefix_cache_counters_explain_the_dip_or_do_not() {
        let t = Thresholds::default();
        // No cached tokens in the responses; the server's counters say half
        // of the 120K prompt was found in its cache.
        let counted = |rate_at_120k: f64| {
            let mut pts = founding_longctx(1);
            for (i, p) in pts.iter_mut().enumerate() {
                let rate = if i == 5 { rate_at_120k } else { 0.0 };
                p.trials[0].server = [
                    (ServerCounter::PrefixCacheQueries, 1000.0),
                    (ServerCounter::PrefixCacheHits, 1000.0 * rate),
                ]
                .into();
                *p = resummarise(p);
            }
            let flags = detect(&pts, &t);
            let Flag::WrongDirection { cache_explains, .. } = one(&flags) else {
                panic!("{flags:?}");
            };
            *cache_explains
        };
        assert_eq!(counted(0.5), Some(true));
        assert_eq!(counted(0.0), Some(false));
    }
}
