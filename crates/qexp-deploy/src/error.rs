//! Why a launch failed, with what the user needs to act on it, and what
//! a readiness poll saw instead of a ready server.

use std::io;
use std::path::PathBuf;

/// A launch that did not end with a ready server; nothing is left running.
#[derive(Debug, thiserror::Error)]
pub enum LaunchError {
    /// Something already accepts connections on the port.
    #[error("port {port} is already serving ({base_url}); stop that server or give another port")]
    PortBusy {
        /// The port asked for.
        port: u16,
        /// Where the other server answers.
        base_url: String,
    },
    /// The command or environment names a placeholder qexp does not know.
    #[error("unknown placeholder `{{{name}}}` in `{arg}`; write `{{{{` for a literal brace")]
    BadPlaceholder {
        /// The placeholder's name, without braces.
        name: String,
        /// The argument or environment value it appears in.
        arg: String,
    },
    /// The command or environment asks for `{api_key}` and the run has no key.
    #[error("`{{api_key}}` in `{arg}` needs the run's API key: name the variable that holds it in [target] api_key_env")]
    NoApiKey {
        /// The argument or environment value it appears in.
        arg: String,
    },
    /// The command is empty.
    #[error("the deployment's command is empty")]
    EmptyCommand,
    /// No free port could be picked, or the host does not resolve.
    #[error("cannot pick a free port on {host}")]
    NoPort {
        /// The host a port was asked for.
        host: String,
        /// What binding said.
        source: io::Error,
    },
    /// The log file could not be created.
    #[error("cannot open the server log {}", path.display())]
    Log {
        /// The log file.
        path: PathBuf,
        /// What the file system said.
        source: io::Error,
    },
    /// The server or its guard could not be started.
    #[error("cannot start `{argv0}`")]
    Spawn {
        /// The program that failed to start.
        argv0: String,
        /// What the OS said.
        source: io::Error,
    },
    /// The HTTP client for the readiness polls could not be built.
    #[error("cannot build the HTTP client for readiness polls")]
    Client(#[source] reqwest::Error),
    /// The server exited before it was ready.
    #[error("the server exited before it was ready ({status}); its log {}, last lines:\n{tail}", log.display())]
    Exited {
        /// How it exited, e.g. `exit status: 3`.
        status: String,
        /// Its log file.
        log: PathBuf,
        /// The last lines of its log.
        tail: String,
    },
    /// The server refused the readiness polls (401 or 403); it has been stopped.
    #[error("{}; its log {}, last lines:\n{tail}", refused(last, *key_sent), log.display())]
    Unauthorized {
        /// What the poll saw.
        last: PollError,
        /// Whether qexp sent a key.
        key_sent: bool,
        /// Its log file.
        log: PathBuf,
        /// The last lines of its log.
        tail: String,
    },
    /// The server was not ready within the timeout; it has been stopped.
    #[error("the server was not ready after {waited_s:.1} s ({last}); its log {}, last lines:\n{tail}", log.display())]
    NotReady {
        /// How long qexp waited, in seconds.
        waited_s: f64,
        /// What the last poll saw.
        last: PollError,
        /// Its log file.
        log: PathBuf,
        /// The last lines of its log.
        tail: String,
    },
}

/// The path that lists the models an OpenAI-compatible server serves.
pub(crate) const MODELS_PATH: &str = "/v1/models";

/// What a readiness poll saw instead of a ready server.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum PollError {
    /// A path answered with a status other than 2xx.
    #[error("GET {path} answered {status}")]
    Status {
        /// The path polled.
        path: String,
        /// The HTTP status.
        status: u16,
    },
    /// A request did not finish within the poll's limit.
    #[error("GET {path} timed out after {timeout_s} s")]
    TimedOut {
        /// The path polled.
        path: String,
        /// The limit, seconds.
        timeout_s: f64,
    },
    /// Nothing accepted the connection (yet).
    #[error("GET {path}: connection refused")]
    Refused {
        /// The path polled.
        path: String,
    },
    /// A request failed otherwise; `cause` is the root of the client's chain.
    #[error("GET {path} failed: {cause}")]
    Failed {
        /// The path polled.
        path: String,
        /// The root cause, as text (reqwest's error is not `Clone`).
        cause: String,
    },
    /// The model list was not JSON.
    #[error("GET {MODELS_PATH} did not answer JSON: {cause}")]
    NotJson {
        /// What the parser said.
        cause: String,
    },
    /// The model list had no `data` array.
    #[error("GET {MODELS_PATH} answered without a `data` list")]
    NoData,
    /// The model list was empty.
    #[error("the model list is empty")]
    NoModel,
    /// The model list did not name the expected model.
    #[error("the model list names [{}], not `{want}`", listed.join(", "))]
    OtherModel {
        /// The ids listed.
        listed: Vec<String>,
        /// The model expected.
        want: String,
    },
}

/// What a refused readiness poll means for the user, without the log.
pub fn refused(last: &PollError, key_sent: bool) -> String {
    let why = if key_sent {
        "it does not accept the API key qexp sent (the variable [target] api_key_env names)"
    } else {
        "it asks for an API key: name the variable that holds it in [target] api_key_env"
    };
    format!("the server refused qexp's readiness check ({last}): {why}")
}
