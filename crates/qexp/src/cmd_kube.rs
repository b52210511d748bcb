//! `qexp kube`: the Kubernetes objects of a sharded run.

use crate::{CliError, KubeArgs};
use anyhow::Context as _;
use qexp_plan::Plan;

/// `qexp kube`: writes the Kubernetes objects of a sharded run.
pub(crate) fn kube(args: KubeArgs) -> Result<u8, CliError> {
    let plan = Plan::load(&args.plan).map_err(CliError::input)?;
    if !plan.deployments().is_empty() {
        return Err(CliError::input(anyhow::anyhow!(
            "{}: a plan with [[deployment]] tables runs in one process; `qexp kube` shards plans against one target",
            args.plan.display()
        )));
    }
    let target = plan
        .target(args.target.as_deref())
        .map_err(CliError::input)?;
    if let Some(why) = qexp_plan::in_process::shard_refusal(target, args.shards) {
        return Err(CliError::input(why));
    }
    let (plan_path, files) = plan_files(&plan)?;
    let api_key = api_key(&plan, args.api_key_secret.as_deref(), &args.plan)?;
    let spec = qexp_kube::JobSpec {
        experiment: plan.name().to_string(),
        plan_text: plan.text.clone(),
        plan_path,
        files,
        api_key,
        shards: args.shards,
        image: args.image,
        run_id: args
            .run_id
            .unwrap_or_else(|| qexp_store::new_run_id(chrono::Utc::now())),
        target: args.target,
        namespace: args.namespace,
        cpu: args.cpu,
        memory: args.memory,
        results: results(
            args.results_url,
            args.object_store_secret,
            args.storage,
            args.storage_class,
        )?,
    };
    let yaml = qexp_kube::manifest(&spec).map_err(CliError::input)?;
    match &args.out {
        Some(path) => {
            std::fs::write(path, &yaml)
                .with_context(|| format!("cannot write {}", path.display()))
                .map_err(CliError::failure)?;
            eprintln!(
                "qexp kube: wrote {} ({} shards, run {}, Job {}); kubectl apply --server-side -f {}",
                path.display(),
                spec.shards,
                spec.run_id,
                qexp_kube::job_name(&spec),
                path.display()
            );
        }
        None => print!("{yaml}"),
    }
    Ok(0)
}

/// The plan's path under the pod's mount and the files it reads, placed so
/// that its relative paths still reach them.
fn plan_files(plan: &Plan) -> Result<(String, Vec<qexp_kube::PodFile>), CliError> {
    // A file named by its absolute path is not shipped: the plan reads it
    // where it is, so the image or the results claim must hold it there.
    let (absolute, written): (Vec<String>, Vec<String>) = plan
        .files_read()
        .into_iter()
        .partition(|f| std::path::Path::new(f).is_absolute());
    for f in &absolute {
        eprintln!(
            "qexp kube: the plan reads {f} by its absolute path: it is not shipped, so the image or the results claim must hold it there"
        );
    }
    let name = plan
        .path
        .file_name()
        .map_or("plan.toml".into(), |n| n.to_string_lossy().into_owned());
    if written.is_empty() {
        return Ok(("plan.toml".into(), Vec::new()));
    }
    // A bare file name's parent is "", which `absolute` refuses: it is ".".
    let parent = plan
        .path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(std::path::Path::new("."));
    let dir = std::path::absolute(parent)
        .with_context(|| format!("cannot place {}", plan.path.display()))
        .map_err(CliError::failure)?;
    let components: Vec<String> = dir
        .components()
        .filter_map(|c| match c {
            std::path::Component::Normal(s) => Some(s.to_string_lossy().into_owned()),
            _ => None,
        })
        .collect();
    let (plan_path, paths) =
        qexp_kube::pod_paths(&components, &name, &written).map_err(CliError::input)?;
    let mut files = Vec::new();
    for (w, path) in written.iter().zip(paths) {
        let local = dir.join(w);
        let text = std::fs::read_to_string(&local)
            .with_context(|| format!("the plan reads {}: cannot ship it", local.display()))
            .map_err(CliError::input)?;
        files.push(qexp_kube::PodFile { path, text });
    }
    Ok((plan_path, files))
}

/// The Secret behind the plan's `target.api_key_env`: required when the
/// plan names one, refused when it names none.
fn api_key(
    plan: &Plan,
    flag: Option<&str>,
    path: &std::path::Path,
) -> Result<Option<qexp_kube::SecretEnv>, CliError> {
    let env = plan.file.target.api_key_env.clone();
    match (env, flag) {
        (None, None) => Ok(None),
        (Some(env), None) => Err(CliError::input(anyhow::anyhow!(
            "{}: the plan reads its API key from ${env}: give --api-key-secret SECRET[:KEY], a Secret the pods read it from",
            path.display()
        ))),
        (None, Some(_)) => Err(CliError::input(anyhow::anyhow!(
            "{}: --api-key-secret given, but the plan reads no API key (no target.api_key_env)",
            path.display()
        ))),
        (Some(env), Some(flag)) => {
            let (secret, key) = flag.split_once(':').unwrap_or((flag, env.as_str()));
            Ok(Some(qexp_kube::SecretEnv {
                env: env.clone(),
                secret: secret.to_string(),
                key: key.to_string(),
            }))
        }
    }
}

/// Where the shards' folders go: the claim, or the object store at `url`
/// (checked here; its credentials only named, for the pods to read).
fn results(
    url: Option<String>,
    secret: Option<String>,
    storage: String,
    class: Option<String>,
) -> Result<qexp_kube::Results, CliError> {
    let Some(url) = url else {
        return Ok(qexp_kube::Results::Claim { storage, class });
    };
    match qexp_objstore::scheme_of(&url).map_err(CliError::input)? {
        qexp_objstore::Scheme::S3 => {}
        qexp_objstore::Scheme::File => {
            return Err(CliError::input(anyhow::anyhow!(
                "--results-url {url}: a file:// URL names a folder inside each pod, lost with it; give an s3:// URL, or leave --results-url out for a claim"
            )))
        }
    }
    if secret.is_none() {
        eprintln!(
            "qexp kube: no --object-store-secret: the pods need their object-store credentials another way (a service account bound to a cloud role)"
        );
    }
    Ok(qexp_kube::Results::ObjectStore {
        url,
        secret,
        size_limit: storage,
    })
}
