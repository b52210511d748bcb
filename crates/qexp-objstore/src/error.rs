//! Why an object store could not be used, one sentence each, naming the
//! URL (never a credential: a URL with one in it is refused first).

use std::path::PathBuf;

/// What went wrong with a results URL or the store behind it.
#[derive(Debug, thiserror::Error)]
pub enum ObjstoreError {
    /// The URL is not one qexp can use.
    #[error("`{url}`: {why}")]
    BadUrl {
        /// The URL as given.
        url: String,
        /// What is wrong and what to give instead.
        why: String,
    },
    /// An s3:// URL with no credentials in the environment.
    #[error(
        "{url}: no credentials for the object store in the environment: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (in pods: qexp kube --object-store-secret), or see docs/kubernetes.md for roles and public buckets"
    )]
    NoCredentials {
        /// The URL.
        url: String,
    },
    /// The store answered that the credentials are wrong or not allowed.
    #[error("{url}: the object store refused qexp's credentials ({detail})")]
    Denied {
        /// The URL.
        url: String,
        /// The store's answer, shortened.
        detail: String,
    },
    /// The store could not be reached, or failed a request.
    #[error("{url}: cannot {action} the object store: {detail}")]
    Store {
        /// The URL.
        url: String,
        /// What qexp was doing (`list`, `upload to`, …).
        action: &'static str,
        /// The cause, shortened.
        detail: String,
    },
    /// A download from a prefix that holds no object.
    #[error("{url}: no object there (nothing was uploaded under this prefix)")]
    Empty {
        /// The URL.
        url: String,
    },
    /// A download into a folder that holds other files than the store.
    #[error(
        "{path} exists and is not a copy of {url} ({differ} files missing or of another size): it may be the most complete copy (a shard run on this host whose last upload failed): give its path instead of the URL, or download elsewhere"
    )]
    Differs {
        /// The local folder.
        path: PathBuf,
        /// The URL.
        url: String,
        /// How many files are missing or of another size.
        differ: usize,
    },
    /// A local file could not be read or written.
    #[error("{action} {path}")]
    Io {
        /// What qexp was doing.
        action: &'static str,
        /// The file or folder.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
}

impl ObjstoreError {
    /// A closure turning an I/O error on `path` into [`ObjstoreError::Io`].
    pub(crate) fn io(
        action: &'static str,
        path: &std::path::Path,
    ) -> impl FnOnce(std::io::Error) -> ObjstoreError {
        let path = path.to_path_buf();
        move |source| ObjstoreError::Io {
            action,
            path,
            source,
        }
    }

    /// An object_store error met while doing `action` at `url`, sorted
    /// into refused credentials and everything else.
    pub(crate) fn store(url: &str, action: &'static str, e: object_store::Error) -> ObjstoreError {
        let url = url.to_string();
        match e {
            object_store::Error::Unauthenticated { .. }
            | object_store::Error::PermissionDenied { .. } => ObjstoreError::Denied {
                url,
                detail: short(&e),
            },
            other => ObjstoreError::Store {
                url,
                action,
                detail: short(&other),
            },
        }
    }
}

/// Variables whose values a store's answer may repeat (an access key id in
/// an `InvalidAccessKeyId` document): masked in every message.
const SECRET_VARS: [&str; 3] = [
    "AWS_ACCESS_KEY_ID",
    "AWS_SECRET_ACCESS_KEY",
    "AWS_SESSION_TOKEN",
];

/// An error's message on one line, at most about 400 characters (its start
/// and its root cause, which comes last): a store's answer may carry a
/// whole XML document; credentials from the environment masked.
pub(crate) fn short(e: &(dyn std::error::Error + 'static)) -> String {
    let mut text = e.to_string();
    let mut cause = e.source();
    while let Some(c) = cause {
        let line = c.to_string();
        if !text.contains(&line) {
            text.push_str(": ");
            text.push_str(&line);
        }
        cause = c.source();
    }
    let mut one_line = text.split_whitespace().collect::<Vec<_>>().join(" ");
    for var in SECRET_VARS {
        if let Ok(v) = std::env::var(var) {
            if v.len() >= 4 {
                one_line = one_line.replace(&v, "…");
            }
        }
    }
    let chars: Vec<char> = one_line.chars().collect();
    if chars.len() <= 400 {
        return one_line;
    }
    let head: String = chars[..200].iter().collect();
    let tail: String = chars[chars.len() - 190..].iter().collect();
    format!("{head} … {tail}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_answer_is_one_short_line() {
        let e = object_store::Error::Generic {
            store: "S3",
            source: format!("<Error>\n  <Code>X</Code>\n{}</Error>", "y".repeat(1000)).into(),
        };
        let s = ObjstoreError::store("s3://b/p", "list", e).to_string();
        assert!(!s.contains('\n'), "{s}");
        assert!(s.len() < 520, "{}", s.len());
        assert!(
            s.starts_with("s3://b/p: cannot list the object store: "),
            "{s}"
        );
        // The root cause, last in the chain, survives the cut.
        let e = object_store::Error::Generic {
            store: "S3",
            source: Box::new(std::io::Error::other(format!(
                "{}: Connection refused",
                "z".repeat(1000)
            ))),
        };
        let s = ObjstoreError::store("s3://b/p", "list", e).to_string();
        assert!(s.ends_with("Connection refused"), "{s}");
        let denied = object_store::Error::PermissionDenied {
            path: "p".into(),
            source: "403 Forbidden".into(),
        };
        let s = ObjstoreError::store("s3://b/p", "list", denied).to_string();
        assert!(s.contains("refused qexp's credentials"), "{s}");
    }
}
