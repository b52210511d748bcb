//! What a server says about itself: the documents qexp asks for before a
//! run and stores verbatim in the manifest, plus what its `/metrics` reveals
//! (family names and the labels of `*_info` series).

use crate::client::Client;
use crate::metrics::Exposition;
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
    /// Where Prometheus metrics answered (a path or URL), if anywhere.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub metrics_url: Option<String>,
    /// Metric family names (from `# TYPE` lines), sorted.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub metric_families: Vec<String>,
    /// Labels of `*_info` series by metric name (vLLM's `cache_config_info`, …).
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub metrics_info: BTreeMap<String, BTreeMap<String, String>>,
}

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
        info.add_metrics(url, &text);
    }
    Ok(info)
}

impl ServerInfo {
    /// Records what a Prometheus exposition reveals; ignores text that holds no samples.
    pub fn add_metrics(&mut self, url: &str, text: &str) {
        let e = Exposition::parse(text);
        if e.samples.is_empty() {
            return;
        }
        self.metrics_url = Some(url.to_string());
        self.metric_families = e.types.keys().cloned().collect();
        for s in e.samples.iter().filter(|s| s.name.ends_with("_info")) {
            self.metrics_info
                .entry(s.name.clone())
                .or_insert_with(|| s.labels.iter().cloned().collect());
        }
    }
}
