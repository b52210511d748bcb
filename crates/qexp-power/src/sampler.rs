//! The sampler: its own tokio task (and, for nvidia-smi, its own child
//! process) that reads the deployment's GPUs every interval and keeps the
//! samples, never on the request path. The runner asks it for the samples
//! around a window once the window has ended; a read that fails is logged
//! and left as a gap, which the window's arithmetic judges.

use crate::sample::Sample;
use crate::source::{Buffer, SamplerConfig, SourceInfo, SourceKind, Started};
use crate::PowerError;
use std::sync::Arc;
use std::time::Duration;
use tokio::task::JoinHandle;

/// A running sampler.
pub struct Sampler {
    buf: Buffer,
    task: JoinHandle<()>,
    child: Option<std::process::Child>,
    info: SourceInfo,
    interval: Duration,
}

impl Sampler {
    /// Starts sampling: the first read must answer with every GPU named,
    /// or this says in one sentence why it could not.
    pub async fn start(cfg: &SamplerConfig) -> Result<Sampler, PowerError> {
        let buf: Buffer = Arc::default();
        let Started { task, child, info } = start_source(cfg, buf.clone()).await?;
        let sampler = Sampler {
            buf,
            task,
            child,
            info,
            interval: cfg.interval,
        };
        // A source that streams (nvidia-smi) has its first lines still to
        // come: the first window must find a sample before its start.
        if !sampler.wait_past(f64::NEG_INFINITY).await {
            let what = format!("{} ({})", sampler.info.kind, sampler.info.location);
            sampler.stop().await;
            return Err(PowerError::Unreachable {
                what,
                why: "it gave no sample of every GPU named".into(),
            });
        }
        Ok(sampler)
    }

    /// What the source is, for the manifest.
    pub fn info(&self) -> &SourceInfo {
        &self.info
    }

    /// Waits (at most two intervals and a second) until every GPU has a
    /// sample at or after `t`, so that a window ending at `t` has its far
    /// edge; false when one still has none.
    pub async fn wait_past(&self, t: f64) -> bool {
        let deadline = tokio::time::Instant::now() + self.interval * 2 + Duration::from_secs(1);
        let step = (self.interval / 4).max(Duration::from_millis(5));
        while tokio::time::Instant::now() < deadline {
            let done = {
                let b = self.lock();
                self.info
                    .gpus
                    .iter()
                    .all(|g| b.iter().any(|s| s.t >= t && s.reading.gpu == g.name))
            };
            if done {
                return true;
            }
            tokio::time::sleep(step).await;
        }
        false
    }

    /// A copy of the samples from `from` on (and the last one before it, for
    /// the window's near edge).
    pub fn since(&self, from: f64) -> Vec<Sample> {
        let b = self.lock();
        let first = b.iter().rposition(|s| s.t <= from).unwrap_or(0);
        // One earlier sample per GPU may sit further back: keep a margin of samples.
        let first = first.saturating_sub(self.info.gpus.len());
        b[first..].to_vec()
    }

    /// Drops samples older than `t` but the last few before it.
    pub fn forget_before(&self, t: f64) {
        let mut b = self.lock();
        if let Some(i) = b.iter().rposition(|s| s.t < t) {
            let keep_from = i.saturating_sub(self.info.gpus.len() * 2);
            b.drain(..keep_from);
        }
    }

    /// Stops the task and the child process, and waits for the child to end.
    pub async fn stop(mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = tokio::task::spawn_blocking(move || c.wait()).await;
        }
        self.task.abort();
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Sample>> {
        // A poisoned lock only means a reader panicked; the samples are whole.
        self.buf
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

impl Drop for Sampler {
    fn drop(&mut self) {
        self.task.abort();
        // A sampler dropped without `stop` (an error path) still ends its child.
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// Starts the configured source.
async fn start_source(cfg: &SamplerConfig, buf: Buffer) -> Result<Started, PowerError> {
    match &cfg.source {
        SourceKind::Dcgm { url } => crate::source::start_dcgm(cfg, url, buf).await,
        SourceKind::NvidiaSmi { command } => crate::source::start_smi(cfg, command, buf).await,
        SourceKind::Nvml => crate::nvml::start(cfg, buf).await,
    }
}
