//! Why a launch failed, with what the user needs to act on it.

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
    /// The command is empty.
    #[error("the deployment's command is empty")]
    EmptyCommand,
    /// No free port could be picked, or the host does not resolve.
    #[error("cannot pick a free port on {host}: {source}")]
    NoPort {
        /// The host a port was asked for.
        host: String,
        /// What binding said.
        source: io::Error,
    },
    /// The log file could not be created.
    #[error("cannot open the server log {}: {source}", path.display())]
    Log {
        /// The log file.
        path: PathBuf,
        /// What the file system said.
        source: io::Error,
    },
    /// The server or its guard could not be started.
    #[error("cannot start `{argv0}`: {source}")]
    Spawn {
        /// The program that failed to start.
        argv0: String,
        /// What the OS said.
        source: io::Error,
    },
    /// The HTTP client for the readiness polls could not be built.
    #[error("cannot build the HTTP client for readiness polls: {0}")]
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
    /// The server was not ready within the timeout; it has been stopped.
    #[error("the server was not ready after {waited_s:.1} s ({last}); its log {}, last lines:\n{tail}", log.display())]
    NotReady {
        /// How long qexp waited, in seconds.
        waited_s: f64,
        /// What the last poll saw.
        last: crate::PollError,
        /// Its log file.
        log: PathBuf,
        /// The last lines of its log.
        tail: String,
    },
}
