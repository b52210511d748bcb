//! The per-(trial, point) statistics over requests. The report's reads
//! (`crate::pass`) hand each (trial, point)'s measured rows over in pieces,
//! and nothing here holds more of a (trial, point) than a bounded number of
//! values: [`TrialFrames::add`] adds each piece's sums and counts up on the
//! first read, and feeds every percentile's exact selection ([`Quantiles`])
//! on each read until all are found: one read when the (trial, point) is
//! small enough for its values to be held (up to 4 M values a percentile),
//! or when a larger one's first values guess where its percentiles lie
//! (see `stats::select`), more otherwise. Then the (trial, point)'s metrics, its failures
//! and its part of the point's latency distributions are kept and its
//! working state dropped.
//!
//! Three summaries still take a (trial, point)'s rows whole, only their own
//! columns and only in runs that have them: the schedule analysis (runs
//! with open-loop points or `[slo]`), per-turn summaries (multi-turn
//! sessions) and reasoning (requests that streamed reasoning).

use crate::columns::F;
use crate::distribution::{self, PointDistribution, TrialDistribution, TrialPart};
use crate::metrics::TrialMetrics;
use crate::pass::{Counted, TrialPoint};
use crate::reasoning::ReasoningSummary;
use crate::schedule::{ScheduleAnalysis, ScheduleFrames};
use crate::stats::select::Quantiles;
use crate::steady::Stream;
use crate::turns::TurnSummary;
use polars::prelude::*;
use qexp_store::{requests as rq, Manifest};
use std::collections::{BTreeMap, BTreeSet};

/// Every request column the sums and counts of the first read take; a run
/// made before one existed lacks it, and what needs it is skipped or falls
/// back (see [`Sums::add`]).
const FIRST_READ_COLUMNS: &[&str] = &[
    rq::ERROR_CLASS,
    rq::ERROR_MESSAGE,
    rq::COMPLETION_TOKENS,
    rq::CLIENT_TOKENS,
    rq::CHUNKS,
    rq::PROMPT_TOKENS,
    rq::CACHED_TOKENS,
    rq::CACHED_TOKENS_EXPECTED,
    rq::FINISH_REASON,
    rq::INPUT_TOKENS_PLANNED,
    rq::INPUT_TOKENS_TARGET,
    rq::OUTPUT_TOKENS_PLANNED,
    rq::OUTPUT_TOKENS_TARGET,
    rq::SENT_UNIX_S,
];

/// The columns of the summaries that take a (trial, point) whole.
const TURN_COLUMNS: &[&str] = &[
    rq::TURN,
    rq::ERROR_CLASS,
    rq::TTFT_S,
    rq::PROMPT_TOKENS,
    rq::CACHED_TOKENS,
];
const REASONING_COLUMNS: &[&str] = &[
    rq::ERROR_CLASS,
    rq::TTFT_REASONING_S,
    rq::TTFT_ANSWER_S,
    rq::REASONING_CHUNKS,
    rq::CHUNKS,
];

/// The per-(trial, point) results of the reads, and the working state of
/// the (trial, point)s not yet finished.
///
/// This is the one place a per-(trial, point) statistic over requests is
/// computed: a new one reads the pieces in [`TrialFrames::add`].
pub(crate) struct TrialFrames {
    schema: Schema,
    /// Trials with measured rows at each point (sets timeline shares).
    trials_at: BTreeMap<u32, usize>,
    /// Reads begun (1 = the first).
    read: usize,
    /// The most values each percentile's selection holds.
    held_max: usize,
    /// Whether per-turn and reasoning summaries are made.
    turns: bool,
    reasoning: bool,
    planned_input: &'static str,
    planned_output: &'static str,
    /// (trial, point)s not finished, with their working state.
    open: BTreeMap<TrialPoint, Group>,
    /// Keyed by (point, trial).
    metrics: BTreeMap<(u32, u32), TrialMetrics>,
    /// Keyed by (point, trial).
    distributions: BTreeMap<(u32, u32), TrialPart>,
    /// (point, class, trial) → (failed requests, first message).
    failures: BTreeMap<(u32, String, u32), (u64, Option<String>)>,
    reasoning_frames: Vec<DataFrame>,
    turn_frames: Vec<DataFrame>,
    /// For runs with open-loop points or `[slo]`.
    schedule: Option<ScheduleFrames>,
    /// The closed-loop points, whose steady-state window is measured.
    closed_loop: BTreeSet<u32>,
    /// Whether the run's API streams (see [`qexp_plan::ApiKind::streams`]).
    streams: bool,
}

/// One (trial, point) being read.
struct Group {
    sums: Sums,
    select: Selections,
    /// Inter-chunk gaps, pooled: p50, p90, p99 (apart from the others, as
    /// they are fed on a second core).
    gaps: Quantiles,
    timeline: Timeline,
    /// Pieces of the columns the whole-(trial, point) summaries read (first
    /// read, only in runs that have those summaries).
    whole: Vec<DataFrame>,
    /// The successful requests' streams, for the steady-state window
    /// (closed-loop points; first read; dropped past [`STEADY_MAX_REQUESTS`]).
    streams: Option<Vec<Stream>>,
}

/// Sums and counts over a (trial, point)'s requests, added up piece by
/// piece on the first read.
#[derive(Default)]
struct Sums {
    /// Whether the run's API streams generated tokens (no completion
    /// count to check otherwise).
    streams: bool,
    requests: u64,
    failures: u64,
    /// Over the successful requests.
    completion_ok: f64,
    chunks_ok: f64,
    cached_ok: f64,
    prompt_ok: f64,
    cached_expected_ok: f64,
    planned_input_ok: f64,
    /// Over every request.
    cached: f64,
    mismatches: u64,
    input_lengths: Distinct,
    output_lengths: Distinct,
    /// Answer health over the successful requests.
    answers: crate::answers::AnswerTally,
}

/// Whether a column holds more than one distinct value (null being one).
#[derive(Default)]
struct Distinct {
    first: Option<Option<u64>>,
    varies: bool,
}

impl Distinct {
    fn add(&mut self, v: Option<f64>) {
        let v = v.map(f64::to_bits);
        match self.first {
            None => self.first = Some(v),
            Some(first) => self.varies |= first != v,
        }
    }
}

/// The completion lengths' quantiles: the median, then the answer spread's
/// ([`qexp_model::AnswerSpread::LEVELS`]).
fn completion_levels() -> Vec<f64> {
    std::iter::once(0.5)
        .chain(qexp_model::AnswerSpread::LEVELS)
        .collect()
}

/// Every exact percentile of a (trial, point), over its successful requests.
struct Selections {
    /// TTFT p50 and p90.
    ttft: Quantiles,
    /// 1/TPOT p50.
    decode: Quantiles,
    e2e: Quantiles,
    prompt: Quantiles,
    planned: Quantiles,
    planned_output: Quantiles,
    completion: Quantiles,
    /// The distributions' TTFT and E2E at every level (requests with a TTFT and a send time).
    cdf_ttft: Quantiles,
    cdf_e2e: Quantiles,
}

impl Selections {
    fn new(held_max: usize) -> Selections {
        let cdf: Vec<f64> = (0..distribution::CDF_QUANTILES)
            .map(|i| i as f64 / (distribution::CDF_QUANTILES - 1) as f64)
            .collect();
        Selections {
            ttft: Quantiles::new(&[0.5, 0.9], held_max),
            decode: Quantiles::new(&[0.5], held_max),
            e2e: Quantiles::new(&[0.5], held_max),
            prompt: Quantiles::new(&[0.5], held_max),
            planned: Quantiles::new(&[0.5], held_max),
            planned_output: Quantiles::new(&[0.5], held_max),
            completion: Quantiles::new(&completion_levels(), held_max),
            cdf_ttft: Quantiles::new(&cdf, held_max),
            cdf_e2e: Quantiles::new(&cdf, held_max),
        }
    }

    fn all(&mut self) -> [&mut Quantiles; 9] {
        [
            &mut self.ttft,
            &mut self.decode,
            &mut self.e2e,
            &mut self.prompt,
            &mut self.planned,
            &mut self.planned_output,
            &mut self.completion,
            &mut self.cdf_ttft,
            &mut self.cdf_e2e,
        ]
    }

    /// [`Selections::all`], to read.
    fn each(&self) -> [&Quantiles; 9] {
        [
            &self.ttft,
            &self.decode,
            &self.e2e,
            &self.prompt,
            &self.planned,
            &self.planned_output,
            &self.completion,
            &self.cdf_ttft,
            &self.cdf_e2e,
        ]
    }

    fn done(&self) -> bool {
        self.each().iter().all(|q| q.done())
    }
}

/// A (trial, point)'s part of the point's timeline: its successful
/// requests with a TTFT and a send time are counted, with their span of
/// sends, on the first read, and its share of them picked: at the end of
/// that read when they were few enough to hold, or else on the second.
struct Timeline {
    share: usize,
    /// The first send of any measured request (Unix seconds).
    start: f64,
    /// Requests that can be on it (first read), and their sends' span.
    good: usize,
    span: distribution::Span,
    /// Those requests (sent, TTFT), held on the first read while there are
    /// at most `held_max` (then picked at its end, with no second read).
    held: Option<Vec<(f64, f64)>>,
    held_max: usize,
    /// The second read's picks.
    thinning: Option<distribution::Thinning>,
    picked: bool,
}

impl TrialFrames {
    /// Ready for the (trial, point)s `counted` (the count read) of a run
    /// whose request rows have `schema`.
    /// Each percentile's selection holds at most `held_max` values.
    pub(crate) fn new(
        schema: &Schema,
        counted: &Counted,
        manifest: &Manifest,
        held_max: usize,
    ) -> TrialFrames {
        let mut trials_at: BTreeMap<u32, usize> = BTreeMap::new();
        for (_, point) in counted.rows.keys() {
            *trials_at.entry(*point).or_default() += 1;
        }
        TrialFrames {
            schema: schema.clone(),
            trials_at,
            read: 0,
            held_max,
            turns: counted.turns && schema.contains(rq::TURN),
            reasoning: counted.reasoning && schema.contains(rq::REASONING_CHUNKS),
            planned_input: or_target(schema, rq::INPUT_TOKENS_PLANNED, rq::INPUT_TOKENS_TARGET),
            planned_output: or_target(schema, rq::OUTPUT_TOKENS_PLANNED, rq::OUTPUT_TOKENS_TARGET),
            open: BTreeMap::new(),
            metrics: BTreeMap::new(),
            distributions: BTreeMap::new(),
            failures: BTreeMap::new(),
            reasoning_frames: Vec::new(),
            turn_frames: Vec::new(),
            schedule: ScheduleFrames::for_run(manifest),
            streams: manifest.target.api.streams(),
            closed_loop: manifest
                .points
                .iter()
                .filter(|p| p.open_loop.is_none() && p.concurrency > 0)
                .map(|p| p.id)
                .collect(),
        }
    }

    /// The columns (those the run has) of the summaries that take a
    /// (trial, point)'s rows whole; none in most runs.
    fn whole_columns(&self) -> Vec<&'static str> {
        let mut columns: Vec<&'static str> = Vec::new();
        if self.schedule.is_some() {
            columns.extend(crate::schedule::COLUMNS);
        }
        if self.turns {
            columns.extend(TURN_COLUMNS);
        }
        if self.reasoning {
            columns.extend(REASONING_COLUMNS);
        }
        if !columns.is_empty() {
            columns.extend([rq::TRIAL, rq::POINT_ID]);
        }
        let mut unique: Vec<&'static str> = Vec::new();
        for c in columns {
            if self.schema.contains(c) && !unique.contains(&c) {
                unique.push(c);
            }
        }
        unique
    }

    /// Begins the next read: the request columns it needs (those the run
    /// has), or None once every (trial, point) is finished.
    pub(crate) fn next_read(&mut self) -> Option<Vec<&'static str>> {
        if self.read > 0 && self.open.is_empty() {
            return None;
        }
        self.read += 1;
        let mut wanted: Vec<&'static str> = vec![rq::ERROR_CLASS];
        let mut want = |cols: &[&'static str]| wanted.extend(cols);
        if self.read == 1 {
            want(FIRST_READ_COLUMNS);
            want(crate::answers::COLUMNS);
            want(crate::answers::PARSE_COLUMNS);
            want(&self.whole_columns());
            want(&Selections::COLUMNS.concat());
        } else {
            for g in self.open.values() {
                for (q, cols) in g.select_columns() {
                    if !q {
                        want(cols);
                    }
                }
                if !g.timeline.picked {
                    want(&[rq::SENT_UNIX_S, rq::TTFT_S]);
                }
            }
        }
        let mut columns: Vec<&'static str> = Vec::new();
        for c in wanted {
            let c = match c {
                rq::INPUT_TOKENS_PLANNED | rq::INPUT_TOKENS_TARGET => self.planned_input,
                rq::OUTPUT_TOKENS_PLANNED | rq::OUTPUT_TOKENS_TARGET => self.planned_output,
                c => c,
            };
            if self.schema.contains(c) && !columns.contains(&c) {
                columns.push(c);
            }
        }
        Some(columns)
    }

    /// One piece of a (trial, point)'s measured rows in the current read.
    pub(crate) fn add(&mut self, key: TrialPoint, rows: DataFrame) -> PolarsResult<()> {
        let (_, point) = key;
        if self.read == 1 && !self.open.contains_key(&key) {
            let share = distribution::share(self.trials_at.get(&point).copied().unwrap_or(1));
            let mut group = Group::new(share, self.held_max);
            group.sums.streams = self.streams;
            if self.closed_loop.contains(&point) {
                group.streams = Some(Vec::new());
            }
            self.open.insert(key, group);
        }
        let whole = match self.read {
            1 => self.whole_columns(),
            _ => Vec::new(),
        };
        let Some(g) = self.open.get_mut(&key) else {
            return Ok(());
        };
        let ok = rows.column(rq::ERROR_CLASS)?.is_null();
        let ok_rows = match ok.all() {
            true => rows.clone(),
            false => rows.filter(&ok)?,
        };
        let first = self.read == 1;
        let (planned_input, planned_output) = (self.planned_input, self.planned_output);
        let Group {
            sums,
            select,
            gaps,
            timeline,
            whole: whole_pieces,
            streams,
        } = g;
        let (schema, failures) = (&self.schema, &mut self.failures);
        // The first read's sums and the gaps (7 values a request with 8
        // chunks) on a second core, beside the other selections. They call
        // nothing that waits on polars' thread pool, so an analysis that
        // itself runs on that pool cannot deadlock on them.
        let side = |sums: &mut Sums, gaps: &mut Quantiles| -> PolarsResult<()> {
            if first {
                sums.add(&rows, &ok, planned_input, planned_output, schema)?;
            }
            if !gaps.done() {
                each_gap(&ok_rows, |x| gaps.push(x))?;
            }
            Ok(())
        };
        let main = || -> PolarsResult<()> {
            if first {
                add_failures(failures, key, &rows, &ok)?;
                timeline.count(&rows, &ok_rows)?;
                add_streams(streams, &ok_rows)?;
                if !whole.is_empty() {
                    whole_pieces.push(rows.select(whole)?);
                }
            } else if !timeline.picked {
                timeline.pick(&ok_rows)?;
            }
            select.add(&ok_rows, planned_input, planned_output)
        };
        if rows.height() < 4096 {
            side(sums, gaps)?;
            return main();
        }
        std::thread::scope(|s| {
            let side = s.spawn(|| side(sums, gaps));
            let main = main();
            let side = side
                .join()
                .map_err(|_| PolarsError::ComputeError("a statistics thread panicked".into()))?;
            main.and(side)
        })
    }

    /// A (trial, point)'s rows in the current read have all been given.
    pub(crate) fn end(&mut self, key: TrialPoint) -> PolarsResult<()> {
        let (trial, point) = key;
        if self.read == 1 && !self.open.contains_key(&key) {
            // Counted but given no rows (its file shrank since): nothing measured.
            return Ok(());
        }
        let Some(g) = self.open.get_mut(&key) else {
            return Ok(());
        };
        if self.read == 1 {
            let mut metrics = g.sums.metrics(trial, point);
            metrics.steady = g.streams.take().and_then(|s| crate::steady::window(&s));
            self.metrics.insert((point, trial), metrics);
            let whole = std::mem::take(&mut g.whole);
            if !whole.is_empty() {
                let rows = stacked(&whole)?;
                if let Some(schedule) = &mut self.schedule {
                    schedule.add(key, &rows)?;
                }
                if self.turns {
                    self.turn_frames
                        .push(crate::turns::turn_frame(rows.clone().lazy()).collect()?);
                }
                if self.reasoning {
                    self.reasoning_frames
                        .push(crate::reasoning::reasoning_frame(rows.lazy()).collect()?);
                }
            }
            g.timeline.end_first_read();
        } else {
            g.timeline.picked = true;
        }
        for q in g.select.all() {
            q.end_read();
        }
        g.gaps.end_read();
        if g.timeline.good == 0 {
            g.timeline.picked = true;
        }
        if g.select.done() && g.gaps.done() && g.timeline.picked {
            if let Some(g) = self.open.remove(&key) {
                g.finish(trial, point, self);
            }
        }
        Ok(())
    }

    /// Every point's latency distributions, in the order of `point_ids`;
    /// points without measured requests are left out.
    pub(crate) fn distributions(&self, point_ids: &[u32]) -> Vec<PointDistribution> {
        point_ids
            .iter()
            .filter_map(|&id| {
                let mut parts = self
                    .distributions
                    .range((id, 0)..=(id, u32::MAX))
                    .peekable();
                parts.peek()?;
                Some(distribution::from_parts(id, parts.map(|(_, p)| p.clone())))
            })
            .collect()
    }

    /// The schedule analysis, for runs with open-loop points or `[slo]`.
    pub(crate) fn schedule(&mut self) -> Option<ScheduleAnalysis> {
        self.schedule.take().map(ScheduleFrames::finish)
    }

    /// The request metrics of each (trial, point), keyed by (point, trial).
    pub(crate) fn request_metrics(&self) -> BTreeMap<(u32, u32), TrialMetrics> {
        self.metrics.clone()
    }

    /// Per-turn, reasoning and failure summaries over every (trial, point).
    #[allow(clippy::type_complexity)]
    pub(crate) fn summaries(
        &self,
    ) -> PolarsResult<(
        Vec<TurnSummary>,
        Vec<ReasoningSummary>,
        Vec<crate::failures::FailureGroup>,
    )> {
        let turns = match self.turn_frames.is_empty() {
            true => Vec::new(),
            false => crate::turns::turn_summaries(&stacked(&self.turn_frames)?)?,
        };
        let reasoning = match self.reasoning_frames.is_empty() {
            true => Vec::new(),
            false => crate::reasoning::reasoning_summaries(&stacked(&self.reasoning_frames)?)?,
        };
        let failures = crate::failures::failure_groups(&self.failures);
        Ok((turns, reasoning, failures))
    }
}

impl Group {
    fn new(share: usize, held_max: usize) -> Group {
        Group {
            sums: Sums::default(),
            select: Selections::new(held_max),
            gaps: Quantiles::new(&[0.5, 0.9, 0.99], held_max),
            timeline: Timeline {
                share,
                start: f64::NAN,
                good: 0,
                span: distribution::Span::default(),
                held: Some(Vec::new()),
                held_max,
                thinning: None,
                picked: false,
            },
            whole: Vec::new(),
            streams: None,
        }
    }

    /// Whether each selection is done, with the columns it reads.
    fn select_columns(&self) -> impl Iterator<Item = (bool, &'static [&'static str])> + '_ {
        self.select
            .each()
            .into_iter()
            .chain([&self.gaps])
            .zip(Selections::COLUMNS)
            .map(|(q, columns)| (q.done(), columns))
    }

    /// Its selections' results into its metrics and distributions.
    fn finish(self, trial: u32, point: u32, frames: &mut TrialFrames) {
        let s = &self.select;
        let first = |q: &Quantiles| q.values().first().copied().flatten().unwrap_or(f64::NAN);
        let all = |q: &Quantiles| -> Vec<f64> { q.values().into_iter().flatten().collect() };
        if let Some(m) = frames.metrics.get_mut(&(point, trial)) {
            let ttft = s.ttft.values();
            m.ttft_s = ttft[0].unwrap_or(f64::NAN);
            m.ttft_p90_s = ttft[1].unwrap_or(f64::NAN);
            m.decode_tok_s = first(&s.decode);
            m.e2e_s = first(&s.e2e);
            m.prompt_tokens = first(&s.prompt);
            m.input_planned = first(&s.planned);
            m.output_planned = first(&s.planned_output);
            let completion = s.completion.values();
            m.completion_tokens = completion[0].unwrap_or(f64::NAN);
            m.answer_spread = qexp_model::AnswerSpread::measured(std::array::from_fn(|k| {
                completion[k + 1].unwrap_or(f64::NAN)
            }));
            let gaps = self.gaps.values();
            [m.itl_p50_s, m.itl_p90_s, m.itl_p99_s] =
                [0, 1, 2].map(|i| gaps.get(i).copied().flatten().unwrap_or(f64::NAN));
        }
        let t = self.timeline;
        frames.distributions.insert(
            (point, trial),
            TrialPart {
                distribution: TrialDistribution {
                    trial,
                    requests: t.good,
                    ttft_s: all(&s.cdf_ttft),
                    e2e_s: all(&s.cdf_e2e),
                },
                timeline: distribution::timeline(
                    trial,
                    t.start,
                    t.thinning
                        .map(distribution::Thinning::kept)
                        .unwrap_or_default(),
                ),
            },
        );
    }
}

impl Selections {
    /// The columns each selection reads, in [`Selections::all`]'s order
    /// (the planned columns stand for whichever the run has), and the
    /// gaps' last.
    const COLUMNS: [&'static [&'static str]; 10] = [
        &[rq::TTFT_S],
        &[rq::TPOT_S],
        &[rq::E2E_S],
        &[rq::PROMPT_TOKENS],
        &[rq::INPUT_TOKENS_PLANNED],
        &[rq::OUTPUT_TOKENS_PLANNED],
        &[rq::COMPLETION_TOKENS],
        &[rq::TTFT_S, rq::SENT_UNIX_S],
        &[rq::TTFT_S, rq::E2E_S, rq::SENT_UNIX_S],
        &[rq::CHUNK_OFFSETS_S],
    ];

    /// The values of `ok_rows` (successful requests) each selection not
    /// yet done takes.
    fn add(
        &mut self,
        ok_rows: &DataFrame,
        planned: &str,
        planned_output: &str,
    ) -> PolarsResult<()> {
        if !self.ttft.done() {
            each_value(ok_rows, rq::TTFT_S, |x| self.ttft.push(x))?;
        }
        if !self.decode.done() {
            each_value(ok_rows, rq::TPOT_S, |x| self.decode.push(1.0 / x))?;
        }
        if !self.e2e.done() {
            each_value(ok_rows, rq::E2E_S, |x| self.e2e.push(x))?;
        }
        if !self.prompt.done() {
            each_value(ok_rows, rq::PROMPT_TOKENS, |x| self.prompt.push(x))?;
        }
        if !self.planned.done() {
            each_value(ok_rows, planned, |x| self.planned.push(x))?;
        }
        if !self.planned_output.done() {
            each_value(ok_rows, planned_output, |x| self.planned_output.push(x))?;
        }
        if !self.completion.done() {
            each_value(ok_rows, rq::COMPLETION_TOKENS, |x| self.completion.push(x))?;
        }
        if !self.cdf_ttft.done() || !self.cdf_e2e.done() {
            let (ttft, sent) = (
                floats(ok_rows, rq::TTFT_S)?,
                floats(ok_rows, rq::SENT_UNIX_S)?,
            );
            let e2e = match self.cdf_e2e.done() {
                true => None,
                false => Some(floats(ok_rows, rq::E2E_S)?),
            };
            let mut e2e = e2e.as_ref().map(|e| e.iter());
            for (t, s) in ttft.iter().zip(sent.iter()) {
                let e = e2e.as_mut().and_then(|e| e.next().flatten());
                if !s.is_some_and(f64::is_finite) {
                    continue;
                }
                // An answer that did not stream has an E2E and no TTFT.
                if let Some(t) = t.filter(|t| t.is_finite()) {
                    self.cdf_ttft.push(t);
                }
                if let Some(e) = e.filter(|e| e.is_finite()) {
                    self.cdf_e2e.push(e);
                }
            }
        }
        Ok(())
    }
}

impl Timeline {
    /// First read: the trial's first send (every measured request), and
    /// how many successful ones can be on the timeline.
    fn count(&mut self, rows: &DataFrame, ok_rows: &DataFrame) -> PolarsResult<()> {
        let sent = floats(rows, rq::SENT_UNIX_S)?;
        for s in sent.iter().flatten().filter(|s| s.is_finite()) {
            self.start = self.start.min(s);
        }
        for (sent, ttft) in good_rows(ok_rows)? {
            self.good += 1;
            self.span.add(sent);
            if let Some(held) = &mut self.held {
                match held.len() < self.held_max {
                    true => held.push((sent, ttft)),
                    false => self.held = None,
                }
            }
        }
        Ok(())
    }

    /// End of the first read: picks from the held requests, when all were held.
    fn end_first_read(&mut self) {
        let Some(held) = self.held.take() else {
            return;
        };
        let mut thinning = distribution::Thinning::new(self.share, self.good, self.span);
        for (sent, ttft) in held {
            thinning.offer(sent, ttft);
        }
        self.thinning = Some(thinning);
        self.picked = true;
    }

    /// Second read: offers each request to its share's slots.
    fn pick(&mut self, ok_rows: &DataFrame) -> PolarsResult<()> {
        let (share, good, span) = (self.share, self.good, self.span);
        let thinning = self
            .thinning
            .get_or_insert_with(|| distribution::Thinning::new(share, good, span));
        for (sent, ttft) in good_rows(ok_rows)? {
            thinning.offer(sent, ttft);
        }
        Ok(())
    }
}

/// The most requests of a (trial, point) whose times the steady-state
/// window holds (32 bytes each); a larger one gets no window. Fixed, not
/// the selections' `held_max`, so the window never depends on how the
/// rows were read.
const STEADY_MAX_REQUESTS: usize = 1 << 22;

/// Holds `ok_rows`' streams for the steady-state window, while they number
/// at most [`STEADY_MAX_REQUESTS`] (then none: a point that large gets no window).
fn add_streams(streams: &mut Option<Vec<Stream>>, ok_rows: &DataFrame) -> PolarsResult<()> {
    let Some(held) = streams else {
        return Ok(());
    };
    if held.len() + ok_rows.height() > STEADY_MAX_REQUESTS {
        *streams = None;
        return Ok(());
    }
    let (sent, ttft, e2e) = (
        floats(ok_rows, rq::SENT_UNIX_S)?,
        floats(ok_rows, rq::TTFT_S)?,
        floats(ok_rows, rq::E2E_S)?,
    );
    let tokens = match ok_rows.schema().contains(rq::COMPLETION_TOKENS) {
        true => floats(ok_rows, rq::COMPLETION_TOKENS)?,
        false => Float64Chunked::full_null(PlSmallStr::EMPTY, ok_rows.height()),
    };
    let nan = |v: Option<f64>| v.unwrap_or(f64::NAN);
    for (((s, t), e), k) in sent
        .iter()
        .zip(ttft.iter())
        .zip(e2e.iter())
        .zip(tokens.iter())
    {
        held.push(Stream {
            sent: nan(s),
            ttft: nan(t),
            e2e: nan(e),
            tokens: nan(k),
        });
    }
    Ok(())
}

/// (sent, TTFT) of the successful requests of `ok_rows` that have both, in order.
fn good_rows(ok_rows: &DataFrame) -> PolarsResult<Vec<(f64, f64)>> {
    let (ttft, sent) = (
        floats(ok_rows, rq::TTFT_S)?,
        floats(ok_rows, rq::SENT_UNIX_S)?,
    );
    Ok(sent
        .iter()
        .zip(ttft.iter())
        .filter_map(|(s, t)| Some((s?, t?)))
        .filter(|(s, t)| s.is_finite() && t.is_finite())
        .collect())
}

impl Sums {
    /// Adds a piece's requests (`ok`: which succeeded). The planned
    /// columns are `planned_input` and `planned_output` ([`or_target`]);
    /// without a cached-tokens-expected column none were expected.
    fn add(
        &mut self,
        rows: &DataFrame,
        ok: &BooleanChunked,
        planned_input: &str,
        planned_output: &str,
        schema: &Schema,
    ) -> PolarsResult<()> {
        self.answers.add(rows, ok, planned_output, schema)?;
        let n = rows.height();
        self.requests += n as u64;
        self.failures += (n - ok.sum().unwrap_or(0) as usize) as u64;
        let (completion, client, chunks) = (
            floats(rows, rq::COMPLETION_TOKENS)?,
            floats(rows, rq::CLIENT_TOKENS)?,
            floats(rows, rq::CHUNKS)?,
        );
        let (prompt, cached) = (
            floats(rows, rq::PROMPT_TOKENS)?,
            floats(rows, rq::CACHED_TOKENS)?,
        );
        let (p_in, p_out) = (floats(rows, planned_input)?, floats(rows, planned_output)?);
        let expected = match schema.contains(rq::CACHED_TOKENS_EXPECTED) {
            true => Some(floats(rows, rq::CACHED_TOKENS_EXPECTED)?),
            false => None,
        };
        let finish = rows.column(rq::FINISH_REASON)?.str()?.clone();
        let add = |sum: &mut f64, v: Option<f64>| *sum += v.unwrap_or(0.0);
        let mut expected = expected.as_ref().map(|e| e.iter());
        let mut columns = (
            completion.iter(),
            client.iter(),
            chunks.iter(),
            prompt.iter(),
            cached.iter(),
            p_in.iter(),
            p_out.iter(),
            finish.iter(),
        );
        for ok in ok.iter() {
            let (c, k, ch, pr, ca, pi, po, fin) = (
                columns.0.next().flatten(),
                columns.1.next().flatten(),
                columns.2.next().flatten(),
                columns.3.next().flatten(),
                columns.4.next().flatten(),
                columns.5.next().flatten(),
                columns.6.next().flatten(),
                columns.7.next().flatten(),
            );
            let e = expected.as_mut().and_then(|e| e.next().flatten());
            self.input_lengths.add(pi);
            self.output_lengths.add(po);
            add(&mut self.cached, ca);
            if ok != Some(true) {
                continue;
            }
            add(&mut self.completion_ok, c);
            add(&mut self.chunks_ok, ch);
            add(&mut self.cached_ok, ca);
            add(&mut self.prompt_ok, pr);
            add(&mut self.planned_input_ok, pi);
            add(&mut self.cached_expected_ok, e);
            // As polars' three-valued logic counted it: a comparison with
            // a null is never true.
            let short = matches!((c, k), (Some(c), Some(k)) if c < k);
            let cut = fin == Some("length") && matches!((c, po), (Some(c), Some(p)) if c != p);
            if self.streams && (c.is_none() || short || cut) {
                self.mismatches += 1;
            }
        }
        Ok(())
    }

    /// The (trial, point)'s metrics from its sums; the percentiles, ITL and
    /// the point-row values are filled in later.
    fn metrics(&self, trial: u32, point_id: u32) -> TrialMetrics {
        TrialMetrics {
            trial,
            point_id,
            requests: self.requests as u32,
            failures: self.failures as u32,
            tokens_per_chunk: self.completion_ok / self.chunks_ok,
            cached_tokens: self.cached as u64,
            lengths_vary: self.input_lengths.varies || self.output_lengths.varies,
            cached_share: self.cached_ok / self.prompt_ok,
            prompt_tokens_ok: self.prompt_ok,
            cached_share_expected: self.cached_expected_ok / self.planned_input_ok,
            token_mismatches: self.mismatches as u32,
            prompt_tokens_sum: self.prompt_ok,
            answers: self.answers.clone(),
            ..TrialMetrics::without_requests(trial, point_id)
        }
    }
}

/// Counts a piece's failed requests by class, each class with its first message.
fn add_failures(
    failures: &mut BTreeMap<(u32, String, u32), (u64, Option<String>)>,
    (trial, point): TrialPoint,
    rows: &DataFrame,
    ok: &BooleanChunked,
) -> PolarsResult<()> {
    if ok.all() {
        return Ok(());
    }
    let class = rows.column(rq::ERROR_CLASS)?.str()?.clone();
    let message = rows.column(rq::ERROR_MESSAGE)?.str()?.clone();
    for (c, m) in class.iter().zip(message.iter()) {
        let Some(c) = c else { continue };
        let entry = failures
            .entry((point, c.to_string(), trial))
            .or_insert_with(|| (0, m.map(str::to_string)));
        entry.0 += 1;
    }
    Ok(())
}

/// A column as f64 (nulls kept as None).
fn floats(df: &DataFrame, name: &str) -> PolarsResult<Float64Chunked> {
    Ok(df.column(name)?.cast(&F)?.f64()?.clone())
}

/// Calls `f` with each non-null value of column `name`, as f64, in order.
fn each_value(df: &DataFrame, name: &str, mut f: impl FnMut(f64)) -> PolarsResult<()> {
    let ca = floats(df, name)?;
    for arr in ca.downcast_iter() {
        if arr.validity().is_none_or(|v| v.unset_bits() == 0) {
            arr.values().iter().for_each(|&x| f(x));
        } else {
            arr.iter().flatten().for_each(|&x| f(x));
        }
    }
    Ok(())
}

/// Calls `f` with each finite gap between consecutive chunk offsets of
/// every row of `df`.
pub fn each_gap(df: &DataFrame, mut f: impl FnMut(f64)) -> PolarsResult<()> {
    let lists = df.column(rq::CHUNK_OFFSETS_S)?.list()?;
    // Walk the list column's flat offsets and values directly: no per-row allocation.
    for arr in lists.downcast_iter() {
        // Offsets index this array's own (unsliced) values buffer.
        let inner = Series::try_from((PlSmallStr::EMPTY, arr.values().clone()))?;
        let inner = inner.f64()?;
        let values = inner.cont_slice()?;
        for w in arr.offsets().as_slice().windows(2) {
            let offs = &values[w[0] as usize..w[1] as usize];
            offs.windows(2)
                .map(|g| g[1] - g[0])
                .filter(|g| g.is_finite())
                .for_each(&mut f);
        }
    }
    Ok(())
}

/// Small per-(trial, point) frames as one.
fn stacked(frames: &[DataFrame]) -> PolarsResult<DataFrame> {
    let mut all = frames.iter();
    let Some(first) = all.next() else {
        return Ok(DataFrame::empty());
    };
    let mut df = first.clone();
    for f in all {
        df.vstack_mut(f)?;
    }
    Ok(df)
}

/// The column of what was planned per request, or, in runs written before
/// the workload columns existed (every request planned alike), the target.
fn or_target(schema: &Schema, planned: &'static str, target: &'static str) -> &'static str {
    if schema.contains(planned) {
        planned
    } else {
        target
    }
}
