//! qexp-objstore copies run folders to and from an object store, so that
//! shards on hosts without a shared volume (Kubernetes pods with an
//! `emptyDir`) can leave their folders where `qexp merge` finds them:
//! `s3://` (AWS S3 and S3-compatible stores such as MinIO) and `file://`.
//! A folder goes to `<url>/<experiment>/<run-folder>/<file>`, one object a
//! file, as the run writes it ([`Mirror`], [`Follow`]), and comes back with
//! [`download`]. It knows nothing of what is in a run folder (that is
//! qexp-store) and reads credentials only from the environment, where the
//! S3 client finds them: they never pass through qexp's own values,
//! manifests or messages.

mod download;
mod error;
mod follow;
mod mirror;
mod remote;

pub use download::{download, Downloaded};
pub use error::ObjstoreError;
pub use follow::{Follow, LastSync};
pub use mirror::{Mirror, Synced};
pub use remote::{is_url, scheme_of, Remote, Scheme};
