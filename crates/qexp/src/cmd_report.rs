//! `qexp report`: reports of runs and notebooks, and the workspace index.

use crate::{CliError, ReportArgs};
use anyhow::Context as _;
use qexp_analysis::RunAnalysis;
use qexp_report::{ModelBeside, Narrative, Templates};
use std::path::{Path, PathBuf};

/// Whether a positional argument of `qexp report` is a notebook (a Markdown file) rather than a run folder.
fn is_notebook(p: &Path) -> bool {
    p.extension().is_some_and(|e| e == "md") && !p.is_dir()
}

/// `qexp report`.
pub(crate) fn report(args: ReportArgs) -> Result<(), CliError> {
    let (notebooks, runs): (Vec<PathBuf>, Vec<PathBuf>) =
        args.runs.iter().cloned().partition(|p| is_notebook(p));
    // Notebooks first: a bad one is bad input, found before any work.
    let mut texts = Vec::new();
    for nb in &notebooks {
        let text = std::fs::read_to_string(nb)
            .with_context(|| format!("cannot read notebook {}", nb.display()))
            .map_err(CliError::input)?;
        texts.push((nb.clone(), text));
    }
    same_stems(&notebooks)?;
    if notebooks.is_empty() || !runs.is_empty() {
        report_runs(&args, runs)?;
    }
    for (path, text) in &texts {
        notebook(&args, path, text)?;
    }
    if !args.no_index {
        index(&args)?;
    }
    Ok(())
}

/// Refuses two notebooks whose file names would render into one folder
/// (`<out-dir>/notebooks/<stem>/`): the second would overwrite the first.
fn same_stems(notebooks: &[PathBuf]) -> Result<(), CliError> {
    let mut seen: std::collections::BTreeMap<std::ffi::OsString, &Path> = Default::default();
    for nb in notebooks {
        let stem = nb.file_stem().unwrap_or_default().to_os_string();
        if let Some(first) = seen.insert(stem, nb) {
            return Err(CliError::input(anyhow::anyhow!(
                "notebooks {} and {} would both render into notebooks/{}/: rename one",
                first.display(),
                nb.display(),
                nb.file_stem().unwrap_or_default().to_string_lossy()
            )));
        }
    }
    Ok(())
}

/// Renders one notebook under `<out-dir>/notebooks/<stem>/`.
fn notebook(args: &ReportArgs, path: &Path, text: &str) -> Result<(), CliError> {
    let rendered = qexp_report::notebook::render_notebook(
        path,
        text,
        &args.results,
        args.templates.as_deref(),
    )
    .map_err(|e| match e {
        qexp_report::notebook::NotebookError::Front { .. } => CliError::input(e),
        other => CliError::failure(other),
    })?;
    let stem = path
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let stem = qexp_plan::safe_component(&stem)
        .with_context(|| {
            format!(
                "notebook {}: its file name cannot name a folder",
                path.display()
            )
        })
        .map_err(CliError::input)?;
    let out = args.out_dir.join("notebooks").join(stem);
    let files = qexp_report::write_files(&out, rendered.files).map_err(CliError::failure)?;
    for f in files
        .iter()
        .filter(|f| f.extension().is_some_and(|e| e != "svg"))
    {
        println!("notebook: {}", f.display());
    }
    Ok(())
}

/// Writes `<out-dir>/index.md` and `index.html` over every run under `--results`.
fn index(args: &ReportArgs) -> Result<(), CliError> {
    let metric = qexp_analysis::Metric::from_key(&args.history_metric).ok_or_else(|| {
        CliError::input(anyhow::anyhow!("unknown metric {}", args.history_metric))
    })?;
    write_index(
        &args.results,
        &args.out_dir,
        metric,
        args.templates.as_deref(),
    )
    .map_err(CliError::failure)
}

/// Writes `<reports>/index.md` and `index.html` over every run under
/// `results`, with `metric`'s history; runs unchanged since the last index
/// are read from the cache under `<reports>/.cache/index`.
pub(crate) fn write_index(
    results: &Path,
    reports: &Path,
    metric: qexp_analysis::Metric,
    templates: Option<&Path>,
) -> anyhow::Result<()> {
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let cache = reports.join(".cache").join("index");
    let (runs, used) = qexp_report::index::digests(results, Some(&cache), threads);
    let rendered = qexp_report::index::render_index(&runs, metric, reports, templates)?;
    let files = qexp_report::write_files(reports, rendered.files)?;
    if let Some(html) = files
        .iter()
        .find(|f| f.extension().is_some_and(|e| e == "html"))
    {
        println!(
            "index: {} ({}; {} read from their files, {} from the index cache)",
            html.display(),
            qexp_analysis::format::plural(runs.len(), "run folder", "run folders"),
            used.analysed,
            used.kept
        );
    }
    Ok(())
}

/// The reports of the runs named, or of the newest run of each experiment.
fn report_runs(args: &ReportArgs, runs: Vec<PathBuf>) -> Result<(), CliError> {
    let runs: Vec<PathBuf> = if runs.is_empty() {
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
        // A folder, or a run id under --results, as `qexp diff` takes them.
        runs.iter()
            .map(|r| qexp_store::resolve_run(r, &args.results))
            .collect::<Result<_, _>>()
            .map_err(CliError::input)?
    };
    for run in &runs {
        // A run of a newer qexp, a manifest that does not read: bad input.
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
        let model = model_for(&analysis, args.model.as_deref())?;
        let beside = model
            .as_ref()
            .map(|(path, model)| ModelBeside { model, path });
        render_with(
            &analysis,
            args.templates.as_deref(),
            &narrative,
            beside,
            &args.out_dir,
        )
        .map_err(CliError::failure)?;
    }
    Ok(())
}

/// The model to render a run against: `--model FILE`, else `model.json`
/// beside the run, else none.
fn model_for(
    a: &RunAnalysis,
    given: Option<&Path>,
) -> Result<Option<(PathBuf, qexp_model::ModelFile)>, CliError> {
    let beside = a.dir.join("model.json");
    let path = match given {
        Some(p) => p.to_path_buf(),
        None if beside.is_file() => beside,
        None => return Ok(None),
    };
    let model = qexp_model::ModelFile::read(&path).map_err(CliError::input)?;
    Ok(Some((path, model)))
}

/// Renders one analysed run under `<root>/<experiment>/<run-id>/`, with the narrative beside its plan.
pub(crate) fn render_one(
    a: &RunAnalysis,
    templates: Option<&Path>,
    root: &Path,
) -> anyhow::Result<()> {
    render_with(a, templates, &Narrative::BesidePlan, None, root)
}

/// `<root>/<experiment>/<run folder>` (the run id, and for a shard its
/// `-shardK-of-N`, so a shard's report never overwrites its merged run's),
/// refusing names from the manifest that would lead anywhere else.
pub(crate) fn report_dir(root: &Path, m: &qexp_store::Manifest) -> anyhow::Result<PathBuf> {
    let experiment = qexp_plan::safe_component(&m.experiment)
        .context("the run's manifest names an unusable experiment")?;
    let folder = m.folder_name();
    let run_id = qexp_plan::safe_component(&folder)
        .context("the run's manifest names an unusable run id")?;
    Ok(root.join(experiment).join(run_id))
}

/// Renders one analysed run under `<root>/<experiment>/<run-id>/`.
fn render_with(
    a: &RunAnalysis,
    templates: Option<&Path>,
    narrative: &Narrative,
    model: Option<ModelBeside>,
    root: &Path,
) -> anyhow::Result<()> {
    let t = match templates {
        Some(dir) => Templates::from_dir(dir)?,
        None => Templates::builtin()?,
    };
    let out = report_dir(root, &a.manifest)?;
    let files = qexp_report::render_run_with(a, &t, narrative, model, &out)?;
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
