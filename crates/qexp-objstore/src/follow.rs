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
use tokio::sync::{oneshot, watch};

/// How often to look for the folder until the writer has made it.
const LOOK_EVERY: Duration = Duration::from_millis(500);

/// The last sync of a [`Follow`]: the folder and what the sync did.
pub type LastSync = (PathBuf, Result<Synced, ObjstoreError>);

/// A thread of its own syncing a folder to a store while it is written:
/// reading files and signing requests never take a turn on the runtime
/// whose tasks time the requests being measured.
#[derive(Debug)]
pub struct Follow {
    stop: watch::Sender<bool>,
    done: oneshot::Receiver<Option<LastSync>>,
}

impl Follow {
    /// Starts following the folder that `folder` will name once the writer
    /// has made it: `mirror` gives the [`Mirror`] for it (its destination
    /// may depend on the folder's name), then a sync runs at once and every
    /// `every`. A failed sync is logged and tried again at the next one.
    pub fn start<F>(
        folder: Arc<OnceLock<PathBuf>>,
        every: Duration,
        mirror: F,
    ) -> Result<Follow, ObjstoreError>
    where
        F: FnOnce(&Path) -> Result<Mirror, ObjstoreError> + Send + 'static,
    {
        let (stop, stopped) = watch::channel(false);
        let (done_tx, done) = oneshot::channel();
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(ObjstoreError::io(
                "cannot start the upload thread",
                Path::new(""),
            ))?;
        std::thread::Builder::new()
            .name("qexp-upload".into())
            .spawn(move || {
                let last = rt.block_on(follow(folder, every, mirror, stopped));
                let _ = done_tx.send(last);
            })
            .map_err(ObjstoreError::io(
                "cannot start the upload thread",
                Path::new(""),
            ))?;
        Ok(Follow { stop, done })
    }

    /// Tells the thread the writer is done and waits for its last sync:
    /// the folder and that sync's outcome, or None when the folder never
    /// appeared (the run stopped before making it).
    pub async fn finish(self) -> Option<LastSync> {
        let _ = self.stop.send(true);
        self.done.await.unwrap_or(None)
    }
}

/// The loop of a [`Follow`]'s thread.
async fn follow<F>(
    folder: Arc<OnceLock<PathBuf>>,
    every: Duration,
    mirror: F,
    mut stopped: watch::Receiver<bool>,
) -> Option<LastSync>
where
    F: FnOnce(&Path) -> Result<Mirror, ObjstoreError>,
{
    let mut make = Some(mirror);
    let mut followed: Option<(PathBuf, Mirror)> = None;
    loop {
        if let Some(dir) = folder.get().filter(|_| followed.is_none()) {
            if let Some(make) = make.take() {
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
                    "qexp: upload failed, trying again in {} s: {}",
                    every.as_secs_f64(),
                    crate::error::short(&e)
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
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::remote::Remote;

    #[tokio::test]
    async fn the_folder_is_synced_once_it_exists_and_once_more_at_the_end() {
        let tmp = tempfile::tempdir().unwrap();
        let store = Remote::open_with(
            &format!("file://{}", tmp.path().join("store").display()),
            Vec::new(),
        )
        .unwrap();
        let cell: Arc<OnceLock<PathBuf>> = Arc::default();
        let f = Follow::start(Arc::clone(&cell), Duration::from_secs(3600), move |dir| {
            Ok(Mirror::new(
                store.join(dir.file_name().unwrap().to_str().unwrap())?,
            ))
        })
        .unwrap();
        let run = tmp.path().join("run-1");
        std::fs::create_dir(&run).unwrap();
        std::fs::write(run.join("a"), "first").unwrap();
        cell.set(run.clone()).unwrap();
        let sent = tmp.path().join("store/run-1/a");
        let started = std::time::Instant::now();
        while !sent.exists() {
            assert!(started.elapsed() < Duration::from_secs(10), "no first sync");
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        // Written after the first sync, long before the next: sent by the last.
        std::fs::write(run.join("b"), "second").unwrap();
        let (dir, synced) = f.finish().await.unwrap();
        assert_eq!(dir, run);
        assert_eq!(synced.unwrap().uploaded, 1);
        assert!(tmp.path().join("store/run-1/b").exists());
        // A run that never made its folder: nothing to say.
        let f = Follow::start(Arc::default(), Duration::from_secs(1), |_| unreachable!()).unwrap();
        assert!(f.finish().await.is_none());
    }
}
