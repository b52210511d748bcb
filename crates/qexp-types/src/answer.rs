//! What an answer's text says about the server's health, apart from how
//! fast it came: the shape of the text ([`AnswerShape`], measured once when
//! the stream ends and stored with the request), the issues a request's
//! answer has ([`AnswerIssue`], decided from the stored shape, the finish
//! reason and the plan's lengths), and every threshold that decides them.
//! docs/results.md "Answer health" defines each class with these numbers.
//!
//! The runner uses the classes to keep the text of unhealthy answers; the
//! analysis counts them per point. Both call [`AnswerFacts::issues`], so a
//! threshold changed here changes both.

use serde::{Deserialize, Serialize};

/// A repetition loop repeats its stretch at least this many times (the
/// first occurrence counted): "a b a b a b a b" is 4 cycles of "a b".
pub const LOOP_MIN_CYCLES: u32 = 4;
/// ... and the repeated part spans at least this many characters, so that
/// a code snippet's closing braces or "very, very" are not loops.
pub const LOOP_MIN_CHARS: u64 = 48;
/// Longest repeated stretch looked for, in words: a numbered list of the
/// seven days with a sentence each fits.
pub const LOOP_MAX_PERIOD_WORDS: usize = 128;
/// How many of an answer's last words are searched for a loop (the cost of
/// the search is bounded whatever the answer's length).
pub const LOOP_WINDOW_WORDS: usize = 4096;
/// A loop may end this many words before the answer does: a model that
/// loops, then closes with a sentence ("… 30. Tuesday. These are the days
/// of the week.") still looped.
pub const LOOP_END_SLACK_WORDS: usize = 64;
/// An answer is garbled when at least this share of its non-blank
/// characters are U+FFFD, the replacement character a decoder writes for
/// bytes that are not text.
pub const GARBLED_MIN_SHARE: f64 = 0.10;
/// A point's answers are broken when at least this share of its measured
/// answers has one issue (each class counted on its own).
pub const BROKEN_SHARE: f64 = 0.05;
/// A point's mean output length may differ from the mean it asked for by
/// this fraction (MLPerf's ±10% on the mean in performance mode); beyond it
/// the point's lengths are off.
pub const LENGTH_TOLERANCE: f64 = 0.10;

/// The shape of an answer's text, as stored beside its request: counts,
/// and the longest repeated stretch at its end.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct AnswerShape {
    /// Characters of the answer (reasoning not included).
    pub chars: u64,
    /// Of those, characters that are not whitespace.
    pub nonblank_chars: u64,
    /// Of those, U+FFFD replacement characters.
    pub replacement_chars: u64,
    /// The longest repeated stretch whose run ends within the answer's last
    /// [`LOOP_END_SLACK_WORDS`] words, in words (0: none repeats).
    pub repeat_period_words: u32,
    /// Words of that run, the stretch's first occurrence included (0: none).
    pub repeat_words: u32,
    /// Characters those words span, from the first one's start to the last
    /// one's end.
    pub repeat_chars: u64,
}

impl AnswerShape {
    /// Measures `text`. Words are whitespace-separated, and each run of
    /// digits in a word counts as the same digit, so that a numbered list
    /// that starts over ("8. Monday" after "1. Monday") repeats.
    pub fn of(text: &str) -> AnswerShape {
        let mut shape = AnswerShape::default();
        for c in text.chars() {
            shape.chars += 1;
            if !c.is_whitespace() {
                shape.nonblank_chars += 1;
                if c == char::REPLACEMENT_CHARACTER {
                    shape.replacement_chars += 1;
                }
            }
        }
        let words = tail_words(text);
        if let Some(r) = longest_repeat(&words) {
            let start = words[r.last + 1 - r.len].start;
            let end = words[r.last].end;
            shape.repeat_period_words = r.period as u32;
            shape.repeat_words = r.len as u32;
            shape.repeat_chars = text[start..end].chars().count() as u64;
        }
        shape
    }

    /// Whole cycles of the repeated stretch (the first included).
    pub fn cycles(&self) -> u32 {
        self.repeat_words
            .checked_div(self.repeat_period_words)
            .unwrap_or(0)
    }

    /// The repeated stretch at the end is a loop ([`LOOP_MIN_CYCLES`],
    /// [`LOOP_MIN_CHARS`]).
    pub fn loops(&self) -> bool {
        self.cycles() >= LOOP_MIN_CYCLES && self.repeat_chars >= LOOP_MIN_CHARS
    }

    /// No character but whitespace.
    pub fn blank(&self) -> bool {
        self.nonblank_chars == 0
    }

    /// Mostly replacement characters ([`GARBLED_MIN_SHARE`]).
    pub fn garbled(&self) -> bool {
        self.replacement_chars > 0
            && self.replacement_chars as f64 >= GARBLED_MIN_SHARE * self.nonblank_chars as f64
    }
}

/// One word of the searched tail: its key and where it starts in the text.
struct Word {
    key: u64,
    start: usize,
    end: usize,
}

/// The last [`LOOP_WINDOW_WORDS`] words of `text`, in order.
fn tail_words(text: &str) -> Vec<Word> {
    let base = text.as_ptr() as usize;
    let spans: Vec<&str> = text.split_whitespace().collect();
    let skip = spans.len().saturating_sub(LOOP_WINDOW_WORDS);
    spans[skip..]
        .iter()
        .map(|w| Word {
            key: word_key(w),
            start: w.as_ptr() as usize - base,
            end: w.as_ptr() as usize - base + w.len(),
        })
        .collect()
}

/// FNV-1a of a word with each run of ASCII digits read as one `0`.
fn word_key(word: &str) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    let mut in_digits = false;
    for b in word.bytes() {
        let b = if b.is_ascii_digit() {
            if in_digits {
                continue;
            }
            in_digits = true;
            b'0'
        } else {
            in_digits = false;
            b
        };
        h = (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

/// The longest repeated stretch in `words` whose run ends within the last
/// [`LOOP_END_SLACK_WORDS`]: its period (words), its length (words, the
/// first occurrence included) and the index of its last word; the shortest
/// period wins a tie, and multiples of a period already found are not
/// searched (they find the same run). None when nothing repeats.
fn longest_repeat(words: &[Word]) -> Option<Repeat> {
    let n = words.len();
    let mut best: Option<Repeat> = None;
    for p in 1..=LOOP_MAX_PERIOD_WORDS.min(n / 2) {
        if best.is_some_and(|b| p % b.period == 0) {
            continue;
        }
        // Runs of words equal to the word p before them, from the end; a
        // run begun past the slack is not looked for.
        let mut run = 0;
        let mut last = n;
        for i in (p..n).rev() {
            if words[i].key == words[i - p].key {
                if run == 0 {
                    last = i;
                }
                run += 1;
                let len = run + p;
                if run >= p && best.is_none_or(|b| len > b.len) {
                    best = Some(Repeat {
                        period: p,
                        len,
                        last,
                    });
                }
            } else {
                run = 0;
                if n - i > LOOP_END_SLACK_WORDS {
                    break;
                }
            }
        }
    }
    best
}

/// A repeated stretch found by [`longest_repeat`].
#[derive(Clone, Copy)]
struct Repeat {
    period: usize,
    len: usize,
    last: usize,
}

/// One issue of one answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AnswerIssue {
    /// The answer ends in a short stretch repeated many times.
    Loop,
    /// The answer is empty or only whitespace (and no reasoning ran out of
    /// tokens before it).
    Empty,
    /// Replacement characters make up much of the answer.
    Garbled,
    /// The plan forced the length, and the answer stopped before it.
    EarlyStop,
    /// The stream ended well (`[DONE]`) without a finish reason.
    NoFinishReason,
}

impl AnswerIssue {
    /// Every issue, in the order reports list them.
    pub const ALL: [AnswerIssue; 5] = [
        AnswerIssue::Loop,
        AnswerIssue::Empty,
        AnswerIssue::Garbled,
        AnswerIssue::EarlyStop,
        AnswerIssue::NoFinishReason,
    ];

    /// Stable snake_case name.
    pub fn as_str(self) -> &'static str {
        match self {
            AnswerIssue::Loop => "loop",
            AnswerIssue::Empty => "empty",
            AnswerIssue::Garbled => "garbled",
            AnswerIssue::EarlyStop => "early_stop",
            AnswerIssue::NoFinishReason => "no_finish_reason",
        }
    }

    /// What the issue is, for people ("repetition loop").
    pub fn describe(self) -> &'static str {
        match self {
            AnswerIssue::Loop => "repetition loop",
            AnswerIssue::Empty => "empty answer",
            AnswerIssue::Garbled => "replacement characters",
            AnswerIssue::EarlyStop => "stopped before the forced length",
            AnswerIssue::NoFinishReason => "no finish reason",
        }
    }
}

/// Everything the classes of one successful request are decided from.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct AnswerFacts<'a> {
    /// The answer's shape.
    pub shape: AnswerShape,
    /// The finish reason the server sent.
    pub finish_reason: Option<&'a str>,
    /// Whether reasoning text came before the answer.
    pub reasoned: bool,
    /// Whether the plan forced the answer's length (`ignore_eos`, or
    /// `min_tokens` at `max_tokens`).
    pub length_forced: bool,
    /// Output tokens (the server's count, else the client's).
    pub output_tokens: u32,
    /// `max_tokens` asked for.
    pub output_planned: u32,
    /// Whether the answer made a tool call (whose arguments are not its text).
    pub called_tools: bool,
}

impl AnswerFacts<'_> {
    /// The issues of this answer, in [`AnswerIssue::ALL`] order.
    pub fn issues(&self) -> Vec<AnswerIssue> {
        let s = &self.shape;
        let ran_out_reasoning = self.reasoned && self.finish_reason == Some("length");
        [
            (AnswerIssue::Loop, s.loops()),
            (
                AnswerIssue::Empty,
                s.blank() && !ran_out_reasoning && !self.called_tools,
            ),
            (AnswerIssue::Garbled, s.garbled()),
            (
                AnswerIssue::EarlyStop,
                self.length_forced && self.output_tokens < self.output_planned,
            ),
            (AnswerIssue::NoFinishReason, self.finish_reason.is_none()),
        ]
        .into_iter()
        .filter_map(|(issue, has)| has.then_some(issue))
        .collect()
    }
}

/// Whether a point's mean output length is off the mean it asked for:
/// beyond [`LENGTH_TOLERANCE`] either way when the plan forced the length,
/// only above it otherwise (a model may stop before `max_tokens`; a server
/// must not go past it).
pub fn length_off(mean_output: f64, mean_planned: f64, forced: bool) -> bool {
    if !(mean_output.is_finite() && mean_planned > 0.0) {
        return false;
    }
    mean_output > mean_planned * (1.0 + LENGTH_TOLERANCE)
        || (forced && mean_output < mean_planned * (1.0 - LENGTH_TOLERANCE))
}

/// `text` made safe for one line of a report: control characters and
/// quotes escaped, cut to `max` characters with an ellipsis.
pub fn excerpt(text: &str, max: usize) -> String {
    let escaped: String = text.escape_debug().collect();
    match escaped.char_indices().nth(max) {
        Some((i, _)) => format!("{}…", &escaped[..i]),
        None => escaped,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shape(text: &str) -> AnswerShape {
        AnswerShape::of(text)
    }

    #[test]
    fn lambda_loop_is_a_loop() {
        let s = shape(&"lambda ".repeat(100));
        assert_eq!(s.repeat_period_words, 1);
        assert_eq!(s.repeat_words, 100);
        assert!(s.loops());
    }

    #[test]
    fn a_phrase_loop_after_a_real_start_is_a_loop() {
        let text = format!(
            "The answer is simple. {}la femme au",
            "la femme au martyre, ".repeat(12)
        );
        let s = shape(&text);
        assert_eq!(s.repeat_period_words, 4);
        assert!(s.cycles() >= 12, "{s:?}");
        assert!(s.loops());
    }

    #[test]
    fn a_numbered_list_that_starts_over_is_a_loop() {
        let days = [
            "Monday",
            "Tuesday",
            "Wednesday",
            "Thursday",
            "Friday",
            "Saturday",
            "Sunday",
        ];
        let text: String = (0..40)
            .map(|i| format!("{}. {}\n", i + 1, days[i % 7]))
            .collect();
        let s = shape(&format!("Here are the days of the week:\n{text}"));
        assert_eq!(s.repeat_period_words, 14);
        assert!(s.loops(), "{s:?}");
        // As SmolLM2 answers it: the list goes round four times, then a
        // closing sentence.
        let closed = format!(
            "Here are the days of the week in order:\n\n{text}\nThese are the seven days of the week."
        );
        let s = shape(&closed);
        assert_eq!(s.repeat_period_words, 14);
        assert!(s.loops(), "{s:?}");
        // One week, once: a list, not a loop.
        let once: String = (0..7)
            .map(|i| format!("{}. {}\n", i + 1, days[i]))
            .collect();
        assert!(!shape(&once).loops());
    }

    #[test]
    fn a_loop_must_end_near_the_answers_end() {
        let looped = "la femme au martyre, ".repeat(10);
        // Distinct words (digits would all read alike).
        let words = |n: usize| -> String {
            (0..n)
                .map(|i| {
                    let letter = |k: usize| char::from(b'a' + (k % 26) as u8);
                    format!("w{}{} ", letter(i / 26), letter(i))
                })
                .collect()
        };
        // 64 words after the loop's last: still found; 65: not.
        let near = format!("{looped}{}", words(LOOP_END_SLACK_WORDS));
        let far = format!("{looped}{}", words(LOOP_END_SLACK_WORDS + 1));
        assert!(shape(&near).loops(), "{:?}", shape(&near));
        assert!(!shape(&far).loops(), "{:?}", shape(&far));
    }

    #[test]
    fn loop_cycles_threshold_each_side() {
        // "alpha beta gamma delta " is 23 characters: 3 cycles span 69
        // characters, enough, but are one cycle short.
        let stretch = "alpha beta gamma delta ";
        let three = format!(
            "Start here. {}",
            stretch.repeat(LOOP_MIN_CYCLES as usize - 1)
        );
        let four = format!("Start here. {}", stretch.repeat(LOOP_MIN_CYCLES as usize));
        assert_eq!(shape(&three).cycles(), LOOP_MIN_CYCLES - 1);
        assert!(!shape(&three).loops());
        assert_eq!(shape(&four).cycles(), LOOP_MIN_CYCLES);
        assert!(shape(&four).loops());
    }

    #[test]
    fn loop_chars_threshold_each_side() {
        // "ab " ×16 spans 47 characters (the last space trimmed away from
        // no word: the span runs to the text's end), ×17 spans 50.
        let short = format!("x {}", "ab ".repeat(15) + "ab");
        let long = format!("x {}", "ab ".repeat(16) + "ab");
        assert_eq!(shape(&short).repeat_chars, 47);
        assert!(!shape(&short).loops());
        assert_eq!(shape(&long).repeat_chars, 50);
        assert!(shape(&long).loops());
        const { assert!(LOOP_MIN_CHARS > 47 && LOOP_MIN_CHARS <= 50) };
    }

    #[test]
    fn natural_text_is_not_a_loop() {
        let prose = "Paris is the capital and largest city of France. With an estimated \
            population of just over two million residents, it is the centre of the Ile-de-France \
            region. Since the 17th century, Paris has been one of the world's major centres of \
            finance, diplomacy, commerce, culture, fashion, and gastronomy.\n\nThe city is a major \
            railway, highway, and air-transport hub served by two international airports.";
        let code = "fn main() {\n    for i in 0..3 {\n        if i > 1 {\n            \
            println!(\"{i}\");\n        }\n    }\n}\n";
        let table = "| model | tok/s | TTFT |\n| --- | --- | --- |\n| a | 73.5 | 0.3 |\n\
            | b | 64.9 | 15.1 |\n| c | 54.0 | 61.0 |\n";
        for text in [prose, code, table] {
            let s = shape(text);
            assert!(!s.loops(), "{text}: {s:?}");
            assert!(!s.garbled() && !s.blank());
        }
    }

    #[test]
    fn blank_and_garbled_each_side() {
        assert!(shape("").blank());
        assert!(shape(" \n\t ").blank());
        assert!(!shape(" . ").blank());
        // 1 replacement in 10 non-blank characters: garbled; 1 in 11: not.
        assert!(shape("abcdefghi\u{fffd}").garbled());
        assert!(!shape("abcdefghij\u{fffd}").garbled());
        assert_eq!(shape("a \u{fffd}").replacement_chars, 1);
    }

    #[test]
    fn issues_follow_the_facts() {
        let ok = AnswerFacts {
            shape: shape("A fine answer."),
            finish_reason: Some("length"),
            length_forced: true,
            output_tokens: 100,
            output_planned: 100,
            ..AnswerFacts::default()
        };
        assert!(ok.issues().is_empty());
        let early = AnswerFacts {
            output_tokens: 99,
            finish_reason: Some("stop"),
            ..ok
        };
        assert_eq!(early.issues(), [AnswerIssue::EarlyStop]);
        let unforced = AnswerFacts {
            length_forced: false,
            ..early
        };
        assert!(unforced.issues().is_empty());
        let no_finish = AnswerFacts {
            finish_reason: None,
            ..ok
        };
        assert_eq!(no_finish.issues(), [AnswerIssue::NoFinishReason]);
        let empty = AnswerFacts {
            shape: shape(""),
            ..ok
        };
        assert_eq!(empty.issues(), [AnswerIssue::Empty]);
        let thought_to_the_end = AnswerFacts {
            reasoned: true,
            ..empty
        };
        assert!(thought_to_the_end.issues().is_empty());
        let called = AnswerFacts {
            called_tools: true,
            ..empty
        };
        assert!(called.issues().is_empty(), "a tool call is the answer");
    }

    #[test]
    fn length_off_each_side() {
        assert!(!length_off(90.0, 100.0, true));
        assert!(length_off(89.0, 100.0, true));
        assert!(!length_off(110.0, 100.0, false));
        assert!(length_off(111.0, 100.0, false));
        assert!(!length_off(20.0, 100.0, false), "a model may stop early");
        assert!(!length_off(f64::NAN, 100.0, true));
        assert!(!length_off(10.0, 0.0, true));
    }

    #[test]
    fn excerpt_escapes_and_cuts() {
        assert_eq!(excerpt("a\nb\"c", 10), "a\\nb\\\"c");
        assert_eq!(excerpt("abcdef", 3), "abc…");
        assert_eq!(excerpt("", 3), "");
    }

    #[test]
    fn issue_names_are_stable() {
        let names: Vec<&str> = AnswerIssue::ALL.iter().map(|i| i.as_str()).collect();
        assert_eq!(
            names,
            ["loop", "empty", "garbled", "early_stop", "no_finish_reason"]
        );
        let json = serde_json::to_string(&AnswerIssue::EarlyStop).unwrap_or_default();
        assert_eq!(json, "\"early_stop\"");
    }
}
