//! A results URL and the store behind it: `s3://BUCKET/PREFIX` (the S3
//! client reads its settings and credentials from `AWS_*` variables) or
//! `file:///PATH`.

use crate::error::ObjstoreError;
use object_store::aws::{AmazonS3Builder, AmazonS3ConfigKey};
use object_store::path::Path as ObjPath;
use object_store::{ClientOptions, ObjectStore, ObjectStoreExt as _, RetryConfig};
use std::sync::Arc;
use std::time::Duration;

/// The schemes qexp writes results to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scheme {
    /// `s3://` (and `s3a://`): AWS S3 or an S3-compatible store.
    S3,
    /// `file://`: a folder of this host.
    File,
}

/// Variables any one of which gives the S3 client credentials (or, for
/// `AWS_SKIP_SIGNATURE`, tells it to need none; `AWS_METADATA_ENDPOINT`
/// asks for the instance's metadata service, which is not tried unasked
/// because outside a cloud VM it only times out).
const CREDENTIAL_VARS: [&str; 6] = [
    "AWS_ACCESS_KEY_ID",
    "AWS_WEB_IDENTITY_TOKEN_FILE",
    "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
    "AWS_CONTAINER_CREDENTIALS_FULL_URI",
    "AWS_SKIP_SIGNATURE",
    "AWS_METADATA_ENDPOINT",
];

/// A place in an object store: the store, the prefix under which qexp
/// reads or writes, and the URL naming both (credentials are never part of it).
#[derive(Debug, Clone)]
pub struct Remote {
    store: Arc<dyn ObjectStore>,
    prefix: ObjPath,
    url: String,
}

/// True when `s` is written as a URL (`scheme://…`) rather than a path.
pub fn is_url(s: &str) -> bool {
    s.split_once("://").is_some_and(|(scheme, _)| {
        !scheme.is_empty()
            && scheme
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
    })
}

/// Checks `url` without reaching any store or reading any credential
/// (`qexp kube` checks the URL its pods will write to), and says which scheme it is.
pub fn scheme_of(url: &str) -> Result<Scheme, ObjstoreError> {
    parse(url).map(|(scheme, _, _)| scheme)
}

/// `text` as a message may show it: without a `?` or `#` part (a signed
/// URL's token), and only its scheme when an `@` follows a host (a
/// credential may hold `/`, `#` or `?`, so where it ends cannot be told).
pub(crate) fn shown(text: &str) -> String {
    match text.split_once("://") {
        Some((scheme, rest)) if !rest.starts_with('/') && rest.contains('@') => {
            format!("{scheme}://…")
        }
        _ => text
            .find(['?', '#'])
            .map_or(text, |i| &text[..i])
            .to_string(),
    }
}

/// The scheme, the parsed URL and the prefix inside the store.
fn parse(text: &str) -> Result<(Scheme, url::Url, ObjPath), ObjstoreError> {
    let bad = |why: &str| ObjstoreError::BadUrl {
        url: shown(text),
        why: why.to_string(),
    };
    // Refused before parsing: a secret key may hold `/`, which would end
    // the authority where the parser looks for credentials.
    let authority_at = text
        .split_once("://")
        .is_some_and(|(_, rest)| !rest.starts_with('/') && rest.contains('@'));
    if authority_at {
        return Err(bad(
            "credentials never go in the URL: give them in AWS_* variables (in pods: --object-store-secret)",
        ));
    }
    let url = url::Url::parse(text).map_err(|e| {
        bad(&format!(
            "not a URL ({e}); give s3://BUCKET/PREFIX or file:///PATH"
        ))
    })?;
    if url.query().is_some() || url.fragment().is_some() {
        return Err(bad("a results URL has no `?` or `#` part"));
    }
    let prefix = ObjPath::from_url_path(url.path())
        .map_err(|e| bad(&format!("its path is not one an object store takes ({e})")))?;
    match url.scheme() {
        "s3" | "s3a" => {
            if url.host_str().is_none_or(str::is_empty) {
                return Err(bad("name the bucket: s3://BUCKET/PREFIX"));
            }
            Ok((Scheme::S3, url, prefix))
        }
        "file" => {
            if url.to_file_path().is_err() {
                return Err(bad("give a folder of this host by its absolute path: file:///PATH"));
            }
            Ok((Scheme::File, url, prefix))
        }
        other => Err(bad(&format!(
            "qexp writes results to s3:// (AWS S3 and S3-compatible stores) and file:// URLs, not {other}://"
        ))),
    }
}

impl Remote {
    /// The store at `url`, configured from this process's environment (the
    /// S3 client's `AWS_*` variables). Reaches nothing yet: see [`Remote::probe`].
    pub fn open(url: &str) -> Result<Remote, ObjstoreError> {
        Remote::open_with(url, std::env::vars())
    }

    /// [`Remote::open`] with the environment given (`AWS_*` pairs; others are ignored).
    pub fn open_with(
        url: &str,
        env: impl IntoIterator<Item = (String, String)>,
    ) -> Result<Remote, ObjstoreError> {
        let (scheme, parsed, prefix) = parse(url)?;
        let store: Arc<dyn ObjectStore> = match scheme {
            Scheme::File => Arc::new(object_store::local::LocalFileSystem::new()),
            Scheme::S3 => Arc::new(s3(url, &parsed, env)?),
        };
        Ok(Remote {
            store,
            prefix,
            url: url.trim_end_matches('/').to_string(),
        })
    }

    /// The URL, without a trailing `/`.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The place `segment` below this one (`<url>/<segment>`).
    pub fn join(&self, segment: &str) -> Result<Remote, ObjstoreError> {
        let ok = !segment.is_empty()
            && segment != "."
            && segment != ".."
            && !segment.contains('/')
            && segment.chars().all(|c| !c.is_control());
        if !ok {
            return Err(ObjstoreError::BadUrl {
                url: format!("{}/{segment}", self.url),
                why: format!("`{segment}` is not one name"),
            });
        }
        Ok(Remote {
            store: Arc::clone(&self.store),
            prefix: self.prefix.clone().join(segment),
            url: format!("{}/{segment}", self.url),
        })
    }

    /// The URL's last name (a run folder's name, for a shard's URL).
    pub fn last_name(&self) -> Option<&str> {
        self.prefix.filename()
    }

    /// Lists the prefix once, so that a bad bucket, refused credentials or
    /// an unreachable store are said before anything is measured.
    pub async fn probe(&self) -> Result<(), ObjstoreError> {
        self.store
            .list_with_delimiter(Some(&self.prefix))
            .await
            .map(|_| ())
            .map_err(|e| ObjstoreError::store(&self.url, "list", e))
    }

    /// [`Remote::probe`], then writes and deletes a small object under the
    /// prefix: credentials that may list but not write are refused before
    /// a run measures anything, not after it.
    pub async fn probe_write(&self) -> Result<(), ObjstoreError> {
        self.probe().await?;
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        let marker = self
            .prefix
            .clone()
            .join(format!(".qexp-probe-{}-{nanos}", std::process::id()));
        self.store
            .put(&marker, object_store::PutPayload::from_static(b"qexp"))
            .await
            .map_err(|e| ObjstoreError::store(&self.url, "write to", e))?;
        self.store
            .delete(&marker)
            .await
            .map_err(|e| ObjstoreError::store(&self.url, "delete in", e))
    }

    /// True when no object lies under the prefix.
    pub async fn is_empty(&self) -> Result<bool, ObjstoreError> {
        let mut listed = self.store.list(Some(&self.prefix));
        match futures_util::StreamExt::next(&mut listed).await {
            None => Ok(true),
            Some(Ok(_)) => Ok(false),
            Some(Err(e)) => Err(ObjstoreError::store(&self.url, "list", e)),
        }
    }

    pub(crate) fn store(&self) -> &Arc<dyn ObjectStore> {
        &self.store
    }

    pub(crate) fn prefix(&self) -> &ObjPath {
        &self.prefix
    }

    /// The object `rel` (a `/`-separated path) below the prefix.
    pub(crate) fn object(&self, rel: &str) -> ObjPath {
        rel.split('/')
            .fold(self.prefix.clone(), |p, part| p.join(part))
    }

    /// `object`'s path relative to the prefix, `/`-separated; None when it
    /// is not below it or a part would climb out of a local folder.
    pub(crate) fn relative(&self, object: &ObjPath) -> Option<String> {
        let parts: Vec<String> = object
            .prefix_match(&self.prefix)?
            .map(|p| p.as_ref().to_string())
            .collect();
        let safe = !parts.is_empty()
            && parts
                .iter()
                .all(|p| !p.is_empty() && p != "." && p != ".." && !p.contains(['/', '\\']));
        safe.then(|| parts.join("/"))
    }
}

/// The S3 client for `url`, from the `AWS_*` variables in `env` (the same
/// names and meanings as the AWS command line's, e.g. `AWS_REGION`,
/// `AWS_ENDPOINT_URL`); an `http://` endpoint (MinIO, a local test server)
/// is allowed without `AWS_ALLOW_HTTP`, since naming it is asking for it.
fn s3(
    text: &str,
    url: &url::Url,
    env: impl IntoIterator<Item = (String, String)>,
) -> Result<object_store::aws::AmazonS3, ObjstoreError> {
    let options = ClientOptions::new().with_connect_timeout(Duration::from_secs(5));
    let retry = RetryConfig {
        max_retries: 3,
        retry_timeout: Duration::from_secs(60),
        ..RetryConfig::default()
    };
    let mut builder = AmazonS3Builder::new()
        .with_client_options(options)
        .with_retry(retry);
    let mut credentials = false;
    let mut http_endpoint = false;
    for (key, value) in env {
        if !key.starts_with("AWS_") {
            continue;
        }
        credentials |= CREDENTIAL_VARS.contains(&key.as_str()) && !value.is_empty();
        if let Ok(k) = key.to_ascii_lowercase().parse::<AmazonS3ConfigKey>() {
            http_endpoint |= k == AmazonS3ConfigKey::Endpoint && value.starts_with("http://");
            builder = builder.with_config(k, value);
        }
    }
    if !credentials {
        return Err(ObjstoreError::NoCredentials {
            url: text.to_string(),
        });
    }
    // The URL's bucket over any AWS_BUCKET.
    builder = builder.with_url(url.as_str());
    if http_endpoint {
        builder = builder.with_allow_http(true);
    }
    builder.build().map_err(|e| match e {
        object_store::Error::Generic { source, .. } if source.to_string().contains("Missing") => {
            ObjstoreError::NoCredentials {
                url: text.to_string(),
            }
        }
        other => ObjstoreError::store(text, "configure", other),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn urls_are_checked_in_one_sentence() {
        for (url, says) in [
            ("bucket/prefix", "not a URL"),
            ("gs://bucket/p", "not gs://"),
            ("s3:///p", "name the bucket"),
            ("file://host/p", "absolute path"),
            ("s3://b/p?x=1", "no `?`"),
        ] {
            let e = scheme_of(url).unwrap_err().to_string();
            assert!(e.contains(says), "{url}: {e}");
            assert!(!e.contains('\n'), "{e}");
        }
        assert_eq!(scheme_of("s3://b/p/q").unwrap(), Scheme::S3);
        assert_eq!(scheme_of("file:///tmp/x").unwrap(), Scheme::File);
    }

    #[test]
    fn credentials_in_a_url_are_refused_and_not_repeated() {
        // A secret with `/` ends the authority early for a URL parser; one
        // of digits up to it even parses, as a port.
        for url in [
            "s3://AKIAXXX:t0ps3cr3t@bucket/p",
            "s3://AKIAXXX:t0p/s3cr3t@bucket/p",
            "s3://AKIAXXX:12345/s3cr3t@bucket/p",
            "s3://AKIAXXX:ab#s3cr3t@bucket/p",
            "s3://AKIAXXX:ab?s3cr3t@bucket/p",
            "s3://AKIAXXX@bucket/p",
        ] {
            let e = scheme_of(url).unwrap_err().to_string();
            assert!(e.contains("never go in the URL"), "{url}: {e}");
            assert!(!e.contains("s3cr3t") && !e.contains("AKIAXXX"), "{e}");
        }
        // A signed URL's token is not repeated either.
        let e = scheme_of("https://b.example/p?X-Amz-Security-Token=tok3n")
            .unwrap_err()
            .to_string();
        assert!(!e.contains("tok3n"), "{e}");
        // A folder with `@` in its path is a folder.
        assert_eq!(scheme_of("file:///tmp/a@b").unwrap(), Scheme::File);
    }

    #[test]
    fn s3_needs_credentials_from_the_environment() {
        let e = Remote::open_with("s3://b/p", env(&[("AWS_REGION", "eu-west-1")]))
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("s3://b/p: no credentials"), "{e}");
        let secret_missing = Remote::open_with("s3://b/p", env(&[("AWS_ACCESS_KEY_ID", "k")]));
        assert!(matches!(
            secret_missing,
            Err(ObjstoreError::NoCredentials { .. })
        ));
        let r = Remote::open_with(
            "s3://b/p/",
            env(&[
                ("AWS_ACCESS_KEY_ID", "k"),
                ("AWS_SECRET_ACCESS_KEY", "s"),
                ("AWS_ENDPOINT_URL", "http://127.0.0.1:9"),
            ]),
        )
        .unwrap();
        assert_eq!(r.url(), "s3://b/p");
        let j = r.join("exp").unwrap().join("run-1").unwrap();
        assert_eq!(j.url(), "s3://b/p/exp/run-1");
        assert_eq!(j.last_name(), Some("run-1"));
        assert_eq!(
            j.object("parts/a.parquet").as_ref(),
            "p/exp/run-1/parts/a.parquet"
        );
        assert_eq!(
            j.relative(&"p/exp/run-1/parts/a.parquet".into()).as_deref(),
            Some("parts/a.parquet")
        );
        assert_eq!(j.relative(&"p/exp/run-10/x".into()), None);
        assert!(r.join("a/b").is_err() && r.join("..").is_err());
    }

    #[test]
    fn urls_are_told_from_paths() {
        assert!(is_url("s3://b/p") && is_url("file:///x"));
        assert!(!is_url("results/x") && !is_url("/abs/x") && !is_url("://x"));
    }
}
