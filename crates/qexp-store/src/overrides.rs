//! The command-line overrides a run was started with, as the manifest keeps them.

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// `qexp run`'s overrides of the plan (`--trials`, `--target`, `--model`).
///
/// The manifest stores them as an object of strings,
/// `{"model":"m","target":"http://…","trials":"5"}`, with only the options
/// given: the shape runs have held since before this type (a string map), so
/// the fields are declared in that map's (alphabetical) key order and
/// `trials` is written as a string.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Overrides {
    /// `--model`, overriding the plan's model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// `--target`, overriding the plan's base URL.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<String>,
    /// `--trials`, overriding the plan's trial count.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        serialize_with = "trials_as_string",
        deserialize_with = "trials_from_string"
    )]
    pub trials: Option<u32>,
}

impl Overrides {
    /// True when no option overrode the plan.
    pub fn is_empty(&self) -> bool {
        *self == Overrides::default()
    }
}

fn trials_as_string<S: Serializer>(t: &Option<u32>, s: S) -> Result<S::Ok, S::Error> {
    match t {
        Some(n) => s.serialize_str(&n.to_string()),
        None => s.serialize_none(),
    }
}

fn trials_from_string<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u32>, D::Error> {
    let text = Option::<String>::deserialize(d)?;
    text.map(|t| t.parse().map_err(serde::de::Error::custom))
        .transpose()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    /// What manifests hold: the string map the runner wrote before this type.
    #[test]
    fn writes_the_recorded_string_map() {
        let o = Overrides {
            model: Some("m".into()),
            target: Some("http://127.0.0.1:8000".into()),
            trials: Some(5),
        };
        let old: BTreeMap<&str, &str> = [
            ("trials", "5"),
            ("target", "http://127.0.0.1:8000"),
            ("model", "m"),
        ]
        .into_iter()
        .collect();
        let old = serde_json::to_string(&old).unwrap_or_default();
        assert_eq!(serde_json::to_string(&o).unwrap_or_default(), old);
        assert_eq!(serde_json::from_str::<Overrides>(&old).ok(), Some(o));
    }

    #[test]
    fn absent_options_are_absent_keys() {
        let only = Overrides {
            trials: Some(3),
            ..Overrides::default()
        };
        assert_eq!(
            serde_json::to_string(&only).unwrap_or_default(),
            r#"{"trials":"3"}"#
        );
        let none: Overrides = serde_json::from_str("{}").unwrap_or_else(|_| only.clone());
        assert!(none.is_empty());
        assert_eq!(serde_json::to_string(&none).unwrap_or_default(), "{}");
    }

    #[test]
    fn trials_that_are_not_a_number_do_not_read() {
        assert!(serde_json::from_str::<Overrides>(r#"{"trials":"many"}"#).is_err());
    }
}
