//! Turns measured outcomes into rows for qexp-store: a request's row, and
//! a (trial, point)'s row added up from its requests' rows ([`Tally`]),
//! which qexp-merge also uses to recompute a merged run's points.

use crate::scheduler::Finished;
use crate::workload::Planned;
use qexp_client::ErrorClass;
use qexp_plan::{InputTolerance, Item, KeepAnswers, Point};
use qexp_store::{PointRow, RequestRow};
use qexp_types::AnswerFacts;

/// Identifies the (trial, point) rows belong to.
#[derive(Debug, Clone)]
pub struct Context<'a> {
    /// The trial's graded items (`[accuracy]`; empty without).
    pub items: &'a [Item],
    /// The tools and response schema answers are checked against.
    pub structured: &'a qexp_plan::structured::Structured,
    /// The request classes (`[[workload.class]]`; empty without).
    pub classes: &'a [qexp_plan::Class],
    /// The run's id.
    pub run_id: &'a str,
    /// The host that sent the requests.
    pub client_host: &'a str,
    /// The trial, from 1.
    pub trial: u32,
    /// The point.
    pub point: &'a Point,
    /// Position of the point within its trial, from 0.
    pub point_order: u32,
    /// The deployment and start that answered, in a run with deployments.
    pub deployment: Option<&'a DeploymentTag>,
    /// The shard sending, in a run split over several processes.
    pub shard: Option<u32>,
    /// Seconds added to every time measured here to put it on shard 0's clock.
    pub shift_s: f64,
    /// Measured requests this process was to send of the point.
    pub requests_planned: u32,
    /// Which answers' texts the rows keep.
    pub answers: AnswerKeeping,
}

/// Which answers' texts a (trial, point)'s rows keep: decided from the
/// request alone, so that its journal line and its final row agree.
#[derive(Debug, Clone, Copy)]
pub struct AnswerKeeping {
    keep: KeepAnswers,
    /// Measured requests below this index (graded ones aside) are the
    /// sample kept whole.
    sampled_below: u32,
}

impl AnswerKeeping {
    /// `keep` over a (trial, point) whose measured requests (of this
    /// process) are `measured`, in sending order; the sample is taken from
    /// index `ungraded_from` on (graded items' answers are kept anyway).
    pub fn new(keep: KeepAnswers, measured: &[u32], ungraded_from: u32) -> AnswerKeeping {
        let sampled_below = measured
            .iter()
            .filter(|i| **i >= ungraded_from)
            .take(KeepAnswers::SAMPLED as usize)
            .max()
            .map_or(0, |i| i + 1);
        AnswerKeeping {
            keep,
            sampled_below,
        }
    }

    /// The text to store of a request's answer: all of it, its end, or none.
    fn text(
        &self,
        text: Option<&str>,
        index: u32,
        warmup: bool,
        unhealthy: bool,
    ) -> Option<String> {
        let text = text?;
        match self.keep {
            KeepAnswers::All => Some(text.to_string()),
            KeepAnswers::None => None,
            KeepAnswers::Sample if !warmup && index < self.sampled_below => Some(text.to_string()),
            KeepAnswers::Sample if unhealthy => Some(tail(text, KeepAnswers::TAIL_CHARS)),
            KeepAnswers::Sample => None,
        }
    }
}

/// The last `n` characters of `text`, after an ellipsis when cut.
fn tail(text: &str, n: usize) -> String {
    match text.char_indices().rev().nth(n.saturating_sub(1)) {
        Some((i, _)) if i > 0 => format!("…{}", &text[i..]),
        _ => text.to_string(),
    }
}

/// What every row of a deployment's start carries.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeploymentTag {
    /// The deployment's name.
    pub name: String,
    /// Its definition's hash.
    pub hash: String,
    /// The start that answered (None for a deployment qexp does not launch).
    pub start_id: Option<String>,
}

impl Context<'_> {
    /// Whether a successful request's answer parsed (None when the plan
    /// asks nothing of its form, or the request failed).
    fn parsed(&self, o: &qexp_client::Outcome) -> Option<bool> {
        let text = o.text.as_deref().unwrap_or_default();
        o.ok()
            .then(|| self.structured.parses(text, &o.tool_calls))
            .flatten()
    }

    fn deployment_columns(&self) -> (Option<String>, Option<String>, Option<String>) {
        match self.deployment {
            Some(d) => (
                Some(d.name.clone()),
                Some(d.hash.clone()),
                d.start_id.clone(),
            ),
            None => (None, None, None),
        }
    }

    /// The name of the request class at `k` in the plan's list.
    fn class_name(&self, k: Option<usize>) -> Option<String> {
        k.and_then(|k| self.classes.get(k))
            .map(|c| c.name.get_ref().clone())
    }
}

pub(crate) fn request_row(
    ctx: &Context<'_>,
    f: &Finished,
    warmup: bool,
    planned: Planned,
) -> RequestRow {
    let o = &f.outcome;
    let (itl_mean_s, itl_max_s) = gap_mean_max(&o.chunk_gaps_s());
    let (deployment, deployment_hash, start_id) = ctx.deployment_columns();
    let shape = o.answer_shape;
    let item = planned.graded.and_then(|r| ctx.items.get(r as usize));
    let correct = item
        .filter(|_| o.ok())
        .map(|item| item.grade(o.text.as_deref().unwrap_or_default()));
    RequestRow {
        item_id: item.map(|i| i.id.clone()),
        correct,
        parsed: ctx.parsed(o),
        ttft_tool_s: o.first_tool_s,
        tool_calls: o.tool_calls.len() as u32,
        class: ctx.class_name(planned.class),
        deployment,
        deployment_hash,
        start_id,
        run_id: ctx.run_id.to_string(),
        client_host: ctx.client_host.to_string(),
        trial: ctx.trial,
        point_id: ctx.point.id,
        point_order: ctx.point_order,
        request_index: f.index,
        warmup,
        concurrency: ctx.point.concurrency,
        input_tokens_target: ctx.point.input_tokens,
        output_tokens_target: ctx.point.output_tokens,
        input_tokens_planned: planned.input_tokens,
        output_tokens_planned: planned.output_tokens,
        cached_tokens_expected: planned.cached_tokens,
        prefix_group: planned.prefix_group,
        session: planned.session,
        turn: planned.turn,
        images: planned.with_images.then_some(planned.images),
        image_pixels: planned.with_images.then_some(planned.image_pixels),
        image_bytes: planned.with_images.then_some(planned.image_bytes),
        scheduled_unix_s: f.scheduled_unix_s + ctx.shift_s,
        sent_unix_s: o.sent_unix_s + ctx.shift_s,
        queue_s: (o.sent_unix_s - f.scheduled_unix_s).max(0.0),
        headers_s: o.headers_s,
        ttft_s: o.ttft_s(),
        ttft_reasoning_s: o.first_reasoning_s,
        ttft_answer_s: o.first_answer_s,
        e2e_s: o.e2e_s(),
        tpot_s: o.tpot_s(),
        end_s: o.end_s,
        chunks: o.content_chunks,
        reasoning_chunks: o.reasoning_chunks,
        itl_mean_s,
        itl_max_s,
        chunk_offsets_s: o.chunk_offsets_s.clone(),
        prompt_tokens: o.usage.prompt_tokens,
        completion_tokens: o.usage.completion_tokens,
        cached_tokens: o.usage.cached_tokens,
        client_tokens: o.client_tokens,
        output_chars: o.output_chars,
        finish_reason: o.finish_reason.clone(),
        http_status: o.http_status,
        error_class: o.error.as_ref().map(|e| e.class),
        error_message: o.error.as_ref().map(|e| e.message.clone()),
        retries: o.retries,
        shard: ctx.shard,
        answer_hash: o.answer_hash,
        reasoning_hash: o.reasoning_hash,
        answer_chars: shape.map(|s| s.chars),
        answer_nonblank_chars: shape.map(|s| s.nonblank_chars),
        answer_replacement_chars: shape.map(|s| s.replacement_chars),
        repeat_period_words: shape.map(|s| s.repeat_period_words),
        repeat_words: shape.map(|s| s.repeat_words),
        repeat_chars: shape.map(|s| s.repeat_chars),
        length_forced: planned.length_forced,
        answer_text: ctx.answers.text(
            o.text.as_deref(),
            f.index,
            warmup,
            unhealthy(o, planned) || item.is_some(),
        ),
    }
}

/// The mean and the largest of a request's gaps between content chunks;
/// none for a request with fewer than two chunks.
fn gap_mean_max(gaps: &[f64]) -> (Option<f64>, Option<f64>) {
    if gaps.is_empty() {
        return (None, None);
    }
    let max = gaps.iter().copied().fold(f64::MIN, f64::max);
    (
        Some(gaps.iter().sum::<f64>() / gaps.len() as f64),
        Some(max),
    )
}

/// Whether a successful request's answer has an issue (qexp-types'
/// [`AnswerFacts::issues`]), so that its text is worth keeping.
fn unhealthy(o: &qexp_client::Outcome, planned: Planned) -> bool {
    o.answer_shape.is_some_and(|shape| {
        o.ok()
            && !AnswerFacts {
                shape,
                finish_reason: o.finish_reason.as_deref(),
                reasoned: o.reasoning_hash.is_some(),
                length_forced: planned.length_forced,
                output_tokens: o.output_tokens(),
                output_planned: planned.output_tokens,
                called_tools: !o.tool_calls.is_empty(),
            }
            .issues()
            .is_empty()
    })
}

/// The point row from its measured (non-warmup) requests.
pub(crate) fn point_row(
    ctx: &Context<'_>,
    measured: &[RequestRow],
    prompt_units: u32,
    tolerance: InputTolerance,
) -> PointRow {
    let mut tally = Tally::new(tolerance);
    measured.iter().for_each(|r| tally.add(r));
    tally.point_row(ctx, prompt_units)
}

/// What a point row says of its measured (non-warmup) requests, added up
/// request by request, in any order: a merge adds a (trial, point) up a
/// piece at a time and never holds all its requests.
#[derive(Debug, Clone)]
pub struct Tally {
    measured: usize,
    ok: usize,
    cancelled: usize,
    /// First send and last completion (Unix seconds).
    start: f64,
    end: f64,
    /// Output tokens of the successful requests.
    output_tokens: u64,
    send_lag_max_s: f64,
    /// How far a server's prompt count may be from the plan's.
    tolerance: InputTolerance,
    /// (tokens beyond the tolerance, server count, planned) of the
    /// successful request furthest off its planned prompt (the later of equals).
    worst_prompt: Option<(f64, u32, u32)>,
}

impl Tally {
    /// Nothing counted yet; prompts are judged against `tolerance`.
    pub fn new(tolerance: InputTolerance) -> Tally {
        Tally {
            tolerance,
            measured: 0,
            ok: 0,
            cancelled: 0,
            start: f64::INFINITY,
            end: f64::NEG_INFINITY,
            output_tokens: 0,
            send_lag_max_s: 0.0,
            worst_prompt: None,
        }
    }

    /// One measured request.
    pub fn add(&mut self, r: &RequestRow) {
        self.measured += 1;
        self.start = self.start.min(r.sent_unix_s);
        self.end = self.end.max(r.sent_unix_s + r.end_s);
        self.send_lag_max_s = self.send_lag_max_s.max(r.queue_s);
        if r.error_class == Some(ErrorClass::Cancelled) {
            self.cancelled += 1;
        }
        if r.error_class.is_some() {
            return;
        }
        self.ok += 1;
        self.output_tokens += u64::from(r.completion_tokens.unwrap_or(r.client_tokens));
        // A graded item's prompt is the item's, not a planned length; a
        // prompt with images counts their tokens too, which no plan knows.
        let images = r.images.unwrap_or(0) > 0;
        if let Some(got) = r.prompt_tokens.filter(|_| r.item_id.is_none() && !images) {
            let planned = r.input_tokens_planned;
            let beyond =
                f64::from(got.abs_diff(planned)) - self.tolerance.allowed(f64::from(planned));
            if self
                .worst_prompt
                .is_none_or(|(worst, _, _)| beyond.total_cmp(&worst).is_ge())
            {
                self.worst_prompt = Some((beyond, got, planned));
            }
        }
    }

    /// Measured requests added.
    pub fn measured(&self) -> usize {
        self.measured
    }

    /// The point row of the requests added.
    pub fn point_row(&self, ctx: &Context<'_>, prompt_units: u32) -> PointRow {
        let (start, end) = (self.start, self.end);
        let window = end - start;
        let agg = (window > 0.0 && self.ok > 0).then(|| self.output_tokens as f64 / window);
        let (deployment, deployment_hash, start_id) = ctx.deployment_columns();
        PointRow {
            deployment,
            deployment_hash,
            start_id,
            run_id: ctx.run_id.to_string(),
            trial: ctx.trial,
            point_id: ctx.point.id,
            point_order: ctx.point_order,
            concurrency: ctx.point.concurrency,
            input_tokens_target: ctx.point.input_tokens,
            output_tokens_target: ctx.point.output_tokens,
            requests_planned: ctx.requests_planned,
            requests_done: self.measured as u32,
            failures: (self.measured - self.ok) as u32,
            window_start_unix_s: if start.is_finite() { start } else { 0.0 },
            window_end_unix_s: if end.is_finite() { end } else { 0.0 },
            output_tokens: self.output_tokens,
            agg_output_tok_s: agg,
            send_lag_max_s: self.send_lag_max_s,
            client_cpu_cores: None,
            client_loop_lag_p99_s: None,
            prompt_units,
            invalid_reason: self
                .interrupted(ctx.requests_planned)
                .or_else(|| self.prompt_mismatch()),
            server: None,
            ..PointRow::default()
        }
    }

    /// A sentence when the run was interrupted while this point was running.
    fn interrupted(&self, planned: u32) -> Option<String> {
        let finished = self.measured - self.cancelled;
        (self.cancelled > 0 || self.measured < planned as usize).then(|| {
            format!(
                "the run was interrupted during this point: {finished} of {planned} requests finished"
            )
        })
    }

    /// A sentence when the server counted a prompt off its planned length beyond tolerance.
    fn prompt_mismatch(&self) -> Option<String> {
        let (beyond, worst, planned) = self.worst_prompt?;
        (beyond > 0.0).then(|| {
            format!(
                "the server counted {worst} prompt tokens where the plan asked {planned} (tolerance {})",
                self.tolerance
            )
        })
    }
}

/// The timing the run's reads actually had: a run recorded as timed by the
/// kernel's receive stamps whose client read without one (the option
/// refused on a connection, a read without its stamp) records the fallback.
/// Nothing else changes here (a resumed run keeps what it started with).
/// A run with deployments calls it as each server stops, with that start's client.
pub(crate) fn record_timing(writer: &mut qexp_store::RunWriter, client: &qexp_client::Client) {
    use qexp_client::ClientTiming::{Http1FromWire, Http1KernelStamps};
    let recorded = &mut writer.manifest_mut().client_timing;
    if *recorded == Some(Http1KernelStamps) && client.client_timing() == Http1FromWire {
        let (kernel, user) = client.read_stamps();
        tracing::warn!(
            "qexp: {user} of {} reads came without the kernel's receive stamp and were stamped \
             when they returned; the run records its timing as `{Http1FromWire}`",
            kernel + user
        );
        *recorded = Some(Http1FromWire);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn counted(planned: u32, got: u32) -> RequestRow {
        RequestRow {
            input_tokens_planned: planned,
            prompt_tokens: Some(got),
            ..RequestRow::default()
        }
    }

    fn mismatch(rows: &[RequestRow]) -> Option<String> {
        let mut tally = Tally::new(InputTolerance::default());
        rows.iter().for_each(|r| tally.add(r));
        tally.prompt_mismatch()
    }

    #[test]
    fn a_short_prompt_a_token_or_two_off_is_not_invalid() {
        // 1% of 128 is 1.28 tokens; the least allowed is 2.
        assert_eq!(mismatch(&[counted(128, 129), counted(128, 130)]), None);
        assert_eq!(mismatch(&[counted(64, 62)]), None);
        assert_eq!(
            mismatch(&[counted(128, 129), counted(128, 131)]).as_deref(),
            Some(
                "the server counted 131 prompt tokens where the plan asked 128 \
                 (tolerance 1% or 2 tokens, whichever is more)"
            )
        );
    }

    #[test]
    fn the_worst_prompt_is_the_furthest_beyond_its_own_allowance() {
        // 2 tokens off 64 is allowed; 15 off 1000 (allowed 10) is not,
        // though it is the smaller share of its planned length.
        let rows = [counted(1000, 1015), counted(64, 66)];
        let sentence = mismatch(&rows).unwrap_or_default();
        assert!(sentence.contains("counted 1015"), "{sentence}");
        let rows = [counted(64, 66), counted(1000, 1010)];
        assert_eq!(mismatch(&rows), None);
    }
}
