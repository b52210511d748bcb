use crate::schema::PlanFile;
use serde::{Deserialize, Serialize};

/// One combination of the swept axes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Point {
    /// Index in plan order, stable across trials.
    pub id: u32,
    /// Requests kept in flight.
    pub concurrency: u32,
    /// Planned prompt length in tokens.
    pub input_tokens: u32,
    /// Planned output length in tokens.
    pub output_tokens: u32,
    /// Measured requests.
    pub requests: u32,
    /// Warmup requests sent first and marked as such.
    pub warmup: u32,
}

impl Point {
    /// A short human label, e.g. `c=4 in=1000 out=500`.
    pub fn label(&self) -> String {
        format!(
            "c={} in={} out={}",
            self.concurrency, self.input_tokens, self.output_tokens
        )
    }
}

pub(crate) fn points(plan: &PlanFile) -> Vec<Point> {
    let one = |v: u32| vec![v];
    let conc = plan
        .sweep
        .concurrency
        .as_ref()
        .map_or_else(|| one(1), |s| s.get_ref().clone());
    let inputs = plan.sweep.input_tokens.as_ref().map_or_else(
        || one(*plan.workload.input_tokens.get_ref()),
        |s| s.get_ref().clone(),
    );
    let outputs = plan.sweep.output_tokens.as_ref().map_or_else(
        || one(*plan.workload.output_tokens.get_ref()),
        |s| s.get_ref().clone(),
    );
    let requests = plan.run.requests();
    let shared = plan.workload.shared_prefix.as_ref();
    let mut out = Vec::new();
    for &input_tokens in &inputs {
        for &output_tokens in &outputs {
            for &concurrency in &conc {
                out.push(Point {
                    id: out.len() as u32,
                    concurrency,
                    input_tokens,
                    output_tokens,
                    requests: shared.map_or_else(
                        || requests.at(concurrency).max(concurrency),
                        |s| s.requests(),
                    ),
                    warmup: plan.run.warmup_requests,
                });
            }
        }
    }
    out
}
