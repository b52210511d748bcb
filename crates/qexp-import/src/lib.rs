//! qexp-import holds other tools' results in and qexp's out. Importing:
//! one module per source format reads the tool's files into neutral
//! per-request records and the tool's own summary figures (`source`, whose
//! types every format shares; this file picks the format's reader);
//! `build` makes qexp's request and point rows and a manifest that records
//! the tool, the files (SHA-256) and what the source did not record;
//! `check` sets the tool's figures beside qexp's recomputation of the same
//! metric from the same requests; `plan` matches an import to a qexp plan.
//! Exporting: [`llmd`] writes a run as llm-d-benchmark's Benchmark Report.
//! It measures nothing and owns no statistic: the recomputation is
//! qexp-analysis's.

mod aiperf;
mod build;
mod check;
mod error;
mod guidellm;
mod inference_perf;
pub mod llmd;
mod plan;
mod source;
mod vllm;

pub use check::TOLERANCE;
pub use error::ImportError;
pub use source::Format;

use qexp_store::{Manifest, RunStatus, RunWriter};
use source::Source;
use std::path::{Path, PathBuf};

/// What `qexp import` was asked.
#[derive(Debug, Clone)]
pub struct ImportOptions {
    /// The source format.
    pub format: Format,
    /// The tool's files; several files of one configuration become trials of one point.
    pub files: Vec<PathBuf>,
    /// The experiment the run is filed under (default: `import-<format>`).
    pub experiment: Option<String>,
    /// The results root the run folder goes under.
    pub root: PathBuf,
    /// The tool's version, when the files do not say it and the user knows it.
    pub tool_version: Option<String>,
    /// A qexp plan the files ran the workload of: checked, then the run is
    /// filed under the plan's experiment and workload keys.
    pub plan: Option<PathBuf>,
}

/// A written import: its folder and manifest.
#[derive(Debug, Clone)]
pub struct Imported {
    /// The run folder.
    pub dir: PathBuf,
    /// Its manifest, checks included.
    pub manifest: Manifest,
}

/// Reads every file, then writes the run: bad input is refused before
/// anything is written.
pub fn import(opts: &ImportOptions) -> Result<Imported, ImportError> {
    check_version(opts)?;
    let mut sources = Vec::new();
    for f in &opts.files {
        sources.extend(read(opts.format, f)?);
    }
    let plan = opts
        .plan
        .as_deref()
        .map(plan::PlanMatch::load)
        .transpose()?;
    let run = build::Run::new(opts, sources, plan.as_ref())?;
    write(&opts.root, run)
}

/// inference-perf's reports do not say its version: one the user names
/// must be the one whose layout qexp reads.
fn check_version(opts: &ImportOptions) -> Result<(), ImportError> {
    match (&opts.tool_version, opts.files.first()) {
        (Some(v), Some(f))
            if opts.format == Format::InferencePerf
                && !v.starts_with(inference_perf::VERSION_PREFIX) =>
        {
            Err(ImportError::Field {
                path: f.clone(),
                field: "--tool-version".to_string(),
                problem: format!(
                    "is {v}, where qexp reads inference-perf {}x's reports",
                    inference_perf::VERSION_PREFIX
                ),
            })
        }
        _ => Ok(()),
    }
}

/// Writes the run's folder, recomputes, records the checks, finishes it.
/// A failure after the folder exists removes it: an import is whole or absent.
fn write(root: &Path, run: build::Run) -> Result<Imported, ImportError> {
    let mut w = RunWriter::create(root, run.manifest.clone())?;
    let dir = w.dir().to_path_buf();
    let result = (|| {
        for (requests, point) in &run.pairs {
            w.write_point(requests, point)?;
        }
        let checks = if run.summaries_only() {
            check::unrecomputed(&run.summaries)
        } else {
            check::recompute(&dir, &run.summaries)?
        };
        if let Some(record) = &mut w.manifest_mut().import {
            record.checks = checks;
        }
        let manifest = w.manifest().clone();
        w.finish(RunStatus::Complete, None)?;
        Ok(manifest)
    })();
    match result {
        Ok(mut manifest) => {
            manifest.status = RunStatus::Complete;
            Ok(Imported { dir, manifest })
        }
        Err(e) => {
            // Best effort: the error that stopped the import is the one to report.
            let _ = std::fs::remove_dir_all(&dir);
            Err(e)
        }
    }
}

/// Reads one file of `format`: one source per benchmark it holds.
fn read(format: Format, path: &Path) -> Result<Vec<Source>, ImportError> {
    let bytes = std::fs::read(path).map_err(|source| ImportError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    let sha256 = source::hex_sha(&bytes);
    match format {
        Format::Vllm | Format::VllmBench => {
            crate::vllm::read(path, &bytes, sha256, format).map(|s| vec![s])
        }
        Format::Guidellm => crate::guidellm::read(path, &bytes, &sha256),
        Format::Aiperf => crate::aiperf::read(path, &bytes, &sha256).map(|s| vec![s]),
        Format::InferencePerf => {
            crate::inference_perf::read(path, &bytes, &sha256).map(|s| vec![s])
        }
    }
}
