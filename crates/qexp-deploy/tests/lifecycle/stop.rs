//! Stopping: TERM, grace, KILL, leftovers, the guard, and `Drop`.

use std::net::TcpListener;
use std::time::Duration;

use qexp_deploy::{launch, StopHow};

use crate::support::{
    bounded, child_pid, eventually, fake_server, group_absent, group_running, running,
    sh_with_fake_server, spec, start, tempdir,
};

#[tokio::test]
async fn server_ignoring_term_with_a_child_leaves_nothing() {
    bounded(async {
        let dir = tempdir();
        let child_pid_file = dir.path().join("child.pid");
        let script = r#"trap '' TERM; sleep 300 & echo $! > "$0"; python3 -c "$1" "$2" m 0; wait"#;
        let argv = sh_with_fake_server(script, &child_pid_file);
        let mut spec = spec(argv, "m");
        spec.stop_grace = Duration::from_millis(500);
        let server = match launch(&spec, &start(dir.path(), "stubborn")).await {
            Ok(server) => server,
            Err(e) => panic!("launch failed: {e}"),
        };
        let pgid = i32::try_from(server.record().pid).unwrap_or_default();
        let port = server.record().port;
        let child = child_pid(&child_pid_file);
        assert!(running(child) && group_running(pgid), "nothing to stop?");

        let stopped = server.stop().await;
        assert_eq!(stopped.how, StopHow::Kill, "{stopped:?}");
        assert!(stopped.took_s >= 0.5, "{stopped:?}");
        assert!(stopped.port_freed && stopped.group_gone, "{stopped:?}");
        assert!(!running(child), "child {child} still runs");
        assert!(!group_running(pgid), "group {pgid} still runs");
        assert!(TcpListener::bind(("127.0.0.1", port)).is_ok());
    })
    .await;
}

#[tokio::test]
async fn children_that_outlive_a_terminated_leader_are_killed() {
    bounded(async {
        let dir = tempdir();
        let child_pid_file = dir.path().join("child.pid");
        // The leader exits on TERM; its child ignores TERM and would linger.
        let script =
            r#"(trap '' TERM; exec sleep 300) & echo $! > "$0"; exec python3 -c "$1" "$2" m 0"#;
        let argv = sh_with_fake_server(script, &child_pid_file);
        let server = match launch(&spec(argv, "m"), &start(dir.path(), "orphan")).await {
            Ok(server) => server,
            Err(e) => panic!("launch failed: {e}"),
        };
        let child = child_pid(&child_pid_file);
        assert!(running(child));
        let stopped = server.stop().await;
        assert_eq!(stopped.how, StopHow::Term, "{stopped:?}");
        assert!(
            stopped.leftovers_killed && stopped.group_gone,
            "{stopped:?}"
        );
        assert!(!running(child), "child {child} still runs");
    })
    .await;
}

#[tokio::test]
async fn guard_stops_the_group_when_qexp_dies() {
    bounded(async {
        let dir = tempdir();
        let mut spec = spec(fake_server("m", 0.0, None), "m");
        spec.stop_grace = Duration::from_secs(1);
        let server = match launch(&spec, &start(dir.path(), "guarded")).await {
            Ok(server) => server,
            Err(e) => panic!("launch failed: {e}"),
        };
        let pgid = i32::try_from(server.record().pid).unwrap_or_default();
        assert!(group_running(pgid));
        server.abandon();
        // The leader is still this process's child: reap it as init would.
        let leader = nix::unistd::Pid::from_raw(pgid);
        let reap = || {
            let _ = nix::sys::wait::waitpid(leader, Some(nix::sys::wait::WaitPidFlag::WNOHANG));
            group_absent(pgid)
        };
        let limit = spec.stop_grace + Duration::from_secs(5);
        assert!(eventually(limit, reap).await, "group {pgid} outlived qexp");
    })
    .await;
}

#[tokio::test]
async fn dropping_a_server_kills_its_group() {
    bounded(async {
        let dir = tempdir();
        let server = match launch(
            &spec(fake_server("m", 0.0, None), "m"),
            &start(dir.path(), "d"),
        )
        .await
        {
            Ok(server) => server,
            Err(e) => panic!("launch failed: {e}"),
        };
        let pgid = i32::try_from(server.record().pid).unwrap_or_default();
        assert!(group_running(pgid));
        drop(server);
        assert!(group_absent(pgid), "group {pgid} survived the drop");
    })
    .await;
}

/// `sh -c SCRIPT` beside the fake server, where SCRIPT starts `sleep 300`
/// in a session of its own from a subshell that exits at once (a daemon's
/// double fork): the sleep has left the server's group and its parent.
const LEAVES_THE_GROUP: &str = r#"(setsid sh -c 'trap "" TERM; exec sleep 300' & echo $! > "$0"); exec python3 -c "$1" "$2" m 0"#;

/// KILLs a process of a start when dropped, so that a failing test leaves
/// no sleep behind (a pid reused meanwhile carries no start's tag).
struct KillOnDrop(i32);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let tag = format!("{}=", qexp_deploy::TAG_VAR);
        let env = std::fs::read(format!("/proc/{}/environ", self.0)).unwrap_or_default();
        if !env
            .split(|&b| b == 0)
            .any(|v| v.starts_with(tag.as_bytes()))
        {
            return;
        }
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(self.0),
            nix::sys::signal::Signal::SIGKILL,
        );
    }
}

/// Launches the fake server with a process that left its group; returns
/// the server, its group and that process, checked to run outside the group.
async fn with_a_process_outside_the_group(
    dir: &std::path::Path,
    grace: Duration,
) -> (qexp_deploy::Server, i32, KillOnDrop) {
    let child_pid_file = dir.join("child.pid");
    let mut spec = spec(sh_with_fake_server(LEAVES_THE_GROUP, &child_pid_file), "m");
    spec.stop_grace = grace;
    let server = match launch(&spec, &start(dir, "left")).await {
        Ok(server) => server,
        Err(e) => panic!("launch failed: {e}"),
    };
    let pgid = i32::try_from(server.record().pid).unwrap_or_default();
    let child = child_pid(&child_pid_file);
    let cleanup = KillOnDrop(child);
    assert!(running(child), "the sleep {child} does not run");
    let pgrp = nix::unistd::getpgid(Some(nix::unistd::Pid::from_raw(child)))
        .map(|p| p.as_raw())
        .unwrap_or_default();
    assert_ne!(pgrp, pgid, "the sleep did not leave the group");
    (server, pgid, cleanup)
}

#[tokio::test]
async fn a_process_that_left_the_group_is_stopped_with_it() {
    bounded(async {
        let dir = tempdir();
        let (server, pgid, cleanup) =
            with_a_process_outside_the_group(dir.path(), Duration::from_millis(500)).await;
        let child = cleanup.0;
        let stopped = server.stop().await;
        assert_eq!(stopped.left_group, 1, "{stopped:?}");
        assert!(stopped.group_gone && stopped.port_freed, "{stopped:?}");
        assert!(!running(child), "the sleep {child} outlived the stop");
        assert!(!group_running(pgid));
    })
    .await;
}

#[tokio::test]
async fn guard_stops_a_process_that_left_the_group_when_qexp_dies() {
    bounded(async {
        let dir = tempdir();
        let grace = Duration::from_millis(500);
        let (server, pgid, cleanup) = with_a_process_outside_the_group(dir.path(), grace).await;
        let child = cleanup.0;
        server.abandon();
        let leader = nix::unistd::Pid::from_raw(pgid);
        let gone = || {
            let _ = nix::sys::wait::waitpid(leader, Some(nix::sys::wait::WaitPidFlag::WNOHANG));
            !running(child)
        };
        let limit = grace + Duration::from_secs(5);
        assert!(
            eventually(limit, gone).await,
            "the sleep {child} outlived qexp"
        );
    })
    .await;
}

#[tokio::test]
async fn dropping_a_server_kills_a_process_that_left_its_group() {
    bounded(async {
        let dir = tempdir();
        let (server, _, cleanup) =
            with_a_process_outside_the_group(dir.path(), Duration::from_secs(2)).await;
        let child = cleanup.0;
        drop(server);
        let gone = || !running(child);
        assert!(
            eventually(Duration::from_secs(2), gone).await,
            "the sleep {child} survived the drop"
        );
    })
    .await;
}
