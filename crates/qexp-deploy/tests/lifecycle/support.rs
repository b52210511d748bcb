//! The lifecycle tests' kit: a fake OpenAI-ish server run through the real
//! launch path, specs and starts, and checks of what is still running.

use std::fs;
use std::future::Future;
use std::path::Path;
use std::time::{Duration, Instant};

use nix::errno::Errno;
use nix::sys::signal::{kill, killpg};
use nix::unistd::Pid;
use qexp_deploy::{LaunchSpec, StartRequest};

/// A fake server: `argv: PORT MODEL UNREADY_S [ECHO_VAR]`.
///
/// It prints its pid, the variable named ECHO_VAR, and `bound <unix time>`
/// once it listens; `/health` answers 503 for UNREADY_S seconds after the
/// bind (forever if negative), then 200; `/v1/models` lists MODEL, only to
/// a Bearer token equal to `FAKE_KEY` where that variable is set. It has no
/// braces, so no placeholder can hide in it.
pub const FAKE_SERVER: &str = r#"
import http.server, json, os, sys, time
port, model, unready = int(sys.argv[1]), sys.argv[2], float(sys.argv[3])
echo = sys.argv[4] if len(sys.argv) > 4 else ""
print("pid %d" % os.getpid(), flush=True)
if echo:
    print("env " + echo + "=" + os.environ.get(echo, "<unset>"), flush=True)

class Handler(http.server.BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def answer(self, code, body):
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        if self.path == "/health":
            ready = unready >= 0 and time.time() - bound >= unready
            self.answer(200 if ready else 503, b"")
        elif self.path == "/v1/models":
            key = os.environ.get("FAKE_KEY")
            if key and self.headers.get("Authorization") != "Bearer " + key:
                self.answer(401, b"")
                return
            listing = dict(object="list", data=[dict(id=model, object="model")])
            self.answer(200, json.dumps(listing).encode())
        else:
            self.answer(404, b"")

server = http.server.ThreadingHTTPServer(("127.0.0.1", port), Handler)
bound = time.time()
print("bound %.6f" % bound, flush=True)
server.serve_forever()
"#;

/// The longest any lifecycle test may run.
pub const TEST_LIMIT: Duration = Duration::from_secs(60);

/// The fake server's argv, listening on `{port}`.
pub fn fake_server(model: &str, unready_s: f64, echo: Option<&str>) -> Vec<String> {
    let mut argv = vec![
        "python3".to_owned(),
        "-c".to_owned(),
        FAKE_SERVER.to_owned(),
        "{port}".to_owned(),
        model.to_owned(),
        unready_s.to_string(),
    ];
    argv.extend(echo.map(str::to_owned));
    argv
}

/// A spec with test-sized limits that expects `model`.
pub fn spec(command: Vec<String>, model: &str) -> LaunchSpec {
    let mut spec = LaunchSpec::new("mtp", command);
    spec.model = Some(model.to_owned());
    spec.ready_timeout = Duration::from_secs(20);
    spec.stop_grace = Duration::from_secs(2);
    spec
}

/// A start whose log goes to `dir`.
pub fn start(dir: &Path, start_id: &str) -> StartRequest {
    StartRequest {
        start_id: start_id.to_owned(),
        log_dir: dir.to_owned(),
    }
}

/// Runs a test body, failing it (and dropping its servers) after [`TEST_LIMIT`].
pub async fn bounded<F: Future<Output = ()>>(body: F) {
    if tokio::time::timeout(TEST_LIMIT, body).await.is_err() {
        panic!("test ran past {TEST_LIMIT:?}");
    }
}

/// Polls `check` every 20 ms until it holds or `limit` passes.
pub async fn eventually(limit: Duration, mut check: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + limit;
    loop {
        if check() {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Whether process `pid` runs: it exists and is not a zombie. Zombies count
/// as gone because an init that does not reap orphans (as in some
/// containers) keeps them, and they hold no port or memory.
pub fn running(pid: i32) -> bool {
    kill(Pid::from_raw(pid), None) != Err(Errno::ESRCH) && state(pid) != Some('Z')
}

/// Whether any process of group `pgid` runs (see [`running`] on zombies).
pub fn group_running(pgid: i32) -> bool {
    if killpg(Pid::from_raw(pgid), None) == Err(Errno::ESRCH) {
        return false;
    }
    let Ok(entries) = fs::read_dir("/proc") else {
        return true;
    };
    entries
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .any(|pid| stat(pid).is_some_and(|(state, pgrp)| pgrp == pgid && state != 'Z'))
}

/// Whether group `pgid` is gone in the strict sense: `killpg` says ESRCH.
pub fn group_absent(pgid: i32) -> bool {
    killpg(Pid::from_raw(pgid), None) == Err(Errno::ESRCH)
}

fn state(pid: i32) -> Option<char> {
    stat(pid).map(|(state, _)| state)
}

fn stat(pid: i32) -> Option<(char, i32)> {
    let text = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let mut fields = text[text.rfind(')')? + 1..].split_whitespace();
    let state = fields.next()?.chars().next()?;
    let pgrp = fields.nth(1)?.parse().ok()?;
    Some((state, pgrp))
}

/// The first number after `prefix ` on a line of the log at `path`.
pub fn logged_number(path: &Path, prefix: &str) -> Option<f64> {
    let text = fs::read_to_string(path).ok()?;
    text.lines()
        .find_map(|line| line.strip_prefix(prefix)?.trim().parse().ok())
}

/// A temporary folder for logs and markers, removed when dropped.
pub fn tempdir() -> tempfile::TempDir {
    match tempfile::tempdir() {
        Ok(dir) => dir,
        Err(e) => panic!("cannot make a temp dir: {e}"),
    }
}

/// `sh -c SCRIPT PIDFILE FAKE_SERVER {port}`: the script sees the file for
/// its child's pid as `$0`, the fake server's code as `$1`, the port as `$2`.
pub fn sh_with_fake_server(script: &str, child_pid_file: &Path) -> Vec<String> {
    vec![
        "sh".to_owned(),
        "-c".to_owned(),
        script.to_owned(),
        child_pid_file.display().to_string(),
        FAKE_SERVER.to_owned(),
        "{port}".to_owned(),
    ]
}

/// The pid a test script wrote to `path`.
pub fn child_pid(path: &Path) -> i32 {
    let text = fs::read_to_string(path).unwrap_or_default();
    match text.trim().parse() {
        Ok(pid) => pid,
        Err(_) => panic!(
            "the script did not write its child's pid to {}",
            path.display()
        ),
    }
}
