//! The engine's deadlines: what falls due, and when.

use super::SeqId;
use std::cmp::Ordering;

/// Something due at an instant.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Due {
    /// A request's latency is spent: it asks for a slot.
    Ready(SeqId),
    /// A prefill ends on the separate schedule (its unit frees).
    PrefillDone(SeqId),
    /// A sequence's decode step ends on the separate schedule.
    Chunk(SeqId),
    /// The mixed step in progress ends.
    StepEnd,
    /// An idle mixed engine's intake window closes (its generation: a
    /// window extended since is due later).
    Wake(u64),
}

/// A deadline in the engine's queue: ties go in the order they were set.
#[derive(Debug, Clone, Copy)]
pub(super) struct Timer {
    pub(super) at: f64,
    pub(super) order: u64,
    pub(super) due: Due,
}

impl PartialEq for Timer {
    fn eq(&self, o: &Self) -> bool {
        self.cmp(o) == Ordering::Equal
    }
}
impl Eq for Timer {}
impl PartialOrd for Timer {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Timer {
    // Earliest first in a max-heap; ties in the order they were set.
    fn cmp(&self, o: &Self) -> Ordering {
        o.at.total_cmp(&self.at).then(o.order.cmp(&self.order))
    }
}
