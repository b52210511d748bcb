//! The comparability fingerprint of a run: the workload keys (what was
//! asked; they must match for `qexp diff` to compare) and the deployment keys
//! (what answered; shown side by side). Every value is an explicit, stable
//! string, never `{:?}` output: the workload hash of recorded runs depends on
//! them, and renaming an enum variant must not make old runs incomparable.

use qexp_client::{Fingerprint, ServerInfo};
use qexp_plan::Plan;
use qexp_provenance::HostInfo;
use qexp_store::Comparability;
use serde_json::{Map, Value};
use std::collections::{BTreeMap, BTreeSet};

/// The workload keys of a plan sent with `extra` body fields, reading
/// prompts from a dataset file with this SHA-256, if any.
pub(crate) fn workload(
    plan: &Plan,
    extra: &Map<String, Value>,
    dataset_sha256: Option<&str>,
) -> BTreeMap<String, String> {
    let f = &plan.file;
    let points = plan.points();
    let distinct = |v: fn(&qexp_plan::Point) -> u32| {
        let set: BTreeSet<String> = points.iter().map(|p| v(p).to_string()).collect();
        set.into_iter().collect::<Vec<_>>().join(",")
    };
    let mut w = BTreeMap::new();
    w.insert("api".into(), f.target.api.as_str().to_string());
    w.insert("concurrency".into(), distinct(|p| p.concurrency));
    w.insert("input_tokens".into(), distinct(|p| p.input_tokens));
    w.insert("output_tokens".into(), distinct(|p| p.output_tokens));
    w.insert("requests".into(), f.run.requests().fingerprint());
    w.insert("warmup_requests".into(), f.run.warmup_requests.to_string());
    w.insert("prompt".into(), f.workload.prompt.fingerprint().to_string());
    // Only open-loop plans carry the key, so closed-loop runs keep their hash.
    let loads: BTreeSet<String> = points
        .iter()
        .filter_map(|p| p.open_loop.as_ref().map(qexp_plan::OpenLoop::fingerprint))
        .collect();
    if !loads.is_empty() {
        w.insert(
            "load".into(),
            loads.into_iter().collect::<Vec<_>>().join("; "),
        );
    }
    w.extend(crate::workload::comparability_keys(&f.workload));
    if let Some(sha) = dataset_sha256 {
        w.insert("dataset_sha256".into(), sha.to_string());
    }
    // What the requests carry: `tools`, `tool_choice` and `response_format`
    // join the body as they do when a run prepares it, so every way a run
    // is fingerprinted (one target, deployments, an import's plan) agrees.
    let mut body = extra.clone();
    for (k, v) in f.workload.structured.body_fields() {
        body.entry(k).or_insert(v);
    }
    w.insert(
        "extra_body".into(),
        serde_json::to_string(&body).unwrap_or_default(),
    );
    w
}

/// The workload keys a run of `plan` records when its prompts are the
/// plan's own (no dataset file): what `qexp import --plan` files an
/// imported run under, so that it compares with qexp's runs of the plan.
pub fn plan_workload(plan: &Plan) -> BTreeMap<String, String> {
    let extra = match serde_json::to_value(&plan.file.target.extra_body) {
        Ok(Value::Object(m)) => m,
        _ => Map::new(),
    };
    workload(plan, &extra, None)
}

/// The whole fingerprint of a run of `plan` with these `workload` keys
/// (see [`workload`]) against this server and client.
pub(crate) fn comparability(
    plan: &Plan,
    target_override: Option<&str>,
    model: &str,
    workload: BTreeMap<String, String>,
    fp: &Fingerprint,
    info: &ServerInfo,
    host: &HostInfo,
) -> Comparability {
    let mut d = BTreeMap::new();
    d.insert("model".into(), model.to_string());
    d.insert(
        "base_url".into(),
        target_override.map_or_else(
            || plan.file.target.base_url.get_ref().clone(),
            str::to_string,
        ),
    );
    d.insert("engine".into(), fp.engine.clone());
    if let Some(v) = &fp.version {
        d.insert("engine_version".into(), v.clone());
    }
    if let Some(c) = fp.max_context {
        d.insert("max_context".into(), c.to_string());
    }
    for (k, v) in &fp.flags {
        d.insert(format!("flag.{k}"), v.clone());
    }
    for (path, doc) in &info.documents {
        if let Some(v) = doc.get("version").and_then(Value::as_str) {
            d.insert(
                format!("server_version{}", path.replace('/', ".")),
                v.to_string(),
            );
        }
    }
    d.insert(
        "client_cpu".into(),
        host.cpu_model.clone().unwrap_or_default(),
    );
    d.insert(
        "client_gpus".into(),
        host.gpus
            .iter()
            .map(|g| g.name.clone())
            .collect::<Vec<_>>()
            .join(","),
    );
    Comparability::new(workload, d)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    /// The tools a plan sends are part of what was asked however the run
    /// is fingerprinted (an import's plan and deployments read the plan
    /// alone), and a tool of the plan's `extra_body` wins as it does in the
    /// request.
    #[test]
    fn the_plans_tools_are_workload_keys() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../experiments");
        let plan = Plan::load(&dir.join("tools.toml")).unwrap_or_else(|e| panic!("{e}"));
        let w = plan_workload(&plan);
        let body = &w["extra_body"];
        assert!(
            body.contains("\"tools\":[") && body.contains("get_weather"),
            "{body}"
        );
        assert!(body.contains("\"tool_choice\":\"required\""), "{body}");
        let mut extra = Map::new();
        extra.insert("tool_choice".into(), Value::String("auto".into()));
        let own = workload(&plan, &extra, None);
        assert!(own["extra_body"].contains("\"tool_choice\":\"auto\""));
        assert_ne!(
            Comparability::new(w, BTreeMap::new()).workload_hash,
            Comparability::new(own, BTreeMap::new()).workload_hash
        );
    }

    /// A plan's workload keys and hash as qexp recorded them before they
    /// were built from explicit strings (the values `{:?}` printed then):
    /// a run made today must stay comparable with those runs.
    #[test]
    fn workload_keys_and_hash_are_pinned() {
        let text = "[experiment]\nname = \"t\"\nversion = 1\n\
                    [target]\nbase_url = \"sim:founding\"\n\
                    [workload]\ninput_tokens = 1000\noutput_tokens = 500\n\
                    [sweep]\nconcurrency = [4, 1, 2]\n";
        let plan = Plan::parse(std::path::Path::new("t.toml"), text);
        let plan = match plan {
            Ok(p) => p,
            Err(e) => panic!("test plan: {e}"),
        };
        let mut extra = Map::new();
        extra.insert("ignore_eos".into(), Value::Bool(true));
        let w = workload(&plan, &extra, None);
        let pairs: Vec<(&str, &str)> = w.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        assert_eq!(
            pairs,
            [
                ("api", "chat"),
                ("concurrency", "1,2,4"),
                ("extra_body", "{\"ignore_eos\":true}"),
                ("input_tokens", "1000"),
                ("output_tokens", "500"),
                ("prompt", "RandomWords"),
                ("requests", "PerConcurrency(4)"),
                ("warmup_requests", "1"),
            ]
        );
        assert_eq!(
            Comparability::new(w, BTreeMap::new()).workload_hash,
            "020e2f6578434b70957376b19a50bc15bbcbc52a59ede0063d47dc04b0a4dcc4"
        );
    }
}
