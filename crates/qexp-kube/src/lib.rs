//! qexp-kube writes the Kubernetes objects that run a plan as N shards on
//! N client pods (`qexp kube`): the plan as a ConfigMap, a headless
//! Service through which the shards reach shard 0's rendezvous, a
//! PersistentVolumeClaim the shards write their run folders to (or, with
//! an object-store URL, an emptyDir per pod that `qexp run --upload`
//! copies there, credentials taken from a Secret by reference), and an
//! Indexed Job whose pod K runs `qexp run --shard auto/N` (Kubernetes sets
//! `JOB_COMPLETION_INDEX` to K). Kubernetes runs the pods; qexp only
//! describes them. It owns no plan parsing (the caller passes the plan's
//! name and text) and talks to no cluster.

mod names;
mod objects;
mod yaml;

pub use objects::{
    objects, pod_paths, JobSpec, KubeError, PodFile, Results, SecretEnv, CONFIGMAP_MAX_BYTES,
    RENDEZVOUS_PORT, RESULTS_MOUNT,
};
pub use yaml::to_yaml;

/// The label every object of one run carries, with the run id as its
/// value (the results claim, shared by the experiment's runs, does not).
pub const RUN_ID_LABEL: &str = "qexp.dev/run-id";

/// The name of `spec`'s Job (and Service): `qexp-<experiment>-<hash of the run id>`.
pub fn job_name(spec: &JobSpec) -> String {
    names::Names::new(&spec.experiment, &spec.run_id).run
}

/// The objects of `spec` as one YAML stream (`---` between documents), ready for `kubectl apply --server-side -f`.
pub fn manifest(spec: &JobSpec) -> Result<String, KubeError> {
    let docs = objects(spec)?;
    let mut out = format!(
        "# qexp kube: run {id} of experiment `{}` as {} shards (Job {}).\n\
         # kubectl apply --server-side -f this file; see docs/kubernetes.md.\n\
         # Afterwards: kubectl delete job,svc,cm -l {RUN_ID_LABEL}={id} (the results claim stays).\n",
        spec.experiment,
        spec.shards,
        job_name(spec),
        id = spec.run_id,
    );
    for d in docs {
        out.push_str("---\n");
        out.push_str(&to_yaml(&d));
    }
    Ok(out)
}
