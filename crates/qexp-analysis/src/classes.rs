//! Request classes (`[[workload.class]]`): each point's figures per class
//! and their fairness — the share of requests each class got against its
//! planned share, its TTFT, its output (or, with `[slo]`, its goodput)
//! against its share, and whether a class is starved.
//!
//! Per (trial, point, class): the median and p90 TTFT, the median
//! per-request decode rate (1/TPOT) and the median E2E of the class's
//! successful requests, the median TTFT of every *other*
//! class's, its output tokens per second over the point's window (first
//! send → last completion of the whole point) and, with `[slo]`, the
//! requests per second that met every objective. Across trials, as for
//! points: the median and spread ([`Summary`]).
//!
//! **Starvation.** A class is starved at a point when, against the point
//! of the lowest load with the same lengths (and deployment), its median
//! TTFT grew more than [`STARVED_GROWTH`] times as much as the other
//! classes' did, and its median TTFT is above theirs in every trial of the
//! point. Only a class that is low-priority (a `priority` value above
//! another class's) or small (a planned share below 1/k of k classes) is
//! judged: a big, high-priority class waiting longer is not starvation.

use crate::columns::{f64s, u32s};
use crate::error::AnalysisError;
use crate::stats::quantile::{median, quantile};
use crate::stats::Summary;
use polars::prelude::*;
use qexp_plan::{ClassRecord, Point, SloSection};
use qexp_store::{requests as rq, Manifest};
use serde::Serialize;
use std::collections::BTreeMap;
use std::path::Path;

/// How many times the others' TTFT growth a class's must exceed to be starved.
pub const STARVED_GROWTH: f64 = 2.0;

/// One class at one point, across trials.
#[derive(Debug, Clone, Serialize)]
pub struct ClassPoint {
    /// The point's id.
    pub point_id: u32,
    /// The class's name.
    pub class: String,
    /// Its planned share of the requests (None when the plan no longer names it).
    pub planned_share: Option<f64>,
    /// Its `priority`, when it sends one.
    pub priority: Option<i64>,
    /// Measured requests of the class, all trials.
    pub requests: u64,
    /// Of them, failed.
    pub failures: u64,
    /// Its share of the point's measured requests, all trials.
    pub share: f64,
    /// Median TTFT per trial, across trials.
    pub ttft_p50_s: Option<Summary>,
    /// p90 TTFT per trial, across trials.
    pub ttft_p90_s: Option<Summary>,
    /// Median per-request decode tok/s (1/TPOT) per trial, across trials.
    pub decode_tok_s: Option<Summary>,
    /// Median E2E per trial, across trials.
    pub e2e_p50_s: Option<Summary>,
    /// The other classes' median TTFT per trial, across trials.
    pub others_ttft_p50_s: Option<Summary>,
    /// Output tokens per second over the point's window, across trials.
    pub tok_s: Option<Summary>,
    /// Its share of the point's output tokens (all trials).
    pub tok_share: Option<f64>,
    /// The share of the point's output tokens it should get if it were
    /// served as planned: its planned share of the requests weighted by the
    /// output tokens its requests planned (a class of longer answers
    /// should produce more than its share of the requests).
    pub tok_share_expected: Option<f64>,
    /// Requests per second that met every `[slo]` objective, across trials (with `[slo]`).
    pub goodput_rps: Option<Summary>,
    /// Its share of the point's goodput (all trials; with `[slo]`).
    pub goodput_share: Option<f64>,
    /// Median TTFT above the others' in every trial of the point.
    pub above_others: bool,
    /// Starved at this point (see the module's test).
    pub starved: Option<Starved>,
    /// Its figures in each trial where it had requests, in trial order
    /// (what `qexp diff` compares class by class).
    pub trials: Vec<ClassTrial>,
}

/// One class's figures in one trial of a point.
#[derive(Debug, Clone, Serialize)]
pub struct ClassTrial {
    /// The trial (block) number.
    pub trial: u32,
    /// Median TTFT of its successful requests (NaN when none).
    pub ttft_s: f64,
    /// Median decode tok/s (1/TPOT) of its successful requests (NaN when none).
    pub decode_tok_s: f64,
    /// Median E2E of its successful requests (NaN when none).
    pub e2e_s: f64,
}

/// Why a class is found starved at a point.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Starved {
    /// The point of the lowest load it is measured against.
    pub base_point_id: u32,
    /// Its median TTFT there over at the base point.
    pub growth: f64,
    /// The others' median TTFT there over at the base point.
    pub others_growth: f64,
}

/// Every class of a run at every point; empty when its rows carry no class.
#[derive(Debug, Clone, Default, Serialize)]
pub struct ClassAnalysis {
    /// By point (plan order), then class (plan order).
    pub rows: Vec<ClassPoint>,
    /// Whether the run had `[slo]` (goodput) or not (throughput).
    pub slo: bool,
}

impl ClassAnalysis {
    /// The classes at point `id`.
    pub fn at(&self, id: u32) -> impl Iterator<Item = &ClassPoint> {
        self.rows.iter().filter(move |r| r.point_id == id)
    }

    /// One sentence per starved class and point.
    pub fn starved_lines(&self, label: impl Fn(u32) -> String) -> Vec<String> {
        self.rows
            .iter()
            .filter_map(|r| {
                let s = r.starved.as_ref()?;
                Some(format!(
                    "class `{}` is starved at {}: its median TTFT grew ×{:.1} from {}, the other classes' ×{:.1}",
                    r.class,
                    label(r.point_id),
                    s.growth,
                    label(s.base_point_id),
                    s.others_growth
                ))
            })
            .collect()
    }
}

/// One measured request, as the class figures need it.
struct Req {
    ok: bool,
    ttft: f64,
    e2e: f64,
    tpot: f64,
    tokens: f64,
    planned_tokens: f64,
    good: bool,
    sent: f64,
    end: f64,
}

/// (point, trial) → class → its requests.
type Grouped = BTreeMap<(u32, u32), BTreeMap<String, Vec<Req>>>;

/// The class analysis of the run in `dir`.
pub fn of_run(dir: &Path, manifest: &Manifest) -> Result<ClassAnalysis, AnalysisError> {
    let q = |source| AnalysisError::Query {
        path: dir.to_path_buf(),
        source,
    };
    let scan = qexp_store::scan_requests(dir)?;
    let schema = scan.clone().collect_schema().map_err(q)?;
    if !schema.contains(rq::CLASS) {
        return Ok(ClassAnalysis::default());
    }
    let slo = SloSection::from_plan_text(&manifest.plan_text);
    let grouped = read(scan, schema.contains(rq::ITEM_ID), slo.as_ref()).map_err(q)?;
    if grouped.is_empty() {
        return Ok(ClassAnalysis::default());
    }
    let planned = ClassRecord::from_plan_text(&manifest.plan_text);
    let mut rows = Vec::new();
    for p in &manifest.points {
        rows.extend(point_classes(p.id, &grouped, &planned, slo.is_some()));
    }
    judge_starvation(&mut rows, &manifest.points, &planned);
    Ok(ClassAnalysis {
        rows,
        slo: slo.is_some(),
    })
}

/// The measured rows that carry a class, grouped.
fn read(scan: LazyFrame, items: bool, slo: Option<&SloSection>) -> PolarsResult<Grouped> {
    let mut keep = col(rq::WARMUP).not().and(col(rq::CLASS).is_not_null());
    if items {
        // Graded requests ask items, not the workload's prompts.
        keep = keep.and(col(rq::ITEM_ID).is_null());
    }
    let df = scan
        .filter(keep)
        .select([
            col(rq::POINT_ID),
            col(rq::TRIAL),
            col(rq::CLASS),
            col(rq::ERROR_CLASS).is_null().alias("ok"),
            col(rq::TTFT_S),
            col(rq::E2E_S),
            col(rq::TPOT_S),
            col(rq::QUEUE_S),
            col(rq::SENT_UNIX_S),
            col(rq::END_S),
            col(rq::COMPLETION_TOKENS),
            col(rq::OUTPUT_TOKENS_PLANNED),
        ])
        .collect()?;
    let (point, trial) = (u32s(&df, rq::POINT_ID)?, u32s(&df, rq::TRIAL)?);
    let class = df.column(rq::CLASS)?.str()?.clone();
    let ok = df.column("ok")?.bool()?.clone();
    let [ttft, e2e, tpot, queue, sent, end, tokens, planned] = [
        rq::TTFT_S,
        rq::E2E_S,
        rq::TPOT_S,
        rq::QUEUE_S,
        rq::SENT_UNIX_S,
        rq::END_S,
        rq::COMPLETION_TOKENS,
        rq::OUTPUT_TOKENS_PLANNED,
    ]
    .map(|c| f64s(&df, c));
    let (ttft, e2e, tpot, queue, sent, end, tokens, planned) =
        (ttft?, e2e?, tpot?, queue?, sent?, end?, tokens?, planned?);
    let mut out = Grouped::new();
    for i in 0..df.height() {
        let Some(name) = class.get(i) else { continue };
        let ok = ok.get(i).unwrap_or(false);
        let good = ok
            && slo
                .is_some_and(|s| crate::schedule::meets_slo(s, queue[i], ttft[i], e2e[i], tpot[i]));
        out.entry((point[i], trial[i]))
            .or_default()
            .entry(name.to_string())
            .or_default()
            .push(Req {
                ok,
                ttft: ttft[i],
                e2e: e2e[i],
                tpot: tpot[i],
                planned_tokens: planned[i],
                tokens: if ok && tokens[i].is_finite() {
                    tokens[i]
                } else {
                    0.0
                },
                good,
                sent: sent[i],
                end: sent[i] + end[i],
            });
    }
    Ok(out)
}

/// One trial's figures of one class at a point.
#[derive(Default)]
struct TrialFigures {
    requests: u64,
    failures: u64,
    ttft_p50: f64,
    ttft_p90: f64,
    decode_p50: f64,
    e2e_p50: f64,
    others_p50: f64,
    tokens: f64,
    good: u64,
    tok_s: f64,
    goodput: f64,
}

/// A sorted copy of the finite values.
fn sorted(values: impl Iterator<Item = f64>) -> Vec<f64> {
    let mut v: Vec<f64> = values.filter(|x| x.is_finite()).collect();
    v.sort_by(f64::total_cmp);
    v
}

/// One class's figures in one trial of a point whose classes' requests are `all`.
fn trial_figures(name: &str, all: &BTreeMap<String, Vec<Req>>) -> TrialFigures {
    let mine = all.get(name).map_or(&[][..], Vec::as_slice);
    let every = || all.values().flatten();
    let start = every().map(|r| r.sent).fold(f64::INFINITY, f64::min);
    let stop = every().map(|r| r.end).fold(f64::NEG_INFINITY, f64::max);
    let window = stop - start;
    let ttft = sorted(mine.iter().filter(|r| r.ok).map(|r| r.ttft));
    let others = sorted(
        all.iter()
            .filter(|(k, _)| k.as_str() != name)
            .flat_map(|(_, v)| v)
            .filter(|r| r.ok)
            .map(|r| r.ttft),
    );
    let q = |v: &[f64], p: f64| quantile(v, p).unwrap_or(f64::NAN);
    let tokens: f64 = mine.iter().map(|r| r.tokens).sum();
    let good = mine.iter().filter(|r| r.good).count() as u64;
    let per_s = |x: f64| if window > 0.0 { x / window } else { f64::NAN };
    TrialFigures {
        requests: mine.len() as u64,
        failures: mine.iter().filter(|r| !r.ok).count() as u64,
        ttft_p50: q(&ttft, 0.5),
        ttft_p90: q(&ttft, 0.9),
        decode_p50: q(
            &sorted(
                mine.iter()
                    .filter(|r| r.ok && r.tpot > 0.0)
                    .map(|r| 1.0 / r.tpot),
            ),
            0.5,
        ),
        e2e_p50: median(&sorted(mine.iter().filter(|r| r.ok).map(|r| r.e2e))).unwrap_or(f64::NAN),
        others_p50: q(&others, 0.5),
        tokens,
        good,
        tok_s: per_s(tokens),
        goodput: per_s(good as f64),
    }
}

/// Each class's figures at point `id`, in plan order (classes the plan no
/// longer names after them).
fn point_classes(
    id: u32,
    grouped: &Grouped,
    planned: &[ClassRecord],
    slo: bool,
) -> Vec<ClassPoint> {
    let (numbers, trials): (Vec<u32>, Vec<&BTreeMap<String, Vec<Req>>>) = grouped
        .range((id, 0)..=(id, u32::MAX))
        .map(|((_, t), v)| (*t, v))
        .unzip();
    let mut names: Vec<String> = planned.iter().map(|c| c.name.clone()).collect();
    for t in &trials {
        for k in t.keys() {
            if !names.contains(k) {
                names.push(k.clone());
            }
        }
    }
    let total = |f: &dyn Fn(&Req) -> f64| -> f64 {
        trials
            .iter()
            .flat_map(|t| t.values().flatten())
            .map(f)
            .sum()
    };
    let (all_requests, all_tokens, all_good) = (
        total(&|_| 1.0),
        total(&|r| r.tokens),
        total(&|r| f64::from(u8::from(r.good))),
    );
    let expected = expected_token_shares(&trials, planned);
    names
        .into_iter()
        .filter(|n| trials.iter().any(|t| t.contains_key(n)))
        .map(|name| {
            let figs: Vec<TrialFigures> = trials.iter().map(|t| trial_figures(&name, t)).collect();
            let across =
                |f: fn(&TrialFigures) -> f64| Summary::of(&figs.iter().map(f).collect::<Vec<_>>());
            let sum = |f: fn(&TrialFigures) -> f64| figs.iter().map(f).sum::<f64>();
            let share_of = |part: f64, whole: f64| (whole > 0.0).then(|| part / whole);
            let record = planned.iter().find(|c| c.name == name);
            ClassPoint {
                point_id: id,
                planned_share: record.map(|c| c.share),
                priority: record.and_then(|c| c.priority),
                requests: sum(|f| f.requests as f64) as u64,
                failures: sum(|f| f.failures as f64) as u64,
                share: share_of(sum(|f| f.requests as f64), all_requests).unwrap_or(0.0),
                ttft_p50_s: across(|f| f.ttft_p50),
                ttft_p90_s: across(|f| f.ttft_p90),
                decode_tok_s: across(|f| f.decode_p50),
                e2e_p50_s: across(|f| f.e2e_p50),
                others_ttft_p50_s: across(|f| f.others_p50),
                tok_s: across(|f| f.tok_s),
                tok_share: share_of(sum(|f| f.tokens), all_tokens),
                tok_share_expected: expected.get(&name).copied(),
                goodput_rps: slo.then(|| across(|f| f.goodput)).flatten(),
                goodput_share: slo
                    .then(|| share_of(sum(|f| f.good as f64), all_good))
                    .flatten(),
                above_others: figs.iter().all(|f| f.ttft_p50 > f.others_p50),
                starved: None,
                trials: numbers
                    .iter()
                    .zip(&trials)
                    .zip(&figs)
                    .filter(|((_, t), _)| t.contains_key(&name))
                    .map(|((&trial, _), f)| ClassTrial {
                        trial,
                        ttft_s: f.ttft_p50,
                        decode_tok_s: f.decode_p50,
                        e2e_s: f.e2e_p50,
                    })
                    .collect(),
                class: name,
            }
        })
        .collect()
}

/// Each planned class's expected share of a point's output tokens: its
/// planned share times the mean output tokens its requests planned, over
/// the same sum for every class. None for a class with no requests there.
fn expected_token_shares(
    trials: &[&BTreeMap<String, Vec<Req>>],
    planned: &[ClassRecord],
) -> BTreeMap<String, f64> {
    let weights: Vec<(String, f64)> = planned
        .iter()
        .filter_map(|c| {
            let mine: Vec<f64> = trials
                .iter()
                .filter_map(|t| t.get(&c.name))
                .flatten()
                .map(|r| r.planned_tokens)
                .filter(|x| x.is_finite())
                .collect();
            (!mine.is_empty()).then(|| {
                (
                    c.name.clone(),
                    c.share * mine.iter().sum::<f64>() / mine.len() as f64,
                )
            })
        })
        .collect();
    let total: f64 = weights.iter().map(|(_, w)| w).sum();
    weights
        .into_iter()
        .filter(|_| total > 0.0)
        .map(|(name, w)| (name, w / total))
        .collect()
}

/// Whether `class` is judged for starvation: low-priority (a `priority`
/// value above another class's) or small (share below 1/k).
fn judged(class: &str, planned: &[ClassRecord]) -> bool {
    let Some(c) = planned.iter().find(|c| c.name == class) else {
        return false;
    };
    let k = planned.len().max(1) as f64;
    let lower = c.priority.is_some_and(|p| {
        planned
            .iter()
            .any(|o| o.priority.unwrap_or(0) < p && o.name != c.name)
    });
    lower || c.share < 1.0 / k - 1e-9
}

/// The load a point puts on the server: its concurrency, or its first rate.
fn load(p: &Point) -> f64 {
    match &p.open_loop {
        Some(o) => o.stages.first().map_or(f64::NAN, |s| s.rate),
        None => f64::from(p.concurrency),
    }
}

/// Marks each judged class starved where the module's test holds, against
/// the point of the lowest load with the same lengths, images and deployment.
fn judge_starvation(rows: &mut [ClassPoint], points: &[Point], planned: &[ClassRecord]) {
    let median_of = |s: &Option<Summary>| s.as_ref().map_or(f64::NAN, |s| s.median);
    let same = |a: &Point, b: &Point| a.same_workload(b);
    let base_of = |p: &Point| {
        points
            .iter()
            .filter(|o| same(o, p))
            .min_by(|a, b| load(a).total_cmp(&load(b)))
            .map(|o| o.id)
    };
    let figures: BTreeMap<(u32, String), (f64, f64)> = rows
        .iter()
        .map(|r| {
            (
                (r.point_id, r.class.clone()),
                (median_of(&r.ttft_p50_s), median_of(&r.others_ttft_p50_s)),
            )
        })
        .collect();
    for r in rows
        .iter_mut()
        .filter(|r| judged(&r.class, planned) && r.above_others)
    {
        let Some(p) = points.iter().find(|p| p.id == r.point_id) else {
            continue;
        };
        let Some(base) = base_of(p).filter(|b| *b != p.id) else {
            continue;
        };
        let (Some(now), Some(then)) = (
            figures.get(&(p.id, r.class.clone())),
            figures.get(&(base, r.class.clone())),
        ) else {
            continue;
        };
        let (growth, others_growth) = (now.0 / then.0, now.1 / then.1);
        if growth.is_finite()
            && others_growth.is_finite()
            && growth > STARVED_GROWTH * others_growth
        {
            r.starved = Some(Starved {
                base_point_id: base,
                growth,
                others_growth,
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(name: &str, share: f64, priority: Option<i64>) -> ClassRecord {
        ClassRecord {
            name: name.into(),
            share,
            priority,
        }
    }

    #[test]
    fn only_low_priority_or_small_classes_are_judged() {
        let plan = [rec("high", 0.5, Some(0)), rec("low", 0.5, Some(10))];
        assert!(judged("low", &plan));
        assert!(!judged("high", &plan));
        let plan = [rec("big", 0.8, None), rec("small", 0.2, None)];
        assert!(judged("small", &plan));
        assert!(!judged("big", &plan));
    }

    fn req(ttft: f64, sent: f64) -> Req {
        Req {
            ok: true,
            ttft,
            e2e: ttft + 1.0,
            tpot: 0.02,
            planned_tokens: 10.0,
            tokens: 10.0,
            good: false,
            sent,
            end: sent + ttft + 1.0,
        }
    }

    #[test]
    fn a_trial_splits_its_window_among_the_classes() {
        let mut all = BTreeMap::new();
        all.insert("a".to_string(), vec![req(0.1, 0.0), req(0.3, 1.0)]);
        all.insert("b".to_string(), vec![req(2.0, 0.0)]);
        let a = trial_figures("a", &all);
        assert_eq!(a.requests, 2);
        assert!((a.ttft_p50 - 0.2).abs() < 1e-12);
        assert!((a.others_p50 - 2.0).abs() < 1e-12);
        assert!((a.decode_p50 - 50.0).abs() < 1e-9);
        // The point's window: 0 → 3 s (b ends at 0 + 2 + 1).
        assert!((a.tok_s - 20.0 / 3.0).abs() < 1e-12);
    }

    #[test]
    fn a_class_of_longer_answers_should_produce_more_than_its_share_of_requests() {
        let with = |planned: f64| Req {
            planned_tokens: planned,
            ..req(0.1, 0.0)
        };
        let mut t = BTreeMap::new();
        t.insert("chat".to_string(), vec![with(32.0), with(32.0)]);
        t.insert("digest".to_string(), (0..6).map(|_| with(64.0)).collect());
        let plan = [rec("chat", 0.25, None), rec("digest", 0.75, None)];
        let shares = expected_token_shares(&[&t], &plan);
        // 0.25 × 32 against 0.75 × 64: 8 / 56 and 48 / 56.
        assert!((shares["chat"] - 8.0 / 56.0).abs() < 1e-12, "{shares:?}");
        assert!((shares["digest"] - 48.0 / 56.0).abs() < 1e-12, "{shares:?}");
    }
}
