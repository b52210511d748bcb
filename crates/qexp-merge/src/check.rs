//! Which shard folders make one run: the same run id, plan hash, shard
//! count, trial count, target, model and workload, each shard once; which
//! are complete and which are missing.

use crate::error::MergeError;
use qexp_store::{Manifest, RunStatus};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The shards given, checked.
pub(crate) struct Roll {
    /// Shards in the run.
    pub count: u32,
    /// Complete shards, by index: their folder and manifest.
    pub complete: BTreeMap<u32, (PathBuf, Manifest)>,
    /// Shards absent or not complete, each with a sentence.
    pub missing: BTreeMap<u32, String>,
}

/// Reads and checks `dirs`.
pub(crate) fn roll(dirs: &[PathBuf]) -> Result<Roll, MergeError> {
    let (count, given) = gather(dirs)?;
    let mut r = sort(count, given);
    note_what_others_saw(&mut r);
    Ok(r)
}

/// Each given shard's folder and manifest, by index.
type Given = BTreeMap<u32, (PathBuf, Manifest)>;

/// The shard count and the given shards, refused where a folder is not a
/// shard, two are not of one run, or one is given twice.
fn gather(dirs: &[PathBuf]) -> Result<(u32, Given), MergeError> {
    let mut first: Option<(PathBuf, Manifest)> = None;
    let mut given: Given = BTreeMap::new();
    for dir in dirs {
        let m = qexp_store::read_manifest(dir)?;
        let Some(s) = m.shard.clone() else {
            return Err(MergeError::NotAShard(dir.clone()));
        };
        match &first {
            Some((fd, f)) => same_run(fd, f, dir, &m)?,
            None => first = Some((dir.clone(), m.clone())),
        }
        if let Some((other, _)) = given.get(&s.index) {
            return Err(MergeError::GivenTwice {
                index: s.index,
                count: s.count,
                first: other.clone(),
                second: dir.clone(),
            });
        }
        given.insert(s.index, (dir.clone(), m));
    }
    let count = first
        .as_ref()
        .and_then(|(_, m)| m.shard.as_ref())
        .map_or(0, |s| s.count);
    if count == 0 {
        return Err(MergeError::NoShards);
    }
    Ok((count, given))
}

/// Refuses two manifests that are not shards of one run.
fn same_run(fd: &Path, f: &Manifest, dir: &Path, m: &Manifest) -> Result<(), MergeError> {
    let count = |m: &Manifest| m.shard.as_ref().map_or(0, |s| s.count).to_string();
    for (what, a, b) in [
        ("run id", f.run_id.clone(), m.run_id.clone()),
        ("plan hash", f.plan_hash.clone(), m.plan_hash.clone()),
        ("shard count", count(f), count(m)),
        ("trial count", f.trials.to_string(), m.trials.to_string()),
        (
            "target",
            f.target.base_url.clone(),
            m.target.base_url.clone(),
        ),
        ("model", f.target.model.clone(), m.target.model.clone()),
        (
            "workload hash",
            f.comparability.workload_hash.clone(),
            m.comparability.workload_hash.clone(),
        ),
    ] {
        if a != b {
            return Err(MergeError::NotOneRun {
                first: fd.to_owned(),
                other: dir.to_owned(),
                what,
                a,
                b,
            });
        }
    }
    Ok(())
}

/// Each shard of `count` as complete, or missing with a sentence.
fn sort(count: u32, mut given: Given) -> Roll {
    let mut r = Roll {
        count,
        complete: BTreeMap::new(),
        missing: BTreeMap::new(),
    };
    for k in 0..count {
        match given.remove(&k) {
            Some((dir, m)) if m.status == RunStatus::Complete => {
                r.complete.insert(k, (dir, m));
            }
            Some((dir, m)) => {
                let why = match (&m.stop_reason, m.ended_at) {
                    (Some(reason), _) => format!("it stopped: {reason}"),
                    (None, None) => {
                        "its process ended without finishing it (killed or crashed)".into()
                    }
                    (None, Some(_)) => format!("its status is {}", m.status),
                };
                r.missing.insert(
                    k,
                    format!(
                        "shard {k} of {count} ({}) is not complete: {why}; finish it with `qexp run --resume {}`, then merge again",
                        dir.display(),
                        dir.display()
                    ),
                );
            }
            None => {
                r.missing
                    .insert(k, format!("shard {k} of {count} was not given"));
            }
        }
    }
    r
}

/// Adds to each missing shard's sentence what the other shards saw of it.
fn note_what_others_saw(r: &mut Roll) {
    for (k, why) in r.missing.iter_mut() {
        let seen = r.complete.values().find_map(|(_, m)| {
            m.shard
                .as_ref()?
                .lost
                .iter()
                .find(|l| l.shard == *k)
                .cloned()
        });
        if let Some(l) = seen {
            why.push_str(&format!(" (the other shards saw: {})", l.message));
        }
    }
}
