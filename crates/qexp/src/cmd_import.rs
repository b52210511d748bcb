//! `qexp import FORMAT FILE…`: another tool's result files become a run
//! folder; prints where it went and the tool's figures beside qexp's.

use crate::CliError;
use qexp_import::{Format, ImportError, ImportOptions};
use qexp_store::MetricCheck;
use std::path::PathBuf;

/// `qexp import`.
// Doc comments here are clap's help text, where `<run-id>` is the usual
// placeholder; rustdoc would read it as an unclosed HTML tag.
#[allow(rustdoc::invalid_html_tags)]
#[derive(Debug, clap::Args)]
pub struct ImportArgs {
    /// The files' format: vllm (vllm bench serve --save-result JSON), vllm-bench (the Rust vllm-bench's --save-result JSON), guidellm (GuideLLM's JSON report), aiperf (AIPerf's profile_export.jsonl, its summary beside it) or inference-perf (its per_request_lifecycle_metrics.json, its summary and stage reports beside it).
    #[arg(value_parser = clap::builder::PossibleValuesParser::new(Format::NAMES))]
    pub format: String,
    /// The tool's result files; files of one configuration become trials of one point.
    #[arg(required = true)]
    pub files: Vec<PathBuf>,
    /// The experiment to file the run under [default: import-<FORMAT>].
    #[arg(long)]
    pub experiment: Option<String>,
    /// The results root: the run goes to <DIR>/<experiment>/<run-id>/.
    #[arg(long, value_name = "DIR", default_value = "results")]
    pub out: PathBuf,
    /// The tool's version, recorded in the manifest where the files do not say it (vllm bench serve's, vllm-bench's and inference-perf's do not).
    #[arg(long, value_name = "VERSION")]
    pub tool_version: Option<String>,
    /// The qexp plan whose workload the files ran: each configuration must match one of its
    /// points (load, lengths within its input tolerance, request count); the run is then filed
    /// under the plan's experiment and workload keys, so `qexp diff` compares it with qexp's runs.
    #[arg(long, value_name = "PLAN")]
    pub plan: Option<PathBuf>,
}

/// `qexp import`: 0, or 2 for bad input (nothing written), 1 when writing failed.
pub(crate) fn import(args: ImportArgs) -> Result<u8, CliError> {
    let format = Format::from_name(&args.format)
        .ok_or_else(|| CliError::input(anyhow::anyhow!("unknown format `{}`", args.format)))?;
    let opts = ImportOptions {
        format,
        files: args.files,
        experiment: args.experiment,
        root: args.out,
        tool_version: args.tool_version,
        plan: args.plan,
    };
    let imported = qexp_import::import(&opts).map_err(|e| match e {
        ImportError::Store(_) | ImportError::Analysis(_) => CliError::failure(e),
        _ => CliError::input(e),
    })?;
    println!("imported: {}", imported.dir.display());
    if let Some(record) = &imported.manifest.import {
        if record.summaries_only {
            println!("summaries only: the files hold no per-request data, so nothing was recomputed and the run has no spread");
        }
        for line in check_lines(&record.checks) {
            println!("{line}");
        }
    }
    Ok(0)
}

/// One line per (point, tool field): the largest difference over the
/// trials between the tool's figure and qexp's, and whether all agree.
fn check_lines(checks: &[MetricCheck]) -> Vec<String> {
    let mut keys: Vec<(u32, &str)> = Vec::new();
    for c in checks {
        if !keys.contains(&(c.point_id, c.source_field.as_str())) {
            keys.push((c.point_id, c.source_field.as_str()));
        }
    }
    keys.into_iter()
        .map(|(point, field)| {
            let of: Vec<&MetricCheck> = checks
                .iter()
                .filter(|c| c.point_id == point && c.source_field == field)
                .collect();
            let first = of[0];
            let diffs: Vec<f64> = of.iter().filter_map(|c| c.relative_difference).collect();
            let head = format!("point {point}: {field} vs qexp's {}", first.metric);
            if diffs.len() < of.len() {
                return format!(
                    "{head}: not recomputed ({} trial(s) without per-request data)",
                    of.len() - diffs.len()
                );
            }
            let worst = diffs.iter().copied().fold(0.0, f64::max);
            let verdict = if of.iter().all(|c| c.agrees == Some(true)) {
                format!("agrees (within {}%)", first.tolerance * 100.0)
            } else {
                format!(
                    "DIFFERS by more than {}%: {}",
                    first.tolerance * 100.0,
                    first.definition
                )
            };
            format!(
                "{head}: largest difference {:.2}% over {} trial(s), {verdict}",
                worst * 100.0,
                of.len()
            )
        })
        .collect()
}
