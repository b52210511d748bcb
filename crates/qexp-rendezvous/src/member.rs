//! A shard's side of the rendezvous: join (and measure the clock offset to
//! shard 0), beat while the run lasts, wait at each point's barrier until
//! the start shard 0 names. When shard 0 cannot be reached for
//! `lost_after`, it is declared lost and the shard goes on alone.

use crate::wire::{
    Admission, Answer, Arrival, ClockReading, Departure, Identity, RendezvousOptions,
};
use qexp_types::unix_now;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Clock samples taken at the start; the one with the shortest round trip is kept.
const CLOCK_SAMPLES: usize = 64;

/// This host's clock, as a shard reads it: the system clock plus a skew
/// that only tests set (`--clock-skew-s`, to make a host whose clock is
/// off), then corrected to shard 0's by the measured offset.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Clock {
    /// Test-only: seconds this host's clock reads ahead of the system's.
    pub skew_s: f64,
    /// Seconds added to this host's clock to read shard 0's.
    pub offset_s: f64,
}

impl Clock {
    /// This host's clock, Unix seconds.
    pub fn local(&self) -> f64 {
        unix_now() + self.skew_s
    }

    /// What to add to a system-clock time to put it on shard 0's clock.
    pub fn shift_s(&self) -> f64 {
        self.skew_s + self.offset_s
    }
}

/// A shard at the rendezvous.
pub struct Member {
    http: reqwest::Client,
    base: String,
    shard: u32,
    lost_after: Duration,
    /// This shard's clock, its offset measured at join.
    pub clock: Clock,
    /// Round trip of the clock sample kept, s.
    pub rtt_s: f64,
    lost: Arc<Mutex<BTreeMap<u32, String>>>,
    /// True once shard 0 is lost: barriers are skipped.
    alone: AtomicBool,
    beat: Mutex<Option<tokio::task::JoinHandle<()>>>,
}

impl Member {
    fn stop_beating(&self) {
        if let Some(b) = self.beat.lock().ok().and_then(|mut b| b.take()) {
            b.abort();
        }
    }
}

impl Drop for Member {
    fn drop(&mut self) {
        self.stop_beating();
    }
}

/// Why a shard could not join.
#[derive(Debug, thiserror::Error)]
pub enum JoinError {
    /// Shard 0 could not be reached in time.
    #[error("shard {shard} could not reach the rendezvous at {addr} within {secs:.0} s: {cause}")]
    Unreachable {
        /// The shard.
        shard: u32,
        /// Shard 0's address.
        addr: String,
        /// How long it tried.
        secs: f64,
        /// The last failure.
        cause: String,
    },
    /// Shard 0 would not admit it (another run's rendezvous, or its shard
    /// already run by another process).
    #[error("shard {shard} was refused by the rendezvous at {addr}: {why}")]
    Refused {
        /// The shard.
        shard: u32,
        /// Shard 0's address.
        addr: String,
        /// Shard 0's sentence.
        why: String,
    },
}

impl Member {
    /// Joins the rendezvous at `opts.addr` as `who` (trying until
    /// `join_timeout`), measures the clock offset and starts beating.
    pub async fn join(
        opts: &RendezvousOptions,
        who: &Identity,
        skew_s: f64,
    ) -> Result<Member, JoinError> {
        let shard = who.shard;
        let fail = |cause: String| JoinError::Unreachable {
            shard,
            addr: opts.addr.clone(),
            secs: opts.join_timeout.as_secs_f64(),
            cause,
        };
        let http = reqwest::Client::builder()
            .no_proxy()
            .timeout(Duration::from_secs(30))
            .build()
            .map_err(|e| fail(qexp_types::error::chain(&e)))?;
        let base = format!("http://{}", opts.addr);
        let mut clock = Clock {
            skew_s,
            offset_s: 0.0,
        };
        let started = Instant::now();
        let first = loop {
            match sample(&http, &base, clock).await {
                Ok(s) => break s,
                Err(e) if started.elapsed() > opts.join_timeout => return Err(fail(e)),
                Err(_) => tokio::time::sleep(Duration::from_millis(100)).await,
            }
        };
        // Admitted before anything else: a process of another run, or a
        // second one for this shard, stops here.
        let admission: Admission = loop {
            let sent = async {
                let r = http.post(format!("{base}/join")).json(who).send().await?;
                r.error_for_status()?.json().await
            };
            match sent.await {
                Ok(a) => break a,
                Err(e) if started.elapsed() > opts.join_timeout => {
                    return Err(fail(qexp_types::error::chain(&e)))
                }
                Err(_) => tokio::time::sleep(Duration::from_millis(100)).await,
            }
        };
        if let Some(why) = admission.refused {
            return Err(JoinError::Refused {
                shard,
                addr: opts.addr.clone(),
                why,
            });
        }
        let best = closest(&http, &base, clock, first).await;
        clock.offset_s = best.1;
        let m = Member {
            http,
            base,
            shard,
            lost_after: opts.lost_after,
            clock,
            rtt_s: best.0,
            lost: Arc::new(Mutex::new(BTreeMap::new())),
            alone: AtomicBool::new(false),
            beat: Mutex::new(None),
        };
        let beating = tokio::spawn(beat(
            m.http.clone(),
            m.base.clone(),
            shard,
            opts.lost_after / 5,
            m.lost.clone(),
        ));
        if let Ok(mut b) = m.beat.lock() {
            *b = Some(beating);
        }
        Ok(m)
    }

    /// Shards lost so far, each with its sentence.
    pub fn lost(&self) -> Vec<(u32, String)> {
        self.lost
            .lock()
            .map(|l| l.iter().map(|(k, v)| (*k, v.clone())).collect())
            .unwrap_or_default()
    }

    /// Waits at barrier `key` until shard 0 names the start, then until
    /// that start on this shard's corrected clock; gives that start on the
    /// system clock (Unix seconds, as the scheduler reads it). Returns at
    /// once, with None, once shard 0 is lost.
    pub async fn meet(&self, key: &str) -> Option<f64> {
        let mut last_reached = Instant::now();
        while !self.alone.load(Ordering::Relaxed) {
            let a = Arrival {
                shard: self.shard,
                key: Some(key.to_string()),
            };
            let answer = self.post("meet", &a).await;
            match answer {
                Some(ans) => {
                    last_reached = Instant::now();
                    self.note_lost(&ans);
                    if let Some(start) = ans.start_unix_s {
                        let wait = start - (self.clock.local() + self.clock.offset_s);
                        // A start no duration can reach (a broken answer,
                        // not a number) is not waited for.
                        if let Ok(d) = Duration::try_from_secs_f64(wait) {
                            tokio::time::sleep(d).await;
                        }
                        return start.is_finite().then(|| start - self.clock.shift_s());
                    }
                }
                None if last_reached.elapsed() > self.lost_after => {
                    self.lose_shard_0(last_reached.elapsed());
                }
                None => tokio::time::sleep(Duration::from_millis(200)).await,
            }
        }
        None
    }

    /// Tells shard 0 this shard stops before the end (`why`), so that the
    /// others stop waiting for it, and stops beating. Best effort: when
    /// shard 0 cannot be told, the others declare this shard lost once its
    /// beats stop.
    pub async fn leave(&self, why: &str) {
        self.stop_beating();
        if self.alone.load(Ordering::Relaxed) {
            return;
        }
        let d = Departure {
            shard: self.shard,
            why: why.to_string(),
        };
        let _ = self
            .http
            .post(format!("{}/leave", self.base))
            .timeout(Duration::from_secs(5))
            .json(&d)
            .send()
            .await;
    }

    fn lose_shard_0(&self, silent: Duration) {
        let why = format!(
            "shard 0 (the rendezvous at {}) could not be reached for {:.1} s; {}",
            self.base.trim_start_matches("http://"),
            silent.as_secs_f64(),
            qexp_types::WENT_ON_ALONE
        );
        tracing::warn!(target: qexp_types::PROGRESS_TARGET, "qexp: {why}");
        if let Ok(mut l) = self.lost.lock() {
            l.insert(0, why);
        }
        self.alone.store(true, Ordering::Relaxed);
        self.stop_beating();
    }

    fn note_lost(&self, ans: &Answer) {
        if let Ok(mut l) = self.lost.lock() {
            for (k, why) in &ans.lost {
                l.entry(*k).or_insert_with(|| why.clone());
            }
        }
    }

    async fn post(&self, route: &str, a: &Arrival) -> Option<Answer> {
        let r = self
            .http
            .post(format!("{}/{route}", self.base))
            .json(a)
            .send()
            .await
            .ok()?;
        r.json().await.ok()
    }
}

/// Of `first` and the rest of [`CLOCK_SAMPLES`] samples of shard 0's
/// clock, the one with the shortest round trip: (round trip, offset).
async fn closest(
    http: &reqwest::Client,
    base: &str,
    clock: Clock,
    first: (f64, f64),
) -> (f64, f64) {
    let mut best = first;
    for _ in 1..CLOCK_SAMPLES {
        if let Ok(s) = sample(http, base, clock).await {
            if s.0 < best.0 {
                best = s;
            }
        }
    }
    best
}

/// One clock sample: (round trip, offset) = (t1 − t0, server − (t0 + t1)/2).
async fn sample(http: &reqwest::Client, base: &str, clock: Clock) -> Result<(f64, f64), String> {
    let t0 = clock.local();
    let r = http
        .get(format!("{base}/clock"))
        .send()
        .await
        .map_err(|e| qexp_types::error::chain(&e))?;
    let reading: ClockReading = r.json().await.map_err(|e| qexp_types::error::chain(&e))?;
    let t1 = clock.local();
    Ok((t1 - t0, reading.unix_s - (t0 + t1) / 2.0))
}

/// Tells shard 0 this shard is alive every `every`, and keeps its list of lost shards.
async fn beat(
    http: reqwest::Client,
    base: String,
    shard: u32,
    every: Duration,
    lost: Arc<Mutex<BTreeMap<u32, String>>>,
) {
    let a = Arrival { shard, key: None };
    loop {
        if let Ok(r) = http.post(format!("{base}/beat")).json(&a).send().await {
            if let Ok(ans) = r.json::<Answer>().await {
                if let Ok(mut l) = lost.lock() {
                    for (k, why) in ans.lost {
                        l.entry(k).or_insert(why);
                    }
                }
            }
        }
        tokio::time::sleep(every).await;
    }
}
