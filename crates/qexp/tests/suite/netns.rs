//! Separate hosts, as far as one machine goes: the simulator and 4 shards
//! each in a network namespace of its own (made here with `ip netns`,
//! joined by veth pairs to a bridge in a fifth), each with its own address
//! and no peer on its loopback. The shards meet at shard 0's address and
//! merge into the plan's run, so nothing assumes one loopback host.
//! Everything is removed when the test ends, pass or fail. Without the
//! right to make namespaces (root or CAP_NET_ADMIN, and `ip` from iproute2)
//! the test says so and skips, unless QEXP_REQUIRE_NETNS=1.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const PLAN: &str = r#"
[experiment]
name = "netns"
version = 1

[target]
base_url = "http://127.0.0.1:1"
api = "chat"
extra_body = { ignore_eos = true }

[workload]
input_tokens = 100
output_tokens = 5

[sweep]
concurrency = [4]

[run]
requests = 24
warmup_requests = 4
trials = 2
seed = 21
"#;

/// The namespaces and processes of one test; all of them go on drop.
struct Lab {
    prefix: String,
    names: Vec<String>,
    children: Vec<Child>,
}

impl Drop for Lab {
    fn drop(&mut self) {
        for c in &mut self.children {
            let _ = c.kill();
            let _ = c.wait();
        }
        // Deleting a namespace deletes the veth ends inside it.
        for n in self.names.iter().rev() {
            let _ = Command::new("ip").args(["netns", "del", n]).status();
        }
    }
}

fn ip(args: &[&str]) -> Result<(), String> {
    let o = Command::new("ip")
        .args(args)
        .output()
        .map_err(|e| format!("cannot run `ip`: {e}"))?;
    if o.status.success() {
        Ok(())
    } else {
        Err(format!(
            "`ip {}` failed: {}",
            args.join(" "),
            String::from_utf8_lossy(&o.stderr).trim()
        ))
    }
}

impl Lab {
    /// A bridge namespace and `nodes` namespaces on it, node i at 10.231.0.(i+1)/24.
    fn new(nodes: usize) -> Result<Lab, String> {
        let prefix = format!("qx{}", std::process::id());
        let mut lab = Lab {
            prefix: prefix.clone(),
            names: Vec::new(),
            children: Vec::new(),
        };
        let lan = format!("{prefix}-lan");
        ip(&["netns", "add", &lan])?;
        lab.names.push(lan.clone());
        ip(&["-n", &lan, "link", "add", "br0", "type", "bridge"])?;
        ip(&["-n", &lan, "link", "set", "br0", "up"])?;
        for i in 0..nodes {
            let ns = lab.node(i);
            ip(&["netns", "add", &ns])?;
            lab.names.push(ns.clone());
            let port = format!("p{i}");
            ip(&[
                "-n", &ns, "link", "add", "eth0", "type", "veth", "peer", "name", &port, "netns",
                &lan,
            ])?;
            ip(&["-n", &lan, "link", "set", &port, "master", "br0", "up"])?;
            ip(&[
                "-n",
                &ns,
                "addr",
                "add",
                &format!("{}/24", addr(i)),
                "dev",
                "eth0",
            ])?;
            ip(&["-n", &ns, "link", "set", "eth0", "up"])?;
            ip(&["-n", &ns, "link", "set", "lo", "up"])?;
        }
        Ok(lab)
    }

    fn node(&self, i: usize) -> String {
        format!("{}-n{i}", self.prefix)
    }

    /// `qexp ARGS…` inside node `i`'s namespace, stderr collected.
    fn spawn(&mut self, i: usize, args: &[String]) -> Arc<Mutex<String>> {
        let mut c = Command::new("ip")
            .args(["netns", "exec", &self.node(i), env!("CARGO_BIN_EXE_qexp")])
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let buf = Arc::new(Mutex::new(String::new()));
        for pipe in [
            c.stdout
                .take()
                .map(|p| Box::new(p) as Box<dyn std::io::Read + Send>),
            c.stderr
                .take()
                .map(|p| Box::new(p) as Box<dyn std::io::Read + Send>),
        ]
        .into_iter()
        .flatten()
        {
            let b = buf.clone();
            std::thread::spawn(move || {
                for line in BufReader::new(pipe).lines().map_while(Result::ok) {
                    let mut b = b.lock().unwrap();
                    b.push_str(&line);
                    b.push('\n');
                }
            });
        }
        self.children.push(c);
        buf
    }
}

fn addr(i: usize) -> String {
    format!("10.231.0.{}", i + 1)
}

async fn wait_for(what: &str, buf: &Arc<Mutex<String>>, needle: &str) {
    let started = Instant::now();
    while !buf.lock().unwrap().contains(needle) {
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "{what}: no `{needle}` in:\n{}",
            buf.lock().unwrap()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

fn skip_or_fail(why: String) {
    qexp_testkit::skip(
        qexp_testkit::Need::NetworkNamespaces,
        &format!("network namespaces cannot be made here ({why}); run as root with iproute2"),
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shards_in_separate_network_namespaces_merge_into_the_plans_run() {
    let _heavy = crate::common::heavy().await;
    // Node 0: the simulator; nodes 1..=4: shards 0..=3.
    let mut lab = match Lab::new(5) {
        Ok(lab) => lab,
        Err(why) => return skip_or_fail(why),
    };
    let tmp = tempfile::tempdir().unwrap();
    let plan = tmp.path().join("netns.toml");
    std::fs::write(&plan, PLAN).unwrap();
    let results = tmp.path().join("results");
    let sim = lab.spawn(
        0,
        &[
            "sim",
            "--profile",
            "exact",
            "--host",
            &addr(0),
            "--port",
            "8000",
        ]
        .map(String::from),
    );
    wait_for("the simulator", &sim, "serving on").await;
    let run_id = "20261203T150000Z-0e7500";
    let rendezvous = format!("{}:7077", addr(1));
    let mut logs = Vec::new();
    for k in 0..4usize {
        let args: Vec<String> = [
            "run",
            plan.to_str().unwrap(),
            "--target",
            &format!("http://{}:8000", addr(0)),
            "--out",
            results.to_str().unwrap(),
            "--no-report",
            "--shard",
            &format!("{k}/4"),
            "--run-id",
            run_id,
            "--rendezvous",
            &rendezvous,
            "--shard-join-timeout",
            "60",
        ]
        .map(String::from)
        .to_vec();
        logs.push(lab.spawn(k + 1, &args));
    }
    for (k, log) in logs.iter().enumerate() {
        let child = &mut lab.children[k + 1];
        let started = Instant::now();
        let status = loop {
            if let Some(st) = child.try_wait().unwrap() {
                break st;
            }
            assert!(
                started.elapsed() < Duration::from_secs(120),
                "shard {k} did not finish:\n{}",
                log.lock().unwrap()
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        };
        assert!(status.success(), "shard {k}:\n{}", log.lock().unwrap());
    }
    let dirs: Vec<String> = (0..4)
        .map(|k| {
            results
                .join("netns")
                .join(format!("{run_id}-shard{k}-of-4"))
                .display()
                .to_string()
        })
        .collect();
    for (k, d) in dirs.iter().enumerate() {
        let m = qexp_store::read_manifest(Path::new(d)).unwrap();
        let s = m.shard.unwrap();
        assert_eq!(
            s.rendezvous.as_deref(),
            Some(rendezvous.as_str()),
            "shard {k}"
        );
        assert!(s.lost.is_empty(), "shard {k} lost {:?}", s.lost);
        assert_eq!(m.target.base_url, format!("http://{}:8000", addr(0)));
    }
    let out = tmp.path().join("merged");
    let mut args = vec!["merge".to_string()];
    args.extend(dirs.iter().cloned());
    args.extend(["--out".into(), out.display().to_string()]);
    let argv: Vec<&str> = args.iter().map(String::as_str).collect();
    let o = crate::common::qexp(&argv).output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let df = qexp_store::scan_requests(&out).unwrap().collect().unwrap();
    let (t, i) = (
        qexp_testkit::u32s(&df, "trial"),
        qexp_testkit::u32s(&df, "request_index"),
    );
    let mut keys: Vec<(u32, u32)> = t.into_iter().zip(i).collect();
    keys.sort_unstable();
    let planned: Vec<(u32, u32)> = (1..=2).flat_map(|t| (0..28).map(move |i| (t, i))).collect();
    assert_eq!(keys, planned);
    assert_eq!(df.column("error_class").unwrap().null_count(), df.height());
}
