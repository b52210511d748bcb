//! qexp-rendezvous: where the shards of a run meet (`--rendezvous HOST:PORT`): shard 0
//! serves a small HTTP endpoint ([`hall`]), every shard, shard 0 included,
//! talks to it as a [`member`].
//!
//! - `GET /clock`: shard 0's clock. A member measures its offset to it by
//!   the minimum-RTT method (Cristian 1989; NTP's clock filter): of many
//!   samples, the one with the shortest round trip bounds the error by
//!   half its round trip.
//! - `POST /beat`: "I am alive". A shard not heard from for `lost_after`
//!   (or never heard from within `join_timeout`) is declared lost; the
//!   others stop waiting for it and name it in their manifests.
//! - `POST /meet`: the barrier before each point's measured requests.
//!   When every shard not lost has arrived, shard 0 names a start time a
//!   little ahead (`LEAD_S`) on its clock, and every shard starts then.

pub mod hall;
pub mod member;
pub mod wire;

#[cfg(test)]
mod tests {
    use super::hall::{Hall, Serving};
    use super::member::{JoinError, Member};
    use crate::wire::{Identity, RendezvousOptions};
    use std::time::Duration;

    fn who(shard: u32, instance: u64) -> Identity {
        Identity {
            shard,
            count: 2,
            run_id: "R".into(),
            plan_hash: "0123456789abcdef".into(),
            instance,
            host: Some(format!("pod-{instance}")),
        }
    }

    /// The hall of run R's 2 shards, served on loopback, and how a member
    /// reaches it; shards are lost after `lost_after`.
    async fn hall(lost_after: Duration) -> (Serving, RendezvousOptions) {
        let hall = Hall::new(
            2,
            "R",
            "0123456789abcdef",
            lost_after,
            Duration::from_secs(30),
            0.0,
        );
        let serving = hall.serve("127.0.0.1:0").await.unwrap();
        let opts = RendezvousOptions {
            addr: serving.addr.to_string(),
            bind: None,
            lost_after,
            join_timeout: Duration::from_secs(5),
        };
        (serving, opts)
    }

    /// `GET /clock` through a plain socket to `addr`; true on a 200.
    fn clock_answers(addr: std::net::SocketAddr) -> bool {
        use std::io::{Read, Write};
        let Ok(mut sock) = std::net::TcpStream::connect_timeout(&addr, Duration::from_secs(5))
        else {
            return false;
        };
        let _ = sock.set_read_timeout(Some(Duration::from_secs(5)));
        let asked = sock
            .write_all(b"GET /clock HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            .is_ok();
        let mut answer = String::new();
        let _ = sock.read_to_string(&mut answer);
        asked && answer.starts_with("HTTP/1.1 200")
    }

    /// The bind `qexp kube` writes, `[::]:PORT`, reaches shard 0 over IPv4
    /// and, where the host has IPv6, over IPv6: an IPv6-only cluster's
    /// shards get through as a dual-stack one's do.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_wildcard_bind_is_reached_over_ipv4_and_ipv6() {
        let hall = Hall::new(
            2,
            "R",
            "0123456789abcdef",
            Duration::from_secs(30),
            Duration::from_secs(30),
            0.0,
        );
        let serving = hall.serve("[::]:0").await.unwrap();
        let port = serving.addr.port();
        let v4 = std::net::SocketAddr::from(([127, 0, 0, 1], port));
        let answered = tokio::task::spawn_blocking(move || clock_answers(v4))
            .await
            .unwrap();
        assert!(answered, "no answer at {v4}");
        let host_has_ipv6 = std::net::TcpListener::bind("[::1]:0").is_ok();
        if host_has_ipv6 {
            assert!(serving.addr.is_ipv6(), "{}", serving.addr);
            let v6 = std::net::SocketAddr::from((std::net::Ipv6Addr::LOCALHOST, port));
            let answered = tokio::task::spawn_blocking(move || clock_answers(v6))
                .await
                .unwrap();
            assert!(answered, "no answer at {v6}");
        }
    }

    /// Shard 0 admits one process per shard, of its own run only: a second
    /// process for a shard that still runs (a Kubernetes Indexed Job can
    /// start a second pod for an index), a new one for a shard declared
    /// lost and a process of another run are refused with a sentence.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn one_process_per_shard_and_only_of_this_run_is_admitted() {
        let lost_after = Duration::from_millis(600);
        let (_serving, opts) = hall(lost_after).await;
        let _zero = Member::join(&opts, &who(0, 1), 0.0).await.unwrap();
        let first = Member::join(&opts, &who(1, 2), 0.0).await.unwrap();

        let refused = |r: Result<Member, JoinError>| match r {
            Err(e @ JoinError::Refused { .. }) => e.to_string(),
            Err(e) => panic!("not refused: {e}"),
            Ok(_) => panic!("admitted"),
        };
        let twice = refused(Member::join(&opts, &who(1, 3), 0.0).await);
        assert!(
            twice.starts_with(&format!(
                "shard 1 was refused by the rendezvous at {}: ",
                opts.addr
            )) && twice.contains("shard 1 of 2 already runs in another process on host pod-2")
                && twice.contains("requests twice"),
            "{twice}"
        );
        // The same process joining again (a retry) is still itself.
        let again = Member::join(&opts, &who(1, 2), 0.0).await;
        assert!(again.is_ok(), "{:?}", again.err());

        let mut other = who(1, 4);
        other.run_id = "S".into();
        let wrong = refused(Member::join(&opts, &other, 0.0).await);
        assert!(
            wrong.contains("this rendezvous is run R (plan 0123456789ab, 2 shards), and shard 1 came for run S"),
            "{wrong}"
        );
        let mut other = who(1, 5);
        other.count = 3;
        let wrong = refused(Member::join(&opts, &other, 0.0).await);
        assert!(wrong.contains("3 shards"), "{wrong}");

        // Shard 1's first process stops. Once it is declared lost, the
        // others have gone on without it: a new process is refused too.
        drop(first);
        drop(again);
        let started = std::time::Instant::now();
        let late = loop {
            let e = refused(Member::join(&opts, &who(1, 6), 0.0).await);
            if e.contains("--resume") || started.elapsed() > Duration::from_secs(10) {
                break e;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        };
        assert!(
            late.contains("shard 1 of 2 stopped reaching the rendezvous")
                && late.contains("finish it with `qexp run --resume`"),
            "{late}"
        );
    }

    /// A shard whose run fails says so: the others stop waiting for it at
    /// once (not after `lost_after`), and its reason is theirs to record.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_shard_that_fails_is_not_waited_for() {
        let lost_after = Duration::from_secs(30);
        let (_serving, opts) = hall(lost_after).await;
        let zero = Member::join(&opts, &who(0, 1), 0.0).await.unwrap();
        let one = Member::join(&opts, &who(1, 2), 0.0).await.unwrap();
        one.leave("cannot write part: No space left on device")
            .await;
        let met = tokio::time::timeout(Duration::from_secs(5), zero.meet("t1-p0")).await;
        assert!(met.is_ok(), "shard 0 still waits for the shard that left");
        let lost = zero.lost();
        assert_eq!(lost.len(), 1, "{lost:?}");
        assert_eq!(lost[0].0, 1);
        assert!(
            lost[0].1.contains(
                "shard 1 of 2 stopped before the end: cannot write part: No space left on device"
            ),
            "{}",
            lost[0].1
        );
    }
}
