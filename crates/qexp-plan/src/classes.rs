//! Request classes (`[[workload.class]]`): a workload that mixes several
//! kinds of caller on one deployment — LoRA adapters (each class's own
//! `model`), priorities (vLLM's `priority` body field) and tenants (their
//! own headers) — each with its share of the requests and, optionally, its
//! own prompt and answer lengths.
//!
//! Which class a request belongs to is decided by the plan's seed and the
//! request's place alone (see [`Classes::of`]), so a rerun, a resume or
//! another deployment of a block sends every request as the same class.

use serde::Deserialize;
use std::collections::BTreeMap;
use toml::Spanned;

use crate::error::Invalid;

/// How far the shares may be from adding up to 1.
pub const SHARE_SUM_TOLERANCE: f64 = 1e-9;

/// One `[[workload.class]]`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Class {
    /// The class's name, as the request rows and the report give it.
    pub name: Spanned<String>,
    /// Its share of the requests, from 0 to 1; the shares add up to 1.
    pub share: Spanned<f64>,
    /// The `model` its requests send (a LoRA adapter's name); the target's model when absent.
    #[serde(default)]
    pub model: Option<String>,
    /// vLLM's `priority` body field (a lower value is served first); not sent when absent.
    #[serde(default)]
    pub priority: Option<i64>,
    /// Headers its requests carry, with their values (e.g. a tenant's name).
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    /// Headers whose values come from environment variables, by the
    /// variable's NAME (a tenant's token): the value is never written down.
    #[serde(default)]
    pub headers_env: BTreeMap<String, String>,
    /// Its prompt length, instead of the point's.
    #[serde(default)]
    pub input_tokens: Option<Spanned<u32>>,
    /// Its `max_tokens`, instead of the point's.
    #[serde(default)]
    pub output_tokens: Option<Spanned<u32>>,
}

/// The classes of a workload, in plan order.
#[derive(Debug, Clone, Default)]
pub struct Classes<'a>(pub &'a [Class]);

/// The golden ratio's fractional part: a Weyl sequence with this step
/// spreads any run of consecutive requests over the classes in proportion
/// to their shares (within a few requests), interleaved in time.
const WEYL_STEP: f64 = 0.618_033_988_749_894_9;

impl Classes<'_> {
    /// The class (by position) of the `index`-th request of a point at
    /// `place` in the sweep, in `trial`, under the plan's `seed`: the
    /// cumulative shares cut a Weyl sequence whose start the seed, trial
    /// and place choose. None when the workload has no classes.
    pub fn of(&self, seed: u64, trial: u32, place: u32, index: u32) -> Option<usize> {
        if self.0.is_empty() {
            return None;
        }
        let key = seed.rotate_left(17) ^ (u64::from(trial) << 40) ^ (u64::from(place) << 20);
        // SplitMix64's finalizer: a start spread over [0, 1) by the key.
        let mut z = key.wrapping_add(0x9e37_79b9_7f4a_7c15);
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^= z >> 31;
        let start = (z >> 11) as f64 / (1u64 << 53) as f64;
        let u = (start + f64::from(index) * WEYL_STEP).fract();
        let mut upto = 0.0;
        for (i, c) in self.0.iter().enumerate() {
            upto += *c.share.get_ref();
            if u < upto {
                return Some(i);
            }
        }
        Some(self.0.len() - 1)
    }
}

/// A class as a recorded plan names it: what the analysis weighs a run's
/// classes against.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct ClassRecord {
    /// The class's name.
    pub name: String,
    /// Its planned share of the requests.
    pub share: f64,
    /// Its `priority`, when it sends one.
    #[serde(default)]
    pub priority: Option<i64>,
}

impl ClassRecord {
    /// The `[[workload.class]]` tables of a recorded plan's text, read
    /// alone (the rest of the plan may no longer load); empty when none.
    pub fn from_plan_text(text: &str) -> Vec<ClassRecord> {
        let Ok(table) = toml::from_str::<toml::Table>(text) else {
            return Vec::new();
        };
        let classes = table
            .get("workload")
            .and_then(|w| w.get("class"))
            .and_then(toml::Value::as_array);
        classes
            .into_iter()
            .flatten()
            .filter_map(|c| c.clone().try_into().ok())
            .collect()
    }
}

/// Checks the classes: names unique and plain, shares in (0, 1] adding up
/// to 1, header names given once, lengths at least 1.
pub(crate) fn validate(classes: &[Class]) -> Result<(), Invalid> {
    let at = |span: std::ops::Range<usize>, key: &str, msg: String| -> Result<(), Invalid> {
        Err((span, Some(format!("workload.class.{key}")), msg))
    };
    let mut seen = std::collections::BTreeSet::new();
    for c in classes {
        let name = c.name.get_ref();
        let plain = !name.is_empty()
            && name
                .chars()
                .all(|ch| ch.is_ascii_alphanumeric() || "-_.".contains(ch));
        if !plain {
            return at(
                c.name.span(),
                "name",
                "give each class a name of letters, digits, `-`, `_` or `.`".into(),
            );
        }
        if !seen.insert(name.as_str()) {
            return at(
                c.name.span(),
                "name",
                format!("class `{name}` is named twice"),
            );
        }
        let share = *c.share.get_ref();
        if !(share.is_finite() && share > 0.0 && share <= 1.0) {
            return at(
                c.share.span(),
                "share",
                format!("class `{name}` has share {share}: a share is above 0 and at most 1"),
            );
        }
        for (key, len) in [
            ("input_tokens", &c.input_tokens),
            ("output_tokens", &c.output_tokens),
        ] {
            if let Some(l) = len.as_ref().filter(|l| *l.get_ref() == 0) {
                return at(l.span(), key, "must be at least 1".into());
            }
        }
        if let Some(h) = c.headers.keys().find(|h| c.headers_env.contains_key(*h)) {
            return at(
                c.name.span(),
                "headers_env",
                format!(
                    "class `{name}` gives header `{h}` both a value and an environment variable"
                ),
            );
        }
        if let Some(why) = header_fault(c) {
            return at(c.name.span(), "headers", format!("class `{name}`: {why}"));
        }
    }
    let sum: f64 = classes.iter().map(|c| *c.share.get_ref()).sum();
    match classes.last() {
        Some(last) if (sum - 1.0).abs() > SHARE_SUM_TOLERANCE => at(
            last.share.span(),
            "share",
            format!(
                "the classes' shares add up to {sum}, not 1: give each class its part of the requests so that they sum to 1"
            ),
        ),
        _ => Ok(()),
    }
}

/// Headers a class may not set: they frame the request itself.
const FRAMING_HEADERS: [&str; 5] = [
    "host",
    "content-length",
    "content-type",
    "transfer-encoding",
    "connection",
];

/// What is wrong with a class's header names or values, if anything: a
/// name must be an HTTP token, not one that frames the request, and given
/// once whatever its case; a value must be visible ASCII, spaces and tabs
/// (so no line break can add a header of its own).
fn header_fault(c: &Class) -> Option<String> {
    let names: Vec<&String> = c.headers.keys().chain(c.headers_env.keys()).collect();
    for (i, n) in names.iter().enumerate() {
        if !is_token(n) {
            return Some(format!("`{n}` is not an HTTP header name"));
        }
        if FRAMING_HEADERS.contains(&n.to_ascii_lowercase().as_str()) {
            return Some(format!(
                "header `{n}` frames the request and is qexp's to send"
            ));
        }
        if names[..i].iter().any(|m| m.eq_ignore_ascii_case(n)) {
            return Some(format!("header `{n}` is given twice (names ignore case)"));
        }
    }
    c.headers
        .iter()
        .find(|(_, v)| !is_header_value(v))
        .map(|(n, _)| format!("the value of header `{n}` has a line break or control character"))
}

/// An HTTP token (RFC 9110 §5.6.2): what a header name is made of.
fn is_token(s: &str) -> bool {
    !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
}

/// Whether `v` may be sent as a header value: visible ASCII, spaces and tabs.
pub fn is_header_value(v: &str) -> bool {
    v.bytes().all(|b| b == b'\t' || (b' '..=b'~').contains(&b))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_names_and_values_are_checked() {
        let with = |k: &str, v: &str| {
            let mut c = class("a", 1.0);
            c.headers.insert(k.into(), v.into());
            c
        };
        assert_eq!(header_fault(&with("X-Tenant", "acme corp")), None);
        for (k, v, why) in [
            ("X Tenant", "a", "not an HTTP header name"),
            ("Host", "a", "frames the request"),
            ("X-Tenant", "a\r\nX-Evil: 1", "line break"),
        ] {
            let fault = header_fault(&with(k, v)).unwrap_or_default();
            assert!(fault.contains(why), "{k}: {fault}");
        }
        let mut twice = with("X-Tenant", "a");
        twice.headers_env.insert("x-tenant".into(), "TENANT".into());
        assert!(header_fault(&twice)
            .unwrap_or_default()
            .contains("given twice"));
    }

    fn class(name: &str, share: f64) -> Class {
        Class {
            name: Spanned::new(0..0, name.into()),
            share: Spanned::new(0..0, share),
            model: None,
            priority: None,
            headers: BTreeMap::new(),
            headers_env: BTreeMap::new(),
            input_tokens: None,
            output_tokens: None,
        }
    }

    #[test]
    fn assignment_is_seeded_and_keeps_the_shares() {
        let cs = [class("a", 0.75), class("b", 0.25)];
        let c = Classes(&cs);
        let draw = |seed, trial| -> Vec<usize> {
            (0..400)
                .map(|i| c.of(seed, trial, 3, i).unwrap_or(9))
                .collect()
        };
        assert_eq!(draw(7, 1), draw(7, 1), "same seed, same classes");
        assert_ne!(draw(7, 1), draw(8, 1), "another seed, another order");
        assert_ne!(draw(7, 1), draw(7, 2), "another trial, another order");
        for seed in [1, 7, 99] {
            let b = draw(seed, 1).iter().filter(|&&k| k == 1).count();
            assert!((95..=105).contains(&b), "share of b: {b}/400");
        }
        // Any 40 consecutive requests hold the shares within a few.
        let all = draw(7, 1);
        for w in all.windows(40) {
            let b = w.iter().filter(|&&k| k == 1).count();
            assert!((7..=13).contains(&b), "{b} of 40");
        }
        assert_eq!(Classes(&[]).of(1, 1, 1, 1), None);
    }

    #[test]
    fn shares_must_add_up() {
        assert!(validate(&[class("a", 0.5), class("b", 0.5)]).is_ok());
        let (_, key, msg) = validate(&[class("a", 0.5), class("b", 0.4)]).unwrap_err();
        assert_eq!(key.as_deref(), Some("workload.class.share"));
        assert!(msg.contains("add up to 0.9"), "{msg}");
        assert!(validate(&[class("a", 0.5), class("a", 0.5)]).is_err());
        assert!(validate(&[class("a", 0.0), class("b", 1.0)]).is_err());
        assert!(validate(&[class("a b", 1.0)]).is_err());
    }
}
