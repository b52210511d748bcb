//! Launching a server until it is ready, and stopping it until nothing is left.

use std::collections::BTreeMap;
use std::future::Future;
use std::path::Path;
use std::time::{Duration, Instant};

use chrono::Utc;
use nix::sys::signal::Signal;

use crate::group::ProcessGroup;
use crate::placeholder::resolve;
use crate::ready::{Poller, Readiness};
use crate::redact::redact;
use crate::REDACTED;
use crate::{
    hide, logfile, net, ApiKey, LaunchError, LaunchSpec, StartRecord, StartRequest, StopHow,
    StopRecord,
};

/// How long the stop waits for a KILLed leader, the group, and the port.
const SETTLE_WAIT: Duration = Duration::from_secs(5);
/// The pause between checks while a stop waits.
const STOP_POLL: Duration = Duration::from_millis(20);

/// A ready server; stopped by [`Server::stop`], or KILLed when dropped.
pub struct Server {
    record: StartRecord,
    group: ProcessGroup,
    grace: Duration,
    host: String,
    /// The run's key, hidden from the log lines [`Server::log_tail`] quotes.
    key: Option<ApiKey>,
}

/// Launches `spec`'s server for one start and returns once it is ready.
///
/// On any error nothing is left running: a server that was spawned has been
/// KILLed and reaped before the error is returned.
pub async fn launch(spec: &LaunchSpec, start: &StartRequest) -> Result<Server, LaunchError> {
    if spec.command.is_empty() {
        return Err(LaunchError::EmptyCommand);
    }
    let port = match spec.port {
        Some(port) => port,
        None => net::free_port(&spec.host)?,
    };
    let base_url = net::base_url(&spec.host, port);
    let (argv, env) = fill_command(spec, port)?;
    let key = spec.api_key.as_ref();
    if net::accepts(&spec.host, port).await {
        return Err(LaunchError::PortBusy { port, base_url });
    }
    let poller = Poller::new(&base_url, spec)?;
    let log = logfile::path_for(start);
    let log_file = logfile::open(&log)?;

    let started_at = Utc::now();
    let spawned = Instant::now();
    let group = ProcessGroup::spawn(&argv, &env, &log_file, spec.stop_grace, key)?;
    tracing::info!(name = %spec.name, pid = group.pid(), %base_url, "server launched");
    let (group, polls) = wait_ready(&poller, group, spec.ready_timeout, key, &log, spawned).await?;
    let record = StartRecord {
        start_id: start.start_id.clone(),
        name: spec.name.clone(),
        argv: argv.iter().map(|a| hide(key, a)).collect(),
        env: redact(&env)
            .into_iter()
            .map(|(k, v)| (k, hide(key, &v)))
            .collect(),
        port,
        base_url,
        pid: group.pid(),
        log,
        started_at,
        time_to_ready_s: spawned.elapsed().as_secs_f64(),
        polls,
    };
    tracing::info!(name = %spec.name, time_to_ready_s = record.time_to_ready_s, "server ready");
    Ok(Server {
        record,
        group,
        grace: spec.stop_grace,
        host: spec.host.clone(),
        key: spec.api_key.clone(),
    })
}

/// `spec`'s command and environment with every placeholder filled for a
/// start on `port`; an `{api_key}` in a run without a key is
/// [`LaunchError::NoApiKey`].
fn fill_command(
    spec: &LaunchSpec,
    port: u16,
) -> Result<(Vec<String>, BTreeMap<String, String>), LaunchError> {
    let values = placeholder_values(spec, port.to_string());
    let fill = |arg: &str| {
        resolve(arg, &values).map_err(|e| match e {
            LaunchError::BadPlaceholder { name, arg } if name == "api_key" => {
                LaunchError::NoApiKey { arg }
            }
            e => e,
        })
    };
    let argv = spec
        .command
        .iter()
        .map(|arg| fill(arg))
        .collect::<Result<Vec<_>, _>>()?;
    let env = spec
        .env
        .iter()
        .map(|(k, v)| Ok((k.clone(), fill(v)?)))
        .collect::<Result<BTreeMap<_, _>, LaunchError>>()?;
    Ok((argv, env))
}

/// Waits up to `timeout` for the server in `group`, spawned at `spawned`,
/// to answer ready, and gives the group back with the polls it took. A
/// server that exits, refuses the key or is not ready in time is KILLed
/// and reaped, and the error quotes `log`'s last lines with `key` hidden.
async fn wait_ready(
    poller: &Poller,
    mut group: ProcessGroup,
    timeout: Duration,
    key: Option<&ApiKey>,
    log: &Path,
    spawned: Instant,
) -> Result<(ProcessGroup, u32), LaunchError> {
    let polls = match poller.wait(&mut group, timeout).await {
        Readiness::Ready { polls } => polls,
        Readiness::Exited { status } => {
            let tail = kill_for_tail(group, key, log);
            return Err(LaunchError::Exited {
                status,
                log: log.to_path_buf(),
                tail,
            });
        }
        Readiness::Refused { last } => {
            let tail = kill_for_tail(group, key, log);
            return Err(LaunchError::Unauthorized {
                last,
                key_sent: key.is_some(),
                log: log.to_path_buf(),
                tail,
            });
        }
        Readiness::TimedOut { last } => {
            let waited_s = spawned.elapsed().as_secs_f64();
            let tail = kill_for_tail(group, key, log);
            return Err(LaunchError::NotReady {
                waited_s,
                last,
                log: log.to_path_buf(),
                tail,
            });
        }
    };
    Ok((group, polls))
}

/// KILLs and reaps `group`, then reads the last lines of its `log`, `key`
/// hidden: what the server wrote before it was stopped.
fn kill_for_tail(group: ProcessGroup, key: Option<&ApiKey>, log: &Path) -> String {
    drop(group);
    hide(key, &logfile::tail(log))
}

/// The argv [`launch`] would run, for a dry run: every placeholder filled
/// as at a start, the port written `auto_port` where the start would pick a
/// free one, the API key hidden.
pub fn preview(spec: &LaunchSpec, auto_port: &str) -> Result<Vec<String>, LaunchError> {
    let port = spec
        .port
        .map_or_else(|| auto_port.to_owned(), |p| p.to_string());
    let mut values = placeholder_values(spec, port);
    values.insert("api_key".to_owned(), REDACTED.to_owned());
    spec.command
        .iter()
        .map(|arg| resolve(arg, &values))
        .collect()
}

/// The caller's placeholders with `port`, `host` and `name`, which win,
/// and `api_key` when the run has a key.
fn placeholder_values(spec: &LaunchSpec, port: String) -> BTreeMap<String, String> {
    let mut values = spec.placeholders.clone();
    values.insert("port".to_owned(), port);
    values.insert("host".to_owned(), spec.host.clone());
    values.insert("name".to_owned(), spec.name.clone());
    if let Some(key) = &spec.api_key {
        values.insert("api_key".to_owned(), key.0.clone());
    }
    values
}

impl Server {
    /// Where the server answers: `http://host:port`.
    pub fn base_url(&self) -> &str {
        &self.record.base_url
    }

    /// How the server was started.
    pub fn record(&self) -> &StartRecord {
        &self.record
    }

    /// Whether the server's leader process is still running.
    pub fn is_alive(&mut self) -> bool {
        self.group.exit_status().is_none()
    }

    /// How the server's leader exited, if it has: a server that dies while
    /// it is measured (out of memory, a crash) is seen here.
    pub fn exited(&mut self) -> Option<String> {
        self.group.exit_status()
    }

    /// A check that needs no hold on the server: true while its leader
    /// runs (exists and is not a zombie waiting to be reaped). The runner
    /// asks it after each point, so that a point measured while the server
    /// died is kept as incomplete and measured again on `--resume`.
    pub fn liveness(&self) -> Liveness {
        Liveness {
            pid: self.record.pid,
        }
    }

    /// The last lines of the server's log, the run's key hidden.
    pub fn log_tail(&self) -> String {
        hide(self.key.as_ref(), &logfile::tail(&self.record.log))
    }

    /// Stops the server: TERM to the group (and to the start's processes
    /// that left it), the grace, KILL, then waits until they are gone and
    /// the port free. Never fails; the record says how.
    ///
    /// The guard stays armed until the group is gone: if qexp dies during
    /// the stop (a second Ctrl-C exits at once), the guard still TERMs and
    /// KILLs the group.
    pub async fn stop(mut self) -> StopRecord {
        let began = Instant::now();
        let left_group = u32::try_from(self.group.escaped()).unwrap_or(u32::MAX);
        let (how, exit) = match self.group.exit_status() {
            Some(status) => (StopHow::AlreadyExited, Some(status)),
            None => self.terminate().await,
        };
        // Whatever the leader did, children it left in its group die now.
        let leftovers_killed = !self.group.is_gone();
        let _ = self.group.signal(Signal::SIGKILL);
        let group = &self.group;
        let group_gone = settle(|| async { group.is_gone() }).await;
        self.group.disarm_guard();
        if !self.group.flush_log(SETTLE_WAIT) {
            tracing::warn!(name = %self.record.name, "the server's log copy did not end");
        }
        let port = self.record.port;
        let host = self.host.as_str();
        let port_freed = settle(|| async { !net::accepts(host, port).await }).await;
        let record = StopRecord {
            how,
            exit,
            took_s: began.elapsed().as_secs_f64(),
            port_freed,
            leftovers_killed,
            group_gone,
            left_group,
        };
        tracing::info!(name = %self.record.name, ?record, "server stopped");
        record
    }

    /// TERM, up to the grace for the leader to exit, then KILL.
    async fn terminate(&mut self) -> (StopHow, Option<String>) {
        let _ = self.group.signal(Signal::SIGTERM);
        if let Some(status) = self.wait_exit(self.grace).await {
            return (StopHow::Term, Some(status));
        }
        let _ = self.group.signal(Signal::SIGKILL);
        (StopHow::Kill, self.wait_exit(SETTLE_WAIT).await)
    }

    async fn wait_exit(&mut self, limit: Duration) -> Option<String> {
        let deadline = Instant::now() + limit;
        loop {
            if let Some(status) = self.group.exit_status() {
                return Some(status);
            }
            if Instant::now() >= deadline {
                return None;
            }
            tokio::time::sleep(STOP_POLL).await;
        }
    }

    /// Closes the guard's pipe and forgets the server without stopping it,
    /// as qexp's death would; only for testing the guard.
    #[doc(hidden)]
    pub fn abandon(self) {
        self.group.abandon();
    }
}

/// Polls `check` until it holds or [`SETTLE_WAIT`] passes; whether it held.
async fn settle<F, Fut>(check: F) -> bool
where
    F: Fn() -> Fut,
    Fut: Future<Output = bool>,
{
    let deadline = Instant::now() + SETTLE_WAIT;
    loop {
        if check().await {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        tokio::time::sleep(STOP_POLL).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn send<T: Send>(_: &T) {}

    #[test]
    fn a_preview_fills_what_a_start_fills_and_never_shows_the_key() {
        let argv = [
            "srv",
            "--port",
            "{port}",
            "--name={name}",
            "--key",
            "{api_key}",
        ];
        let mut spec = LaunchSpec::new("a", argv.map(str::to_owned).to_vec());
        spec.api_key = Some(crate::ApiKey("sk-1".to_owned()));
        let shown = preview(&spec, "PORT").unwrap();
        assert_eq!(
            shown,
            ["srv", "--port", "PORT", "--name=a", "--key", REDACTED]
        );
        spec.port = Some(8123);
        assert_eq!(preview(&spec, "PORT").unwrap()[2], "8123");
        spec.command.push("{nope}".to_owned());
        assert!(preview(&spec, "PORT").is_err());
    }

    #[test]
    fn servers_and_launches_can_move_between_tasks() {
        // Built but never polled: only the types are under test, and the
        // runner spawns launches and holds servers across tasks.
        let spec = LaunchSpec::new("x", vec!["true".to_owned()]);
        let start = StartRequest {
            start_id: "s".to_owned(),
            log_dir: std::env::temp_dir(),
        };
        let launching = launch(&spec, &start);
        send(&launching);
        fn server_is_send(server: Server) -> impl Send {
            server
        }
        let _ = server_is_send;
    }
}

/// See [`Server::liveness`].
#[derive(Debug, Clone, Copy)]
pub struct Liveness {
    pid: u32,
}

impl Liveness {
    /// True while the server's leader runs.
    pub fn is_alive(&self) -> bool {
        let Ok(pid) = i32::try_from(self.pid) else {
            return false;
        };
        if nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), None).is_err() {
            return false;
        }
        // A leader that exited stays a zombie until qexp reaps it.
        match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
            Ok(stat) => stat
                .rsplit_once(") ")
                .and_then(|(_, rest)| rest.chars().next())
                .is_some_and(|state| state != 'Z'),
            Err(_) => true,
        }
    }
}
