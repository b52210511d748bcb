//! Waiting for a scheduled send without oversleeping. tokio's timer wheel
//! has 1 ms granularity and rounds up, so a plain `sleep_until` sends late by
//! up to a millisecond or more; at 1,000 req/s that is a whole gap. The
//! precise timer sleeps to just before the deadline and then yields until
//! the clock reaches it: never early, late only by a scheduling slice.

use std::time::Duration;
use tokio::time::Instant;

/// How far before a deadline the precise timer stops sleeping and starts
/// yielding: above the timer wheel's rounding, so the sleep never overshoots.
pub const SPIN_WINDOW: Duration = Duration::from_micros(2_000);

/// How a scheduler waits for a send time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Timer {
    /// Sleep, then yield until the deadline (real runs).
    Precise,
    /// tokio's `sleep_until` alone (tests on a paused clock, where yielding
    /// would never let time advance).
    Coarse,
}

impl Timer {
    /// Returns at `deadline` or as soon after it as the runtime allows; never before.
    pub async fn until(self, deadline: Instant) {
        match self {
            Timer::Coarse => tokio::time::sleep_until(deadline).await,
            Timer::Precise => loop {
                let now = Instant::now();
                if now >= deadline {
                    return;
                }
                if deadline - now > SPIN_WINDOW {
                    tokio::time::sleep_until(deadline - SPIN_WINDOW).await;
                } else {
                    tokio::task::yield_now().await;
                }
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Lateness of `n` waits spaced `gap` apart, sorted.
    async fn lateness(timer: Timer, n: u32, gap: Duration) -> Vec<Duration> {
        let start = Instant::now() + Duration::from_millis(5);
        let mut late = Vec::new();
        for i in 0..n {
            let due = start + gap * i;
            timer.until(due).await;
            let now = Instant::now();
            assert!(now >= due, "woke {:?} early", due - now);
            late.push(now - due);
        }
        late.sort();
        late
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn precise_timer_is_never_early_and_later_less_than_tokios() {
        // 200 sends at 3 ms spacing: every one needs a sleep (and a spin).
        let gap = Duration::from_millis(3);
        let precise = lateness(Timer::Precise, 200, gap).await;
        let coarse = lateness(Timer::Coarse, 200, gap).await;
        let (p, c) = (precise[precise.len() / 2], coarse[coarse.len() / 2]);
        // tokio's timer rounds up to its 1 ms tick; a busy machine delays
        // both alike, so the precise timer is held to beating it.
        assert!(p < c, "median lateness: precise {p:?}, tokio alone {c:?}");
    }
}
