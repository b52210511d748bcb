//! How far the server's count of a prompt may be from its planned length
//! before qexp calls the prompt wrong: `[workload] input_tolerance` of the
//! planned length, but never less than `input_tolerance_tokens`. A share
//! alone means nothing at short lengths (1% of 128 tokens is 1.28 tokens,
//! so a prompt one token long passes and two tokens long fails, though both
//! are the same slip of a tokenizer); a token count alone means nothing at
//! long ones.

use serde::Serialize;
use std::fmt;

/// Default `input_tolerance`: a share of the planned prompt length.
pub const DEFAULT_INPUT_TOLERANCE: f64 = 0.01;
/// Default `input_tolerance_tokens`: the least difference, in tokens, ever allowed.
pub const DEFAULT_INPUT_TOLERANCE_TOKENS: u32 = 2;

/// The allowed difference between planned and server-counted prompt tokens.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct InputTolerance {
    /// Share of the planned length (`input_tolerance`).
    pub share: f64,
    /// Tokens allowed however short the prompt (`input_tolerance_tokens`).
    pub tokens: u32,
}

impl Default for InputTolerance {
    fn default() -> Self {
        InputTolerance {
            share: DEFAULT_INPUT_TOLERANCE,
            tokens: DEFAULT_INPUT_TOLERANCE_TOKENS,
        }
    }
}

impl InputTolerance {
    /// Tokens a prompt planned at `planned` tokens may be off by.
    pub fn allowed(&self, planned: f64) -> f64 {
        (self.share * planned).max(f64::from(self.tokens))
    }

    /// True when `counted` is further from `planned` than allowed.
    pub fn exceeded(&self, planned: f64, counted: f64) -> bool {
        (counted - planned).abs() > self.allowed(planned)
    }
}

/// "1% or 2 tokens, whichever is more".
impl fmt::Display for InputTolerance {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let pct = self.share * 100.0;
        // 1%, 0.5%, 2.25%: no trailing zeros.
        let pct = format!("{pct:.2}");
        let pct = pct.trim_end_matches('0').trim_end_matches('.');
        match (self.tokens, self.share > 0.0) {
            (0, _) => write!(f, "{pct}%"),
            (t, false) => write!(f, "{t} token{}", if t == 1 { "" } else { "s" }),
            (t, true) => write!(
                f,
                "{pct}% or {t} token{}, whichever is more",
                if t == 1 { "" } else { "s" }
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_prompts_are_allowed_the_token_floor_and_long_ones_the_share() {
        let t = InputTolerance::default();
        // 1% of 128 is 1.28: the floor of 2 tokens decides.
        assert_eq!(t.allowed(128.0), 2.0);
        assert!(!t.exceeded(128.0, 130.0));
        assert!(t.exceeded(128.0, 131.0));
        assert!(!t.exceeded(64.0, 62.0));
        assert!(t.exceeded(64.0, 61.0));
        // 1% of 16384 is 163.84 tokens: the share decides.
        assert!(!t.exceeded(16384.0, 16547.0));
        assert!(t.exceeded(16384.0, 16548.0));
    }

    #[test]
    fn a_share_alone_flags_a_short_prompt_two_tokens_off() {
        let share_only = InputTolerance {
            share: 0.01,
            tokens: 0,
        };
        assert!(share_only.exceeded(128.0, 130.0));
        assert!(!share_only.exceeded(128.0, 129.0));
    }

    #[test]
    fn says_what_it_allows() {
        assert_eq!(
            InputTolerance::default().to_string(),
            "1% or 2 tokens, whichever is more"
        );
        let t = |share, tokens| InputTolerance { share, tokens }.to_string();
        assert_eq!(t(0.005, 1), "0.5% or 1 token, whichever is more");
        assert_eq!(t(0.025, 0), "2.5%");
        assert_eq!(t(0.0, 3), "3 tokens");
    }
}
