//! Stopping a run: when the user interrupts (or a write fails), no new
//! request is sent, and requests in flight get [`STOP_GRACE`] to finish
//! before they are cut and recorded as `cancelled`.

use crate::Cancel;
use std::time::Duration;

/// How long requests in flight may still finish after a stop.
pub const STOP_GRACE: Duration = Duration::from_secs(5);

/// Resolves [`STOP_GRACE`] after `stop` turns true; never if its sender is
/// dropped without stopping.
pub(crate) async fn cut_after_grace(stop: &mut Cancel) {
    if stop.wait_for(|s| *s).await.is_err() {
        std::future::pending::<()>().await;
    }
    tokio::time::sleep(STOP_GRACE).await;
}

/// The run's own stop flag: raised by the user's `cancel`, or by the runner
/// itself when it must stop (a write failed).
pub(crate) struct Stop {
    tx: std::sync::Arc<tokio::sync::watch::Sender<bool>>,
    rx: Cancel,
}

impl Stop {
    /// A flag that follows `user` (and can be raised on its own).
    pub(crate) fn following(user: &Cancel) -> Stop {
        let (tx, rx) = tokio::sync::watch::channel(*user.borrow());
        let tx = std::sync::Arc::new(tx);
        let (fwd, mut user) = (tx.clone(), user.clone());
        tokio::spawn(async move {
            if user.wait_for(|c| *c).await.is_ok() {
                fwd.send_replace(true);
            }
        });
        Stop { tx, rx }
    }

    /// Raises the flag.
    pub(crate) fn raise(&self) {
        self.tx.send_replace(true);
    }

    /// A receiver for the scheduler.
    pub(crate) fn receiver(&self) -> Cancel {
        self.rx.clone()
    }
}
