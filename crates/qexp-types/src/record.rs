//! What a start and a stop of a launched server leave on record for the
//! run folder (qexp-deploy makes them, the manifest keeps them).

use std::collections::BTreeMap;
use std::path::PathBuf;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

/// The value recorded in place of a secret-looking environment variable
/// (runs on disk hold this spelling).
pub const REDACTED: &str = "<redacted>";

/// One start of a server, as it happened.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct StartRecord {
    /// The start's id, also the log file's stem.
    pub start_id: String,
    /// The deployment's name.
    pub name: String,
    /// The argv that was run, placeholders resolved.
    pub argv: Vec<String>,
    /// The extra environment, secret-looking values redacted.
    pub env: BTreeMap<String, String>,
    /// The port the server listens on.
    pub port: u16,
    /// `http://host:port`.
    pub base_url: String,
    /// The server's pid, which is also its process group id.
    pub pid: u32,
    /// The log file with the server's stdout and stderr.
    pub log: PathBuf,
    /// When the server was spawned.
    pub started_at: DateTime<Utc>,
    /// Seconds from spawn to the first poll that found it ready.
    pub time_to_ready_s: f64,
    /// How many readiness polls it took.
    pub polls: u32,
}

/// How a server's stop went.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum StopHow {
    /// The server exited within the grace period after TERM.
    Term,
    /// The server outlived the grace period and was KILLed.
    Kill,
    /// The server had already exited when the stop began.
    AlreadyExited,
}

/// One stop of a server, as it happened.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct StopRecord {
    /// Whether TERM sufficed, KILL was needed, or it was already gone.
    pub how: StopHow,
    /// How the leader exited, e.g. `exit status: 0` or `signal: 9 (SIGKILL)`.
    pub exit: Option<String>,
    /// Seconds the stop took, port check included.
    pub took_s: f64,
    /// Whether the port stopped accepting connections within the wait.
    pub port_freed: bool,
    /// Whether processes of the group outlived the leader and were KILLed.
    pub leftovers_killed: bool,
    /// Whether the process group was seen gone (only zombies, if any, left),
    /// and with it every process of the start that had left the group.
    pub group_gone: bool,
    /// Processes of the start found outside its group when the stop began
    /// (a daemon's double fork, `setsid`), by the tag in their environment,
    /// and stopped with it. Runs recorded before the tag read 0.
    #[serde(default)]
    pub left_group: u32,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stop_how_serialises_in_snake_case() {
        let json = serde_json::to_string(&StopHow::AlreadyExited).unwrap_or_default();
        assert_eq!(json, "\"already_exited\"");
    }
}
