//! `qexp sim`: the simulated server, until Ctrl-C.

use crate::{CliError, SimArgs};
use qexp_sim::{FaultPlan, SimProfile, SimServer};

/// `qexp sim`: serves until Ctrl-C.
pub(crate) async fn sim(args: SimArgs) -> Result<u8, CliError> {
    let spec = match &args.model_file {
        Some(path) => format!("fit={}", path.display()),
        None => args.profile.clone(),
    };
    let mut profile = SimProfile::lookup(&spec).map_err(CliError::input)?;
    profile.faults = FaultPlan::parse(args.faults.as_deref().unwrap_or(""), args.fault_seed)
        .map_err(CliError::input)?;
    profile.model = args.model.clone();
    profile.loop_share = args.loop_share.unwrap_or(profile.loop_share);
    profile.wrong_share = args.wrong_share.unwrap_or(profile.wrong_share);
    profile.wrong_share_per_seq = args
        .wrong_share_per_seq
        .unwrap_or(profile.wrong_share_per_seq);
    profile.malformed_share = args.malformed_share.unwrap_or(profile.malformed_share);
    profile.malformed_share_per_seq = args
        .malformed_share_per_seq
        .unwrap_or(profile.malformed_share_per_seq);
    profile.stop_share = args.stop_share.unwrap_or(profile.stop_share);
    profile.time_scale *= args.time_scale;
    profile.validate().map_err(CliError::input)?;
    let profile_name = profile.name.clone();
    let server = SimServer::start_at(profile, (args.host, args.port).into())
        .await
        .map_err(CliError::failure)?;
    println!(
        "qexp sim: profile `{}` serving on {} (Ctrl-C to stop)",
        profile_name,
        server.base_url()
    );
    // Ctrl-C, or TERM from whoever launched it (`qexp run` stops the
    // deployments it started with TERM).
    wait_for_stop().await;
    server.shutdown().await;
    Ok(0)
}

/// Waits for Ctrl-C or SIGTERM.
async fn wait_for_stop() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        if let Ok(mut term) = signal(SignalKind::terminate()) {
            tokio::select! {
                _ = tokio::signal::ctrl_c() => {}
                _ = term.recv() => {}
            }
            return;
        }
    }
    let _ = tokio::signal::ctrl_c().await;
}
