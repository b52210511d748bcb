//! The points as a narrative sees them: each point's parameters, counts,
//! flag markers and metric summaries, read by the template context and by
//! `metric()`.

use crate::format::{num, spread};
use crate::labels;
use crate::views::FlagView;
use qexp_analysis::{Metric, PointSummary};
use serde::Serialize;

/// One metric of a point, for narrative authors.
#[derive(Debug, Clone, Default, Serialize)]
pub(super) struct MetricView {
    pub(super) median: Option<f64>,
    pub(super) min: Option<f64>,
    pub(super) max: Option<f64>,
    pub(super) q1: Option<f64>,
    pub(super) q3: Option<f64>,
    pub(super) mean: Option<f64>,
    pub(super) cv: Option<f64>,
    pub(super) n: usize,
    pub(super) text: String,
    pub(super) spread: String,
}

impl MetricView {
    /// `m` at point `p`, or dashes when it has no value there.
    fn of(m: Metric, p: &PointSummary) -> MetricView {
        let s = &m.summary(p).cloned();
        match s {
            Some(v) => MetricView {
                median: Some(v.median),
                min: Some(v.min),
                max: Some(v.max),
                q1: Some(v.q1),
                q3: Some(v.q3),
                mean: Some(v.mean),
                cv: v.cv,
                n: v.n,
                text: num(v.median),
                spread: spread(s),
            },
            None => MetricView {
                text: "–".into(),
                spread: "–".into(),
                ..MetricView::default()
            },
        }
    }
}

/// One point as a narrative sees it (`points["in=100000"]`, `point_list`).
#[derive(Debug, Clone, Serialize)]
pub(crate) struct PointView {
    pub(super) id: u32,
    pub(super) label: String,
    pub(super) concurrency: u32,
    pub(super) input_tokens: u32,
    pub(super) output_tokens: u32,
    pub(super) n: usize,
    pub(super) requests: u64,
    pub(super) failures: u64,
    pub(super) cached_tokens: u64,
    pub(super) flags: Vec<String>,
    pub(super) agg: MetricView,
    pub(super) decode: MetricView,
    pub(super) ttft: MetricView,
    pub(super) e2e: MetricView,
    pub(super) itl_p99: MetricView,
}

impl PointView {
    /// The view of a metric, for the ones a narrative can name.
    pub(super) fn metric(&self, m: Metric) -> Option<&MetricView> {
        match m {
            Metric::AggTokS => Some(&self.agg),
            Metric::DecodeTokS => Some(&self.decode),
            Metric::TtftS => Some(&self.ttft),
            Metric::E2eS => Some(&self.e2e),
            Metric::ItlP99S => Some(&self.itl_p99),
            Metric::Failures
            | Metric::Accuracy
            | Metric::JPerOutTok
            | Metric::UsdPerMOut
            | Metric::SteadyTokS
            | Metric::ReqS
            | Metric::InputTokS => None,
        }
    }

    /// Whether a narrative can name `m`.
    pub(super) fn has_metric(m: Metric) -> bool {
        !matches!(
            m,
            Metric::Failures
                | Metric::Accuracy
                | Metric::JPerOutTok
                | Metric::UsdPerMOut
                | Metric::SteadyTokS
        )
    }
}

/// One view per point: its short label, parameters, counts, flag markers
/// and the metrics a narrative can name.
pub(super) fn point_views(points: &[PointSummary], flags: &[FlagView]) -> Vec<PointView> {
    let swept = labels::swept(points.iter().map(|p| &p.point));
    points
        .iter()
        .map(|p| PointView {
            id: p.point.id,
            label: labels::short(&p.point, &swept),
            concurrency: p.point.concurrency,
            input_tokens: p.point.input_tokens,
            output_tokens: p.point.output_tokens,
            n: p.n,
            requests: p.requests,
            failures: p.failures,
            cached_tokens: p.trials.iter().map(|t| t.cached_tokens).sum(),
            flags: flags
                .iter()
                .filter(|f| f.point_id == Some(p.point.id))
                .map(|f| f.marker.clone())
                .collect(),
            agg: MetricView::of(Metric::AggTokS, p),
            decode: MetricView::of(Metric::DecodeTokS, p),
            ttft: MetricView::of(Metric::TtftS, p),
            e2e: MetricView::of(Metric::E2eS, p),
            itl_p99: MetricView::of(Metric::ItlP99S, p),
        })
        .collect()
}
