//! The four limits on one request's time, and which class of failure each
//! one's expiry is.

use crate::outcome::ErrorClass;
use std::time::Duration;

/// Time limits of one streamed request. Every request ends by the first
/// limit that runs out; none is retried.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timeouts {
    /// TCP (and TLS) connection set-up.
    pub connect: Duration,
    /// Sent → the stream's first event (queueing and prefill included; the
    /// keep-alive comments a server sends meanwhile do not end the wait).
    pub first_byte: Duration,
    /// The longest silence between two reads of the body, after its first event.
    pub idle: Duration,
    /// Sent → end of the stream.
    pub total: Duration,
}

impl Timeouts {
    /// The connect limit when a plan names none.
    pub const DEFAULT_CONNECT: Duration = Duration::from_secs(10);

    /// Only a total limit: the first byte and idle limits equal it.
    pub fn total(total: Duration) -> Timeouts {
        Timeouts {
            connect: Timeouts::DEFAULT_CONNECT.min(total),
            first_byte: total,
            idle: total,
            total,
        }
    }
}

/// A deadline and what its expiry means.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Limit {
    pub at: tokio::time::Instant,
    pub class: ErrorClass,
    pub after: Duration,
}

impl Limit {
    /// The earlier of two limits; the total one wins a tie, as the more general.
    pub fn earliest(total: Limit, other: Limit) -> Limit {
        if other.at < total.at {
            other
        } else {
            total
        }
    }

    /// The message of a request this limit ended.
    pub fn message(&self) -> String {
        let s = self.after.as_secs_f64();
        match self.class {
            ErrorClass::FirstByteTimeout => {
                format!("no streamed event within the first-byte timeout ({s} s)")
            }
            ErrorClass::IdleTimeout => {
                format!("the stream was silent longer than the idle timeout ({s} s)")
            }
            _ => format!("the request did not finish within the total timeout ({s} s)"),
        }
    }
}

/// The limit a stream is read against: the first-byte limit until the stream
/// begins, then the idle limit from each read, never past the total. One timer
/// serves the whole stream (registering one per read was a measurable share
/// of qexp's CPU): it is set for an earlier deadline and, when it fires
/// before the current one, re-armed for it.
pub(crate) struct StreamDeadline {
    total: Limit,
    idle: Duration,
    wait: Limit,
    timer: std::pin::Pin<Box<tokio::time::Sleep>>,
}

impl StreamDeadline {
    /// Waiting for the stream to begin.
    pub fn new(first_byte: Limit, total: Limit, idle: Duration) -> StreamDeadline {
        StreamDeadline {
            total,
            idle,
            wait: first_byte,
            timer: Box::pin(tokio::time::sleep_until(first_byte.at)),
        }
    }

    /// Resolves once the current limit has run out, with that limit.
    /// Dropping it early (another branch of a `select!` won) loses nothing.
    pub async fn expired(&mut self) -> Limit {
        loop {
            self.timer.as_mut().await;
            if tokio::time::Instant::now() >= self.wait.at {
                return self.wait;
            }
            self.timer.as_mut().reset(self.wait.at);
        }
    }

    /// A read returned at `now`: the idle limit counts from here.
    pub fn read_at(&mut self, now: std::time::Instant) {
        self.wait = Limit::earliest(
            self.total,
            Limit {
                at: tokio::time::Instant::from_std(now) + self.idle,
                class: ErrorClass::IdleTimeout,
                after: self.idle,
            },
        );
        if self.wait.at < self.timer.deadline() {
            self.timer.as_mut().reset(self.wait.at);
        }
    }
}
