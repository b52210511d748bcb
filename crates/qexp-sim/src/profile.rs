//! Named timing profiles and their calibration.

use crate::faults::FaultPlan;

/// Timing and capacity parameters of a simulated inference server.
///
/// Time model, for a request of `n` prompt tokens arriving at `t0`:
/// 1. `prefill_fixed_s` of pure latency (request handling, scheduling): it runs
///    concurrently for all requests and holds no batch slot;
/// 2. wait for one of `max_batch` slots (first come first served, except
///    that a request with a lower `priority` body field goes before those
///    of a higher one, as vLLM's priority scheduling does) — this is the queue that makes TTFT
///    climb once concurrency exceeds the batch;
/// 3. `n / prefill_tokens_per_s + prefill_s_per_token2 · n²` of prefill
///    compute on one of `prefill_units` (one by default: serialized
///    server-wide) while holding the slot;
///    The part of the prompt found in the prefix cache (whole blocks from the
///    start, see `prefix_cache.rs`) is not prefilled;
/// 4. the first chunk (`tokens_per_step` tokens) is sent at once (TTFT), then
///    one chunk per decode step of `step_base_s + step_per_seq_s * (k - 1) +
///    step_per_context_token_s * K` where `k` is the number of sequences
///    decoding at that moment and `K` their context (prompt plus tokens
///    generated so far).
///
/// That is the [`Schedule::Separate`](qexp_model::Schedule) schedule. With
/// `schedule` [`Mixed`](qexp_model::Schedule::Mixed), steps 3 and 4 are one
/// engine loop instead: each step carries every decoding
/// sequence and every admitted prompt and lasts the decode step plus those
/// prompts' prefill compute; a prompt's first chunk leaves at its end.
///
/// These are the equations of qexp-model's [`Params`](qexp_model::Params)
/// (docs/model.md), and the schedule is qexp-model's
/// [`engine`](qexp_model::engine), the one its replay runs:
/// [`SimProfile::from_params`] serves a fitted model.
///
/// Every duration is multiplied by `time_scale`, except the mixed
/// schedule's intake window (the engine loop's own wait).
///
/// What the answers say is drawn from the prompt (the crate's docs); the
/// last three fields make a seeded share of them wrong on purpose, each
/// request decided from its prompt, so that every simulator treats the same
/// prompt the same way.
#[derive(Debug, Clone, PartialEq)]
pub struct SimProfile {
    /// Profile name, as given to [`SimProfile::by_name`].
    pub name: String,
    /// Fixed latency before the first token, seconds (concurrent, holds no slot).
    pub prefill_fixed_s: f64,
    /// Prefill rate in prompt tokens per second; prefills are serialized. `f64::INFINITY` = free.
    pub prefill_tokens_per_s: f64,
    /// Prefill compute per squared prompt token, seconds (attention's quadratic part; 0 = none).
    pub prefill_s_per_token2: f64,
    /// Decode step time with one sequence decoding, seconds.
    pub step_base_s: f64,
    /// Decode step time added per extra decoding sequence, seconds.
    pub step_per_seq_s: f64,
    /// Decode step time added per token of context in the batch, seconds.
    pub step_per_context_token_s: f64,
    /// Cap on sequences admitted at once (prefilling or decoding); the rest queue.
    pub max_batch: usize,
    /// Tokens emitted per decode step (speculative decoding); one step = one SSE chunk.
    pub tokens_per_step: u32,
    /// How prefill and decode share the engine.
    pub schedule: qexp_model::Schedule,
    /// Mixed schedule: how long an idle engine waits for more prompts after
    /// the one that woke it before its step starts (0: it starts at once).
    pub intake_s: f64,
    /// Separate schedule: prompts prefilled at once, each at the full rate
    /// (1: one at a time; None: no limit, prefills never wait for each other).
    pub prefill_units: Option<usize>,
    /// `prompt_tokens + max_tokens` above this is rejected with HTTP 400.
    pub max_context: u32,
    /// Multiplier applied to every simulated duration but the intake window (1.0 = real time, 0.05 = 20x faster).
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
    /// Share of answers (0 to 1) that write a few words and then repeat
    /// one word (`lambda`) to their last token: a repetition loop for any
    /// `max_tokens` of 32 or more (0 = none).
    pub loop_share: f64,
    /// Share of arithmetic items (`What is <int> <op> <int>?` in the
    /// prompt, op `+`, `-` or `*`; the last one counts) answered off by one
    /// (the result plus 1) instead of right (0 = none). The answer's first
    /// word is the number.
    pub wrong_share: f64,
    /// Added to `wrong_share` per sequence in the batch beyond the first:
    /// the batch is the sequences holding a slot (prefilling or decoding),
    /// this one included, when the request was admitted; the sum is clamped
    /// to [0, 1]. The same prompt can be right alone and wrong at 64 users.
    pub wrong_share_per_seq: f64,
    /// Share of answers with a form (a tool call when the request sends
    /// `tools`, JSON when it sends a `response_format`) that are malformed:
    /// the JSON's last character is left out (0 = none).
    pub malformed_share: f64,
    /// Added to `malformed_share` per sequence in the batch beyond the
    /// first, as `wrong_share_per_seq` is to `wrong_share`: a parse rate
    /// that falls with load.
    pub malformed_share_per_seq: f64,
    /// Pixels per side of an image patch: each image in a chat prompt is
    /// `⌈w/patch⌉ × ⌈h/patch⌉` prompt tokens (28: Qwen2-VL's 14-pixel
    /// patches merged 2 × 2).
    pub image_patch_px: u32,
    /// Prefill compute per image token, seconds (the vision encoder), on top
    /// of the prefill every prompt token costs.
    pub image_token_s: f64,
    /// Images a prompt may carry (None: any number); more are refused with
    /// HTTP 400, and `/v1/models` reports it as `limit_mm_per_prompt`.
    pub max_images: Option<u32>,
    /// Share of answers (0 to 1) the model ends before `max_tokens`, as a
    /// real model answering real prompts does, where the request neither
    /// sets `ignore_eos` nor asks for a tool call or JSON (which the
    /// simulator pads to the length): each at a length drawn from its prompt, uniform
    /// from 1 token to `max_tokens − 1`, with `finish_reason` `"stop"`
    /// (0 = none: every answer runs to `max_tokens`).
    pub stop_share: f64,
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
    "fast-broken-spec",
    "fast-reasoning",
    "exact",
    "exact-slow",
    "known",
    "known-mixed",
];

/// What each built-in profile is, in the order of [`NAMES`].
const ABOUT: &[&str] = &[
    "the fit of the founding tables (docs/model.md, The founding profile)",
    "founding at 20x speed",
    "fast without speculative decoding: a second deployment to diff against",
    "fast with a broken verifier: 6 tokens per step, not 4; every answer loops",
    "fast as a reasoning model that streams its thinking first",
    "fixed, exactly known timing, for tests",
    "exact with 10% longer decode steps: a known difference for qexp diff",
    "every model term known and non-zero: what qexp fit must recover",
    "known with prompts prefilled in the decode step (the mixed schedule)",
];
const _: () = assert!(NAMES.len() == ABOUT.len(), "one phrase per profile");

/// A profile name that names nothing, or a model file that cannot be served.
#[derive(Debug, thiserror::Error)]
pub enum LookupError {
    /// Not a built-in profile nor `fit=PATH`.
    #[error("unknown simulator profile `{0}`; known profiles: {names}, or fit=PATH (a `qexp fit` model file)", names = NAMES.join(", "))]
    Unknown(String),
    /// `fit=PATH` whose file cannot be read.
    #[error(transparent)]
    Model(#[from] qexp_model::ModelFileError),
}

impl SimProfile {
    /// The built-in profile called `name`, if there is one (see [`SimProfile::names`]).
    pub fn by_name(name: &str) -> Option<SimProfile> {
        match name {
            "founding" => Some(founding()?),
            "fast" => Some(SimProfile {
                name: "fast".to_owned(),
                time_scale: 0.05,
                ..founding()?
            }),
            "fast-nospec" => fast_nospec(),
            "fast-broken-spec" => fast_broken_spec(),
            // A reasoning model: each answer opens with 64 tokens of thinking.
            "fast-reasoning" => Some(SimProfile {
                name: "fast-reasoning".to_owned(),
                time_scale: 0.05,
                reasoning_tokens: 64,
                ..founding()?
            }),
            "exact" => Some(exact()),
            // `known` on the mixed schedule: prompts prefilled in the decode step.
            "known-mixed" => Some(SimProfile {
                name: "known-mixed".to_owned(),
                schedule: qexp_model::Schedule::Mixed,
                ..known()
            }),
            // `exact` with 10% longer decode steps (decode 91 instead of 100
            // tok/s): a second deployment whose difference `qexp diff` must find.
            "exact-slow" => Some(SimProfile {
                name: "exact-slow".to_owned(),
                step_base_s: 0.011,
                ..exact()
            }),
            "known" => Some(known()),
            _ => None,
        }
    }

    /// A built-in profile by name, or `fit=PATH`: the deployment a `qexp
    /// fit` model file describes (docs/model.md "Serving a model").
    pub fn lookup(spec: &str) -> Result<SimProfile, LookupError> {
        if let Some(path) = spec.strip_prefix("fit=") {
            let model = qexp_model::ModelFile::read(std::path::Path::new(path))?;
            let stem = std::path::Path::new(path)
                .file_stem()
                .map_or_else(|| "model".to_owned(), |s| s.to_string_lossy().into_owned());
            return Ok(SimProfile::from_params(
                &format!("fit-{stem}"),
                &model.params,
            ));
        }
        SimProfile::by_name(spec).ok_or_else(|| LookupError::Unknown(spec.to_owned()))
    }

    /// A profile serving a model's parameters in real time: the model's
    /// equations are the simulator's, term for term (an unknown batch
    /// limit becomes 4096 slots; tokens per step are rounded, at least 1).
    pub fn from_params(name: &str, p: &qexp_model::Params) -> SimProfile {
        SimProfile {
            name: name.to_owned(),
            prefill_fixed_s: p.prefill_fixed_s,
            prefill_tokens_per_s: if p.prefill_s_per_token > 0.0 {
                1.0 / p.prefill_s_per_token
            } else {
                f64::INFINITY
            },
            prefill_s_per_token2: p.prefill_s_per_token2,
            step_base_s: p.step_base_s,
            step_per_seq_s: p.step_per_seq_s,
            step_per_context_token_s: p.step_per_context_token_s,
            max_batch: p.max_batch.map_or(UNLIMITED_BATCH, |n| n as usize),
            tokens_per_step: p.tokens_per_step.round().clamp(1.0, 1024.0) as u32,
            schedule: p.schedule,
            intake_s: p.intake_s,
            prefill_units: p.prefill_units.map(|k| k as usize),
            image_token_s: p.prefill_s_per_image_token,
            // The serving surface (context, template, cache, no faults): `exact`'s.
            ..exact()
        }
    }

    /// The model parameters this profile's timing follows (time scale applied).
    pub fn params(&self) -> qexp_model::Params {
        let t = self.time_scale;
        qexp_model::Params {
            prefill_fixed_s: self.prefill_fixed_s * t,
            prefill_s_per_token: t / self.prefill_tokens_per_s,
            prefill_s_per_token2: self.prefill_s_per_token2 * t,
            prefill_s_per_image_token: self.image_token_s * t,
            step_base_s: self.step_base_s * t,
            step_per_seq_s: self.step_per_seq_s * t,
            step_per_context_token_s: self.step_per_context_token_s * t,
            tokens_per_step: f64::from(self.tokens_per_step),
            max_batch: u32::try_from(self.max_batch).ok(),
            schedule: self.schedule,
            // The engine loop's wait for more prompts is its own, not a
            // compute cost: a faster clock leaves it as it is (and `qexp
            // fit` holds it at the engine's).
            intake_s: self.intake_s,
            prefill_units: self.prefill_units.and_then(|k| u32::try_from(k).ok()),
        }
    }

    /// Names of the built-in profiles.
    pub fn names() -> &'static [&'static str] {
        NAMES
    }

    /// What the built-in profile `name` is, in a phrase; `None` for a name
    /// that is not one.
    pub fn about(name: &str) -> Option<&'static str> {
        NAMES.iter().position(|n| *n == name).map(|i| ABOUT[i])
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
            ("prefill_s_per_token2", self.prefill_s_per_token2),
            ("step_per_context_token_s", self.step_per_context_token_s),
            ("intake_s", self.intake_s),
            ("image_token_s", self.image_token_s),
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
        if self.image_patch_px == 0 {
            return bad("image_patch_px", "must be >= 1");
        }
        if self.prefill_units == Some(0) {
            return bad("prefill_units", "must be >= 1 (None: no limit)");
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
        for (field, value) in [
            ("loop_share", self.loop_share),
            ("wrong_share", self.wrong_share),
            ("malformed_share", self.malformed_share),
            ("stop_share", self.stop_share),
        ] {
            if !(0.0..=1.0).contains(&value) {
                return bad(field, "must be between 0 and 1");
            }
        }
        if !self.malformed_share_per_seq.is_finite() {
            return bad("malformed_share_per_seq", "must be finite");
        }
        if !self.wrong_share_per_seq.is_finite() {
            return bad("wrong_share_per_seq", "must be finite");
        }
        Ok(())
    }

    /// The factor on every wall-clock span now: the drift so far and the
    /// jitter of the moment (1 without either).
    pub(crate) fn stretch(&self) -> f64 {
        let drift = if self.drift_per_s > 0.0 {
            let since = DRIFT_EPOCH.get_or_init(std::time::Instant::now);
            1.0 + self.drift_per_s * since.elapsed().as_secs_f64()
        } else {
            1.0
        };
        drift * self.faults.jitter.factor(self.time_scale)
    }

    /// Starts the drift clock (no-op without drift or when already started).
    pub fn start_drift(&self) {
        if self.drift_per_s > 0.0 {
            DRIFT_EPOCH.get_or_init(std::time::Instant::now);
        }
    }

    /// How chat requests' images become prompt tokens.
    pub(crate) fn vision(&self) -> crate::openai::Vision {
        crate::openai::Vision {
            per_message: self.chat_template_tokens,
            patch_px: self.image_patch_px,
            max_images: self.max_images,
        }
    }
}

/// The founding deployment as fitted (DESIGN.md: Qwen3.6-27B, SGLang, TP=2,
/// MTP): the parameters of `qexp fit --table
/// crates/qexp-model/data/founding.toml`, the founding tables as data with
/// their sources, stored in crates/qexp-model/data/founding.model.json (a
/// test keeps that file equal to a refit). Nothing is hand-tuned; what the
/// tables cannot tell is in the model file's warnings.
///
/// - Prefix cache: 256K tokens in blocks of 16 (vLLM's GPU default block),
///   about what two 48 GB cards leave for KV after a 27B model's weights; the
///   founding report does not give the figure (and the model has no cache).
fn founding() -> Option<SimProfile> {
    static FIT: std::sync::OnceLock<Option<qexp_model::Params>> = std::sync::OnceLock::new();
    let params = FIT.get_or_init(|| {
        qexp_model::ModelFile::parse(
            qexp_model::FOUNDING_MODEL,
            std::path::Path::new(qexp_model::FOUNDING_MODEL_PATH),
        )
        .ok()
        .map(|m| m.params)
    });
    Some(SimProfile {
        // The founding tables sent no images: the vision encoder is `exact`'s.
        image_token_s: exact().image_token_s,
        ..SimProfile::from_params("founding", params.as_ref()?)
    })
}

/// TTFT 50 ms, then 10 ms per token, one token per chunk: timing a test can check exactly.
fn exact() -> SimProfile {
    SimProfile {
        name: "exact".to_owned(),
        prefill_fixed_s: 0.05,
        prefill_tokens_per_s: f64::INFINITY,
        prefill_s_per_token2: 0.0,
        step_base_s: 0.01,
        step_per_seq_s: 0.0,
        step_per_context_token_s: 0.0,
        max_batch: 1024,
        tokens_per_step: 1,
        schedule: qexp_model::Schedule::Separate,
        intake_s: qexp_model::INTAKE_S,
        prefill_units: Some(1),
        max_context: 131_072,
        time_scale: 1.0,
        chat_template_tokens: 4,
        faults: FaultPlan::none(),
        prefix_cache_tokens: FOUNDING_CACHE_TOKENS,
        prefix_cache_block: 16,
        reasoning_tokens: 0,
        drift_per_s: 0.0,
        model: None,
        loop_share: 0.0,
        wrong_share: 0.0,
        wrong_share_per_seq: 0.0,
        malformed_share: 0.0,
        malformed_share_per_seq: 0.0,
        image_patch_px: 28,
        image_token_s: 0.000_2,
        max_images: None,
        stop_share: 0.0,
    }
}

/// Slots of a profile serving a model whose batch limit is unknown.
const UNLIMITED_BATCH: usize = 4096;

/// Prefix-cache capacity of the founding profile, tokens.
const FOUNDING_CACHE_TOKENS: u32 = 262_144;

/// `fast` with speculative decoding switched off: one token per step, each
/// step 20% shorter (no draft and verify work: an assumption, the founding
/// tables have no MTP-off run), so decode runs at about a quarter of the
/// founding rate per request, chunks carry one token and arrive more often.
/// A second deployment for `qexp diff` demos and tests whose direction is
/// known: throughput down, E2E up, inter-chunk gaps down.
fn fast_nospec() -> Option<SimProfile> {
    let f = founding()?;
    Some(SimProfile {
        name: "fast-nospec".to_owned(),
        tokens_per_step: 1,
        step_base_s: f.step_base_s * 0.8,
        step_per_seq_s: f.step_per_seq_s * 0.8,
        step_per_context_token_s: f.step_per_context_token_s * 0.8,
        time_scale: 0.05,
        ..f
    })
}

/// `fast` with a broken speculative verifier: it accepts every drafted
/// token, 6 per step of the same length where `fast` keeps 4, so decode runs
/// 1.5 times faster, and every answer is a repetition loop (`loop_share`
/// 1). Faster and wrong: the deployment an answer-health check must catch
/// where a throughput comparison alone would prefer it.
fn fast_broken_spec() -> Option<SimProfile> {
    Some(SimProfile {
        name: "fast-broken-spec".to_owned(),
        tokens_per_step: 6,
        time_scale: 0.05,
        loop_share: 1.0,
        ..founding()?
    })
}

/// A deployment whose every model term is known and non-zero, fast enough
/// for tests (a run of a 3 × 3 grid takes seconds): what `qexp fit` must
/// recover (crates/qexp/tests/suite/fit.rs). Prefill 0.1 s + 40 µs/token +
/// 4 ns/token², decode steps of 20 ms + 5 ms per extra sequence + 1 µs per
/// context token, 2 tokens per step, 3 slots. Steps are long enough that a
/// busy host's stalls of a few milliseconds stay small against them.
fn known() -> SimProfile {
    SimProfile {
        name: "known".to_owned(),
        prefill_fixed_s: 0.1,
        prefill_tokens_per_s: 25_000.0,
        prefill_s_per_token2: 4e-9,
        step_base_s: 0.02,
        step_per_seq_s: 0.005,
        step_per_context_token_s: 1e-6,
        max_batch: 3,
        tokens_per_step: 2,
        prefix_cache_tokens: 0,
        ..exact()
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
    fn founding_serves_the_fit_of_the_founding_tables() {
        let p = SimProfile::by_name("founding").unwrap();
        let m = qexp_model::ModelFile::parse(
            qexp_model::FOUNDING_MODEL,
            std::path::Path::new("founding.model.json"),
        )
        .unwrap();
        let mut want = m.params;
        want.tokens_per_step = want.tokens_per_step.round();
        want.prefill_s_per_image_token = p.image_token_s;
        assert_eq!(p.params(), want);
        // The fitted terms drive the simulator's own equations.
        let (a, b) = (p.prefill_fixed_s, p.params().prefill_compute_s(10_000.0));
        assert!((a + b - m.params.ttft_alone_s(10_000.0)).abs() < 1e-9);
        assert!((p.params().step_s(3.0, 5000.0) - m.params.step_s(3.0, 5000.0)).abs() < 1e-12);
    }

    #[test]
    fn a_model_file_is_served_term_for_term() {
        let dir = std::env::temp_dir().join(format!("qexp-sim-fit-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("m.json");
        std::fs::write(&path, qexp_model::FOUNDING_MODEL).unwrap();
        let p = SimProfile::lookup(&format!("fit={}", path.display())).unwrap();
        assert_eq!(p.name, "fit-m");
        // The founding model file predates images: its `e` is 0, where the
        // built-in profiles charge 0.2 ms per image token. Term for term
        // otherwise.
        let mut founding = SimProfile::by_name("founding").unwrap().params();
        assert!(founding.prefill_s_per_image_token > 0.0);
        founding.prefill_s_per_image_token = 0.0;
        assert_eq!(p.params(), founding);
        std::fs::write(&path, "{\"kind\": \"qexp-model\", \"schema_version\": 9}").unwrap();
        let e = SimProfile::lookup(&format!("fit={}", path.display())).unwrap_err();
        assert!(e.to_string().contains("schema_version 9"), "{e}");
        // A run's manifest given by mistake: named as what it is not.
        std::fs::write(&path, "{\"schema_version\": 2, \"run_id\": \"r\"}").unwrap();
        let e = SimProfile::lookup(&format!("fit={}", path.display())).unwrap_err();
        assert!(
            e.to_string()
                .contains("not a qexp model file (its kind is ``"),
            "{e}"
        );
        assert!(SimProfile::lookup("nope")
            .unwrap_err()
            .to_string()
            .contains("fit=PATH"));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn fast_is_founding_twenty_times_faster() {
        let f = SimProfile::by_name("founding").unwrap();
        let fast = SimProfile::by_name("fast").unwrap();
        assert_eq!(fast.time_scale, 0.05);
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
        for (b, k) in [(1.0, 1000.0), (8.0, 80_000.0)] {
            let step = |p: &SimProfile| p.params().step_s(b, k);
            assert!((step(&p) - 0.8 * step(&fast)).abs() < 1e-12);
        }
        let prefill = |p: &SimProfile| p.params().prefill_compute_s(10_000.0);
        assert_eq!(prefill(&p), prefill(&fast));
    }

    #[test]
    fn fast_broken_spec_decodes_more_per_step_and_loops() {
        let fast = SimProfile::by_name("fast").unwrap();
        let p = SimProfile::by_name("fast-broken-spec").unwrap();
        assert_eq!(fast.tokens_per_step, 4, "the founding fit");
        assert_eq!(p.tokens_per_step, 6);
        assert_eq!((p.loop_share, fast.loop_share), (1.0, 0.0));
        assert_eq!(
            SimProfile {
                name: fast.name.clone(),
                tokens_per_step: fast.tokens_per_step,
                loop_share: 0.0,
                ..p
            },
            fast
        );
    }

    #[test]
    fn exact_has_free_prefill_and_flat_steps() {
        let p = SimProfile::by_name("exact").unwrap();
        assert_eq!(p.params().prefill_compute_s(100_000.0), 0.0);
        let step = |b, k| p.params().step_s(b, k);
        assert_eq!(step(1.0, 0.0), step(500.0, 1_000_000.0));
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
        let mut p = SimProfile::by_name("exact").unwrap();
        p.loop_share = 1.0;
        p.wrong_share = 1.01;
        assert_eq!(p.validate().unwrap_err().field, "wrong_share");
        p.wrong_share = 0.0;
        p.loop_share = f64::NAN;
        assert_eq!(p.validate().unwrap_err().field, "loop_share");
        p.loop_share = 0.5;
        p.wrong_share_per_seq = f64::INFINITY;
        assert_eq!(p.validate().unwrap_err().field, "wrong_share_per_seq");
    }
}
