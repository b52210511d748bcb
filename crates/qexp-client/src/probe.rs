//! What a server says about itself: the documents qexp asks for before a
//! run and stores verbatim in the manifest.

use crate::client::Client;
use serde::Serialize;
use serde_json::Value;
use std::collections::BTreeMap;
use std::time::Duration;

/// Documents a server answered, by path, plus the model list.
#[derive(Debug, Clone, Default, Serialize)]
pub struct ServerInfo {
    /// The base URL asked.
    pub base_url: String,
    /// Model ids from `/v1/models`, in server order.
    pub models: Vec<String>,
    /// JSON answers by path (`/v1/models`, `/version`, …); absent when not answered.
    pub documents: BTreeMap<String, Value>,
}

/// Paths asked besides `/v1/models`; a missing one is normal.
const INFO_PATHS: &[&str] = &["/version", "/props", "/server_info", "/get_server_info"];

/// Why a server could not be probed.
#[derive(Debug, thiserror::Error)]
#[error("cannot reach {base_url}/v1/models: {message}")]
pub struct ProbeError {
    /// The base URL asked.
    pub base_url: String,
    /// The cause.
    pub message: String,
}

/// Asks `/v1/models` (required) and the engines' info endpoints (optional).
pub async fn probe(client: &Client) -> Result<ServerInfo, ProbeError> {
    let t = Duration::from_secs(10);
    let err = |message: String| ProbeError {
        base_url: client.base_url().to_string(),
        message,
    };
    let models = client
        .get_json("/v1/models", t)
        .await
        .map_err(|e| err(e.message))?
        .ok_or_else(|| {
            err(
                "the server answered with an error status; is this an OpenAI-compatible server?"
                    .into(),
            )
        })?;
    let mut info = ServerInfo {
        base_url: client.base_url().to_string(),
        ..ServerInfo::default()
    };
    info.models = models
        .get("data")
        .and_then(Value::as_array)
        .map(|d| {
            d.iter()
                .filter_map(|m| m.get("id").and_then(Value::as_str))
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default();
    info.documents.insert("/v1/models".into(), models);
    for path in INFO_PATHS {
        if let Ok(Some(v)) = client.get_json(path, Duration::from_secs(3)).await {
            info.documents.insert((*path).to_string(), v);
        }
    }
    Ok(info)
}
