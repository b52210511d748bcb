//! What the index keeps of each run, and a cache of it beside the index.
//!
//! A run's row and its part in the history charts need a few figures, but
//! getting them means reading the run's rows and running its analysis: about
//! 20 ms of CPU for a small run, 14 s for a workspace of a thousand. Runs do
//! not change once written, so each run's digest is kept in
//! `<out-dir>/.cache/index/<experiment>/<run-id>.json` with a stamp of the
//! run folder ([`qexp_store::folder_stamp`]: every file's path, size and
//! modification time) and of the qexp that made it (its version, and its
//! executable's size and modification time, since a rebuilt qexp may
//! summarise a run differently under the same version); a later `qexp
//! report` takes the digest while both still match and analyses the run
//! again when either differs (a resumed or merged run, another qexp). A
//! cache file that cannot be read or written is passed over: the index
//! never depends on it.

use crate::headline::{flag_views, headline};
use qexp_analysis::history::HistoryInput;
use qexp_analysis::workspace::map_runs;
use qexp_analysis::RunAnalysis;
use qexp_store::{Manifest, RunRef};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// The layout of a cache file; a file of another layout is not read.
const FORMAT: u32 = 1;

/// What the index shows of one run.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RunDigest {
    /// Its manifest.
    pub manifest: Manifest,
    /// The plan's one-line description.
    pub description: String,
    /// The report's first headline figure, `label: value`.
    pub headline: Option<String>,
    /// Anomaly flags (warnings and findings).
    pub flags: usize,
    /// What its history charts take of it.
    pub history: HistoryInput,
}

impl RunDigest {
    /// The digest of an analysed run.
    pub fn of(a: &RunAnalysis) -> RunDigest {
        let flags = flag_views(&a.flags, &a.points);
        RunDigest {
            manifest: a.manifest.clone(),
            description: a.description.clone(),
            headline: headline(a, &flags)
                .into_iter()
                .next()
                .map(|h| format!("{}: {}", h.label, h.value)),
            flags: flags.len(),
            history: HistoryInput::of(a),
        }
    }
}

/// A run under the results root and its digest, or why it has none.
pub type DigestedRun = (RunRef, Result<RunDigest, String>);

/// A cache file: the digest and what it was made from.
#[derive(Serialize, Deserialize)]
struct Cached {
    format: u32,
    /// [`made_by`] of the qexp that wrote it.
    made_by: String,
    stamp: String,
    digest: RunDigest,
}

/// This qexp: its version, and its executable's size and modification time.
fn made_by() -> &'static str {
    static ID: OnceLock<String> = OnceLock::new();
    ID.get_or_init(|| {
        let exe = std::env::current_exe()
            .and_then(std::fs::metadata)
            .ok()
            .map(|m| {
                let modified = m
                    .modified()
                    .ok()
                    .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
                    .map_or(0, |d| d.as_nanos());
                format!("{} {modified}", m.len())
            })
            .unwrap_or_default();
        format!("{} {exe}", env!("CARGO_PKG_VERSION"))
    })
}

/// How many runs came from the cache and how many were analysed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CacheUse {
    /// Digests read from the cache.
    pub kept: usize,
    /// Runs analysed (not cached, or changed since).
    pub analysed: usize,
}

/// The digest of every run under `results`, `threads` at a time, in
/// [`qexp_store::find_runs`] order; with `cache`, digests are read from and
/// written to it.
pub fn digests(
    results: &Path,
    cache: Option<&Path>,
    threads: usize,
) -> (Vec<DigestedRun>, CacheUse) {
    let runs = map_runs(results, threads, |r| digest(r, cache));
    let mut used = CacheUse::default();
    let runs = runs
        .into_iter()
        .map(|(r, (d, kept))| {
            match kept {
                true => used.kept += 1,
                false => used.analysed += 1,
            }
            (r, d)
        })
        .collect();
    (runs, used)
}

/// One run's digest, and whether it came from the cache.
fn digest(r: &RunRef, cache: Option<&Path>) -> (Result<RunDigest, String>, bool) {
    let stamp = qexp_store::folder_stamp(&r.dir).ok();
    let file = cache.map(|c| c.join(&r.experiment).join(format!("{}.json", r.run_id)));
    if let (Some(file), Some(stamp)) = (&file, &stamp) {
        if let Some(d) = read(file, stamp) {
            return (Ok(d), true);
        }
    }
    match qexp_analysis::analyze(&r.dir) {
        Ok(a) => {
            let d = RunDigest::of(&a);
            if let (Some(file), Some(stamp)) = (file, stamp) {
                write(&file, stamp, &d);
            }
            (Ok(d), false)
        }
        Err(e) => (Err(qexp_types::error::chain(&e)), false),
    }
}

fn read(file: &Path, stamp: &str) -> Option<RunDigest> {
    let text = std::fs::read(file).ok()?;
    let c: Cached = serde_json::from_slice(&text).ok()?;
    (c.format == FORMAT && c.made_by == made_by() && c.stamp == stamp).then_some(c.digest)
}

fn write(file: &Path, stamp: String, digest: &RunDigest) {
    let cached = Cached {
        format: FORMAT,
        made_by: made_by().to_string(),
        stamp,
        digest: digest.clone(),
    };
    let Ok(text) = serde_json::to_vec(&cached) else {
        return;
    };
    // Written beside, then renamed: a reader never sees half a file.
    let tmp: PathBuf = file.with_extension(format!("json.{}.tmp", std::process::id()));
    let done = file
        .parent()
        .is_some_and(|d| std::fs::create_dir_all(d).is_ok())
        && std::fs::write(&tmp, text).is_ok()
        && std::fs::rename(&tmp, file).is_ok();
    if !done {
        let _ = std::fs::remove_file(&tmp);
    }
}
