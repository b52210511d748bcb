//! Workload kinds beyond the default unique, exact-length prompt: prompts
//! that share a system prompt within groups (`[workload.shared_prefix]`),
//! lengths drawn from a distribution (`[workload.input_lengths]`,
//! `[workload.output_lengths]`), and prompts from a local dataset file
//! (`[workload.dataset]`).

use serde::Deserialize;
use std::ops::Range;
use toml::Spanned;

use crate::error::Invalid;

/// Question tokens a prompt keeps at least after the shared prefix: the
/// per-request nonce (16 words) that keeps prompts of a group apart.
pub const MIN_QUESTION_TOKENS: u32 = 16;

/// `[workload.shared_prefix]`: `groups` × `prompts_per_group` prompts per
/// point; the prompts of a group start with the same system prompt of
/// `system_tokens`, then a unique question of the rest of `input_tokens`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SharedPrefix {
    /// Groups per point (G); each has its own system prompt.
    pub groups: Spanned<u32>,
    /// Prompts per group (P); a point sends G × P measured requests.
    pub prompts_per_group: Spanned<u32>,
    /// Tokens of the shared system prompt (S); the question is `input_tokens` − S.
    pub system_tokens: Spanned<u32>,
    /// Cache-busting twin: every prompt gets a system prompt of its own (same lengths, nothing shared).
    #[serde(default)]
    pub unique_prefixes: bool,
}

impl SharedPrefix {
    /// Measured requests per point: G × P.
    pub fn requests(&self) -> u32 {
        self.groups
            .get_ref()
            .saturating_mul(*self.prompts_per_group.get_ref())
    }

    /// The system prompt's tokens at a point of `input_tokens`, or None when
    /// the point is too short to hold it and a question, and so shares nothing.
    pub fn system_tokens_at(&self, input_tokens: u32) -> Option<u32> {
        let s = *self.system_tokens.get_ref();
        (input_tokens >= s.saturating_add(MIN_QUESTION_TOKENS)).then_some(s)
    }

    /// The group of the `measured`-th measured request of a point (round robin,
    /// so the first prompt of every group goes out before any repeat).
    pub fn group_of(&self, measured: u32) -> u32 {
        measured % (*self.groups.get_ref()).max(1)
    }

    /// Prompt tokens the plan expects the server to find cached for the
    /// `measured`-th measured request at a point of `input_tokens`: the
    /// system prompt, except for each group's first prompt and when prefixes are unique.
    pub fn expected_cached(&self, input_tokens: u32, measured: u32) -> u32 {
        match self.system_tokens_at(input_tokens) {
            Some(s) if !self.unique_prefixes && measured >= *self.groups.get_ref() => s,
            _ => 0,
        }
    }

    pub(crate) fn validate(&self) -> Result<(), Invalid> {
        for (value, key) in [
            (&self.groups, "workload.shared_prefix.groups"),
            (
                &self.prompts_per_group,
                "workload.shared_prefix.prompts_per_group",
            ),
            (&self.system_tokens, "workload.shared_prefix.system_tokens"),
        ] {
            if *value.get_ref() == 0 {
                return Err((value.span(), Some(key.into()), "must be at least 1".into()));
            }
        }
        if *self.system_tokens.get_ref() < 2 * MIN_QUESTION_TOKENS {
            return Err((
                self.system_tokens.span(),
                Some("workload.shared_prefix.system_tokens".into()),
                format!(
                    "must be at least {}: a system prompt opens with a {MIN_QUESTION_TOKENS}-token nonce",
                    2 * MIN_QUESTION_TOKENS
                ),
            ));
        }
        Ok(())
    }
}

/// The layout of a dataset file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum DatasetFormat {
    /// One JSON object per line with a `prompt` string or OpenAI `messages`.
    Jsonl,
    /// A JSON array of `{"conversations": [{"from", "value"}, …]}`.
    Sharegpt,
}

impl DatasetFormat {
    /// The format as the workload fingerprint records it (`Jsonl`, the
    /// spelling recorded runs hold). Never change it: old runs would stop
    /// being comparable.
    pub fn fingerprint(self) -> &'static str {
        match self {
            DatasetFormat::Jsonl => "Jsonl",
            DatasetFormat::Sharegpt => "Sharegpt",
        }
    }
}

/// `[workload.dataset]`: prompts sampled (seeded) from a local file.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DatasetSource {
    /// The file, relative to the plan's folder unless absolute.
    pub path: Spanned<String>,
    /// Its layout; default from the extension (`.jsonl` → jsonl, `.json` → sharegpt).
    #[serde(default)]
    pub format: Option<DatasetFormat>,
    /// Keep only prompts of at least this many words.
    #[serde(default)]
    pub min_words: Option<u32>,
    /// Keep only prompts of at most this many words.
    #[serde(default)]
    pub max_words: Option<u32>,
    /// Send each prompt after the request's unique nonce (default); false
    /// sends the prompt as written, so that the same prompt gets the same
    /// greedy answer every time (answer checks), at the price of prefix-cache
    /// reuse between requests that sample the same prompt.
    #[serde(default = "yes")]
    pub nonce: bool,
}

fn yes() -> bool {
    true
}

impl DatasetSource {
    /// The layout, given or inferred from the extension.
    pub fn format(&self) -> Option<DatasetFormat> {
        self.format.or_else(|| {
            let p = self.path.get_ref();
            if p.ends_with(".jsonl") {
                Some(DatasetFormat::Jsonl)
            } else if p.ends_with(".json") {
                Some(DatasetFormat::Sharegpt)
            } else {
                None
            }
        })
    }

    /// Whether a prompt of `words` words passes the length filters.
    pub fn keeps(&self, words: usize) -> bool {
        let words = u32::try_from(words).unwrap_or(u32::MAX);
        self.min_words.is_none_or(|m| words >= m) && self.max_words.is_none_or(|m| words <= m)
    }

    /// The dataset's own keys; what it excludes elsewhere in `[workload]`
    /// is checked where the whole workload is known (schema.rs).
    pub(crate) fn validate(&self) -> Result<(), Invalid> {
        let at = |field: &str, msg: &str| -> Result<(), Invalid> {
            Err((
                self.path.span(),
                Some(format!("workload.dataset.{field}")),
                msg.to_string(),
            ))
        };
        if self.path.get_ref().trim().is_empty() {
            return at("path", "give the dataset file's path");
        }
        if self.format().is_none() {
            return at(
                "format",
                "cannot tell the layout from the extension; set format = \"jsonl\" or \"sharegpt\"",
            );
        }
        if let (Some(min), Some(max)) = (self.min_words, self.max_words) {
            if min > max {
                return at("min_words", "must not be above max_words");
            }
        }
        Ok(())
    }
}

/// The shape of a length distribution.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum LengthShape {
    /// Always the point's length.
    Fixed,
    /// Uniform integers from `min` to `max`, both included.
    Uniform,
    /// Normal around the point's length with `std_dev`.
    Normal,
    /// Lognormal whose mean is the point's length and whose standard deviation is `std_dev`.
    Lognormal,
}

impl LengthShape {
    /// The shape as the workload fingerprint records it (`Uniform`, the
    /// spelling recorded runs hold). Never change it: old runs would stop
    /// being comparable.
    pub fn fingerprint(self) -> &'static str {
        match self {
            LengthShape::Fixed => "Fixed",
            LengthShape::Uniform => "Uniform",
            LengthShape::Normal => "Normal",
            LengthShape::Lognormal => "Lognormal",
        }
    }
}

/// `[workload.input_lengths]` / `[workload.output_lengths]`: per-request
/// lengths around the point's value, clamped to `min`..=`max`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Lengths {
    /// The distribution's shape.
    pub distribution: Spanned<LengthShape>,
    /// Standard deviation in tokens (normal, lognormal).
    #[serde(default)]
    pub std_dev: Option<Spanned<f64>>,
    /// Smallest length drawn (uniform: required); default 1.
    #[serde(default)]
    pub min: Option<Spanned<u32>>,
    /// Largest length drawn (uniform: required); default unbounded.
    #[serde(default)]
    pub max: Option<Spanned<u32>>,
}

impl Lengths {
    /// The clamp bounds, defaults filled in.
    pub fn bounds(&self) -> (u32, u32) {
        (
            self.min.as_ref().map_or(1, |m| *m.get_ref()).max(1),
            self.max.as_ref().map_or(u32::MAX, |m| *m.get_ref()),
        )
    }

    /// The standard deviation, 0 when not given.
    pub fn std_dev(&self) -> f64 {
        self.std_dev.as_ref().map_or(0.0, |s| *s.get_ref())
    }

    pub(crate) fn validate(&self, key: &str) -> Result<(), Invalid> {
        let shape = *self.distribution.get_ref();
        let at = |span: Range<usize>, field: &str, msg: &str| -> Result<(), Invalid> {
            Err((span, Some(format!("{key}.{field}")), msg.to_string()))
        };
        let spread = matches!(shape, LengthShape::Normal | LengthShape::Lognormal);
        match (&self.std_dev, spread) {
            (None, true) => {
                return at(
                    self.distribution.span(),
                    "std_dev",
                    "normal and lognormal lengths need std_dev (tokens)",
                )
            }
            (Some(sd), true) if !(sd.get_ref().is_finite() && *sd.get_ref() > 0.0) => {
                return at(sd.span(), "std_dev", "must be a positive number of tokens")
            }
            (Some(sd), false) => {
                return at(
                    sd.span(),
                    "std_dev",
                    "only normal and lognormal lengths take std_dev",
                )
            }
            _ => {}
        }
        if shape == LengthShape::Uniform && (self.min.is_none() || self.max.is_none()) {
            return at(
                self.distribution.span(),
                "min",
                "uniform lengths need both min and max",
            );
        }
        if let (Some(min), Some(max)) = (&self.min, &self.max) {
            if min.get_ref() > max.get_ref() {
                return at(min.span(), "min", "must not be above max");
            }
        }
        if let Some(max) = &self.max {
            if *max.get_ref() == 0 {
                return at(max.span(), "max", "must be at least 1");
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shared(groups: u32, per_group: u32, system: u32, unique: bool) -> SharedPrefix {
        SharedPrefix {
            groups: Spanned::new(0..0, groups),
            prompts_per_group: Spanned::new(0..0, per_group),
            system_tokens: Spanned::new(0..0, system),
            unique_prefixes: unique,
        }
    }

    #[test]
    fn groups_take_turns_and_only_repeats_expect_the_cache() {
        let s = shared(3, 4, 1000, false);
        assert_eq!(s.requests(), 12);
        let groups: Vec<u32> = (0..7).map(|i| s.group_of(i)).collect();
        assert_eq!(groups, [0, 1, 2, 0, 1, 2, 0]);
        let expected: Vec<u32> = (0..5).map(|i| s.expected_cached(1200, i)).collect();
        assert_eq!(expected, [0, 0, 0, 1000, 1000]);
    }

    #[test]
    fn short_points_and_unique_prefixes_share_nothing() {
        let s = shared(2, 2, 1000, false);
        assert_eq!(s.system_tokens_at(1015), None);
        assert_eq!(s.system_tokens_at(1016), Some(1000));
        assert_eq!(s.expected_cached(1015, 3), 0);
        let busted = shared(2, 2, 1000, true);
        assert_eq!(busted.system_tokens_at(2000), Some(1000));
        assert_eq!(busted.expected_cached(2000, 3), 0);
    }
}
