//! What answered: engine, version, served model, context limits and the
//! flags the server reveals, read from the documents a probe collected
//! (`/v1/models`, `/version`, `/props`, `/server_info`, `/get_server_info`,
//! `/info`) and from its `/metrics` info series.

use crate::server::ServerInfo;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::BTreeMap;

/// The server's identity as far as it reveals it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Fingerprint {
    /// `vllm`, `llama.cpp`, `sglang`, `tgi`, `qexp-sim`, or `unknown`.
    pub engine: String,
    /// Engine version or build, as the server reports it.
    pub version: Option<String>,
    /// Served model.
    pub model: Option<String>,
    /// Most tokens (prompt + output) one request may hold.
    pub max_context: Option<u32>,
    /// Most prompt tokens one request may hold, where the engine caps input apart.
    #[serde(default)]
    pub max_input: Option<u32>,
    /// Where `max_context` was read, e.g. `/v1/models data[].max_model_len`.
    #[serde(default)]
    pub max_context_source: Option<String>,
    /// Flags the server reveals (prefix caching, speculative decoding, slots, …).
    pub flags: BTreeMap<String, String>,
    /// Most images one prompt may carry, where the server says (0: it
    /// takes none), and where that was read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_images: Option<(u32, String)>,
}

impl Fingerprint {
    /// Reads the fingerprint from probed documents; `model` picks the
    /// `/v1/models` entry (default: the first).
    pub fn from_info(info: &ServerInfo, model: Option<&str>) -> Fingerprint {
        let doc = |p: &str| info.documents.get(p);
        let card = model_card(doc("/v1/models"), model);
        let owned_by = card
            .and_then(|c| c.get("owned_by"))
            .and_then(Value::as_str)
            .unwrap_or("");
        let sglang_doc = doc("/server_info")
            .filter(|d| is_sglang_info(d))
            .or_else(|| doc("/get_server_info").filter(|d| is_sglang_info(d)));
        let tgi_doc = doc("/info").filter(|d| d.get("model_id").is_some());
        let props = doc("/props").filter(|d| d.get("default_generation_settings").is_some());
        let mut fp = Fingerprint {
            model: card
                .and_then(|c| c.get("id"))
                .and_then(Value::as_str)
                .map(str::to_string),
            ..Fingerprint::default()
        };
        if owned_by == "llamacpp" || (props.is_some() && owned_by != "vllm") {
            fp.llamacpp(props, card);
        } else if owned_by == "sglang" || sglang_doc.is_some() {
            fp.sglang(sglang_doc, card);
        } else if owned_by == "qexp-sim" {
            fp.engine = "qexp-sim".into();
            fp.version = str_at(doc("/version"), "/version");
            fp.context_from_card(card, "max_model_len");
        } else if owned_by == "vllm" || (doc("/version").is_some() && tgi_doc.is_none()) {
            fp.vllm(info, doc("/version"), card);
        } else if let Some(d) = tgi_doc {
            fp.tgi(d);
        } else {
            fp.engine = "unknown".into();
            fp.version = str_at(doc("/version"), "/version");
            fp.context_from_card(card, "max_model_len");
        }
        fp.images_from(card, props);
        fp
    }

    /// The image limit: a model card's `limit_mm_per_prompt.image` (named
    /// after vLLM's flag; the simulator reports it there), or none at all
    /// where llama.cpp's `/props` says its model has no vision.
    fn images_from(&mut self, card: Option<&Value>, props: Option<&Value>) {
        let limit = card
            .and_then(|c| c.pointer("/limit_mm_per_prompt/image"))
            .and_then(Value::as_u64);
        if let Some(n) = limit {
            let n = n.min(u64::from(u32::MAX)) as u32;
            self.max_images = Some((n, "/v1/models data[].limit_mm_per_prompt.image".into()));
        } else if props
            .and_then(|p| p.pointer("/modalities/vision"))
            .and_then(Value::as_bool)
            == Some(false)
        {
            self.max_images = Some((0, "/props modalities.vision = false".into()));
        }
    }

    fn context_from_card(&mut self, card: Option<&Value>, key: &str) {
        if let Some(n) = card.and_then(|c| u32_at(c, &format!("/{key}"))) {
            self.max_context = Some(n);
            self.max_context_source = Some(format!("/v1/models data[].{key}"));
        }
    }

    fn vllm(&mut self, info: &ServerInfo, version: Option<&Value>, card: Option<&Value>) {
        self.engine = "vllm".into();
        self.version = str_at(version, "/version");
        self.context_from_card(card, "max_model_len");
        if let Some(cache) = info.metrics_info.get("vllm:cache_config_info") {
            for (label, flag) in [
                ("enable_prefix_caching", "prefix_caching"),
                ("block_size", "block_size"),
                ("cache_dtype", "kv_cache_dtype"),
                ("kv_cache_size_tokens", "kv_cache_tokens"),
                ("prefix_caching_hash_algo", "prefix_caching_hash"),
            ] {
                if let Some(v) = cache.get(label) {
                    self.flags.insert(flag.into(), on_off(v));
                }
            }
        }
        if !info.metric_families.is_empty() {
            // vLLM registers its spec_decode counters only when a speculative config is set.
            let spec = info
                .metric_families
                .iter()
                .any(|f| f.starts_with("vllm:spec_decode"));
            self.flags
                .insert("speculative_decoding".into(), on_off_bool(spec));
        }
    }

    fn llamacpp(&mut self, props: Option<&Value>, card: Option<&Value>) {
        self.engine = "llama.cpp".into();
        self.version = str_at(props, "/build_info");
        if let Some(alias) = str_at(props, "/model_alias") {
            self.model.get_or_insert(alias);
        }
        // n_ctx in /props is per slot: what one request can hold.
        if let Some(n) = props.and_then(|p| u32_at(p, "/default_generation_settings/n_ctx")) {
            self.max_context = Some(n);
            self.max_context_source = Some("/props default_generation_settings.n_ctx".into());
        } else if let Some(n) = card.and_then(|c| u32_at(c, "/meta/n_ctx")) {
            self.max_context = Some(n);
            self.max_context_source = Some("/v1/models data[].meta.n_ctx".into());
        }
        if let Some(n) = props.and_then(|p| p.get("total_slots")) {
            self.flags.insert("slots".into(), scalar(n));
        }
        if let Some(n) = self.max_context {
            self.flags.insert("ctx_per_slot".into(), n.to_string());
        }
        if let Some(n) = card.and_then(|c| c.pointer("/meta/n_ctx_train")) {
            self.flags.insert("n_ctx_train".into(), scalar(n));
        }
        let params = props.and_then(|p| p.pointer("/default_generation_settings/params"));
        if let Some(s) = params.and_then(|p| p.get("speculative.types")) {
            let s = scalar(s);
            let on = !(s.is_empty() || s == "none");
            self.flags
                .insert("speculative_decoding".into(), on_off_bool(on));
            if on {
                self.flags.insert("speculative_types".into(), s);
            }
        }
        if let Some(v) = params.and_then(|p| p.get("cache_prompt")) {
            self.flags.insert("prompt_cache".into(), on_off(&scalar(v)));
        }
    }

    fn sglang(&mut self, doc: Option<&Value>, card: Option<&Value>) {
        self.engine = "sglang".into();
        self.version = str_at(doc, "/version");
        if let Some(name) = str_at(doc, "/served_model_name") {
            self.model.get_or_insert(name);
        }
        self.context_from_card(card, "max_model_len");
        if self.max_context.is_none() {
            if let Some(n) = doc.and_then(|d| u32_at(d, "/context_length")) {
                self.max_context = Some(n);
                self.max_context_source = Some("server_info context_length".into());
            }
        }
        // The KV pool bounds any single request too.
        if let Some(pool) = doc.and_then(|d| u32_at(d, "/max_total_num_tokens")) {
            if self.max_context.is_none_or(|m| pool < m) {
                self.max_context = Some(pool);
                self.max_context_source = Some("server_info max_total_num_tokens".into());
            }
            self.flags
                .insert("max_total_num_tokens".into(), pool.to_string());
        }
        self.max_input = doc.and_then(|d| u32_at(d, "/max_req_input_len"));
        let Some(d) = doc else { return };
        if let Some(v) = d.get("disable_radix_cache").and_then(Value::as_bool) {
            self.flags.insert("prefix_caching".into(), on_off_bool(!v));
        }
        match d.get("speculative_algorithm") {
            Some(Value::String(alg)) => {
                self.flags
                    .insert("speculative_decoding".into(), "on".into());
                self.flags
                    .insert("speculative_algorithm".into(), alg.clone());
                for k in [
                    "speculative_num_steps",
                    "speculative_eagle_topk",
                    "speculative_num_draft_tokens",
                ] {
                    if let Some(v) = d.get(k).filter(|v| !v.is_null()) {
                        self.flags.insert(k.into(), scalar(v));
                    }
                }
            }
            Some(Value::Null) => {
                self.flags
                    .insert("speculative_decoding".into(), "off".into());
            }
            _ => {}
        }
        for k in [
            "tp_size",
            "dp_size",
            "kv_cache_dtype",
            "chunked_prefill_size",
            "max_running_requests",
            "attention_backend",
            "page_size",
            "quantization",
        ] {
            if let Some(v) = d.get(k).filter(|v| !v.is_null()) {
                self.flags.insert(k.into(), scalar(v));
            }
        }
    }

    fn tgi(&mut self, d: &Value) {
        self.engine = "tgi".into();
        self.version = str_at(Some(d), "/version");
        self.model = str_at(Some(d), "/model_id").or(self.model.take());
        if let Some(n) = u32_at(d, "/max_total_tokens") {
            self.max_context = Some(n);
            self.max_context_source = Some("/info max_total_tokens".into());
        }
        // Renamed from max_input_length in TGI 2.0.
        self.max_input = u32_at(d, "/max_input_tokens").or_else(|| u32_at(d, "/max_input_length"));
        for k in [
            "max_input_tokens",
            "max_input_length",
            "max_total_tokens",
            "max_batch_total_tokens",
            "max_concurrent_requests",
            "max_client_batch_size",
            "model_dtype",
            "model_device_type",
            "sha",
            "docker_label",
        ] {
            if let Some(v) = d.get(k).filter(|v| !v.is_null()) {
                self.flags.insert(k.into(), scalar(v));
            }
        }
    }

    /// The server flag that raises the context limit, for messages.
    pub fn context_flag(&self) -> &'static str {
        match self.engine.as_str() {
            "vllm" => "--max-model-len",
            "sglang" => "--context-length",
            "llama.cpp" => "-c/--ctx-size (each slot gets ctx-size / --parallel)",
            "tgi" => "--max-input-tokens/--max-total-tokens",
            "qexp-sim" => "max_context (another simulator profile)",
            _ => "context-length setting",
        }
    }

    /// One line for people: `vllm 0.32.0, model m, max context 131072, prefix_caching=on`.
    pub fn summary(&self) -> String {
        let mut s = self.engine.clone();
        if let Some(v) = &self.version {
            // A version that names its engine (the simulator's `qexp-sim
            // 0.1.0`) is said once.
            let v = v
                .strip_prefix(self.engine.as_str())
                .and_then(|rest| rest.strip_prefix(' '))
                .unwrap_or(v);
            s.push(' ');
            s.push_str(v);
        }
        if let Some(m) = &self.model {
            s.push_str(&format!(", model {m}"));
        }
        if let Some(c) = self.max_context {
            s.push_str(&format!(", max context {c} tokens"));
        }
        if let Some(c) = self.max_input {
            s.push_str(&format!(", max input {c} tokens"));
        }
        if !self.flags.is_empty() {
            let f: Vec<String> = self.flags.iter().map(|(k, v)| format!("{k}={v}")).collect();
            s.push_str(&format!(", {}", f.join(" ")));
        }
        s
    }
}

fn is_sglang_info(d: &Value) -> bool {
    d.get("max_total_num_tokens").is_some()
        || d.get("internal_states").is_some()
        || d.get("disable_radix_cache").is_some()
}

/// The `/v1/models` entry for `model`, else the first.
fn model_card<'a>(models: Option<&'a Value>, model: Option<&str>) -> Option<&'a Value> {
    let data = models?.get("data")?.as_array()?;
    model
        .and_then(|m| {
            data.iter()
                .find(|c| c.get("id").and_then(Value::as_str) == Some(m))
        })
        .or_else(|| data.first())
}

fn str_at(v: Option<&Value>, ptr: &str) -> Option<String> {
    v?.pointer(ptr)
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .map(str::to_string)
}

fn u32_at(v: &Value, ptr: &str) -> Option<u32> {
    v.pointer(ptr)
        .and_then(Value::as_u64)
        .filter(|n| *n > 0)
        .map(|n| n.min(u64::from(u32::MAX)) as u32)
}

fn scalar(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

fn on_off(v: &str) -> String {
    match v.to_ascii_lowercase().as_str() {
        "true" | "1" | "on" | "yes" => "on".into(),
        "false" | "0" | "off" | "no" => "off".into(),
        _ => v.to_string(),
    }
}

fn on_off_bool(b: bool) -> String {
    if b { "on" } else { "off" }.into()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_summary_names_the_engine_once() {
        let fp = |engine: &str, version: &str| Fingerprint {
            engine: engine.into(),
            version: Some(version.into()),
            model: Some("m".into()),
            ..Fingerprint::default()
        };
        assert_eq!(
            fp("qexp-sim", "qexp-sim 0.1.0").summary(),
            "qexp-sim 0.1.0, model m"
        );
        assert_eq!(fp("vllm", "0.11.0").summary(), "vllm 0.11.0, model m");
    }
}
