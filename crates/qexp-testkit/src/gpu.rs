//! Fake GPU telemetry for tests: a DCGM exporter (a Prometheus endpoint on
//! 127.0.0.1:0 whose every scrape a script decides) and an `nvidia-smi`
//! (a shell script written into a folder, printing a constant power).

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

/// One GPU at one scrape; a `None` field is left out of the exposition.
#[derive(Debug, Clone, Default)]
pub struct FakeGpu {
    /// The `gpu` label.
    pub index: u32,
    /// `DCGM_FI_DEV_POWER_USAGE`, W.
    pub power_w: Option<f64>,
    /// `DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION`, mJ.
    pub energy_mj: Option<f64>,
    /// `DCGM_FI_DEV_POWER_VIOLATION`, µs.
    pub power_violation_us: Option<f64>,
    /// `DCGM_FI_DEV_SM_CLOCK`, MHz.
    pub sm_clock_mhz: Option<f64>,
    /// `DCGM_FI_DEV_XID_ERRORS`.
    pub xid: Option<f64>,
}

/// What a scrape sees: Unix seconds now, and the scrape's number (from 0).
/// `None` answers 503.
pub type Script = dyn Fn(f64, u64) -> Option<Vec<FakeGpu>> + Send + Sync;

/// A fake DCGM exporter; it stops when dropped.
pub struct FakeDcgm {
    /// `http://127.0.0.1:PORT/metrics`.
    pub url: String,
    scrapes: Arc<AtomicU64>,
    task: tokio::task::JoinHandle<()>,
}

impl FakeDcgm {
    /// Listens on 127.0.0.1:0; each scrape is answered from `script`.
    pub async fn start(
        script: impl Fn(f64, u64) -> Option<Vec<FakeGpu>> + Send + Sync + 'static,
    ) -> FakeDcgm {
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .unwrap_or_else(|e| panic!("cannot bind the fake exporter: {e}"));
        let addr = listener
            .local_addr()
            .unwrap_or_else(|e| panic!("no address: {e}"));
        let script: Arc<Script> = Arc::new(script);
        let scrapes = Arc::new(AtomicU64::default());
        let count = scrapes.clone();
        let task = tokio::spawn(async move {
            while let Ok((mut conn, _)) = listener.accept().await {
                let (script, count) = (script.clone(), count.clone());
                tokio::spawn(async move {
                    let mut buf = vec![0u8; 4096];
                    let mut got = Vec::new();
                    while !got.windows(4).any(|w| w == b"\r\n\r\n") {
                        match conn.read(&mut buf).await {
                            Ok(0) | Err(_) => return,
                            Ok(n) => got.extend_from_slice(&buf[..n]),
                        }
                    }
                    let n = count.fetch_add(1, Ordering::SeqCst);
                    let reply = match script(unix_now(), n) {
                        Some(gpus) => {
                            let body = exposition(&gpus);
                            format!(
                                "HTTP/1.1 200 OK\r\ncontent-type: text/plain; version=0.0.4\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                                body.len()
                            )
                        }
                        None => "HTTP/1.1 503 Service Unavailable\r\ncontent-length: 0\r\nconnection: close\r\n\r\n".into(),
                    };
                    let _ = conn.write_all(reply.as_bytes()).await;
                    let _ = conn.shutdown().await;
                });
            }
        });
        FakeDcgm {
            url: format!("http://{addr}/metrics"),
            scrapes,
            task,
        }
    }

    /// Scrapes answered or refused so far.
    pub fn scrapes(&self) -> u64 {
        self.scrapes.load(Ordering::SeqCst)
    }
}

impl Drop for FakeDcgm {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// A DCGM field: its name, its Prometheus type, and the fake's value.
type Field = (&'static str, &'static str, fn(&FakeGpu) -> Option<f64>);

/// The exposition of `gpus`, as dcgm-exporter lays it out.
fn exposition(gpus: &[FakeGpu]) -> String {
    let mut out = String::new();
    let fields: [Field; 5] = [
        ("DCGM_FI_DEV_POWER_USAGE", "gauge", |g| g.power_w),
        ("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "counter", |g| {
            g.energy_mj
        }),
        ("DCGM_FI_DEV_POWER_VIOLATION", "counter", |g| {
            g.power_violation_us
        }),
        ("DCGM_FI_DEV_SM_CLOCK", "gauge", |g| g.sm_clock_mhz),
        ("DCGM_FI_DEV_XID_ERRORS", "gauge", |g| g.xid),
    ];
    for (name, kind, f) in fields {
        out.push_str(&format!("# TYPE {name} {kind}\n"));
        for g in gpus {
            if let Some(v) = f(g) {
                out.push_str(&format!(
                    "{name}{{gpu=\"{i}\",UUID=\"GPU-fake-{i}\",modelName=\"Fake A6000\",Hostname=\"h\",DCGM_FI_DRIVER_VERSION=\"570.86\"}} {v}\n",
                    i = g.index
                ));
            }
        }
    }
    out
}

/// Now, Unix seconds.
pub fn unix_now() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}

/// Writes `dir/nvidia-smi`: asked to identify GPUs it lists 0 and 1 (an
/// RTX A6000 each, driver 570.86); asked to sample it prints a line for
/// each GPU its `--id=` names, at `watts`, every `--loop-ms` ms, until killed.
pub fn fake_nvidia_smi(dir: &Path, watts: f64) -> PathBuf {
    let path = dir.join("nvidia-smi");
    let script = format!(
        r#"#!/bin/sh
ids=0,1; ms=500; sample=0
for a in "$@"; do
  case "$a" in
    --id=*) ids="${{a#--id=}}" ;;
    --loop-ms=*) ms="${{a#--loop-ms=}}"; sample=1 ;;
  esac
done
if [ "$sample" = 0 ]; then
  for i in $(echo "$ids" | tr ',' ' '); do echo "$i, GPU-fake-$i, NVIDIA RTX A6000, 570.86"; done
  exit 0
fi
pause=$(awk "BEGIN {{ print $ms / 1000 }}")
while :; do
  for i in $(echo "$ids" | tr ',' ' '); do echo "$i, GPU-fake-$i, {watts:.2}, 1800, 8001, 61, 40000, 0x0000000000000000"; done
  sleep "$pause"
done
"#
    );
    std::fs::write(&path, script)
        .unwrap_or_else(|e| panic!("cannot write {}: {e}", path.display()));
    let mut perm = std::fs::metadata(&path)
        .unwrap_or_else(|e| panic!("{e}"))
        .permissions();
    std::os::unix::fs::PermissionsExt::set_mode(&mut perm, 0o755);
    std::fs::set_permissions(&path, perm).unwrap_or_else(|e| panic!("{e}"));
    path
}
