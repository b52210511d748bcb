//! The graders against answers they must take and answers they must refuse.

use super::*;
use std::io::Write;

fn check(grader: Grader, cases: &[(&str, &str, bool)]) {
    for &(answer, expected, want) in cases {
        assert_eq!(
            grader.grade(answer, expected),
            want,
            "{grader:?}: answer {answer:?} vs expected {expected:?}"
        );
    }
}

#[test]
fn exact_ignores_case_space_and_one_trailing_period() {
    check(
        Grader::Exact,
        &[
            ("Paris", "Paris", true),
            ("  paris.\n", "Paris", true),
            ("PARIS .", "paris", true),
            ("Paris", "Paris.", true),
            ("Paris!", "Paris", false),
            ("Paris, France", "Paris", false),
            ("The answer is Paris", "Paris", false),
            ("Paris..", "Paris", false),
            ("", "Paris", false),
            // An empty expected answer matches nothing, not even an empty answer.
            ("", "", false),
            (".", " . ", false),
        ],
    );
}

#[test]
fn number_reads_the_first_number() {
    check(
        Grader::Number,
        &[
            ("The answer is 1,234.", "1234", true),
            ("1234", "1,234", true),
            ("12", "-12", false),
            ("-12", "12", false),
            ("x = -3.50", "-3.5", true),
            ("x = \u{2212}3.5", "-3.5", true),
            ("no number here", "0", false),
            ("", "0", false),
            ("42", "42.0000000001", true),
            ("42", "42.001", false),
            ("0", "-0", true),
            // The first number, not the last or the largest.
            ("3 apples and 5 pears", "5", false),
            ("3 apples and 5 pears", "3", true),
            ("5-3 = 2", "5", true),
            // A hyphen after a letter or digit is not a sign.
            ("COVID-19", "19", true),
            ("COVID-19", "-19", false),
            // A comma is a separator only before exactly three digits.
            ("1,23", "1", true),
            ("1,2345", "1", true),
            ("12,345,678.5 units", "12345678.5", true),
            ("3, 4, 5", "3", true),
            ("It is 7.", "7", true),
            ("1e5", "1", true),
            ("**-40**", "-40", true),
            // An expected answer that is not a number grades false.
            ("12", "twelve", false),
            ("12", "12 apples", false),
            ("12", "", false),
        ],
    );
}

#[test]
fn regex_matches_anywhere_and_bad_patterns_grade_false() {
    check(
        Grader::Regex,
        &[
            ("The capital is Paris.", r"(?i)\bparis\b", true),
            ("Lutetia", r"(?i)\bparis\b", false),
            ("answer: 42", r"^answer: \d+$", true),
            ("answer: 42!", r"^answer: \d+$", false),
            ("anything", "(unclosed", false),
            ("", "", true),
        ],
    );
}

#[test]
fn choice_takes_the_first_standalone_letter() {
    check(
        Grader::Choice,
        &[
            ("B", "B", true),
            ("(B)", "B", true),
            ("Answer: B.", "B", true),
            ("Answer: B.", "b", true),
            ("The answer is (C).", "C", true),
            ("B) 42", "B", true),
            ("b", "B", false),
            ("C", "B", false),
            ("K", "K", false),
            ("Both", "B", false),
            ("B2", "B", false),
            ("", "B", false),
            // "I" and "A" as English words are skipped, not read as options.
            ("I think it is D", "D", true),
            ("I'm sure: E", "E", true),
            ("A good choice is F", "F", true),
            ("A is correct", "A", true),
            ("I", "I", true),
            ("A and B", "A", true),
            ("A or B", "A", true),
            // The first letter wins over a later one.
            ("B, or maybe C", "C", false),
            // An expected answer that is not one letter A-J grades false.
            ("B", "BB", false),
            ("K", "K", false),
        ],
    );
}

#[test]
fn check_expected_names_the_problem() {
    assert!(Grader::Exact.check_expected(" x ").is_ok());
    assert!(Grader::Exact.check_expected(" . ").is_err());
    assert!(Grader::Number.check_expected("-1,234.5").is_ok());
    let e = Grader::Number.check_expected("12 apples").unwrap_err();
    assert!(e.contains("not a number"), "{e}");
    let e = Grader::Regex.check_expected("(unclosed").unwrap_err();
    assert!(e.contains("not a valid regex") && !e.contains('\n'), "{e}");
    assert!(Grader::Choice.check_expected(" c ").is_ok());
    assert!(Grader::Choice.check_expected("K").is_err());
}

#[test]
fn graders_serialize_snake_case() {
    let all = [Grader::Exact, Grader::Number, Grader::Regex, Grader::Choice];
    let names: Vec<String> = all
        .iter()
        .map(|g| serde_json::to_string(g).unwrap())
        .collect();
    assert_eq!(
        names,
        [r#""exact""#, r#""number""#, r#""regex""#, r#""choice""#]
    );
    for (g, name) in all.iter().zip(&names) {
        assert_eq!(&serde_json::from_str::<Grader>(name).unwrap(), g);
    }
}

/// `(a, op, b)` parsed back from an arithmetic prompt, or a panic naming it.
fn parse_prompt(prompt: &str) -> (i64, char, i64) {
    let rest = prompt
        .strip_prefix("What is ")
        .and_then(|r| r.strip_suffix("? Answer with the number only."))
        .unwrap_or_else(|| panic!("prompt form: {prompt:?}"));
    let parts: Vec<&str> = rest.split(' ').collect();
    assert_eq!(parts.len(), 3, "{prompt:?}");
    let op = parts[1].chars().next().unwrap();
    assert_eq!(parts[1].len(), 1, "{prompt:?}");
    (parts[0].parse().unwrap(), op, parts[2].parse().unwrap())
}

#[test]
fn arithmetic_items_are_right_and_in_form() {
    let items = arithmetic(600, 42);
    assert_eq!(items.len(), 600);
    let mut ops = HashMap::new();
    for (i, item) in items.iter().enumerate() {
        assert_eq!(item.id, format!("arith-42-{i}"));
        assert_eq!(item.grader, Grader::Number);
        let (a, op, b) = parse_prompt(&item.prompt);
        let want = match op {
            '+' | '-' => {
                assert!((10..=99).contains(&a) && (10..=99).contains(&b), "{item:?}");
                if op == '+' {
                    a + b
                } else {
                    a - b
                }
            }
            '*' => {
                assert!((2..=99).contains(&a) && (2..=99).contains(&b), "{item:?}");
                a * b
            }
            _ => panic!("operator {op:?} in {item:?}"),
        };
        assert_eq!(item.expected, want.to_string());
        assert!(item.grade(&format!("{want}")));
        assert!(!item.grade(&format!("{}", want + 1)));
        *ops.entry(op).or_insert(0) += 1;
    }
    // Each operator about a third of the time (200 expected; 140 is > 5 sd off).
    assert!(ops.values().all(|&n| n > 140), "{ops:?}");
    // Some differences are negative, and one-digit factors occur.
    assert!(items.iter().any(|i| i.expected.starts_with('-')));
    assert!(items.iter().any(|i| {
        let (a, op, b) = parse_prompt(&i.prompt);
        op == '*' && (a < 10 || b < 10)
    }));
    // No prompt repeats.
    let prompts: HashSet<&str> = items.iter().map(|i| i.prompt.as_str()).collect();
    assert_eq!(prompts.len(), items.len());
}

#[test]
fn arithmetic_is_seeded() {
    assert_eq!(arithmetic(50, 7), arithmetic(50, 7));
    assert_eq!(arithmetic(20, 7)[..], arithmetic(50, 7)[..20]);
    let prompts =
        |seed| -> Vec<String> { arithmetic(50, seed).into_iter().map(|i| i.prompt).collect() };
    assert_ne!(prompts(7), prompts(8));
    assert_ne!(prompts(0), prompts(1));
    assert!(arithmetic(0, 7).is_empty());
    // Pinned: a change of generator would silently change every seeded set.
    let items = arithmetic(3, 1);
    let first: Vec<(&str, &str)> = items
        .iter()
        .map(|i| (i.prompt.as_str(), i.expected.as_str()))
        .collect();
    assert_eq!(first, PINNED_SEED_1, "{first:#?}");
}

/// `arithmetic(3, 1)`, checked against a separate Python port of SplitMix64
/// and the multiply-shift draw written for this test.
const PINNED_SEED_1: [(&str, &str); 3] = [
    ("What is 47 + 91? Answer with the number only.", "138"),
    ("What is 25 + 63? Answer with the number only.", "88"),
    ("What is 30 - 93? Answer with the number only.", "-63"),
];

#[test]
fn arithmetic_repeats_only_past_every_distinct_prompt() {
    let items = arithmetic(DISTINCT + 5, 3);
    let prompts: HashSet<&str> = items.iter().map(|i| i.prompt.as_str()).collect();
    assert_eq!(prompts.len(), DISTINCT);
}

fn write_file(text: &str) -> tempfile::NamedTempFile {
    let mut f = tempfile::Builder::new()
        .suffix(".jsonl")
        .tempfile()
        .unwrap();
    f.write_all(text.as_bytes()).unwrap();
    f
}

#[test]
fn jsonl_reads_items_with_defaults() {
    let f = write_file(concat!(
        r#"{"id": "q1", "prompt": "2+2?", "answer": "4"}"#,
        "\n\n   \n",
        r#"{"prompt": "Capital of France?", "answer": "Paris", "grader": "exact"}"#,
        "\n",
        r#"{"id": 7, "prompt": "Pick", "answer": "c", "grader": "choice"}"#,
        "\n",
        r#"{"prompt": "Half of 7?", "answer": 3.5}"#,
        "\n",
    ));
    let items = read_jsonl(f.path(), Grader::Number).unwrap();
    let got: Vec<(&str, &str, Grader)> = items
        .iter()
        .map(|i| (i.id.as_str(), i.expected.as_str(), i.grader))
        .collect();
    assert_eq!(
        got,
        [
            ("q1", "4", Grader::Number),
            ("4", "Paris", Grader::Exact),
            ("7", "c", Grader::Choice),
            ("6", "3.5", Grader::Number),
        ]
    );
    assert_eq!(items[1].prompt, "Capital of France?");
    assert!(items[2].grade("(C)"));
    assert!(items[3].grade("It is 3.50"));
}

/// The error message for `text`, with the temporary path replaced by `F`.
fn jsonl_error(text: &str) -> String {
    let f = write_file(text);
    let e = read_jsonl(f.path(), Grader::Exact).unwrap_err();
    e.to_string().replace(&f.path().display().to_string(), "F")
}

#[test]
fn jsonl_errors_name_file_and_line() {
    let ok = r#"{"id": "a", "prompt": "p", "answer": "x"}"#;
    let cases = [
        (format!("{ok}\n{{not json\n"), "F:2: not a graded item:"),
        (
            format!(
                "{ok}\n{}",
                r#"{"id": "b", "prompt": "p", "answer": "x", "grade": "number"}"#
            ),
            "F:2: not a graded item: unknown field `grade`",
        ),
        (
            format!(
                "{ok}\n{}",
                r#"{"prompt": "p", "answer": "x", "grader": "numbr"}"#
            ),
            "F:2: not a graded item: unknown variant `numbr`",
        ),
        (
            r#"{"id": "b", "prompt": "p"}"#.to_string(),
            "F:1: not a graded item: missing field `answer`",
        ),
        (
            format!("{ok}\n\n{ok}\n"),
            r#"F:3: id "a" is already used on line 1"#,
        ),
        (
            // An explicit id may collide with a default one (the line number).
            concat!(
                r#"{"id": "2", "prompt": "p", "answer": "x"}"#,
                "\n",
                r#"{"prompt": "p", "answer": "x"}"#
            )
            .to_string(),
            r#"F:2: id "2" is already used on line 1"#,
        ),
        (
            format!(
                "{ok}\n{}",
                r#"{"id": "r", "prompt": "p", "answer": "(x", "grader": "regex"}"#
            ),
            r#"F:2: item "r": the expected answer is not a valid regex: "#,
        ),
        (
            r#"{"id": "n", "prompt": "p", "answer": "four", "grader": "number"}"#.to_string(),
            r#"F:1: item "n": the expected answer "four" is not a number"#,
        ),
        (
            r#"{"id": "c", "prompt": "p", "answer": "K", "grader": "choice"}"#.to_string(),
            r#"F:1: item "c": the expected answer "K" is not one option letter A-J"#,
        ),
        (
            r#"{"id": "e", "prompt": "p", "answer": " "}"#.to_string(),
            r#"F:1: item "e": the expected answer is empty"#,
        ),
        (
            r#"{"id": "e", "prompt": "  ", "answer": "x"}"#.to_string(),
            r#"F:1: item "e": the prompt is empty"#,
        ),
        (
            r#"{"id": "", "prompt": "p", "answer": "x"}"#.to_string(),
            "F:1: the id is empty",
        ),
        ("\n  \n".to_string(), "F: the file holds no graded items"),
    ];
    for (text, want) in cases {
        let got = jsonl_error(&text);
        assert!(got.starts_with(want), "{text:?}:\n got {got}\nwant {want}");
        assert!(!got.contains('\n'), "{got}");
    }
}

#[test]
fn jsonl_rejects_bad_bytes_and_missing_files() {
    let mut f = tempfile::NamedTempFile::new().unwrap();
    f.write_all(b"{\"prompt\": \"p\", \"answer\": \"x\"}\n{\"prompt\": \"\xff\"}\n")
        .unwrap();
    let e = read_jsonl(f.path(), Grader::Exact).unwrap_err();
    assert!(
        matches!(e, GradeError::Line { line: 2, ref message, .. } if message == "not UTF-8 text"),
        "{e}"
    );
    let e = read_jsonl(Path::new("/nonexistent/items.jsonl"), Grader::Exact).unwrap_err();
    assert!(
        qexp_types::error::chain(&e)
            .starts_with("cannot read graded items /nonexistent/items.jsonl: "),
        "{e}"
    );
}
