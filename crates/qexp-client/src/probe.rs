//! What a server says about itself: the documents qexp asks for before a
//! run and stores verbatim in the manifest, plus what its `/metrics` reveals
//! (family names and the labels of `*_info` series).

use crate::client::Client;
use crate::metrics::Exposition;
pub use qexp_types::ServerInfo;
use serde_json::Value;
use std::time::Duration;

/// Paths asked besides `/v1/models`; a missing one is normal. `/info` is TGI's.
const INFO_PATHS: &[&str] = &[
    "/version",
    "/props",
    "/server_info",
    "/get_server_info",
    "/info",
];

/// Why a server could not be probed.
#[derive(Debug, thiserror::Error)]
#[error("cannot reach {base_url}/v1/models: {message}")]
pub struct ProbeError {
    /// The base URL asked.
    pub base_url: String,
    /// The cause.
    pub message: String,
}

/// Asks `/v1/models` (required), the engines' info endpoints and the
/// metrics (at `metrics_url`, default `/metrics`; both optional).
pub async fn probe(client: &Client, metrics_url: Option<&str>) -> Result<ServerInfo, ProbeError> {
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
            if v.is_object() {
                info.documents.insert((*path).to_string(), v);
            }
        }
    }
    let url = metrics_url.unwrap_or("/metrics");
    if let Ok(Some(text)) = client.get_text(url, Duration::from_secs(10)).await {
        add_metrics(&mut info, url, &text);
    }
    Ok(info)
}

/// Records in `info` what a Prometheus exposition at `url` reveals (family
/// names, the labels of `*_info` series); ignores text that holds no samples.
pub fn add_metrics(info: &mut ServerInfo, url: &str, text: &str) {
    let e = Exposition::parse(text);
    if e.samples.is_empty() {
        return;
    }
    info.metrics_url = Some(url.to_string());
    info.metric_families = e.types.keys().cloned().collect();
    for s in e.samples.iter().filter(|s| s.name.ends_with("_info")) {
        info.metrics_info
            .entry(s.name.clone())
            .or_insert_with(|| s.labels.iter().cloned().collect());
    }
}
