//! `[workload.multi_turn]`: conversations of several turns, each turn's
//! request carrying the turns before it.

use serde::Deserialize;
use std::ops::Range;
use toml::Spanned;

use crate::error::Invalid;
use crate::workload::MIN_QUESTION_TOKENS;

/// `[workload.multi_turn]`: every session of a point is a conversation of
/// `turns` requests. Turn 1 is a prompt of the point's `input_tokens`; each
/// later turn resends the conversation so far (the user messages and the
/// answers actually received) plus a new user message of `user_tokens`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MultiTurn {
    /// Requests per session (T), at least 2.
    pub turns: Spanned<u32>,
    /// Tokens of each user message after the first (as a lone prompt, chat template included).
    pub user_tokens: Spanned<u32>,
    /// Seconds a session waits after an answer before sending its next turn.
    #[serde(default)]
    pub think_time_s: Option<Spanned<f64>>,
}

impl MultiTurn {
    /// Turns per session.
    pub fn turns(&self) -> u32 {
        *self.turns.get_ref()
    }

    /// The think time in seconds (0 when not given).
    pub fn think_time_s(&self) -> f64 {
        self.think_time_s.as_ref().map_or(0.0, |t| *t.get_ref())
    }

    /// (session, turn from 1) of the `measured`-th measured request of a
    /// point: a session's turns are consecutive request indices.
    pub fn place(&self, measured: u32) -> (u32, u32) {
        let t = self.turns().max(1);
        (measured / t, measured % t + 1)
    }

    /// The session's own keys and the API they need; what it excludes
    /// elsewhere in `[workload]` is checked where the whole workload is
    /// known (schema.rs).
    pub(crate) fn validate(&self, chat: bool) -> Result<(), Invalid> {
        let at = |span: Range<usize>, field: &str, msg: &str| -> Result<(), Invalid> {
            Err((
                span,
                Some(format!("workload.multi_turn.{field}")),
                msg.to_string(),
            ))
        };
        if self.turns() < 2 {
            return at(self.turns.span(), "turns", "must be at least 2");
        }
        if *self.user_tokens.get_ref() < 2 * MIN_QUESTION_TOKENS {
            return at(
                self.user_tokens.span(),
                "user_tokens",
                &format!(
                    "must be at least {}: a user message opens with a {}-token nonce",
                    2 * MIN_QUESTION_TOKENS,
                    MIN_QUESTION_TOKENS
                ),
            );
        }
        if let Some(t) = &self.think_time_s {
            if !(t.get_ref().is_finite() && *t.get_ref() >= 0.0) {
                return at(t.span(), "think_time_s", "must be 0 or more seconds");
            }
        }
        if !chat {
            return at(
                self.turns.span(),
                "turns",
                "a conversation is sent as chat messages: set target.api = \"chat\"",
            );
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sessions_turns_are_consecutive() {
        let m = MultiTurn {
            turns: Spanned::new(0..0, 3),
            user_tokens: Spanned::new(0..0, 50),
            think_time_s: None,
        };
        let places: Vec<(u32, u32)> = (0..7).map(|i| m.place(i)).collect();
        assert_eq!(
            places,
            [(0, 1), (0, 2), (0, 3), (1, 1), (1, 2), (1, 3), (2, 1)]
        );
        assert_eq!(m.think_time_s(), 0.0);
    }
}
