//! What a run knows about being one shard of several: which shard, its
//! clock against shard 0, the rendezvous it serves (shard 0) or joins, and
//! the shards it lost. A run made by one process is [`Meeting::whole`]:
//! every step here is then a no-op.

use crate::error::RunError;
use crate::shard::Shard;
use crate::Cancel;
use qexp_rendezvous::hall::{Hall, Serving};
use qexp_rendezvous::member::{Clock, Member};
use qexp_rendezvous::wire::{Identity, RendezvousOptions};
use qexp_store::{LostShard, Manifest, ShardRecord};

/// `qexp run --shard K/N`: which shard, under which shared run id, meeting where.
#[derive(Debug, Clone)]
pub struct ShardOptions {
    /// This shard.
    pub shard: Shard,
    /// The run id every shard of the run is given.
    pub run_id: String,
    /// Where the shards meet; `None`: this shard runs alone (a resume, or
    /// shards started without a rendezvous).
    pub rendezvous: Option<RendezvousOptions>,
    /// Test-only: seconds this host's clock is made to read ahead.
    pub clock_skew_s: f64,
    /// The clock offset to shard 0 when there is no rendezvous to measure
    /// it (a resume keeps the one its run measured).
    pub clock_offset_s: f64,
}

/// One shard's place among the others for the length of a run.
pub(crate) struct Meeting {
    shard: Shard,
    clock: Clock,
    member: Option<Member>,
    _serving: Option<Serving>,
    rendezvous: Option<String>,
}

impl Meeting {
    /// A run made by one process.
    pub(crate) fn whole() -> Meeting {
        Meeting {
            shard: Shard::WHOLE,
            clock: Clock::default(),
            member: None,
            _serving: None,
            rendezvous: None,
        }
    }

    /// Serves the rendezvous (shard 0), joins it (as a process of the run
    /// of the plan hashed `plan_hash`, on `host`) and measures the clock.
    pub(crate) async fn open(
        opts: Option<&ShardOptions>,
        plan_hash: &str,
        host: Option<&str>,
    ) -> Result<Meeting, RunError> {
        let Some(o) = opts else {
            return Ok(Meeting::whole());
        };
        let mut m = Meeting {
            shard: o.shard,
            clock: Clock {
                skew_s: o.clock_skew_s,
                offset_s: o.clock_offset_s,
            },
            ..Meeting::whole()
        };
        let Some(r) = &o.rendezvous else {
            return Ok(m);
        };
        let mut reach = r.addr.clone();
        let mut recorded = r.addr.clone();
        if o.shard.index == 0 {
            let serving = serve(o, r, plan_hash).await?;
            // Shard 0 reaches itself where it listens (port 0 may have
            // been asked; a wildcard bind is reached on loopback).
            let mut own = serving.addr;
            if own.ip().is_unspecified() {
                own.set_ip(std::net::Ipv4Addr::LOCALHOST.into());
            }
            if r.bind.is_none() {
                recorded = serving.addr.to_string();
            }
            reach = own.to_string();
            m._serving = Some(serving);
        }
        let member = Member::join(
            &RendezvousOptions {
                addr: reach.clone(),
                ..r.clone()
            },
            &Identity {
                shard: o.shard.index,
                count: o.shard.count,
                run_id: o.run_id.clone(),
                plan_hash: plan_hash.to_string(),
                instance: rand::random(),
                host: host.map(str::to_string),
            },
            o.clock_skew_s,
        )
        .await?;
        m.clock = member.clock;
        tracing::info!(
            target: crate::PROGRESS_TARGET,
            "qexp: shard {} of {}: clock offset to shard 0 {:+.6} s (round trip {:.6} s)",
            o.shard.index,
            o.shard.count,
            member.clock.offset_s,
            member.rtt_s
        );
        m.rendezvous = Some(recorded);
        m.member = Some(member);
        Ok(m)
    }

    /// This shard.
    pub(crate) fn shard(&self) -> Shard {
        self.shard
    }

    /// This shard's clock.
    pub(crate) fn clock(&self) -> Clock {
        self.clock
    }

    /// The manifest's record of this shard (none for a run made by one process).
    pub(crate) fn record(&self) -> Option<ShardRecord> {
        (self.shard.count > 1 || self.member.is_some()).then(|| ShardRecord {
            index: self.shard.index,
            count: self.shard.count,
            rendezvous: self.rendezvous.clone(),
            clock_offset_s: self.clock.offset_s,
            clock_rtt_s: self.member.as_ref().map(|m| m.rtt_s),
            lost: Vec::new(),
        })
    }

    /// Waits at the barrier before (`trial`, `point_id`)'s measured
    /// requests, or until `cancel` (Ctrl-C, SIGTERM) turns true; gives the
    /// start shard 0 named, on this host's system clock (None for a run made
    /// by one process, once shard 0 is lost, or on `cancel`).
    pub(crate) async fn before_point(
        &self,
        trial: u32,
        point_id: u32,
        cancel: Cancel,
    ) -> Option<f64> {
        self.meet(&format!("t{trial}-p{point_id}"), cancel).await
    }

    /// The last barrier: shard 0 serves until every shard not lost is done
    /// (or `cancel` turns true).
    pub(crate) async fn end(&self, cancel: Cancel) {
        self.meet("end", cancel).await;
    }

    /// This shard's run failed (`why`): shard 0 is told, so that the others
    /// stop waiting for it at their next barrier. Shard 0 then still serves
    /// until the others are done (or `cancel`); any other shard returns.
    pub(crate) async fn leave(&self, why: &str, cancel: Cancel) {
        if let Some(m) = &self.member {
            m.leave(why).await;
            if self.shard.index == 0 {
                self.meet("end", cancel).await;
            }
        }
    }

    async fn meet(&self, key: &str, mut cancel: Cancel) -> Option<f64> {
        let m = self.member.as_ref()?;
        tokio::select! {
            start = m.meet(key) => start,
            _ = cancel.wait_for(|c| *c) => None,
        }
    }

    /// Adds the shards lost since last time to `manifest`; true when any was.
    pub(crate) fn note_lost(&self, manifest: &mut Manifest) -> bool {
        let (Some(m), Some(rec)) = (&self.member, manifest.shard.as_mut()) else {
            return false;
        };
        let mut added = false;
        for (shard, message) in m.lost() {
            if rec.lost.iter().all(|l| l.shard != shard) {
                rec.lost.push(LostShard {
                    shard,
                    at: chrono::Utc::now(),
                    message,
                });
                added = true;
            }
        }
        added
    }
}

/// Shard 0's rendezvous, served where the options ask (`bind`, or the
/// address the others reach).
async fn serve(
    o: &ShardOptions,
    r: &RendezvousOptions,
    plan_hash: &str,
) -> Result<Serving, RunError> {
    let hall = Hall::new(
        o.shard.count,
        &o.run_id,
        plan_hash,
        r.lost_after,
        r.join_timeout,
        o.clock_skew_s,
    );
    let bind = r.bind.clone().unwrap_or_else(|| r.addr.clone());
    let serving = hall
        .serve(&bind)
        .await
        .map_err(|source| RunError::RendezvousServe { bind, source })?;
    tracing::info!(
        target: crate::PROGRESS_TARGET,
        "qexp: rendezvous for {} shards on {}",
        o.shard.count,
        serving.addr
    );
    Ok(serving)
}
