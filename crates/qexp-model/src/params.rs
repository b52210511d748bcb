//! The model's parameters and its equations (docs/model.md "The model").

use serde::{Deserialize, Serialize};

/// The coefficients of the deployment model, each with a physical meaning.
///
/// - prefill of `L` prompt tokens: `prefill_fixed_s` of latency that holds no
///   batch slot, then `prefill_s_per_token·L + prefill_s_per_token2·L²` of
///   compute, one prefill at a time (the `L²` coefficient is `c·f` of
///   docs/model.md: attention's quadratic cost times the share of layers
///   with full attention);
/// - a decode step with `B` sequences decoding and `K` tokens of context in
///   the batch: `step_base_s + step_per_seq_s·(B−1) + step_per_context_token_s·K`;
/// - each step emits `tokens_per_step` tokens (speculative decoding: the
///   accepted draft tokens plus one);
/// - at most `max_batch` sequences hold a slot (prefilling or decoding); the
///   rest queue, first come first served. `None`: no limit was reached;
/// - on the separate schedule at most `prefill_units` prompts prefill at
///   once (1: one at a time; `None`: no limit);
/// - `schedule` says how prefill and decode share the engine ([`Schedule`]).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Params {
    /// Fixed latency before the first token, seconds (holds no slot).
    pub prefill_fixed_s: f64,
    /// Prefill compute per prompt token, seconds.
    pub prefill_s_per_token: f64,
    /// Prefill compute per squared prompt token (`c·f`), seconds.
    pub prefill_s_per_token2: f64,
    /// Prefill compute per image token (the vision encoder), seconds, on
    /// top of what every prompt token costs: image tokens count in the
    /// prompt's length `L` too. 0 in files written before it existed, and
    /// for runs that sent no images.
    #[serde(default)]
    pub prefill_s_per_image_token: f64,
    /// Decode step with one sequence and no context, seconds.
    pub step_base_s: f64,
    /// Decode step time added per extra decoding sequence, seconds.
    pub step_per_seq_s: f64,
    /// Decode step time added per token of context in the batch, seconds.
    pub step_per_context_token_s: f64,
    /// Tokens emitted per decode step (1 without speculative decoding).
    pub tokens_per_step: f64,
    /// Sequences admitted at once; `None` when no run reached a limit.
    pub max_batch: Option<u32>,
    /// How prefill and decode share the engine; absent in files written
    /// before it existed, which were all [`Schedule::Separate`].
    #[serde(default)]
    pub schedule: Schedule,
    /// Mixed schedule: how long an idle engine waits, after the prompt that
    /// woke it, before its step starts; prompts ready by then share the
    /// step. 0: the step starts at once with that prompt alone, and those
    /// arriving with it wait for the next. Absent in files written before
    /// it existed, which meant [`crate::INTAKE_S`].
    #[serde(default = "default_intake")]
    pub intake_s: f64,
    /// Separate schedule: how many prompts are prefilled at once, each at
    /// the full prefill rate; the rest wait, first come first served. 1:
    /// prefills wait for each other; None: they never do (each runs beside
    /// the others). Absent in files written before it existed, which meant 1.
    /// The mixed schedule prefills in the step and ignores it.
    #[serde(default = "one_unit")]
    pub prefill_units: Option<u32>,
}

fn default_intake() -> f64 {
    crate::INTAKE_S
}

fn one_unit() -> Option<u32> {
    Some(1)
}

/// How a server schedules prefill against decode (docs/model.md "Schedules").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Schedule {
    /// Prefills run one at a time on a unit of their own, beside the decode
    /// steps and never stalling them; each sequence steps on its own clock.
    #[default]
    Separate,
    /// Continuous batching with prefill in the step (Orca, Yu et al., OSDI
    /// 2022; llama.cpp's server, vLLM V1): every engine step carries all
    /// the decoding sequences and every prompt waiting for prefill, and
    /// lasts the decode step plus the prefill compute of those prompts;
    /// a prompt's first chunk leaves at the end of the step that prefilled it.
    Mixed,
}

impl Schedule {
    /// Every schedule, in the order the fit tries them.
    pub const ALL: [Schedule; 2] = [Schedule::Separate, Schedule::Mixed];

    /// Its name in the model file and in output.
    pub fn name(self) -> &'static str {
        match self {
            Schedule::Separate => "separate",
            Schedule::Mixed => "mixed",
        }
    }

    /// The schedule called `name` ([`Schedule::name`]).
    pub fn by_name(name: &str) -> Option<Schedule> {
        Schedule::ALL.into_iter().find(|s| s.name() == name)
    }

    /// How it runs, in a few words.
    pub fn meaning(self) -> &'static str {
        match self {
            Schedule::Separate => "prefills one at a time, beside decode, never stalling it",
            Schedule::Mixed => "prompts prefilled in the decode step, which waits for them",
        }
    }
}

impl std::fmt::Display for Schedule {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl Params {
    /// Prefill compute for `l` prompt tokens (the part that holds a slot), seconds.
    pub fn prefill_compute_s(&self, l: f64) -> f64 {
        self.prefill_s_per_token * l + self.prefill_s_per_token2 * l * l
    }

    /// Prefill compute for `i` image tokens beyond their share of the
    /// prompt's length, seconds.
    pub fn image_compute_s(&self, i: f64) -> f64 {
        self.prefill_s_per_image_token * i
    }

    /// TTFT of a request alone on the server with `l` prompt tokens, seconds.
    pub fn ttft_alone_s(&self, l: f64) -> f64 {
        self.prefill_fixed_s + self.prefill_compute_s(l)
    }

    /// One decode step with `decoding` sequences and `context` tokens in the batch, seconds.
    pub fn step_s(&self, decoding: f64, context: f64) -> f64 {
        self.step_base_s
            + self.step_per_seq_s * (decoding - 1.0).max(0.0)
            + self.step_per_context_token_s * context
    }

    /// Streamed chunks for `output` tokens: one per step, the first with the prefill.
    pub fn chunks(&self, output: f64) -> f64 {
        (output / self.tokens_per_step.max(1e-9)).ceil().max(1.0)
    }

    /// Every value finite and in range (what the simulator and predictions need).
    pub fn check(&self) -> Result<(), &'static str> {
        let fields = [
            ("prefill_fixed_s", self.prefill_fixed_s),
            ("prefill_s_per_token", self.prefill_s_per_token),
            ("prefill_s_per_token2", self.prefill_s_per_token2),
            ("prefill_s_per_image_token", self.prefill_s_per_image_token),
            ("step_base_s", self.step_base_s),
            ("step_per_seq_s", self.step_per_seq_s),
            ("step_per_context_token_s", self.step_per_context_token_s),
            ("intake_s", self.intake_s),
        ];
        for (name, v) in fields {
            if !(v.is_finite() && v >= 0.0) {
                return Err(name);
            }
        }
        if !(self.tokens_per_step.is_finite() && self.tokens_per_step >= 1.0) {
            return Err("tokens_per_step");
        }
        if self.max_batch == Some(0) {
            return Err("max_batch");
        }
        if self.prefill_units == Some(0) {
            return Err("prefill_units");
        }
        Ok(())
    }
}

/// One coefficient of [`Params`], for tables, intervals and warnings.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Coef {
    /// `a`: fixed latency.
    PrefillFixed,
    /// `b`: prefill per token.
    PrefillPerToken,
    /// `c·f`: prefill per squared token.
    PrefillPerToken2,
    /// `e`: prefill per image token.
    PrefillPerImageToken,
    /// `d0`: step base.
    StepBase,
    /// `d1`: step per extra sequence.
    StepPerSeq,
    /// `d2`: step per context token.
    StepPerContextToken,
    /// `s`: tokens per step.
    TokensPerStep,
    /// `N`: batch limit.
    MaxBatch,
}

impl Coef {
    /// Every coefficient, in table order.
    pub const ALL: [Coef; 9] = [
        Coef::PrefillFixed,
        Coef::PrefillPerToken,
        Coef::PrefillPerToken2,
        Coef::PrefillPerImageToken,
        Coef::StepBase,
        Coef::StepPerSeq,
        Coef::StepPerContextToken,
        Coef::TokensPerStep,
        Coef::MaxBatch,
    ];

    /// The symbol used in docs/model.md.
    pub fn symbol(self) -> &'static str {
        match self {
            Coef::PrefillFixed => "a",
            Coef::PrefillPerToken => "b",
            Coef::PrefillPerToken2 => "c·f",
            Coef::PrefillPerImageToken => "e",
            Coef::StepBase => "d0",
            Coef::StepPerSeq => "d1",
            Coef::StepPerContextToken => "d2",
            Coef::TokensPerStep => "s",
            Coef::MaxBatch => "N",
        }
    }

    /// The field name in [`Params`] and in `--set NAME=VALUE`.
    pub fn name(self) -> &'static str {
        match self {
            Coef::PrefillFixed => "prefill_fixed_s",
            Coef::PrefillPerToken => "prefill_s_per_token",
            Coef::PrefillPerToken2 => "prefill_s_per_token2",
            Coef::PrefillPerImageToken => "prefill_s_per_image_token",
            Coef::StepBase => "step_base_s",
            Coef::StepPerSeq => "step_per_seq_s",
            Coef::StepPerContextToken => "step_per_context_token_s",
            Coef::TokensPerStep => "tokens_per_step",
            Coef::MaxBatch => "max_batch",
        }
    }

    /// What it means, in a few words.
    pub fn meaning(self) -> &'static str {
        match self {
            Coef::PrefillFixed => "fixed latency before prefill",
            Coef::PrefillPerToken => "prefill compute per prompt token",
            Coef::PrefillPerToken2 => "prefill compute per squared prompt token",
            Coef::PrefillPerImageToken => "prefill compute per image token",
            Coef::StepBase => "decode step, one sequence",
            Coef::StepPerSeq => "decode step per extra sequence",
            Coef::StepPerContextToken => "decode step per context token in the batch",
            Coef::TokensPerStep => "tokens per decode step",
            Coef::MaxBatch => "sequences admitted at once",
        }
    }

    /// The coefficient called `name` ([`Coef::name`]).
    pub fn by_name(name: &str) -> Option<Coef> {
        Coef::ALL.into_iter().find(|c| c.name() == name)
    }

    /// Its value in `p` (`max_batch`: None when unlimited).
    pub fn get(self, p: &Params) -> Option<f64> {
        Some(match self {
            Coef::PrefillFixed => p.prefill_fixed_s,
            Coef::PrefillPerToken => p.prefill_s_per_token,
            Coef::PrefillPerToken2 => p.prefill_s_per_token2,
            Coef::PrefillPerImageToken => p.prefill_s_per_image_token,
            Coef::StepBase => p.step_base_s,
            Coef::StepPerSeq => p.step_per_seq_s,
            Coef::StepPerContextToken => p.step_per_context_token_s,
            Coef::TokensPerStep => p.tokens_per_step,
            Coef::MaxBatch => return p.max_batch.map(f64::from),
        })
    }

    /// Sets its value in `p` (`max_batch`: rounded; 0 or less = unlimited).
    pub fn set(self, p: &mut Params, v: f64) {
        match self {
            Coef::PrefillFixed => p.prefill_fixed_s = v,
            Coef::PrefillPerToken => p.prefill_s_per_token = v,
            Coef::PrefillPerToken2 => p.prefill_s_per_token2 = v,
            Coef::PrefillPerImageToken => p.prefill_s_per_image_token = v,
            Coef::StepBase => p.step_base_s = v,
            Coef::StepPerSeq => p.step_per_seq_s = v,
            Coef::StepPerContextToken => p.step_per_context_token_s = v,
            Coef::TokensPerStep => p.tokens_per_step = v,
            Coef::MaxBatch => {
                p.max_batch = (v >= 1.0 && v.is_finite()).then(|| v.round().min(1e9) as u32)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p() -> Params {
        Params {
            prefill_fixed_s: 0.1,
            prefill_s_per_token: 1e-4,
            prefill_s_per_token2: 1e-9,
            prefill_s_per_image_token: 0.0,
            step_base_s: 0.01,
            step_per_seq_s: 0.002,
            step_per_context_token_s: 1e-7,
            tokens_per_step: 4.0,
            max_batch: Some(8),
            schedule: Schedule::Separate,
            intake_s: crate::INTAKE_S,
            prefill_units: Some(1),
        }
    }

    #[test]
    fn equations_add_up() {
        let p = p();
        assert!((p.ttft_alone_s(1000.0) - (0.1 + 0.1 + 0.001)).abs() < 1e-12);
        assert!((p.step_s(3.0, 10_000.0) - (0.01 + 0.004 + 0.001)).abs() < 1e-12);
        assert_eq!(p.step_s(1.0, 0.0), 0.01);
        assert_eq!(p.chunks(500.0), 125.0);
        assert_eq!(p.chunks(501.0), 126.0);
    }

    #[test]
    fn coefficients_round_trip_by_name() {
        let mut q = p();
        for c in Coef::ALL {
            assert_eq!(Coef::by_name(c.name()), Some(c));
            let v = c.get(&q).unwrap();
            c.set(&mut q, v * 2.0);
            assert_eq!(c.get(&q), Some(v * 2.0));
        }
        Coef::MaxBatch.set(&mut q, 0.0);
        assert_eq!(q.max_batch, None);
        assert_eq!(q.check(), Ok(()));
        q.step_base_s = f64::NAN;
        assert_eq!(q.check(), Err("step_base_s"));
    }

    #[test]
    fn a_file_without_a_schedule_is_separate() {
        let mut v = serde_json::to_value(p()).unwrap();
        v.as_object_mut().unwrap().remove("schedule");
        let q: Params = serde_json::from_value(v).unwrap();
        assert_eq!(q.schedule, Schedule::Separate);
        let mixed = Params {
            schedule: Schedule::Mixed,
            ..p()
        };
        let text = serde_json::to_string(&mixed).unwrap();
        assert!(text.contains(r#""schedule":"mixed""#), "{text}");
        assert_eq!(serde_json::from_str::<Params>(&text).unwrap(), mixed);
    }
}
