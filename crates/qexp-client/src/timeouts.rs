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
    /// Sent → first byte of the response body (queueing and prefill included).
    pub first_byte: Duration,
    /// The longest silence between two reads of the body, after its first byte.
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
                format!("no response byte within the first-byte timeout ({s} s)")
            }
            ErrorClass::IdleTimeout => {
                format!("the stream was silent longer than the idle timeout ({s} s)")
            }
            _ => format!("the request did not finish within the total timeout ({s} s)"),
        }
    }
}
