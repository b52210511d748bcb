//! The tag every process of a start inherits, to find the ones that left
//! the server's process group.
//!
//! A process that calls `setsid` (a daemon, a double fork, a helper that
//! wants its own session) is no longer reached by a signal to the group.
//! Its environment still holds what it inherited: qexp hands the server a
//! variable whose value no other start has, and at a stop reads
//! `/proc/<pid>/environ` for it. A process that replaced its whole
//! environment, or that a daemon runs on the server's behalf (a container),
//! carries no tag; the stop's port check still sees it.

use std::fs;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use nix::unistd::Pid;

/// The environment variable that carries a start's tag into every process
/// of its server.
pub const TAG_VAR: &str = "QEXP_SERVER_TAG";

/// Starts made by this process so far, so that two in one nanosecond differ.
static STARTS: AtomicU64 = AtomicU64::new(0);

/// A value no other start on this host has: qexp's pid, a count and the time.
pub(crate) fn new_tag() -> String {
    let n = STARTS.fetch_add(1, Ordering::Relaxed);
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    format!("{}-{n}-{nanos}", std::process::id())
}

/// Running processes (not zombies) whose environment holds `TAG_VAR=tag`,
/// leaving out the members of group `pgid`, which a signal to the group
/// reaches. Processes whose environment cannot be read (another user's)
/// are not found: qexp could not signal them either.
pub(crate) fn escaped(tag: &str, pgid: Pid) -> Vec<Pid> {
    let entry = format!("{TAG_VAR}={tag}");
    let Ok(pids) = crate::proc::proc_pids() else {
        return Vec::new();
    };
    pids.filter(|&pid| {
        fs::read(format!("/proc/{pid}/environ"))
            .is_ok_and(|env| env.split(|&b| b == 0).any(|v| v == entry.as_bytes()))
    })
    .filter(|&pid| {
        fs::read_to_string(format!("/proc/{pid}/stat"))
            .ok()
            .and_then(|stat| crate::proc::state_and_pgrp(&stat))
            .is_some_and(|(state, pgrp)| state != 'Z' && pgrp != pgid.as_raw())
    })
    .map(Pid::from_raw)
    .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::process::CommandExt;
    use std::process::{Command, Stdio};

    #[test]
    fn tags_differ() {
        assert_ne!(new_tag(), new_tag());
    }

    #[test]
    fn finds_a_tagged_process_outside_the_group_only() {
        let tag = new_tag();
        let mut child = Command::new("sleep")
            .arg("30")
            .env(TAG_VAR, &tag)
            .stdin(Stdio::null())
            .process_group(0)
            .spawn()
            .unwrap();
        let pid = Pid::from_raw(child.id() as i32);
        let other_group = Pid::from_raw(i32::MAX);
        // The parent goes on while the child's exec is still setting up
        // its new environment, which reads empty until then.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
        while escaped(&tag, other_group).is_empty() && std::time::Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        assert_eq!(escaped(&tag, other_group), vec![pid]);
        // In the group named: a signal to the group reaches it.
        assert!(escaped(&tag, pid).is_empty());
        assert!(escaped(&new_tag(), other_group).is_empty());
        child.kill().unwrap();
        child.wait().unwrap();
        assert!(escaped(&tag, other_group).is_empty());
    }
}
