//! Fitting the model to measured per-(trial, point) medians (docs/model.md
//! "Fitting"): tokens per step from chunk sizes; prefill from TTFT at
//! concurrency 1 (weighted least squares on 1, L, L²); the schedule and the
//! batch limit by a search that replays every point; the decode step by least squares on the
//! batch size and context each point's steps saw in the replay, iterated to a
//! fixed point. Intervals: the whole fit redone on trials resampled with
//! replacement (the trial is the unit), joined with the regressions' own
//! t-intervals.

use crate::answers::{AnswerShape, AnswerSpread};
use crate::des::{quantile, simulate, Arrivals, Load, Outcome, Seen};
use crate::file::{
    BandWidth, Interval, ModelFile, ModelMetric, Ranges, Residual, KIND, SCHEMA_VERSION,
};
use crate::ols::{t95, wls, Wls};
use crate::params::{Coef, Params, Schedule};
use crate::warning::FitWarning;
use form::Form;
pub use form::{form_label, FormError, FormEvidence, PrefillForm};
use std::collections::BTreeMap;

pub(crate) mod form;

/// One (trial, point) of measured medians; NaN where not measured.
#[derive(Debug, Clone, PartialEq)]
pub struct Observation {
    /// The point's label, the same in every trial.
    pub label: String,
    /// Trial number. Observations of several runs fitted together number
    /// the `k`-th run's trials from `k ·` [`TRIALS_PER_RUN`]: each run's
    /// trials are resampled among themselves.
    pub trial: u32,
    /// Closed-loop concurrency (ignored when `rate_per_s` is set).
    pub concurrency: u32,
    /// Open-loop arrival rate, requests per second.
    pub rate_per_s: Option<f64>,
    /// Prompt tokens per request, image tokens included.
    pub input_tokens: f64,
    /// Of them, image tokens per request (0 without images).
    pub image_tokens: f64,
    /// Output tokens per request (the median answer's).
    pub output_tokens: f64,
    /// How the answers' lengths spread, where the model stopped them
    /// before the plan's length (None: all of one length).
    pub answers: Option<AnswerSpread>,
    /// Requests the point sent (per trial).
    pub requests: u32,
    /// Whether `requests` was recorded (false: an assumption, as for tables
    /// that do not say; then the queue-dominated TTFT cannot judge a batch
    /// limit, and the limit is searched on throughput and decode alone).
    pub requests_recorded: bool,
    /// Median TTFT, seconds.
    pub ttft_s: f64,
    /// 90th percentile TTFT, seconds.
    pub ttft_p90_s: f64,
    /// Median E2E, seconds.
    pub e2e_s: f64,
    /// Median per-request decode rate 1/TPOT, tokens per second.
    pub decode_tok_s: f64,
    /// Aggregate output tokens per second.
    pub agg_tok_s: f64,
    /// Mean tokens per streamed chunk.
    pub tokens_per_chunk: f64,
    /// Median gap between a request's chunks, pooled over the point's
    /// requests, seconds (NaN when not recorded, as in tables): the typical
    /// step, which the few steps that also prefill a prompt do not move.
    pub itl_p50_s: f64,
}

impl Observation {
    /// The load to replay for this point.
    pub fn load(&self) -> Load {
        Load {
            arrivals: match self.rate_per_s {
                Some(per_s) => Arrivals::Rate {
                    per_s,
                    seed: u64::from(self.trial),
                },
                None => Arrivals::Closed {
                    concurrency: self.concurrency.max(1),
                },
            },
            input_tokens: self.input_tokens,
            image_tokens: self.image_tokens,
            output_tokens: self.output_tokens,
            answers: self.answers,
            requests: self.requests.max(1),
        }
    }

    /// Its measured value of `m` (NaN when not measured).
    pub fn measured(&self, m: ModelMetric) -> f64 {
        match m {
            ModelMetric::TtftS => self.ttft_s,
            ModelMetric::TtftP90S => self.ttft_p90_s,
            ModelMetric::TpotS => 1.0 / self.decode_tok_s,
            ModelMetric::E2eS => self.e2e_s,
            ModelMetric::AggTokS => self.agg_tok_s,
        }
    }
}

/// A metric of a replayed point, as qexp's analysis computes it.
pub fn predicted(o: &Outcome, m: ModelMetric) -> f64 {
    match m {
        ModelMetric::TtftS => quantile(&o.ttft_s, 0.5),
        ModelMetric::TtftP90S => quantile(&o.ttft_s, 0.9),
        // Median of 1/TPOT, inverted: what the analysis's decode rate says.
        ModelMetric::TpotS => 1.0 / quantile(&inverse(&o.tpot_s()), 0.5),
        ModelMetric::E2eS => quantile(&o.e2e_s, 0.5),
        ModelMetric::AggTokS => o.agg_tok_s,
    }
}

fn inverse(v: &[f64]) -> Vec<f64> {
    v.iter().map(|x| 1.0 / x).collect()
}

/// How the fit runs.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FitOptions {
    /// Resampled refits for the intervals (0: the regressions' intervals only).
    pub replicates: usize,
    /// Seed of the resampling.
    pub seed: u64,
    /// `f`, the share of layers with full attention (recorded; `c = c·f / f`).
    pub full_attention_share: f64,
    /// The schedule to fit on; None: the one whose replay explains the points best.
    pub schedule: Option<Schedule>,
}

impl Default for FitOptions {
    fn default() -> Self {
        FitOptions {
            replicates: 40,
            seed: 1,
            full_attention_share: 1.0,
            schedule: None,
        }
    }
}

/// Observations that cannot be fitted.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum FitError {
    /// Nothing to fit.
    #[error("no measured points to fit (every point failed or had no timing)")]
    Empty,
    /// No TTFT at a concurrency point (the prefill is fitted on those).
    #[error("no concurrency point has a TTFT: the prefill is fitted on closed-loop points (open-loop rates alone do not separate prefill from queueing); run concurrency 1 at two or more input lengths")]
    NoTtft,
    /// A singular design.
    #[error("the {0} fit is singular: the points do not vary enough")]
    Singular(&'static str),
    /// A bad option.
    #[error("full attention share must be in (0, 1], got {0}")]
    Share(f64),
}

/// A regression: the coefficients of its columns and its solution.
type Regression = (Vec<Coef>, Wls);

/// One estimate from a set of rows, with what it could not tell.
struct Estimate {
    params: Params,
    warnings: Vec<FitWarning>,
    regressions: Vec<Regression>,
    /// How strongly the runs chose the form (None: the form was given).
    evidence: Option<FormEvidence>,
}

/// Trial numbers of the `k`-th run fitted together start at `k ·
/// TRIALS_PER_RUN`. The refits draw each run's trials from that run alone (a
/// stratum): a refit drawn from one run's trials only would lose the points
/// that identify a term (the input lengths of a long-context run, say), fit
/// it as 0 and drag its interval to 0.
pub const TRIALS_PER_RUN: u32 = 100_000;

/// The trials of `rows` by run (see [`TRIALS_PER_RUN`]), each run's sorted.
pub(crate) fn strata(rows: &[&Observation]) -> BTreeMap<u32, Vec<u32>> {
    let mut by_run: BTreeMap<u32, Vec<u32>> = BTreeMap::new();
    for r in rows {
        by_run
            .entry(r.trial / TRIALS_PER_RUN)
            .or_default()
            .push(r.trial);
    }
    for t in by_run.values_mut() {
        t.sort_unstable();
        t.dedup();
    }
    by_run
}

/// Fits the model to `rows`; the caller fills in `sources`.
pub fn fit(rows: &[Observation], opts: &FitOptions) -> Result<ModelFile, FitError> {
    let f = opts.full_attention_share;
    if !(f > 0.0 && f <= 1.0) {
        return Err(FitError::Share(f));
    }
    let rows: Vec<&Observation> = rows.iter().collect();
    if rows.is_empty() {
        return Err(FitError::Empty);
    }
    let est = estimate(&rows, Pin::Search(opts.schedule))?;
    let replicates = resample(&rows, opts, &est.params);
    let mut warnings = est.warnings.clone();
    let unknown: Vec<Coef> = {
        let mut u: Vec<Coef> = warnings.iter().flat_map(FitWarning::unknown).collect();
        u.sort();
        u.dedup();
        u
    };
    // Degrees of freedom of the resampled spread: each run's trials less one.
    let df: usize = strata(&rows).values().map(|t| t.len() - 1).sum();
    let ranges = ranges(&rows);
    // A refit that found no batch limit says only that N is at least the
    // highest concurrency run.
    let no_limit = ranges.concurrency.map(|[_, hi]| hi);
    let intervals = intervals(&est, &replicates, df, &unknown, no_limit);
    for i in &intervals {
        let v = i.coef.get(&est.params).unwrap_or(0.0);
        if i.lo <= 0.0 && v > 0.0 && i.coef != Coef::MaxBatch {
            warnings.push(FitWarning::IncludesZero { coef: i.coef });
        }
    }
    if df == 0 {
        warnings.push(FitWarning::OneTrial);
    } else if replicates.is_empty() {
        warnings.push(FitWarning::NoRefits {
            asked: opts.replicates,
        });
    }
    let residuals = residuals(&rows, &est.params);
    Ok(ModelFile {
        schema_version: SCHEMA_VERSION,
        kind: KIND.to_owned(),
        qexp_version: env!("CARGO_PKG_VERSION").to_owned(),
        sources: Vec::new(),
        full_attention_share: f,
        params: est.params,
        intervals,
        unknown,
        warnings,
        ranges,
        band: band(&residuals),
        residuals,
        replicates,
        evidence: est.evidence,
        power: None,
        answers: answer_shape(&rows),
    })
}

/// The answers' shape over the distinct points of `rows` (each point's
/// load, as [`Points`] replays it).
fn answer_shape(rows: &[&Observation]) -> Option<AnswerShape> {
    let points: Vec<(f64, Option<AnswerSpread>)> = Points::of(rows)
        .0
        .values()
        .map(|l| (l.output_tokens, l.answers))
        .collect();
    AnswerShape::of(&points)
}

/// What the fit may choose: the form searched on a schedule (None: every
/// schedule the runs show), or one form kept as it is (a resampled refit
/// keeps the point estimate's).
#[derive(Debug, Clone, Copy, PartialEq)]
enum Pin {
    Search(Option<Schedule>),
    Form(Form),
}

/// The point estimate from `rows`, in the form `pin` allows that explains
/// the points best.
fn estimate(rows: &[&Observation], pin: Pin) -> Result<Estimate, FitError> {
    let mut warnings = Vec::new();
    let mut regressions = Vec::new();
    let chunks: Vec<f64> = rows
        .iter()
        .map(|r| r.tokens_per_chunk)
        .filter(|s| s.is_finite() && *s > 0.0)
        .collect();
    let tokens_per_step = if chunks.is_empty() {
        warnings.push(FitWarning::NoChunks);
        1.0
    } else {
        quantile(&chunks, 0.5).max(1.0)
    };
    let (prefill, reg) = fit_prefill(rows, &mut warnings)?;
    regressions.extend(reg);
    let base = Params {
        prefill_fixed_s: prefill[0],
        prefill_s_per_token: prefill[1],
        prefill_s_per_token2: prefill[2],
        prefill_s_per_image_token: prefill[3],
        step_base_s: 0.0,
        step_per_seq_s: 0.0,
        step_per_context_token_s: 0.0,
        tokens_per_step,
        max_batch: None,
        schedule: Schedule::Separate,
        intake_s: crate::INTAKE_S,
        prefill_units: Some(1),
    };
    let forms = match pin {
        Pin::Form(f) => vec![f],
        Pin::Search(schedule) => {
            let gap = schedule_gap(rows);
            warnings.extend(gap.clone());
            let schedules = match (schedule, &gap) {
                (Some(s), _) => vec![s],
                (None, None) => Schedule::ALL.to_vec(),
                (None, Some(_)) => vec![Schedule::Separate],
            };
            form::candidates(&schedules, None, gap.is_none(), c_max(rows))
        }
    };
    let (best, evidence) = choose_form(rows, base, &forms)?;
    let (params, decode_warnings, reg) = best;
    warnings.extend(decode_warnings);
    regressions.extend(reg);
    Ok(Estimate {
        params,
        warnings,
        regressions,
        // One form tried (given, or all the runs allow): nothing was chosen.
        evidence: (evidence.tried.len() > 1).then_some(evidence),
    })
}

/// The highest closed-loop concurrency of `rows` (1 when none).
fn c_max(rows: &[&Observation]) -> u32 {
    rows.iter()
        .filter(|r| r.rate_per_s.is_none())
        .map(|r| r.concurrency.max(1))
        .max()
        .unwrap_or(1)
}

/// Each of `forms` fitted on `base` (its batch limit and decode step
/// searched), the one whose replay explains the points best (a tie keeps
/// the earlier), and the evidence: each form family's best error.
fn choose_form(
    rows: &[&Observation],
    base: Params,
    forms: &[Form],
) -> Result<(DecodeFit, FormEvidence), FitError> {
    let points = Points::of(rows);
    let mut best: Option<(DecodeFit, f64)> = None;
    let mut tried: Vec<FormError> = Vec::new();
    for form in forms {
        let mut p = form.apply(base);
        // TTFT at concurrency 1 holds the idle engine's intake window on
        // the mixed schedule: the window is the replay's, not `a`'s.
        if p.schedule == Schedule::Mixed {
            p.prefill_fixed_s = (p.prefill_fixed_s - p.intake_s).max(0.0);
        }
        let (fit, obj) = search_batch_limit(rows, &points, p);
        let family = PrefillForm::of(&fit.0);
        match tried.iter_mut().find(|e| e.form == family) {
            Some(e) => e.error = e.error.min(obj),
            None => tried.push(FormError {
                form: family,
                error: obj,
            }),
        }
        if best.as_ref().is_none_or(|(_, b)| obj < *b) {
            best = Some((fit, obj));
        }
    }
    let (fit, _) = best.ok_or(FitError::Empty)?;
    tried.sort_by_key(|e| PrefillForm::ALL.iter().position(|f| *f == e.form));
    let evidence = FormEvidence {
        chosen: PrefillForm::of(&fit.0),
        tried,
    };
    Ok((fit, evidence))
}

/// Why the runs cannot tell how prompts meet, if they cannot: the schedule
/// and whether prefills queue set the TTFT of a prompt that meets other
/// requests, so a TTFT is needed at concurrency above 1 (or at a rate),
/// where the request count that sets the queue was recorded; and how TTFT
/// grows with load shows only across two loads (two concurrencies, or a
/// rate beside a concurrency), not at one concurrency above 1, where the
/// prefill terms absorb whatever queueing there is.
fn schedule_gap(rows: &[&Observation]) -> Option<FitWarning> {
    let met = |r: &&&Observation| {
        (r.rate_per_s.is_some() || r.concurrency > 1)
            && r.requests_recorded
            && r.ttft_s.is_finite()
            && r.ttft_s > 0.0
    };
    if !rows.iter().any(|r| met(&r)) {
        return Some(FitWarning::ScheduleUnknown);
    }
    let timed = |r: &&&Observation| r.ttft_s.is_finite() && r.ttft_s > 0.0;
    let mut loads: Vec<u32> = rows
        .iter()
        .filter(timed)
        .filter(|r| r.rate_per_s.is_none())
        .map(|r| r.concurrency.max(1))
        .collect();
    loads.sort_unstable();
    loads.dedup();
    let rates = rows.iter().filter(timed).any(|r| r.rate_per_s.is_some());
    match loads.as_slice() {
        [c] if !rates => Some(FitWarning::OneConcurrency { concurrency: *c }),
        _ => None,
    }
}

/// The distinct points of a set of rows: label → the load to replay.
struct Points(BTreeMap<String, Load>);

impl Points {
    fn of(rows: &[&Observation]) -> Points {
        let mut m = BTreeMap::new();
        for r in rows {
            m.entry(r.label.clone()).or_insert_with(|| r.load());
        }
        Points(m)
    }

    fn replay(&self, p: &Params) -> BTreeMap<&str, Outcome> {
        self.0
            .iter()
            .map(|(k, load)| (k.as_str(), simulate(p, load)))
            .collect()
    }
}

/// How far apart two prompt lengths must be to count as two: a run of
/// dataset prompts samples them with replacement, so its trials' mean
/// lengths differ by a few tokens without the plan sweeping anything.
const SAME_LENGTH: f64 = 0.10;

/// The distinct lengths of `v`: sorted, each the first of a cluster whose
/// members lie within [`SAME_LENGTH`] (and a token) of it.
fn distinct(v: impl Iterator<Item = f64>) -> Vec<f64> {
    let mut d: Vec<f64> = v.map(f64::round).collect();
    d.sort_by(f64::total_cmp);
    d.dedup_by(|x, first| *x <= *first * (1.0 + SAME_LENGTH) + 1.0);
    d
}

/// `a, b, c·f` (and `e`, where the runs sent images) from TTFT at the
/// lowest concurrency, by input length.
fn fit_prefill(
    rows: &[&Observation],
    warnings: &mut Vec<FitWarning>,
) -> Result<([f64; 4], Option<Regression>), FitError> {
    let closed: Vec<&Observation> = rows
        .iter()
        .copied()
        .filter(|r| r.rate_per_s.is_none() && r.ttft_s.is_finite() && r.ttft_s > 0.0)
        .collect();
    let c_min = closed
        .iter()
        .map(|r| r.concurrency.max(1))
        .min()
        .ok_or(FitError::NoTtft)?;
    if c_min > 1 {
        warnings.push(FitWarning::NotAlone { concurrency: c_min });
    }
    let sel: Vec<&Observation> = closed
        .into_iter()
        .filter(|r| r.concurrency.max(1) == c_min)
        .collect();
    let lengths = distinct(sel.iter().map(|r| r.input_tokens));
    let mut coefs = vec![Coef::PrefillFixed];
    match lengths.as_slice() {
        [l] => warnings.push(FitWarning::OneInputLength { tokens: *l }),
        [x, y] => {
            coefs.push(Coef::PrefillPerToken);
            warnings.push(FitWarning::TwoInputLengths { tokens: [*x, *y] });
        }
        _ => coefs.extend([Coef::PrefillPerToken, Coef::PrefillPerToken2]),
    }
    coefs.extend(image_term(&sel, warnings));
    let y: Vec<f64> = sel.iter().map(|r| r.ttft_s).collect();
    let w: Vec<f64> = y.iter().map(|y| 1.0 / (y * y)).collect();
    loop {
        let x: Vec<Vec<f64>> = sel
            .iter()
            .map(|r| coefs.iter().map(|c| prefill_column(*c, r)).collect())
            .collect();
        let Some(fit) = wls(&x, &y, &w) else {
            // Images that move with the text lengths leave the image term
            // to the per-token one.
            if let Some(j) = coefs.iter().position(|c| *c == Coef::PrefillPerImageToken) {
                coefs.remove(j);
                warnings.push(not_separated(&sel));
                continue;
            }
            return Err(FitError::Singular("prefill"));
        };
        if let Some(j) = (0..coefs.len()).rev().find(|&j| fit.beta[j] < 0.0) {
            if coefs.len() > 1 {
                warnings.push(FitWarning::NegativeTerm {
                    coef: coefs[j],
                    value: fit.beta[j],
                });
                coefs.remove(j);
                continue;
            }
        }
        let mut out = [0.0; 4];
        for (c, b) in coefs.iter().zip(&fit.beta) {
            out[prefill_index(*c)] = b.max(0.0);
        }
        return Ok((out, Some((coefs, fit))));
    }
}

/// The image term, where the prefill points can tell it: their prompts
/// carried images of two or more token counts, at two or more text
/// lengths. At one text length the image tokens move the prompt's length
/// with them, and their own cost cannot be told from the per-token one
/// (a warning says so); without images there is nothing to tell.
fn image_term(sel: &[&Observation], warnings: &mut Vec<FitWarning>) -> Option<Coef> {
    let images = distinct(sel.iter().map(|r| r.image_tokens));
    if images.iter().all(|i| *i == 0.0) {
        return None;
    }
    let texts = distinct(sel.iter().map(|r| r.input_tokens - r.image_tokens));
    if images.len() >= 2 && texts.len() >= 2 {
        return Some(Coef::PrefillPerImageToken);
    }
    warnings.push(not_separated(sel));
    None
}

/// The warning that the image term is not told apart, for these points.
fn not_separated(sel: &[&Observation]) -> FitWarning {
    let images = distinct(sel.iter().map(|r| r.image_tokens));
    let texts = distinct(sel.iter().map(|r| r.input_tokens - r.image_tokens));
    FitWarning::ImagesNotSeparated {
        image_tokens: [images[0], images[images.len() - 1]],
        text_lengths: texts.len(),
    }
}

fn prefill_column(c: Coef, r: &Observation) -> f64 {
    let l = r.input_tokens;
    match c {
        Coef::PrefillPerToken => l,
        Coef::PrefillPerToken2 => l * l,
        Coef::PrefillPerImageToken => r.image_tokens,
        _ => 1.0,
    }
}

fn prefill_index(c: Coef) -> usize {
    match c {
        Coef::PrefillPerToken => 1,
        Coef::PrefillPerToken2 => 2,
        Coef::PrefillPerImageToken => 3,
        _ => 0,
    }
}

/// What a decode fit gives: the parameters, its warnings and its regression.
type DecodeFit = (Params, Vec<FitWarning>, Vec<Regression>);

/// The batch limit whose replay explains the points best, each candidate
/// with its own decode fit; "no limit" unless a limit explains clearly
/// better. Also gives that fit's objective ([`objective`]).
fn search_batch_limit(rows: &[&Observation], points: &Points, base: Params) -> (DecodeFit, f64) {
    let c_max = c_max(rows);
    let eval = |n: Option<u32>| {
        let fit = fit_decode(
            rows,
            points,
            Params {
                max_batch: n,
                ..base
            },
        );
        let obj = objective(rows, points, &fit.0);
        (fit, obj)
    };
    let (unlimited, obj_none) = eval(None);
    let mut best: Option<(DecodeFit, f64)> = None;
    let consider = |n: u32, best: &mut Option<(DecodeFit, f64)>| {
        let (fit, obj) = eval(Some(n));
        if best.as_ref().is_none_or(|(_, b)| obj < *b) {
            *best = Some((fit, obj));
        }
    };
    let grid = candidate_grid(c_max);
    for &n in &grid {
        consider(n, &mut best);
    }
    // Refine between the best grid value's neighbours.
    if let Some(n) = best.as_ref().and_then(|(f, _)| f.0.max_batch) {
        let i = grid.iter().position(|g| *g == n).unwrap_or(0);
        let lo = grid.get(i.wrapping_sub(1)).copied().unwrap_or(1);
        let hi = grid.get(i + 1).copied().unwrap_or(c_max.saturating_sub(1));
        for m in lo..=hi {
            if !grid.contains(&m) {
                consider(m, &mut best);
            }
        }
    }
    match best {
        // A limit must explain the points clearly better than none.
        Some((fit, obj)) if obj < 0.9 * obj_none - 1e-12 => (fit, obj),
        _ => {
            let (p, mut w, r) = unlimited;
            w.push(FitWarning::NoBatchLimit { concurrency: c_max });
            ((p, w, r), obj_none)
        }
    }
}

/// Batch limits to try below `c_max`: all of them when few, else a
/// geometric grid (refined around the best afterwards).
fn candidate_grid(c_max: u32) -> Vec<u32> {
    if c_max <= 24 {
        return (1..c_max).collect();
    }
    let mut g = Vec::new();
    let mut x = 1.0_f64;
    while (x as u32) < c_max {
        g.push(x as u32);
        x = (x * 1.25).max(x + 1.0);
    }
    g.dedup();
    g
}

/// Squared log errors of every measured median against the replay.
fn objective(rows: &[&Observation], points: &Points, p: &Params) -> f64 {
    let outcomes = points.replay(p);
    let mut sum = 0.0;
    for r in rows {
        let Some(o) = outcomes.get(r.label.as_str()) else {
            continue;
        };
        for m in [ModelMetric::TtftS, ModelMetric::TpotS, ModelMetric::AggTokS] {
            if m == ModelMetric::TtftS && !r.requests_recorded {
                continue;
            }
            let (want, got) = (r.measured(m), predicted(o, m));
            if want.is_finite() && want > 0.0 && got.is_finite() && got > 0.0 {
                sum += (got / want).ln().powi(2);
            }
        }
    }
    sum
}

/// A decode step observed at one row, and whether it is the median gap
/// between chunks. On the mixed schedule that gap is taken when the run
/// recorded it: it is the typical step, which the few steps that also
/// prefill a prompt do not move. The TPOT instead holds every stall of the
/// request's steps, and those depend on which prompts shared a step, which
/// a server decides by when each prompt arrived (llama.cpp prefilled a
/// closed loop's burst of two prompts together in some rounds and one after
/// the other in others), while the replay's burst arrives at one instant.
/// Else (the separate schedule, or a table) the TPOT spread over the steps.
fn observed_step(r: &Observation, p: &Params) -> Option<(f64, bool)> {
    let chunks = p.chunks(r.output_tokens);
    if chunks < 2.0 {
        return None;
    }
    if p.schedule == Schedule::Mixed && r.itl_p50_s.is_finite() && r.itl_p50_s > 0.0 {
        return Some((r.itl_p50_s, true));
    }
    let step = (r.output_tokens - 1.0) / r.decode_tok_s / (chunks - 1.0);
    (step.is_finite() && step > 0.0).then_some((step, false))
}

/// `d0, d1, d2` for a fixed batch limit: least squares of each row's step on
/// the batch and context its point's replay saw, replayed again with the
/// new coefficients until they settle: the median TPOT's request's steps,
/// or the step at the median gap ([`observed_step`]). On the mixed schedule
/// the prefill compute those steps carried in the replay (known from the
/// prefill fit) is taken off the observed step first.
fn fit_decode(rows: &[&Observation], points: &Points, base: Params) -> DecodeFit {
    let obs: Vec<(&Observation, f64, bool)> = rows
        .iter()
        .filter_map(|r| observed_step(r, &base).map(|(s, gap)| (*r, s, gap)))
        .collect();
    if obs.is_empty() {
        return (base, vec![FitWarning::NoDecode], Vec::new());
    }
    let steps: Vec<f64> = obs.iter().map(|(_, s, _)| *s).collect();
    let mut p = Params {
        step_base_s: quantile(&steps, 0.5),
        ..base
    };
    let mut last = (Vec::new(), None);
    // Settles in a few rounds; the bound only guards against a cycle.
    for _ in 0..8 {
        let decode = decode_samples(&obs, &points.replay(&p));
        if decode.is_empty() {
            break;
        }
        let (coefs, mut warnings) = decode_columns(decode.iter().map(|(seen, _)| *seen));
        let Some(reg) = regress_decode(&decode, coefs, &mut warnings) else {
            break;
        };
        let before = p;
        p = with_decode_terms(p, &reg);
        last = (warnings, Some(reg));
        if p == before {
            break;
        }
    }
    let (mut warnings, reg) = last;
    if reg.is_none() {
        // No regression at all: d0 is the median observed step, and the
        // per-sequence and per-token terms are unknown.
        warnings = [Coef::StepPerSeq, Coef::StepPerContextToken]
            .map(|coef| FitWarning::DecodeUnresolved { coef, points: 0 })
            .to_vec();
    }
    (p, warnings, reg.into_iter().collect())
}

/// The decode part of each observed step (`obs`: row, step, whether it is
/// the median gap), with what that step saw in the replay `seen`: the
/// median TPOT's request's steps, or the step at the median gap. A row
/// whose step the replay's stalls already exceed tells nothing about
/// decode and is left out, as is one the replay did not run (none: the
/// replay is of the same rows).
fn decode_samples(
    obs: &[(&Observation, f64, bool)],
    seen: &BTreeMap<&str, Outcome>,
) -> Vec<(Seen, f64)> {
    obs.iter()
        .filter_map(|(r, s, gap)| {
            let o = seen.get(r.label.as_str())?;
            let at = match o.median_gap {
                Some((_, seen)) if *gap => seen,
                _ => o.median_request_seen(),
            };
            Some((at, s - at.stall_s))
        })
        .filter(|(_, y)| *y > 0.0)
        .collect()
}

/// Weighted least squares of the decode steps on `coefs`' columns (weights
/// `1/y²`, as for the prefill). While the points have too few distinct
/// (batch, context) pairs for the columns, the last term is dropped and
/// left unknown rather than fitted as 0 unsaid; a term that comes out
/// negative is dropped too; each drop is a warning. `None` when not even
/// `d0` can be fitted.
fn regress_decode(
    decode: &[(Seen, f64)],
    mut coefs: Vec<Coef>,
    warnings: &mut Vec<FitWarning>,
) -> Option<Regression> {
    let y: Vec<f64> = decode.iter().map(|(_, y)| *y).collect();
    let w: Vec<f64> = y.iter().map(|y| 1.0 / (y * y)).collect();
    loop {
        let x: Vec<Vec<f64>> = decode
            .iter()
            .map(|(seen, _)| {
                coefs
                    .iter()
                    .map(|c| step_column(*c, seen.batch, seen.context))
                    .collect()
            })
            .collect();
        let Some(fit) = wls(&x, &y, &w) else {
            match coefs.pop() {
                Some(coef) if !coefs.is_empty() => {
                    warnings.push(FitWarning::DecodeUnresolved {
                        coef,
                        points: decode.len(),
                    });
                    continue;
                }
                _ => return None,
            }
        };
        match (1..coefs.len()).rev().find(|&j| fit.beta[j] < 0.0) {
            Some(j) => {
                warnings.push(FitWarning::NegativeTerm {
                    coef: coefs[j],
                    value: fit.beta[j],
                });
                coefs.remove(j);
            }
            None => return Some((coefs, fit)),
        }
    }
}

/// `p` with its decode terms taken from the regression (clamped at 0); a
/// term the regression left out is 0.
fn with_decode_terms(mut p: Params, (coefs, fit): &Regression) -> Params {
    p.step_base_s = 0.0;
    p.step_per_seq_s = 0.0;
    p.step_per_context_token_s = 0.0;
    for (c, b) in coefs.iter().zip(&fit.beta) {
        c.set(&mut p, b.max(0.0));
    }
    p
}

/// The step regression's columns, by what the points' batches and contexts let it tell.
fn decode_columns(seen: impl Iterator<Item = Seen>) -> (Vec<Coef>, Vec<FitWarning>) {
    let seen: Vec<(f64, f64)> = seen.map(|s| (s.batch, s.context)).collect();
    let mut coefs = vec![Coef::StepBase];
    let mut warnings = Vec::new();
    let (b_min, b_max) = seen
        .iter()
        .fold((f64::INFINITY, 0.0_f64), |(lo, hi), (b, _)| {
            (lo.min(*b), hi.max(*b))
        });
    if b_max - b_min > 0.25 {
        coefs.push(Coef::StepPerSeq);
    } else {
        warnings.push(FitWarning::OneBatchSize { batch: b_max });
    }
    let per_seq: Vec<f64> = seen.iter().map(|(b, k)| k / b.max(1e-9)).collect();
    let lo = per_seq.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = per_seq.iter().copied().fold(0.0, f64::max);
    if hi > 1.05 * lo && hi > 0.0 {
        coefs.push(Coef::StepPerContextToken);
    } else {
        warnings.push(FitWarning::OneContext);
    }
    (coefs, warnings)
}

fn step_column(c: Coef, batch: f64, context: f64) -> f64 {
    match c {
        Coef::StepPerSeq => (batch - 1.0).max(0.0),
        Coef::StepPerContextToken => context,
        _ => 1.0,
    }
}

/// Refits on trials drawn with replacement, each run's from its own (see
/// [`TRIALS_PER_RUN`]), on the point estimate's schedule and intake window;
/// none where no run has 2 trials.
fn resample(rows: &[&Observation], opts: &FitOptions, point: &Params) -> Vec<Params> {
    draws(&strata(rows), opts)
        .iter()
        .filter_map(|drawn| {
            let sample: Vec<&Observation> = drawn
                .iter()
                .flat_map(|t| rows.iter().copied().filter(move |r| r.trial == *t))
                .collect();
            estimate(&sample, Pin::Form(Form::of(point)))
                .ok()
                .map(|e| e.params)
        })
        .collect()
}

/// The trials of each resampled refit: every run's trials drawn with
/// replacement from that run's (`strata`), `opts.replicates` times from
/// `opts.seed`; none when no run has two trials. The power fit draws the
/// same trials as the timing fit.
pub(crate) fn draws(strata: &BTreeMap<u32, Vec<u32>>, opts: &FitOptions) -> Vec<Vec<u32>> {
    if strata.values().all(|t| t.len() < 2) {
        return Vec::new();
    }
    let mut rng = opts.seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let mut next = move || {
        // xorshift64*: enough for drawing trial indices.
        rng ^= rng >> 12;
        rng ^= rng << 25;
        rng ^= rng >> 27;
        rng.wrapping_mul(0x2545_F491_4F6C_DD1D)
    };
    (0..opts.replicates)
        .map(|_| {
            strata
                .values()
                .flat_map(|trials| {
                    (0..trials.len())
                        .map(|_| trials[(next() % trials.len() as u64) as usize])
                        .collect::<Vec<u32>>()
                })
                .collect()
        })
        .collect()
}

/// Each identified coefficient's 90% interval: the resampled 5th–95th
/// percentiles, widened to ± t(`df`) resampled standard errors (`df`: each
/// run's trials less one), joined with the regression's t-interval. A refit
/// with no batch limit counts as a limit of `no_limit` (the highest
/// concurrency run), so that the interval of N reaches up to it.
fn intervals(
    est: &Estimate,
    replicates: &[Params],
    df: usize,
    unknown: &[Coef],
    no_limit: Option<f64>,
) -> Vec<Interval> {
    Coef::ALL
        .into_iter()
        .filter(|c| !unknown.contains(c))
        // Runs without images have no image term to give an interval.
        .filter(|c| *c != Coef::PrefillPerImageToken || est.params.prefill_s_per_image_token > 0.0)
        .filter_map(|coef| {
            let value = coef.get(&est.params)?;
            let reps: Vec<f64> = replicates
                .iter()
                .filter_map(|p| match (coef, p.max_batch) {
                    (Coef::MaxBatch, None) => no_limit,
                    _ => coef.get(p),
                })
                .collect();
            let [mut lo, mut hi] = resampled_interval(value, &reps, df);
            // Each regression's own t-interval, around the estimate (which
            // differs from the regression's solution where a term was set
            // to 0, or `a` gave up the mixed schedule's intake window).
            for (coefs, fit) in &est.regressions {
                if let Some(j) = coefs.iter().position(|c| *c == coef) {
                    let half = t95(fit.df) * fit.se[j];
                    if half.is_finite() {
                        lo = lo.min(value - half);
                        hi = hi.max(value + half);
                    }
                }
            }
            (reps.len() > 1 || lo < hi).then_some(Interval { coef, lo, hi })
        })
        .collect()
}

/// The 90% interval of an estimate `value` from its resampled refits
/// `reps`: their 5th–95th percentiles, widened to ± t(`df`) times their
/// standard deviation (with few trials, the bootstrap's spread with
/// Student's t on trials − runs degrees of freedom, as for few clusters:
/// Cameron, Gelbach & Miller 2008; percentiles alone are too narrow
/// there), and always holding `value`.
pub(crate) fn resampled_interval(value: f64, reps: &[f64], df: usize) -> [f64; 2] {
    let (mut lo, mut hi) = if reps.is_empty() {
        (value, value)
    } else {
        (
            quantile(reps, 0.05).min(value),
            quantile(reps, 0.95).max(value),
        )
    };
    if reps.len() > 1 && df > 0 {
        let mean = reps.iter().sum::<f64>() / reps.len() as f64;
        let var = reps.iter().map(|r| (r - mean).powi(2)).sum::<f64>() / (reps.len() - 1) as f64;
        let half = t95(df) * var.sqrt();
        lo = lo.min(value - half);
        hi = hi.max(value + half);
    }
    [lo, hi]
}

/// Measured medians across trials against the replayed model, per point.
fn residuals(rows: &[&Observation], p: &Params) -> Vec<Residual> {
    let points = Points::of(rows);
    let outcomes = points.replay(p);
    let mut out = Vec::new();
    for (label, load) in &points.0 {
        let mine: Vec<&&Observation> = rows.iter().filter(|r| &r.label == label).collect();
        for m in ModelMetric::ALL {
            // A tail of too few requests is not predicted, nor judged.
            if crate::file::is_tail(m) && load.requests < crate::file::MIN_TAIL_REQUESTS {
                continue;
            }
            let v: Vec<f64> = mine.iter().map(|r| r.measured(m)).collect();
            let measured = quantile(&v, 0.5);
            let fitted = predicted(&outcomes[label.as_str()], m);
            // No replayed value (a TPOT where the replay streamed each request
            // in one step): nothing to compare, and JSON has no NaN.
            if measured.is_finite() && measured > 0.0 && fitted.is_finite() {
                out.push(Residual {
                    point: label.clone(),
                    metric: m,
                    measured,
                    fitted,
                });
            }
        }
    }
    // Points in reading order (`c=2` before `c=100`); a stable sort keeps
    // each point's metrics in their order.
    out.sort_by(|a, b| reading_order(&a.point, &b.point));
    out
}

/// Text order where runs of digits compare as numbers: `c=2 in=1000`
/// before `c=100 in=1000`.
fn reading_order(a: &str, b: &str) -> std::cmp::Ordering {
    /// The text cut into runs of digits and runs of the rest.
    fn runs(s: &str) -> Vec<&str> {
        let mut out = Vec::new();
        let mut start = 0;
        for (i, c) in s.char_indices().skip(1) {
            let prev = s[..i]
                .chars()
                .next_back()
                .is_some_and(|p| p.is_ascii_digit());
            if prev != c.is_ascii_digit() {
                out.push(&s[start..i]);
                start = i;
            }
        }
        out.push(&s[start..]);
        out
    }
    let key = |run: &str| -> (bool, usize, String) {
        let digits = run.starts_with(|c: char| c.is_ascii_digit());
        let trimmed = if digits {
            run.trim_start_matches('0')
        } else {
            run
        };
        (
            !digits,
            if digits { trimmed.len() } else { 0 },
            trimmed.to_owned(),
        )
    };
    let (ra, rb) = (runs(a), runs(b));
    for (x, y) in ra.iter().zip(&rb) {
        match key(x).cmp(&key(y)) {
            std::cmp::Ordering::Equal => {}
            other => return other,
        }
    }
    ra.len().cmp(&rb.len())
}

/// 1.645 × the root mean square relative residual, per metric.
fn band(residuals: &[Residual]) -> Vec<BandWidth> {
    ModelMetric::ALL
        .into_iter()
        .filter_map(|metric| {
            let e: Vec<f64> = residuals
                .iter()
                .filter(|r| r.metric == metric)
                .map(Residual::error)
                .filter(|e| e.is_finite())
                .collect();
            (!e.is_empty()).then(|| BandWidth {
                metric,
                rel: 1.645 * (e.iter().map(|x| x * x).sum::<f64>() / e.len() as f64).sqrt(),
            })
        })
        .collect()
}

fn ranges(rows: &[&Observation]) -> Ranges {
    let span = |v: Vec<f64>| {
        let v: Vec<f64> = v.into_iter().filter(|x| x.is_finite()).collect();
        (!v.is_empty()).then(|| {
            [
                v.iter().copied().fold(f64::INFINITY, f64::min),
                v.iter().copied().fold(f64::NEG_INFINITY, f64::max),
            ]
        })
    };
    Ranges {
        concurrency: span(
            rows.iter()
                .filter(|r| r.rate_per_s.is_none())
                .map(|r| f64::from(r.concurrency.max(1)))
                .collect(),
        ),
        rate: span(rows.iter().filter_map(|r| r.rate_per_s).collect()),
        input_tokens: span(rows.iter().map(|r| r.input_tokens).collect()),
        output_tokens: span(rows.iter().map(|r| r.output_tokens).collect()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn points_read_in_numeric_order() {
        let mut labels = vec![
            "c=100 in=1000 out=500",
            "c=2 in=1000 out=500",
            "c=16 in=1000 out=500",
            "c=1 in=30000 out=200",
            "c=1 in=1000 out=200",
            "rate=0.5/s in=10 out=5",
        ];
        labels.sort_by(|a, b| reading_order(a, b));
        assert_eq!(
            labels,
            [
                "c=1 in=1000 out=200",
                "c=1 in=30000 out=200",
                "c=2 in=1000 out=500",
                "c=16 in=1000 out=500",
                "c=100 in=1000 out=500",
                "rate=0.5/s in=10 out=5",
            ]
        );
    }
    /// Trials of dataset prompts differ in their mean length by a few
    /// tokens; that is one length, not a sweep. A sweep's lengths stay apart.
    #[test]
    fn lengths_a_few_tokens_apart_are_one_length() {
        let sampled = [52.4, 49.8, 55.1, 229.0, 231.6, 226.2];
        assert_eq!(distinct(sampled.into_iter()), [50.0, 226.0]);
        let swept = [1000.0, 4000.0, 16000.0, 8000.0];
        assert_eq!(
            distinct(swept.into_iter()),
            [1000.0, 4000.0, 8000.0, 16000.0]
        );
        assert_eq!(distinct([38.0, 38.4, 39.0].into_iter()), [38.0]);
    }

    use crate::table::{FOUNDING_MODEL, FOUNDING_MODEL_PATH};

    /// Refits that found no batch limit widen N's interval up to the
    /// highest concurrency run; they are not left out of it.
    #[test]
    fn refits_without_a_limit_reach_the_highest_concurrency() {
        let fitted = crate::file::ModelFile::parse(
            FOUNDING_MODEL,
            std::path::Path::new(FOUNDING_MODEL_PATH),
        )
        .unwrap()
        .params;
        let est = Estimate {
            params: Params {
                max_batch: Some(16),
                ..fitted
            },
            warnings: Vec::new(),
            regressions: Vec::new(),
            evidence: None,
        };
        let with = |n| Params {
            max_batch: n,
            ..est.params
        };
        let mut reps = vec![with(Some(15)), with(Some(16)), with(Some(17))];
        reps.extend((0..7).map(|_| with(None)));
        let n = |reps: &[Params]| {
            intervals(&est, reps, 9, &[], Some(64.0))
                .into_iter()
                .find(|i| i.coef == Coef::MaxBatch)
                .unwrap()
        };
        assert_eq!(n(&reps).hi, 64.0);
        assert!(n(&reps[..3]).hi < 20.0);
    }
}
