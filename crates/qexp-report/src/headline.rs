//! The summary at the top of a report: a few headline numbers (peak
//! throughput, decode and TTFT ranges, failures) and the numbered flags.
//! An open-loop run's throughput is its offered load, so its headline gives
//! the achieved rate, SLO attainment, goodput and capacity instead of the
//! peak throughput.

use crate::format::{num, spread};
use crate::labels;
use crate::open_loop::capacity_clause;
use crate::views::{FlagView, Headline};
use qexp_analysis::format::percent;
use qexp_analysis::schedule::{ScheduleAnalysis, SchedulePoint};
use qexp_analysis::stats::Summary;
use qexp_analysis::{Flag, PointSummary, RunAnalysis};

/// Numbers the flags in detector order and names their points.
pub(crate) fn flag_views(flags: &[Flag], points: &[PointSummary]) -> Vec<FlagView> {
    let swept = labels::swept(points.iter().map(|p| &p.point));
    flags
        .iter()
        .enumerate()
        .map(|(i, f)| {
            let id = f.point_id();
            let point = id
                .and_then(|id| points.iter().find(|p| p.point.id == id))
                .map(|p| labels::short(&p.point, &swept));
            FlagView {
                number: i + 1,
                marker: format!("⚑{}", i + 1),
                severity: f.severity().to_string(),
                title: f.title().to_string(),
                point,
                point_id: id,
                message: f.to_string(),
                metrics: metrics_of(f),
            }
        })
        .collect()
}

/// The metrics a flag names (its `metric`, or each of its `metrics`), read
/// from its serialised form so that new flag kinds need no change here.
fn metrics_of(f: &Flag) -> Vec<String> {
    let v = serde_json::to_value(f).unwrap_or_default();
    let name = |m: &serde_json::Value| m.as_str().map(str::to_string);
    match (v.get("metric"), v.get("metrics").and_then(|m| m.as_array())) {
        (Some(m), _) => name(m).into_iter().collect(),
        (None, Some(list)) => list
            .iter()
            .filter_map(|m| m.get("metric").and_then(name))
            .collect(),
        (None, None) => Vec::new(),
    }
}

/// A point's label with its summary of one metric.
type Labelled<'a> = (String, &'a Summary);

/// The points with a summary of `metric`, labelled.
fn with<'a>(
    points: &'a [PointSummary],
    swept: &[qexp_analysis::Axis],
    metric: fn(&PointSummary) -> Option<&Summary>,
) -> Vec<Labelled<'a>> {
    points
        .iter()
        .filter_map(|p| metric(p).map(|s| (labels::short(&p.point, swept), s)))
        .collect()
}

/// The lowest and highest median.
fn extremes<'a>(v: &'a [Labelled<'a>]) -> Option<(&'a Labelled<'a>, &'a Labelled<'a>)> {
    let lo = v.iter().min_by(|a, b| a.1.median.total_cmp(&b.1.median))?;
    let hi = v.iter().max_by(|a, b| a.1.median.total_cmp(&b.1.median))?;
    Some((lo, hi))
}

/// A median where it was measured, with its spread over trials (a single
/// trial has none, and says only that).
fn at(unit: &str, (label, s): &Labelled) -> String {
    let spread = match s.n {
        1 => "n=1".to_owned(),
        n => format!("spread {}, n={n}", spread(&Some((*s).clone()))),
    };
    format!("{} {unit} at {label} ({spread})", num(s.median))
}

/// Headline numbers: peak aggregate, decode and TTFT ranges, requests and failures, flags.
pub(crate) fn headline(a: &RunAnalysis, flags: &[FlagView]) -> Vec<Headline> {
    let points = &a.points;
    let swept = labels::swept(points.iter().map(|p| &p.point));
    let mut out = Vec::new();
    let mut push = |label: &str, value: String| {
        out.push(Headline {
            label: label.into(),
            value,
        })
    };

    // Broken answers come first; healthy ones are said after the requests.
    let answers = answers_line(points, &swept);
    let broken = points.iter().any(|p| p.answers.broken());
    if let Some(v) = answers.as_ref().filter(|_| broken) {
        push("Answers", v.clone());
    }
    let accuracy = accuracy_line(a, &swept);
    let worse = a
        .accuracy_by_load
        .iter()
        .any(|c| c.diff.verdict == qexp_analysis::diff::Verdict::Worse);
    if let Some(v) = accuracy.as_ref().filter(|_| worse) {
        push("Accuracy", v.clone());
    }
    let parsed = parse_line(a, &swept);
    let falls = a
        .flags
        .iter()
        .any(|f| matches!(f, qexp_analysis::Flag::ParseRateFalls { .. }));
    if let Some(v) = parsed.as_ref().filter(|_| falls) {
        push("Parsed", v.clone());
    }
    for h in throughput_lines(a, &swept)
        .into_iter()
        .chain(range_lines(points, &swept))
    {
        push(h.label.as_str(), h.value);
    }
    push("Requests", requests_line(a));
    // A starved request class is a verdict on the deployment's fairness.
    let short = |id: u32| {
        points.iter().find(|p| p.point.id == id).map_or_else(
            || format!("point {id}"),
            |p| labels::short(&p.point, &swept),
        )
    };
    for line in a.classes.starved_lines(short) {
        push("Classes", line);
    }
    if let Some(v) = answers.filter(|_| !broken) {
        push("Answers", v);
    }
    if let Some(v) = accuracy.filter(|_| !worse) {
        push("Accuracy", v);
    }
    if let Some(v) = parsed.filter(|_| !falls) {
        push("Parsed", v);
    }
    push("Flags", flags_line(flags));
    out
}

/// The throughput line: the open-loop schedule's lines where every point
/// ran open-loop, else the peak aggregate output (said to be measured on
/// broken output where it was).
fn throughput_lines(a: &RunAnalysis, swept: &[qexp_analysis::Axis]) -> Vec<Headline> {
    let points = &a.points;
    let open_loop = !points.is_empty() && points.iter().all(|p| p.point.open_loop.is_some());
    if let Some(s) = a.schedule.as_ref().filter(|_| open_loop) {
        return open_loop_lines(s, swept);
    }
    if !a.manifest.target.api.streams() {
        // Embeddings and rerank answer once: requests per second is their throughput.
        let req = with(points, swept, |p| p.req_s.as_ref());
        return extremes(&req)
            .map(|(_, hi)| Headline {
                label: "Peak request throughput".into(),
                value: at("req/s", hi),
            })
            .into_iter()
            .collect();
    }
    let agg = with(points, swept, |p| p.agg_tok_s.as_ref());
    let Some((_, hi)) = extremes(&agg) else {
        return Vec::new();
    };
    let mut value = at("tok/s", hi);
    let broken = points
        .iter()
        .any(|p| p.answers.broken() && labels::short(&p.point, swept) == hi.0);
    if broken {
        value.push_str(", measured on broken output");
    }
    vec![Headline {
        label: "Peak aggregate output".into(),
        value,
    }]
}

/// The lowest and highest per-request decode rate and TTFT, each with
/// where it was measured.
fn range_lines(points: &[PointSummary], swept: &[qexp_analysis::Axis]) -> Vec<Headline> {
    let range = |v: &[Labelled], unit: &str| {
        extremes(v).map(|(lo, hi)| {
            if lo.0 == hi.0 {
                at(unit, lo)
            } else {
                format!("{}; {}", at(unit, lo), at(unit, hi))
            }
        })
    };
    let decode = range(&with(points, swept, |p| p.decode_tok_s.as_ref()), "tok/s");
    let ttft = range(&with(points, swept, |p| p.ttft_s.as_ref()), "s");
    [
        ("Per-request decode, lowest and highest", decode),
        ("TTFT, lowest and highest", ttft),
    ]
    .into_iter()
    .filter_map(|(label, v)| {
        v.map(|value| Headline {
            label: label.into(),
            value,
        })
    })
    .collect()
}

/// How many requests were measured, in how many points and trials, how
/// many failed, and how many points have no data.
fn requests_line(a: &RunAnalysis) -> String {
    let points = &a.points;
    let requests: u64 = points.iter().map(|p| p.requests).sum();
    let failures: u64 = points.iter().map(|p| p.failures).sum();
    let empty = points.iter().filter(|p| p.n == 0).count();
    let mut measured = format!(
        "{requests} measured requests in {} points × {} trials, {failures} failed",
        points.len(),
        a.manifest.trials
    );
    if empty > 0 {
        measured.push_str(&format!(
            "; {empty} of {} points have no data",
            points.len()
        ));
    }
    measured
}

/// The flags in a few words: none, or how many warnings and findings.
fn flags_line(flags: &[FlagView]) -> String {
    if flags.is_empty() {
        return "none".into();
    }
    let warnings = flags.iter().filter(|f| f.severity == "warning").count();
    let findings = flags.len() - warnings;
    format!(
        "{}, {} (listed below)",
        plural(warnings, "warning"),
        plural(findings, "finding")
    )
}

/// What the answers say, first of all when any point's are broken: which
/// points, and the worst issue at each; None for a run without answer
/// health (recorded before it existed).
fn answers_line(points: &[PointSummary], swept: &[qexp_analysis::Axis]) -> Option<String> {
    let checked: u64 = points.iter().map(|p| p.answers.checked).sum();
    if checked == 0 {
        return None;
    }
    let broken: Vec<String> = points
        .iter()
        .filter(|p| p.answers.broken())
        .map(|p| {
            let h = &p.answers;
            let worst = h
                .broken_issues()
                .max_by(|a, b| a.share.total_cmp(&b.share))
                .map(|s| format!("{} in {}", s.issue.describe(), percent(s.share)))
                .unwrap_or_else(|| "mean length off".into());
            format!("{} ({worst})", labels::with_deployment(&p.point, swept))
        })
        .collect();
    Some(match broken.len() {
        0 => format!(
            "{checked} answers checked, none broken (no issue in {} or more of a point's answers)",
            percent(qexp_types::answer::BROKEN_SHARE)
        ),
        n => format!(
            "BROKEN at {n} of {} points: {}; their throughput and latency were measured on broken output",
            points.len(),
            broken.join(", ")
        ),
    })
}

/// A share of a point's answers: the share, its interval, and the count
/// of the whole (right of answered, parsed of checked).
type Share = (f64, Option<(f64, f64)>, u64, u64);

/// `share [lo – hi] at POINT (k/n)` at the lowest load and, where it is
/// another point, at the highest; None without points.
fn lowest_and_highest(
    points: &[(&PointSummary, Share)],
    swept: &[qexp_analysis::Axis],
) -> Option<String> {
    let at = |(p, (share, interval, k, n)): &(&PointSummary, Share)| {
        let interval = interval.map_or(String::new(), |(lo, hi)| {
            format!(" [{} – {}]", percent(lo), percent(hi))
        });
        format!(
            "{}{interval} at {} ({k}/{n})",
            percent(*share),
            labels::with_deployment(&p.point, swept),
        )
    };
    let lo = points
        .iter()
        .min_by_key(|(p, _)| (p.point.concurrency, p.point.id))?;
    let hi = points
        .iter()
        .max_by_key(|(p, _)| (p.point.concurrency, p.point.id))?;
    Some(if lo.0.point.id == hi.0.point.id {
        at(lo)
    } else {
        format!("{}; {}", at(lo), at(hi))
    })
}

/// The graded answers' accuracy at the lowest and highest load, and the
/// loads where it is significantly worse than at the lowest; None without
/// graded items.
fn accuracy_line(a: &RunAnalysis, swept: &[qexp_analysis::Axis]) -> Option<String> {
    use qexp_analysis::accuracy::Accuracy;
    let graded: Vec<(&PointSummary, Share)> = a
        .points
        .iter()
        .filter_map(|p| {
            let acc = Accuracy::of(p)?;
            Some((p, (acc.share, acc.interval, acc.right, acc.answered)))
        })
        .collect();
    let mut line = lowest_and_highest(&graded, swept)?;
    let worse: Vec<String> = a
        .accuracy_by_load
        .iter()
        .filter(|c| c.diff.verdict == qexp_analysis::diff::Verdict::Worse)
        .filter_map(|c| a.points.iter().find(|p| p.point.id == c.point_id))
        .map(|p| labels::with_deployment(&p.point, swept))
        .collect();
    if !worse.is_empty() {
        line.push_str(&format!(
            "; significantly LESS ACCURATE than at the lowest load at {}",
            worse.join(", ")
        ));
    }
    Some(line)
}

/// The share of answers that parsed (tool calls, a response schema) at
/// the lowest and highest load, with its interval, and the points where it
/// fell under load (flagged); None where the plan asked no form.
fn parse_line(a: &RunAnalysis, swept: &[qexp_analysis::Axis]) -> Option<String> {
    let rated: Vec<(&PointSummary, Share)> = a
        .points
        .iter()
        .filter_map(|p| {
            let r = p.answers.parse.as_ref()?;
            Some((p, (r.share, r.interval, r.parsed, r.checked)))
        })
        .collect();
    let mut line = lowest_and_highest(&rated, swept)?;
    let falls: Vec<String> = a
        .flags
        .iter()
        .filter_map(|f| match f {
            qexp_analysis::Flag::ParseRateFalls { point_id, .. } => {
                a.points.iter().find(|p| p.point.id == *point_id)
            }
            _ => None,
        })
        .map(|p| labels::with_deployment(&p.point, swept))
        .collect();
    if !falls.is_empty() {
        line.push_str(&format!(
            "; FALLS under load at {} (beyond the noise of both points)",
            falls.join(", ")
        ));
    }
    Some(line)
}

/// An open-loop run's load lines: achieved against offered rate at the
/// lowest and highest offered rate, SLO attainment, goodput and capacity.
fn open_loop_lines(s: &ScheduleAnalysis, swept: &[qexp_analysis::Axis]) -> Vec<Headline> {
    let mut out = Vec::new();
    let label = |p: &SchedulePoint| labels::short(&p.point, swept);
    let by = |f: fn(&SchedulePoint) -> Option<f64>| {
        let mut v: Vec<(f64, &SchedulePoint)> = s
            .points
            .iter()
            .filter_map(|p| f(p).map(|x| (x, p)))
            .collect();
        v.sort_by(|a, b| a.0.total_cmp(&b.0));
        v
    };
    let rates = by(|p| p.planned_rate);
    let achieved = |(offered, p): &(f64, &SchedulePoint)| {
        format!(
            "{} req/s at {} (offered {})",
            num(p.median.achieved_rate),
            label(p),
            qexp_analysis::format::sig3(*offered)
        )
    };
    if let (Some(lo), Some(hi)) = (rates.first(), rates.last()) {
        let value = if lo.1.point.id == hi.1.point.id {
            achieved(lo)
        } else {
            format!("{}; {}", achieved(lo), achieved(hi))
        };
        push_line(&mut out, "Achieved rate, lowest and highest offered", value);
    }
    let attained = by(|p| p.median.slo_attainment);
    // The first point (plan order) of the highest attainment: the lowest load that reaches it.
    let top = attained.iter().rev().max_by(|a, b| a.0.total_cmp(&b.0));
    if let (Some(lo), Some(hi)) = (attained.first(), top) {
        let at = |(a, p): &(f64, &SchedulePoint)| format!("{}% at {}", num(a * 100.0), label(p));
        let value = if lo.0 == hi.0 {
            format!("{}% at every point", num(lo.0 * 100.0))
        } else {
            format!("{}; {}", at(lo), at(hi))
        };
        push_line(&mut out, "SLO attainment, lowest and highest", value);
    }
    if let Some((g, p)) = by(|p| p.median.goodput_rps).last() {
        push_line(
            &mut out,
            "Goodput, highest",
            format!("{} req/s meeting every SLO at {}", num(*g), label(p)),
        );
    }
    if !s.capacity.is_empty() {
        let all: Vec<String> = s.capacity.iter().map(capacity_clause).collect();
        push_line(&mut out, "Capacity", all.join(" "));
    }
    out
}

fn push_line(out: &mut Vec<Headline>, label: &str, value: String) {
    out.push(Headline {
        label: label.into(),
        value,
    });
}

fn plural(n: usize, word: &str) -> String {
    format!("{n} {word}{}", if n == 1 { "" } else { "s" })
}
