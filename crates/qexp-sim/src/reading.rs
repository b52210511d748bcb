//! What the simulator reads in a prompt: its seed (a hash of its token
//! ids, from which every answer and decision is drawn) and the arithmetic
//! item it asks, if any.

/// A request's seed: FNV-1a over its prompt's token ids, chat template
/// included.
pub(crate) fn seed(ids: &[u32]) -> u64 {
    ids.iter().fold(0xcbf2_9ce4_8422_2325, |h, &id| {
        (h ^ u64::from(id)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

/// The correct result of the last `What is <int> <op> <int>?` in `text`
/// (op one of `+`, `-`, `*`; an int is `-`? then digits and fits an i64;
/// spaces as written, one or more); None when there is none.
pub(crate) fn arithmetic(text: &str) -> Option<i128> {
    const ASK: &str = "What is";
    let starts: Vec<usize> = text.match_indices(ASK).map(|(i, _)| i).collect();
    starts
        .iter()
        .rev()
        .find_map(|&i| item(&text[i + ASK.len()..]))
}

/// Reads ` <int> <op> <int>?` at the start of `rest`.
fn item(rest: &str) -> Option<i128> {
    let rest = spaces(rest)?;
    let (a, rest) = int(rest)?;
    let rest = spaces(rest)?;
    let op = rest.chars().next()?;
    let rest = spaces(&rest[op.len_utf8()..])?;
    let (b, rest) = int(rest)?;
    if !rest.starts_with('?') {
        return None;
    }
    match op {
        '+' => Some(a + b),
        '-' => Some(a - b),
        '*' => Some(a * b),
        _ => None,
    }
}

/// `rest` after one or more spaces; None without one.
fn spaces(rest: &str) -> Option<&str> {
    let trimmed = rest.trim_start_matches(' ');
    (trimmed.len() < rest.len()).then_some(trimmed)
}

/// An integer at the start of `rest` (`-12`), and what follows it.
fn int(rest: &str) -> Option<(i128, &str)> {
    let digits_from = usize::from(rest.starts_with('-'));
    let len = digits_from
        + rest[digits_from..]
            .bytes()
            .take_while(u8::is_ascii_digit)
            .count();
    if len == digits_from {
        return None;
    }
    let n: i64 = rest[..len].parse().ok()?;
    Some((i128::from(n), &rest[len..]))
}
