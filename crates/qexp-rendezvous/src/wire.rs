//! What the shards and shard 0's rendezvous say to each other, and how a
//! run's shards are told to meet.

use serde::{Deserialize, Serialize};
use std::time::Duration;

/// How far ahead of the last arrival at a barrier shard 0 names the
/// start: enough for the answer to reach every shard first.
pub const LEAD_S: f64 = 0.25;

/// How the shards of a run meet.
#[derive(Debug, Clone)]
pub struct RendezvousOptions {
    /// Shard 0's address, as every shard reaches it (`host:port`).
    pub addr: String,
    /// Where shard 0 listens (default: `addr`).
    pub bind: Option<String>,
    /// A shard not heard from this long is lost.
    pub lost_after: Duration,
    /// A shard never heard from this long after shard 0 started is lost;
    /// also how long a shard tries to reach shard 0 at the start.
    pub join_timeout: Duration,
}

/// A shard's clock as read by the rendezvous.
#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
pub struct ClockReading {
    /// Unix seconds on shard 0's clock.
    pub unix_s: f64,
}

/// A shard saying it is alive, or arriving at a barrier.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Arrival {
    /// The shard.
    pub shard: u32,
    /// The barrier (absent for a heartbeat).
    #[serde(default)]
    pub key: Option<String>,
}

/// A shard that stops before the end (its run failed): the others stop
/// waiting for it at once.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Departure {
    /// The shard.
    pub shard: u32,
    /// Why it stops, in one sentence.
    pub why: String,
}

/// Who a joining shard is: the run it belongs to and the process running
/// it. Shard 0 admits one process per shard, of its own run only.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Identity {
    /// The shard.
    pub shard: u32,
    /// Shards in the run.
    pub count: u32,
    /// The run id every shard of the run is given.
    pub run_id: String,
    /// The plan's hash.
    pub plan_hash: String,
    /// Drawn once per process: two processes running one shard differ here.
    pub instance: u64,
    /// The host it runs on, for the sentence that refuses a second one.
    #[serde(default)]
    pub host: Option<String>,
}

/// Shard 0's answer to a shard that joins.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Admission {
    /// Why the shard may not join (absent: admitted).
    #[serde(default)]
    pub refused: Option<String>,
}

/// Shard 0's answer at a barrier or to a heartbeat.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Answer {
    /// The named start, on shard 0's clock; absent while shards are still
    /// expected (the member asks again).
    #[serde(default)]
    pub start_unix_s: Option<f64>,
    /// Shards lost so far, each with a sentence.
    #[serde(default)]
    pub lost: Vec<(u32, String)>,
}
