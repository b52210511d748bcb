//! What every source is given (the configuration, the buffer its readings
//! go to) and starting the DCGM and nvidia-smi sources: a first read that
//! proves the source answers for every GPU the plan names (and records what
//! it is), then the task that keeps reading. NVML's start is nvml.rs's; the
//! sampler picks the configured one.

use crate::sample::{unix_now, Sample};
use crate::PowerError;
pub use qexp_types::{PowerGpu, PowerSourceInfo as SourceInfo};
use std::io::{BufRead, BufReader, Read};
use std::process::Stdio;
use std::process::{Child, Command};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::task::JoinHandle;

/// Where samples come from and which GPUs, every how often.
#[derive(Debug, Clone, PartialEq)]
pub struct SamplerConfig {
    /// The source.
    pub source: SourceKind,
    /// The deployment's GPUs: indices (`0`) or UUIDs (`GPU-…`).
    pub gpus: Vec<String>,
    /// Time between reads.
    pub interval: Duration,
}

/// The samples kept so far, shared with the sampling task.
pub(crate) type Buffer = Arc<Mutex<Vec<Sample>>>;

/// Adds readings taken now to the buffer.
pub(crate) fn push(buf: &Buffer, readings: Vec<crate::Reading>) {
    let t = unix_now();
    let mut b = buf
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    b.extend(readings.into_iter().map(|reading| Sample { t, reading }));
}

/// A power source.
#[derive(Debug, Clone, PartialEq)]
pub enum SourceKind {
    /// A DCGM exporter's Prometheus endpoint.
    Dcgm {
        /// Its URL (`http://host:9400/metrics`).
        url: String,
    },
    /// `nvidia-smi` as a child process.
    NvidiaSmi {
        /// The command: `nvidia-smi`, or a path.
        command: String,
    },
    /// NVML, the driver's library, loaded at run time.
    Nvml,
}

/// What starting a source gives the sampler.
pub(crate) struct Started {
    pub task: JoinHandle<()>,
    pub child: Option<Child>,
    pub info: SourceInfo,
}

/// How long one read may take.
const READ_TIMEOUT: Duration = Duration::from_secs(5);

/// A missing GPU, said once for every source.
pub(crate) fn missing(source: &str, cfg: &SamplerConfig, has: &[String]) -> Result<(), PowerError> {
    Err(PowerError::NoSuchGpu {
        what: source.to_string(),
        wanted: cfg.gpus.join(", "),
        has: if has.is_empty() {
            "none".into()
        } else {
            has.join(", ")
        },
    })
}

pub(crate) async fn start_dcgm(
    cfg: &SamplerConfig,
    url: &str,
    buf: Buffer,
) -> Result<Started, PowerError> {
    let client = reqwest::Client::builder()
        .timeout(READ_TIMEOUT)
        .build()
        .map_err(|e| PowerError::Unreachable {
            what: format!("the DCGM exporter at {url}"),
            why: e.to_string(),
        })?;
    let get = |client: reqwest::Client, url: String| async move {
        client
            .get(&url)
            .send()
            .await?
            .error_for_status()?
            .text()
            .await
    };
    let text = get(client.clone(), url.to_string())
        .await
        .map_err(|e| PowerError::Unreachable {
            what: format!("the DCGM exporter at {url}"),
            why: e.without_url().to_string(),
        })?;
    let first = crate::dcgm::readings(&text, &cfg.gpus);
    if first.len() < cfg.gpus.len() {
        missing(
            &format!("the DCGM exporter at {url}"),
            cfg,
            &crate::dcgm::gpus_listed(&text),
        )?;
    }
    let info = SourceInfo {
        kind: "dcgm".into(),
        location: url.to_string(),
        version: crate::dcgm::driver_version(&text),
        interval_ms: cfg.interval.as_millis() as u64,
        gpus: cfg.gpus.iter().map(|g| gpu_named(g, &text)).collect(),
        deployment: None,
    };
    push(&buf, first);
    let (gpus, url, interval) = (cfg.gpus.clone(), url.to_string(), cfg.interval);
    let task = tokio::spawn(async move {
        let mut tick = tokio::time::interval(interval);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        tick.tick().await;
        loop {
            tick.tick().await;
            match get(client.clone(), url.clone()).await {
                Ok(text) => push(&buf, crate::dcgm::readings(&text, &gpus)),
                Err(e) => tracing::debug!("DCGM exporter read failed: {}", e.without_url()),
            }
        }
    });
    Ok(Started {
        task,
        child: None,
        info,
    })
}

/// A GPU as a DCGM exposition labels it.
fn gpu_named(name: &str, text: &str) -> PowerGpu {
    let e = qexp_client::metrics::Exposition::parse(text);
    let label = |s: &qexp_client::metrics::Sample, k: &str| {
        s.labels
            .iter()
            .find(|(n, _)| n == k)
            .map(|(_, v)| v.clone())
    };
    let s = e.samples.iter().find(|s| {
        label(s, "gpu").as_deref() == Some(name) || label(s, "UUID").as_deref() == Some(name)
    });
    PowerGpu {
        name: name.to_string(),
        uuid: s.and_then(|s| label(s, "UUID")),
        model: s.and_then(|s| label(s, "modelName")),
    }
}

pub(crate) async fn start_smi(
    cfg: &SamplerConfig,
    command: &str,
    buf: Buffer,
) -> Result<Started, PowerError> {
    let source = format!("nvidia-smi (`{command}`)");
    let fail = |why: String| PowerError::Unreachable {
        what: source.clone(),
        why,
    };
    let text = identify(command, &cfg.gpus).await.map_err(&fail)?;
    let rows: Vec<Vec<String>> = text
        .lines()
        .map(|l| l.split(',').map(|f| f.trim().to_string()).collect())
        .filter(|f: &Vec<String>| f.len() >= 4)
        .collect();
    let find = |g: &String| rows.iter().find(|r| &r[0] == g || &r[1] == g);
    if cfg.gpus.iter().any(|g| find(g).is_none()) {
        let has: Vec<String> = rows
            .iter()
            .map(|r| format!("{} ({})", r[0], r[1]))
            .collect();
        missing(&source, cfg, &has)?;
    }
    let info = SourceInfo {
        kind: "nvidia-smi".into(),
        location: command.to_string(),
        version: rows.first().map(|r| format!("driver {}", r[3])),
        interval_ms: cfg.interval.as_millis() as u64,
        gpus: cfg
            .gpus
            .iter()
            .map(|g| PowerGpu {
                name: g.clone(),
                uuid: find(g).map(|r| r[1].clone()),
                model: find(g).map(|r| r[2].clone()),
            })
            .collect(),
        deployment: None,
    };
    let mut child = Command::new(command)
        .args(crate::smi::sampling_args(
            &cfg.gpus,
            cfg.interval.as_millis() as u64,
        ))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| fail(e.to_string()))?;
    let stdout = child
        .stdout
        .take()
        .ok_or_else(|| fail("its output could not be read".into()))?;
    let gpus = cfg.gpus.clone();
    // A thread of its own reads the child's lines (blocking reads); it ends
    // when the child does.
    let reader = std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if let Some(r) = crate::smi::parse_line(&line, &gpus) {
                push(&buf, vec![r]);
            }
        }
    });
    let task = tokio::spawn(async move {
        // Nothing to do here: the thread reads. The handle lets `stop` wait for it.
        let _ = tokio::task::spawn_blocking(move || reader.join()).await;
    });
    Ok(Started {
        task,
        child: Some(child),
        info,
    })
}

/// `nvidia-smi --query-gpu=index,uuid,name,driver_version`: its output, or
/// why there is none (it could not start, failed, or took over 10 s).
async fn identify(command: &str, gpus: &[String]) -> Result<String, String> {
    let mut child = Command::new(command)
        .args(crate::smi::identify_args(gpus))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| e.to_string())?;
    let deadline = tokio::time::Instant::now() + READ_TIMEOUT * 2;
    let status = loop {
        if let Some(status) = child.try_wait().map_err(|e| e.to_string())? {
            break status;
        }
        if tokio::time::Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            return Err("it did not answer within 10 s".into());
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    };
    let mut out = String::new();
    let mut err = String::new();
    if let Some(mut o) = child.stdout.take() {
        let _ = o.read_to_string(&mut out);
    }
    if let Some(mut e) = child.stderr.take() {
        let _ = e.read_to_string(&mut err);
    }
    if !status.success() {
        let line = err
            .lines()
            .chain(out.lines())
            .next()
            .unwrap_or("")
            .trim()
            .to_string();
        return Err(format!("it exited with {status}: {line}"));
    }
    Ok(out)
}
