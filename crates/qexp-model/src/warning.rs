//! What the runs could not tell: each gap is a value whose message says
//! what to run next (STYLE.md, warnings are values).

use crate::params::Coef;
use serde::{Deserialize, Serialize};

/// A coefficient (or several) the observations cannot identify, or a
/// caveat about how it was identified.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum FitWarning {
    /// Every prefill point had one input length.
    OneInputLength {
        /// That length, tokens.
        tokens: f64,
    },
    /// Two input lengths: a line, no curvature.
    TwoInputLengths {
        /// The two lengths, tokens.
        tokens: [f64; 2],
    },
    /// No point ran one request at a time.
    NotAlone {
        /// The lowest concurrency seen.
        concurrency: u32,
    },
    /// A term fitted negative and was set to 0.
    NegativeTerm {
        /// The coefficient.
        coef: Coef,
        /// The negative value fitted.
        value: f64,
    },
    /// Every point decoded about one batch size.
    OneBatchSize {
        /// The mean batch, sequences.
        batch: f64,
    },
    /// The context per decoding sequence did not vary.
    OneContext,
    /// No TTFT where prompts met other requests, so no schedule.
    ScheduleUnknown,
    /// Every point ran at one concurrency above 1: whether prefills queue
    /// does not show.
    OneConcurrency {
        /// That concurrency.
        concurrency: u32,
    },
    /// No point reached a batch limit.
    NoBatchLimit {
        /// The highest concurrency run.
        concurrency: u32,
    },
    /// No chunk counts, so no tokens per step.
    NoChunks,
    /// No per-request decode rates.
    NoDecode,
    /// The 90% interval reaches 0 or below.
    IncludesZero {
        /// The coefficient.
        coef: Coef,
    },
    /// One trial only: no resampled intervals.
    OneTrial,
    /// The decode points could not separate a step term from the others.
    DecodeUnresolved {
        /// The term, left unknown (0 in the model).
        coef: Coef,
        /// The decode observations the regression had.
        points: usize,
    },
    /// Prompts carried images, but the prefill points cannot tell the
    /// image tokens' own cost from the per-token one: one image token
    /// count (it is in `a`), or one text length (it is in `b`).
    ImagesNotSeparated {
        /// The fewest and most image tokens per prompt.
        image_tokens: [f64; 2],
        /// The distinct text lengths (prompt tokens less image tokens).
        text_lengths: usize,
    },
    /// Trials to resample, but no refit on them succeeded (or none was asked).
    NoRefits {
        /// The refits asked for.
        asked: usize,
    },
}

impl FitWarning {
    /// The coefficients this warning says are unknown (set to 0 or none in
    /// the model, not guessed).
    pub fn unknown(&self) -> Vec<Coef> {
        use Coef::*;
        match self {
            FitWarning::OneInputLength { .. } => vec![PrefillPerToken, PrefillPerToken2],
            FitWarning::TwoInputLengths { .. } => vec![PrefillPerToken2],
            FitWarning::OneBatchSize { .. } => vec![StepPerSeq],
            FitWarning::OneContext => vec![StepPerContextToken],
            FitWarning::NoBatchLimit { .. } => vec![MaxBatch],
            FitWarning::NoChunks => vec![TokensPerStep],
            FitWarning::NoDecode => vec![StepBase, StepPerSeq, StepPerContextToken],
            FitWarning::DecodeUnresolved { coef, .. } => vec![*coef],
            FitWarning::ImagesNotSeparated { .. } => vec![PrefillPerImageToken],
            FitWarning::NotAlone { .. }
            | FitWarning::ScheduleUnknown
            | FitWarning::OneConcurrency { .. }
            | FitWarning::NegativeTerm { .. }
            | FitWarning::IncludesZero { .. }
            | FitWarning::OneTrial
            | FitWarning::NoRefits { .. } => Vec::new(),
        }
    }
}

impl std::fmt::Display for FitWarning {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            FitWarning::OneInputLength { tokens } => write!(
                f,
                "all points had one input length ({tokens:.0} tokens): the L and L² prefill terms are unknown (a holds the whole TTFT at that length); run two lengths ≥ 8K apart"
            ),
            FitWarning::TwoInputLengths { tokens: [x, y] } => write!(
                f,
                "two input lengths only ({x:.0} and {y:.0} tokens): the L² prefill term is unknown; run a third length, ≥ 8K from the others"
            ),
            FitWarning::NotAlone { concurrency } => write!(
                f,
                "no point ran one request at a time (lowest concurrency {concurrency}): the prefill terms absorb some queueing; add concurrency 1"
            ),
            FitWarning::NegativeTerm { coef, value } => write!(
                f,
                "{} ({}) fitted negative ({value:.3e}), which is not physical: set to 0, the runs do not support the term",
                coef.symbol(),
                coef.meaning()
            ),
            FitWarning::OneBatchSize { batch } => write!(
                f,
                "every point decoded about one batch size ({batch:.1} sequences): d1, the step cost per extra sequence, is unknown; sweep concurrency"
            ),
            FitWarning::OneContext => write!(
                f,
                "the context per decoding sequence did not vary (one input and output length): d2, the step cost per context token, is unknown; sweep input length"
            ),
            FitWarning::ScheduleUnknown => write!(
                f,
                "no point has a TTFT where prompts meet other requests (concurrency above 1, or a rate, with its request count): the schedule is unknown, fitted as separate; run two or more concurrencies"
            ),
            FitWarning::OneConcurrency { concurrency } => write!(
                f,
                "every point ran at one concurrency ({concurrency}): whether prefills wait for each other cannot be told from how TTFT grows with load, fitted as queued (one at a time) on the separate schedule; run two or more concurrencies, one of them 1"
            ),
            FitWarning::NoBatchLimit { concurrency } => write!(
                f,
                "no point reached a batch limit (highest concurrency {concurrency}): N is unknown, at least {concurrency}; predictions above it assume no limit"
            ),
            FitWarning::NoChunks => write!(f, "no chunk counts: tokens per step are unknown, taken as 1"),
            FitWarning::NoDecode => write!(
                f,
                "no per-request decode rate at any point: the decode step is unknown; run with output tokens ≥ 2"
            ),
            FitWarning::IncludesZero { coef } => write!(
                f,
                "the 90% interval of {} ({}) reaches 0: these runs cannot tell the term from nothing",
                coef.symbol(),
                coef.meaning()
            ),
            FitWarning::DecodeUnresolved { coef, points } => write!(
                f,
                "the decode observations ({points} usable) cannot separate {} ({}) from the other step terms: it is unknown, 0 in the model; run another concurrency or input length",
                coef.symbol(),
                coef.meaning()
            ),
            FitWarning::OneTrial => write!(
                f,
                "one trial per point: no trials to resample; intervals are the regression's alone, predictions' from the residuals"
            ),
            FitWarning::NoRefits { asked } => write!(
                f,
                "no refit on resampled trials succeeded ({asked} asked): intervals are the regression's alone, predictions' from the residuals"
            ),
            FitWarning::ImagesNotSeparated {
                image_tokens: [lo, hi],
                text_lengths,
            } if lo == hi => write!(
                f,
                "every prompt at concurrency 1 carried {lo:.0} image tokens: their own prefill cost (e) is unknown, held in a; send two image sizes or counts"
            ),
            FitWarning::ImagesNotSeparated { text_lengths, .. } => write!(
                f,
                "the image tokens varied at {text_lengths} text length: their own prefill cost (e) cannot be told from the per-token one, which holds it; run a second input length with the same images"
            ),
        }
    }
}
