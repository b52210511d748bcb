//! Names that become folder names. An experiment name from a plan, or an
//! experiment or run id read back from a run's manifest, is joined onto a
//! results or reports root; it must never climb out of it or name another
//! place: no `..`, no absolute path, no separator, nothing hidden.

/// A name that cannot be one folder name.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{name}` cannot name a folder: use only letters, digits, '-', '_' and '.', not starting with '.'")]
pub struct UnsafeName {
    /// The offending name (as given).
    pub name: String,
}

/// The longest name accepted (most file systems allow 255 bytes).
const MAX_LEN: usize = 200;

/// `name` if it is safe as a single path component, else why not.
pub fn safe_component(name: &str) -> Result<&str, UnsafeName> {
    let ok = !name.is_empty()
        && name.len() <= MAX_LEN
        && !name.starts_with('.')
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c));
    if ok {
        Ok(name)
    } else {
        Err(UnsafeName {
            name: name.chars().take(MAX_LEN).collect(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_plain_names_pass() {
        for good in [
            "throughput",
            "longctx-v2",
            "a.b_c",
            "20261130T101500Z-1a2b3c",
        ] {
            assert_eq!(safe_component(good), Ok(good));
        }
        for bad in [
            "", ".", "..", "../x", "a/b", "a\\b", "/etc", "C:", ".hidden", "a b", "é", "a\0",
        ] {
            assert!(safe_component(bad).is_err(), "{bad:?} passed");
        }
        assert!(safe_component(&"a".repeat(MAX_LEN + 1)).is_err());
    }
}
