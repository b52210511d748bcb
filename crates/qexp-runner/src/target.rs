use crate::error::RunError;
use qexp_client::Client;
use qexp_sim::{SimProfile, SimServer};
use std::time::Duration;

/// A resolved target: a client, plus the embedded simulator when `sim:`.
pub struct Target {
    /// Client for the server.
    pub client: Client,
    /// The URL as the user gave it (`sim:<profile>` or http…).
    pub given: String,
    /// The simulator serving a `sim:` target; stopped when dropped or shut down.
    pub sim: Option<SimServer>,
}

impl Target {
    /// Stops the embedded simulator, if any.
    pub async fn shutdown(self) {
        if let Some(sim) = self.sim {
            sim.shutdown().await;
        }
    }
}

/// Resolves `sim:<profile>` (starting the simulator on 127.0.0.1:0) or an HTTP URL.
pub async fn resolve_target(
    given: &str,
    api_key: Option<String>,
    timeout: Duration,
) -> Result<Target, RunError> {
    if let Some(name) = given.strip_prefix("sim:") {
        let profile = SimProfile::by_name(name).ok_or_else(|| {
            RunError::Target(format!(
                "unknown simulator profile `{name}`; known profiles: {}",
                SimProfile::names().join(", ")
            ))
        })?;
        let sim = SimServer::start(profile).await.map_err(RunError::Sim)?;
        let client = Client::new(&sim.base_url(), None, timeout)?;
        return Ok(Target {
            client,
            given: given.to_string(),
            sim: Some(sim),
        });
    }
    if !(given.starts_with("http://") || given.starts_with("https://")) {
        return Err(RunError::Target(format!(
            "target `{given}` is neither http(s)://host:port nor sim:<profile>"
        )));
    }
    let client = Client::new(given, api_key, timeout)?;
    Ok(Target {
        client,
        given: given.to_string(),
        sim: None,
    })
}
