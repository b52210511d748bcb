//! `qexp diff RUN_A RUN_B`: analyse both runs, compare them, print and write
//! the result, and turn "a significant regression" into an exit code for CI
//! that is never confused with "could not do the work".

use crate::CliError;
use anyhow::anyhow;
use anyhow::Context as _;
use qexp_analysis::{DiffError, DiffMetric, DiffOptions, RunAnalysis, RunDiff};
use qexp_report::diff::{self, DiffFormat, DiffTemplates};
use std::io::IsTerminal as _;
use std::path::{Path, PathBuf};

/// Exit code of `--fail-on-regression` when a comparison is a significant regression.
pub const EXIT_REGRESSION: u8 = 1;
/// Exit code when the diff could not be made or written: bad input, runs that are not comparable, a failed write.
pub const EXIT_NOT_DONE: u8 = crate::EXIT_BAD_INPUT;

/// Could not do the work: exit [`EXIT_NOT_DONE`], whatever the cause.
fn not_done(e: impl Into<anyhow::Error>) -> CliError {
    CliError {
        error: e.into(),
        code: EXIT_NOT_DONE,
    }
}

/// Where `qexp diff` sends its output.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// A table on stdout (colour on a terminal).
    Term,
    /// diff.md and ratios.svg under --out.
    Md,
    /// A self-contained diff.html under --out.
    Html,
}

/// `qexp diff`.
// Doc comments here are clap's help text, where `<run-id>` is the usual
// placeholder; rustdoc would read it as an unclosed HTML tag.
#[allow(rustdoc::invalid_html_tags)]
#[derive(Debug, clap::Args)]
pub struct DiffArgs {
    /// The baseline: a run folder (results/<experiment>/<run-id>) or a run id under --results; `RUN#NAME` takes one deployment of a run with deployments.
    pub run_a: PathBuf,
    /// The candidate, compared against A (ratios are B/A); two deployments of one run (`RUN#a RUN#b`) are compared paired by block.
    pub run_b: PathBuf,
    /// Outputs, comma-separated or repeated: term (stdout), md, html (written to --out).
    #[arg(long, value_enum, value_delimiter = ',', default_value = "term")]
    pub format: Vec<Format>,
    /// Folder for md/html [default: reports/diff/<runA-id>_vs_<runB-id>/].
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Family-wise significance level, after Holm's correction over every test of the diff.
    #[arg(long, default_value_t = 0.05)]
    pub alpha: f64,
    /// Practical threshold: a relative change smaller than this (0.02 = 2%) is never better/worse, and `=` proves a change is within it [default: run A's analysis.min_change].
    #[arg(long, value_name = "FRACTION")]
    pub min_change: Option<f64>,
    /// Exit 1 when any comparison is a significant regression of at least the threshold (for CI gates).
    #[arg(long)]
    pub fail_on_regression: bool,
    /// Compare even though this workload key differs (repeatable); the output says so.
    #[arg(long = "ignore", value_name = "KEY")]
    pub ignore: Vec<String>,
    /// Compare only this metric (repeatable) [default: every metric of the run's API but steady_tok_s (the throughput over each point's steady-state window), compared only when named; req_s and input_tok_s are the defaults of embeddings and rerank runs].
    #[arg(long = "metric", value_name = "NAME", value_parser = clap::builder::PossibleValuesParser::new(DiffMetric::DIFF_NAMES))]
    pub metrics: Vec<String>,
    /// Seed of the random permutations (only used beyond the exact test's size).
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Where run ids are looked up.
    #[arg(long, default_value = "results")]
    pub results: PathBuf,
    /// A folder with your own diff.md.tera / diff.html.tera (missing files fall back to the built-in ones).
    #[arg(long, value_name = "DIR")]
    pub templates: Option<PathBuf>,
}

/// `RUN#NAME` → (`RUN`, `NAME`); anything else is a run alone.
fn split_deployment(arg: &Path) -> (PathBuf, Option<String>) {
    let text = arg.to_string_lossy();
    match text.rsplit_once('#') {
        Some((run, name)) if !name.is_empty() && !name.contains(std::path::MAIN_SEPARATOR) => {
            (PathBuf::from(run), Some(name.to_string()))
        }
        _ => (arg.to_path_buf(), None),
    }
}

/// True when both paths name the same folder.
fn same_dir(a: &Path, b: &Path) -> bool {
    match (a.canonicalize(), b.canonicalize()) {
        (Ok(x), Ok(y)) => x == y,
        _ => a == b,
    }
}

/// `qexp diff`: returns 0, or 1 for a significant regression under `--fail-on-regression`; errors exit [`EXIT_NOT_DONE`].
pub(crate) fn diff(args: DiffArgs) -> Result<u8, CliError> {
    let (run_a, dep_a) = split_deployment(&args.run_a);
    let (run_b, dep_b) = split_deployment(&args.run_b);
    let dir_a = qexp_store::resolve_run(&run_a, &args.results).map_err(not_done)?;
    let dir_b = qexp_store::resolve_run(&run_b, &args.results).map_err(not_done)?;
    let (a, b) = (
        analyse(&dir_a, dep_a.as_deref())?,
        analyse(&dir_b, dep_b.as_deref())?,
    );
    // Two deployments of one run were measured block by block: pair them.
    let paired = dep_a.is_some() && dep_b.is_some() && same_dir(&dir_a, &dir_b);
    let opts = DiffOptions {
        alpha: args.alpha,
        min_change: args.min_change,
        ignore: args.ignore.clone(),
        metrics: args
            .metrics
            .iter()
            .filter_map(|m| DiffMetric::from_key(m))
            .collect(),
        seed: args.seed,
        paired,
        ..DiffOptions::default()
    };
    let d = qexp_analysis::diff(&a, &b, &opts).map_err(|e| match e {
        DiffError::Incomparable { .. }
        | DiffError::BadAlpha(_)
        | DiffError::BadMinChange(_)
        | DiffError::SummariesOnly { .. } => not_done(e),
    })?;
    for w in &d.warnings {
        eprintln!("warning: {w}");
    }
    if args.format.contains(&Format::Term) {
        let ctx = diff::diff_context(&d);
        print!(
            "{}",
            diff::term::render_term(&ctx, std::io::stdout().is_terminal())
        );
    }
    write_files(&args, &d)?;
    Ok(if args.fail_on_regression && d.has_regression() {
        report_regressions(&d);
        EXIT_REGRESSION
    } else {
        0
    })
}

/// The run in `dir` analysed, or one of its deployments seen as a run.
fn analyse(dir: &Path, deployment: Option<&str>) -> Result<RunAnalysis, CliError> {
    let run = qexp_analysis::analyze(dir)
        .map_err(|e| not_done(anyhow!(e).context(format!("cannot analyse {}", dir.display()))))?;
    match deployment {
        None => Ok(run),
        Some(name) => run.deployment_view(name).ok_or_else(|| {
            let names = run.deployment_names();
            not_done(anyhow!(
                "{} has no deployment `{name}`{}",
                dir.display(),
                if names.is_empty() {
                    " (it ran without deployments)".to_string()
                } else {
                    format!("; it has {}", names.join(", "))
                }
            ))
        }),
    }
}

/// Writes the Markdown and HTML the options ask for, into `--out` or
/// `reports/diff/<runA-id>_vs_<runB-id>/`, and names each file on stdout.
fn write_files(args: &DiffArgs, d: &RunDiff) -> Result<(), CliError> {
    let files: Vec<DiffFormat> = args
        .format
        .iter()
        .filter_map(|f| match f {
            Format::Term => None,
            Format::Md => Some(DiffFormat::Markdown),
            Format::Html => Some(DiffFormat::Html),
        })
        .collect();
    if !files.is_empty() {
        let templates = match &args.templates {
            Some(dir) => DiffTemplates::from_dir(dir).map_err(not_done)?,
            None => DiffTemplates::builtin().map_err(not_done)?,
        };
        let out = match args.out.clone() {
            Some(out) => out,
            None => {
                let name = format!("{}_vs_{}", d.a.run_id, d.b.run_id).replace('#', "-");
                let name = qexp_plan::safe_component(&name)
                    .context("a run's manifest names an unusable run id")
                    .map_err(CliError::input)?;
                PathBuf::from("reports").join("diff").join(name)
            }
        };
        for f in diff::write_diff(d, &templates, &files, &out).map_err(not_done)? {
            println!("diff: {}", f.display());
        }
    }
    Ok(())
}

/// Names each significant regression and each point B lost on stderr, for `--fail-on-regression`.
fn report_regressions(d: &RunDiff) {
    let is_worse =
        |m: &&qexp_analysis::diff::MetricDiff| m.verdict == qexp_analysis::diff::Verdict::Worse;
    let mut worse = Vec::new();
    for p in &d.pairs {
        let at = p.point_a.label();
        for m in p.metrics.iter().filter(is_worse) {
            worse.push(format!("{} at {at}", m.metric.key()));
        }
        for c in &p.classes {
            for m in c.metrics.iter().filter(is_worse) {
                worse.push(format!("{} of class `{}` at {at}", m.metric.key(), c.class));
            }
        }
    }
    if d.tally.worse > 0 {
        eprintln!(
            "qexp diff: {} significant regression{} of at least {}% (--fail-on-regression): {}",
            d.tally.worse,
            if d.tally.worse == 1 { "" } else { "s" },
            d.min_change * 100.0,
            worse.join(", ")
        );
    }
    let lost: Vec<String> = d
        .pairs
        .iter()
        .filter(|p| p.lost == Some(qexp_analysis::diff::Side::B))
        .map(|p| p.point_a.label())
        .collect();
    if !lost.is_empty() {
        eprintln!(
            "qexp diff: run B lost {} point{} where every request failed (--fail-on-regression): {}",
            lost.len(),
            if lost.len() == 1 { "" } else { "s" },
            lost.join(", ")
        );
    }
}
