use crate::{CliError, SimArgs};
use qexp_sim::{FaultPlan, SimProfile, SimServer};

/// `qexp sim`: serves until Ctrl-C.
pub(crate) async fn sim(args: SimArgs) -> Result<u8, CliError> {
    let mut profile = SimProfile::by_name(&args.profile).ok_or_else(|| {
        CliError::input(anyhow::anyhow!(
            "unknown simulator profile `{}`; known profiles: {}",
            args.profile,
            SimProfile::names().join(", ")
        ))
    })?;
    profile.faults = FaultPlan::parse(args.faults.as_deref().unwrap_or(""), args.fault_seed)
        .map_err(CliError::input)?;
    let server = SimServer::start_on(profile, args.port)
        .await
        .map_err(CliError::failure)?;
    println!(
        "qexp sim: profile `{}` serving on {} (Ctrl-C to stop)",
        args.profile,
        server.base_url()
    );
    let _ = tokio::signal::ctrl_c().await;
    server.shutdown().await;
    Ok(0)
}
