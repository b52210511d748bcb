//! A run folder followed while a process writes it: synced as soon as it
//! exists, then every so often, then once more when the writer is done.
//! What a crash (a `kill -9`, an out-of-memory kill of a pod) loses is
//! what the run wrote since the last sync; the last sync, after the run
//! ends however it ends, sends the rest.

use crate::error::ObjstoreError;
use crate::mirror::{Mirror, Synced};
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};
use std::time::Duration;
use tokio::sync::watch;
use tokio::task::JoinHandle;

/// How often to look for the folder until the writer has made it.
const LOOK_EVERY: Duration = Duration::from_millis(500);

/// The last sync of a [`Follow`]: the folder and what the sync did.
pub type LastSync = (PathBuf, Result<Synced, ObjstoreError>);

/// A background task syncing a folder to a store while it is written.
#[derive(Debug)]
pub struct Follow {
    stop: watch::Sender<bool>,
    task: JoinHandle<Option<LastSync>>,
}

impl Follow {
    /// Starts following the folder that `folder` will name once the writer
    /// has made it: `mirror` gives the [`Mirror`] for it (its destination
    /// may depend on the folder's name), then a sync runs at once and every
    /// `every`. A failed sync is logged and tried again at the next one.
    pub fn start<F>(folder: Arc<OnceLock<PathBuf>>, every: Duration, mirror: F) -> Follow
    where
        F: FnOnce(&Path) -> Result<Mirror, ObjstoreError> + Send + 'static,
    {
        let (stop, mut stopped) = watch::channel(false);
        let task = tokio::spawn(async move {
            let mut make = Some(mirror);
            let mut followed: Option<(PathBuf, Mirror)> = None;
            loop {
                if followed.is_none() {
                    if let (Some(dir), Some(make)) = (folder.get(), make.take()) {
                        match make(dir) {
                            Ok(m) => followed = Some((dir.clone(), m)),
                            Err(e) => return Some((dir.clone(), Err(e))),
                        }
                    }
                }
                // Told to stop, or the one who could tell is gone.
                let last = *stopped.borrow() || stopped.has_changed().is_err();
                if let Some((dir, m)) = &mut followed {
                    let result = m.sync(dir).await;
                    if last {
                        return Some((dir.clone(), result));
                    }
                    match result {
                        Ok(s) => tracing::debug!(
                            "qexp: {} files ({} bytes) uploaded to {}",
                            s.uploaded,
                            s.bytes,
                            m.dest().url()
                        ),
                        Err(e) => tracing::warn!(
                            "qexp: upload failed, trying again in {} s: {e}",
                            every.as_secs_f64()
                        ),
                    }
                } else if last {
                    return None;
                }
                let wait = if followed.is_some() {
                    every
                } else {
                    LOOK_EVERY
                };
                tokio::select! {
                    _ = tokio::time::sleep(wait) => {}
                    _ = stopped.changed() => {}
                }
            }
        });
        Follow { stop, task }
    }

    /// Tells the task the writer is done and waits for its last sync: the
    /// folder and that sync's outcome, or None when the folder never
    /// appeared (the run stopped before making it).
    pub async fn finish(self) -> Option<LastSync> {
        let _ = self.stop.send(true);
        self.task.await.unwrap_or(None)
    }
}
