//! What a simulated model answers: pseudo-prose (`prose.rs`) drawn from a
//! seed hashed from the prompt's token ids, so that the same prompt gets the
//! same text from every simulator process and profile (two deployments of
//! the simulator are greedy-equivalent) and another prompt another text.
//!
//! The profile can make answers wrong on purpose, each request decided from
//! its seed: [`SimProfile::loop_share`] of them fall into a repetition loop,
//! and an arithmetic item (`What is 12 * -3?` in the prompt) is answered
//! off by one with the probability [`SimProfile::wrong_share`] and
//! [`SimProfile::wrong_share_per_seq`] set.

use crate::form::FormAnswer;
use crate::openai::Job;
use crate::prose::{mix, Prose};
use crate::SimProfile;

/// The phrase a looping answer repeats to its end, one token per repeat.
const LOOP_WORD: &str = "lambda";
/// A looping answer's prose words before the loop: this many at least ...
const LOOP_AFTER_MIN: u64 = 3;
/// ... and fewer than this many more.
const LOOP_AFTER_SPAN: u64 = 6;

/// Salts that make each decision of a request its own draw from its seed.
const SALT_REASONING: u64 = 0x7265_6173;
const SALT_LOOP: u64 = 0x6c6f_6f70;
const SALT_LOOP_AFTER: u64 = 0x6166_7465;
const SALT_WRONG: u64 = 0x7772_6f6e;
const SALT_MALFORMED: u64 = 0x6d61_6c66;
const SALT_STOP: u64 = 0x7374_6f70;
const SALT_STOP_AT: u64 = 0x7374_6174;

/// A uniform draw in [0, 1) from `seed` and `salt`.
fn share(seed: u64, salt: u64) -> f64 {
    (mix(seed ^ mix(salt)) >> 11) as f64 / (1u64 << 53) as f64
}

/// Where the model ends the answer to the prompt of `seed` before
/// `max_tokens`: for a share `stop_share` of prompts, at a length uniform
/// from 1 to `max_tokens − 1`; None for the others (and for `max_tokens`
/// under 2).
pub(crate) fn stop_length(seed: u64, max_tokens: u32, stop_share: f64) -> Option<u32> {
    if max_tokens < 2 || share(seed, SALT_STOP) >= stop_share {
        return None;
    }
    let n = 1 + mix(seed ^ SALT_STOP_AT) % u64::from(max_tokens - 1);
    u32::try_from(n).ok()
}

/// The profile's knobs that make answers wrong on purpose.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Knobs {
    /// [`SimProfile::loop_share`].
    pub(crate) loop_share: f64,
    /// [`SimProfile::wrong_share`].
    pub(crate) wrong_share: f64,
    /// [`SimProfile::wrong_share_per_seq`].
    pub(crate) wrong_share_per_seq: f64,
    /// [`SimProfile::malformed_share`].
    pub(crate) malformed_share: f64,
    /// [`SimProfile::malformed_share_per_seq`].
    pub(crate) malformed_share_per_seq: f64,
}

impl Knobs {
    /// The knobs of `profile`.
    pub(crate) fn of(profile: &SimProfile) -> Knobs {
        Knobs {
            loop_share: profile.loop_share,
            wrong_share: profile.wrong_share,
            wrong_share_per_seq: profile.wrong_share_per_seq,
            malformed_share: profile.malformed_share,
            malformed_share_per_seq: profile.malformed_share_per_seq,
        }
    }
}

/// One request's answer, decided when its first token is due.
#[derive(Debug, Clone)]
pub(crate) struct Answer {
    /// The reasoning before the answer.
    reasoning: Prose,
    /// The answer's prose.
    prose: Prose,
    /// Token index where the answer starts (the reasoning's length).
    start: u32,
    /// The answer's first word (`"42."`), if it answers an arithmetic item.
    lead: Option<String>,
    /// Prose words of the answer before it loops (None: it never does).
    loop_after: Option<u32>,
    /// The answer in the form the request asked for (a tool call, JSON), instead of prose.
    form: Option<FormAnswer>,
    /// The tool it calls, for a tool call.
    tool: Option<String>,
}

impl Answer {
    /// The answer to `job` under `knobs`, its first `start` tokens
    /// reasoning. Reads `job.batch`: call it once the engine has admitted
    /// the job.
    pub(crate) fn new(job: &Job, knobs: Knobs, start: u32) -> Answer {
        let seed = job.seed;
        let loops = share(seed, SALT_LOOP) < knobs.loop_share;
        let batch = job.batch.load(std::sync::atomic::Ordering::Relaxed).max(1);
        let wrong_p = knobs.wrong_share + knobs.wrong_share_per_seq * f64::from(batch - 1);
        let wrong = share(seed, SALT_WRONG) < wrong_p.clamp(0.0, 1.0);
        let malformed_p =
            knobs.malformed_share + knobs.malformed_share_per_seq * f64::from(batch - 1);
        let malformed = share(seed, SALT_MALFORMED) < malformed_p.clamp(0.0, 1.0);
        let prose = Prose::new(seed);
        Answer {
            form: job
                .form
                .as_ref()
                .map(|f| FormAnswer::new(f, &prose, malformed)),
            tool: job
                .form
                .as_ref()
                .and_then(|f| f.tool_name().map(str::to_string)),
            reasoning: Prose::new(seed ^ mix(SALT_REASONING)),
            prose,
            start,
            lead: job
                .arithmetic
                .map(|r| format!("{}.", if wrong { r + 1 } else { r })),
            loop_after: loops
                .then(|| (LOOP_AFTER_MIN + mix(seed ^ SALT_LOOP_AFTER) % LOOP_AFTER_SPAN) as u32),
        }
    }

    /// The tool the answer calls (its text is the call's arguments), if it calls one.
    pub(crate) fn tool(&self) -> Option<&str> {
        self.tool.as_deref()
    }

    /// The text of tokens `from..from + n`, one word with a leading space each.
    pub(crate) fn text(&self, from: u32, n: u32) -> String {
        let end = from.saturating_add(n);
        let mut out = String::with_capacity(n as usize * 8);
        // Reasoning, then the answer counted from its own start.
        let thinking_end = end.min(self.start);
        if from < thinking_end {
            self.reasoning.push(from, thinking_end - from, &mut out);
        }
        let (from, end) = (
            from.max(self.start) - self.start,
            end.max(self.start) - self.start,
        );
        if let Some(form) = &self.form {
            out.push_str(&form.text(from, end - from));
            return out;
        }
        let lead = u32::from(self.lead.is_some());
        if let (Some(lead), true) = (&self.lead, from == 0 && end > 0) {
            out.push(' ');
            out.push_str(lead);
        }
        // The prose's words, then the loop's.
        let (from, end) = (from.max(lead) - lead, end.max(lead) - lead);
        let prose_end = self.loop_after.map_or(end, |k| end.min(k));
        if from < prose_end {
            self.prose.push(from, prose_end - from, &mut out);
        }
        for _ in from.max(prose_end)..end {
            out.push(' ');
            out.push_str(LOOP_WORD);
        }
        out
    }
}

#[cfg(test)]
mod tests;
