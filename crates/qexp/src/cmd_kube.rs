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
    let spec = qexp_kube::JobSpec {
        experiment: plan.name().to_string(),
        plan_text: plan.text.clone(),
        shards: args.shards,
        image: args.image,
        run_id: args
            .run_id
            .unwrap_or_else(|| qexp_store::new_run_id(chrono::Utc::now())),
        target: args.target,
        namespace: args.namespace,
        cpu: args.cpu,
        memory: args.memory,
        storage: args.storage,
        storage_class: args.storage_class,
    };
    let yaml = qexp_kube::manifest(&spec).map_err(CliError::input)?;
    match &args.out {
        Some(path) => {
            std::fs::write(path, &yaml)
                .with_context(|| format!("cannot write {}", path.display()))
                .map_err(CliError::failure)?;
            eprintln!(
                "qexp kube: wrote {} ({} shards, run {}); kubectl apply -f {}",
                path.display(),
                spec.shards,
                spec.run_id,
                path.display()
            );
        }
        None => print!("{yaml}"),
    }
    Ok(0)
}
