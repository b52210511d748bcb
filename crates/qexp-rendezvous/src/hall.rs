//! Shard 0's rendezvous endpoint: its clock, the shards' heartbeats, and
//! one barrier per point. State is in memory: a restarted shard 0 is a new
//! rendezvous (a resumed shard runs alone).

use crate::wire::{Admission, Answer, Arrival, ClockReading, Departure, Identity, LEAD_S};
use axum::extract::State;
use axum::routing::{get, post};
use axum::{Json, Router};
use qexp_types::unix_now;
use std::collections::{BTreeMap, BTreeSet};
use std::future::IntoFuture;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::Notify;

/// How long a barrier request waits before it answers "not yet" (the member asks again).
const HOLD: Duration = Duration::from_secs(10);

/// The rendezvous of `count` shards, served by shard 0.
pub struct Hall {
    count: u32,
    run_id: String,
    plan_hash: String,
    opened: Instant,
    lost_after: Duration,
    join_timeout: Duration,
    /// Test-only skew of shard 0's clock (see `Clock`).
    skew_s: f64,
    state: Mutex<Roll>,
    changed: Notify,
}

/// Who was heard from when, who is lost, who reached which barrier.
#[derive(Default)]
struct Roll {
    /// The process admitted for each shard.
    joined: BTreeMap<u32, Identity>,
    seen: BTreeMap<u32, Instant>,
    lost: BTreeMap<u32, String>,
    barriers: BTreeMap<String, Barrier>,
}

#[derive(Default)]
struct Barrier {
    arrived: BTreeSet<u32>,
    start: Option<f64>,
}

/// A hall being served; dropping it stops the server.
pub struct Serving {
    /// Where it listens.
    pub addr: SocketAddr,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
}

impl Drop for Serving {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}

impl Hall {
    /// A hall for the `count` shards of run `run_id` of the plan hashed `plan_hash`.
    pub fn new(
        count: u32,
        run_id: &str,
        plan_hash: &str,
        lost_after: Duration,
        join_timeout: Duration,
        skew_s: f64,
    ) -> Arc<Hall> {
        Arc::new(Hall {
            count,
            run_id: run_id.to_string(),
            plan_hash: plan_hash.to_string(),
            opened: Instant::now(),
            lost_after,
            join_timeout,
            skew_s,
            state: Mutex::new(Roll::default()),
            changed: Notify::new(),
        })
    }

    /// Binds `bind` and serves the hall on the current runtime.
    pub async fn serve(self: Arc<Hall>, bind: &str) -> std::io::Result<Serving> {
        let listener = listen(bind).await?;
        let addr = listener.local_addr()?;
        let app = Router::new()
            .route("/clock", get(clock))
            .route("/join", post(join))
            .route("/beat", post(beat))
            .route("/leave", post(leave))
            .route("/meet", post(meet))
            .with_state(self);
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        let serve = axum::serve(listener, app).with_graceful_shutdown(async move {
            let _ = rx.await;
        });
        tokio::spawn(serve.into_future());
        Ok(Serving {
            addr,
            stop: Some(tx),
        })
    }

    /// Notes `shard` as heard from now and declares lost whoever is
    /// overdue; returns the lost shards.
    fn heard(&self, roll: &mut Roll, shard: u32) -> Vec<(u32, String)> {
        if !roll.lost.contains_key(&shard) {
            roll.seen.insert(shard, Instant::now());
        }
        for k in 0..self.count {
            if roll.lost.contains_key(&k) {
                continue;
            }
            let why = match roll.seen.get(&k) {
                Some(t) if t.elapsed() > self.lost_after => format!(
                    "shard {k} of {} stopped reaching the rendezvous (last heard {:.1} s before it was declared lost)",
                    self.count,
                    t.elapsed().as_secs_f64()
                ),
                None if self.opened.elapsed() > self.join_timeout => format!(
                    "shard {k} of {} never reached the rendezvous within {:.0} s",
                    self.count,
                    self.join_timeout.as_secs_f64()
                ),
                _ => continue,
            };
            tracing::warn!(target: qexp_types::PROGRESS_TARGET, "qexp: {why}; the other shards go on");
            roll.lost.insert(k, why);
        }
        roll.lost.iter().map(|(k, w)| (*k, w.clone())).collect()
    }

    /// Admits `who` unless it is of another run, or its shard was admitted
    /// before as another process: one that still runs (two would send the
    /// shard's requests twice), or one declared lost (the others went on
    /// without it; a new process would start at the first point, out of
    /// step with them: a lost shard is finished by `--resume` after the run).
    fn admit(&self, who: Identity) -> Admission {
        let refused = |why: String| Admission { refused: Some(why) };
        let short = |h: &str| h.chars().take(12).collect::<String>();
        if who.run_id != self.run_id || who.plan_hash != self.plan_hash || who.count != self.count {
            return refused(format!(
                "this rendezvous is run {} (plan {}, {} shards), and shard {} came for run {} (plan {}, {} shards)",
                self.run_id,
                short(&self.plan_hash),
                self.count,
                who.shard,
                who.run_id,
                short(&who.plan_hash),
                who.count
            ));
        }
        let Ok(mut roll) = self.state.lock() else {
            return refused("the rendezvous's state is unreadable".into());
        };
        let first = roll.joined.get(&who.shard);
        let another = first.is_some_and(|f| f.instance != who.instance);
        if let Some(lost) = roll.lost.get(&who.shard) {
            if another || first.is_none() {
                // The others went on without it: a new process would
                // start at the first point, out of step with them.
                return refused(format!(
                    "{lost}; the other shards went on without it: finish it with `qexp run --resume` on its folder once they are done, then merge"
                ));
            }
        }
        if let Some(first) = first.filter(|_| another) {
            return refused(format!(
                "shard {} of {} already runs in another process{}; a second one would send the shard's requests twice (a Kubernetes Indexed Job can start a second pod for an index whose first one still runs: stop one of them)",
                who.shard,
                self.count,
                first
                    .host
                    .as_deref()
                    .map(|h| format!(" on host {h}"))
                    .unwrap_or_default()
            ));
        }
        roll.joined.insert(who.shard, who);
        Admission::default()
    }

    /// `d.shard` stops before the end: lost from now on, with its reason.
    fn depart(&self, d: Departure) {
        if let Ok(mut roll) = self.state.lock() {
            let why = format!(
                "shard {} of {} stopped before the end: {}",
                d.shard, self.count, d.why
            );
            tracing::warn!(target: qexp_types::PROGRESS_TARGET, "qexp: {why}; the other shards go on");
            roll.lost.entry(d.shard).or_insert(why);
        }
        self.changed.notify_waiters();
    }

    /// One look at barrier `key` for `shard`: its start once every shard
    /// not lost has arrived.
    fn look(&self, shard: u32, key: &str) -> Answer {
        let Ok(mut roll) = self.state.lock() else {
            return Answer::default();
        };
        let lost = self.heard(&mut roll, shard);
        let live: Vec<u32> = (0..self.count)
            .filter(|k| !roll.lost.contains_key(k))
            .collect();
        let b = roll.barriers.entry(key.to_string()).or_default();
        b.arrived.insert(shard);
        if b.start.is_none() && live.iter().all(|k| b.arrived.contains(k)) {
            b.start = Some(unix_now() + self.skew_s + LEAD_S);
            self.changed.notify_waiters();
        }
        Answer {
            start_unix_s: b.start,
            lost,
        }
    }
}

async fn clock(State(hall): State<Arc<Hall>>) -> Json<ClockReading> {
    Json(ClockReading {
        unix_s: unix_now() + hall.skew_s,
    })
}

async fn join(State(hall): State<Arc<Hall>>, Json(who): Json<Identity>) -> Json<Admission> {
    Json(hall.admit(who))
}

async fn leave(State(hall): State<Arc<Hall>>, Json(d): Json<Departure>) -> Json<Answer> {
    hall.depart(d);
    Json(Answer::default())
}

async fn beat(State(hall): State<Arc<Hall>>, Json(a): Json<Arrival>) -> Json<Answer> {
    let lost = match hall.state.lock() {
        Ok(mut roll) => hall.heard(&mut roll, a.shard),
        Err(_) => Vec::new(),
    };
    Json(Answer {
        start_unix_s: None,
        lost,
    })
}

/// Holds the request until the barrier opens (or [`HOLD`] passes).
async fn meet(State(hall): State<Arc<Hall>>, Json(a): Json<Arrival>) -> Json<Answer> {
    let key = a.key.unwrap_or_default();
    let until = Instant::now() + HOLD;
    loop {
        let answer = hall.look(a.shard, &key);
        if answer.start_unix_s.is_some() || Instant::now() >= until {
            return Json(answer);
        }
        // Woken by an arrival, or every 200 ms to look for lost shards.
        let _ = tokio::time::timeout(Duration::from_millis(200), hall.changed.notified()).await;
    }
}

/// Binds `bind`. The IPv6 wildcard `[::]:PORT` (what `qexp kube` writes)
/// is bound with `IPV6_V6ONLY` off, so it takes IPv4 and IPv6 connections
/// alike whatever the node's `net.ipv6.bindv6only`: shard 0 is reached on
/// IPv4, dual-stack and IPv6-only clusters. On a host without IPv6 it falls
/// back to `0.0.0.0:PORT` with a warning.
async fn listen(bind: &str) -> std::io::Result<tokio::net::TcpListener> {
    // EAFNOSUPPORT (97): the kernel has no IPv6; an address in use or any
    // other error is the bind's own, not IPv6's.
    const NO_IPV6: i32 = 97;
    let Some(port) = bind.strip_prefix("[::]:") else {
        return tokio::net::TcpListener::bind(bind).await;
    };
    match dual_stack(bind) {
        Ok(listener) => Ok(listener),
        Err(e)
            if e.raw_os_error() == Some(NO_IPV6)
                || e.kind() == std::io::ErrorKind::AddrNotAvailable =>
        {
            let v4 = format!("0.0.0.0:{port}");
            tracing::warn!("cannot listen on {bind} ({e}); listening on {v4}, IPv4 only");
            tokio::net::TcpListener::bind(v4).await
        }
        Err(e) => Err(e),
    }
}

/// A listener on the IPv6 wildcard `bind` that takes IPv4 too (IPv4-mapped
/// addresses), set up as tokio's own bind does (address reuse, non-blocking).
fn dual_stack(bind: &str) -> std::io::Result<tokio::net::TcpListener> {
    use socket2::{Domain, Protocol, Socket, Type};
    let addr: std::net::SocketAddr = bind
        .parse()
        .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidInput, e))?;
    let socket = Socket::new(Domain::IPV6, Type::STREAM, Some(Protocol::TCP))?;
    socket.set_only_v6(false)?;
    socket.set_reuse_address(true)?;
    socket.set_nonblocking(true)?;
    socket.bind(&addr.into())?;
    socket.listen(1024)?;
    tokio::net::TcpListener::from_std(socket.into())
}
