//! The lifecycle of an inference server that qexp launches for a benchmark.
//!
//! This crate owns one thing: a server process, from launch to the moment
//! nothing of it is left. [`launch`] refuses a port that is already serving,
//! resolves the command's placeholders, starts the server as the leader of
//! its own process group with stdout and stderr in one log file per start
//! (the run's API key replaced on the way), and returns only once the
//! process is alive, its readiness path answers 2xx and `/v1/models` names
//! the expected model. [`Server::stop`] sends TERM to the whole group and to
//! the start's processes that left it (found by [`TAG_VAR`]), waits the
//! grace period, KILLs them, reaps the leader and waits for the port to be
//! free. Dropping a [`Server`] KILLs them at once, and a guard process
//! stops them if qexp itself dies.
//!
//! It knows nothing about plans, Parquet or reports: the runner builds a
//! [`LaunchSpec`], keeps the [`StartRecord`] and [`StopRecord`] it is given,
//! and decides what to do with them.

mod error;
mod group;
mod logcopy;
mod logfile;
mod net;
mod placeholder;
mod proc;
mod ready;
mod redact;
mod server;
mod tag;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

pub use error::{refused, LaunchError, PollError};
/// The records a start and a stop leave; declared in qexp-types so that the
/// manifest can hold them without linking this crate.
pub use qexp_types::{StartRecord, StopHow, StopRecord, REDACTED};
pub use server::{launch, preview, Liveness, Server};
pub use tag::TAG_VAR;

/// How to launch one deployment: its argv, environment, address and limits.
#[derive(Clone, Debug, PartialEq)]
pub struct LaunchSpec {
    /// The deployment's name, e.g. `mtp`; also the `{name}` placeholder.
    pub name: String,
    /// The argv (not a shell string); arguments may contain placeholders.
    pub command: Vec<String>,
    /// Extra environment for the server; values may contain placeholders.
    pub env: BTreeMap<String, String>,
    /// The host the server listens on and qexp connects to.
    pub host: String,
    /// The port; `None` picks a free one at launch.
    pub port: Option<u16>,
    /// The path polled for readiness: 2xx is ready, anything else is loading.
    pub ready_path: String,
    /// How long the server may take to become ready.
    pub ready_timeout: Duration,
    /// How long the server has to exit after TERM before it is KILLed.
    pub stop_grace: Duration,
    /// The model `/v1/models` must name; `None` accepts any non-empty list.
    pub model: Option<String>,
    /// Extra placeholders from the caller (e.g. `model`, `run_dir`, `qexp`).
    pub placeholders: BTreeMap<String, String>,
    /// The key the readiness polls send as a Bearer token, as the
    /// benchmark's requests do (a server started with `--api-key` answers
    /// `/v1/models` 401 without it); also the `{api_key}` placeholder.
    pub api_key: Option<ApiKey>,
}

/// An API key; its `Debug` does not show it.
#[derive(Clone, PartialEq)]
pub struct ApiKey(pub String);

impl ApiKey {
    /// `text` with every occurrence of the key replaced by [`REDACTED`]:
    /// for what qexp records or prints of a server that was handed the key
    /// (its argv through `{api_key}`, its environment, its log's last lines).
    pub fn hide(&self, text: &str) -> String {
        if self.0.is_empty() {
            return text.to_owned();
        }
        text.replace(&self.0, REDACTED)
    }
}

/// [`ApiKey::hide`] where there may be no key.
pub(crate) fn hide(key: Option<&ApiKey>, text: &str) -> String {
    key.map_or_else(|| text.to_owned(), |k| k.hide(text))
}

impl std::fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ApiKey(")?;
        f.write_str(REDACTED)?;
        f.write_str(")")
    }
}

impl LaunchSpec {
    /// A spec with the defaults: 127.0.0.1, auto port, `/health`, 10 min to
    /// become ready, 10 s of grace, any model.
    pub fn new(name: impl Into<String>, command: Vec<String>) -> Self {
        Self {
            name: name.into(),
            command,
            env: BTreeMap::new(),
            host: "127.0.0.1".to_owned(),
            port: None,
            ready_path: "/health".to_owned(),
            ready_timeout: Duration::from_secs(600),
            stop_grace: Duration::from_secs(10),
            model: None,
            placeholders: BTreeMap::new(),
            api_key: None,
        }
    }
}

/// One start of a deployment: its id and where its log goes.
#[derive(Clone, Debug, PartialEq)]
pub struct StartRequest {
    /// Names the start; the log is `<log_dir>/<start_id>.log`.
    pub start_id: String,
    /// The folder for the log file; created if missing.
    pub log_dir: PathBuf,
}
