//! `qexp fit`: the performance model fitted on runs or a table of
//! measurements.

use crate::model_text::{coefficients, metric_value, residuals};
use crate::{CliError, FitArgs};
use anyhow::anyhow;
use qexp_model::{FitOptions, MedianTable, ModelFile, Observation, Source};
use std::path::PathBuf;

/// What is fitted: observations, their sources, and the default output.
struct Input {
    rows: Vec<Observation>,
    sources: Vec<Source>,
    out: PathBuf,
    share: Option<f64>,
}

/// `qexp fit`: fits the model, writes the file, prints coefficients,
/// residuals, warnings and (with --hold-out) the held-out errors.
pub(crate) fn fit(args: FitArgs) -> Result<u8, CliError> {
    let input = match &args.table {
        Some(path) => from_table(path)?,
        None => from_runs(&args)?,
    };
    let (fitted, held): (Vec<Observation>, Vec<Observation>) = {
        for h in &args.hold_out {
            if !input.rows.iter().any(|r| &r.label == h) {
                let mut labels: Vec<&str> = input.rows.iter().map(|r| r.label.as_str()).collect();
                let mut seen = std::collections::HashSet::new();
                labels.retain(|l| seen.insert(*l));
                return Err(CliError::input(anyhow!(
                    "--hold-out `{h}` names no point; points: {}",
                    labels.join("; ")
                )));
            }
        }
        input
            .rows
            .into_iter()
            .partition(|r| !args.hold_out.contains(&r.label))
    };
    let opts = FitOptions {
        replicates: args.replicates,
        seed: args.seed,
        full_attention_share: args.full_attention_share.or(input.share).unwrap_or(1.0),
        schedule: args.schedule,
    };
    let mut model = qexp_model::fit(&fitted, &opts).map_err(CliError::input)?;
    model.sources = input.sources;
    let out = args.out.clone().unwrap_or(input.out);
    model.write(&out).map_err(CliError::failure)?;
    print_fit(&model, fitted.len(), &out);
    if !held.is_empty() {
        print!("{}", held_out(&model, &held));
    }
    Ok(0)
}

fn from_table(path: &std::path::Path) -> Result<Input, CliError> {
    let table = MedianTable::read(path).map_err(CliError::input)?;
    Ok(Input {
        rows: table.observations(),
        sources: vec![Source {
            id: table.name.clone(),
            experiment: table.name.clone(),
            plan_hash: "table".to_owned(),
            path: path.to_path_buf(),
            deployment: None,
        }],
        out: path.with_extension("model.json"),
        share: table.full_attention_share,
    })
}

fn from_runs(args: &FitArgs) -> Result<Input, CliError> {
    let dirs = args
        .runs
        .iter()
        .map(|r| qexp_store::resolve_run(r, &args.results))
        .collect::<Result<Vec<_>, _>>()
        .map_err(CliError::input)?;
    let Some(first) = dirs.first() else {
        return Err(CliError::input(anyhow!(
            "name at least one run folder (results/<experiment>/<run-id>) or --table FILE"
        )));
    };
    let mut rows = Vec::new();
    let mut sources = Vec::new();
    for (i, dir) in dirs.iter().enumerate() {
        qexp_store::read_manifest(dir).map_err(CliError::input)?;
        let run = qexp_analysis::analyze(dir).map_err(CliError::failure)?;
        let deployments = qexp_analysis::run_deployments(&run);
        if args.deployment.is_none() && deployments.len() > 1 {
            return Err(CliError::input(anyhow!(
                "run {} measured {} deployments ({}); a model describes one: pick it with --deployment NAME",
                dir.display(),
                deployments.len(),
                deployments.join(", ")
            )));
        }
        let index = u32::try_from(i).unwrap_or(u32::MAX);
        let obs = qexp_analysis::run_observations(&run, index, args.deployment.as_deref());
        for s in &obs.skipped {
            eprintln!("warning: not fitted: {s}");
        }
        rows.extend(obs.rows);
        sources.push(obs.source);
    }
    Ok(Input {
        rows,
        sources,
        out: first.join("model.json"),
        share: None,
    })
}

fn print_fit(model: &ModelFile, rows: usize, out: &std::path::Path) {
    let ids: Vec<&str> = model.sources.iter().map(|s| s.id.as_str()).collect();
    println!(
        "qexp fit: {} ({rows} trial-points, {} resampled refits) → {}\n",
        ids.join(", "),
        model.replicates.len(),
        out.display()
    );
    println!("{}", coefficients(model));
    println!("Residuals (median across trials; error = fitted / measured − 1):");
    println!("{}", residuals(model));
    if !model.warnings.is_empty() {
        println!("Warnings:");
        for w in &model.warnings {
            println!("- {w}");
        }
        println!();
    }
}

/// The held-out table: each left-out point predicted, and per metric the
/// median absolute error and the interval coverage.
fn held_out(model: &ModelFile, held: &[Observation]) -> String {
    let checks = qexp_model::check(model, held);
    let mut out = format!(
        "Held out (predicted, not fitted):\n{:<40} {:<10} {:>12} {:>12} {:>25} {:>8}\n",
        "point", "metric", "measured", "predicted", "90% interval", "error"
    );
    for c in &checks {
        let interval = format!(
            "{} … {}",
            metric_value(c.metric, c.lo),
            metric_value(c.metric, c.hi)
        );
        out.push_str(&format!(
            "{:<40} {:<10} {:>12} {:>12} {:>25} {:>+7.1}%{}\n",
            c.point,
            c.metric.name(),
            metric_value(c.metric, c.measured),
            metric_value(c.metric, c.predicted),
            interval,
            100.0 * c.error(),
            if c.unexplained() { "  outside" } else { "" }
        ));
    }
    out.push_str("\nmetric      points  median |error|  inside 90% interval\n");
    for s in qexp_model::summarize(&checks) {
        out.push_str(&format!(
            "{:<10} {:>7} {:>14.1}% {:>12}/{}\n",
            s.metric.name(),
            s.n,
            100.0 * s.median_abs_error,
            s.covered,
            s.n
        ));
    }
    out
}
