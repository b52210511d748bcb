//! Bounded, seeded random tests of the plan parser (run by `cargo test`,
//! so CI runs them): whatever text a user hands qexp, it answers with a
//! plan or one error naming the file, line and column — never a panic.

use qexp_plan::{Plan, PlanError};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::path::Path;

const GOOD: &str = r#"[experiment]
name = "t"
version = 2

[target]
base_url = "http://127.0.0.1:8000"
api_key_env = "MY_KEY"
extra_body = { ignore_eos = true }

[workload]
input_tokens = 100
output_tokens = 20

[sweep]
concurrency = [1, 4]
input_tokens = [100, 200]

[run]
requests = "3x"
trials = 2

[timeouts]
first_byte_s = 30
idle_s = 5

[tolerance]
max_failed_fraction = 0.1
"#;

/// Parses `text`; a rejection must be the one-sentence, located kind.
fn check(text: &str) {
    match Plan::parse(Path::new("experiments/t.toml"), text) {
        Ok(plan) => {
            // A plan that parses also expands, hashes and resolves its limits.
            let _ = plan.points();
            let _ = plan.hash();
            let _ = plan.file.timeouts.resolve(plan.file.target.timeout_s);
        }
        Err(e @ PlanError::Invalid { line, column, .. }) => {
            let msg = e.to_string();
            assert!(msg.starts_with("experiments/t.toml:"), "{msg}");
            assert!(line >= 1 && column >= 1);
            assert!(!msg.contains('\n'), "more than one line: {msg}");
        }
        Err(e) => panic!("unexpected error kind: {e}"),
    }
}

/// Cases per property: bounded, so `cargo test` runs them in CI in well under a second.
const CASES: u64 = 2000;

/// Characters plan text is made of, plus some that break it.
const ALPHABET: &[char] = &[
    '[', ']', '{', '}', '=', '"', '\'', '.', ',', '0', '1', '9', 'a', 'x', '_', ' ', '\n', '#',
    '-', '+', 'e', '\\', '\u{0}', 'é', '\u{202e}', '\t', '\r', ':',
];

fn random_text(rng: &mut StdRng, max: usize) -> String {
    let len = rng.random_range(0..=max);
    (0..len)
        .map(|_| ALPHABET[rng.random_range(0..ALPHABET.len())])
        .collect()
}

#[test]
fn arbitrary_text_never_panics() {
    let mut rng = StdRng::seed_from_u64(1);
    for _ in 0..CASES {
        check(&random_text(&mut rng, 200));
    }
}

#[test]
fn a_good_plan_with_a_span_replaced_never_panics() {
    let mut rng = StdRng::seed_from_u64(2);
    for _ in 0..CASES {
        let mut text: Vec<char> = GOOD.chars().collect();
        let at = rng.random_range(0..text.len());
        let end = (at + rng.random_range(0..12)).min(text.len());
        let insert = random_text(&mut rng, 12);
        text.splice(at..end, insert.chars());
        check(&text.into_iter().collect::<String>());
    }
}

#[test]
fn any_value_for_a_number_key_is_answered() {
    let keys = [
        "trials",
        "requests",
        "seed",
        "input_tokens",
        "output_tokens",
        "first_byte_s",
        "idle_s",
        "max_failed_fraction",
    ];
    let mut rng = StdRng::seed_from_u64(3);
    for _ in 0..CASES {
        let key = keys[rng.random_range(0..keys.len())];
        let value = match rng.random_range(0..6) {
            0 => rng.random::<i64>().to_string(),
            1 => format!("{:?}", f64::from_bits(rng.random::<u64>())),
            2 => "nan".to_string(),
            3 => "-inf".to_string(),
            4 => format!("\"{}x\"", rng.random::<i32>()),
            _ => "[]".to_string(),
        };
        let text: String = GOOD
            .lines()
            .map(|l| {
                if l.starts_with(&format!("{key} =")) {
                    format!("{key} = {value}")
                } else {
                    l.to_string()
                }
            })
            .collect::<Vec<_>>()
            .join("\n");
        check(&text);
    }
}

#[test]
fn the_fixture_itself_parses() {
    let plan = Plan::parse(Path::new("experiments/t.toml"), GOOD).unwrap();
    assert_eq!(plan.points().len(), 4);
    let t = plan.file.timeouts.resolve(plan.file.target.timeout_s);
    assert_eq!(t.first_byte.as_secs(), 30);
    assert_eq!(t.idle.as_secs(), 5);
    assert!(plan.file.tolerance.exceeded(2, 10));
}

/// Whatever the limits say, they resolve to durations a deadline can hold:
/// a timeout the plan does not bound (here `target.timeout_s` given in code)
/// is held to a week.
#[test]
fn limits_resolve_to_at_most_a_week() {
    let plan = Plan::parse(Path::new("experiments/t.toml"), GOOD).unwrap();
    for huge in [1e20, f64::INFINITY, f64::MAX] {
        let t = plan.file.timeouts.resolve(huge);
        assert_eq!(t.total.as_secs(), 7 * 24 * 3600, "{huge}");
        assert!(t.first_byte <= t.total && t.idle <= t.total);
    }
}

#[test]
fn bad_limits_are_located() {
    for (from, to, key) in [
        ("idle_s = 5", "idle_s = 0", "timeouts.idle_s"),
        (
            "first_byte_s = 30",
            "first_byte_s = nan",
            "timeouts.first_byte_s",
        ),
        (
            "max_failed_fraction = 0.1",
            "max_failed_fraction = 1.5",
            "tolerance.max_failed_fraction",
        ),
        ("idle_s = 5", "idle = 5", "idle"),
        // Past a week a deadline would overflow the clock (it panicked).
        ("idle_s = 5", "idle_s = 1e20", "timeouts.idle_s"),
        (
            "first_byte_s = 30",
            "first_byte_s = inf",
            "timeouts.first_byte_s",
        ),
    ] {
        let e = Plan::parse(Path::new("experiments/t.toml"), &GOOD.replace(from, to))
            .unwrap_err()
            .to_string();
        assert!(e.contains(key), "{e}");
        assert!(!e.starts_with("experiments/t.toml:0"), "{e}");
    }
}
