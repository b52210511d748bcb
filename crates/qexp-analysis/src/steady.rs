//! The steady-state window of a closed-loop (trial, point): the part of it
//! where the server holds the point's load, ramp-up and drain left out.
//!
//! A closed loop sends its `C` first requests at once, so the client's own
//! count of requests in flight is `C` from the first instant and says
//! nothing about the ramp. What ramps up is the server's: the requests it
//! is streaming (first chunk → last chunk). The window opens when that
//! count first reaches the level `⌈θ·peak⌉` (θ = [`STEADY_THETA`], `peak`
//! the most requests streamed at once, which is `C` unless the server
//! queued the rest) and closes at the last moment it falls below it
//! (vllm-bench's rule, θ·C there, with the server's count here; a dip
//! between a request's end and the next one's first chunk stays inside).
//!
//! Over the window: output tokens per second (each request's completion
//! tokens spread evenly over its stream, so a request crossing an edge
//! counts for its share inside) and the median TTFT and E2E of the requests
//! sent inside it. A window under max(10 s, 10% of the point) is short:
//! its figures rest on little of the point, and the report says so.

use crate::stats::quantile::median;
use serde::Serialize;

/// Share of the peak streaming count that opens and closes the window.
pub const STEADY_THETA: f64 = 0.9;

/// A window shorter than this, seconds, is short (whatever the point's length).
pub const SHORT_WINDOW_S: f64 = 10.0;

/// A window shorter than this share of its point is short.
pub const SHORT_WINDOW_SHARE: f64 = 0.1;

/// One successful request, as the window needs it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Stream {
    /// Sent, Unix seconds.
    pub sent: f64,
    /// Sent → first chunk, seconds.
    pub ttft: f64,
    /// Sent → last chunk, seconds.
    pub e2e: f64,
    /// Completion tokens (the server's count, else the client's).
    pub tokens: f64,
}

/// The steady-state window of one (trial, point) and what it measured.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SteadyWindow {
    /// Opens, Unix seconds.
    pub start_unix_s: f64,
    /// Closes, Unix seconds.
    pub end_unix_s: f64,
    /// Its length, seconds.
    pub window_s: f64,
    /// The point's length (first send → last completion), seconds.
    pub point_s: f64,
    /// `window_s / point_s`.
    pub share: f64,
    /// The most requests streamed at once.
    pub peak: u32,
    /// The streaming count that opens and closes it (`⌈θ·peak⌉`).
    pub level: u32,
    /// Output tokens per second over the window.
    pub tok_s: f64,
    /// Requests sent inside the window.
    pub requests: u32,
    /// Median TTFT of those requests, seconds (NaN when none).
    pub ttft_s: f64,
    /// Median E2E of those requests, seconds (NaN when none).
    pub e2e_s: f64,
    /// Under max([`SHORT_WINDOW_S`], [`SHORT_WINDOW_SHARE`] of the point).
    pub short: bool,
}

/// The window of a closed-loop (trial, point) from its successful
/// requests; None when it has none, or no stream overlaps another long
/// enough to open one.
pub fn window(streams: &[Stream]) -> Option<SteadyWindow> {
    let streams: Vec<Stream> = streams
        .iter()
        .copied()
        .filter(|s| s.sent.is_finite() && s.ttft.is_finite() && s.e2e.is_finite())
        .filter(|s| s.e2e >= s.ttft && s.ttft >= 0.0)
        .collect();
    let first_send = streams.iter().map(|s| s.sent).reduce(f64::min)?;
    let last_end = streams.iter().map(|s| s.sent + s.e2e).reduce(f64::max)?;
    let (start, end, peak, level) = open_close(&streams)?;
    let window_s = end - start;
    let point_s = last_end - first_send;
    let tokens: f64 = streams.iter().map(|s| tokens_inside(s, start, end)).sum();
    let inside: Vec<&Stream> = streams
        .iter()
        .filter(|s| s.sent >= start && s.sent <= end)
        .collect();
    let ttft: Vec<f64> = inside.iter().map(|s| s.ttft).collect();
    let e2e: Vec<f64> = inside.iter().map(|s| s.e2e).collect();
    Some(SteadyWindow {
        start_unix_s: start,
        end_unix_s: end,
        window_s,
        point_s,
        share: window_s / point_s,
        peak,
        level,
        tok_s: tokens / window_s,
        requests: inside.len() as u32,
        ttft_s: median(&ttft).unwrap_or(f64::NAN),
        e2e_s: median(&e2e).unwrap_or(f64::NAN),
        short: window_s < SHORT_WINDOW_S.max(SHORT_WINDOW_SHARE * point_s),
    })
}

/// (opens, closes, peak, level) of the streaming count, or None when it
/// never holds its level for a positive time.
fn open_close(streams: &[Stream]) -> Option<(f64, f64, u32, u32)> {
    // Ends sort before starts at the same instant: a request handing its
    // slot to the next does not count twice.
    let mut events: Vec<(f64, i32)> = streams
        .iter()
        .filter(|s| s.e2e > s.ttft)
        .flat_map(|s| [(s.sent + s.ttft, 1), (s.sent + s.e2e, -1)])
        .collect();
    events.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
    let mut count = 0i32;
    let mut peak = 0i32;
    for &(_, d) in &events {
        count += d;
        peak = peak.max(count);
    }
    let peak = u32::try_from(peak).ok().filter(|&p| p > 0)?;
    let level = ((STEADY_THETA * f64::from(peak)).ceil() as u32).max(1);
    let (mut open, mut close) = (None, None);
    let mut count = 0i64;
    for &(t, d) in &events {
        let before = count;
        count += i64::from(d);
        if before < i64::from(level) && count >= i64::from(level) && open.is_none() {
            open = Some(t);
        }
        if before >= i64::from(level) && count < i64::from(level) {
            close = Some(t);
        }
    }
    let (open, close) = (open?, close?);
    (close > open).then_some((open, close, peak, level))
}

/// The share of a request's tokens streamed inside `[start, end]`.
fn tokens_inside(s: &Stream, start: f64, end: f64) -> f64 {
    if !s.tokens.is_finite() {
        return 0.0;
    }
    let (a, b) = (s.sent + s.ttft, s.sent + s.e2e);
    if b <= a {
        return if a >= start && a <= end {
            s.tokens
        } else {
            0.0
        };
    }
    let overlap = (b.min(end) - a.max(start)).max(0.0);
    s.tokens * overlap / (b - a)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A closed loop of `c` users on a server that prefills one request at
    /// a time (`p` seconds each) and then streams `tokens` tokens over `d`
    /// seconds: `rounds` requests per user.
    fn staggered(c: u32, p: f64, d: f64, tokens: f64, rounds: u32) -> Vec<Stream> {
        let mut out = Vec::new();
        for user in 0..c {
            // The first wave queues for the prefill; after it the users are
            // staggered by `p` and never collide.
            let mut sent = 0.0;
            for round in 0..rounds {
                let ttft = if round == 0 {
                    f64::from(user + 1) * p
                } else {
                    p
                };
                out.push(Stream {
                    sent,
                    ttft,
                    e2e: ttft + d,
                    tokens,
                });
                sent += ttft + d;
            }
        }
        out
    }

    #[test]
    fn the_window_leaves_out_the_ramp_and_the_drain() {
        let (c, p, d, tokens, rounds) = (4, 0.08, 0.31, 32.0, 10);
        let w = window(&staggered(c, p, d, tokens, rounds)).unwrap();
        assert_eq!((w.peak, w.level), (4, 4));
        // Opens at the last first-wave user's first chunk.
        assert!((w.start_unix_s - 4.0 * p).abs() < 1e-9, "{w:?}");
        // Closes when user 0 ends its last request: p + 9 rounds + d.
        let close = p + 9.0 * (p + d) + d;
        assert!((w.end_unix_s - close).abs() < 1e-9, "{w:?}");
        // Over it, the steady rate: c users, `tokens` per round of p + d.
        let steady = f64::from(c) * tokens / (p + d);
        assert!(
            (w.tok_s / steady - 1.0).abs() < 0.01,
            "{} vs {steady}",
            w.tok_s
        );
        // Requests sent inside it waited only their own prefill.
        assert!((w.ttft_s - p).abs() < 1e-9);
        assert!((w.e2e_s - (p + d)).abs() < 1e-9);
        assert!(w.short, "a 3.6 s window is under 10 s");
    }

    #[test]
    fn a_queueing_server_sets_the_level_by_what_it_streams() {
        // Two streams at a time whatever the client sends.
        let streams: Vec<Stream> = (0..40)
            .map(|i| Stream {
                sent: 0.0,
                ttft: f64::from(i / 2) * 1.0,
                e2e: f64::from(i / 2) * 1.0 + 1.0,
                tokens: 10.0,
            })
            .collect();
        let w = window(&streams).unwrap();
        assert_eq!((w.peak, w.level), (2, 2));
        assert!((w.tok_s - 20.0).abs() < 1e-9, "{w:?}");
        assert!(!w.short, "a 20 s window over a 20 s point is not short");
    }

    #[test]
    fn nothing_to_hold_is_no_window() {
        assert_eq!(window(&[]), None);
        let one = Stream {
            sent: 0.0,
            ttft: 0.1,
            e2e: 0.1,
            tokens: 1.0,
        };
        assert_eq!(window(&[one]), None);
        let nan = Stream {
            sent: f64::NAN,
            ..one
        };
        assert_eq!(window(&[nan, nan]), None);
    }
}
