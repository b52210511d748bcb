//! The flag values; their sentences are in `text.rs`.

use super::Metric;
use crate::metrics::Axis;
use serde::Serialize;

/// How a flag should be read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Severity {
    /// The numbers may not mean what they seem; act on it.
    Warning,
    /// A property of the system under test worth knowing, not an error.
    Finding,
}

impl std::fmt::Display for Severity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Severity::Warning => "warning",
            Severity::Finding => "finding",
        })
    }
}

/// A metric's coefficient of variation across trials.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MetricCv {
    /// The metric.
    pub metric: Metric,
    /// Its CV (std / mean).
    pub cv: f64,
    /// Judged per token (TTFT per prompt token, E2E per answer token),
    /// because the plan draws lengths from distributions on purpose.
    pub per_token: bool,
    /// Set when the trials' spread (largest − smallest, seconds) is within
    /// how late qexp's own event loop woke (its p99, the largest of the
    /// trials'): the host's scheduling tail explains it, not the server.
    pub host_lag_s: Option<f64>,
}

/// Where an open-loop point's requests queue: a trial's median TTFT is
/// past `factor` × that of the lowest rate of its workload.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Queueing {
    /// The largest of the point's trial TTFTs, seconds.
    pub ttft_s: f64,
    /// The workload's lowest rate, requests/s.
    pub low_rate: f64,
    /// Its median TTFT, seconds.
    pub low_ttft_s: f64,
    /// The plan's `ttft_plateau`.
    pub factor: f64,
}

/// One metric of an outlier trial.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct OutlierValue {
    /// The metric.
    pub metric: Metric,
    /// The trial's value.
    pub value: f64,
    /// The point's median across trials.
    pub median: f64,
    /// Beyond the outer Tukey fence (3 IQR) rather than only the inner one (1.5 IQR).
    pub severe: bool,
}

/// One anomaly or finding, attached to a point.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Flag {
    /// The point's answers are broken (loops, empty, garbled, early stops,
    /// lengths off): whatever its timing says was measured on broken output.
    BrokenAnswers {
        /// The point.
        point_id: u32,
        /// Answers checked, all trials.
        checked: u64,
        /// The issues at or above the broken share, worst first.
        issues: Vec<crate::answers::IssueShare>,
        /// Set when the mean length is off the one asked for.
        length: Option<crate::answers::LengthOff>,
        /// The worst issue's share at each concurrency of the points like
        /// this one (same lengths and deployment), by concurrency.
        trend: Vec<(u32, f64)>,
        /// An escaped excerpt of an unhealthy answer, with its issue.
        excerpt: Option<(qexp_types::AnswerIssue, String)>,
    },
    /// The point's graded answers are significantly less accurate than at
    /// the lowest load of the same workload (exact McNemar on the same items).
    AccuracyDrop {
        /// The point.
        point_id: u32,
        /// Its concurrency.
        concurrency: u32,
        /// The lowest load's concurrency.
        baseline_concurrency: u32,
        /// Accuracy there and here, on the items both answered: change (here − there).
        change: f64,
        /// Holm-adjusted p over the run's load comparisons.
        p_holm: f64,
    },
    /// The share of the point's answers that parsed (tool calls, a
    /// response schema) is lower than at the lowest load of the same
    /// workload, beyond both points' noise.
    ParseRateFalls {
        /// The point.
        point_id: u32,
        /// Its concurrency.
        concurrency: u32,
        /// The lowest load's concurrency.
        baseline_concurrency: u32,
        /// The parse rate here.
        rate: crate::answers::ParseRate,
        /// The parse rate at the lowest load.
        baseline_rate: crate::answers::ParseRate,
        /// The interval of the change (here − there), Newcombe's hybrid
        /// score at the parse rate's confidence shared by the `compared`
        /// points (Bonferroni); wholly below 0.
        change_interval: (f64, f64),
        /// How many points were compared with the same lowest load.
        compared: u32,
        /// The parse rate at each concurrency of the points like this one
        /// (same lengths and deployment), by concurrency.
        trend: Vec<(u32, f64)>,
    },
    /// A metric moved against its expected direction between neighbours on a swept axis.
    WrongDirection {
        /// The later point on the axis (where the flag is shown).
        point_id: u32,
        /// Its neighbour before it on the axis.
        prev_point_id: u32,
        /// The swept axis.
        axis: Axis,
        /// The point's value on the axis.
        axis_value: u32,
        /// The neighbour's value on the axis.
        prev_axis_value: u32,
        /// The metric.
        metric: Metric,
        /// Median at the point.
        value: f64,
        /// Median at the neighbour.
        prev_value: f64,
        /// Beyond the noise of both points; false when a side has one trial.
        verified: bool,
        /// Two-sided Mann–Whitney p-value, when the trial counts can reach the test's level.
        p_value: Option<f64>,
        /// Trials per point that would settle an unverified flag.
        trials_needed: Option<usize>,
        /// Whether cached prompt tokens explain it; None when the run reports no cached tokens
        /// at all (the server may not report them) or for decode rate, which caching does not change.
        cache_explains: Option<bool>,
        /// The GPUs were held back at one of the two points: a likely cause.
        #[serde(skip_serializing_if = "Option::is_none")]
        gpu: Option<super::gpu::GpuCause>,
    },
    /// A point whose trials disagree more than the plan's CV threshold.
    NoisyPoint {
        /// The point.
        point_id: u32,
        /// Trials with data.
        n: usize,
        /// The plan's CV threshold.
        threshold: f64,
        /// Metrics above it.
        metrics: Vec<MetricCv>,
        /// Set at an open-loop point where requests queue: a queue follows
        /// each trial's arrivals, so trials differ without interference.
        queueing: Option<Queueing>,
        /// The GPUs were held back at the point: a likely cause.
        #[serde(skip_serializing_if = "Option::is_none")]
        gpu: Option<super::gpu::GpuCause>,
    },
    /// A trial beyond the Tukey fences of its point's trials.
    OutlierTrial {
        /// The point.
        point_id: u32,
        /// The trial number.
        trial: u32,
        /// Trials at the point.
        n: usize,
        /// The metrics where it lies outside.
        metrics: Vec<OutlierValue>,
        /// The GPUs were held back at the point: a likely cause.
        #[serde(skip_serializing_if = "Option::is_none")]
        gpu: Option<super::gpu::GpuCause>,
    },
    /// Failed measured requests.
    Failures {
        /// The point.
        point_id: u32,
        /// Failed requests, all trials.
        failures: u64,
        /// Measured requests, all trials.
        requests: u64,
        /// Trials with failures.
        trials: Vec<u32>,
        /// The error classes and their counts, largest first (empty until
        /// [`super::failures::name_classes`] reads the run's failed rows).
        classes: Vec<(qexp_types::ErrorClass, u64)>,
    },
    /// Token counts that disagree: server vs client output, or server vs plan input.
    TokenMismatch {
        /// The point.
        point_id: u32,
        /// Requests whose server and client (or planned) output counts disagree.
        output_mismatches: u64,
        /// Measured requests, all trials.
        requests: u64,
        /// Trials with a mismatch.
        trials: Vec<u32>,
        /// Planned prompt tokens.
        planned_input: u32,
        /// Median server-reported prompt tokens, when beyond the input tolerance.
        server_input: Option<f64>,
    },
    /// Cached prompt tokens although the plan shares no prefixes.
    UnexpectedCacheHits {
        /// The point.
        point_id: u32,
        /// Cached prompt tokens, all trials.
        cached_tokens: u64,
        /// Share of the point's prompt tokens served from cache, when known.
        share: Option<f64>,
        /// Trials with cached tokens.
        trials: Vec<u32>,
    },
    /// Aggregate throughput stops scaling with concurrency while TTFT keeps growing.
    SaturationKnee {
        /// The knee point.
        point_id: u32,
        /// Its concurrency.
        concurrency: u32,
        /// Its median aggregate tok/s.
        agg_tok_s: f64,
        /// The largest gain per doubling of concurrency beyond it (fraction).
        gain_per_doubling: f64,
        /// The highest concurrency swept.
        last_concurrency: u32,
        /// Median TTFT at the knee.
        ttft_s: f64,
        /// Median TTFT at the highest concurrency.
        last_ttft_s: f64,
        /// Where TTFT leaves its low-load plateau along the sweep.
        plateau: super::knee::Plateau,
        /// What the plan's `[slo]` says, when it has one.
        slo: Option<super::knee::SloLoad>,
        /// The sweep's point ids, by concurrency.
        sweep: Vec<u32>,
    },
    /// The client sent requests late, so the numbers describe the client.
    LoadGeneratorBehind {
        /// The point.
        point_id: u32,
        /// Trials over the limit.
        trials: Vec<u32>,
        /// Largest send lag among them, seconds.
        send_lag_s: f64,
        /// The limit it crossed, seconds.
        limit_s: f64,
        /// qexp's cores used in that trial (NaN when unknown).
        cpu_cores: f64,
    },
    /// qexp's own event loop was slow to run tasks that were due, so chunk
    /// arrivals (and sends) were stamped late: the client may have set the pace.
    ClientBusy {
        /// The point.
        point_id: u32,
        /// Trials over the limit.
        trials: Vec<u32>,
        /// Largest event-loop lag p99 among them, seconds.
        loop_lag_p99_s: f64,
        /// qexp's cores used in that trial (NaN when unknown).
        cpu_cores: f64,
        /// The limit it crossed, seconds.
        limit_s: f64,
    },
    /// Response time from the schedule exceeds the service latency: requests
    /// waited before they were sent, in the client or behind the in-flight cap.
    ScheduleDelay {
        /// The point.
        point_id: u32,
        /// What the wait was spent on.
        cause: crate::schedule::LagCause,
        /// TTFT p99 from the send (median across trials), seconds.
        service_ttft_p99_s: f64,
        /// TTFT p99 from the scheduled send, seconds.
        response_ttft_p99_s: f64,
        /// The difference allowed (the send-lag limit), seconds.
        limit_s: f64,
        /// qexp's cores used at the point, the most of any trial (NaN when unknown).
        cpu_cores: f64,
    },
    /// Requests left the client at a lower rate than the schedule asked.
    RateShortfall {
        /// The point.
        point_id: u32,
        /// Rate of the drawn schedule, requests/s.
        scheduled_rate: f64,
        /// Rate of the actual sends, requests/s.
        achieved_rate: f64,
        /// The shortfall allowed (fraction).
        tolerance: f64,
        /// qexp's cores used at the point, the most of any trial (NaN when unknown).
        cpu_cores: f64,
    },
    /// The point's GPUs were power-capped or throttled by temperature for a
    /// material share of its window (`[power]`).
    GpuHeldBack {
        /// The point.
        point_id: u32,
        /// How much, in which trials.
        cause: super::gpu::GpuCause,
    },
    /// Trials the runner marked invalid.
    PointInvalid {
        /// The point.
        point_id: u32,
        /// Trials with this reason.
        trials: Vec<u32>,
        /// The runner's reason.
        reason: String,
    },
}

impl Flag {
    /// The point the flag belongs to.
    pub fn point_id(&self) -> Option<u32> {
        Some(match self {
            Flag::BrokenAnswers { point_id, .. }
            | Flag::AccuracyDrop { point_id, .. }
            | Flag::ParseRateFalls { point_id, .. }
            | Flag::WrongDirection { point_id, .. }
            | Flag::NoisyPoint { point_id, .. }
            | Flag::OutlierTrial { point_id, .. }
            | Flag::Failures { point_id, .. }
            | Flag::TokenMismatch { point_id, .. }
            | Flag::UnexpectedCacheHits { point_id, .. }
            | Flag::SaturationKnee { point_id, .. }
            | Flag::LoadGeneratorBehind { point_id, .. }
            | Flag::ClientBusy { point_id, .. }
            | Flag::ScheduleDelay { point_id, .. }
            | Flag::RateShortfall { point_id, .. }
            | Flag::GpuHeldBack { point_id, .. }
            | Flag::PointInvalid { point_id, .. } => *point_id,
        })
    }

    /// Warning, or a finding about the system under test.
    pub fn severity(&self) -> Severity {
        match self {
            Flag::SaturationKnee { .. } => Severity::Finding,
            // A backlog is the server's doing: something learnt, not a fault of the run.
            Flag::ScheduleDelay {
                cause: crate::schedule::LagCause::Backlog,
                ..
            } => Severity::Finding,
            _ => Severity::Warning,
        }
    }

    /// Short title for headers and summary lists.
    pub fn title(&self) -> &'static str {
        match self {
            Flag::BrokenAnswers { .. } => "Broken answers",
            Flag::AccuracyDrop { .. } => "Accuracy drops under load",
            Flag::ParseRateFalls { .. } => "Parse rate falls under load",
            Flag::WrongDirection { .. } => "Wrong direction",
            Flag::NoisyPoint { .. } => "Noisy point",
            Flag::OutlierTrial { .. } => "Outlier trial",
            Flag::Failures { .. } => "Failed requests",
            Flag::TokenMismatch { .. } => "Token-count mismatch",
            Flag::UnexpectedCacheHits { .. } => "Unexpected cache hits",
            Flag::SaturationKnee { .. } => "Saturation knee",
            Flag::LoadGeneratorBehind { cpu_cores, .. }
                if super::loadgen::host_delayed(*cpu_cores) =>
            {
                "Client host delayed the sends"
            }
            Flag::LoadGeneratorBehind { .. } => "Load generator behind",
            Flag::ClientBusy { cpu_cores, .. } if super::loadgen::host_delayed(*cpu_cores) => {
                "Client host delayed qexp"
            }
            Flag::ClientBusy { .. } => "Load generator busy",
            Flag::ScheduleDelay { .. } => "Waiting before the send",
            Flag::RateShortfall { .. } => "Rate below schedule",
            Flag::GpuHeldBack { .. } => "GPU held back",
            Flag::PointInvalid { .. } => "Invalid trial",
        }
    }

    /// Whether the flag is about what was answered rather than how fast:
    /// those come before every other, since every number of their point
    /// was measured on those answers.
    pub fn about_answers(&self) -> bool {
        matches!(
            self,
            Flag::BrokenAnswers { .. } | Flag::AccuracyDrop { .. } | Flag::ParseRateFalls { .. }
        )
    }

    /// Order of kinds within a point (declaration order).
    pub(crate) fn rank(&self) -> u8 {
        match self {
            Flag::BrokenAnswers { .. }
            | Flag::AccuracyDrop { .. }
            | Flag::ParseRateFalls { .. } => 0,
            Flag::WrongDirection { .. } => 1,
            Flag::NoisyPoint { .. } => 2,
            Flag::OutlierTrial { .. } => 3,
            Flag::Failures { .. } => 4,
            Flag::TokenMismatch { .. } => 5,
            Flag::UnexpectedCacheHits { .. } => 6,
            Flag::SaturationKnee { .. } => 7,
            Flag::LoadGeneratorBehind { .. } => 8,
            Flag::ClientBusy { .. } => 9,
            Flag::ScheduleDelay { .. } => 10,
            Flag::RateShortfall { .. } => 11,
            Flag::GpuHeldBack { .. } => 12,
            Flag::PointInvalid { .. } => 13,
        }
    }
}
