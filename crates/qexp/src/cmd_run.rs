use crate::{cmd_report, summary, CliError, RunArgs};
use anyhow::Context as _;
use qexp_plan::Plan;
use qexp_runner::{RunError, RunOptions};
use std::collections::BTreeMap;

/// `qexp run`: returns the exit code (0 complete, 1 interrupted, 3 complete
/// with more failures than the plan tolerates).
pub(crate) async fn run(args: RunArgs) -> Result<u8, CliError> {
    let plan = Plan::load(&args.plan).map_err(CliError::input)?;
    if args.trials == Some(0) {
        return Err(CliError::input(anyhow::anyhow!(
            "--trials must be at least 1"
        )));
    }
    let mut overrides = BTreeMap::new();
    if let Some(t) = args.trials {
        overrides.insert("trials".into(), t.to_string());
    }
    if let Some(t) = &args.target {
        overrides.insert("target".into(), t.clone());
    }
    if let Some(m) = &args.model {
        overrides.insert("model".into(), m.clone());
    }
    let opts = RunOptions {
        plan,
        trials: args.trials,
        target: args.target.clone(),
        model: args.model.clone(),
        out: args.out.clone(),
        overrides,
    };
    let (tx, rx) = tokio::sync::watch::channel(false);
    tokio::spawn(async move {
        if tokio::signal::ctrl_c().await.is_ok() {
            eprintln!("\nqexp: interrupted — finishing what is in flight and saving; Ctrl-C again to abort");
            let _ = tx.send(true);
            if tokio::signal::ctrl_c().await.is_ok() {
                std::process::exit(130);
            }
        }
    });
    let result = qexp_runner::run(opts, rx).await.map_err(|e| match e {
        // A plan that does not fit the server is bad input: nothing was sent.
        RunError::Target(_) | RunError::MissingApiKey(_) | RunError::ContextTooSmall { .. } => {
            CliError::input(e)
        }
        other => CliError::failure(other),
    })?;
    let analysis = qexp_analysis::analyze(&result.dir)
        .with_context(|| {
            format!(
                "the run is saved in {}, but cannot be summarised",
                result.dir.display()
            )
        })
        .map_err(CliError::failure)?;
    eprintln!();
    println!("{}", summary::table(&analysis));
    if !args.no_report {
        cmd_report::render_one(&analysis, None, &args.reports).map_err(CliError::failure)?;
    }
    let complete = result.manifest.status == qexp_store::RunStatus::Complete;
    println!("results: {}", result.dir.display());
    for line in &result.over_tolerance {
        eprintln!("qexp: over the failure tolerance: {line}");
    }
    Ok(if !complete {
        crate::EXIT_FAILURE
    } else if !result.over_tolerance.is_empty() {
        crate::EXIT_OVER_TOLERANCE
    } else {
        0
    })
}
