//! Token-count mismatches and unexpected cache hits.
//!
//! Output: the runner counts requests whose server-reported completion tokens
//! are missing, below the client's own count, or differ from the planned
//! `max_tokens` when the stream stopped for length; any such request is
//! flagged. Input: a trial whose median server-reported prompt length is
//! further from the plan than its input tolerance (`input_tolerance` of the
//! planned length, at least `input_tolerance_tokens`; the flag shows the median of
//! such trials). Cache: qexp prompts share no prefix (each starts with a
//! unique nonce) unless the plan groups them under a shared system prompt,
//! so cached prompt tokens beyond what the plan expects are unexpected —
//! beyond a small tolerance:
//! the chat template ahead of the nonce is shared by every request, and an
//! engine that caches at token granularity (llama.cpp reuses a slot's
//! `<|im_start|>user\n`, 3–4 tokens) reports it. A trial's cached tokens are
//! ignored while they average at most [`CACHE_TOLERANCE_TOKENS`] per request
//! or stay within [`CACHE_TOLERANCE_SHARE`] of its prompt tokens; a real
//! prefix hit (vLLM caches whole blocks of 16–128 tokens, llama.cpp the whole
//! shared prefix) is far above both.

use super::{Flag, Thresholds};
use crate::metrics::PointSummary;
use crate::stats::median;

/// Cached tokens per request that a trial may average without a flag (template prefix).
pub const CACHE_TOLERANCE_TOKENS: f64 = 16.0;
/// Share of a trial's prompt tokens that may come from cache without a flag.
pub const CACHE_TOLERANCE_SHARE: f64 = 0.01;

/// True when a trial's cached tokens are more than template reuse explains.
fn unexpected_cache(tr: &crate::metrics::TrialMetrics, planned_input: u32) -> bool {
    if tr.cached_tokens == 0 {
        return false;
    }
    let requests = f64::from(tr.requests.max(1));
    let len = if tr.prompt_tokens.is_finite() && tr.prompt_tokens > 0.0 {
        tr.prompt_tokens
    } else {
        f64::from(planned_input)
    };
    // What a planned shared prefix explains is not unexpected.
    let expected = if tr.cached_share_expected.is_finite() {
        tr.cached_share_expected * len * requests
    } else {
        0.0
    };
    let cached = tr.cached_tokens as f64 - expected;
    cached > CACHE_TOLERANCE_TOKENS * requests && cached > CACHE_TOLERANCE_SHARE * len * requests
}

/// Token-mismatch flags, then unexpected-cache-hit flags, per point.
pub fn detect(points: &[PointSummary], t: &Thresholds) -> Vec<Flag> {
    let mut flags = Vec::new();
    for p in points {
        // A prompt with images counts their tokens too, which no plan knows.
        if p.point.images.is_some_and(|i| i.count > 0) {
            continue;
        }
        // Against the trial's median planned length: the point's, unless lengths vary.
        let planned = |tr: &crate::metrics::TrialMetrics| {
            if tr.input_planned.is_finite() && tr.input_planned > 0.0 {
                tr.input_planned
            } else {
                f64::from(p.point.input_tokens)
            }
        };
        let off = |tr: &crate::metrics::TrialMetrics| {
            let x = tr.prompt_tokens;
            x.is_finite() && t.input_tolerance.exceeded(planned(tr), x)
        };
        let trials: Vec<u32> = p
            .trials
            .iter()
            .filter(|tr| tr.token_mismatches > 0 || off(tr))
            .map(|tr| tr.trial)
            .collect();
        if !trials.is_empty() {
            let off_trials: Vec<f64> = p
                .trials
                .iter()
                .filter(|tr| off(tr))
                .map(|tr| tr.prompt_tokens)
                .collect();
            flags.push(Flag::TokenMismatch {
                point_id: p.point.id,
                output_mismatches: p
                    .trials
                    .iter()
                    .map(|tr| u64::from(tr.token_mismatches))
                    .sum(),
                requests: p.requests,
                trials,
                planned_input: p.point.input_tokens,
                server_input: median(&off_trials),
            });
        }
        let cached: Vec<u32> = p
            .trials
            .iter()
            .filter(|tr| unexpected_cache(tr, p.point.input_tokens))
            .map(|tr| tr.trial)
            .collect();
        if !cached.is_empty() {
            flags.push(Flag::UnexpectedCacheHits {
                point_id: p.point.id,
                cached_tokens: p.trials.iter().map(|tr| tr.cached_tokens).sum(),
                share: cache_share(p),
                trials: cached,
            });
        }
    }
    flags
}

/// Share of a point's prompt tokens served from cache: cached tokens over
/// requests × prompt length (server-reported, else planned); None without requests.
pub fn cache_share(p: &PointSummary) -> Option<f64> {
    let (mut prompt, mut cached) = (0.0, 0.0);
    for tr in &p.trials {
        let len = if tr.prompt_tokens.is_finite() && tr.prompt_tokens > 0.0 {
            tr.prompt_tokens
        } else {
            f64::from(p.point.input_tokens)
        };
        prompt += len * f64::from(tr.requests);
        cached += tr.cached_tokens as f64;
    }
    (prompt > 0.0).then(|| (cached / prompt).min(1.0))
}

#[cfg(test)]
mod tests {
    use super::super::fixtures::{founding_throughput, resummarise};
    use super::*;

    fn c8() -> PointSummary {
        founding_throughput().swap_remove(3) // C=8, 1000 input tokens, 3 trials of 4 requests
    }

    #[test]
    fn output_mismatch_names_trials() {
        let mut p = c8();
        p.trials[1].token_mismatches = 2;
        let flags = detect(&[resummarise(&p)], &Thresholds::default());
        let [Flag::TokenMismatch {
            output_mismatches,
            requests,
            trials,
            server_input,
            ..
        }] = flags.as_slice()
        else {
            panic!("one mismatch flag expected: {flags:?}");
        };
        assert_eq!(
            (*output_mismatches, *requests, trials.as_slice()),
            (2, 12, &[2][..])
        );
        assert_eq!(*server_input, None);
        let text = flags[0].to_string();
        assert!(
            text.starts_with("2 of 12 requests have output counts that disagree"),
            "{text}"
        );
        assert!(text.contains("in trial 2."), "{text}");
    }

    #[test]
    fn input_beyond_tolerance_is_a_mismatch_within_is_not() {
        let mut p = c8();
        for tr in &mut p.trials {
            tr.prompt_tokens = 1008.0; // 0.8%: within the default 1%
        }
        assert!(detect(&[resummarise(&p)], &Thresholds::default()).is_empty());
        for tr in &mut p.trials {
            tr.prompt_tokens = 1240.0;
        }
        let flags = detect(&[resummarise(&p)], &Thresholds::default());
        let [Flag::TokenMismatch {
            server_input,
            planned_input,
            trials,
            ..
        }] = flags.as_slice()
        else {
            panic!("one mismatch flag expected: {flags:?}");
        };
        assert_eq!((*server_input, *planned_input), (Some(1240.0), 1000));
        assert_eq!(trials, &vec![1, 2, 3]);
        let text = flags[0].to_string();
        assert!(
            text.starts_with(
                "The server counted 1240 prompt tokens where the plan asked for 1,000 (+24%)"
            ),
            "{text}"
        );
    }

    #[test]
    fn unreported_prompt_tokens_are_not_a_mismatch() {
        // The fixture leaves prompt_tokens NaN (server sent no usage) and counts no mismatches.
        assert!(detect(&founding_throughput(), &Thresholds::default()).is_empty());
    }

    #[test]
    fn template_reuse_is_tolerated_but_not_more() {
        let mut p = c8();
        // llama.cpp: 3–4 template tokens cached on most of a trial's 4 requests.
        p.trials[0].cached_tokens = 14;
        p.trials[1].cached_tokens = 64; // 16 per request: at the limit
        assert!(detect(&[resummarise(&p)], &Thresholds::default()).is_empty());
        p.trials[1].cached_tokens = 65; // above 16 per request and above 1% of 4 × 1000
        let flags = detect(&[resummarise(&p)], &Thresholds::default());
        assert!(
            matches!(flags.as_slice(), [Flag::UnexpectedCacheHits { trials, .. }] if trials == &[2]),
            "{flags:?}"
        );
    }

    #[test]
    fn on_long_prompts_one_percent_is_the_limit() {
        let mut p = c8();
        p.point.input_tokens = 32_000;
        for tr in &mut p.trials {
            tr.prompt_tokens = 32_000.0;
        }
        // 4 requests × 32,000 tokens: 1% = 1,280 cached tokens, above 16 per request.
        p.trials[2].cached_tokens = 1_280;
        assert!(detect(&[resummarise(&p)], &Thresholds::default()).is_empty());
        p.trials[2].cached_tokens = 1_281;
        assert_eq!(detect(&[resummarise(&p)], &Thresholds::default()).len(), 1);
    }

    #[test]
    fn planned_shared_prefixes_are_expected_but_hits_beyond_them_are_not() {
        let mut p = c8();
        for tr in &mut p.trials {
            // Half of every trial's 4 × 1000 prompt tokens planned from a shared prefix.
            tr.cached_share_expected = 0.5;
            tr.cached_tokens = 2000;
        }
        assert!(detect(&[resummarise(&p)], &Thresholds::default()).is_empty());
        p.trials[1].cached_tokens = 2100; // 100 beyond the plan: above 16 per request and 1%
        let flags = detect(&[resummarise(&p)], &Thresholds::default());
        assert!(
            matches!(flags.as_slice(), [Flag::UnexpectedCacheHits { trials, .. }] if trials == &[2]),
            "{flags:?}"
        );
    }

    #[test]
    fn cached_tokens_beyond_the_tolerance_are_unexpected() {
        let mut p = c8();
        p.trials[0].cached_tokens = 2000; // half of trial 1's 4 × 1000 prompt tokens
        let flags = detect(&[resummarise(&p)], &Thresholds::default());
        let share = 2000.0 / 12_000.0;
        assert_eq!(
            flags,
            vec![Flag::UnexpectedCacheHits {
                point_id: 3,
                cached_tokens: 2000,
                share: Some(share),
                trials: vec![1],
            }]
        );
        let text = flags[0].to_string();
        assert!(text.starts_with("The server reported 2,000 cached prompt tokens (16.7% of prompt tokens) in trial 1, although"), "{text}");
        assert!(text.contains("/metrics"), "{text}");
    }

    #[test]
    fn cache_share_uses_reported_prompt_length() {
        let mut p = c8();
        assert_eq!(cache_share(&p), Some(0.0));
        for tr in &mut p.trials {
            tr.prompt_tokens = 500.0;
            tr.cached_tokens = 1000;
        }
        assert_eq!(cache_share(&p), Some(0.5));
        p.trials.clear();
        assert_eq!(cache_share(&p), None);
    }
}
