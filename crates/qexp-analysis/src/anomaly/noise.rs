//! Noisy points and outlier trials.
//!
//! A point is noisy when the coefficient of variation of a metric across its
//! trials exceeds the plan's `cv_threshold` (needs two trials). A trial is an
//! outlier when its value lies strictly beyond Tukey's fences of the point's
//! trials (1.5 IQR mild, 3 IQR severe; see [`crate::stats::outliers`]) and
//! departs from the median by more than `min_change`, so that near-identical
//! trials (IQR 0) do not flag a 0.5% wobble. With three trials no value can
//! cross the inner fence, so outliers need at least four.
//!
//! An open-loop point's aggregate throughput is the offered load: its
//! requests arrive on the plan's schedule, so a trial whose Poisson draw
//! sent its requests closer together has a higher throughput without the
//! server doing anything differently (the spread of n arrivals' span is
//! about 1/√(n − 1)). Neither check judges it there; they judge what the
//! server controls: TTFT, E2E, per-request decode and ITL, which is also
//! where a server that cannot keep up with the offered load shows (its
//! queue grows). A throughput normalised by the arrivals (completions per
//! arrival) was tried and left out: with the arrivals' span as its
//! denominator it carries the latency spread of single requests, and
//! flagged 16 of 100 steady points in the compressed rate plan of the
//! `open_loop_noise` test.

use super::{Flag, Metric, MetricCv, OutlierValue, Queueing, Thresholds};
use crate::metrics::{PointSummary, TrialMetrics};
use crate::stats::{classify, sorted_finite, tukey_fences, OutlierKind};

/// Whether the server sets `m` at `p`: everywhere but an open-loop
/// point's aggregate throughput, which its arrivals set.
pub fn server_controls(p: &PointSummary, m: Metric) -> bool {
    !(m == Metric::AggTokS && p.point.open_loop.is_some())
}

/// Whether the plan draws `p`'s prompt or answer lengths from
/// distributions, so that its trials differ in length by design.
pub fn lengths_vary(p: &PointSummary) -> bool {
    p.trials.iter().any(|t| t.lengths_vary)
}

/// Whether `m` is judged per token at `p`: TTFT and E2E where lengths
/// vary by design (a trial of longer prompts has a longer TTFT without
/// any noise).
fn per_token(p: &PointSummary, m: Metric) -> bool {
    matches!(m, Metric::TtftS | Metric::E2eS) && lengths_vary(p)
}

/// One trial's value of `m` as noise is judged at `p`: as measured, or
/// per token where [`per_token`] (TTFT per prompt token, E2E per answer
/// token, each the trial's median over its median count; NaN when the
/// count is unknown).
fn judged_value(p: &PointSummary, m: Metric, tr: &TrialMetrics) -> f64 {
    let v = m.of_trial(tr);
    if !per_token(p, m) {
        return v;
    }
    let tokens = match m {
        Metric::TtftS if tr.prompt_tokens.is_finite() => tr.prompt_tokens,
        Metric::TtftS => tr.input_planned,
        _ => tr.completion_tokens,
    };
    if tokens > 0.0 {
        v / tokens
    } else {
        f64::NAN
    }
}

/// The largest of the trials' event-loop lag p99 when the trials' spread
/// of `m` (a time, judged as measured) is within it: the client's host
/// was late by as much as the trials differ.
fn host_lag(p: &PointSummary, m: Metric, values: &[f64]) -> Option<f64> {
    if m.spec().unit != crate::metric::Unit::Seconds || per_token(p, m) {
        return None;
    }
    let lag = p
        .trials
        .iter()
        .map(|t| t.client_loop_lag_p99_s)
        .filter(|l| l.is_finite())
        .fold(f64::NAN, f64::max);
    let finite = sorted_finite(values);
    let spread = finite.last()? - finite.first()?;
    (lag.is_finite() && spread <= lag).then_some(lag)
}

/// Where requests queue at open-loop point `p`: a trial's median TTFT
/// past `t.ttft_plateau` times that of the lowest rate of `p`'s workload
/// (same lengths, images and deployment).
fn queueing(p: &PointSummary, points: &[PointSummary], t: &Thresholds) -> Option<Queueing> {
    let rate = p.point.rate()?;
    let same = |q: &&PointSummary| q.point.same_workload(&p.point);
    let (low_rate, low_ttft) = points
        .iter()
        .filter(same)
        .filter_map(|q| Some((q.point.rate()?, q.ttft_s.as_ref()?.median)))
        .filter(|(_, v)| v.is_finite() && *v > 0.0)
        .min_by(|a, b| a.0.total_cmp(&b.0))?;
    let worst = p.ttft_s.as_ref()?.max;
    (low_rate < rate && worst > t.ttft_plateau * low_ttft).then_some(Queueing {
        ttft_s: worst,
        low_rate,
        low_ttft_s: low_ttft,
        factor: t.ttft_plateau,
    })
}

/// One flag per point with a metric whose CV exceeds `t.cv`, judged on
/// what the plan holds fixed: TTFT per prompt token and E2E per answer
/// token where the plan draws lengths from distributions.
pub fn detect_noisy(points: &[PointSummary], t: &Thresholds) -> Vec<Flag> {
    points
        .iter()
        .filter_map(|p| {
            let metrics: Vec<MetricCv> = Metric::ALL
                .iter()
                .filter(|&&m| server_controls(p, m) && m.summary(p).is_some())
                .filter_map(|&m| {
                    let values: Vec<f64> =
                        p.trials.iter().map(|tr| judged_value(p, m, tr)).collect();
                    let cv = crate::stats::Summary::of(&values)?.cv?;
                    (cv > t.cv).then(|| MetricCv {
                        metric: m,
                        cv,
                        per_token: per_token(p, m),
                        host_lag_s: host_lag(p, m, &values),
                    })
                })
                .collect();
            (!metrics.is_empty()).then(|| Flag::NoisyPoint {
                point_id: p.point.id,
                n: p.n,
                threshold: t.cv,
                metrics,
                queueing: queueing(p, points, t),
                gpu: None,
            })
        })
        .collect()
}

/// One flag per trial that lies beyond the fences in at least one metric, in trial order.
pub fn detect_outliers(points: &[PointSummary], t: &Thresholds) -> Vec<Flag> {
    let mut flags = Vec::new();
    for p in points {
        let fences: Vec<_> = Metric::CHECKED
            .iter()
            .filter(|&&m| server_controls(p, m))
            .map(|&m| {
                let values: Vec<f64> = p.trials.iter().map(|tr| judged_value(p, m, tr)).collect();
                let median = crate::stats::Summary::of(&values).map(|s| s.median);
                (m, tukey_fences(&sorted_finite(&values)), median)
            })
            .collect();
        for tr in &p.trials {
            let metrics: Vec<OutlierValue> = fences
                .iter()
                .filter_map(|&(m, f, median)| {
                    let (f, median, value) = (f?, median?, judged_value(p, m, tr));
                    let kind = classify(value, &f)?;
                    let material = (value - median).abs() > t.min_change * median.abs();
                    material.then_some(OutlierValue {
                        metric: m,
                        value,
                        median,
                        severe: kind == OutlierKind::Severe,
                    })
                })
                .collect();
            if !metrics.is_empty() {
                flags.push(Flag::OutlierTrial {
                    point_id: p.point.id,
                    trial: tr.trial,
                    n: p.n,
                    metrics,
                    gpu: None,
                });
            }
        }
    }
    flags
}

#[cfg(test)]
mod tests {
    use super::super::fixtures::{
        curve, founding_longctx_noisy, founding_throughput, point, resummarise, trial,
    };
    use super::*;

    fn ttft_point(ttfts: &[f64]) -> PointSummary {
        let trials = ttfts
            .iter()
            .enumerate()
            .map(|(i, &t)| trial(i as u32 + 1, 100.0, 50.0, t, t + 10.0))
            .collect();
        point(0, 1, 1000, 200, trials)
    }

    #[test]
    fn noisy_point_names_metrics_above_threshold() {
        // TTFT 1.0, 1.3, 0.8: mean 1.033, std 0.2517, CV 24.4%; E2E 11.0, 11.3, 10.8: CV 2.3%.
        let pts = vec![ttft_point(&[1.0, 1.3, 0.8])];
        let flags = detect_noisy(&pts, &Thresholds::default());
        let [Flag::NoisyPoint {
            n,
            threshold,
            metrics,
            ..
        }] = flags.as_slice()
        else {
            panic!("one noisy flag expected: {flags:?}");
        };
        assert_eq!((*n, *threshold), (3, 0.10));
        assert_eq!(metrics.len(), 1);
        assert_eq!(metrics[0].metric, Metric::TtftS);
        assert!((metrics[0].cv - 0.24358).abs() < 1e-4, "{}", metrics[0].cv);
        let text = flags[0].to_string();
        assert!(text.contains("TTFT by 24.4% across 3 trials"), "{text}");
        assert!(text.contains("--trials 5"), "{text}");
    }

    #[test]
    fn quiet_points_and_single_trials_are_not_noisy() {
        assert!(detect_noisy(&founding_throughput(), &Thresholds::default()).is_empty());
        // One trial has no CV, however odd its value.
        assert!(detect_noisy(&[ttft_point(&[9.8])], &Thresholds::default()).is_empty());
        // A looser plan threshold silences a 24% CV.
        let t = Thresholds {
            cv: 0.3,
            ..Thresholds::default()
        };
        assert!(detect_noisy(&[ttft_point(&[1.0, 1.3, 0.8])], &t).is_empty());
    }

    #[test]
    fn founding_noisy_fixture_flags_only_its_noisy_points() {
        let flags = detect_noisy(&founding_longctx_noisy(), &Thresholds::default());
        let ids: Vec<Option<u32>> = flags.iter().map(Flag::point_id).collect();
        assert_eq!(ids, vec![Some(4), Some(5)]);
    }

    #[test]
    fn outlier_trial_is_named_with_severity() {
        // Sorted 0.40, 0.40, 0.405, 0.41, 0.9: q1 0.40, q3 0.41, IQR 0.01, outer fence 0.44.
        let pts = vec![ttft_point(&[0.40, 0.41, 0.405, 0.9, 0.40])];
        let flags = detect_outliers(&pts, &Thresholds::default());
        let [Flag::OutlierTrial {
            trial, n, metrics, ..
        }] = flags.as_slice()
        else {
            panic!("one outlier expected: {flags:?}");
        };
        assert_eq!((*trial, *n), (4, 5));
        // TTFT and E2E (0.9 + 10 against a median of 10.405: +4.8%, beyond 3 IQR).
        let got: Vec<(Metric, bool)> = metrics.iter().map(|m| (m.metric, m.severe)).collect();
        assert_eq!(got, vec![(Metric::TtftS, true), (Metric::E2eS, true)]);
        assert_eq!(metrics[0].median, 0.405);
        let text = flags[0].to_string();
        assert!(text.starts_with("Trial 4 stands apart from the point's 5 trials: TTFT 900 ms against a median of 405 ms (beyond 3×IQR)"), "{text}");
    }

    #[test]
    fn mild_outlier_between_fences() {
        // Sorted 10, 10.5, 11, 11.5, 13.5: q1 10.5, q3 11.5, IQR 1; inner 13.0, outer 14.5.
        let pts = vec![ttft_point(&[10.0, 10.5, 11.0, 11.5, 13.5])];
        let flags = detect_outliers(&pts, &Thresholds::default());
        let [Flag::OutlierTrial { trial, metrics, .. }] = flags.as_slice() else {
            panic!("one outlier expected: {flags:?}");
        };
        assert_eq!(*trial, 5);
        assert!(metrics.iter().all(|m| !m.severe));
    }

    #[test]
    fn tiny_departures_and_three_trials_are_not_outliers() {
        // IQR 0: any departure is beyond the fences, but 0.5% is below min_change.
        let pts = vec![ttft_point(&[10.0, 10.0, 10.0, 10.0, 10.05])];
        assert!(detect_outliers(&pts, &Thresholds::default()).is_empty());
        // With three trials no value crosses the inner fence, even a wild one.
        let pts = vec![ttft_point(&[1.0, 1.0, 30.0])];
        assert!(detect_outliers(&pts, &Thresholds::default()).is_empty());
        // Spread evenly: nothing stands apart.
        let pts = vec![ttft_point(&[11.0, 13.0, 15.1, 17.5, 19.0])];
        assert!(detect_outliers(&pts, &Thresholds::default()).is_empty());
        assert!(detect_outliers(&founding_longctx_noisy(), &Thresholds::default()).is_empty());
    }

    /// `p` made open-loop: Poisson arrivals at 1 req/s.
    fn open_loop(mut p: PointSummary) -> PointSummary {
        p.point.open_loop = Some(qexp_plan::OpenLoop {
            arrival: qexp_plan::Arrival::Poisson,
            burstiness: 1.0,
            max_in_flight: None,
            stages: vec![qexp_plan::Stage {
                rate: 1.0,
                requests: 10,
            }],
            trace: None,
        });
        p
    }

    #[test]
    fn open_loop_throughput_spread_is_the_arrivals_not_noise() {
        // Aggregate 60 vs 100 tok/s (CV 35%, the spread of 10 Poisson
        // arrivals' span), latencies equal: closed loop, that is noise; open
        // loop, the arrivals set the throughput and nothing is flagged.
        let trials = vec![
            trial(1, 60.0, 50.0, 0.5, 10.0),
            trial(2, 100.0, 50.0, 0.5, 10.0),
            trial(3, 80.0, 50.0, 0.5, 10.0),
            trial(4, 62.0, 50.0, 0.5, 10.0),
            trial(5, 200.0, 50.0, 0.5, 10.0),
        ];
        let closed = point(0, 1, 1000, 200, trials);
        assert_eq!(
            detect_noisy(std::slice::from_ref(&closed), &Thresholds::default()).len(),
            1
        );
        assert_eq!(
            detect_outliers(std::slice::from_ref(&closed), &Thresholds::default()).len(),
            1
        );
        let open = open_loop(closed);
        assert!(detect_noisy(std::slice::from_ref(&open), &Thresholds::default()).is_empty());
        assert!(detect_outliers(std::slice::from_ref(&open), &Thresholds::default()).is_empty());
        // What the server controls is still judged: a TTFT that varies is flagged.
        let mut varied = open.trials.clone();
        varied[1].ttft_s = 0.9;
        let varied = open_loop(point(0, 1, 1000, 200, varied));
        let flags = detect_noisy(&[varied], &Thresholds::default());
        let [Flag::NoisyPoint { metrics, .. }] = flags.as_slice() else {
            panic!("one noisy flag expected: {flags:?}");
        };
        let names: Vec<Metric> = metrics.iter().map(|m| m.metric).collect();
        assert_eq!(names, vec![Metric::TtftS]);
    }

    #[test]
    fn failed_trial_values_are_ignored() {
        // A trial whose requests all failed has NaN metrics: not an outlier, and no panic.
        let vs = vec![vec![
            (100.0, 50.0, 1.0, 11.0),
            (100.0, 50.0, 1.0, 11.0),
            (f64::NAN, f64::NAN, f64::NAN, f64::NAN),
            (100.0, 50.0, 1.01, 11.0),
            (100.0, 50.0, 0.99, 11.0),
        ]];
        let pts = curve(&[(1, 1000, 200)], &vs);
        assert!(detect_outliers(&pts, &Thresholds::default()).is_empty());
        assert!(detect_noisy(&pts, &Thresholds::default()).is_empty());
    }

    /// Trials whose answers were drawn at 100, 150 and 200 tokens on
    /// purpose: E2E follows the length (10 ms a token), TTFT does not.
    fn varied_lengths(per_token_e2e: [f64; 3]) -> PointSummary {
        let trials = [100.0, 150.0, 200.0]
            .into_iter()
            .zip(per_token_e2e)
            .enumerate()
            .map(|(i, (n, e))| TrialMetrics {
                completion_tokens: n,
                lengths_vary: true,
                ..trial(i as u32 + 1, 100.0, 50.0, 0.5, n * e)
            })
            .collect();
        point(0, 1, 1000, 200, trials)
    }

    #[test]
    fn lengths_drawn_by_design_are_judged_per_token() {
        // E2E 1, 1.5, 2 s (CV 33%) from lengths alone: not noise.
        let steady = varied_lengths([0.01, 0.01, 0.01]);
        assert!(detect_noisy(std::slice::from_ref(&steady), &Thresholds::default()).is_empty());
        // The same lengths held fixed would be flagged.
        let mut fixed = steady.clone();
        for t in &mut fixed.trials {
            t.lengths_vary = false;
        }
        let fixed = resummarise(&fixed);
        assert_eq!(detect_noisy(&[fixed], &Thresholds::default()).len(), 1);
        // A per-token E2E that varies is still noise, and the flag says how it was judged.
        let noisy = varied_lengths([0.01, 0.014, 0.008]);
        let flags = detect_noisy(&[noisy], &Thresholds::default());
        let [Flag::NoisyPoint { metrics, .. }] = flags.as_slice() else {
            panic!("one noisy flag expected: {flags:?}");
        };
        assert_eq!(
            metrics
                .iter()
                .map(|m| (m.metric, m.per_token))
                .collect::<Vec<_>>(),
            vec![(Metric::E2eS, true)]
        );
        let text = flags[0].to_string();
        assert!(
            text.contains("E2E latency per answer token by")
                && text.contains("lengths from distributions"),
            "{text}"
        );
    }

    #[test]
    fn an_itl_tail_within_the_hosts_lateness_is_named_as_the_host() {
        // ITL p99 3, 4, 5 ms (CV 25%): a 2 ms spread.
        let mut p = ttft_point(&[0.5, 0.5, 0.5]);
        for (t, itl) in p.trials.iter_mut().zip([0.003, 0.004, 0.005]) {
            t.itl_p99_s = itl;
            t.client_loop_lag_p99_s = 0.001;
        }
        // The largest of the trials' lags counts.
        let late = |lag: f64| {
            let mut q = p.clone();
            q.trials[1].client_loop_lag_p99_s = lag;
            detect_noisy(&[resummarise(&q)], &Thresholds::default())
        };
        // Loop late by up to 4 ms: the 2 ms spread is the host's.
        let flags = late(0.004);
        let [Flag::NoisyPoint { metrics, .. }] = flags.as_slice() else {
            panic!("one noisy flag expected: {flags:?}");
        };
        assert_eq!(metrics[0].metric, Metric::ItlP99S);
        assert_eq!(metrics[0].host_lag_s, Some(0.004));
        let text = flags[0].to_string();
        assert!(
            text.contains("client host's scheduling tail")
                && !text.contains("find the interference"),
            "{text}"
        );
        // Loop late by at most 1.5 ms: the spread is beyond it, so it may be the server's.
        let flags = late(0.0015);
        let [Flag::NoisyPoint { metrics, .. }] = flags.as_slice() else {
            panic!("one noisy flag expected: {flags:?}");
        };
        assert_eq!(metrics[0].host_lag_s, None);
        assert!(flags[0].to_string().contains("find the interference"));
    }

    /// `p` made open-loop at `rate` requests/s.
    fn at_rate(p: PointSummary, rate: f64) -> PointSummary {
        let mut p = open_loop(p);
        if let Some(o) = &mut p.point.open_loop {
            o.stages[0].rate = rate;
        }
        p
    }

    #[test]
    fn noise_where_open_loop_requests_queue_is_the_queue() {
        let low = at_rate(ttft_point(&[0.1, 0.1, 0.1]), 1.0);
        // At 8 req/s one trial's TTFT (0.9 s) is past 2× the 0.1 s at 1 req/s.
        let mut high = at_rate(ttft_point(&[0.15, 0.9, 0.12]), 8.0);
        high.point.id = 1;
        let flags = detect_noisy(&[low.clone(), high.clone()], &Thresholds::default());
        let [Flag::NoisyPoint { queueing, .. }] = flags.as_slice() else {
            panic!("one noisy flag expected: {flags:?}");
        };
        let q = queueing.expect("queueing");
        assert_eq!((q.ttft_s, q.low_rate, q.low_ttft_s), (0.9, 1.0, 0.1));
        let text = flags[0].to_string();
        assert!(
            text.contains("Requests queue at this rate") && !text.contains("find the interference"),
            "{text}"
        );
        // The same spread at the lowest rate, or closed loop, is not a queue.
        let alone = at_rate(ttft_point(&[0.15, 0.9, 0.12]), 1.0);
        let flags = detect_noisy(&[alone], &Thresholds::default());
        assert!(matches!(
            flags.as_slice(),
            [Flag::NoisyPoint { queueing: None, .. }]
        ));
        let closed = ttft_point(&[0.15, 0.9, 0.12]);
        let flags = detect_noisy(&[closed], &Thresholds::default());
        assert!(flags[0].to_string().contains("find the interference"));
    }
}
