//! Graded items for accuracy under load: a prompt, its expected answer and
//! the grader that decides whether a model's answer matches. Items come from
//! a seeded arithmetic set qexp generates itself ([`arithmetic`]) or from the
//! user's JSONL file ([`read_jsonl`]). This module decides right or wrong for
//! one answer; counting, intervals and comparisons belong to qexp-analysis.

use serde::{Deserialize, Serialize};
use std::collections::{HashMap, HashSet};
use std::ops::Range;
use std::path::{Path, PathBuf};

/// How an answer is compared with the expected one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Grader {
    /// Equal text, ignoring ASCII case, surrounding white space and one trailing period.
    Exact,
    /// The first number in the answer equals the expected number (within 1e-9 relative).
    Number,
    /// The expected text is a regular expression that matches somewhere in the answer.
    Regex,
    /// The first standalone option letter A–J in the answer is the expected letter.
    Choice,
}

/// One graded item: what is asked, what counts as right, and how it is judged.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
pub struct Item {
    /// Unique within its set; names the item in results.
    pub id: String,
    /// The prompt sent to the model.
    pub prompt: String,
    /// The expected answer, in the grader's terms (text, number, regex or letter).
    pub expected: String,
    /// How the answer is judged.
    pub grader: Grader,
}

impl Item {
    /// Whether `answer` is right for this item.
    pub fn grade(&self, answer: &str) -> bool {
        self.grader.grade(answer, &self.expected)
    }
}

/// Relative tolerance of [`Grader::Number`], so that "0.1" and "0.10000000001" agree.
const NUMBER_REL_TOL: f64 = 1e-9;

impl Grader {
    /// Whether `answer` is right given `expected`.
    ///
    /// False whenever `expected` is unusable (see [`Grader::check_expected`]):
    /// an invalid regex grades every answer wrong rather than panicking.
    pub fn grade(&self, answer: &str, expected: &str) -> bool {
        match self {
            Grader::Exact => {
                let want = exact_form(expected);
                !want.is_empty() && exact_form(answer).eq_ignore_ascii_case(want)
            }
            Grader::Number => match (whole_number(expected), first_number(answer)) {
                (Some(want), Some((got, _))) => {
                    (got - want).abs() <= NUMBER_REL_TOL * got.abs().max(want.abs())
                }
                _ => false,
            },
            Grader::Regex => regex::Regex::new(expected).is_ok_and(|re| re.is_match(answer)),
            Grader::Choice => match (choice_expected(expected), first_choice(answer)) {
                (Some(want), Some(got)) => want == got,
                _ => false,
            },
        }
    }

    /// Why `expected` can never be graded right under this grader, in one sentence; Ok when it can.
    pub fn check_expected(&self, expected: &str) -> Result<(), String> {
        match self {
            Grader::Exact if exact_form(expected).is_empty() => {
                Err("the expected answer is empty".into())
            }
            Grader::Number if whole_number(expected).is_none() => Err(format!(
                "the expected answer {expected:?} is not a number (digits, an optional minus \
                 sign, \"1,234\" separators and a decimal point)"
            )),
            Grader::Regex => match regex::Regex::new(expected) {
                Ok(_) => Ok(()),
                Err(e) => Err(format!(
                    "the expected answer is not a valid regex: {}",
                    one_line(&e.to_string())
                )),
            },
            Grader::Choice if choice_expected(expected).is_none() => Err(format!(
                "the expected answer {expected:?} is not one option letter A-J"
            )),
            _ => Ok(()),
        }
    }
}

/// The text [`Grader::Exact`] compares: trimmed, without one trailing period.
fn exact_form(s: &str) -> &str {
    let s = s.trim();
    s.strip_suffix('.').map_or(s, str::trim_end)
}

fn is_minus(c: char) -> bool {
    // U+2212 is the typographic minus some models write.
    c == '-' || c == '\u{2212}'
}

/// The first number in `s` and its byte range (sign included): digits with
/// optional "1,234" groups, an optional fraction, and a minus sign directly
/// before the digits unless a letter or digit precedes it (a hyphen, as in
/// "COVID-19"). No exponents: "1e5" reads as 1.
fn first_number(s: &str) -> Option<(f64, Range<usize>)> {
    let chars: Vec<(usize, char)> = s.char_indices().collect();
    let at = |i: usize| chars.get(i).map(|&(_, c)| c);
    let start = chars.iter().position(|&(_, c)| c.is_ascii_digit())?;
    let negative = start >= 1
        && at(start - 1).is_some_and(is_minus)
        && (start < 2 || at(start - 2).is_some_and(|c| !c.is_alphanumeric()));
    let digits_from = |mut i: usize| {
        while at(i).is_some_and(|c| c.is_ascii_digit()) {
            i += 1;
        }
        i
    };
    let mut end = digits_from(start);
    let mut text: String = chars[start..end].iter().map(|&(_, c)| c).collect();
    // A comma is a thousands separator only before exactly three digits.
    while at(end) == Some(',') && digits_from(end + 1) == end + 4 {
        text.extend(chars[end + 1..end + 4].iter().map(|&(_, c)| c));
        end += 4;
    }
    if at(end) == Some('.') && at(end + 1).is_some_and(|c| c.is_ascii_digit()) {
        let frac_end = digits_from(end + 1);
        text.extend(chars[end..frac_end].iter().map(|&(_, c)| c));
        end = frac_end;
    }
    let value: f64 = text.parse().ok()?;
    let from = if negative { start - 1 } else { start };
    let byte = |i: usize| chars.get(i).map_or(s.len(), |&(b, _)| b);
    Some((if negative { -value } else { value }, byte(from)..byte(end)))
}

/// `s` (trimmed) when it is one number and nothing else.
fn whole_number(s: &str) -> Option<f64> {
    let s = s.trim();
    let (value, range) = first_number(s)?;
    (range == (0..s.len())).then_some(value)
}

fn is_choice(c: char) -> bool {
    ('A'..='J').contains(&c)
}

/// The expected option letter: one letter A–J, either case, white space around allowed.
fn choice_expected(s: &str) -> Option<char> {
    let mut chars = s.trim().chars();
    let c = chars.next()?.to_ascii_uppercase();
    (chars.next().is_none() && is_choice(c)).then_some(c)
}

/// The first capital A–J with no letter or digit on either side ("B", "(B)",
/// "Answer: B."), skipping "I" and "A" where they read as English words: a
/// contraction ("I'm") or a following lowercase word other than "is", "and",
/// "or" ("I think B", "A good choice is C"; but "A is correct" is option A).
fn first_choice(answer: &str) -> Option<char> {
    let chars: Vec<char> = answer.chars().collect();
    let at = |i: usize| chars.get(i).copied();
    let word_char = |c: Option<char>| c.is_some_and(char::is_alphanumeric);
    (0..chars.len()).find_map(|i| {
        let c = chars[i];
        let standalone = is_choice(c) && !word_char(at(i + 1)) && (i == 0 || !word_char(at(i - 1)));
        if !standalone {
            return None;
        }
        if c == 'I' || c == 'A' {
            let contraction = matches!(at(i + 1), Some('\'' | '\u{2019}')) && word_char(at(i + 2));
            let next_word: String = chars[(i + 2).min(chars.len())..]
                .iter()
                .take_while(|c| c.is_alphanumeric())
                .collect();
            let prose = at(i + 1) == Some(' ')
                && next_word.starts_with(|c: char| c.is_lowercase())
                && !matches!(next_word.as_str(), "is" | "and" | "or");
            if contraction || prose {
                return None;
            }
        }
        Some(c)
    })
}

/// Collapses an error's lines into one, for a message that names its line.
fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// SplitMix64 (Steele, Lea & Flood, OOPSLA 2014), written out rather than
/// taken from `rand`, whose generators may change between releases: a set's
/// items must stay the same for the same seed in every qexp version.
struct SplitMix(u64);

impl SplitMix {
    fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A draw in `lo..=hi` (Lemire's multiply-shift; bias below 2^-57 here).
    fn in_range(&mut self, lo: i64, hi: i64) -> i64 {
        let span = (hi - lo + 1) as u128;
        lo + ((u128::from(self.next_u64()) * span) >> 64) as i64
    }
}

/// Operands of [`arithmetic`]: two-digit for `+` and `-`, one or two digits for `*`.
const ADD_SUB: (i64, i64) = (10, 99);
const MUL: (i64, i64) = (2, 99);
/// How many distinct prompts [`arithmetic`] can write; past this it repeats some.
const DISTINCT: usize = 2 * 90 * 90 + 98 * 98;

/// `count` seeded arithmetic items, "What is 47 - 85? Answer with the number only."
///
/// Graded [`Grader::Number`], ids `arith-{seed}-{i}` with i from 0; the same
/// (count, seed) gives the same items, and a shorter set is a prefix of a
/// longer one. The operator is `+`, `-` or `*` with equal chance; operands are
/// never negative, results of `-` may be. No prompt repeats until all 25,804
/// possible ones are used.
pub fn arithmetic(count: usize, seed: u64) -> Vec<Item> {
    let mut rng = SplitMix(seed ^ 0x6172_6974_686d_6574);
    let mut seen = HashSet::new();
    let mut items = Vec::with_capacity(count);
    while items.len() < count {
        let (op, (lo, hi)) = match rng.in_range(0, 2) {
            0 => ('+', ADD_SUB),
            1 => ('-', ADD_SUB),
            _ => ('*', MUL),
        };
        let (a, b) = (rng.in_range(lo, hi), rng.in_range(lo, hi));
        if seen.len() < DISTINCT && !seen.insert((a, op, b)) {
            continue;
        }
        let result = match op {
            '+' => a + b,
            '-' => a - b,
            _ => a * b,
        };
        items.push(Item {
            id: format!("arith-{seed}-{}", items.len()),
            prompt: format!("What is {a} {op} {b}? Answer with the number only."),
            expected: result.to_string(),
            grader: Grader::Number,
        });
    }
    items
}

/// Why a graded-items file could not be used; names the file and line.
#[derive(Debug, thiserror::Error)]
pub enum GradeError {
    /// The file could not be read.
    #[error("cannot read graded items {}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// A line is not a valid item.
    #[error("{}:{line}: {message}", path.display())]
    Line {
        /// The file.
        path: PathBuf,
        /// 1-based line.
        line: usize,
        /// What is wrong.
        message: String,
    },
    /// The file holds no item.
    #[error("{}: the file holds no graded items", path.display())]
    Empty {
        /// The file.
        path: PathBuf,
    },
}

/// A string or a number in the file, kept as the text the user wrote.
#[derive(Deserialize)]
#[serde(untagged)]
enum TextOrNumber {
    Text(String),
    Number(serde_json::Number),
}

impl TextOrNumber {
    fn into_text(self) -> String {
        match self {
            TextOrNumber::Text(s) => s,
            TextOrNumber::Number(n) => n.to_string(),
        }
    }
}

/// One line of the JSONL file.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct JsonlItem {
    id: Option<TextOrNumber>,
    prompt: String,
    answer: TextOrNumber,
    grader: Option<Grader>,
}

/// Reads graded items from a JSONL file of the user's, one object a line.
///
/// A line reads `{"id": "q1", "prompt": "...", "answer": "...", "grader": "number"}`.
/// `id` defaults to the 1-based line number and `grader` to `default_grader`;
/// `answer` may be a JSON number. Blank lines are skipped. Rejected with the
/// line: malformed JSON, unknown keys, an empty prompt, a repeated id, and an
/// answer its grader cannot match (not a number, an invalid regex, not a
/// letter A–J, empty).
pub fn read_jsonl(path: &Path, default_grader: Grader) -> Result<Vec<Item>, GradeError> {
    let bytes = std::fs::read(path).map_err(|source| GradeError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    let line_error = |line: usize, message: String| GradeError::Line {
        path: path.to_path_buf(),
        line,
        message,
    };
    let text = String::from_utf8(bytes).map_err(|e| {
        let valid = &e.as_bytes()[..e.utf8_error().valid_up_to()];
        let line = 1 + valid.iter().filter(|&&b| b == b'\n').count();
        line_error(line, "not UTF-8 text".into())
    })?;
    let mut items = Vec::new();
    let mut first_line_of: HashMap<String, usize> = HashMap::new();
    for (i, raw) in text.lines().enumerate() {
        let line = i + 1;
        if raw.trim().is_empty() {
            continue;
        }
        let item = parse_line(raw, line, default_grader).map_err(|m| line_error(line, m))?;
        if let Some(first) = first_line_of.insert(item.id.clone(), line) {
            return Err(line_error(
                line,
                format!("id {:?} is already used on line {first}", item.id),
            ));
        }
        items.push(item);
    }
    if items.is_empty() {
        return Err(GradeError::Empty {
            path: path.to_path_buf(),
        });
    }
    Ok(items)
}

/// One line's item, or what is wrong with it.
fn parse_line(raw: &str, line: usize, default_grader: Grader) -> Result<Item, String> {
    let entry: JsonlItem =
        serde_json::from_str(raw).map_err(|e| format!("not a graded item: {e}"))?;
    let id = entry
        .id
        .map_or_else(|| line.to_string(), TextOrNumber::into_text);
    if id.trim().is_empty() {
        return Err("the id is empty".into());
    }
    if entry.prompt.trim().is_empty() {
        return Err(format!("item {id:?}: the prompt is empty"));
    }
    let grader = entry.grader.unwrap_or(default_grader);
    let expected = entry.answer.into_text();
    grader
        .check_expected(&expected)
        .map_err(|m| format!("item {id:?}: {m}"))?;
    Ok(Item {
        id,
        prompt: entry.prompt,
        expected,
        grader,
    })
}

#[cfg(test)]
mod tests;
