//! An experiment's history: one metric per point across its runs over time,
//! each run with its median and spread across trials, and the runs where
//! the metric stepped to a new level ([`steps`](mod@steps), the method and its
//! citations).
//!
//! Runs are comparable only when their workloads are (the comparability
//! fingerprint's `workload_hash`): each workload gets its own
//! [`WorkloadHistory`], so a change of prompt length or sweep never reads as
//! a step. Only complete runs take part: an interrupted run's points may
//! lack trials, a running one is not done. The unit of the step search is
//! the run (the median of its trials). A run that lost a point (every
//! request there failed) has no value to search; it is listed as having
//! lost it ([`PointHistory::lost`]) rather than left out without a word.

pub mod steps;

use crate::metric::Metric;
use crate::run::RunAnalysis;
use crate::stats::Summary;
use qexp_plan::Point;
use qexp_store::RunStatus;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
pub use steps::{steps, Step, StepOptions};

/// The metrics a history can follow: those summarised across trials at each point.
pub const METRICS: [Metric; 5] = [
    Metric::AggTokS,
    Metric::DecodeTokS,
    Metric::TtftS,
    Metric::E2eS,
    Metric::ItlP99S,
];

/// The metric a history follows unless told another (`qexp report
/// --history-metric`).
pub const DEFAULT_METRIC: Metric = Metric::TtftS;

/// One run in a history.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct HistoryRun {
    /// The run id.
    pub run_id: String,
    /// Its position in the slice given to [`history`].
    pub input: usize,
    /// When it started, Unix seconds.
    pub started_unix_s: f64,
}

/// One run's value at a point.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct HistoryValue {
    /// Index into [`WorkloadHistory::runs`].
    pub run: usize,
    /// The metric across the run's trials at this point.
    pub summary: Summary,
    /// Set on the first run of a new level.
    pub step: Option<Step>,
    /// The run's GPUs were held back or their clock dropped at this point
    /// (the sentence of its "GPU held back" flag): a likely cause of a step.
    pub gpu: Option<String>,
}

/// One point across the runs of a workload.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct PointHistory {
    /// The point (as the newest run planned it).
    pub point: Point,
    /// One value per run with data at the point, oldest first.
    pub values: Vec<HistoryValue>,
    /// Runs (indices into [`WorkloadHistory::runs`]) that lost the point:
    /// every request they measured there failed, so they have no value.
    pub lost: Vec<usize>,
}

/// The complete runs of one workload, oldest first, and each point's history.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct WorkloadHistory {
    /// The comparability fingerprint's workload hash.
    pub workload_hash: String,
    /// The runs, oldest first.
    pub runs: Vec<HistoryRun>,
    /// Points in the newest run's plan order.
    pub points: Vec<PointHistory>,
}

impl WorkloadHistory {
    /// Indices (into [`Self::runs`]) of runs marked at one point or more.
    pub fn marked_runs(&self) -> Vec<usize> {
        let mut v: Vec<usize> = self
            .points
            .iter()
            .flat_map(|p| p.values.iter().filter(|v| v.step.is_some()).map(|v| v.run))
            .collect();
        v.sort_unstable();
        v.dedup();
        v
    }
}

/// What a history needs of one run: small enough to keep beside the index
/// (see qexp-report's index cache), so that a workspace of a thousand runs
/// does not read a thousand runs' rows each time.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HistoryInput {
    /// The run id.
    pub run_id: String,
    /// When it started, Unix seconds.
    pub started_unix_s: f64,
    /// Only complete runs take part.
    pub complete: bool,
    /// The comparability fingerprint's workload hash.
    pub workload_hash: String,
    /// Each point, in plan order, with each of [`METRICS`] that it has
    /// across trials (by [`Metric::key`]).
    pub points: Vec<HistoryPoint>,
}

/// One point of a [`HistoryInput`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HistoryPoint {
    /// The point as planned.
    pub point: Point,
    /// Each history metric's summary across the run's trials, by key.
    pub summaries: BTreeMap<String, Summary>,
    /// Every request measured at the point failed ([`crate::PointSummary::lost`]).
    #[serde(default)]
    pub lost: bool,
    /// Why the point's GPUs ran slower than they could, if they did
    /// (power cap, temperature, a clock drop), as a sentence.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpu: Option<String>,
}

impl HistoryInput {
    /// What the history takes of `a`.
    pub fn of(a: &RunAnalysis) -> HistoryInput {
        let m = &a.manifest;
        let usual = crate::anomaly::gpu::usual_sm_clock(&a.points);
        HistoryInput {
            run_id: m.run_id.clone(),
            started_unix_s: m.started_at.timestamp_millis() as f64 / 1000.0,
            complete: m.status == RunStatus::Complete,
            workload_hash: m.comparability.workload_hash.clone(),
            points: a
                .points
                .iter()
                .map(|p| HistoryPoint {
                    point: p.point.clone(),
                    summaries: METRICS
                        .iter()
                        .filter_map(|metric| {
                            Some((metric.key().to_string(), metric.summary(p)?.clone()))
                        })
                        .collect(),
                    lost: p.lost(),
                    gpu: crate::anomaly::gpu::GpuCause::of(p, usual).map(|c| c.to_string()),
                })
                .collect(),
        }
    }
}

/// The history of `metric` over `runs` (one experiment's, any order): one
/// [`WorkloadHistory`] per workload hash, the one with the newest run first.
pub fn history(runs: &[&HistoryInput], metric: Metric, opts: &StepOptions) -> Vec<WorkloadHistory> {
    let mut by_workload: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
    for (i, a) in runs.iter().enumerate() {
        if a.complete {
            by_workload
                .entry(a.workload_hash.as_str())
                .or_default()
                .push(i);
        }
    }
    let mut out: Vec<WorkloadHistory> = by_workload
        .into_iter()
        .map(|(hash, mut idx)| {
            idx.sort_by(|&a, &b| {
                let (ra, rb) = (runs[a], runs[b]);
                ra.started_unix_s
                    .total_cmp(&rb.started_unix_s)
                    .then_with(|| ra.run_id.cmp(&rb.run_id))
            });
            workload(hash, runs, &idx, metric, opts)
        })
        .collect();
    out.sort_by(|a, b| {
        let newest = |w: &WorkloadHistory| w.runs.last().map_or(f64::MIN, |r| r.started_unix_s);
        newest(b).total_cmp(&newest(a))
    });
    out
}

fn workload(
    hash: &str,
    runs: &[&HistoryInput],
    idx: &[usize],
    metric: Metric,
    opts: &StepOptions,
) -> WorkloadHistory {
    let hruns: Vec<HistoryRun> = idx
        .iter()
        .map(|&i| HistoryRun {
            run_id: runs[i].run_id.clone(),
            input: i,
            started_unix_s: runs[i].started_unix_s,
        })
        .collect();
    // Points keyed by their parameters, in the newest run's plan order.
    let mut order: Vec<String> = Vec::new();
    let mut points: BTreeMap<String, PointHistory> = BTreeMap::new();
    for (r, &i) in idx.iter().enumerate().rev() {
        for p in &runs[i].points {
            let key = p.point.label();
            // A lost point's summaries (a throughput of 0, say) are not
            // the server's level at that load: it is listed as lost.
            let summary = p
                .summaries
                .get(metric.key())
                .filter(|s| s.median.is_finite() && !p.lost);
            if summary.is_none() && !p.lost {
                continue;
            }
            let entry = points.entry(key.clone()).or_insert_with(|| {
                order.push(key);
                PointHistory {
                    point: p.point.clone(),
                    values: Vec::new(),
                    lost: Vec::new(),
                }
            });
            match summary {
                Some(summary) => entry.values.push(HistoryValue {
                    run: r,
                    summary: summary.clone(),
                    step: None,
                    gpu: p.gpu.clone(),
                }),
                None => entry.lost.push(r),
            }
        }
    }
    let points = order
        .into_iter()
        .filter_map(|k| points.remove(&k))
        .map(|mut ph| {
            ph.values.reverse();
            ph.lost.reverse();
            let medians: Vec<f64> = ph.values.iter().map(|v| v.summary.median).collect();
            for s in steps(&medians, opts) {
                ph.values[s.index].step = Some(s);
            }
            ph
        })
        .collect();
    WorkloadHistory {
        workload_hash: hash.to_string(),
        runs: hruns,
        points,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::{PointSummary, TrialMetrics};

    #[test]
    fn the_history_metrics_are_those_summarised_across_trials() {
        let point = Point {
            id: 0,
            concurrency: 1,
            input_tokens: 10,
            output_tokens: 10,
            requests: 1,
            warmup: 0,
            open_loop: None,
            deployment: None,
            images: None,
        };
        let t = TrialMetrics {
            trial: 1,
            agg_tok_s: 1.0,
            decode_tok_s: 1.0,
            ttft_s: 1.0,
            e2e_s: 1.0,
            itl_p99_s: 1.0,
            ..TrialMetrics::default()
        };
        let p = PointSummary::new(point, vec![t]);
        let summarised: Vec<Metric> = Metric::ALL
            .into_iter()
            .filter(|m| m.summary(&p).is_some())
            .collect();
        assert_eq!(summarised, METRICS.to_vec());
    }

    /// Eight runs whose TTFT steps from 1 s to 1.5 s at the sixth, whose
    /// GPU was power-capped there: the step carries the cause, no other
    /// run's value does.
    #[test]
    fn a_step_whose_run_was_held_back_carries_the_cause() {
        let point = Point {
            id: 0,
            concurrency: 1,
            input_tokens: 10,
            output_tokens: 10,
            requests: 1,
            warmup: 0,
            open_loop: None,
            deployment: None,
            images: None,
        };
        let cause = "the GPU was power-capped for 40% of this point (trial 2)";
        let runs: Vec<HistoryInput> = (0..8)
            .map(|i| {
                let level = if i < 5 { 1.0 } else { 1.5 };
                let s = Summary::of(&[level, level * 1.01, level * 0.99]).expect("values");
                HistoryInput {
                    run_id: format!("run-{i}"),
                    started_unix_s: f64::from(i),
                    complete: true,
                    workload_hash: "w".into(),
                    points: vec![HistoryPoint {
                        point: point.clone(),
                        summaries: [(Metric::TtftS.key().to_string(), s)].into(),
                        lost: false,
                        gpu: (i == 5).then(|| cause.to_string()),
                    }],
                }
            })
            .collect();
        let refs: Vec<&HistoryInput> = runs.iter().collect();
        let h = history(&refs, Metric::TtftS, &StepOptions::default());
        let values = &h[0].points[0].values;
        let stepped: Vec<&HistoryValue> = values.iter().filter(|v| v.step.is_some()).collect();
        assert_eq!(stepped.len(), 1, "{values:?}");
        assert_eq!(stepped[0].run, 5);
        assert_eq!(stepped[0].gpu.as_deref(), Some(cause));
        assert_eq!(values.iter().filter(|v| v.gpu.is_some()).count(), 1);
    }
}
