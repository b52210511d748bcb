//! Bounded, seeded random tests of the SSE parser (run by `cargo test`, so
//! CI runs them): any bytes a server sends, split anywhere by the network,
//! give the same events, the same noted faults and the same beginning as
//! the bytes read whole — and never a panic.

use qexp_client::parse_usage;
use qexp_client::sse::{SseEvent, SseParser};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

/// Cases per property: bounded, so `cargo test` runs them in CI quickly.
const CASES: u64 = 3000;

fn parse(pieces: &[&[u8]]) -> (Vec<SseEvent>, bool, bool, bool) {
    let mut p = SseParser::new();
    let mut out = Vec::new();
    for piece in pieces {
        p.feed(piece, |e| out.push(SseEvent::from(e)));
    }
    p.finish(|e| out.push(SseEvent::from(e)));
    (
        out,
        p.saw_invalid_utf8(),
        p.saw_oversized_line(),
        p.has_begun(),
    )
}

/// Bytes that look like an event stream often enough to reach every branch.
fn streamish(rng: &mut StdRng) -> Vec<u8> {
    const PIECES: &[&[u8]] = &[
        b"data: ",
        b"data:",
        b"event: error\n",
        b"error: ",
        b": keep-alive\n",
        b"id: 7\n",
        b"\n",
        b"\r\n",
        b"\r",
        b"[DONE]",
        "{\"choices\":[{\"delta\":{\"content\":\"é\"}}]}".as_bytes(),
        b"{\"usage\":{\"completion_tokens\":3}}",
        &[0xff, 0xfe],
        &[0xc3],
    ];
    let mut out = Vec::new();
    for _ in 0..rng.random_range(0..40) {
        if rng.random_bool(0.8) {
            out.extend_from_slice(PIECES[rng.random_range(0..PIECES.len())]);
        } else {
            for _ in 0..rng.random_range(0..16) {
                out.push(rng.random());
            }
        }
    }
    out
}

#[test]
fn any_split_gives_the_same_events() {
    let mut rng = StdRng::seed_from_u64(11);
    for _ in 0..CASES {
        let bytes = streamish(&mut rng);
        let whole = parse(&[&bytes]);
        let mut cuts: Vec<usize> = (0..rng.random_range(0..6))
            .map(|_| rng.random_range(0..=bytes.len()))
            .collect();
        cuts.sort_unstable();
        let mut pieces = Vec::new();
        let mut start = 0;
        for c in cuts {
            pieces.push(&bytes[start..c]);
            start = c;
        }
        pieces.push(&bytes[start..]);
        assert_eq!(parse(&pieces), whole, "input {bytes:?}");
    }
}

#[test]
fn arbitrary_bytes_never_panic() {
    let mut rng = StdRng::seed_from_u64(12);
    for _ in 0..CASES {
        let len = rng.random_range(0..2048);
        let bytes: Vec<u8> = (0..len).map(|_| rng.random()).collect();
        let (events, ..) = parse(&[&bytes]);
        for e in events {
            if let Ok(v) = serde_json::from_str::<serde_json::Value>(&e.data) {
                let _ = parse_usage(&v);
            }
        }
    }
}

#[test]
fn usage_of_any_shape_is_read_without_panic() {
    let mut rng = StdRng::seed_from_u64(13);
    for _ in 0..CASES {
        let prompt = match rng.random_range(0..4) {
            0 => serde_json::Value::Null,
            1 => serde_json::Value::from(rng.random::<i64>()),
            2 => serde_json::Value::from(f64::from_bits(rng.random::<u64>())),
            _ => serde_json::Value::from("12"),
        };
        let completion: u64 = rng.random();
        let v = serde_json::json!({"prompt_tokens": prompt, "completion_tokens": completion, "prompt_tokens_details": {"cached_tokens": -1}});
        let u = parse_usage(&v);
        assert_eq!(
            u.completion_tokens,
            Some(completion.min(u64::from(u32::MAX)) as u32)
        );
        assert_eq!(u.cached_tokens, None);
    }
}
