//! The server's process group and the guard that outlives qexp.
//!
//! The server leads its own process group, so one signal reaches every
//! process it started. Every process of the start also inherits a tag in
//! its environment ([`crate::tag`]), so that one which left the group
//! (`setsid`, a daemon's double fork) is signalled with it. A guard `sh`,
//! in a group of its own, blocks reading a pipe whose write end only qexp
//! holds: when qexp dies in any way, even by SIGKILL, the pipe closes and
//! the guard stops the server's group and its tagged processes.

use std::collections::BTreeMap;
use std::fs::{self, File};
use std::io;
use std::os::unix::process::CommandExt;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::time::{Duration, Instant};

use nix::errno::Errno;
use nix::sys::signal::{kill, killpg, Signal};
use nix::unistd::Pid;

use crate::logcopy::Copier;
use crate::proc::{proc_pids, state_and_pgrp};
use crate::tag::{self, TAG_VAR};
use crate::{ApiKey, LaunchError};

/// Reads its stdin until EOF, then TERMs group `$1` and every process whose
/// environment holds the entry `$3`, waits `$2` s, and KILLs them. Where
/// `grep` cannot read NUL-separated input (`-z`), the group alone.
const GUARD_SCRIPT: &str = r#"while read line; do :; done
entry=$3
tagged() {
  for f in $(grep -lszxF -- "$entry" /proc/[0-9]*/environ); do
    p=${f#/proc/}; echo "${p%/environ}"
  done
}
kill -s TERM -- -"$1" $(tagged) 2>/dev/null
sleep "$2"
kill -s KILL -- -"$1" $(tagged) 2>/dev/null"#;

/// How long a synchronous reap (in `Drop`) waits for a KILLed process.
const SYNC_REAP_WAIT: Duration = Duration::from_secs(2);
/// How long `Drop` waits for the log's last bytes once the group is KILLed.
const SYNC_LOG_WAIT: Duration = Duration::from_secs(1);

/// A running server group, KILLed and reaped when dropped.
pub(crate) struct ProcessGroup {
    leader: Child,
    pgid: Pid,
    /// The value of [`TAG_VAR`] in every process of this start.
    tag: String,
    guard: Option<Guard>,
    /// The copy of the server's output into its log, when a key is hidden.
    copier: Option<Copier>,
}

struct Guard {
    child: Child,
    /// The pipe's write end; closing it sets the guard off.
    stdin: Option<ChildStdin>,
}

impl ProcessGroup {
    /// Spawns `argv` leading a new process group, then its guard. With a
    /// key, the server's output reaches `log` through a copy that hides it.
    pub(crate) fn spawn(
        argv: &[String],
        env: &BTreeMap<String, String>,
        log: &File,
        grace: Duration,
        key: Option<&ApiKey>,
    ) -> Result<Self, LaunchError> {
        let Some((program, args)) = argv.split_first() else {
            return Err(LaunchError::EmptyCommand);
        };
        let spawn_err = |argv0: &str| {
            let argv0 = argv0.to_owned();
            move |source| LaunchError::Spawn { argv0, source }
        };
        let log_err = |source| LaunchError::Spawn {
            argv0: program.clone(),
            source,
        };
        // Started before the server, so that its pipe is read from the
        // first byte; if the spawn fails, the pipe closes and the copy ends.
        let (out, copier) = match key.filter(|k| !k.0.is_empty()) {
            Some(key) => {
                let (reader, writer) = io::pipe().map_err(log_err)?;
                let to = log.try_clone().map_err(log_err)?;
                let copier = Copier::start(reader, to, key.0.clone()).map_err(log_err)?;
                (Output::Pipe(writer), Some(copier))
            }
            None => (Output::File(log.try_clone().map_err(log_err)?), None),
        };
        let tag = tag::new_tag();
        let leader = Command::new(program)
            .args(args)
            .envs(env)
            .env(TAG_VAR, &tag)
            .stdin(Stdio::null())
            .stdout(out.stdio().map_err(log_err)?)
            .stderr(out.stdio().map_err(log_err)?)
            .process_group(0)
            .spawn()
            .map_err(spawn_err(program))?;
        drop(out);
        let pgid = Pid::from_raw(i32::try_from(leader.id()).unwrap_or(i32::MAX));
        let mut group = Self {
            leader,
            pgid,
            tag,
            guard: None,
            copier,
        };
        // If the guard cannot start, `group` is dropped here: the server is KILLed.
        let guard = Command::new("sh")
            .args(["-c", GUARD_SCRIPT, "qexp-guard"])
            .arg(pgid.to_string())
            .arg(format!("{:.3}", grace.as_secs_f64()))
            .arg(format!("{TAG_VAR}={}", group.tag))
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .process_group(0)
            .spawn()
            .map_err(spawn_err("sh (qexp-guard)"))?;
        group.guard = Some(Guard {
            stdin: None,
            child: guard,
        });
        if let Some(g) = group.guard.as_mut() {
            g.stdin = g.child.stdin.take();
        }
        Ok(group)
    }

    /// The leader's pid, which is the group's id.
    pub(crate) fn pid(&self) -> u32 {
        self.leader.id()
    }

    /// How the leader exited, if it has (reaping it).
    pub(crate) fn exit_status(&mut self) -> Option<String> {
        match self.leader.try_wait() {
            Ok(None) => None,
            Ok(Some(status)) => Some(status.to_string()),
            Err(e) => Some(format!("unknown ({e})")),
        }
    }

    /// Sends `signal` to every process of the group and to every tagged
    /// process that left it; `Ok` if any received it.
    pub(crate) fn signal(&self, signal: Signal) -> nix::Result<()> {
        let group = killpg(self.pgid, signal);
        let mut reached = group.is_ok();
        for pid in tag::escaped(&self.tag, self.pgid) {
            reached |= kill(pid, signal).is_ok();
        }
        if reached {
            Ok(())
        } else {
            group
        }
    }

    /// Whether the group is gone: no process in it, or only zombies that an
    /// init which does not reap keeps around (they hold no port or memory),
    /// and no tagged process outside it runs.
    pub(crate) fn is_gone(&self) -> bool {
        (killpg(self.pgid, None) == Err(Errno::ESRCH) || only_zombies_in(self.pgid))
            && self.escaped() == 0
    }

    /// How many processes of this start run outside its group.
    pub(crate) fn escaped(&self) -> usize {
        tag::escaped(&self.tag, self.pgid).len()
    }

    /// Waits at most `limit` for the server's last output to be in its log
    /// (at once where the server writes the log itself); true if it is.
    pub(crate) fn flush_log(&mut self, limit: Duration) -> bool {
        self.copier.as_mut().is_none_or(|c| c.wait(limit))
    }

    /// KILLs and reaps the guard so it can never signal this group again.
    pub(crate) fn disarm_guard(&mut self) {
        if let Some(mut guard) = self.guard.take() {
            if let Ok(pid) = i32::try_from(guard.child.id()) {
                // The guard is unreaped, so its pid cannot have been reused.
                let _ = killpg(Pid::from_raw(pid), Signal::SIGKILL);
            }
            let _ = guard.child.wait();
            drop(guard.stdin);
        }
    }

    /// Closes the guard's pipe and forgets the group, as qexp's death would.
    pub(crate) fn abandon(mut self) {
        if let Some(guard) = self.guard.as_mut() {
            drop(guard.stdin.take());
        }
        std::mem::forget(self);
    }

    /// KILLs the group and reaps the leader, waiting at most `limit`.
    fn kill_and_reap_blocking(&mut self, limit: Duration) {
        // Sent before the leader is reaped, so the pgid cannot have been reused.
        let _ = self.signal(Signal::SIGKILL);
        let deadline = Instant::now() + limit;
        while self.exit_status().is_none() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(5));
        }
    }
}

impl Drop for ProcessGroup {
    fn drop(&mut self) {
        // KILLed before the guard is disarmed, so that qexp dying meanwhile
        // still leaves the guard to stop the group.
        if self.exit_status().is_none() || !self.is_gone() {
            self.kill_and_reap_blocking(SYNC_REAP_WAIT);
            tracing::debug!(pgid = %self.pgid, "server group KILLed on drop");
        }
        self.flush_log(SYNC_LOG_WAIT);
        self.disarm_guard();
    }
}

/// Whether every process in group `pgid` is a zombie, read from `/proc`;
/// false where `/proc` cannot be read, so callers rely on `killpg` alone.
fn only_zombies_in(pgid: Pid) -> bool {
    let Ok(pids) = proc_pids() else {
        return false;
    };
    for pid in pids {
        match fs::read_to_string(format!("/proc/{pid}/stat")) {
            Ok(stat) => match state_and_pgrp(&stat) {
                Some((state, pgrp)) if pgrp == pgid.as_raw() && state != 'Z' => return false,
                Some(_) => {}
                None => return false,
            },
            // A process that exited between listing and reading is gone;
            // any other failure means we cannot tell.
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(_) if kill(Pid::from_raw(pid), None) == Err(Errno::ESRCH) => {}
            Err(_) => return false,
        }
    }
    true
}

/// Where the server's stdout and stderr go.
enum Output {
    /// The log file itself.
    File(File),
    /// The pipe a [`Copier`] reads.
    Pipe(io::PipeWriter),
}

impl Output {
    fn stdio(&self) -> io::Result<Stdio> {
        Ok(match self {
            Self::File(f) => f.try_clone()?.into(),
            Self::Pipe(p) => p.try_clone()?.into(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn own_group_is_not_only_zombies() {
        let own = nix::unistd::getpgrp();
        assert!(!only_zombies_in(own));
    }
}
