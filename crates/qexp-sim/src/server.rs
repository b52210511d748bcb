//! Starting and stopping a simulated server on a loopback port.

use std::future::IntoFuture;
use std::io;
use std::net::{Ipv4Addr, SocketAddr};
use std::time::Duration;

use axum::serve::ListenerExt;
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio::task::JoinHandle;

use crate::routes;
use crate::scheduler::Engine;
use crate::SimProfile;

/// How long [`SimServer::shutdown`] waits for connections to close before giving up on them.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(5);

/// A running simulated server, listening on `127.0.0.1` on a port of its own.
///
/// Dropping it stops the server in the background; [`SimServer::shutdown`] also waits.
#[derive(Debug)]
pub struct SimServer {
    addr: SocketAddr,
    profile: SimProfile,
    stop: watch::Sender<bool>,
    task: Option<JoinHandle<io::Result<()>>>,
}

impl SimServer {
    /// Validates `profile`, binds `127.0.0.1:0` and serves on the current tokio runtime.
    pub async fn start(profile: SimProfile) -> io::Result<SimServer> {
        SimServer::start_on(profile, 0).await
    }

    /// Like [`SimServer::start`], on a chosen port of 127.0.0.1 (0 picks a free one).
    pub async fn start_on(profile: SimProfile, port: u16) -> io::Result<SimServer> {
        SimServer::start_at(profile, (Ipv4Addr::LOCALHOST, port).into()).await
    }

    /// Like [`SimServer::start`], on a chosen address (a test's network
    /// namespace has no loopback peer: its simulator listens on its own address).
    pub async fn start_at(profile: SimProfile, at: std::net::SocketAddr) -> io::Result<SimServer> {
        profile
            .validate()
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
        let listener = TcpListener::bind(at).await?;
        let addr = listener.local_addr()?;
        // Chunks are small and timed: Nagle's algorithm would hold them back.
        let listener = listener.tap_io(|tcp| {
            if let Err(err) = tcp.set_nodelay(true) {
                tracing::debug!("qexp-sim: cannot set TCP_NODELAY: {err}");
            }
        });
        let (stop, stopped) = watch::channel(false);
        let engine = Engine::new(profile.clone(), stopped.clone());
        let mut stopped = stopped;
        let serve =
            axum::serve(listener, routes::router(engine)).with_graceful_shutdown(async move {
                // Either `true` or the sender gone: stop both ways.
                let _ = stopped.wait_for(|s| *s).await;
            });
        let task = tokio::spawn(serve.into_future());
        tracing::info!(%addr, profile = %profile.name, "qexp-sim listening");
        Ok(SimServer {
            addr,
            profile,
            stop,
            task: Some(task),
        })
    }

    /// The address the server listens on.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `http://127.0.0.1:PORT`, without a trailing slash or `/v1`.
    pub fn base_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The profile the server simulates.
    pub fn profile(&self) -> &SimProfile {
        &self.profile
    }

    /// Stops accepting, cuts running generations short and waits for connections to close.
    pub async fn shutdown(mut self) {
        self.stop.send_replace(true);
        let Some(mut task) = self.task.take() else {
            return;
        };
        match tokio::time::timeout(SHUTDOWN_GRACE, &mut task).await {
            Ok(Ok(Ok(()))) => {}
            Ok(Ok(Err(err))) => tracing::warn!("qexp-sim: server ended with an error: {err}"),
            Ok(Err(err)) => tracing::warn!("qexp-sim: server task failed: {err}"),
            Err(_) => {
                tracing::warn!(
                    "qexp-sim: connections still open after {SHUTDOWN_GRACE:?}; aborting"
                );
                task.abort();
            }
        }
    }
}

impl Drop for SimServer {
    fn drop(&mut self) {
        self.stop.send_replace(true);
    }
}
