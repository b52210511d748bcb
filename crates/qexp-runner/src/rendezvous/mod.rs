//! Where the shards of a run meet (`--rendezvous HOST:PORT`): shard 0
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

pub(crate) mod hall;
pub(crate) mod member;
pub(crate) mod wire;
