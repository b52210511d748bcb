//! The simulator's answers: healthy over many prompts and lengths, the
//! same for the same prompt, whole across chunks.

use std::sync::atomic::Ordering;

use qexp_types::AnswerShape;

use super::*;
use crate::openai::CompletionRequest;
use crate::reading::{arithmetic, seed};

/// A completion job for `prompt`, admitted to a batch of `batch`.
fn job(prompt: &str, batch: u32) -> Job {
    let req: CompletionRequest =
        serde_json::from_value(serde_json::json!({ "prompt": prompt })).unwrap();
    let job = req.into_job("m").unwrap();
    job.batch.store(batch, Ordering::Relaxed);
    job
}

const HEALTHY: Knobs = Knobs {
    loop_share: 0.0,
    wrong_share: 0.0,
    wrong_share_per_seq: 0.0,
    malformed_share: 0.0,
    malformed_share_per_seq: 0.0,
};

fn answer(prompt: &str, knobs: Knobs, n: u32) -> String {
    Answer::new(&job(prompt, 1), knobs, 0).text(0, n)
}

/// The first token of an answer, the period taken off, as a number.
fn lead(text: &str) -> Option<i128> {
    text.split_whitespace()
        .next()?
        .strip_suffix('.')?
        .parse()
        .ok()
}

#[test]
fn answers_are_healthy_over_many_prompts_and_lengths() {
    for i in 0..200 {
        let prompt = format!("prompt number {i} asks something");
        let whole = answer(&prompt, HEALTHY, 4096);
        for n in [1, 2, 3, 7, 16, 32, 100, 517, 4096] {
            let text = &whole[..whole
                .match_indices(' ')
                .nth(n)
                .map_or(whole.len(), |(i, _)| i)];
            assert_eq!(text.split_whitespace().count(), n, "one word per token");
            let shape = AnswerShape::of(text);
            assert!(!shape.loops(), "{prompt} at {n}: {shape:?}\n{text}");
            assert!(!shape.blank() && !shape.garbled(), "{prompt} at {n}");
        }
        assert!(!whole.bytes().any(|b| b.is_ascii_digit()));
        assert!(whole.starts_with(' '));
    }
}

#[test]
fn chunks_write_the_whole_answer() {
    let a = Answer::new(
        &job("What is 2 + 2?", 1),
        Knobs {
            loop_share: 1.0,
            ..HEALTHY
        },
        5,
    );
    let whole = a.text(0, 300);
    for step in [1, 2, 4, 6, 7] {
        let parts: String = (0..300)
            .step_by(step as usize)
            .map(|s| a.text(s, step.min(300 - s)))
            .collect();
        assert_eq!(parts, whole, "chunks of {step}");
    }
    assert_eq!(a.text(0, 0), "");
    assert_eq!(whole.split_whitespace().count(), 300);
}

#[test]
fn the_same_prompt_gets_the_same_answer_and_another_another() {
    let a = answer("tell me about rivers", HEALTHY, 64);
    assert_eq!(a, answer("tell me about rivers", HEALTHY, 64));
    // Batch, reasoning budget and healthy knobs change nothing of the answer.
    let j = job("tell me about rivers", 40);
    let thinking = Answer::new(&j, HEALTHY, 10);
    assert_eq!(thinking.text(10, 64), a);
    assert_ne!(thinking.text(0, 10), a[..thinking.text(0, 10).len()]);
    assert_ne!(a, answer("tell me about lakes", HEALTHY, 64));
    assert_ne!(seed(&[1, 2]), seed(&[2, 1]));
    assert_ne!(seed(&[]), seed(&[0]));
}

#[test]
fn looping_answers_loop_from_32_tokens() {
    let knobs = Knobs {
        loop_share: 1.0,
        ..HEALTHY
    };
    for i in 0..100 {
        for prompt in [format!("prompt {i}"), format!("What is {i} * 3?")] {
            for n in [32, 33, 40, 100, 4096] {
                let text = answer(&prompt, knobs, n);
                assert_eq!(text.split_whitespace().count(), n as usize);
                let shape = AnswerShape::of(&text);
                assert!(shape.loops(), "{prompt} at {n}: {shape:?}\n{text}");
            }
            // A few words of prose first.
            assert!(!answer(&prompt, knobs, 32).starts_with(" lambda"));
        }
    }
}

#[test]
fn loop_share_loops_that_share_of_prompts() {
    let knobs = Knobs {
        loop_share: 0.3,
        ..HEALTHY
    };
    let loops = (0..2000)
        .filter(|i| AnswerShape::of(&answer(&format!("p {i}"), knobs, 64)).loops())
        .count();
    assert!((520..680).contains(&loops), "{loops} of 2000");
}

#[test]
fn arithmetic_items_are_read_from_the_last_one() {
    assert_eq!(arithmetic("What is 3 + 4?"), Some(7));
    assert_eq!(arithmetic("Q: What is -12 * 3? A:"), Some(-36));
    assert_eq!(arithmetic("What is 5 - -7?"), Some(12));
    assert_eq!(arithmetic("What is 5  -  7?"), Some(-2));
    assert_eq!(
        arithmetic("What is 1 + 1? 2. What is 9 * 9? 81. What is 6 * 7?"),
        Some(42)
    );
    // The last well-formed one.
    assert_eq!(arithmetic("What is 2 + 2? What is 6 / 3?"), Some(4));
    let big = i64::MAX;
    assert_eq!(
        arithmetic(&format!("What is {big} * {big}?")),
        Some(i128::from(big) * i128::from(big))
    );
    for bad in [
        "",
        "What is",
        "What is 3 + 4",
        "What is 3+4?",
        "What is 3 + x?",
        "What is - + 4?",
        "What is 99999999999999999999 + 1?",
        "What is 3 ÷ 4?",
        "what is 3 + 4?",
    ] {
        assert_eq!(arithmetic(bad), None, "{bad:?}");
    }
}

#[test]
fn an_arithmetic_answer_leads_with_the_number() {
    let text = answer("Be brief. What is 6 * -7?", HEALTHY, 20);
    assert!(text.starts_with(" -42. "), "{text}");
    assert_eq!(text.split_whitespace().count(), 20);
    assert!(!text[6..].bytes().any(|b| b.is_ascii_digit()), "{text}");
    assert_eq!(answer("What is 6 * 7?", HEALTHY, 1), " 42.");
    // After the reasoning, the answer's first word.
    let a = Answer::new(&job("What is 1 - 3?", 1), HEALTHY, 8);
    assert!(!a.text(0, 8).bytes().any(|b| b.is_ascii_digit()));
    assert!(a.text(8, 2).starts_with(" -2. "));
    let wrong = Knobs {
        wrong_share: 1.0,
        ..HEALTHY
    };
    assert_eq!(lead(&answer("What is 6 * 7?", wrong, 5)), Some(43));
}

#[test]
fn malformed_tool_calls_grow_with_the_batch() {
    let knobs = Knobs {
        malformed_share_per_seq: 0.02,
        ..HEALTHY
    };
    let tools = serde_json::json!([{"type": "function", "function": {"name": "f",
        "parameters": {"type": "object", "properties": {"x": {"type": "string"}}}}}]);
    let malformed_at = |batch: u32| -> usize {
        (0..500)
            .filter(|i| {
                let mut j = job(&format!("Call it, {i}."), batch);
                j.form = crate::form::Form::of(Some(&tools), None, None);
                let a = Answer::new(&j, knobs, 0);
                assert_eq!(a.tool(), Some("f"));
                serde_json::from_str::<serde_json::Value>(&a.text(0, 40)).is_err()
            })
            .count()
    };
    assert_eq!(malformed_at(1), 0, "alone: malformed_share, 0");
    let (at11, at33) = (malformed_at(11), malformed_at(33));
    // 20% and 64% of 500.
    assert!((70..130).contains(&at11), "{at11}");
    assert!((280..360).contains(&at33), "{at33}");
}

#[test]
fn wrong_answers_grow_with_the_batch() {
    let knobs = Knobs {
        wrong_share: 0.0,
        wrong_share_per_seq: 0.01,
        ..HEALTHY
    };
    let wrong_at = |batch: u32| -> Vec<bool> {
        (0..1000)
            .map(|i| {
                let j = job(&format!("Item {i}. What is {i} + 1?"), batch);
                let text = Answer::new(&j, knobs, 0).text(0, 4);
                lead(&text) != Some(i128::from(i) + 1)
            })
            .collect()
    };
    let (one, eleven, many) = (wrong_at(1), wrong_at(11), wrong_at(64));
    let count = |v: &[bool]| v.iter().filter(|&&w| w).count();
    assert_eq!(count(&one), 0, "alone: wrong_share, 0");
    assert!((60..140).contains(&count(&eleven)), "{}", count(&eleven));
    assert!((560..700).contains(&count(&many)), "{}", count(&many));
    // The same prompt wrong at 11 is wrong at 64 too.
    assert!(eleven.iter().zip(&many).all(|(e, m)| !e || *m));
    // An unset batch counts as one; a share past 1 is every answer.
    assert_eq!(count(&wrong_at(0)), 0);
    let all = Knobs {
        wrong_share: 2.0,
        ..knobs
    };
    assert_eq!(lead(&answer("What is 1 + 1?", all, 3)), Some(3));
}

/// A completion job for `prompt` that asks for 48 tokens, `ignore_eos` as given.
fn capped(prompt: &str, ignore_eos: bool) -> Job {
    let req: CompletionRequest = serde_json::from_value(
        serde_json::json!({ "prompt": prompt, "max_tokens": 48, "ignore_eos": ignore_eos }),
    )
    .unwrap();
    req.into_job("m").unwrap()
}

#[test]
fn stop_share_ends_that_share_of_answers_early_unless_ignore_eos_or_a_form() {
    let prompts: Vec<String> = (0..400)
        .map(|i| format!("question number {i} please"))
        .collect();
    let mut lengths = Vec::new();
    for p in &prompts {
        let mut j = capped(p, false);
        j.stop_early(0.6);
        assert_eq!(j.stopped, j.max_tokens < 48, "{p}");
        assert!((1..=48).contains(&j.max_tokens), "{p}: {}", j.max_tokens);
        let mut again = capped(p, false);
        again.stop_early(0.6);
        assert_eq!(
            again.max_tokens, j.max_tokens,
            "the same prompt, the same length"
        );
        let mut forced = capped(p, true);
        forced.stop_early(0.6);
        assert_eq!((forced.max_tokens, forced.stopped), (48, false), "{p}");
        let mut form = capped(p, false);
        form.form = crate::form::Form::of(
            Some(
                &serde_json::json!([{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}]),
            ),
            None,
            None,
        );
        assert!(form.form.is_some(), "a request with tools asks for a call");
        form.stop_early(1.0);
        assert_eq!((form.max_tokens, form.stopped), (48, false), "{p}");
        let mut never = capped(p, false);
        never.stop_early(0.0);
        assert_eq!((never.max_tokens, never.stopped), (48, false), "{p}");
        lengths.push(j.max_tokens);
    }
    let stopped: Vec<u32> = lengths.iter().copied().filter(|&n| n < 48).collect();
    let share = stopped.len() as f64 / lengths.len() as f64;
    assert!((share - 0.6).abs() < 0.08, "{share}");
    // Uniform from 1 to 47: both thirds of the range are taken.
    assert!(stopped.iter().any(|&n| n <= 15) && stopped.iter().any(|&n| n >= 33));
    let mean = stopped.iter().map(|&n| f64::from(n)).sum::<f64>() / stopped.len() as f64;
    assert!((mean - 24.0).abs() < 3.0, "{mean}");
}
