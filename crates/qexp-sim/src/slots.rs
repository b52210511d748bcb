//! The engine's batch slots, handed out by priority: a request that waits
//! for a slot is admitted before every waiting request of a higher
//! `priority` value (vLLM's semantics: lower is served first), and in
//! arrival order among equals — so a workload without priorities is served
//! first come first served, as before. A running sequence is never
//! preempted for a waiting one.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use tokio::sync::oneshot;

/// `max_batch` slots and the requests waiting for one.
#[derive(Debug)]
pub(crate) struct Slots {
    capacity: usize,
    state: Mutex<State>,
}

#[derive(Debug)]
struct State {
    free: usize,
    /// Arrivals so far: ties in priority go by arrival.
    tickets: u64,
    /// Waiting requests by (priority, arrival), each to be handed its slot.
    waiting: BTreeMap<(i64, u64), oneshot::Sender<Slot>>,
}

/// A held slot; dropping it hands it to the first waiting request, or frees it.
#[derive(Debug)]
pub(crate) struct Slot {
    slots: Option<Arc<Slots>>,
}

impl Slots {
    /// `capacity` free slots.
    pub(crate) fn new(capacity: usize) -> Arc<Slots> {
        Arc::new(Slots {
            capacity,
            state: Mutex::new(State {
                free: capacity,
                tickets: 0,
                waiting: BTreeMap::new(),
            }),
        })
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Slots held now.
    pub(crate) fn held(&self) -> usize {
        self.capacity.saturating_sub(self.state().free)
    }

    /// A slot at once, when one is free and nobody waits for one.
    pub(crate) fn try_acquire(self: &Arc<Self>) -> Option<Slot> {
        let mut s = self.state();
        (s.free > 0 && s.waiting.is_empty()).then(|| {
            s.free -= 1;
            Slot {
                slots: Some(Arc::clone(self)),
            }
        })
    }

    /// A slot, once every request waiting ahead of this `priority` has had one.
    pub(crate) async fn acquire(self: &Arc<Self>, priority: i64) -> Option<Slot> {
        let rx = {
            let mut s = self.state();
            if s.free > 0 && s.waiting.is_empty() {
                s.free -= 1;
                return Some(Slot {
                    slots: Some(Arc::clone(self)),
                });
            }
            let (tx, rx) = oneshot::channel();
            let ticket = s.tickets;
            s.tickets += 1;
            s.waiting.insert((priority, ticket), tx);
            rx
        };
        // A waiter that leaves drops its receiver; a slot already sent to
        // it is dropped with it and so passes on.
        rx.await.ok()
    }

    /// Hands a released slot to the first waiting request still there, or frees it.
    fn release(self: &Arc<Self>) {
        loop {
            let next = {
                let mut s = self.state();
                match s.waiting.pop_first() {
                    Some((_, tx)) => tx,
                    None => {
                        s.free += 1;
                        return;
                    }
                }
            };
            let slot = Slot {
                slots: Some(Arc::clone(self)),
            };
            match next.send(slot) {
                Ok(()) => return,
                // That waiter left: the slot goes to the next one.
                Err(mut slot) => slot.slots = None,
            }
        }
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        if let Some(slots) = self.slots.take() {
            slots.release();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_waiting_high_priority_request_goes_first() {
        let slots = Slots::new(1);
        let held = slots.try_acquire().expect("a free slot");
        assert!(slots.try_acquire().is_none());
        let (a, b) = (Arc::clone(&slots), Arc::clone(&slots));
        let low = tokio::spawn(async move { a.acquire(5).await.map(|s| (5, s)) });
        tokio::task::yield_now().await;
        let high = tokio::spawn(async move { b.acquire(-1).await.map(|s| (-1, s)) });
        tokio::task::yield_now().await;
        while slots.state().waiting.len() < 2 {
            tokio::task::yield_now().await;
        }
        drop(held);
        let (first, slot) = high.await.unwrap().expect("a slot");
        assert_eq!(first, -1, "the lower value is served first");
        assert_eq!(slots.held(), 1);
        drop(slot);
        let (second, slot) = low.await.unwrap().expect("a slot");
        assert_eq!(second, 5);
        drop(slot);
        assert_eq!(slots.held(), 0);
    }

    #[tokio::test]
    async fn a_slot_sent_to_a_waiter_that_left_passes_on() {
        let slots = Slots::new(1);
        let held = slots.try_acquire().expect("a free slot");
        let a = Arc::clone(&slots);
        let gone = tokio::spawn(async move { a.acquire(0).await });
        while slots.state().waiting.is_empty() {
            tokio::task::yield_now().await;
        }
        gone.abort();
        let _ = gone.await;
        drop(held);
        assert_eq!(slots.held(), 0, "nobody holds the slot");
        assert!(slots.try_acquire().is_some());
    }
}
