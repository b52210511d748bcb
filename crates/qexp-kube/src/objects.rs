//! The four objects of a sharded run, as JSON values in the Kubernetes API's
//! shapes (batch/v1 Job, v1 Service, ConfigMap, PersistentVolumeClaim).

use crate::names::{label, Names};
use serde_json::{json, Value};

/// The port shard 0 serves the rendezvous on, inside its pod.
pub const RENDEZVOUS_PORT: u16 = 7077;
/// Where the results claim is mounted in every pod (the shards' `--out`).
pub const RESULTS_MOUNT: &str = "/results";
/// Where the plan's ConfigMap is mounted.
const PLAN_MOUNT: &str = "/plan";
/// The plan's key inside the ConfigMap.
const PLAN_FILE: &str = "plan.toml";
/// What one ConfigMap holds (etcd's limit on an object is 1.5 MiB; the
/// rest is headroom for the object's other fields).
pub const CONFIGMAP_MAX_BYTES: usize = 1024 * 1024;

/// A file the plan reads (a dataset, a trace), shipped in the plan's
/// ConfigMap at the place the plan expects it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PodFile {
    /// Its path under the plan's mount, `/`-separated, no `..`.
    pub path: String,
    /// Its text.
    pub text: String,
}

/// An environment variable of every shard taken from a Secret, for the
/// plan's `target.api_key_env`: the key itself is never written into the objects.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SecretEnv {
    /// The variable the plan names.
    pub env: String,
    /// The Secret, in the objects' namespace.
    pub secret: String,
    /// The key inside the Secret.
    pub key: String,
}

/// What `qexp kube` was asked for.
#[derive(Debug, Clone)]
pub struct JobSpec {
    /// The plan's experiment name (names the objects).
    pub experiment: String,
    /// The plan, verbatim.
    pub plan_text: String,
    /// The plan's path under the mount (`plan.toml`, or deeper when its
    /// files sit beside it: see [`pod_paths`]).
    pub plan_path: String,
    /// The files the plan reads, placed where it reads them.
    pub files: Vec<PodFile>,
    /// The plan's API key, from a Secret.
    pub api_key: Option<SecretEnv>,
    /// Shards: pods of the Job.
    pub shards: u32,
    /// The container image with `qexp` on its PATH.
    pub image: String,
    /// The run id every shard shares.
    pub run_id: String,
    /// `--target` for every shard, when the plan's base URL is not the one to use.
    pub target: Option<String>,
    /// The objects' namespace.
    pub namespace: String,
    /// CPU per shard (a Kubernetes quantity).
    pub cpu: String,
    /// Memory per shard (a Kubernetes quantity).
    pub memory: String,
    /// Where the shards' run folders go.
    pub results: Results,
}

/// Where the shards' run folders go.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Results {
    /// A PersistentVolumeClaim (ReadWriteMany) every pod mounts at
    /// [`RESULTS_MOUNT`].
    Claim {
        /// Its size (a Kubernetes quantity).
        storage: String,
        /// Its storage class [default: the cluster's].
        class: Option<String>,
    },
    /// An object store: each pod writes its folder to an `emptyDir` at
    /// [`RESULTS_MOUNT`], and `qexp run --upload` copies it to the URL as
    /// the run goes and when it ends.
    ObjectStore {
        /// The URL (`s3://BUCKET/PREFIX`), checked by the caller.
        url: String,
        /// The Secret whose keys become each pod's environment (the S3
        /// client's `AWS_*` variables): referenced, never read.
        secret: Option<String>,
        /// The emptyDir's size limit (a Kubernetes quantity).
        size_limit: String,
    },
}

/// Seconds a pod of an object-store run gets between SIGTERM and SIGKILL:
/// the run stops sending, saves, and uploads what it has left.
const UPLOAD_GRACE_S: u32 = 120;

/// Why the objects cannot be written.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum KubeError {
    /// A shard count outside 1 to 10000.
    #[error("--shards {0}: give 1 to 10000 shards")]
    Shards(u32),
    /// A flag's value the objects cannot carry.
    #[error("--{flag} `{value}`: {give}")]
    Flag {
        /// The flag, without its dashes.
        flag: &'static str,
        /// The value given.
        value: String,
        /// What to give instead, in a phrase.
        give: &'static str,
    },
    /// The plan and its files are more than a ConfigMap holds.
    #[error("the plan and its files are {:.1} MiB, over the 1 MiB a ConfigMap holds: build the files into the image or copy them onto the results claim, and give the plan absolute paths to them", *bytes as f64 / 1048576.0)]
    TooLarge {
        /// Their size, keys included.
        bytes: usize,
    },
    /// A file the plan names by its absolute path (or its folder alone).
    #[error("the plan reads `{0}`: only files named relative to the plan travel into the pod (one named by its absolute path is read where it is, from the image or the results claim)")]
    NotRelative(String),
    /// Files named above the file system's root.
    #[error("the plan reads files {0} folders above its own, above the file system's root")]
    AboveRoot(usize),
}

/// A flag's value refused.
fn bad_flag(flag: &'static str, value: impl ToString, give: &'static str) -> Result<(), KubeError> {
    Err(KubeError::Flag {
        flag,
        value: value.to_string(),
        give,
    })
}

fn check(spec: &JobSpec) -> Result<(), KubeError> {
    if spec.shards == 0 || spec.shards > 10_000 {
        return Err(KubeError::Shards(spec.shards));
    }
    if spec.image.trim().is_empty() || spec.image.chars().any(char::is_whitespace) {
        return bad_flag("image", &spec.image, "give an image reference");
    }
    if label(&spec.namespace, 63) != spec.namespace {
        return bad_flag(
            "namespace",
            &spec.namespace,
            "a namespace is lower case letters, digits and `-`",
        );
    }
    if !run_id_ok(&spec.run_id) {
        return bad_flag(
            "run-id",
            &spec.run_id,
            "use at most 63 letters, digits, `.`, `_` and `-`, starting and ending with a letter or digit",
        );
    }
    let storage = match &spec.results {
        Results::Claim { storage, .. } => storage,
        Results::ObjectStore { size_limit, .. } => size_limit,
    };
    for (flag, q) in [
        ("cpu", &spec.cpu),
        ("memory", &spec.memory),
        ("storage", storage),
    ] {
        let ok = q.starts_with(|c: char| c.is_ascii_digit())
            && q.chars().all(|c| c.is_ascii_alphanumeric() || c == '.');
        if !ok {
            return bad_flag(flag, q, "give a Kubernetes quantity such as 2, 500m, 4Gi");
        }
    }
    // Kubernetes counts the keys as well as the values.
    let bytes: usize = PLAN_FILE.len()
        + spec.plan_text.len()
        + spec
            .files
            .iter()
            .enumerate()
            .map(|(i, f)| file_key(i).len() + f.text.len())
            .sum::<usize>();
    if bytes > CONFIGMAP_MAX_BYTES {
        return Err(KubeError::TooLarge { bytes });
    }
    if let Results::ObjectStore {
        secret: Some(secret),
        ..
    } = &spec.results
    {
        if !dns_subdomain(secret) {
            return bad_flag(
                "object-store-secret",
                secret,
                "give a Secret's name (lower case letters, digits, `-` and `.`)",
            );
        }
    }
    if let Some(k) = &spec.api_key {
        if !dns_subdomain(&k.secret) || !secret_key(&k.key) {
            return bad_flag(
                "api-key-secret",
                format!("{}:{}", k.secret, k.key),
                "give a Secret's name (lower case letters, digits, `-` and `.`) and a key in it (letters, digits, `-`, `_` and `.`)",
            );
        }
    }
    Ok(())
}

/// A run id a label value can carry: at most 63 letters, digits, `.`, `_`
/// and `-`, starting and ending with a letter or digit.
fn run_id_ok(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= 63
        && id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
        && id.starts_with(|c: char| c.is_ascii_alphanumeric())
        && id.ends_with(|c: char| c.is_ascii_alphanumeric())
}

/// A Secret's name: a DNS subdomain (RFC 1123), as the API server checks it.
fn dns_subdomain(name: &str) -> bool {
    name.len() <= 253
        && name.split('.').all(|part| {
            let b = part.as_bytes();
            !b.is_empty()
                && b.iter()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'-')
                && b[0] != b'-'
                && b[b.len() - 1] != b'-'
        })
}

/// A key in a Secret: `[-._a-zA-Z0-9]+`, at most 253 bytes, not `.` or `..`.
fn secret_key(key: &str) -> bool {
    !key.is_empty()
        && key.len() <= 253
        && key != "."
        && key != ".."
        && key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
}

/// Where the plan and the files it names go under the mount, so that each
/// relative path in the plan still reaches its file: `plan_dir` is the
/// plan's folder (absolute, as components), `file` each path as the plan
/// writes it. With `../data/x.jsonl` beside `/repo/experiments/p.toml`
/// the plan goes to `experiments/p.toml` and the file to `data/x.jsonl`.
/// Returns the plan's path and each file's, or why a path cannot travel
/// (absolute, or climbing above the root).
pub fn pod_paths(
    plan_dir: &[String],
    plan_name: &str,
    files: &[String],
) -> Result<(String, Vec<String>), KubeError> {
    let mut parts: Vec<(usize, Vec<String>)> = Vec::new();
    for f in files {
        let mut up = 0;
        let mut rest: Vec<String> = Vec::new();
        for c in f.split('/').filter(|c| !c.is_empty() && *c != ".") {
            match (c, rest.is_empty()) {
                ("..", true) => up += 1,
                ("..", false) => {
                    rest.pop();
                }
                _ => rest.push(c.to_string()),
            }
        }
        if f.starts_with('/') || rest.is_empty() {
            return Err(KubeError::NotRelative(f.to_string()));
        }
        parts.push((up, rest));
    }
    let depth = parts.iter().map(|(up, _)| *up).max().unwrap_or(0);
    if depth > plan_dir.len() {
        return Err(KubeError::AboveRoot(depth));
    }
    let base = &plan_dir[plan_dir.len() - depth..];
    let plan_path = base
        .iter()
        .map(String::as_str)
        .chain([plan_name])
        .collect::<Vec<_>>()
        .join("/");
    let paths = parts
        .into_iter()
        .map(|(up, rest)| {
            base[..depth - up]
                .iter()
                .chain(&rest)
                .map(String::as_str)
                .collect::<Vec<_>>()
                .join("/")
        })
        .collect();
    Ok((plan_path, paths))
}

/// The ConfigMap, Service, PersistentVolumeClaim (unless the results go
/// to an object store) and Job of `spec`, in the order to apply them. The
/// run's objects carry its run id as the label `qexp.dev/run-id`; the
/// claim, shared by the experiment's runs, does not.
pub fn objects(spec: &JobSpec) -> Result<Vec<Value>, KubeError> {
    check(spec)?;
    let names = Names::new(&spec.experiment, &spec.run_id);
    let labels = json!({
        "app.kubernetes.io/name": "qexp",
        "app.kubernetes.io/instance": names.run,
        crate::RUN_ID_LABEL: spec.run_id,
    });
    let meta = |n: String| json!({"name": n, "namespace": spec.namespace, "labels": labels});
    let mut data = serde_json::Map::new();
    data.insert(PLAN_FILE.into(), json!(spec.plan_text));
    for (i, f) in spec.files.iter().enumerate() {
        data.insert(file_key(i), json!(f.text));
    }
    let plan = json!({
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": meta(names.plan()),
        "data": data,
    });
    let service = json!({
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": meta(names.run.clone()),
        "spec": {
            "clusterIP": "None",
            // Shard 0's name resolves as soon as its pod runs, before any readiness.
            "publishNotReadyAddresses": true,
            "selector": {"app.kubernetes.io/instance": names.run, crate::RUN_ID_LABEL: spec.run_id},
            "ports": [{"name": "rendezvous", "port": RENDEZVOUS_PORT, "targetPort": RENDEZVOUS_PORT, "protocol": "TCP"}],
        },
    });
    let mut out = vec![plan, service];
    if let Results::Claim { storage, class } = &spec.results {
        let mut claim_spec = json!({
            "accessModes": ["ReadWriteMany"],
            "resources": {"requests": {"storage": storage}},
        });
        if let Some(class) = class {
            claim_spec["storageClassName"] = json!(class);
        }
        out.push(json!({
            "apiVersion": "v1",
            "kind": "PersistentVolumeClaim",
            "metadata": {
                "name": names.claim(),
                "namespace": spec.namespace,
                "labels": {"app.kubernetes.io/name": "qexp", "app.kubernetes.io/instance": names.experiment},
            },
            "spec": claim_spec,
        }));
    }
    out.push(job(spec, &names, &labels));
    Ok(out)
}

/// The results volume, the arguments that send the run folder to the
/// object store, the environment it is reached with and the grace a
/// stopped pod needs, for `spec.results`.
fn results_volume(spec: &JobSpec, names: &Names) -> (Value, Vec<String>, Vec<Value>, Option<u32>) {
    match &spec.results {
        Results::Claim { .. } => (
            json!({"name": "results", "persistentVolumeClaim": {"claimName": names.claim()}}),
            Vec::new(),
            Vec::new(),
            None,
        ),
        Results::ObjectStore {
            url,
            secret,
            size_limit,
        } => (
            json!({"name": "results", "emptyDir": {"sizeLimit": size_limit}}),
            vec!["--upload".into(), url.clone()],
            secret
                .iter()
                .map(|s| json!({"secretRef": {"name": s}}))
                .collect(),
            Some(UPLOAD_GRACE_S),
        ),
    }
}

/// The ConfigMap key of the plan's `i`th file.
fn file_key(i: usize) -> String {
    format!("file-{i}")
}

/// The plan's volume: each key of the ConfigMap at its path under the mount.
fn plan_volume(spec: &JobSpec, names: &Names) -> Value {
    let mut volume = json!({"name": "plan", "configMap": {"name": names.plan()}});
    if spec.files.is_empty() && spec.plan_path == PLAN_FILE {
        return volume;
    }
    let mut items = vec![json!({"key": PLAN_FILE, "path": spec.plan_path})];
    for (i, f) in spec.files.iter().enumerate() {
        items.push(json!({"key": file_key(i), "path": f.path}));
    }
    volume["configMap"]["items"] = json!(items);
    volume
}

/// The Indexed Job: pod K runs shard K; shard 0's pod is `<job>-0.<service>`.
fn job(spec: &JobSpec, names: &Names, labels: &Value) -> Value {
    let n = spec.shards;
    let (results, upload, env_from, grace) = results_volume(spec, names);
    let mut args = shard_args(spec, names);
    args.extend(upload);
    let container = container(spec, args, env_from);
    let volumes = [plan_volume(spec, names), results];
    json!({
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": names.run, "namespace": spec.namespace, "labels": labels},
        "spec": {
            "completionMode": "Indexed",
            "completions": n,
            "parallelism": n,
            // A failed shard is resumed by hand (`qexp run --resume`), never
            // restarted from scratch into a folder that exists; and its failure
            // ends only its own index, so the other shards finish the run
            // (a Job-wide backoffLimit would stop every pod at the first).
            "backoffLimitPerIndex": 0,
            "maxFailedIndexes": n,
            "template": {
                "metadata": {"labels": labels},
                "spec": pod(&names.run, container, volumes, grace),
            },
        },
    })
}

/// The arguments of `qexp run` in every pod: the mounted plan, the shard
/// its index gives, the shared run id, shard 0's rendezvous, the results
/// mount and the plan's target override.
fn shard_args(spec: &JobSpec, names: &Names) -> Vec<String> {
    let mut args = vec![
        "run".to_string(),
        format!("{PLAN_MOUNT}/{}", spec.plan_path),
        "--shard".into(),
        format!("auto/{}", spec.shards),
        "--run-id".into(),
        spec.run_id.clone(),
        "--rendezvous".into(),
        format!("{}:{RENDEZVOUS_PORT}", names.shard0_host()),
        "--rendezvous-bind".into(),
        format!("[::]:{RENDEZVOUS_PORT}"),
        "--out".into(),
        RESULTS_MOUNT.into(),
        "--no-report".into(),
    ];
    if let Some(t) = &spec.target {
        args.extend(["--target".to_string(), t.clone()]);
    }
    args
}

/// The shard's container: qexp with `args` and the spec's resources, the
/// API key read from its Secret into the plan's variable, `env_from` (the
/// object store's Secret), and no privilege it could gain.
fn container(spec: &JobSpec, args: Vec<String>, env_from: Vec<Value>) -> Value {
    let resources = json!({"cpu": spec.cpu, "memory": spec.memory});
    let env: Vec<Value> = spec
        .api_key
        .iter()
        .map(|k| json!({"name": k.env, "valueFrom": {"secretKeyRef": {"name": k.secret, "key": k.key}}}))
        .collect();
    let mut container = json!({
        "name": "qexp",
        "image": spec.image,
        "command": ["qexp"],
        "args": args,
        "ports": [{"name": "rendezvous", "containerPort": RENDEZVOUS_PORT, "protocol": "TCP"}],
        "resources": {"requests": resources, "limits": resources},
        "securityContext": {
            "allowPrivilegeEscalation": false,
            "capabilities": {"drop": ["ALL"]},
        },
        "volumeMounts": [
            {"name": "plan", "mountPath": PLAN_MOUNT, "readOnly": true},
            {"name": "results", "mountPath": RESULTS_MOUNT},
        ],
    });
    if !env.is_empty() {
        container["env"] = json!(env);
    }
    if !env_from.is_empty() {
        container["envFrom"] = json!(env_from);
    }
    container
}

/// Each shard's pod: `container` as the image's non-root user, with the
/// plan and results `volumes`, under the Service `subdomain`, never
/// restarted, and given `grace` seconds to stop where it has an upload to
/// finish.
fn pod(subdomain: &str, container: Value, volumes: [Value; 2], grace: Option<u32>) -> Value {
    let mut pod = json!({
        "subdomain": subdomain,
        "restartPolicy": "Never",
        // The image's user. fsGroup makes the claim writable for it
        // only where the volume's driver applies fsGroup (many NFS
        // drivers do not: docs/kubernetes.md). RuntimeDefault
        // seccomp, with the container's settings, is what a
        // namespace enforcing Pod Security "restricted" asks for.
        "securityContext": {
            "runAsNonRoot": true,
            "runAsUser": 65532,
            "runAsGroup": 65532,
            "fsGroup": 65532,
            "seccompProfile": {"type": "RuntimeDefault"},
        },
        "containers": [container],
        "volumes": volumes,
    });
    if let Some(grace) = grace {
        pod["terminationGracePeriodSeconds"] = json!(grace);
    }
    pod
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A container's arguments.
    fn args_of(container: &Value) -> Vec<&str> {
        container["args"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|a| a.as_str())
            .collect()
    }

    fn spec() -> JobSpec {
        JobSpec {
            experiment: "Throughput_sweep".into(),
            plan_text: "[experiment]\nname = \"x\"\n".into(),
            plan_path: "plan.toml".into(),
            files: Vec::new(),
            api_key: None,
            shards: 8,
            image: "ghcr.io/me/qexp:0.1".into(),
            run_id: "20261203T140000Z-abc123".into(),
            target: None,
            namespace: "default".into(),
            cpu: "2".into(),
            memory: "4Gi".into(),
            results: Results::Claim {
                storage: "10Gi".into(),
                class: None,
            },
        }
    }

    #[test]
    fn the_job_is_indexed_with_one_pod_per_shard() {
        let objs = objects(&spec()).unwrap();
        let kinds: Vec<&str> = objs.iter().filter_map(|o| o["kind"].as_str()).collect();
        assert_eq!(
            kinds,
            ["ConfigMap", "Service", "PersistentVolumeClaim", "Job"]
        );
        let job = &objs[3]["spec"];
        assert_eq!(job["completionMode"], "Indexed");
        assert_eq!(
            (job["completions"].as_u64(), job["parallelism"].as_u64()),
            (Some(8), Some(8))
        );
        let pod = &job["template"]["spec"];
        assert_eq!(pod["subdomain"], objs[1]["metadata"]["name"]);
        let args = args_of(&pod["containers"][0]);
        assert!(
            args.windows(2).any(|w| w == ["--shard", "auto/8"]),
            "{args:?}"
        );
        // sha256("20261203T140000Z-abc123") starts 3b6ea526.
        assert_eq!(
            objs[3]["metadata"]["name"],
            "qexp-throughput-sweep-3b6ea526"
        );
        assert!(
            args.contains(&"qexp-throughput-sweep-3b6ea526-0.qexp-throughput-sweep-3b6ea526:7077"),
            "{args:?}"
        );
    }

    /// A second run of one experiment applies beside the first: its Job,
    /// Service and ConfigMap are new objects (a Job's pod template cannot
    /// change, and the first run's Service must keep selecting its pods),
    /// the claim is the same one, and deleting by the run-id label removes
    /// one run's objects and never the claim.
    #[test]
    fn a_second_run_of_an_experiment_has_objects_of_its_own() {
        let first = objects(&spec()).unwrap();
        let mut s = spec();
        s.run_id = "20261203T160000Z-def456".into();
        let second = objects(&s).unwrap();
        let name = |o: &Value| o["metadata"]["name"].as_str().unwrap().to_string();
        for (a, b) in first.iter().zip(&second) {
            if a["kind"] == "PersistentVolumeClaim" {
                assert_eq!(name(a), name(b));
                assert_eq!(name(a), "qexp-throughput-sweep-results");
                assert!(a["metadata"]["labels"].get(crate::RUN_ID_LABEL).is_none());
            } else {
                assert_ne!(name(a), name(b), "{}", a["kind"]);
                assert_eq!(
                    b["metadata"]["labels"][crate::RUN_ID_LABEL],
                    "20261203T160000Z-def456"
                );
            }
        }
        // The Service selects this run's pods, and the pods mount this run's plan.
        let pod = &second[3]["spec"]["template"];
        for (k, v) in second[1]["spec"]["selector"].as_object().unwrap() {
            assert_eq!(&pod["metadata"]["labels"][k], v, "{k}");
        }
        assert_eq!(
            pod["spec"]["volumes"][0]["configMap"]["name"].as_str(),
            Some(format!("{}-plan", name(&second[3])).as_str())
        );
        assert_eq!(name(&second[0]), format!("{}-plan", name(&second[3])));
        assert_eq!(
            pod["spec"]["volumes"][1]["persistentVolumeClaim"]["claimName"],
            "qexp-throughput-sweep-results"
        );
    }

    /// What a namespace enforcing Pod Security "restricted" checks.
    #[test]
    fn the_pods_meet_pod_security_restricted() {
        let objs = objects(&spec()).unwrap();
        let pod = &objs[3]["spec"]["template"]["spec"];
        assert_eq!(pod["securityContext"]["runAsNonRoot"], true);
        assert_eq!(
            pod["securityContext"]["seccompProfile"]["type"],
            "RuntimeDefault"
        );
        let c = &pod["containers"][0]["securityContext"];
        assert_eq!(c["allowPrivilegeEscalation"], false);
        assert_eq!(c["capabilities"]["drop"], json!(["ALL"]));
    }

    #[test]
    fn an_object_store_replaces_the_claim_and_its_secret_stays_a_reference() {
        let mut s = spec();
        s.results = Results::ObjectStore {
            url: "s3://bench/qexp".into(),
            secret: Some("s3-creds".into()),
            size_limit: "5Gi".into(),
        };
        let objs = objects(&s).unwrap();
        let kinds: Vec<&str> = objs.iter().filter_map(|o| o["kind"].as_str()).collect();
        assert_eq!(kinds, ["ConfigMap", "Service", "Job"]);
        let pod = &objs[2]["spec"]["template"]["spec"];
        assert_eq!(pod["volumes"][1]["emptyDir"]["sizeLimit"], "5Gi");
        assert_eq!(pod["terminationGracePeriodSeconds"], 120);
        let c = &pod["containers"][0];
        let args = args_of(c);
        assert!(
            args.windows(2)
                .any(|w| w == ["--upload", "s3://bench/qexp"]),
            "{args:?}"
        );
        assert!(args.windows(2).any(|w| w == ["--out", RESULTS_MOUNT]));
        assert_eq!(c["envFrom"][0]["secretRef"]["name"], "s3-creds");
        s.results = Results::ObjectStore {
            url: "s3://bench/qexp".into(),
            secret: Some("S3_Creds".into()),
            size_limit: "5Gi".into(),
        };
        let e = objects(&s).unwrap_err().to_string();
        assert!(e.starts_with("--object-store-secret"), "{e}");
    }

    #[test]
    fn bad_values_are_refused_in_one_sentence() {
        for (edit, says) in [
            (
                Box::new(|s: &mut JobSpec| s.shards = 0) as Box<dyn Fn(&mut JobSpec)>,
                "--shards",
            ),
            (
                Box::new(|s: &mut JobSpec| s.image = "a b".into()),
                "--image",
            ),
            (Box::new(|s: &mut JobSpec| s.cpu = "lots".into()), "--cpu"),
            (
                Box::new(|s: &mut JobSpec| s.run_id = "-x".into()),
                "--run-id",
            ),
            (
                Box::new(|s: &mut JobSpec| s.namespace = "Prod".into()),
                "--namespace",
            ),
        ] {
            let mut s = spec();
            edit(&mut s);
            let e = objects(&s).unwrap_err().to_string();
            assert!(e.starts_with(says), "{e}");
        }
    }

    #[test]
    fn files_go_where_the_plan_reads_them() {
        let dir: Vec<String> = ["repo", "experiments"].map(String::from).to_vec();
        let (plan, paths) = pod_paths(
            &dir,
            "p.toml",
            &[
                "../data/x.jsonl".into(),
                "./trace.csv".into(),
                "a/../b.csv".into(),
            ],
        )
        .unwrap();
        assert_eq!(plan, "experiments/p.toml");
        assert_eq!(
            paths,
            ["data/x.jsonl", "experiments/trace.csv", "experiments/b.csv"]
        );
        let (plan, paths) = pod_paths(&dir, "p.toml", &["t.csv".into()]).unwrap();
        assert_eq!((plan.as_str(), paths[0].as_str()), ("p.toml", "t.csv"));
        for bad in ["/abs/x.csv", "../../../x.csv", ".."] {
            let e = pod_paths(&dir, "p.toml", &[bad.into()]).unwrap_err();
            assert!(e.to_string().starts_with("the plan reads"), "{bad}: {e}");
        }
    }

    #[test]
    fn files_and_the_key_reach_the_pod_and_the_key_stays_a_reference() {
        let mut s = spec();
        s.plan_path = "experiments/p.toml".into();
        s.files = vec![PodFile {
            path: "data/x.jsonl".into(),
            text: "{\"prompt\": \"hi\"}\n".into(),
        }];
        s.api_key = Some(SecretEnv {
            env: "OPENAI_API_KEY".into(),
            secret: "llm-key".into(),
            key: "token".into(),
        });
        let objs = objects(&s).unwrap();
        assert_eq!(objs[0]["data"]["file-0"], "{\"prompt\": \"hi\"}\n");
        let pod = &objs[3]["spec"]["template"]["spec"];
        let items = &pod["volumes"][0]["configMap"]["items"];
        assert_eq!(items[0]["path"], "experiments/p.toml");
        assert_eq!(
            (items[1]["key"].as_str(), items[1]["path"].as_str()),
            (Some("file-0"), Some("data/x.jsonl"))
        );
        let c = &pod["containers"][0];
        assert_eq!(c["args"][1], "/plan/experiments/p.toml");
        assert_eq!(c["env"][0]["name"], "OPENAI_API_KEY");
        assert_eq!(c["env"][0]["valueFrom"]["secretKeyRef"]["name"], "llm-key");
        s.files[0].text = "x".repeat(CONFIGMAP_MAX_BYTES);
        let e = objects(&s).unwrap_err().to_string();
        assert!(e.contains("over the 1 MiB a ConfigMap holds"), "{e}");
        // The keys count too: values that fit alone do not with their keys.
        s.files[0].text = "x".repeat(CONFIGMAP_MAX_BYTES - s.plan_text.len());
        assert!(objects(&s).is_err());
    }

    #[test]
    fn secret_names_and_keys_are_checked_as_the_api_server_does() {
        for (secret, key, ok) in [
            ("llm-key", "token", true),
            ("llm.key", "api_key.txt", true),
            ("llm-key", "api/key", false),
            ("llm-key", "..", false),
            ("llm-key", "", false),
            ("LLM", "token", false),
            ("-llm", "token", false),
            ("llm..key", "token", false),
        ] {
            let mut s = spec();
            s.api_key = Some(SecretEnv {
                env: "OPENAI_API_KEY".into(),
                secret: secret.into(),
                key: key.into(),
            });
            assert_eq!(objects(&s).is_ok(), ok, "{secret}:{key}");
        }
    }
}
