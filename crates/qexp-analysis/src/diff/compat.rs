//! Whether two runs may be compared: their workload keys (what was asked)
//! must match, except keys the user names to ignore; their deployment keys
//! (what answered) are what a diff is about, so they are only laid side by side.

use qexp_store::Comparability;
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet};

/// One fingerprint key seen in either run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct KeyRow {
    /// The key (`output_tokens`, `model`, …).
    pub key: String,
    /// Its value in run A, if A records it.
    pub a: Option<String>,
    /// Its value in run B, if B records it.
    pub b: Option<String>,
}

impl KeyRow {
    /// True when the runs disagree (a key missing on one side counts as a difference).
    pub fn differs(&self) -> bool {
        self.a != self.b
    }
}

impl std::fmt::Display for KeyRow {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let v = |s: &Option<String>| s.as_deref().map_or("(absent)".into(), |s| format!("{s:?}"));
        write!(f, "{} (A: {}, B: {})", self.key, v(&self.a), v(&self.b))
    }
}

/// Every key of two maps, in key order.
pub fn rows(a: &BTreeMap<String, String>, b: &BTreeMap<String, String>) -> Vec<KeyRow> {
    let keys: BTreeSet<&String> = a.keys().chain(b.keys()).collect();
    keys.into_iter()
        .map(|k| KeyRow {
            key: k.clone(),
            a: a.get(k).cloned(),
            b: b.get(k).cloned(),
        })
        .collect()
}

/// The workload comparison of two runs.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct WorkloadCheck {
    /// Every workload key of either run.
    pub keys: Vec<KeyRow>,
    /// Differing keys that `ignore` let through.
    pub ignored: Vec<KeyRow>,
    /// Differing keys not ignored: the diff must refuse when this is not empty.
    pub blocking: Vec<KeyRow>,
    /// `ignore` names that are not differing workload keys (typos, or keys that match).
    pub unused_ignores: Vec<String>,
    /// Run A's workload hash.
    pub hash_a: String,
    /// Run B's workload hash.
    pub hash_b: String,
}

/// Compares the workload keys of two fingerprints.
pub fn check_workload(a: &Comparability, b: &Comparability, ignore: &[String]) -> WorkloadCheck {
    let keys = rows(&a.workload, &b.workload);
    let (mut ignored, mut blocking) = (Vec::new(), Vec::new());
    for r in keys.iter().filter(|r| r.differs()) {
        if ignore.contains(&r.key) {
            ignored.push(r.clone());
        } else {
            blocking.push(r.clone());
        }
    }
    let mut unused_ignores: Vec<String> = ignore
        .iter()
        .filter(|i| !ignored.iter().any(|r| r.key == **i))
        .cloned()
        .collect();
    unused_ignores.dedup();
    WorkloadCheck {
        keys,
        ignored,
        blocking,
        unused_ignores,
        hash_a: a.workload_hash.clone(),
        hash_b: b.workload_hash.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fp(pairs: &[(&str, &str)]) -> Comparability {
        let m = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        Comparability::new(m, BTreeMap::new())
    }

    #[test]
    fn equal_workloads_pass() {
        let a = fp(&[("concurrency", "1,4"), ("output_tokens", "500")]);
        let c = check_workload(&a, &a.clone(), &[]);
        assert!(c.blocking.is_empty() && c.ignored.is_empty());
        assert_eq!(c.keys.len(), 2);
        assert_eq!(c.hash_a, c.hash_b);
    }

    #[test]
    fn differing_and_missing_keys_block_unless_ignored() {
        let a = fp(&[("output_tokens", "500"), ("prompt", "RandomWords")]);
        let b = fp(&[("output_tokens", "200"), ("tokenizer", "x.json")]);
        let c = check_workload(&a, &b, &[]);
        let keys: Vec<&str> = c.blocking.iter().map(|r| r.key.as_str()).collect();
        assert_eq!(keys, ["output_tokens", "prompt", "tokenizer"]);
        assert_eq!(
            c.blocking[0].to_string(),
            r#"output_tokens (A: "500", B: "200")"#
        );
        assert_eq!(
            c.blocking[2].to_string(),
            r#"tokenizer (A: (absent), B: "x.json")"#
        );

        let ignore = ["output_tokens".to_string(), "outputtokens".to_string()];
        let c = check_workload(&a, &b, &ignore);
        assert_eq!(c.ignored.len(), 1);
        assert_eq!(c.blocking.len(), 2);
        assert_eq!(c.unused_ignores, ["outputtokens"]);
    }
}
