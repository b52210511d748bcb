//! The server lifecycle through the real launch path, with fake servers:
//! launching and readiness here, stopping in `stop`, qexp's own overhead in
//! `overhead`.

// Tests may panic: the ban on `unwrap` and `expect` (root Cargo.toml,
// [workspace.lints]) is for the code qexp ships.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod overhead;
mod stop;
mod support;

use std::collections::BTreeMap;
use std::fs;
use std::net::TcpListener;
use std::time::{Duration, Instant};

use qexp_deploy::{launch, LaunchError, PollError, StopHow, REDACTED};
use support::{bounded, fake_server, group_absent, logged_number, running, spec, start, tempdir};

#[tokio::test]
async fn ready_server_answers_and_stops_leaving_nothing() {
    bounded(async {
        let dir = tempdir();
        let spec = spec(fake_server("m", 0.3, None), "m");
        let server = match launch(&spec, &start(dir.path(), "s1")).await {
            Ok(server) => server,
            Err(e) => panic!("launch failed: {e}"),
        };
        let record = server.record().clone();
        assert_eq!(record.argv[3], record.port.to_string(), "{:?}", record.argv);
        assert_eq!(
            server.base_url(),
            format!("http://127.0.0.1:{}", record.port)
        );
        assert!(
            record.time_to_ready_s > 0.3,
            "ready before /health said so: {record:?}"
        );
        assert!(record.polls > 1, "the first 0.3 s answer 503: {record:?}");
        assert!(record.log.is_file(), "{:?}", record.log);
        let health = reqwest::get(format!("{}/health", server.base_url())).await;
        assert_eq!(health.map(|r| r.status().as_u16()).ok(), Some(200));

        let stopped = server.stop().await;
        assert_eq!(stopped.how, StopHow::Term, "{stopped:?}");
        assert!(stopped.port_freed && stopped.group_gone, "{stopped:?}");
        let pid = i32::try_from(record.pid).unwrap_or_default();
        assert!(group_absent(pid), "group {pid} still exists");
        assert!(TcpListener::bind(("127.0.0.1", record.port)).is_ok());
    })
    .await;
}

#[tokio::test]
async fn command_that_exits_at_once_is_reported_with_its_log() {
    bounded(async {
        let dir = tempdir();
        let argv = ["sh", "-c", "echo boom >&2; exit 3"]
            .map(str::to_owned)
            .to_vec();
        let spec = spec(argv, "m");
        let began = Instant::now();
        match launch(&spec, &start(dir.path(), "exits")).await {
            Err(LaunchError::Exited { status, tail, log }) => {
                assert!(status.contains('3'), "{status}");
                assert!(tail.contains("boom"), "{tail}");
                assert_eq!(log, dir.path().join("exits.log"));
            }
            Err(e) => panic!("expected Exited, got {e}"),
            Ok(_) => panic!("expected Exited, got a ready server"),
        }
        assert!(
            began.elapsed() < Duration::from_secs(5),
            "{:?}",
            began.elapsed()
        );
    })
    .await;
}

#[tokio::test]
async fn server_never_ready_times_out_and_is_gone() {
    bounded(async {
        let dir = tempdir();
        let mut spec = spec(fake_server("m", -1.0, None), "m");
        // Long enough for the fake server to bind on a busy host, so the
        // last poll sees its 503 and not a refused connection.
        spec.ready_timeout = Duration::from_millis(5000);
        let log = match launch(&spec, &start(dir.path(), "slow")).await {
            Err(LaunchError::NotReady {
                last,
                waited_s,
                log,
                tail,
            }) => {
                assert!(
                    matches!(last, PollError::Status { status: 503, .. }),
                    "{last}"
                );
                assert!((5.0..15.0).contains(&waited_s), "{waited_s}");
                assert!(tail.contains("bound"), "{tail}");
                log
            }
            Err(e) => panic!("expected NotReady, got {e}"),
            Ok(_) => panic!("expected NotReady, got a ready server"),
        };
        let Some(pid) = logged_number(&log, "pid ") else {
            panic!("the fake server did not log its pid");
        };
        assert!(!running(pid as i32), "server {pid} still runs");
    })
    .await;
}

#[tokio::test]
async fn server_listing_another_model_is_not_ready() {
    bounded(async {
        let dir = tempdir();
        let mut spec = spec(fake_server("other", 0.0, None), "mine");
        // Long enough for the fake server to bind on a busy host (python3
        // took 1.4 s to import http.server at a load average of 11), so the
        // last poll sees its model list and not a refused connection.
        spec.ready_timeout = Duration::from_millis(5000);
        match launch(&spec, &start(dir.path(), "model")).await {
            Err(LaunchError::NotReady { last, .. }) => {
                let PollError::OtherModel { listed, want } = &last else {
                    panic!("expected another model, got {last}");
                };
                assert_eq!(
                    (listed.as_slice(), want.as_str()),
                    (["other".to_owned()].as_slice(), "mine")
                );
            }
            Err(e) => panic!("expected NotReady, got {e}"),
            Ok(_) => panic!("expected NotReady, got a ready server"),
        }
    })
    .await;
}

/// A server that asks for an API key: the polls send the run's key, and
/// without one the launch fails at the first 401 with a sentence saying
/// what to set, not after the whole ready timeout.
#[tokio::test]
async fn a_server_that_asks_for_a_key_gets_it_or_is_refused_at_once() {
    bounded(async {
        let dir = tempdir();
        let mut spec = spec(fake_server("m", 0.0, None), "m");
        spec.env.insert("FAKE_KEY".to_owned(), "sekret".to_owned());
        spec.ready_timeout = Duration::from_secs(15);
        let began = std::time::Instant::now();
        match launch(&spec, &start(dir.path(), "no-key")).await {
            Err(
                e @ LaunchError::Unauthorized {
                    key_sent: false, ..
                },
            ) => {
                assert!(e.to_string().contains("api_key_env"), "{e}");
            }
            Err(e) => panic!("expected Unauthorized, got {e}"),
            Ok(_) => panic!("expected Unauthorized, got a ready server"),
        }
        assert!(
            began.elapsed() < Duration::from_secs(10),
            "waited out the timeout"
        );
        spec.api_key = Some(qexp_deploy::ApiKey("sekret".to_owned()));
        assert!(!format!("{:?}", spec.api_key).contains("sekret"));
        let server = match launch(&spec, &start(dir.path(), "key")).await {
            Ok(server) => server,
            Err(e) => panic!("launch with the key failed: {e}"),
        };
        let stopped = server.stop().await;
        assert!(stopped.port_freed && stopped.group_gone, "{stopped:?}");
    })
    .await;
}

/// The key reaches the server through `{api_key}` and is never shown:
/// not in the recorded argv or environment, not in the server's log (the
/// fake server prints the variable it was handed), not in the log lines an
/// error quotes; a command that asks for it in a run without a key is refused
/// before anything starts.
#[tokio::test]
async fn the_api_key_placeholder_reaches_the_server_and_nothing_shows_it() {
    const KEY: &str = "sekret-4a7f";
    bounded(async {
        let dir = tempdir();
        let mut command = fake_server("m", 0.0, Some("GIVEN"));
        command.push("--api-key={api_key}".to_owned());
        let mut spec = spec(command, "m");
        spec.env.insert("GIVEN".to_owned(), "{api_key}".to_owned());
        spec.env
            .insert("FAKE_KEY".to_owned(), "{api_key}".to_owned());

        match launch(&spec, &start(dir.path(), "no-key")).await {
            Err(e @ LaunchError::NoApiKey { .. }) => {
                assert!(e.to_string().contains("api_key_env"), "{e}");
            }
            Err(e) => panic!("expected NoApiKey, got {e}"),
            Ok(_) => panic!("expected NoApiKey, got a ready server"),
        }

        spec.api_key = Some(qexp_deploy::ApiKey(KEY.to_owned()));
        let server = match launch(&spec, &start(dir.path(), "key")).await {
            Ok(server) => server,
            Err(e) => panic!("launch with the key failed: {e}"),
        };
        // The server printed the key it got; its log holds it hidden.
        let log = std::fs::read_to_string(&server.record().log).unwrap_or_default();
        assert!(
            log.contains(&format!("env GIVEN={REDACTED}")) && !log.contains(KEY),
            "{log}"
        );
        let server_log = server.record().log.clone();
        let record = format!("{:?}", server.record());
        assert!(!record.contains(KEY), "{record}");
        assert!(
            server.record().argv.last() == Some(&format!("--api-key={REDACTED}")),
            "{record}"
        );
        assert_eq!(
            server.record().env.get("GIVEN").map(String::as_str),
            Some(REDACTED)
        );
        let stopped = server.stop().await;
        assert!(stopped.port_freed && stopped.group_gone, "{stopped:?}");
        let log = std::fs::read_to_string(&server_log).unwrap_or_default();
        assert!(log.contains("bound ") && !log.contains(KEY), "{log}");

        // A server that never lists the model: the error quotes its log,
        // which printed the key.
        spec.model = Some("other".to_owned());
        spec.ready_timeout = Duration::from_secs(2);
        match launch(&spec, &start(dir.path(), "not-ready")).await {
            Err(e @ LaunchError::NotReady { .. }) => {
                let text = e.to_string();
                assert!(text.contains("env GIVEN="), "the tail is quoted: {text}");
                assert!(!text.contains(KEY), "{text}");
            }
            Err(e) => panic!("expected NotReady, got {e}"),
            Ok(_) => panic!("expected NotReady, got a ready server"),
        }
    })
    .await;
}

#[tokio::test]
async fn port_already_serving_is_refused_before_spawning() {
    bounded(async {
        let dir = tempdir();
        let Ok(listener) = TcpListener::bind("127.0.0.1:0") else {
            panic!("cannot bind a test listener");
        };
        let port = listener.local_addr().map(|a| a.port()).unwrap_or_default();
        std::thread::spawn(move || listener.accept().map(drop));
        let marker = dir.path().join("ran");
        let argv = vec!["sh".to_owned(), "-c".to_owned(), r#"touch "$0""#.to_owned()];
        let mut spec = spec([argv, vec![marker.display().to_string()]].concat(), "m");
        spec.port = Some(port);
        match launch(&spec, &start(dir.path(), "busy")).await {
            Err(e @ LaunchError::PortBusy { .. }) => {
                let message = e.to_string();
                assert!(
                    message.contains(&format!("port {port} is already serving")),
                    "{message}"
                );
            }
            Err(e) => panic!("expected PortBusy, got {e}"),
            Ok(_) => panic!("expected PortBusy, got a ready server"),
        }
        assert!(!marker.exists(), "the command ran");
    })
    .await;
}

#[tokio::test]
async fn env_reaches_the_server_and_secrets_stay_out_of_the_record() {
    bounded(async {
        let dir = tempdir();
        let mut spec = spec(fake_server("m", 0.0, Some("HF_TOKEN")), "m");
        spec.env = BTreeMap::from([
            ("HF_TOKEN".to_owned(), "abc".to_owned()),
            ("MODE".to_owned(), "x".to_owned()),
        ]);
        let server = match launch(&spec, &start(dir.path(), "env")).await {
            Ok(server) => server,
            Err(e) => panic!("launch failed: {e}"),
        };
        let record = server.record().clone();
        server.stop().await;
        assert_eq!(record.env["HF_TOKEN"], REDACTED);
        assert_eq!(record.env["MODE"], "x");
        let json = serde_json::to_string(&record).unwrap_or_default();
        assert!(json.contains("MODE") && !json.contains("abc"), "{json}");
        let log = fs::read_to_string(&record.log).unwrap_or_default();
        assert!(log.contains("env HF_TOKEN=abc"), "{log}");
    })
    .await;
}

#[tokio::test]
async fn placeholders_resolve_and_unknown_ones_are_refused() {
    bounded(async {
        let dir = tempdir();
        let mut bad = spec(vec!["sh".into(), "-c".into(), "touch {nope}".into()], "m");
        bad.placeholders
            .insert("run_dir".into(), dir.path().display().to_string());
        match launch(&bad, &start(dir.path(), "bad")).await {
            Err(LaunchError::BadPlaceholder { name, .. }) => assert_eq!(name, "nope"),
            Err(e) => panic!("expected BadPlaceholder, got {e}"),
            Ok(_) => panic!("expected BadPlaceholder, got a ready server"),
        }

        let mut good = spec(fake_server("{model}", 0.0, Some("DEPLOY")), "m-1");
        good.placeholders.insert("model".into(), "m-1".into());
        good.env.insert("DEPLOY".into(), "{name}@{host}".into());
        let server = match launch(&good, &start(dir.path(), "good")).await {
            Ok(server) => server,
            Err(e) => panic!("launch failed: {e}"),
        };
        let record = server.record().clone();
        server.stop().await;
        assert_eq!(record.argv[4], "m-1");
        assert_eq!(record.env["DEPLOY"], "mtp@127.0.0.1");
        let log = fs::read_to_string(&record.log).unwrap_or_default();
        assert!(log.contains("env DEPLOY=mtp@127.0.0.1"), "{log}");
    })
    .await;
}
