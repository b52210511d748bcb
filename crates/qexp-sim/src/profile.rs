//! Named timing profiles and their calibration.

use std::time::Duration;

use crate::faults::FaultPlan;

/// Timing and capacity parameters of a simulated inference server.
///
/// Time model, for a request of `n` prompt tokens arriving at `t0`:
/// 1. `prefill_fixed_s` of pure latency (request handling, scheduling): it runs
///    concurrently for all requests and holds no batch slot;
/// 2. wait for one of `max_batch` slots (FIFO) — this is the queue that makes
///    TTFT climb once concurrency exceeds the batch;
/// 3. `n / prefill_tokens_per_s` of prefill compute, serialized server-wide
///    (one prefill at a time) while holding the slot;
///    The part of the prompt found in the prefix cache (whole blocks from the
///    start, see `prefix_cache.rs`) is not prefilled;
/// 4. the first chunk (`tokens_per_step` tokens) is sent at once (TTFT), then
///    one chunk per decode step of `step_base_s + step_per_seq_s * (k - 1)`
///    where `k` is the number of sequences decoding at that moment.
///
/// Every duration is multiplied by `time_scale`.
#[derive(Debug, Clone, PartialEq)]
pub struct SimProfile {
    /// Profile name, as given to [`SimProfile::by_name`].
    pub name: String,
    /// Fixed latency before the first token, seconds (concurrent, holds no slot).
    pub prefill_fixed_s: f64,
    /// Prefill rate in prompt tokens per second; prefills are serialized. `f64::INFINITY` = free.
    pub prefill_tokens_per_s: f64,
    /// Decode step time with one sequence decoding, seconds.
    pub step_base_s: f64,
    /// Decode step time added per extra decoding sequence, seconds.
    pub step_per_seq_s: f64,
    /// Cap on sequences admitted at once (prefilling or decoding); the rest queue.
    pub max_batch: usize,
    /// Tokens emitted per decode step (speculative decoding); one step = one SSE chunk.
    pub tokens_per_step: u32,
    /// `prompt_tokens + max_tokens` above this is rejected with HTTP 400.
    pub max_context: u32,
    /// Multiplier applied to every simulated duration (1.0 = real time, 0.05 = 20x faster).
    pub time_scale: f64,
    /// Chat-template tokens added per message on `/v1/chat/completions` (plus [`crate::CHAT_PRIMER_TOKENS`] per request).
    pub chat_template_tokens: u32,
    /// Faults injected into streamed generation requests (none in the built-in profiles).
    pub faults: FaultPlan,
    /// Prefix-cache capacity in prompt tokens (0 = no prefix cache); cached tokens skip prefill.
    pub prefix_cache_tokens: u32,
    /// Prefix-cache block size in tokens: only whole blocks are cached and found.
    pub prefix_cache_block: u32,
    /// Chat streams: the first this many generated tokens of each completion
    /// arrive as `reasoning_content` deltas, as a reasoning model's thinking does (0 = none).
    pub reasoning_tokens: u32,
    /// Drift: every duration grows by this fraction per second of wall-clock
    /// time since the first drifting simulator of the process started (0 =
    /// none), as a machine that heats up or fills up would. For tests of run
    /// orders: interleaved blocks must not read drift as a difference.
    pub drift_per_s: f64,
    /// The model id it serves; None: `sim-<name>`.
    pub model: Option<String>,
}

/// When the first drifting simulator of this process started: every
/// drifting simulator measures its drift from here, so two of them drift
/// alike, as two deployments on one drifting machine would.
static DRIFT_EPOCH: std::sync::OnceLock<std::time::Instant> = std::sync::OnceLock::new();

/// A profile whose parameters cannot drive the simulator.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("sim profile {profile:?}: {field} {reason}")]
pub struct ProfileError {
    /// Name of the offending profile.
    pub profile: String,
    /// The field that is out of range.
    pub field: &'static str,
    /// What the field must be.
    pub reason: &'static str,
}

const NAMES: &[&str] = &[
    "founding",
    "fast",
    "fast-nospec",
    "fast-reasoning",
    "exact",
    "exact-slow",
];

impl SimProfile {
    /// The built-in profile called `name`, if there is one (see [`SimProfile::names`]).
    pub fn by_name(name: &str) -> Option<SimProfile> {
        match name {
            "founding" => Some(founding()),
            "fast" => Some(SimProfile {
                name: "fast".to_owned(),
                time_scale: 0.05,
                ..founding()
            }),
            "fast-nospec" => Some(fast_nospec()),
            // A reasoning model: each answer opens with 64 tokens of thinking.
            "fast-reasoning" => Some(SimProfile {
                name: "fast-reasoning".to_owned(),
                time_scale: 0.05,
                reasoning_tokens: 64,
                ..founding()
            }),
            "exact" => Some(SimProfile {
                name: "exact".to_owned(),
                prefill_fixed_s: 0.05,
                prefill_tokens_per_s: f64::INFINITY,
                step_base_s: 0.01,
                step_per_seq_s: 0.0,
                max_batch: 1024,
                tokens_per_step: 1,
                max_context: 131_072,
                time_scale: 1.0,
                chat_template_tokens: 4,
                faults: FaultPlan::none(),
                prefix_cache_tokens: FOUNDING_CACHE_TOKENS,
                prefix_cache_block: 16,
                reasoning_tokens: 0,
                drift_per_s: 0.0,
                model: None,
            }),
            // `exact` with 10% longer decode steps (decode 91 instead of 100
            // tok/s): a second deployment whose difference `qexp diff` must find.
            "exact-slow" => Some(SimProfile {
                name: "exact-slow".to_owned(),
                step_base_s: 0.011,
                ..SimProfile::by_name("exact")?
            }),
            _ => None,
        }
    }

    /// Names of the built-in profiles.
    pub fn names() -> &'static [&'static str] {
        NAMES
    }

    /// The model id the server reports: the one it was given, else `sim-<name>`.
    pub fn model_id(&self) -> String {
        self.model
            .clone()
            .unwrap_or_else(|| format!("sim-{}", self.name))
    }

    /// Checks that every parameter is in range (finite, non-negative, non-zero caps).
    pub fn validate(&self) -> Result<(), ProfileError> {
        let bad = |field, reason| {
            Err(ProfileError {
                profile: self.name.clone(),
                field,
                reason,
            })
        };
        let non_negative = |x: f64| x.is_finite() && x >= 0.0;
        if !(self.time_scale.is_finite() && self.time_scale > 0.0) {
            return bad("time_scale", "must be finite and > 0");
        }
        for (field, value) in [
            ("prefill_fixed_s", self.prefill_fixed_s),
            ("step_base_s", self.step_base_s),
            ("step_per_seq_s", self.step_per_seq_s),
        ] {
            if !non_negative(value) {
                return bad(field, "must be finite and >= 0");
            }
        }
        if self.prefill_tokens_per_s.is_nan() || self.prefill_tokens_per_s <= 0.0 {
            return bad(
                "prefill_tokens_per_s",
                "must be > 0 (infinity = free prefill)",
            );
        }
        if self.max_batch == 0 {
            return bad("max_batch", "must be >= 1");
        }
        if self.tokens_per_step == 0 {
            return bad("tokens_per_step", "must be >= 1");
        }
        if self.max_context == 0 {
            return bad("max_context", "must be >= 1");
        }
        if self.prefix_cache_block == 0 {
            return bad("prefix_cache_block", "must be >= 1");
        }
        Ok(())
    }

    /// Simulated seconds turned into wall-clock time (`time_scale` applied).
    pub(crate) fn scaled(&self, secs: f64) -> Duration {
        let drift = if self.drift_per_s > 0.0 {
            let since = DRIFT_EPOCH.get_or_init(std::time::Instant::now);
            1.0 + self.drift_per_s * since.elapsed().as_secs_f64()
        } else {
            1.0
        };
        let jitter = self.faults.jitter.factor(self.time_scale);
        Duration::try_from_secs_f64(secs * self.time_scale * drift * jitter)
            .unwrap_or(Duration::ZERO)
    }

    /// Starts the drift clock (no-op without drift or when already started).
    pub fn start_drift(&self) {
        if self.drift_per_s > 0.0 {
            DRIFT_EPOCH.get_or_init(std::time::Instant::now);
        }
    }

    /// Unscaled prefill compute time for `n` prompt tokens, seconds.
    pub(crate) fn prefill_compute_s(&self, n: u32) -> f64 {
        f64::from(n) / self.prefill_tokens_per_s
    }

    /// Unscaled decode step time with `decoding` sequences in the batch, seconds.
    pub(crate) fn step_s(&self, decoding: usize) -> f64 {
        // usize -> f64 is exact for any realistic batch size.
        self.step_base_s + self.step_per_seq_s * decoding.saturating_sub(1) as f64
    }
}

/// Calibrated on the founding deployment (DESIGN.md: Qwen3.6-27B, SGLang, TP=2, MTP).
///
/// - Prefill: the long-context points (TTFT 2.6 s at 10K, 15.1 s at 100K) fix a
///   line of 1.22 s + n / 7260 tok/s: 10K -> 2.60 s, 100K -> 14.99 s. No line
///   also gives 0.3 s at 1K (this one gives 1.36 s); long-context fidelity wins.
///   The fixed part holds no batch slot, or it would cap the 1K/500 plateau
///   near 440 tok/s instead of ~505.
/// - Decode: 4 tokens/step (MTP); a 54.7 ms step gives 1/TPOT = 73.6 tok/s at
///   C=1 for 500 output tokens; +2.0 ms per extra sequence with 9 slots gives a
///   steady-state aggregate of ~505 tok/s for 1000-in/500-out requests, about
///   57 tok/s per request at saturation (seen: ~54).
/// - Prefix cache: 256K tokens in blocks of 16 (vLLM's GPU default block),
///   about what two 48 GB cards leave for KV after a 27B model's weights; the
///   founding report does not give the figure.
/// - Not modeled: decode slowing with context length (73.6 -> 64.9 tok/s at 100K).
fn founding() -> SimProfile {
    SimProfile {
        name: "founding".to_owned(),
        prefill_fixed_s: 1.22,
        prefill_tokens_per_s: 7260.0,
        step_base_s: 0.0547,
        step_per_seq_s: 0.002,
        max_batch: 9,
        tokens_per_step: 4,
        max_context: 131_072,
        time_scale: 1.0,
        chat_template_tokens: 4,
        faults: FaultPlan::none(),
        prefix_cache_tokens: FOUNDING_CACHE_TOKENS,
        prefix_cache_block: 16,
        reasoning_tokens: 0,
        drift_per_s: 0.0,
        model: None,
    }
}

/// Prefix-cache capacity of the founding profile, tokens.
const FOUNDING_CACHE_TOKENS: u32 = 262_144;

/// `fast` with speculative decoding switched off: one token per step, each
/// step 20% shorter (no draft and verify work), so decode runs at about
/// 1/(0.8 × 54.7 ms) = 23 tok/s per request instead of 73.6, chunks carry one
/// token and arrive more often. A second deployment for `qexp diff` demos and
/// tests whose direction is known: throughput down, E2E up, inter-chunk gaps down.
fn fast_nospec() -> SimProfile {
    let f = founding();
    SimProfile {
        name: "fast-nospec".to_owned(),
        tokens_per_step: 1,
        step_base_s: f.step_base_s * 0.8,
        step_per_seq_s: f.step_per_seq_s * 0.8,
        time_scale: 0.05,
        ..f
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_named_profile_exists_and_is_valid() {
        for name in SimProfile::names() {
            let p = SimProfile::by_name(name).expect("listed profile exists");
            assert_eq!(&p.name, name);
            p.validate().expect("built-in profile is valid");
        }
        assert_eq!(SimProfile::by_name("nope"), None);
    }

    #[test]
    fn founding_hits_the_long_context_ttft_points() {
        let p = SimProfile::by_name("founding").unwrap();
        let ttft = |n| p.prefill_fixed_s + p.prefill_compute_s(n);
        assert!((ttft(10_000) - 2.6).abs() < 0.05, "{}", ttft(10_000));
        assert!((ttft(100_000) - 15.0).abs() < 0.1, "{}", ttft(100_000));
        // C=1, 1000 in / 500 out: 125 chunks, 124 steps between first and last.
        let inv_tpot = 499.0 / (124.0 * p.step_s(1));
        assert!((inv_tpot - 73.5).abs() < 0.5, "{inv_tpot}");
    }

    #[test]
    fn fast_is_founding_twenty_times_faster() {
        let f = SimProfile::by_name("founding").unwrap();
        let fast = SimProfile::by_name("fast").unwrap();
        assert_eq!(fast.scaled(1.0), Duration::from_millis(50));
        assert_eq!(
            SimProfile {
                name: f.name.clone(),
                time_scale: 1.0,
                ..fast
            },
            f
        );
    }

    #[test]
    fn fast_nospec_decodes_one_token_per_shorter_step() {
        let fast = SimProfile::by_name("fast").unwrap();
        let p = SimProfile::by_name("fast-nospec").unwrap();
        assert_eq!((p.tokens_per_step, p.time_scale), (1, fast.time_scale));
        assert!((p.step_s(1) - 0.8 * fast.step_s(1)).abs() < 1e-12);
        assert_eq!(p.prefill_compute_s(10_000), fast.prefill_compute_s(10_000));
        // Per-request decode: 1 token per 43.8 ms step.
        assert!(
            (1.0 / p.step_s(1) - 22.9).abs() < 0.1,
            "{}",
            1.0 / p.step_s(1)
        );
    }

    #[test]
    fn exact_has_free_prefill_and_flat_steps() {
        let p = SimProfile::by_name("exact").unwrap();
        assert_eq!(p.scaled(p.prefill_compute_s(100_000)), Duration::ZERO);
        assert_eq!(p.step_s(1), p.step_s(500));
    }

    #[test]
    fn validate_names_the_bad_field() {
        let mut p = SimProfile::by_name("exact").unwrap();
        p.max_batch = 0;
        assert_eq!(p.validate().unwrap_err().field, "max_batch");
        let mut p = SimProfile::by_name("exact").unwrap();
        p.time_scale = f64::NAN;
        assert_eq!(p.validate().unwrap_err().field, "time_scale");
        let mut p = SimProfile::by_name("exact").unwrap();
        p.prefill_tokens_per_s = 0.0;
        assert_eq!(p.validate().unwrap_err().field, "prefill_tokens_per_s");
        let mut p = SimProfile::by_name("exact").unwrap();
        p.prefix_cache_block = 0;
        assert_eq!(p.validate().unwrap_err().field, "prefix_cache_block");
    }
}
