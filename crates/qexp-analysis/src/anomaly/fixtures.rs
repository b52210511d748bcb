//! Test fixtures: points built from plain numbers, and the founding runs.

use crate::metrics::{PointSummary, TrialMetrics};
use qexp_plan::Point;

/// One trial with 4 successful requests, prompt tokens left unreported and 1 ms send lag.
pub(crate) fn trial(n: u32, agg: f64, decode: f64, ttft: f64, e2e: f64) -> TrialMetrics {
    TrialMetrics {
        trial: n,
        requests: 4,
        agg_tok_s: agg,
        decode_tok_s: decode,
        ttft_s: ttft,
        ttft_p90_s: ttft,
        e2e_s: e2e,
        itl_p50_s: 1.0 / decode,
        itl_p99_s: 2.0 / decode,
        tokens_per_chunk: 1.0,
        prompt_tokens: f64::NAN,
        send_lag_max_s: 0.001,
        ..TrialMetrics::default()
    }
}

/// A point summarised from its trials (their point ids are set to `id`).
pub(crate) fn point(
    id: u32,
    c: u32,
    input: u32,
    output: u32,
    trials: Vec<TrialMetrics>,
) -> PointSummary {
    let p = Point {
        id,
        concurrency: c,
        input_tokens: input,
        output_tokens: output,
        requests: 4 * c,
        warmup: 1,
        open_loop: None,
        deployment: None,
        images: None,
    };
    let trials = trials
        .into_iter()
        .map(|t| TrialMetrics { point_id: id, ..t })
        .collect();
    PointSummary::new(p, trials)
}

/// Re-summarises a point after its trials were edited.
pub(crate) fn resummarise(p: &PointSummary) -> PointSummary {
    PointSummary::new(p.point.clone(), p.trials.clone())
}

/// Points along one axis from per-point lists of trial values `(agg, decode, ttft, e2e)`.
pub(crate) fn curve(
    params: &[(u32, u32, u32)],
    values: &[Vec<(f64, f64, f64, f64)>],
) -> Vec<PointSummary> {
    params
        .iter()
        .zip(values)
        .enumerate()
        .map(|(i, (&(c, input, output), vs))| {
            let trials = vs
                .iter()
                .enumerate()
                .map(|(k, &(a, d, t, e))| trial(k as u32 + 1, a, d, t, e))
                .collect();
            point(i as u32, c, input, output, trials)
        })
        .collect()
}

/// Founding long-context inputs (C=1, 200 output tokens).
pub(crate) const LONGCTX_INPUTS: [u32; 6] = [1_000, 10_000, 30_000, 60_000, 100_000, 120_000];
/// Founding median TTFT per input, seconds: roughly linear, except 120K.
pub(crate) const LONGCTX_TTFT: [f64; 6] = [0.31, 2.6, 5.5, 9.6, 15.1, 9.8];
/// Decode tok/s per input, falling gently (73.6 → 64.9).
pub(crate) const LONGCTX_DECODE: [f64; 6] = [73.6, 72.8, 71.0, 69.0, 66.2, 64.9];

/// A long-context trial: E2E is TTFT plus 199 decode steps, aggregate is 200 tokens over E2E.
fn longctx_trial(ttft: f64, decode: f64) -> (f64, f64, f64, f64) {
    let e2e = ttft + 199.0 / decode;
    (200.0 / e2e, decode, ttft, e2e)
}

/// The founding long-context table with `trials` identical trials per point.
pub(crate) fn founding_longctx(trials: usize) -> Vec<PointSummary> {
    let params: Vec<(u32, u32, u32)> = LONGCTX_INPUTS.iter().map(|&i| (1, i, 200)).collect();
    let values: Vec<Vec<_>> = (0..6)
        .map(|i| vec![longctx_trial(LONGCTX_TTFT[i], LONGCTX_DECODE[i]); trials])
        .collect();
    curve(&params, &values)
}

/// The same shape with 5 trials: tight (±1%) everywhere but 100K and 120K,
/// whose TTFT medians are still 15.1 s and 9.8 s but whose ranges overlap.
pub(crate) fn founding_longctx_noisy() -> Vec<PointSummary> {
    let tight = [0.99, 1.0, 1.01, 0.995, 1.005];
    let params: Vec<(u32, u32, u32)> = LONGCTX_INPUTS.iter().map(|&i| (1, i, 200)).collect();
    let values: Vec<Vec<_>> = (0..6)
        .map(|i| {
            let ttfts: Vec<f64> = match i {
                4 => vec![11.0, 13.0, 15.1, 17.5, 19.0],
                5 => vec![7.0, 9.0, 9.8, 16.0, 18.0],
                _ => tight.iter().map(|m| m * LONGCTX_TTFT[i]).collect(),
            };
            ttfts
                .iter()
                .zip(tight)
                .map(|(&t, m)| longctx_trial(t, m * LONGCTX_DECODE[i]))
                .collect()
        })
        .collect();
    curve(&params, &values)
}

/// Founding concurrency levels (1000 input, 500 output tokens).
pub(crate) const THROUGHPUT_C: [u32; 8] = [1, 2, 4, 8, 16, 32, 64, 100];
/// Founding aggregate tok/s: saturating near 505 from C=32.
pub(crate) const THROUGHPUT_AGG: [f64; 8] = [73.0, 140.0, 260.0, 420.0, 480.0, 505.0, 506.0, 505.0];
/// Median TTFT, seconds: 0.3 at C=1, 0.4 at C=8, 61 at C=100.
pub(crate) const THROUGHPUT_TTFT: [f64; 8] = [0.3, 0.32, 0.35, 0.4, 3.0, 9.0, 30.0, 61.0];
/// Per-request decode tok/s.
pub(crate) const THROUGHPUT_DECODE: [f64; 8] = [73.5, 70.0, 65.0, 60.0, 56.0, 54.0, 54.0, 54.0];

/// The founding throughput sweep with 3 trials at ±1%, so neighbouring plateau points overlap.
pub(crate) fn founding_throughput() -> Vec<PointSummary> {
    let params: Vec<(u32, u32, u32)> = THROUGHPUT_C.iter().map(|&c| (c, 1000, 500)).collect();
    let values: Vec<Vec<_>> = (0..8)
        .map(|i| {
            [0.99, 1.0, 1.01]
                .iter()
                .map(|m| {
                    let (ttft, decode) = (m * THROUGHPUT_TTFT[i], m * THROUGHPUT_DECODE[i]);
                    (m * THROUGHPUT_AGG[i], decode, ttft, ttft + 499.0 / decode)
                })
                .collect()
        })
        .collect();
    curve(&params, &values)
}
