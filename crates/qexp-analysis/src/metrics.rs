//! The figures of one (trial, point) from its measured requests, and of
//! one point across trials (each metric summarized over its trials).

use crate::answers::{AnswerHealth, AnswerTally};
use crate::server::{CounterValues, ServerMetric};
use crate::stats::Summary;
use qexp_plan::Point;
use serde::Serialize;
use std::collections::BTreeMap;

/// Metrics of one (trial, point), from its measured requests.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct TrialMetrics {
    /// Trial number.
    pub trial: u32,
    /// Point id.
    pub point_id: u32,
    /// Measured requests.
    pub requests: u32,
    /// Failed measured requests.
    pub failures: u32,
    /// Output tokens / (first send → last completion).
    pub agg_tok_s: f64,
    /// Median over requests of 1/TPOT.
    pub decode_tok_s: f64,
    /// Median TTFT.
    pub ttft_s: f64,
    /// 90th percentile TTFT.
    pub ttft_p90_s: f64,
    /// Median E2E.
    pub e2e_s: f64,
    /// Pooled inter-chunk gap, median.
    pub itl_p50_s: f64,
    /// Pooled inter-chunk gap, 90th percentile.
    pub itl_p90_s: f64,
    /// Pooled inter-chunk gap, 99th percentile.
    pub itl_p99_s: f64,
    /// Mean tokens per content chunk (>1 under speculative decoding).
    pub tokens_per_chunk: f64,
    /// Median server-reported prompt tokens.
    pub prompt_tokens: f64,
    /// Sum of the server-reported prompt tokens of the successful requests.
    pub prompt_tokens_ok: f64,
    /// Median planned prompt tokens (the point's, unless lengths vary).
    pub input_planned: f64,
    /// Median planned output tokens (the point's, unless lengths vary).
    pub output_planned: f64,
    /// Median server-reported completion tokens.
    pub completion_tokens: f64,
    /// How the completion lengths spread, where they do (answers the model
    /// stopped before the plan's length); None when all are one length.
    #[serde(skip)]
    pub answer_spread: Option<qexp_model::AnswerSpread>,
    /// Whether planned prompt or output lengths vary between requests (length distributions).
    pub lengths_vary: bool,
    /// Sum of server-reported cached prompt tokens.
    pub cached_tokens: u64,
    /// Cached over prompt tokens of the successful requests, as the server reported them (NaN without counts).
    pub cached_share: f64,
    /// The share the plan expected cached (a shared prefix after each group's first prompt; 0 otherwise).
    pub cached_share_expected: f64,
    /// Requests whose server and client output counts disagree.
    pub token_mismatches: u32,
    /// Largest scheduled → sent lag.
    pub send_lag_max_s: f64,
    /// First measured send, Unix seconds (NaN when not recorded).
    pub window_start_unix_s: f64,
    /// qexp's event-loop lag p99 while the point ran (NaN when not recorded).
    pub client_loop_lag_p99_s: f64,
    /// qexp's cores used while the point ran (NaN when not recorded).
    pub client_cpu_cores: f64,
    /// Why the point's numbers are invalid, if so.
    pub invalid_reason: Option<String>,
    /// The server's own counters over the (trial, point) (scraped
    /// /metrics); empty when none were scraped.
    pub server: CounterValues,
    /// What the answers' texts say (loops, empty answers, lengths).
    pub answers: AnswerTally,
    /// The graded requests (`[accuracy]`), left out of every other metric.
    pub graded: Vec<crate::graded::Graded>,
    /// Energy, power, GPU health and cost (`[power]`, `[cost]`); `None` without either.
    pub energy: Option<crate::energy::TrialEnergy>,
    /// The steady-state window (closed-loop points where one opened).
    pub steady: Option<crate::steady::SteadyWindow>,
    /// Server-reported prompt tokens of the successful requests, summed.
    pub prompt_tokens_sum: f64,
    /// The point row's window (first send → last completion), seconds.
    pub window_s: f64,
}

impl TrialMetrics {
    /// Successful requests per second over the point's window.
    pub fn req_s(&self) -> f64 {
        f64::from(self.requests.saturating_sub(self.failures)) / self.window_s
    }

    /// Server-reported prompt tokens per second over the point's window.
    pub fn input_tok_s(&self) -> f64 {
        self.prompt_tokens_sum / self.window_s
    }
}

impl TrialMetrics {
    /// A (trial, point) that recorded a point row but no measured request:
    /// every request metric is NaN (shown as a dash), not a fake zero.
    pub fn without_requests(trial: u32, point_id: u32) -> TrialMetrics {
        TrialMetrics {
            trial,
            point_id,
            agg_tok_s: f64::NAN,
            client_loop_lag_p99_s: f64::NAN,
            client_cpu_cores: f64::NAN,
            decode_tok_s: f64::NAN,
            ttft_s: f64::NAN,
            ttft_p90_s: f64::NAN,
            e2e_s: f64::NAN,
            itl_p50_s: f64::NAN,
            itl_p90_s: f64::NAN,
            itl_p99_s: f64::NAN,
            tokens_per_chunk: f64::NAN,
            prompt_tokens: f64::NAN,
            prompt_tokens_ok: f64::NAN,
            input_planned: f64::NAN,
            output_planned: f64::NAN,
            completion_tokens: f64::NAN,
            cached_share: f64::NAN,
            cached_share_expected: f64::NAN,
            window_s: f64::NAN,
            ..TrialMetrics::default()
        }
    }

    /// A number derived from the server's counters, when they allow one.
    pub fn server_metric(&self, m: ServerMetric) -> Option<f64> {
        m.of(&self.server)
    }
}

/// One point across trials.
#[derive(Debug, Clone, Serialize)]
pub struct PointSummary {
    /// The point's parameters.
    pub point: Point,
    /// Trials with data.
    pub n: usize,
    /// Aggregate output tok/s across trials.
    pub agg_tok_s: Option<Summary>,
    /// Successful requests per second across trials.
    pub req_s: Option<Summary>,
    /// Prompt tokens per second across trials.
    pub input_tok_s: Option<Summary>,
    /// Per-request decode tok/s across trials.
    pub decode_tok_s: Option<Summary>,
    /// Median TTFT across trials.
    pub ttft_s: Option<Summary>,
    /// TTFT p90 across trials.
    pub ttft_p90_s: Option<Summary>,
    /// Median E2E across trials.
    pub e2e_s: Option<Summary>,
    /// ITL p50 across trials.
    pub itl_p50_s: Option<Summary>,
    /// ITL p90 across trials.
    pub itl_p90_s: Option<Summary>,
    /// ITL p99 across trials.
    pub itl_p99_s: Option<Summary>,
    /// Median server-reported prompt tokens, across trials.
    pub prompt_tokens: Option<Summary>,
    /// Median planned prompt tokens, across trials.
    pub input_planned: Option<Summary>,
    /// Median planned output tokens, across trials.
    pub output_planned: Option<Summary>,
    /// Median server-reported completion tokens, across trials.
    pub completion_tokens: Option<Summary>,
    /// Share of prompt tokens the server reported cached, across trials.
    pub cached_share: Option<Summary>,
    /// Share of prompt tokens the plan expected cached, across trials.
    pub cached_share_expected: Option<Summary>,
    /// The steady-state window across the trials that have one (closed-loop points).
    pub steady: Option<SteadySummary>,
    /// Numbers derived from the server's counters across trials; a metric
    /// is absent where no trial has it (no scraped metrics).
    pub server: BTreeMap<ServerMetric, Summary>,
    /// Measured requests, all trials.
    pub requests: u64,
    /// Failed requests, all trials.
    pub failures: u64,
    /// The answers' health, all trials.
    pub answers: AnswerHealth,
    /// Energy and cost across trials, where the run measured power or priced its GPUs.
    pub energy: Option<crate::energy::EnergySummary>,
    /// Per-trial values, by trial number.
    pub trials: Vec<TrialMetrics>,
}

impl PointSummary {
    /// True when the point was lost: requests were measured there and every
    /// one failed (a server that times out or refuses at this load). A
    /// point nothing was measured at (a run that stopped first) is not lost.
    pub fn lost(&self) -> bool {
        self.requests > 0 && self.failures >= self.requests
    }

    /// Summarises per-trial metrics of one point.
    pub fn new(point: Point, trials: Vec<TrialMetrics>) -> PointSummary {
        let of =
            |f: fn(&TrialMetrics) -> f64| Summary::of(&trials.iter().map(f).collect::<Vec<_>>());
        PointSummary {
            n: trials.len(),
            agg_tok_s: of(|t| t.agg_tok_s),
            req_s: of(TrialMetrics::req_s),
            input_tok_s: of(TrialMetrics::input_tok_s),
            decode_tok_s: of(|t| t.decode_tok_s),
            ttft_s: of(|t| t.ttft_s),
            ttft_p90_s: of(|t| t.ttft_p90_s),
            e2e_s: of(|t| t.e2e_s),
            itl_p50_s: of(|t| t.itl_p50_s),
            itl_p90_s: of(|t| t.itl_p90_s),
            itl_p99_s: of(|t| t.itl_p99_s),
            prompt_tokens: of(|t| t.prompt_tokens),
            input_planned: of(|t| t.input_planned),
            output_planned: of(|t| t.output_planned),
            completion_tokens: of(|t| t.completion_tokens),
            cached_share: of(|t| t.cached_share),
            cached_share_expected: of(|t| t.cached_share_expected),
            steady: SteadySummary::of(&trials),
            server: ServerMetric::ALL
                .into_iter()
                .filter_map(|m| {
                    let v: Vec<f64> = trials
                        .iter()
                        .map(|t| t.server_metric(m).unwrap_or(f64::NAN))
                        .collect();
                    Summary::of(&v).map(|s| (m, s))
                })
                .collect(),
            requests: trials.iter().map(|t| u64::from(t.requests)).sum(),
            failures: trials.iter().map(|t| u64::from(t.failures)).sum(),
            answers: AnswerHealth::of(trials.iter().map(|t| &t.answers)),
            energy: crate::energy::EnergySummary::of(
                trials
                    .iter()
                    .filter_map(|t| Some((t.trial, t.energy.as_ref()?))),
            ),
            point,
            trials,
        }
    }

    /// The summary of a number derived from the server's counters.
    pub fn server(&self, m: ServerMetric) -> Option<&Summary> {
        self.server.get(&m)
    }
}

/// A point's steady-state windows across trials ([`crate::steady`]).
#[derive(Debug, Clone, Serialize)]
pub struct SteadySummary {
    /// Trials with a window.
    pub n: usize,
    /// Output tok/s over the window.
    pub tok_s: Summary,
    /// Median TTFT of the requests sent in the window, seconds.
    pub ttft_s: Option<Summary>,
    /// Median E2E of the requests sent in the window, seconds.
    pub e2e_s: Option<Summary>,
    /// The window's length, seconds.
    pub window_s: Summary,
    /// The window's share of its point.
    pub share: Summary,
    /// Trials whose window is short ([`crate::steady::SteadyWindow::short`]).
    pub short: usize,
}

impl SteadySummary {
    /// Across the trials with a window; None when none has one.
    pub fn of(trials: &[TrialMetrics]) -> Option<SteadySummary> {
        let w: Vec<&crate::steady::SteadyWindow> =
            trials.iter().filter_map(|t| t.steady.as_ref()).collect();
        let of = |f: fn(&crate::steady::SteadyWindow) -> f64| {
            Summary::of(&w.iter().map(|x| f(x)).collect::<Vec<_>>())
        };
        Some(SteadySummary {
            n: w.len(),
            tok_s: of(|x| x.tok_s)?,
            ttft_s: of(|x| x.ttft_s),
            e2e_s: of(|x| x.e2e_s),
            window_s: of(|x| x.window_s)?,
            share: of(|x| x.share)?,
            short: w.iter().filter(|x| x.short).count(),
        })
    }
}

/// A plan parameter that takes several values in the run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Axis {
    /// Requests in flight.
    Concurrency,
    /// Prompt tokens.
    InputTokens,
    /// Output tokens.
    OutputTokens,
    /// Image pixels per request (`[workload.images]`: count × mean pixels per image).
    ImagePixels,
}

impl Axis {
    /// The axes swept in these points, in display order.
    pub fn swept(points: &[Point]) -> Vec<Axis> {
        let distinct = |f: fn(&Point) -> u32| {
            let mut v: Vec<u32> = points.iter().map(f).collect();
            v.sort_unstable();
            v.dedup();
            v.len() > 1
        };
        let mut axes = Vec::new();
        if distinct(|p| p.concurrency) {
            axes.push(Axis::Concurrency);
        }
        if distinct(|p| p.input_tokens) {
            axes.push(Axis::InputTokens);
        }
        if distinct(|p| p.output_tokens) {
            axes.push(Axis::OutputTokens);
        }
        if distinct(|p| Axis::ImagePixels.value(p)) {
            axes.push(Axis::ImagePixels);
        }
        axes
    }

    /// The point's value on this axis.
    pub fn value(self, p: &Point) -> u32 {
        match self {
            Axis::Concurrency => p.concurrency,
            Axis::InputTokens => p.input_tokens,
            Axis::OutputTokens => p.output_tokens,
            Axis::ImagePixels => p
                .images
                .map_or(0, |i| u32::try_from(i.pixels).unwrap_or(u32::MAX)),
        }
    }

    /// Column header, with unit.
    pub fn header(self) -> &'static str {
        match self {
            Axis::Concurrency => "Concurrency (requests)",
            Axis::InputTokens => "Input (tokens)",
            Axis::OutputTokens => "Output (tokens)",
            Axis::ImagePixels => "Image pixels (per request)",
        }
    }
}
