//! The results root as a workspace: which runs exist, the run a notebook
//! means by an experiment's name (its newest complete run) or by a pinned
//! run id, and every run analysed for the index.

use crate::error::AnalysisError;
use crate::run::RunAnalysis;
use qexp_store::{find_runs, read_manifest, RunRef, RunStatus};
use std::path::Path;

/// Why a notebook's run reference names no run.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RunLookupError {
    /// The experiment has runs, none complete, or none at all.
    #[error("experiment `{experiment}` has no complete run under {root} ({} found)", crate::format::plural(*.found, "run", "runs"))]
    NoCompleteRun {
        /// The experiment.
        experiment: String,
        /// The results root, as given.
        root: String,
        /// Runs of it found (any status).
        found: usize,
    },
    /// No folder of that run id.
    #[error("no run `{run_id}`{} under {root}", .experiment.as_deref().map(|e| format!(" of experiment `{e}`")).unwrap_or_default())]
    NoSuchRun {
        /// The run id.
        run_id: String,
        /// The experiment it was looked for in, when named.
        experiment: Option<String>,
        /// The results root, as given.
        root: String,
    },
    /// The run id is in more than one experiment and none was named.
    #[error("run `{run_id}` is in {} experiments under {root} ({}): name the `experiment` too", .experiments.len(), .experiments.join(", "))]
    Ambiguous {
        /// The run id.
        run_id: String,
        /// The experiments that have it.
        experiments: Vec<String>,
        /// The results root, as given.
        root: String,
    },
}

/// The newest complete run of `experiment` under `root`, by start
/// ([`find_runs`] order); a shard folder is part of a run, not one.
pub fn newest_complete(root: &Path, experiment: &str) -> Result<RunRef, RunLookupError> {
    let runs: Vec<RunRef> = find_runs(root)
        .into_iter()
        .filter(|r| r.experiment == experiment && !r.shard)
        .collect();
    let found = runs.len();
    runs.into_iter()
        .rev()
        .find(|r| read_manifest(&r.dir).is_ok_and(|m| m.status == RunStatus::Complete))
        .ok_or_else(|| RunLookupError::NoCompleteRun {
            experiment: experiment.to_string(),
            root: root.display().to_string(),
            found,
        })
}

/// The run `run_id` under `root`, in `experiment` when given, else in any experiment.
pub fn find_run(
    root: &Path,
    experiment: Option<&str>,
    run_id: &str,
) -> Result<RunRef, RunLookupError> {
    let mut found: Vec<RunRef> = find_runs(root)
        .into_iter()
        .filter(|r| r.run_id == run_id && experiment.is_none_or(|e| r.experiment == e))
        .collect();
    match found.len() {
        0 => Err(RunLookupError::NoSuchRun {
            run_id: run_id.to_string(),
            experiment: experiment.map(str::to_string),
            root: root.display().to_string(),
        }),
        1 => Ok(found.remove(0)),
        _ => Err(RunLookupError::Ambiguous {
            run_id: run_id.to_string(),
            experiments: found.into_iter().map(|r| r.experiment).collect(),
            root: root.display().to_string(),
        }),
    }
}

/// Every run under `root`, analysed; a run that cannot be read keeps its error.
pub type AnalysedRun = (RunRef, Result<RunAnalysis, AnalysisError>);

/// Analyses every run under `root`, `threads` at a time, in [`find_runs`] order.
pub fn analyze_all(root: &Path, threads: usize) -> Vec<AnalysedRun> {
    map_runs(root, threads, |r| crate::analyze(&r.dir))
}

/// `f` of every run under `root`, `threads` at a time, in [`find_runs`] order.
pub fn map_runs<T: Send>(
    root: &Path,
    threads: usize,
    f: impl Fn(&RunRef) -> T + Sync,
) -> Vec<(RunRef, T)> {
    let runs = find_runs(root);
    let threads = threads.clamp(1, runs.len().max(1));
    let chunk = runs.len().div_ceil(threads).max(1);
    let mut out: Vec<Option<(RunRef, T)>> = (0..runs.len()).map(|_| None).collect();
    let f = &f;
    std::thread::scope(|s| {
        for (slots, refs) in out.chunks_mut(chunk).zip(runs.chunks(chunk)) {
            s.spawn(move || {
                for (slot, r) in slots.iter_mut().zip(refs) {
                    // On polars' own pool: each of polars' steps inside runs on
                    // the worker (or its sibling) instead of being handed from
                    // this thread to the pool and waited for, step by step.
                    *slot = Some((r.clone(), polars_core::runtime::RAYON.install(|| f(r))));
                }
            });
        }
    });
    out.into_iter().flatten().collect()
}
