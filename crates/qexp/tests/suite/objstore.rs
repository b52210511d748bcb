//! Run folders through an object store: two shards run with `qexp run
//! --upload URL` and `qexp merge` given their URLs writes the run that
//! merging the local folders writes, row for row, once to a `file://` URL
//! and once to an S3 server on 127.0.0.1 (moto's, from PyPI: an
//! independent implementation of the S3 API, started by the test on a
//! free port and stopped after, its port checked free). A run killed with
//! `kill -9` has left what it measured in the store: downloaded and
//! resumed, it completes. Bad URLs, missing credentials and an unreachable
//! store are one sentence each, before anything is measured.
//!
//! Without moto the S3 test says so and skips, unless
//! QEXP_REQUIRE_OBJSTORE=1 (CI installs it with scripts/objstore/install.sh
//! and names its python in QEXP_MOTO_PYTHON).

use crate::common::qexp;
use polars::prelude::*;
use qexp_testkit::PlanFixture;
use std::io::{BufRead as _, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Two points, two trials: a run of a second or two on the `fast` profile.
fn plan() -> PlanFixture {
    PlanFixture::new("objstore")
        .target("sim:fast")
        .ignore_eos()
        .output(10)
        .concurrency(&[2, 4])
        .requests(16)
        .warmup(2)
        .trials(2)
        .seed(5)
}

/// A plan slow enough to be killed mid-run on the `exact` profile (TTFT
/// 50 ms, 10 ms a token): one request at a time, about 3 s a point.
fn slow() -> PlanFixture {
    PlanFixture::new("objstore-slow")
        .target("sim:exact")
        .ignore_eos()
        .concurrency(&[1, 2])
        .requests(12)
        .warmup(0)
        .trials(1)
        .seed(6)
}

const RUN_ID: &str = "20261205T000000Z-0b5e11";

/// The moto S3 server, stopped (and its port checked free) on drop.
struct S3Server {
    child: Child,
    port: u16,
}

const MOTO: &str = r#"
import sys, boto3
from moto.server import ThreadedMotoServer
s = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
s.start()
port = s.get_host_and_port()[1]
boto3.client("s3", endpoint_url=f"http://127.0.0.1:{port}", region_name="us-east-1",
             aws_access_key_id="qexp", aws_secret_access_key="qexp").create_bucket(Bucket="bench")
print(port, flush=True)
sys.stdin.read()
s.stop()
"#;

impl S3Server {
    /// Starts moto on 127.0.0.1:0 with a bucket `bench`, or None (the
    /// reason printed) when moto is not installed and not required.
    fn start() -> Option<S3Server> {
        let python = std::env::var("QEXP_MOTO_PYTHON").unwrap_or_else(|_| "python3".into());
        let found = Command::new(&python)
            .args(["-c", "import moto.server, boto3"])
            .output()
            .is_ok_and(|o| o.status.success());
        if !found {
            let why = format!(
                "moto[server] is not importable by `{python}` (install it with scripts/objstore/install.sh and set QEXP_MOTO_PYTHON)"
            );
            qexp_testkit::skip(qexp_testkit::Need::ObjectStore, &why);
            return None;
        }
        let mut child = Command::new(&python)
            .args(["-c", MOTO])
            .env_remove("AWS_ENDPOINT_URL")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let port = line.trim().parse().unwrap_or_else(|_| {
            let _ = child.kill();
            panic!("moto did not print its port: {line:?}")
        });
        Some(S3Server { child, port })
    }

    /// The environment a qexp process reaches this server with.
    fn env(&self) -> Vec<(&'static str, String)> {
        vec![
            ("AWS_ACCESS_KEY_ID", "qexp".into()),
            ("AWS_SECRET_ACCESS_KEY", "qexp-secret-never-printed".into()),
            ("AWS_REGION", "us-east-1".into()),
            (
                "AWS_ENDPOINT_URL",
                format!("http://127.0.0.1:{}", self.port),
            ),
        ]
    }
}

impl Drop for S3Server {
    fn drop(&mut self) {
        // Closing its standard input stops it; kill it if it lingers.
        drop(self.child.stdin.take());
        let started = Instant::now();
        while self.child.try_wait().ok().flatten().is_none() {
            if started.elapsed() > Duration::from_secs(10) {
                let _ = self.child.kill();
                let _ = self.child.wait();
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        if !std::thread::panicking() {
            assert!(
                std::net::TcpListener::bind(("127.0.0.1", self.port)).is_ok(),
                "moto's port {} is still taken",
                self.port
            );
        }
    }
}

/// A simulator and a results folder for a plan.
struct Setup {
    tmp: tempfile::TempDir,
    plan: PathBuf,
    target: String,
    _sim: qexp_sim::SimServer,
}

async fn setup(profile: &str, plan: PlanFixture) -> Setup {
    let sim = qexp_testkit::sim(profile).await;
    let tmp = tempfile::tempdir().unwrap();
    let plan = plan.write(tmp.path());
    Setup {
        target: sim.base_url(),
        tmp,
        plan,
        _sim: sim,
    }
}

impl Setup {
    fn results(&self) -> PathBuf {
        self.tmp.path().join("results")
    }

    /// `qexp run --shard K/2 --upload URL`, alone (no rendezvous).
    fn shard_command(&self, k: u32, url: &str) -> Command {
        let (plan, results) = (self.plan.to_str().unwrap(), self.results());
        qexp(&[
            "run",
            plan,
            "--target",
            &self.target,
            "--out",
            results.to_str().unwrap(),
            "--no-report",
            "--shard",
            &format!("{k}/2"),
            "--run-id",
            RUN_ID,
            "--upload",
            url,
        ])
    }

    /// [`Setup::shard_command`] run to success, with `env` added.
    fn run_shard(&self, k: u32, url: &str, env: &[(&str, String)]) {
        let mut cmd = self.shard_command(k, url);
        cmd.envs(env.iter().map(|(k, v)| (k, v)));
        let o = cmd.output().unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(o.status.success(), "shard {k}: {err}");
        assert!(err.contains("qexp: uploaded "), "shard {k}: {err}");
        assert!(!err.contains("qexp-secret-never-printed"), "{err}");
    }

    fn shard_dirs(&self) -> Vec<PathBuf> {
        (0..2)
            .map(|k| {
                self.results()
                    .join(format!("objstore/{RUN_ID}-shard{k}-of-2"))
            })
            .collect()
    }
}

/// A run's request and point rows, in a fixed order.
fn rows(run: &Path) -> (DataFrame, DataFrame) {
    let requests = qexp_store::scan_requests(run)
        .unwrap()
        .sort(
            ["shard", "trial", "point_id", "request_index"],
            Default::default(),
        )
        .collect()
        .unwrap();
    let points = qexp_store::scan_points(run)
        .unwrap()
        .sort(["trial", "point_id"], Default::default())
        .collect()
        .unwrap();
    (requests, points)
}

/// Two shards uploaded to `url`; merged from the URLs and from the local
/// folders: the same rows.
fn round_trip(s: &Setup, url: &str, env: &[(&str, String)]) {
    for k in 0..2 {
        s.run_shard(k, url, env);
    }
    let local = s.tmp.path().join("merged-local");
    let mut args = vec!["merge"];
    let dirs = s.shard_dirs();
    args.extend(dirs.iter().map(|d| d.to_str().unwrap()));
    args.extend(["--out", local.to_str().unwrap()]);
    let o = qexp(&args).output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));

    let cache = s.tmp.path().join("cache");
    let from_store = s.tmp.path().join("merged-store");
    let urls: Vec<String> = (0..2)
        .map(|k| format!("{url}/objstore/{RUN_ID}-shard{k}-of-2"))
        .collect();
    let mut args = vec!["merge"];
    args.extend(urls.iter().map(String::as_str));
    args.extend([
        "--out",
        from_store.to_str().unwrap(),
        "--cache",
        cache.to_str().unwrap(),
    ]);
    let mut cmd = qexp(&args);
    cmd.envs(env.iter().map(|(k, v)| (k, v)));
    let o = cmd.output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    assert!(err.contains("qexp: downloaded "), "{err}");
    // The lock and half-written files stayed home.
    assert!(!cache.join(format!("{RUN_ID}-shard0-of-2/.lock")).exists());
    let (a, b) = (rows(&local), rows(&from_store));
    assert!(a.0.height() > 0 && a.1.height() == 4, "{:?}", a.1.shape());
    assert!(a.0.equals_missing(&b.0), "request rows differ");
    assert!(a.1.equals_missing(&b.1), "point rows differ");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shards_uploaded_to_a_file_url_merge_as_the_local_folders_do() {
    let _g = crate::common::shared().await;
    let s = setup("fast", plan()).await;
    let store = s.tmp.path().join("store");
    let url = format!("file://{}", store.display());
    round_trip(&s, &url, &[]);
    let shard0 = store.join(format!("objstore/{RUN_ID}-shard0-of-2"));
    assert!(shard0.join("manifest.json").exists());
    assert!(shard0.join("requests.parquet").exists());
    assert!(!shard0.join(".lock").exists());
    // The parts were merged at the end: their objects are gone (a file
    // store may keep the empty folder).
    let parts = std::fs::read_dir(shard0.join("parts")).map_or(0, Iterator::count);
    assert_eq!(parts, 0);
    // A folder another process is writing is not uploaded beside it.
    let local0 = &s.shard_dirs()[0];
    let lock = qexp_store::RunLock::acquire(local0).unwrap();
    let o = qexp(&["upload", local0.to_str().unwrap(), &url])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("another qexp process is writing"), "{err}");
    drop(lock);
    let o = qexp(&["upload", local0.to_str().unwrap(), &url])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shards_uploaded_to_s3_merge_as_the_local_folders_do() {
    let Some(server) = S3Server::start() else {
        return;
    };
    let _g = crate::common::shared().await;
    let s = setup("fast", plan()).await;
    round_trip(&s, "s3://bench/qexp", &server.env());
    drop(server);
}

/// `kill -9` mid-run, once a finished (trial, point) has reached the
/// store: the store holds the manifest and that pair whole; downloaded and
/// resumed with `--upload`, the run completes, in the folder and in the store.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_run_left_what_it_measured_in_the_store() {
    let _g = crate::common::shared().await;
    let s = setup("exact", slow()).await;
    let store = s.tmp.path().join("store");
    let url = format!("file://{}", store.display());
    let (plan, results) = (s.plan.to_str().unwrap(), s.results());
    let mut child = qexp(&[
        "run",
        plan,
        "--target",
        &s.target,
        "--out",
        results.to_str().unwrap(),
        "--no-report",
        "--upload",
        &url,
        "--upload-every",
        "0.2",
    ])
    .spawn()
    .unwrap();
    let exp = store.join("objstore-slow");
    let started = Instant::now();
    // A point row in the store: the pair it marks complete is finished.
    let uploaded_part = || {
        std::fs::read_dir(&exp).ok().and_then(|mut runs| {
            let run = runs.next()?.ok()?.path();
            let points = std::fs::read_dir(run.join("parts"))
                .ok()?
                .filter_map(Result::ok)
                .filter(|e| {
                    let n = e.file_name();
                    let n = n.to_string_lossy();
                    n.starts_with("points-") && n.ends_with(".parquet")
                })
                .count();
            (points > 0).then_some(run)
        })
    };
    let remote_run = loop {
        if let Some(run) = uploaded_part() {
            break run;
        }
        if started.elapsed() > Duration::from_secs(60) || child.try_wait().unwrap().is_some() {
            let _ = child.kill();
            panic!("no part reached the store before the run ended");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    child.kill().unwrap();
    child.wait().unwrap();
    let name = remote_run.file_name().unwrap().to_str().unwrap();
    let download = |into: &Path| {
        let o = qexp(&[
            "download",
            &format!("{url}/objstore-slow/{name}"),
            into.to_str().unwrap(),
        ])
        .output()
        .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    };
    let local = s.tmp.path().join("from-store").join(name);
    download(&local);
    let m = qexp_store::read_manifest(&local).unwrap();
    assert_eq!(m.status, qexp_store::RunStatus::Running);
    // The finished pair came whole: its point row and its 12 requests.
    let (requests, points) = rows(&local);
    assert!(points.height() >= 1, "no finished pair in the store");
    let ids = |df: &DataFrame| -> Vec<i64> {
        let c = df.column("point_id").unwrap();
        let c = c.cast(&DataType::Int64).unwrap();
        c.i64().unwrap().iter().flatten().collect()
    };
    let sent = ids(&requests);
    for id in ids(&points) {
        let n = sent.iter().filter(|v| **v == id).count();
        assert_eq!(n, 12, "point {id} is marked complete with {n} requests");
    }
    let o = qexp(&[
        "run",
        "--resume",
        local.to_str().unwrap(),
        "--no-report",
        "--target",
        &s.target,
        "--upload",
        &url,
    ])
    .output()
    .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let (requests, points) = rows(&local);
    assert_eq!(points.height(), 2);
    assert_eq!(requests.height(), 24);
    // The store followed the resumed run to its end.
    let again = s.tmp.path().join("again").join(name);
    download(&again);
    let (requests, points) = rows(&again);
    assert_eq!((points.height(), requests.height()), (2, 24));
}

/// Each mistake is one line, exit 2, said before anything is measured,
/// and no secret is repeated.
#[test]
fn bad_urls_missing_credentials_and_an_unreachable_store_are_one_sentence() {
    let tmp = tempfile::tempdir().unwrap();
    let plan = plan().write(tmp.path());
    // A port nothing listens on.
    let closed = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let creds = [
        ("AWS_ACCESS_KEY_ID", "qexp".to_string()),
        ("AWS_SECRET_ACCESS_KEY", "qexp-secret-never-printed".into()),
    ];
    let endpoint = ("AWS_ENDPOINT_URL", format!("http://127.0.0.1:{closed}"));
    for (url, env, says) in [
        ("bucket/prefix", vec![], "not a URL"),
        ("gs://bucket/p", vec![], "not gs://"),
        ("s3://key:pw@bucket/p", vec![], "never go in the URL"),
        // A secret with `/` in it, and one that parses as a port.
        ("s3://key:pw/wJalr@bucket/p", vec![], "never go in the URL"),
        (
            "s3://key:12345/wJalr@bucket/p",
            vec![],
            "never go in the URL",
        ),
        ("s3://bench/p", vec![endpoint.clone()], "no credentials"),
        (
            "s3://bench/p",
            [creds.to_vec(), vec![endpoint.clone()]].concat(),
            "cannot list the object store",
        ),
    ] {
        let mut cmd = qexp(&[
            "run",
            plan.to_str().unwrap(),
            "--target",
            "sim:fast",
            "--out",
            tmp.path().join("results").to_str().unwrap(),
            "--no-report",
            "--upload",
            url,
        ]);
        for k in [
            "AWS_ACCESS_KEY_ID",
            "AWS_WEB_IDENTITY_TOKEN_FILE",
            "AWS_PROFILE",
        ] {
            cmd.env_remove(k);
        }
        cmd.envs(env.iter().map(|(k, v)| (k, v)));
        let started = Instant::now();
        let o = cmd.output().unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{url}: {err}");
        assert!(
            err.starts_with("error: ") && err.contains(says) && err.lines().count() == 1,
            "{url}: {err}"
        );
        assert!(
            !err.contains("qexp-secret-never-printed")
                && !err.contains(":pw")
                && !err.contains("wJalr"),
            "{err}"
        );
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "{url}: slow to fail"
        );
        assert!(
            !tmp.path().join("results").exists(),
            "{url}: the run started"
        );
    }
}

/// A shard applied again with the same run id finds its folder in the
/// store: it refuses before measuring (its uploads would replace that
/// folder), and the store keeps what it held.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_new_shard_refuses_a_destination_that_holds_a_run() {
    let s = setup("fast", plan()).await;
    let store = s.tmp.path().join("store");
    let earlier = store.join(format!("objstore/{RUN_ID}-shard0-of-2"));
    std::fs::create_dir_all(&earlier).unwrap();
    std::fs::write(earlier.join("manifest.json"), "earlier").unwrap();
    let url = format!("file://{}", store.display());
    let o = s.shard_command(0, &url).output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("already holds a run folder"), "{err}");
    assert!(!s.results().exists(), "the run started: {err}");
    let kept = std::fs::read_to_string(earlier.join("manifest.json")).unwrap();
    assert_eq!(kept, "earlier");
    // The write check left nothing behind.
    let left: Vec<_> = std::fs::read_dir(&store)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(left, [std::ffi::OsString::from("objstore")], "{left:?}");
}

/// `qexp kube --results-url`: no claim, an emptyDir, `--upload` in each
/// shard's arguments, the Secret by reference only; the objects pass the
/// Kubernetes schema (when the validator is installed, as in kube.rs).
#[test]
fn kube_objects_for_an_object_store_pass_the_schema() {
    let tmp = tempfile::tempdir().unwrap();
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let plan = root.join("experiments/throughput.toml");
    let out = tmp.path().join("qexp.yaml");
    let base = [
        "kube",
        plan.to_str().unwrap(),
        "--shards",
        "4",
        "--image",
        "ghcr.io/example/qexp:0.1.0",
        "--target",
        "http://vllm.inference.svc:8000",
    ];
    let mut args = base.to_vec();
    args.extend([
        "--results-url",
        "s3://bench/qexp",
        "--object-store-secret",
        "qexp-s3",
        "--out",
        out.to_str().unwrap(),
    ]);
    let o = qexp(&args)
        .env("AWS_SECRET_ACCESS_KEY", "qexp-secret-never-printed")
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let yaml = std::fs::read_to_string(&out).unwrap();
    assert!(!yaml.contains("PersistentVolumeClaim"), "{yaml}");
    assert!(!yaml.contains("qexp-secret-never-printed"), "{yaml}");
    assert!(yaml.contains("emptyDir"), "{yaml}");
    assert!(
        yaml.contains("- \"--upload\"\n") && yaml.contains("- \"s3://bench/qexp\"\n"),
        "{yaml}"
    );
    assert!(
        yaml.contains("secretRef:\n") && yaml.contains("name: \"qexp-s3\""),
        "{yaml}"
    );
    // A folder inside each pod is no place for results.
    let mut args = base.to_vec();
    args.extend(["--results-url", "file:///results"]);
    let o = qexp(&args).output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("lost with it") && err.lines().count() == 1,
        "{err}"
    );
    if let Some(python) = crate::kube::validator() {
        let (ok, text) = crate::kube::validate(&python, &out);
        assert!(ok, "the objects fail the schema:\n{text}\n{yaml}");
    }
}
