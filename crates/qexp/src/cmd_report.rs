use crate::{CliError, ReportArgs};
use anyhow::Context as _;
use qexp_analysis::RunAnalysis;
use qexp_report::{Narrative, Templates};
use std::path::{Path, PathBuf};

/// `qexp report`.
pub(crate) fn report(args: ReportArgs) -> Result<(), CliError> {
    let runs: Vec<PathBuf> = if args.runs.is_empty() {
        let found: Vec<PathBuf> = qexp_store::latest_runs(&args.results)
            .into_iter()
            .map(|r| r.dir)
            .collect();
        if found.is_empty() {
            return Err(CliError::input(anyhow::anyhow!(
                "no runs under {}; run a plan first (qexp run experiments/quickstart.toml) or name a run folder",
                args.results.display()
            )));
        }
        found
    } else {
        args.runs.clone()
    };
    for run in &runs {
        // A missing folder, a folder that is not a run, a run of a newer qexp: bad input.
        qexp_store::read_manifest(run).map_err(CliError::input)?;
    }
    let narrative = match &args.narrative {
        Some(path) if !path.is_file() => {
            return Err(CliError::input(anyhow::anyhow!(
                "narrative {} is not a readable file",
                path.display()
            )));
        }
        Some(path) => Narrative::File(path.clone()),
        None => Narrative::BesidePlan,
    };
    for run in &runs {
        let analysis = qexp_analysis::analyze(run)
            .with_context(|| format!("cannot analyse {}", run.display()))
            .map_err(CliError::failure)?;
        report_dir(&args.out_dir, &analysis.manifest).map_err(CliError::input)?;
        render_with(
            &analysis,
            args.templates.as_deref(),
            &narrative,
            &args.out_dir,
        )
        .map_err(CliError::failure)?;
        model_check(&analysis, args.model.as_deref(), &args.out_dir)?;
    }
    Ok(())
}

/// With a model (`--model FILE`, else `model.json` beside the run), writes
/// `model.md` and its charts beside the report.
fn model_check(a: &RunAnalysis, given: Option<&Path>, root: &Path) -> Result<(), CliError> {
    let beside = a.dir.join("model.json");
    let path = match given {
        Some(p) => p.to_path_buf(),
        None if beside.is_file() => beside,
        None => return Ok(()),
    };
    let model = qexp_model::ModelFile::read(&path).map_err(CliError::input)?;
    let out = report_dir(root, &a.manifest).map_err(CliError::input)?;
    let files =
        qexp_report::render_model_check(a, &model, &path, &out).map_err(CliError::failure)?;
    if let Some(md) = files.first() {
        println!("model check: {}", md.display());
    }
    Ok(())
}

/// Renders one analysed run under `<root>/<experiment>/<run-id>/`, with the narrative beside its plan.
pub(crate) fn render_one(
    a: &RunAnalysis,
    templates: Option<&Path>,
    root: &Path,
) -> anyhow::Result<()> {
    render_with(a, templates, &Narrative::BesidePlan, root)
}

/// `<root>/<experiment>/<run-id>`, refusing names from the manifest that
/// would lead anywhere else.
pub(crate) fn report_dir(root: &Path, m: &qexp_store::Manifest) -> anyhow::Result<PathBuf> {
    let experiment = qexp_plan::safe_component(&m.experiment)
        .context("the run's manifest names an unusable experiment")?;
    let run_id = qexp_plan::safe_component(&m.run_id)
        .context("the run's manifest names an unusable run id")?;
    Ok(root.join(experiment).join(run_id))
}

/// Renders one analysed run under `<root>/<experiment>/<run-id>/`.
fn render_with(
    a: &RunAnalysis,
    templates: Option<&Path>,
    narrative: &Narrative,
    root: &Path,
) -> anyhow::Result<()> {
    let t = match templates {
        Some(dir) => Templates::from_dir(dir)?,
        None => Templates::builtin()?,
    };
    let out = report_dir(root, &a.manifest)?;
    let files = qexp_report::render_run_with(a, &t, narrative, &out)?;
    let is_svg = |f: &&PathBuf| f.extension().is_some_and(|e| e == "svg");
    for f in files.iter().filter(|f| !is_svg(f)) {
        println!("report: {}", f.display());
    }
    let charts = files.iter().filter(is_svg).count();
    if charts > 0 {
        println!("charts: {charts} SVG files beside the report");
    }
    Ok(())
}
