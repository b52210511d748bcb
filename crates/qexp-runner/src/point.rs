//! Measures one (trial, point): warmups, the before/after metrics scrapes,
//! the measured requests under the point's load (closed loop, sessions or
//! open loop), its rows journaled as they finish and written when it ends.

use crate::backend::Backend;
use crate::error::RunError;
use crate::health::{Health, Probe};
use crate::journaling::{all_finished, Journaling};
use crate::open_loop::{run_open_loop, OpenLoopSpec};
use crate::options::RunOptions;
use crate::prepare::Prepared;
use crate::progress::PointProgress;
use crate::record::{point_row, request_row, AnswerKeeping, Context, DeploymentTag};
use crate::saturation::PointFigures;
use crate::scheduler::{run_closed_loop, Job};
use crate::session::{plan_turns, run_sessions};
use crate::shard::Share;
use crate::sharded::Meeting;
use crate::stop::Stop;
use crate::timer::Timer;
use crate::tolerance::OverTolerance;
use crate::workload::{Planned, Prompts};
use qexp_client::{Counters, GenRequest, ServerCounters};
use qexp_plan::{Item, PlanFile, Point};
use qexp_store::{PointRow, RequestRow, RunWriter, StoreError};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

/// The per-point context for one target of a run.
pub(crate) fn point_runner<'a, B: Backend>(
    opts: &'a RunOptions,
    prep: &'a Prepared,
    writer: &RunWriter,
    backend: Arc<B>,
    stop: &'a Stop,
    trials: u32,
    deployment: Option<crate::record::DeploymentTag>,
) -> PointRunner<'a, B> {
    let f = &opts.plan.file;
    let run_id = writer.manifest().run_id.clone();
    let host = writer.manifest().host.hostname.clone().unwrap_or_default();
    let salt = crate::workload::run_salt(&run_id);
    let per_deployment = (opts.plan.points().len() / opts.plan.deployments().len().max(1)) as u32;
    let prompts = Prompts {
        filler: &prep.filler,
        seed: f.run.seed,
        salt,
        shared: f.workload.shared_prefix.as_ref(),
        input_lengths: f.workload.input_lengths.as_ref(),
        output_lengths: f.workload.output_lengths.as_ref(),
        dataset: prep.dataset.as_ref(),
        multi_turn: f.workload.multi_turn.as_ref(),
        trace: prep.trace.as_ref(),
        calibrations: &prep.calibrations,
        per_deployment,
        classes: &f.workload.class,
        images: f.workload.images.as_ref(),
    };
    PointRunner {
        plan: f,
        prep,
        prompts,
        backend,
        stop,
        run_id,
        host,
        trials,
        deployment,
        over_tolerance: Vec::new(),
        meeting: Meeting::whole(),
        server: None,
        server_died: false,
        power: None,
    }
}

/// What sending one point's requests gave: the finished warmups and
/// measured requests, the counters scraped before, the client's health
/// while it was measured, and the journal's failure if it failed.
struct Sent {
    warm: Vec<crate::Finished>,
    measured: Vec<crate::Finished>,
    before: Option<Counters>,
    health: Health,
    journal_failure: Option<StoreError>,
}

/// What every point of one target shares.
pub(crate) struct PointRunner<'a, B: Backend> {
    pub plan: &'a PlanFile,
    pub prep: &'a Prepared,
    pub prompts: Prompts<'a>,
    pub backend: Arc<B>,
    pub stop: &'a Stop,
    pub run_id: String,
    pub host: String,
    pub trials: u32,
    pub deployment: Option<DeploymentTag>,
    /// One line per whole (trial, point) whose failures exceeded `[tolerance]`.
    pub over_tolerance: Vec<OverTolerance>,
    /// This process's shard of the run and where it meets the others.
    pub meeting: Meeting,
    /// The server qexp launched for these points, when it did.
    pub server: Option<qexp_deploy::Liveness>,
    /// The server was found dead after a point: that point was kept as
    /// incomplete (measured again on `--resume`), and no more are sent.
    pub server_died: bool,
    /// The sampler of these points' GPUs (`[power]`), when it runs.
    pub power: Option<&'a crate::power::Power>,
}

/// The point's name on its progress line: its trial, and its shard where
/// the load is split.
fn progress_label(index: u32, count: u32, trial: u32, trials: u32, point: &Point) -> String {
    match count {
        1 => format!("trial {trial}/{trials} {}", point.label()),
        n => format!("shard {index}/{n} trial {trial}/{trials} {}", point.label()),
    }
}

impl<B: Backend> PointRunner<'_, B> {
    /// Measures (`trial`, `point`) at position `pos` of its trial and writes it.
    pub(crate) async fn run(
        &mut self,
        writer: &mut RunWriter,
        trial: u32,
        pos: u32,
        point: &Point,
    ) -> Result<PointFigures, RunError> {
        let shard = self.meeting.shard();
        let share = shard.share(
            point,
            self.plan.workload.multi_turn.as_ref().map(|m| m.turns()),
        );
        let items = self.graded_items(trial, point);
        let ctx = Context {
            items: &items,
            structured: &self.plan.workload.structured,
            classes: &self.plan.workload.class,
            run_id: &self.run_id,
            client_host: &self.host,
            trial,
            point,
            point_order: pos,
            deployment: self.deployment.as_ref(),
            shard: (shard.count > 1).then_some(shard.index),
            shift_s: self.meeting.clock().shift_s(),
            requests_planned: share.measured.len() as u32,
            answers: AnswerKeeping::new(
                self.plan.run.keep_answers,
                &share.measured,
                point.warmup + items.len() as u32,
            ),
        };
        let mut planned = BTreeMap::new();
        let jobs = self.jobs(trial, point, &share, &mut planned, &items);
        let label = progress_label(shard.index, shard.count, trial, self.trials, point);
        let total = share.warmup.len() + share.measured.len();
        let bar = PointProgress::new(&label, total as u64);
        writer.begin_point(trial, point.id)?;
        let sent = self
            .send(writer, &ctx, &bar, jobs, &share, &mut planned)
            .await;
        if self.meeting.note_lost(writer.manifest_mut()) {
            writer.save_manifest()?;
        }
        let (mut rows, measured) = rows_of(&ctx, &sent, &planned);
        let prow = self.point_row(&ctx, &measured, &sent).await;
        rows.extend(measured.iter().cloned());
        // A server that died while this point was measured failed its
        // last requests: the point is kept, as incomplete, so that a
        // resume measures it again rather than taking the failures as its.
        self.server_died = self.server.is_some_and(|s| !s.is_alive());
        let whole = all_finished(&sent.warm, share.warmup.len() as u32)
            && all_finished(&sent.measured, ctx.requests_planned)
            && !self.server_died;
        keep(writer, &rows, &prow, whole, sent.journal_failure)?;
        bar.finish(point_line(
            &label,
            &prow,
            &measured,
            self.prep.api.streams(),
        ));
        // A point cut by an interrupt counts its cancelled requests as
        // failures; the tolerance judges only whole points.
        if whole {
            self.judge_tolerance(&label, &prow, &measured);
        }
        Ok(figures(&prow, &measured))
    }

    /// Sends the warmups (closed loop, at most as many at once as the point
    /// allows), scrapes the server's counters, then sends the measured jobs
    /// under the point's load, journaling each request as it finishes. A
    /// multi-turn point's later turns get their planned lengths in `planned`.
    async fn send(
        &self,
        writer: &mut RunWriter,
        ctx: &Context<'_>,
        bar: &PointProgress,
        (warm, measured_jobs): (Vec<Job>, Vec<Job>),
        share: &Share,
        planned: &mut BTreeMap<u32, Planned>,
    ) -> Sent {
        let point = ctx.point;
        let cancel = self.stop.receiver();
        let plan_of = |f: &crate::Finished| planned.get(&f.index).copied().unwrap_or_default();
        let mut journal = Journaling::new(writer, self.stop);
        let warmups = share.warmup.len() as u32;
        let warm_c = match share.concurrency {
            0 => warmups.max(1),
            c => c.min(warmups.max(1)),
        };
        let warm_done = run_closed_loop(self.backend.clone(), warm, warm_c, cancel, |f| {
            bar.inc(f.outcome.error.is_some());
            journal.record(ctx, f, true, plan_of(f));
        })
        .await;
        let before = match &self.prep.metrics {
            Some(m) => m.scrape().await,
            None => None,
        };
        let mut on_measured = |f: &crate::Finished| {
            bar.inc(f.outcome.error.is_some());
            journal.record(ctx, f, false, plan_of(f));
        };
        // As many connections as the point keeps requests in flight
        // (its in-flight cap for an open loop), opened before it is measured.
        let in_flight = match &point.open_loop {
            Some(_) => share.max_in_flight.unwrap_or(0),
            None => share.concurrency,
        };
        self.backend.prepare(in_flight).await;
        // Every shard starts the measured requests at the time shard 0 names.
        let at_barrier = self.stop.receiver();
        let origin = self
            .meeting
            .before_point(ctx.trial, point.id, at_barrier)
            .await;
        let probe = Probe::start();
        let done = self
            .measure(
                ctx.trial,
                point,
                measured_jobs,
                share,
                origin,
                &mut on_measured,
            )
            .await;
        let health = probe.finish().await;
        let journal_failure = journal.failure();
        if self.plan.workload.multi_turn.is_some() {
            // A later turn's planned length is known only now.
            plan_turns(planned, &done, self.prep.turn_overhead);
        }
        Sent {
            warm: warm_done,
            measured: done,
            before,
            health,
            journal_failure,
        }
    }

    /// The point's row from its measured rows, the client's health while it
    /// ran and the server's counters around it.
    async fn point_row(&self, ctx: &Context<'_>, measured: &[RequestRow], sent: &Sent) -> PointRow {
        let units = self
            .prep
            .calibrations
            .get(&ctx.point.input_tokens)
            .map_or(0, |c| c.units);
        let tolerance = self.plan.workload.prompt_tolerance();
        let mut prow = point_row(ctx, measured, units as u32, tolerance);
        prow.client_cpu_cores = sent.health.cpu_cores;
        prow.client_loop_lag_p99_s = sent.health.loop_lag_p99_s;
        if let (Some(m), Some(before)) = (&self.prep.metrics, &sent.before) {
            // Counters are updated as the engine finishes each step; let
            // the last completions land before reading them.
            tokio::time::sleep(self.prep.metrics_settle).await;
            if let Some(after) = m.scrape().await {
                prow.server = Some(ServerCounters::between(before, &after));
            }
        }
        if let Some(p) = self.power {
            p.fill(&mut prow).await;
        }
        prow
    }

    /// Notes a whole point whose failures exceed the plan's `[tolerance]`.
    fn judge_tolerance(&mut self, label: &str, prow: &PointRow, measured: &[RequestRow]) {
        if self
            .plan
            .tolerance
            .exceeded(prow.failures, prow.requests_done)
        {
            self.over_tolerance.push(OverTolerance::new(
                label,
                prow.failures,
                prow.requests_done,
                measured,
            ));
        }
    }

    /// The graded items (`[accuracy]`) the point's first measured requests
    /// of `trial` ask, at most half of them: the rest make its timing.
    fn graded_items(&self, trial: u32, point: &Point) -> Vec<Item> {
        let mut items: Vec<Item> = self
            .plan
            .accuracy
            .as_ref()
            .map(|a| a.items_of(trial, self.plan.run.seed))
            .unwrap_or_default();
        items.truncate(point.requests as usize / 2);
        items
    }

    /// The warmup and measured jobs of (`trial`, `point`); what each was
    /// planned to be goes into `planned`.
    fn jobs(
        &self,
        trial: u32,
        point: &Point,
        share: &Share,
        planned: &mut BTreeMap<u32, Planned>,
        items: &[Item],
    ) -> (Vec<Job>, Vec<Job>) {
        let mut make = |index: u32| {
            let (mut prompt, mut plan) = self.prompts.request(trial, point, index);
            let batch = self
                .plan
                .workload
                .batch
                .as_ref()
                .map_or(1, |b| *b.get_ref());
            if !self.prep.api.streams() {
                // Every input (or query and document pair) is the prompt:
                // the server counts them all, and nothing is generated.
                plan.input_tokens *= batch;
                plan.cached_tokens *= batch;
                plan.output_tokens = 0;
            }
            plan.length_forced =
                crate::workload::forces_length(&self.prep.extra, plan.output_tokens);
            // The point's first measured requests ask the trial's graded items.
            let rank = index.checked_sub(point.warmup);
            if let Some((r, item)) = rank.and_then(|r| Some((r, items.get(r as usize)?))) {
                prompt.clone_from(&item.prompt);
                plan.graded = Some(r);
                plan.cached_tokens = 0;
            }
            // Only chat messages carry images (the plan refuses others').
            let images = match self.prep.api {
                qexp_plan::ApiKind::Chat => self.prompts.images(trial, point, index, &mut plan),
                _ => Vec::new(),
            };
            planned.insert(index, plan);
            let mut request = GenRequest {
                api: self.prep.api,
                model: self.prep.model.clone(),
                prompt,
                max_tokens: plan.output_tokens,
                extra: self.prep.extra.clone(),
                history: None,
                batch,
                headers: Vec::new(),
                images: images.into_iter().map(|i| i.url).collect(),
            };
            if let Some(class) = plan.class.and_then(|k| self.prep.classes.get(k)) {
                class.apply(&mut request);
            }
            Job { index, request }
        };
        let warm: Vec<Job> = share.warmup.iter().copied().map(&mut make).collect();
        let measured = share.measured.iter().copied().map(&mut make).collect();
        (warm, measured)
    }

    /// Sends the measured jobs under the point's load.
    async fn measure(
        &self,
        trial: u32,
        point: &Point,
        jobs: Vec<Job>,
        share: &Share,
        origin_unix_s: Option<f64>,
        on_measured: &mut impl FnMut(&crate::Finished),
    ) -> Vec<crate::Finished> {
        let cancel = self.stop.receiver();
        let backend = self.backend.clone();
        match (&self.plan.workload.multi_turn, &point.open_loop) {
            (None, None) => {
                run_closed_loop(backend, jobs, share.concurrency, cancel, on_measured).await
            }
            (Some(m), _) => {
                // Jobs are session-major: a session's turns are consecutive.
                let sessions = jobs
                    .chunks(m.turns() as usize)
                    .map(<[Job]>::to_vec)
                    .collect();
                let think = Duration::from_secs_f64(m.think_time_s());
                run_sessions(
                    backend,
                    sessions,
                    share.concurrency,
                    think,
                    cancel,
                    on_measured,
                )
                .await
            }
            (None, Some(ol)) => {
                // Arrivals differ per trial and point, yet repeat run to run
                // (and match between the deployments of a block).
                let place = point.id % self.prompts.per_deployment.max(1);
                let seed = self.plan.run.seed ^ (u64::from(trial) << 32) ^ u64::from(place);
                let shard = self.meeting.shard();
                let trace = self.prep.trace.as_ref();
                let spec = OpenLoopSpec {
                    offsets: shard.offsets(ol, trace, seed, point.warmup, &share.measured),
                    max_in_flight: share.max_in_flight,
                    timer: Timer::Precise,
                    origin_unix_s,
                };
                run_open_loop(backend, jobs, spec, cancel, on_measured).await
            }
        }
    }
}

fn point_line(label: &str, p: &PointRow, rows: &[RequestRow], streams: bool) -> String {
    let latency = |f: fn(&RequestRow) -> Option<f64>| {
        let mut v: Vec<f64> = rows.iter().filter_map(f).collect();
        v.sort_by(f64::total_cmp);
        v.get(v.len() / 2)
            .map_or("-".into(), |t| format!("{t:.3} s"))
    };
    let ok = p.requests_done - p.failures;
    let mut line = match streams {
        true => format!(
            "{label}: {ok} ok, {} failed, {} tok/s aggregate, TTFT ~{}",
            p.failures,
            p.agg_output_tok_s.map_or("-".into(), |a| format!("{a:.1}")),
            latency(|r| r.ttft_s)
        ),
        // An answer that does not stream: requests/s and E2E.
        false => format!(
            "{label}: {ok} ok, {} failed, {:.1} req/s, E2E ~{}",
            p.failures,
            f64::from(ok) / (p.window_end_unix_s - p.window_start_unix_s),
            latency(|r| r.e2e_s)
        ),
    };
    if let Some(r) = &p.invalid_reason {
        line.push_str(&format!(" — INVALID: {r}"));
    }
    line
}

/// The rows of a point's warmups and of its measured requests, each with
/// the lengths it was planned with (a multi-turn point's later turns).
fn rows_of(
    ctx: &Context<'_>,
    sent: &Sent,
    planned: &BTreeMap<u32, Planned>,
) -> (Vec<RequestRow>, Vec<RequestRow>) {
    let plan_of = |f: &crate::Finished| planned.get(&f.index).copied().unwrap_or_default();
    let rows = |done: &[crate::Finished], warmup: bool| -> Vec<RequestRow> {
        done.iter()
            .map(|f| request_row(ctx, f, warmup, plan_of(f)))
            .collect()
    };
    (rows(&sent.warm, true), rows(&sent.measured, false))
}

/// Writes a point's rows: as a whole point, or as an incomplete one (which
/// a resume measures again) when it was cut short. A journal that failed
/// while the point ran is the error to report, once what can still be kept
/// is kept.
fn keep(
    writer: &mut RunWriter,
    rows: &[RequestRow],
    prow: &PointRow,
    whole: bool,
    journal_failure: Option<StoreError>,
) -> Result<(), RunError> {
    if let Some(e) = journal_failure {
        let _ = writer.write_incomplete_point(rows, prow);
        return Err(e.into());
    }
    if whole {
        writer.write_point(rows, prow)?;
    } else {
        writer.write_incomplete_point(rows, prow)?;
    }
    Ok(())
}

/// A measured point's output tok/s and median TTFT, for
/// `[run] stop_past_saturation` (NaN where there is none).
fn figures(prow: &PointRow, measured: &[RequestRow]) -> PointFigures {
    let mut ttft: Vec<f64> = measured
        .iter()
        .filter(|r| r.error_class.is_none())
        .filter_map(|r| r.ttft_s)
        .filter(|t| t.is_finite())
        .collect();
    ttft.sort_by(f64::total_cmp);
    let n = ttft.len();
    let ttft_s = match n {
        0 => f64::NAN,
        _ if n % 2 == 1 => ttft[n / 2],
        _ => (ttft[n / 2 - 1] + ttft[n / 2]) / 2.0,
    };
    PointFigures {
        tok_s: prow.agg_output_tok_s.unwrap_or(f64::NAN),
        ttft_s,
    }
}
