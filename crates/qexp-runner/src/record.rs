//! Turns measured outcomes into rows for qexp-store.

use crate::scheduler::Finished;
use crate::workload::Planned;
use qexp_client::ErrorClass;
use qexp_plan::Point;
use qexp_store::{PointRow, RequestRow};

/// Identifies the (trial, point) rows belong to.
#[derive(Debug, Clone)]
pub(crate) struct Context<'a> {
    pub run_id: &'a str,
    pub client_host: &'a str,
    pub trial: u32,
    pub point: &'a Point,
    pub point_order: u32,
    /// The deployment and start that answered, in a run with deployments.
    pub deployment: Option<&'a DeploymentTag>,
    /// The shard sending, in a run split over several processes.
    pub shard: Option<u32>,
    /// Seconds added to every time measured here to put it on shard 0's clock.
    pub shift_s: f64,
    /// Measured requests this process was to send of the point.
    pub requests_planned: u32,
}

/// What every row of a deployment's start carries.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct DeploymentTag {
    /// The deployment's name.
    pub name: String,
    /// Its definition's hash.
    pub hash: String,
    /// The start that answered (None for a deployment qexp does not launch).
    pub start_id: Option<String>,
}

impl Context<'_> {
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
}

pub(crate) fn request_row(
    ctx: &Context<'_>,
    f: &Finished,
    warmup: bool,
    planned: Planned,
) -> RequestRow {
    let o = &f.outcome;
    let gaps = o.chunk_gaps_s();
    let (itl_mean_s, itl_max_s) = if gaps.is_empty() {
        (None, None)
    } else {
        let max = gaps.iter().copied().fold(f64::MIN, f64::max);
        (
            Some(gaps.iter().sum::<f64>() / gaps.len() as f64),
            Some(max),
        )
    };
    let (deployment, deployment_hash, start_id) = ctx.deployment_columns();
    RequestRow {
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
    }
}

/// The point row from its measured (non-warmup) requests.
pub(crate) fn point_row(
    ctx: &Context<'_>,
    measured: &[RequestRow],
    prompt_units: u32,
    tolerance: f64,
) -> PointRow {
    let ok: Vec<&RequestRow> = measured
        .iter()
        .filter(|r| r.error_class.is_none())
        .collect();
    let start = measured
        .iter()
        .map(|r| r.sent_unix_s)
        .fold(f64::INFINITY, f64::min);
    let end = measured
        .iter()
        .map(|r| r.sent_unix_s + r.end_s)
        .fold(f64::NEG_INFINITY, f64::max);
    let output_tokens: u64 = ok
        .iter()
        .map(|r| u64::from(r.completion_tokens.unwrap_or(r.client_tokens)))
        .sum();
    let window = end - start;
    let agg = (window > 0.0 && !ok.is_empty()).then(|| output_tokens as f64 / window);
    let send_lag_max_s = measured.iter().map(|r| r.queue_s).fold(0.0, f64::max);
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
        requests_done: measured.len() as u32,
        failures: (measured.len() - ok.len()) as u32,
        window_start_unix_s: if start.is_finite() { start } else { 0.0 },
        window_end_unix_s: if end.is_finite() { end } else { 0.0 },
        output_tokens,
        agg_output_tok_s: agg,
        send_lag_max_s,
        client_cpu_cores: None,
        client_loop_lag_p99_s: None,
        prompt_units,
        invalid_reason: interrupted(measured, ctx.requests_planned)
            .or_else(|| prompt_mismatch(&ok, tolerance)),
        server: None,
    }
}

/// A sentence when the run was interrupted while this point was running.
fn interrupted(measured: &[RequestRow], planned: u32) -> Option<String> {
    let cancelled = measured
        .iter()
        .filter(|r| r.error_class == Some(ErrorClass::Cancelled))
        .count();
    let finished = measured.len() - cancelled;
    (cancelled > 0 || measured.len() < planned as usize).then(|| {
        format!(
            "the run was interrupted during this point: {finished} of {planned} requests finished"
        )
    })
}

/// A sentence when the server counted a prompt off its planned length beyond tolerance.
fn prompt_mismatch(ok: &[&RequestRow], tolerance: f64) -> Option<String> {
    // (relative difference, server count, planned) of the request furthest off its plan.
    let (rel, worst, planned) = ok
        .iter()
        .filter_map(|r| {
            let (got, planned) = (r.prompt_tokens?, r.input_tokens_planned);
            let rel = f64::from(got.abs_diff(planned)) / f64::from(planned.max(1));
            Some((rel, got, planned))
        })
        .max_by(|a, b| a.0.total_cmp(&b.0))?;
    (rel > tolerance).then(|| {
        format!(
            "the server counted {worst} prompt tokens where the plan asked {planned} (tolerance {:.1}%)",
            tolerance * 100.0
        )
    })
}
