//! The servers of a run with deployments: the runner asks for a ready
//! target for (deployment, block) and hands it back; the fleet launches
//! (through qexp-deploy), reuses (`restart = "once"`, with the plan's cache
//! reset between blocks), probes and calibrates, records every start, stop
//! and failure in the manifest, and stops every server it started.

use crate::error::RunError;
use crate::options::{Connection, RunOptions};
use crate::prepare::{named_model, prepare, Prepared};
use crate::record::DeploymentTag;
use crate::target::{resolve_target, Target};
use crate::Cancel;
use chrono::Utc;
use qexp_client::{Calibration, Client};
use qexp_deploy::{LaunchError, LaunchSpec, Server, StartRequest, StopRecord, TAG_VAR};
use qexp_plan::{DeploymentSpec, Restart};
use qexp_store::{DeploymentFailure, DeploymentStart, RunWriter};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

/// A deployment ready to be measured.
pub(crate) struct Live {
    /// Where its requests go.
    pub target: Target,
    /// Its probe, model and calibrations.
    pub prep: Prepared,
    /// What its rows carry.
    pub tag: DeploymentTag,
    /// The server qexp launched for it (None for a `base_url`).
    server: Option<Server>,
    /// Its entry in the manifest's `starts`.
    start: usize,
    /// Blocks it has served.
    blocks: u32,
}

impl Live {
    /// How to tell whether the server qexp launched still runs (None for a
    /// `base_url`, which qexp does not watch).
    pub(crate) fn liveness(&self) -> Option<qexp_deploy::Liveness> {
        self.server.as_ref().map(Server::liveness)
    }
}

/// Every deployment's live server, calibrations and failures.
pub(crate) struct Fleet<'a> {
    opts: &'a RunOptions,
    conn: Connection,
    run_dir: PathBuf,
    live: BTreeMap<String, Live>,
    calibrations: BTreeMap<String, BTreeMap<u32, Calibration>>,
    failed: BTreeMap<String, String>,
}

impl<'a> Fleet<'a> {
    /// An empty fleet for the run in `run_dir`.
    pub(crate) fn new(opts: &'a RunOptions, conn: Connection, run_dir: PathBuf) -> Fleet<'a> {
        Fleet {
            opts,
            conn,
            run_dir,
            live: BTreeMap::new(),
            calibrations: BTreeMap::new(),
            failed: BTreeMap::new(),
        }
    }

    /// True when `name` failed to start earlier in this run.
    pub(crate) fn has_failed(&self, name: &str) -> bool {
        self.failed.contains_key(name)
    }

    /// One sentence per deployment that failed to start, in name order.
    pub(crate) fn failures(&self) -> Vec<String> {
        self.failed.values().cloned().collect()
    }

    fn spec(&self, name: &str) -> Option<&'a DeploymentSpec> {
        self.opts
            .plan
            .deployments()
            .iter()
            .find(|d| d.name() == name)
    }

    /// A ready target for `name` in `block`: the running one (reset between
    /// blocks) or a new start. None when it failed to start (recorded in
    /// the manifest and remembered; the run goes on without it).
    pub(crate) async fn acquire(
        &mut self,
        name: &str,
        block: u32,
        writer: &mut RunWriter,
        cancel: &Cancel,
    ) -> Result<Option<&Live>, RunError> {
        let Some(spec) = self.spec(name) else {
            return Ok(None);
        };
        // A server kept from an earlier block may have died since.
        self.check_exited(name, block, "exited before", writer)
            .await?;
        if self.has_failed(name) {
            return Ok(None);
        }
        if let Some(live) = self.live.get_mut(name) {
            live.blocks += 1;
            if let Some(path) = &spec.reset_path {
                reset(&live.target.client, path).await;
            }
            push_block(writer, name, live.start, block)?;
            return Ok(self.live.get(name));
        }
        let start_id = start_id(writer, name, block, self.opts.plan.restart());
        match self.start(spec, &start_id, cancel).await {
            Ok((target, server)) => {
                let known = self.calibrations.get(name);
                let prepared = prepare(self.opts, &target, spec.model.as_deref(), known).await;
                match prepared {
                    Ok(prep) => {
                        self.calibrations
                            .insert(name.to_string(), prep.calibrations.clone());
                        let start = record_start(writer, spec, &start_id, block, &server, &prep)?;
                        // Every start is timed by the same kind of client; the
                        // first records it, and a stop records a fallback
                        // (`stop_live`), which no later start undoes.
                        writer
                            .manifest_mut()
                            .client_timing
                            .get_or_insert(target.client.client_timing());
                        let tag = DeploymentTag {
                            name: name.to_string(),
                            hash: spec.hash(),
                            start_id: spec.is_launched().then(|| start_id.clone()),
                        };
                        let live = Live {
                            target,
                            prep,
                            tag,
                            server,
                            start,
                            blocks: 1,
                        };
                        self.live.insert(name.to_string(), live);
                        Ok(self.live.get(name))
                    }
                    Err(e) => {
                        if let Some(s) = server {
                            let (pgid, port) = (s.record().pid, s.record().port);
                            let record = s.stop().await;
                            if let Some(sentence) = stop_left(name, pgid, port, &record) {
                                tracing::warn!(target: crate::PROGRESS_TARGET, "qexp: {sentence}");
                                self.failed.insert(format!("{name} (stop)"), sentence);
                            }
                        }
                        target.shutdown().await;
                        let failure = Failure::message(qexp_types::error::chain(&e));
                        self.fail(writer, name, &start_id, block, NOT_STARTED, failure)?;
                        Ok(None)
                    }
                }
            }
            Err(failure) if failure.cancelled => Ok(None),
            Err(failure) => {
                self.fail(writer, name, &start_id, block, NOT_STARTED, failure)?;
                Ok(None)
            }
        }
    }

    /// Launches `spec` (or connects to its `base_url`).
    async fn start(
        &self,
        spec: &DeploymentSpec,
        start_id: &str,
        cancel: &Cancel,
    ) -> Result<(Target, Option<Server>), Failure> {
        if let Some(url) = &spec.base_url {
            let conn = &self.conn;
            let mut target = resolve_target(url.get_ref(), conn.api_key.clone(), conn.timeouts)
                .await
                .map_err(|e| Failure::message(qexp_types::error::chain(&e)))?;
            target.client = target.client.redacting(conn.secrets.clone());
            return Ok((target, None));
        }
        let mut launch = launch_spec(spec, self.opts, &self.run_dir);
        launch.api_key = self.conn.api_key.clone().map(qexp_deploy::ApiKey);
        let request = StartRequest {
            start_id: start_id.to_string(),
            log_dir: self.run_dir.join("deployments"),
        };
        tracing::info!(
            target: crate::PROGRESS_TARGET,
            "qexp: starting deployment {} ({start_id})",
            spec.name()
        );
        let mut cancel = cancel.clone();
        let server = tokio::select! {
            r = qexp_deploy::launch(&launch, &request) => r.map_err(Failure::from)?,
            _ = cancel.wait_for(|c| *c) => {
                // The launch future is dropped, and with it the half-started server.
                return Err(Failure {
                    cancelled: true,
                    ..Failure::message("the run was interrupted while it started".into())
                })
            }
        };
        let client = Client::with_timeouts(
            server.base_url(),
            self.conn.api_key.clone(),
            self.conn.timeouts,
        )
        .map_err(|e| Failure::message(qexp_types::error::chain(&e)))?
        .redacting(self.conn.secrets.clone());
        tracing::info!(
            target: crate::PROGRESS_TARGET,
            "qexp: {} ready at {} after {:.1} s",
            spec.name(),
            server.base_url(),
            server.record().time_to_ready_s
        );
        let target = Target {
            client,
            given: server.base_url().to_string(),
            sim: None,
        };
        Ok((target, Some(server)))
    }

    /// Records that `name`'s server exited on its own (`what` block
    /// `block`: "exited during", "exited before"), and stops what is left
    /// of its group: the deployment is failed for the rest of the run, as
    /// one that does not start is. Nothing when it runs (or was not
    /// launched by qexp).
    pub(crate) async fn check_exited(
        &mut self,
        name: &str,
        block: u32,
        what: &str,
        writer: &mut RunWriter,
    ) -> Result<(), RunError> {
        let Some(server) = self.live.get_mut(name).and_then(|l| l.server.as_mut()) else {
            return Ok(());
        };
        let Some(status) = server.exited() else {
            return Ok(());
        };
        let start_id = server.record().start_id.clone();
        let failure = Failure {
            message: format!(
                "the server exited on its own ({status}); the point it was measuring is kept \
                 as incomplete and the rest of its blocks were skipped (`--resume` measures them)"
            ),
            log: Some(server.record().log.display().to_string()),
            tail: Some(server.log_tail()),
            cancelled: false,
        };
        if let Some(live) = self.live.remove(name) {
            self.stop(live, name, writer).await;
        }
        self.fail(writer, name, &start_id, block, what, failure)
    }

    fn fail(
        &mut self,
        writer: &mut RunWriter,
        name: &str,
        start_id: &str,
        block: u32,
        what: &str,
        failure: Failure,
    ) -> Result<(), RunError> {
        let sentence = format!(
            "deployment `{name}` {what} block {block}: {}{}",
            failure.message,
            failure
                .log
                .as_ref()
                .map_or_else(String::new, |l| format!(" (log: {l})"))
        );
        tracing::warn!(target: crate::PROGRESS_TARGET, "qexp: {sentence}");
        if let Some(d) = deployment_mut(writer, name) {
            d.failures.push(DeploymentFailure {
                start_id: start_id.to_string(),
                block,
                at: Utc::now(),
                message: failure.message,
                log: failure.log,
                log_tail: failure.tail,
            });
        }
        writer.save_manifest()?;
        self.failed.insert(name.to_string(), sentence);
        Ok(())
    }

    /// Hands `name` back after a cell: stopped under `per_block`, or when
    /// no later cell needs it; kept running otherwise.
    pub(crate) async fn release(&mut self, name: &str, needed_again: bool, writer: &mut RunWriter) {
        let keep = needed_again && self.opts.plan.restart() == Restart::Once;
        if keep {
            return;
        }
        if let Some(live) = self.live.remove(name) {
            self.stop(live, name, writer).await;
        }
    }

    /// Stops every server still running.
    pub(crate) async fn stop_all(&mut self, writer: &mut RunWriter) {
        for (name, live) in std::mem::take(&mut self.live) {
            self.stop(live, &name, writer).await;
        }
    }

    /// Stops `live`; a stop that leaves something behind fails the run
    /// (its sentence is among [`Fleet::failures`]).
    async fn stop(&mut self, live: Live, name: &str, writer: &mut RunWriter) {
        if let Some(sentence) = stop_live(live, name, writer).await {
            self.failed.insert(format!("{name} (stop)"), sentence);
        }
    }
}

/// Stops a live deployment and records how; a sentence when the stop left
/// something behind (a process of its group, or its port still answering).
async fn stop_live(live: Live, name: &str, writer: &mut RunWriter) -> Option<String> {
    crate::record::record_timing(writer, &live.target.client);
    live.target.shutdown().await;
    let server = live.server?;
    let pgid = server.record().pid;
    let port = server.record().port;
    let record = server.stop().await;
    if record.left_group > 0 {
        tracing::info!(
            target: crate::PROGRESS_TARGET,
            "qexp: deployment `{name}`: {} process(es) had left the server's group \
             and were stopped by the start's {TAG_VAR}",
            record.left_group
        );
    }
    let left = stop_left(name, pgid, port, &record);
    if let Some(s) = deployment_mut(writer, name).and_then(|d| d.starts.get_mut(live.start)) {
        s.stop = Some(record);
    }
    if let Err(e) = writer.save_manifest() {
        tracing::warn!(
            "cannot record the stop of {name}: {}",
            qexp_types::error::chain(&e)
        );
    }
    if let Some(sentence) = &left {
        tracing::warn!(target: crate::PROGRESS_TARGET, "qexp: {sentence}");
    }
    left
}

/// What a stop left behind, as a sentence for the user; None when nothing.
fn stop_left(name: &str, pgid: u32, port: u16, record: &StopRecord) -> Option<String> {
    let mut left = Vec::new();
    if !record.group_gone {
        left.push(format!(
            "processes it started still run (its group: `kill -KILL -- -{pgid}`; \
             any that left the group carry {TAG_VAR} in their environment)"
        ));
    }
    if !record.port_freed {
        left.push(format!("port {port} still answers"));
    }
    (!left.is_empty()).then(|| {
        format!(
            "deployment `{name}` was not stopped cleanly: {}",
            left.join(", and ")
        )
    })
}

/// The sentence's verb for a deployment that failed to start.
const NOT_STARTED: &str = "did not start for";

/// Why a start failed, for the manifest and the user.
struct Failure {
    message: String,
    log: Option<String>,
    tail: Option<String>,
    /// The user stopped the run: not the deployment's failure.
    cancelled: bool,
}

impl Failure {
    fn message(message: String) -> Failure {
        Failure {
            message,
            log: None,
            tail: None,
            cancelled: false,
        }
    }
}

impl From<LaunchError> for Failure {
    fn from(e: LaunchError) -> Failure {
        // The log's last lines go beside the sentence, not into it.
        let (message, log, tail) = match &e {
            LaunchError::Exited { status, log, tail } => (
                format!("the server exited before it was ready ({status})"),
                Some(log.display().to_string()),
                Some(tail.clone()),
            ),
            LaunchError::NotReady {
                waited_s,
                last,
                log,
                tail,
            } => (
                format!("the server was not ready after {waited_s:.1} s ({last})"),
                Some(log.display().to_string()),
                Some(tail.clone()),
            ),
            LaunchError::Unauthorized {
                last,
                key_sent,
                log,
                tail,
            } => (
                qexp_deploy::refused(last, *key_sent),
                Some(log.display().to_string()),
                Some(tail.clone()),
            ),
            _ => (qexp_types::error::chain(&e), None, None),
        };
        Failure {
            message,
            log,
            tail,
            cancelled: false,
        }
    }
}

/// `<name>-bBBBB` or `<name>-once`, with `-rN` on the Nth resume (a start
/// id is never used twice in one run folder).
fn start_id(writer: &RunWriter, name: &str, block: u32, restart: Restart) -> String {
    let base = match restart {
        Restart::PerBlock => format!("{name}-b{block:04}"),
        Restart::Once => format!("{name}-once"),
    };
    match writer.manifest().resumes.len() {
        0 => base,
        n => format!("{base}-r{n}"),
    }
}

/// The argv a start of `spec` would run, for `qexp run --dry-run`: every
/// placeholder filled as at a start, the run folder with `RUN_ID` for the
/// id a run gets when it starts, and `PORT` where each start picks a free
/// port.
pub fn launch_preview(
    spec: &DeploymentSpec,
    opts: &RunOptions,
) -> Result<Vec<String>, LaunchError> {
    let run_dir = opts.out.join(opts.plan.name()).join("RUN_ID");
    qexp_deploy::preview(&launch_spec(spec, opts, &run_dir), "PORT")
}

/// What qexp-deploy needs to launch `spec` for this run.
fn launch_spec(spec: &DeploymentSpec, opts: &RunOptions, run_dir: &std::path::Path) -> LaunchSpec {
    let model = named_model(opts, spec.model.as_deref());
    let mut placeholders = BTreeMap::new();
    if let Some(m) = &model {
        placeholders.insert("model".to_string(), m.clone());
    }
    placeholders.insert("run_dir".to_string(), run_dir.display().to_string());
    if let Ok(exe) = std::env::current_exe() {
        placeholders.insert("qexp".to_string(), exe.display().to_string());
    }
    LaunchSpec {
        name: spec.name().to_string(),
        command: spec
            .command
            .as_ref()
            .map(|c| c.get_ref().clone())
            .unwrap_or_default(),
        env: spec.env.clone(),
        host: spec.host.clone(),
        port: spec.port.as_ref().and_then(|p| p.get_ref().fixed()),
        ready_path: spec.ready_path.clone(),
        ready_timeout: Duration::from_secs_f64(*spec.ready_timeout_s.get_ref()),
        stop_grace: Duration::from_secs_f64(*spec.stop_grace_s.get_ref()),
        model,
        placeholders,
        api_key: None,
    }
}

/// POSTs the plan's cache-reset path; a failure is a warning (the block
/// is measured anyway, and the report's cache flags will show it).
async fn reset(client: &Client, path: &str) {
    match client.post_json(path, &serde_json::json!({})).await {
        Ok((status, _)) if (200..300).contains(&status) => {}
        Ok((status, _)) => tracing::warn!("cache reset {path} answered {status}"),
        Err(e) => tracing::warn!("cache reset {path} failed: {}", e.message),
    }
}

fn deployment_mut<'w>(
    writer: &'w mut RunWriter,
    name: &str,
) -> Option<&'w mut qexp_store::DeploymentRun> {
    writer
        .manifest_mut()
        .deployments
        .iter_mut()
        .find(|d| d.name == name)
}

fn push_block(
    writer: &mut RunWriter,
    name: &str,
    start: usize,
    block: u32,
) -> Result<(), RunError> {
    if let Some(s) = deployment_mut(writer, name).and_then(|d| d.starts.get_mut(start)) {
        s.blocks.push(block);
    }
    writer.save_manifest()?;
    Ok(())
}

/// Records a ready start; returns its index in the deployment's `starts`.
fn record_start(
    writer: &mut RunWriter,
    spec: &DeploymentSpec,
    start_id: &str,
    block: u32,
    server: &Option<Server>,
    prep: &Prepared,
) -> Result<usize, RunError> {
    let mut index = 0;
    if let Some(d) = deployment_mut(writer, spec.name()) {
        if d.fingerprint.is_none() {
            d.fingerprint = Some(prep.fingerprint.clone());
        }
        d.model = Some(prep.model.clone());
        d.starts.push(DeploymentStart {
            start_id: start_id.to_string(),
            blocks: vec![block],
            launch: server.as_ref().map(|s| s.record().clone()),
            stop: None,
            fingerprint: Some(prep.fingerprint.clone()),
        });
        index = d.starts.len() - 1;
    }
    writer.save_manifest()?;
    Ok(index)
}

#[cfg(test)]
mod tests {
    use super::*;
    use qexp_deploy::StopHow;

    fn record(group_gone: bool, port_freed: bool) -> StopRecord {
        StopRecord {
            how: StopHow::Kill,
            exit: None,
            took_s: 1.0,
            port_freed,
            leftovers_killed: false,
            group_gone,
            left_group: 0,
        }
    }

    #[test]
    fn a_stop_that_leaves_something_is_a_sentence_naming_it() {
        assert_eq!(stop_left("a", 41, 8000, &record(true, true)), None);
        let both = stop_left("a", 41, 8000, &record(false, false)).unwrap_or_default();
        assert!(
            both.starts_with("deployment `a` was not stopped cleanly"),
            "{both}"
        );
        assert!(
            both.contains("kill -KILL -- -41") && both.contains("port 8000"),
            "{both}"
        );
        let port = stop_left("a", 41, 8000, &record(true, false)).unwrap_or_default();
        assert!(
            !port.contains("group") && port.contains("port 8000"),
            "{port}"
        );
    }
}
