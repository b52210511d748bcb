//! `qexp run --resume RUN_DIR`: measure only the (trial, point) pairs a run
//! did not complete, into the same run folder. The run must still be the
//! same experiment: the plan file must hash as it did and the target must
//! fingerprint as it did, unless `--force` (recorded in the manifest).

// RunError's size is set by its largest variant (ContextTooSmall), shared by
// every runner function; shrinking it is one change for the whole enum.
#![allow(clippy::result_large_err)]

use crate::error::RunError;
use crate::options::RunOptions;
use chrono::Utc;
use qexp_client::Fingerprint;
use qexp_plan::{Plan, Point};
use qexp_store::{Manifest, Overrides, Resume, RunStatus, RunWriter};
use std::path::{Path, PathBuf};

/// What `qexp run --resume` was asked to do.
#[derive(Debug, Clone)]
pub struct ResumeOptions {
    /// The run folder (`results/<experiment>/<run-id>`).
    pub dir: PathBuf,
    /// Go on even if the plan or the target changed.
    pub force: bool,
    /// `--target`: where the server answers now, when it moved.
    pub target: Option<String>,
}

/// A run to resume, checked as far as possible without the network.
#[derive(Debug)]
pub(crate) struct Resuming {
    /// The run folder.
    pub dir: PathBuf,
    /// The manifest as found.
    pub manifest: Manifest,
    /// `--force`.
    pub force: bool,
    /// What already differs (the plan file's hash).
    pub differences: Vec<String>,
    /// The folder's lock: no other process writes it while this one resumes.
    pub lock: qexp_store::RunLock,
}

/// Why the manifest's shard record names a shard no split has, if it does.
fn impossible_shard(manifest: &Manifest) -> Option<String> {
    let s = manifest.shard.as_ref()?;
    (s.count == 0 || s.index >= s.count).then(|| {
        format!(
            "its manifest names shard {} of {}, which no split has",
            s.index, s.count
        )
    })
}

/// A shard resumes alone, on the clock offset to shard 0 that it measured
/// when it ran: right on the host it ran on, off by the two hosts' clock
/// difference anywhere else. The host is told by its name, so two hosts
/// of one name (a pod rescheduled onto another node keeps its name) are
/// not told apart, and nothing is refused when either name is unknown.
fn shard_elsewhere(manifest: &Manifest, here: Option<&str>) -> Option<String> {
    let s = manifest.shard.as_ref()?;
    let (then, here) = other_host(manifest.host.hostname.as_deref(), here)?;
    Some(format!(
            "shard {} of {} measured its clock offset to shard 0 ({:+.6} s) on host {then}, and this is host {here}: the resumed requests' times would be off by the two hosts' clock difference (resume a shard on the host it ran on)",
            s.index, s.count, s.clock_offset_s,
        ))
}

/// The host a run was made on and this one, when both are known and differ.
fn other_host<'a>(then: Option<&'a str>, here: Option<&'a str>) -> Option<(&'a str, &'a str)> {
    let (then, here) = (then?, here?);
    (then != here).then_some((then, here))
}

/// Reads the run and its plan into the options that started it. Refuses a
/// complete run, a plan whose points changed, and (without `force`) a plan
/// file whose hash changed.
pub(crate) fn prepare(r: &ResumeOptions) -> Result<(RunOptions, Resuming), RunError> {
    let manifest = qexp_store::read_manifest(&r.dir)?;
    // Before anything else: a run another process writes is not ours to touch.
    let lock = qexp_store::RunLock::acquire(&r.dir)?;
    let refuse = |why: String| RunError::ResumeRefused {
        dir: r.dir.clone(),
        why,
    };
    if manifest.status == RunStatus::Complete {
        return Err(refuse("it is complete; there is nothing to resume".into()));
    }
    let plan_path = PathBuf::from(&manifest.plan_path);
    let mut differences = Vec::new();
    let plan = recorded_plan(&manifest, &plan_path, &mut differences)?;
    if plan.points() != manifest.points {
        return Err(refuse(format!(
            "the points of {} are no longer the ones it ran; start a new run instead",
            plan_path.display()
        )));
    }
    if let Some(why) = impossible_shard(&manifest) {
        return Err(refuse(why));
    }
    if !orders_are_permutations(&manifest) {
        return Err(refuse(
            "its manifest's point_order does not list each point once per trial".into(),
        ));
    }
    differences.extend(shard_elsewhere(
        &manifest,
        qexp_provenance::host_info().hostname.as_deref(),
    ));
    let target = r.target.clone().or(manifest.overrides.target.clone());
    if let Some(t) = &r.target {
        if *t != manifest.target.base_url {
            differences.push(format!(
                "the target is {t}, the run started against {}",
                manifest.target_label()
            ));
        }
    }
    let out = r
        .dir
        .parent()
        .and_then(Path::parent)
        .map_or_else(|| PathBuf::from("."), Path::to_path_buf);
    let opts = RunOptions {
        plan,
        out,
        // What the run as recorded did (its trial count, its target unless
        // `--target` moves it), not what was typed: the manifest keeps that.
        overrides: Overrides {
            trials: Some(manifest.trials),
            target,
            model: manifest.overrides.model.clone(),
        },
        shard: alone(&manifest),
        folder: Default::default(),
    };
    let resuming = Resuming {
        dir: r.dir.clone(),
        manifest,
        force: r.force,
        differences,
        lock,
    };
    // Refused before the server is asked anything.
    resuming.refuse_unless_forced()?;
    Ok((opts, resuming))
}

/// How a shard resumes: alone (the others are done), with no rendezvous
/// and the clock offset its run measured; none for a run of one process.
fn alone(manifest: &Manifest) -> Option<crate::sharded::ShardOptions> {
    manifest
        .shard
        .as_ref()
        .map(|s| crate::sharded::ShardOptions {
            shard: crate::shard::Shard {
                index: s.index,
                count: s.count,
            },
            run_id: manifest.run_id.clone(),
            rendezvous: None,
            clock_skew_s: 0.0,
            clock_offset_s: s.clock_offset_s,
        })
}

/// The run's plan: the file where the manifest says it is, with a
/// difference noted when its hash changed, or, when that file moved or was
/// deleted, the text the manifest keeps verbatim.
fn recorded_plan(
    manifest: &Manifest,
    plan_path: &Path,
    differences: &mut Vec<String>,
) -> Result<Plan, RunError> {
    if plan_path.is_file() {
        let plan = Plan::load(plan_path).map_err(RunError::Plan)?;
        if plan.hash() != manifest.plan_hash {
            differences.push(format!(
                "the plan {} changed since the run started (hash {} → {})",
                plan_path.display(),
                short(&manifest.plan_hash),
                short(&plan.hash())
            ));
        }
        Ok(plan)
    } else {
        Plan::parse(plan_path, &manifest.plan_text).map_err(RunError::Plan)
    }
}

/// True when every trial's recorded point order is a permutation of the
/// point ids: the runner indexes the points by it.
fn orders_are_permutations(manifest: &Manifest) -> bool {
    let ids: Vec<u32> = (0..manifest.points.len() as u32).collect();
    manifest.point_order.iter().all(|order| {
        let mut sorted = order.clone();
        sorted.sort_unstable();
        sorted == ids
    })
}

impl Resuming {
    /// Adds what differs between the target the run started against and the
    /// one answering now; refuses (without `force`) if anything differs.
    pub(crate) fn check_target(&mut self, now: &Fingerprint) -> Result<(), RunError> {
        if let Some(then) = &self.manifest.fingerprint {
            self.differences.extend(fingerprint_changes(then, now));
        }
        self.refuse_unless_forced()
    }

    /// Refuses when anything differs, unless `--force`.
    fn refuse_unless_forced(&self) -> Result<(), RunError> {
        if self.differences.is_empty() || self.force {
            return Ok(());
        }
        Err(RunError::ResumeRefused {
            dir: self.dir.clone(),
            why: format!(
                "{}; pass --force to resume anyway (recorded in the manifest)",
                self.differences.join("; ")
            ),
        })
    }
}

impl Resuming {
    /// Checks the target, reopens the run folder and records this resume in
    /// its manifest.
    pub(crate) fn reopen(
        mut self,
        now: &Fingerprint,
        points: &[Point],
        trials: u32,
    ) -> Result<RunWriter, RunError> {
        self.check_target(now)?;
        let mut writer = RunWriter::reopen(&self.dir, self.lock)?;
        let planned = points.len() * trials as usize;
        let done = writer.complete_count();
        let left = planned.saturating_sub(done);
        tracing::info!(
            target: crate::PROGRESS_TARGET,
            "qexp: resuming {}: {done} of {planned} (trial, point) pairs complete, {left} to run",
            self.dir.display(),
        );
        let m = writer.manifest_mut();
        m.status = RunStatus::Running;
        m.ended_at = None;
        m.stop_reason = None;
        m.resumes.push(Resume {
            at: Utc::now(),
            pairs_left: left as u32,
            forced: self.force && !self.differences.is_empty(),
            differences: self.differences,
        });
        writer.save_manifest()?;
        Ok(writer)
    }
}

impl Resuming {
    /// [`Resuming::reopen`] for a run with deployments: each deployment of
    /// the plan must still be defined as it was (its hash), unless `--force`;
    /// each server's fingerprint is recorded again at its next start.
    pub(crate) fn reopen_deployed(
        mut self,
        plan: &Plan,
        points: &[Point],
        trials: u32,
    ) -> Result<RunWriter, RunError> {
        for d in plan.deployments() {
            let then = self
                .manifest
                .deployments
                .iter()
                .find(|r| r.name == d.name());
            match then {
                Some(r) if r.hash == d.hash() => {}
                Some(_) => self.differences.push(format!(
                    "deployment `{}` is defined differently than when the run started",
                    d.name()
                )),
                None => self.differences.push(format!(
                    "deployment `{}` was not in the run as started",
                    d.name()
                )),
            }
        }
        let now = self.manifest.fingerprint.clone().unwrap_or_default();
        self.reopen(&now, points, trials)
    }
}

/// One phrase per fingerprint field that changed.
pub(crate) fn fingerprint_changes(then: &Fingerprint, now: &Fingerprint) -> Vec<String> {
    let show = |v: Option<String>| v.unwrap_or_else(|| "none".into());
    let mut fields: Vec<(String, Option<String>, Option<String>)> = vec![
        (
            "engine".into(),
            Some(then.engine.clone()),
            Some(now.engine.clone()),
        ),
        (
            "engine version".into(),
            then.version.clone(),
            now.version.clone(),
        ),
        ("model".into(), then.model.clone(), now.model.clone()),
        (
            "max context".into(),
            then.max_context.map(|c| c.to_string()),
            now.max_context.map(|c| c.to_string()),
        ),
        (
            "max input".into(),
            then.max_input.map(|c| c.to_string()),
            now.max_input.map(|c| c.to_string()),
        ),
    ];
    let keys: std::collections::BTreeSet<&String> =
        then.flags.keys().chain(now.flags.keys()).collect();
    for k in keys {
        fields.push((
            format!("server flag {k}"),
            then.flags.get(k).cloned(),
            now.flags.get(k).cloned(),
        ));
    }
    fields
        .into_iter()
        .filter(|(_, a, b)| a != b)
        .map(|(name, a, b)| format!("the target's {name} changed ({} → {})", show(a), show(b)))
        .collect()
}

fn short(hash: &str) -> &str {
    &hash[..hash.len().min(12)]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_host_is_other_only_when_both_names_are_known_and_differ() {
        assert_eq!(other_host(Some("a"), Some("b")), Some(("a", "b")));
        assert_eq!(other_host(Some("a"), Some("a")), None);
        assert_eq!(other_host(None, Some("a")), None);
        assert_eq!(other_host(Some("a"), None), None);
    }

    #[test]
    fn fingerprint_changes_name_each_field() {
        let then = Fingerprint {
            engine: "vllm".into(),
            version: Some("0.11.0".into()),
            ..Fingerprint::default()
        };
        let mut now = then.clone();
        assert!(fingerprint_changes(&then, &now).is_empty());
        now.version = Some("0.12.0".into());
        now.flags.insert("prefix_caching".into(), "true".into());
        assert_eq!(
            fingerprint_changes(&then, &now),
            [
                "the target's engine version changed (0.11.0 → 0.12.0)",
                "the target's server flag prefix_caching changed (none → true)"
            ]
        );
    }
}
