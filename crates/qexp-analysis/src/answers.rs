//! Answer health: what a (trial, point)'s answers say apart from their
//! timing. Each successful measured request's stored shape, finish reason
//! and lengths are judged by qexp-types' [`AnswerFacts::issues`] (every
//! class and threshold is defined there, once); this module counts them per
//! (trial, point) ([`AnswerTally`]) and per point ([`AnswerHealth`]), where
//! a point is broken when a class reaches [`BROKEN_SHARE`] of its answers or
//! its mean length is off ([`length_off`]).

use polars::prelude::*;
use qexp_store::requests as rq;
use qexp_types::answer::{length_off, BROKEN_SHARE};
pub use qexp_types::AnswerIssue;
use qexp_types::{AnswerFacts, AnswerShape};
use serde::Serialize;
use std::collections::BTreeMap;

/// The request columns answer health reads; a run made before they
/// existed lacks them and has no answer health.
pub(crate) const COLUMNS: &[&str] = &[
    rq::ANSWER_CHARS,
    rq::ANSWER_NONBLANK_CHARS,
    rq::ANSWER_REPLACEMENT_CHARS,
    rq::REPEAT_PERIOD_WORDS,
    rq::REPEAT_WORDS,
    rq::REPEAT_CHARS,
    rq::LENGTH_FORCED,
    rq::REASONING_HASH,
    rq::ANSWER_TEXT,
];

/// The request columns of whether an answer parsed (`[workload.tools]`,
/// `[workload.response_format]`) and of its tool calls (an answer that
/// called a tool is not empty); a run made before them lacks them.
pub(crate) const PARSE_COLUMNS: &[&str] = &[rq::PARSED, rq::TOOL_CALLS];

/// The confidence of the Wilson interval beside a parse rate: the one
/// accuracy's rates have.
pub const PARSE_CONFIDENCE: f64 = crate::stats::wilson::SHARE_CONFIDENCE;

/// Characters of an answer shown in a flag.
const EXCERPT_CHARS: usize = 120;

/// The answers of one (trial, point), counted.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct AnswerTally {
    /// Successful measured requests whose answer was measured.
    pub checked: u64,
    /// Of those, how many have each issue.
    pub issues: BTreeMap<AnswerIssue, u64>,
    /// Output tokens of those answers, added up.
    pub output_tokens: f64,
    /// `max_tokens` of those answers, added up.
    pub output_planned: f64,
    /// Of those answers, how many forced their length.
    pub forced: u64,
    /// The kept text of the first answer with an issue, and its first issue.
    pub excerpt: Option<(AnswerIssue, String)>,
    /// Successful measured requests whose answer's form was checked
    /// (the plan has tools or a response schema).
    pub parse_checked: u64,
    /// Of those, answers that parsed.
    pub parsed: u64,
}

/// Each row's value of a column as u64 (null: None).
fn u64s(df: &DataFrame, name: &str) -> PolarsResult<Vec<Option<u64>>> {
    Ok(df
        .column(name)?
        .cast(&DataType::UInt64)?
        .u64()?
        .iter()
        .collect())
}

impl AnswerTally {
    /// Adds a piece's rows (`ok`: which succeeded); `planned_output` names
    /// the column of each request's `max_tokens`. Rows without a measured
    /// answer (a run made before answers were measured) are skipped.
    pub(crate) fn add(
        &mut self,
        rows: &DataFrame,
        ok: &BooleanChunked,
        planned_output: &str,
        schema: &Schema,
    ) -> PolarsResult<()> {
        if schema.contains(rq::PARSED) {
            let parsed = rows.column(rq::PARSED)?.bool()?.clone();
            for (ok, parsed) in ok.iter().zip(parsed.iter()) {
                if let (Some(true), Some(p)) = (ok, parsed) {
                    self.parse_checked += 1;
                    self.parsed += u64::from(p);
                }
            }
        }
        if !COLUMNS.iter().all(|c| schema.contains(c)) {
            return Ok(());
        }
        let chars = u64s(rows, rq::ANSWER_CHARS)?;
        let nonblank = u64s(rows, rq::ANSWER_NONBLANK_CHARS)?;
        let replacement = u64s(rows, rq::ANSWER_REPLACEMENT_CHARS)?;
        let period = u64s(rows, rq::REPEAT_PERIOD_WORDS)?;
        let repeat_words = u64s(rows, rq::REPEAT_WORDS)?;
        let repeat_chars = u64s(rows, rq::REPEAT_CHARS)?;
        let completion = u64s(rows, rq::COMPLETION_TOKENS)?;
        let client = u64s(rows, rq::CLIENT_TOKENS)?;
        let planned = u64s(rows, planned_output)?;
        let forced = rows.column(rq::LENGTH_FORCED)?.bool()?.clone();
        let reasoned = rows.column(rq::REASONING_HASH)?.is_not_null();
        let finish = rows.column(rq::FINISH_REASON)?.str()?.clone();
        let text = rows.column(rq::ANSWER_TEXT)?.str()?.clone();
        // A run made before tool calls were read has none.
        let calls = match schema.contains(rq::TOOL_CALLS) {
            true => u64s(rows, rq::TOOL_CALLS)?,
            false => vec![None; rows.height()],
        };
        let as_u32 = |v: Option<u64>| v.unwrap_or(0).min(u64::from(u32::MAX)) as u32;
        for (i, ok) in ok.iter().enumerate() {
            let Some(chars) = chars[i] else { continue };
            if ok != Some(true) {
                continue;
            }
            let shape = AnswerShape {
                chars,
                nonblank_chars: nonblank[i].unwrap_or(0),
                replacement_chars: replacement[i].unwrap_or(0),
                repeat_period_words: as_u32(period[i]),
                repeat_words: as_u32(repeat_words[i]),
                repeat_chars: repeat_chars[i].unwrap_or(0),
            };
            let output = completion[i].or(client[i]);
            let facts = AnswerFacts {
                shape,
                finish_reason: finish.get(i),
                reasoned: reasoned.get(i).unwrap_or(false),
                length_forced: forced.get(i).unwrap_or(false),
                output_tokens: as_u32(output),
                output_planned: as_u32(planned[i]),
                called_tools: calls[i].is_some_and(|n| n > 0),
            };
            self.checked += 1;
            self.output_tokens += output.unwrap_or(0) as f64;
            self.output_planned += planned[i].unwrap_or(0) as f64;
            self.forced += u64::from(facts.length_forced);
            let issues = facts.issues();
            for issue in &issues {
                *self.issues.entry(*issue).or_default() += 1;
            }
            if let (None, Some(first), Some(t)) = (&self.excerpt, issues.first(), text.get(i)) {
                self.excerpt = Some((*first, t.to_string()));
            }
        }
        Ok(())
    }
}

/// The last [`EXCERPT_CHARS`] characters of `text`, escaped, after an
/// ellipsis when cut: where a loop shows.
fn ending(text: &str) -> String {
    let start = text
        .char_indices()
        .rev()
        .nth(EXCERPT_CHARS - 1)
        .map_or(0, |(i, _)| i);
    let cut = if start > 0 { "…" } else { "" };
    format!(
        "{cut}{}",
        qexp_types::answer::excerpt(&text[start..], usize::MAX)
    )
}

/// The share of a point's answers with one issue.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct IssueShare {
    /// The issue.
    pub issue: AnswerIssue,
    /// Answers with it, all trials.
    pub count: u64,
    /// `count` over the answers checked.
    pub share: f64,
}

/// A point's mean output length against the mean it asked for.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LengthOff {
    /// Mean output tokens of the checked answers.
    pub mean_output: f64,
    /// Mean `max_tokens` asked for.
    pub mean_planned: f64,
    /// Whether the plan forced the length.
    pub forced: bool,
}

/// The share of a point's answers that parsed (a tool call whose
/// arguments match its tool's schema, or text matching the response schema).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ParseRate {
    /// Answers whose form was checked, all trials.
    pub checked: u64,
    /// Of those, answers that parsed.
    pub parsed: u64,
    /// `parsed / checked`.
    pub share: f64,
    /// Its [`PARSE_CONFIDENCE`] Wilson interval.
    pub interval: Option<(f64, f64)>,
}

impl ParseRate {
    fn of(checked: u64, parsed: u64) -> Option<ParseRate> {
        (checked > 0).then(|| ParseRate {
            checked,
            parsed,
            share: parsed as f64 / checked as f64,
            interval: crate::stats::wilson::wilson(parsed, checked, PARSE_CONFIDENCE),
        })
    }
}

/// The answers of one point, all trials.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct AnswerHealth {
    /// The share of answers that parsed, where the plan asks answers for a
    /// form (tools, a response schema); None otherwise.
    pub parse: Option<ParseRate>,
    /// Successful measured requests whose answer was measured (0: the run
    /// has no answer health, e.g. recorded before it existed).
    pub checked: u64,
    /// Every issue seen, in [`AnswerIssue::ALL`] order.
    pub issues: Vec<IssueShare>,
    /// Set when the mean length is off.
    pub length: Option<LengthOff>,
    /// An escaped excerpt of an unhealthy answer's kept text, with its issue.
    pub excerpt: Option<(AnswerIssue, String)>,
}

impl AnswerHealth {
    /// Adds up the trials' tallies.
    pub fn of<'a>(tallies: impl IntoIterator<Item = &'a AnswerTally>) -> AnswerHealth {
        let mut all = AnswerTally::default();
        for t in tallies {
            all.checked += t.checked;
            for (issue, n) in &t.issues {
                *all.issues.entry(*issue).or_default() += n;
            }
            all.output_tokens += t.output_tokens;
            all.output_planned += t.output_planned;
            all.forced += t.forced;
            if all.excerpt.is_none() {
                all.excerpt.clone_from(&t.excerpt);
            }
            all.parse_checked += t.parse_checked;
            all.parsed += t.parsed;
        }
        let parse = ParseRate::of(all.parse_checked, all.parsed);
        if all.checked == 0 {
            return AnswerHealth {
                parse,
                ..AnswerHealth::default()
            };
        }
        let n = all.checked as f64;
        let (mean_output, mean_planned) = (all.output_tokens / n, all.output_planned / n);
        // Lengths are judged forced when most answers were.
        let forced = all.forced * 2 > all.checked;
        AnswerHealth {
            parse,
            checked: all.checked,
            issues: AnswerIssue::ALL
                .into_iter()
                .filter_map(|issue| {
                    let count = *all.issues.get(&issue)?;
                    Some(IssueShare {
                        issue,
                        count,
                        share: count as f64 / n,
                    })
                })
                .collect(),
            length: length_off(mean_output, mean_planned, forced).then_some(LengthOff {
                mean_output,
                mean_planned,
                forced,
            }),
            excerpt: all.excerpt.map(|(i, t)| (i, ending(&t))),
        }
    }

    /// The issues at or above [`BROKEN_SHARE`] of the answers.
    pub fn broken_issues(&self) -> impl Iterator<Item = &IssueShare> {
        self.issues.iter().filter(|s| s.share >= BROKEN_SHARE)
    }

    /// True when the point's answers are broken: an issue at or above
    /// [`BROKEN_SHARE`], or a mean length off the one asked for.
    pub fn broken(&self) -> bool {
        self.broken_issues().next().is_some() || self.length.is_some()
    }

    /// The share of the answers with `issue` (0 when none, NaN when no
    /// answer was checked).
    pub fn share(&self, issue: AnswerIssue) -> f64 {
        if self.checked == 0 {
            return f64::NAN;
        }
        self.issues
            .iter()
            .find(|s| s.issue == issue)
            .map_or(0.0, |s| s.share)
    }

    /// The largest share of any one issue (0 when none, NaN unchecked).
    pub fn worst_share(&self) -> f64 {
        if self.checked == 0 {
            return f64::NAN;
        }
        self.issues.iter().map(|s| s.share).fold(0.0, f64::max)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tally(checked: u64, loops: u64) -> AnswerTally {
        let mut issues = BTreeMap::new();
        if loops > 0 {
            issues.insert(AnswerIssue::Loop, loops);
        }
        AnswerTally {
            checked,
            issues,
            output_tokens: 100.0 * checked as f64,
            output_planned: 100.0 * checked as f64,
            forced: checked,
            excerpt: (loops > 0).then(|| (AnswerIssue::Loop, "lambda\nlambda".into())),
            parse_checked: 0,
            parsed: 0,
        }
    }

    #[test]
    fn the_parse_rate_adds_up_the_trials_with_its_interval() {
        let mut a = tally(10, 0);
        (a.parse_checked, a.parsed) = (10, 9);
        let mut b = tally(10, 0);
        (b.parse_checked, b.parsed) = (10, 10);
        let h = AnswerHealth::of([&a, &b]);
        let p = h.parse.clone().expect("a parse rate");
        assert_eq!((p.checked, p.parsed, p.share), (20, 19, 0.95));
        let (lo, hi) = p.interval.unwrap();
        // statsmodels: proportion_confint(19, 20, method="wilson")
        assert!(
            (lo - 0.763_869).abs() < 1e-5 && (hi - 0.991_119).abs() < 1e-5,
            "{lo} {hi}"
        );
        assert!(!h.broken(), "a parse rate alone breaks nothing");
        assert_eq!(
            AnswerHealth::of([&tally(10, 0)]).parse,
            None,
            "no form asked"
        );
    }

    #[test]
    fn broken_share_each_side() {
        // 5 of 100 is BROKEN_SHARE exactly: broken; 4 of 100 is not.
        assert!((BROKEN_SHARE - 0.05).abs() < 1e-12);
        let at = AnswerHealth::of([&tally(60, 3), &tally(40, 2)]);
        assert_eq!(at.checked, 100);
        assert_eq!(at.share(AnswerIssue::Loop), 0.05);
        assert!(at.broken());
        assert_eq!(
            at.excerpt,
            Some((AnswerIssue::Loop, "lambda\\nlambda".into()))
        );
        let below = AnswerHealth::of([&tally(60, 2), &tally(40, 2)]);
        assert!(!below.broken());
        assert_eq!(below.worst_share(), 0.04);
    }

    #[test]
    fn no_answers_no_health() {
        let h = AnswerHealth::of([&AnswerTally::default()]);
        assert_eq!(h, AnswerHealth::default());
        assert!(!h.broken());
        assert!(h.share(AnswerIssue::Loop).is_nan());
    }

    #[test]
    fn forced_lengths_off_on_the_mean() {
        let mut t = tally(10, 0);
        t.output_tokens = 880.0;
        let h = AnswerHealth::of([&t]);
        assert_eq!(h.length.as_ref().map(|l| l.mean_output), Some(88.0));
        assert!(h.broken());
        t.output_tokens = 900.0;
        assert!(!AnswerHealth::of([&t]).broken());
        t.forced = 0;
        t.output_tokens = 200.0;
        assert!(!AnswerHealth::of([&t]).broken(), "unforced may stop early");
    }
}
