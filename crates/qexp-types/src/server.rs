//! What a server said about itself before a run, as the manifest keeps it.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::BTreeMap;

/// Documents a server answered, by path, plus the model list and what its
/// `/metrics` revealed. qexp-client's probe fills it; the manifest stores it
/// as `server` and the report reads it back. Every field has a default, so
/// a manifest written by an older qexp reads too.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ServerInfo {
    /// The base URL asked.
    #[serde(default)]
    pub base_url: String,
    /// Model ids from `/v1/models`, in server order.
    #[serde(default)]
    pub models: Vec<String>,
    /// JSON answers by path (`/v1/models`, `/version`, …); absent when not answered.
    #[serde(default)]
    pub documents: BTreeMap<String, Value>,
    /// Where Prometheus metrics answered (a path or URL), if anywhere.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metrics_url: Option<String>,
    /// Metric family names (from `# TYPE` lines), sorted.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub metric_families: Vec<String>,
    /// Labels of `*_info` series by metric name (vLLM's `cache_config_info`, …).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub metrics_info: BTreeMap<String, BTreeMap<String, String>>,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A `server` object as manifests hold it: it must read back, and write
    /// out again key for key.
    #[test]
    fn a_recorded_server_object_round_trips() {
        let text = r#"{"base_url":"http://127.0.0.1:8000","models":["m"],"documents":{"/v1/models":{"data":[{"id":"m"}]},"/version":{"version":"0.1"}},"metrics_url":"/metrics","metric_families":["vllm:x"],"metrics_info":{"vllm:cache_config_info":{"block_size":"16"}}}"#;
        let info: ServerInfo = serde_json::from_str(text).unwrap_or_default();
        assert_eq!(info.models, ["m"]);
        assert_eq!(
            info.metrics_info["vllm:cache_config_info"]["block_size"],
            "16"
        );
        assert_eq!(serde_json::to_string(&info).unwrap_or_default(), text);
    }

    #[test]
    fn a_server_without_metrics_writes_no_metric_keys() {
        let text = r#"{"base_url":"sim:x","models":[],"documents":{}}"#;
        let info: ServerInfo = serde_json::from_str(text).unwrap_or_default();
        assert_eq!(info.base_url, "sim:x");
        assert_eq!(serde_json::to_string(&info).unwrap_or_default(), text);
    }
}
