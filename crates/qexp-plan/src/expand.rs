//! A plan's points: the swept axes combined, once per deployment.

use crate::deploy::DeploymentSpec;
use crate::open_loop::{requests_for, OpenLoop, TraceRef};
use crate::schema::{PlanFile, Requests};
use crate::trace::Trace;
use serde::{Deserialize, Serialize};

/// One combination of the swept axes (and, in a plan with deployments, of
/// the deployment it runs against).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Point {
    /// Index in plan order, stable across trials.
    pub id: u32,
    /// Requests kept in flight.
    pub concurrency: u32,
    /// Planned prompt length in tokens.
    pub input_tokens: u32,
    /// Planned output length in tokens.
    pub output_tokens: u32,
    /// Measured requests (multi-turn: sessions × turns).
    pub requests: u32,
    /// Warmup requests sent first and marked as such.
    pub warmup: u32,
    /// Open-loop arrivals; `None` for closed-loop concurrency (then `concurrency`
    /// is the cap on requests in flight, 0 for none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub open_loop: Option<OpenLoop>,
    /// The `[[deployment]]` this point runs against; None in a plan without
    /// deployments.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deployment: Option<String>,
    /// Images per request and their swept size (`[workload.images]`); None without images.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub images: Option<crate::images::PointImages>,
}

impl Point {
    /// A short human label, e.g. `c=4 in=1000 out=500`, led by the
    /// deployment (`mtp: c=4 …`) when the plan has deployments.
    pub fn label(&self) -> String {
        let lead = self
            .deployment
            .as_ref()
            .map_or_else(String::new, |d| format!("{d}: "));
        format!(
            "{lead}{} in={} out={}",
            self.load_label(),
            self.input_tokens,
            self.output_tokens
        ) + &self.images_label()
    }

    /// ` img=2` or ` img=2x512x512` for a point with images; empty without.
    fn images_label(&self) -> String {
        match self.images {
            None => String::new(),
            Some(i) => match i.size {
                Some(s) => format!(" img={}x{s}", i.count),
                None => format!(" img={}", i.count),
            },
        }
    }

    /// How the point loads the server: `c=4`, `rate=2/s`, `3 stages`, `trace`.
    pub fn load_label(&self) -> String {
        match &self.open_loop {
            None => format!("c={}", self.concurrency),
            Some(o) if o.trace.is_some() => "trace".to_string(),
            Some(o) if o.stages.len() > 1 => format!("{} stages", o.stages.len()),
            Some(o) => format!("rate={}/s", o.rate()),
        }
    }

    /// Whether `other` asks the same of each request (lengths, images) of
    /// the same deployment: the points of one series along the load.
    pub fn same_workload(&self, other: &Point) -> bool {
        self.input_tokens == other.input_tokens
            && self.output_tokens == other.output_tokens
            && self.deployment == other.deployment
            && self.images == other.images
    }

    /// Planned mean arrival rate (requests/s) of an open-loop point.
    pub fn rate(&self) -> Option<f64> {
        self.open_loop.as_ref().map(OpenLoop::rate)
    }
}

/// The plan's points: a trace plan's one point, or every (input, output)
/// pair times each step of the load axis, then once per deployment.
pub(crate) fn points(plan: &PlanFile) -> Vec<Point> {
    if let Some((t, trace)) = &plan.trace {
        return with_deployments(vec![trace_point(plan, t, trace)], &plan.deployments);
    }
    let one = |v: u32| vec![v];
    let inputs = plan.sweep.input_tokens.as_ref().map_or_else(
        || one(*plan.workload.input_tokens.get_ref()),
        |s| s.get_ref().clone(),
    );
    // An API that answers once generates nothing: its points plan no output.
    let outputs = match plan.target.api.streams() {
        false => vec![0],
        true => plan.sweep.output_tokens.as_ref().map_or_else(
            || one(*plan.workload.output_tokens.get_ref()),
            |s| s.get_ref().clone(),
        ),
    };
    let warmup = plan.run.warmup_requests;
    let loads = load_steps(plan);
    let images = image_steps(plan);
    let mut out = Vec::new();
    for &input_tokens in &inputs {
        for &output_tokens in &outputs {
            for image in &images {
                for (concurrency, n, open_loop) in &loads {
                    out.push(Point {
                        id: out.len() as u32,
                        concurrency: *concurrency,
                        input_tokens,
                        output_tokens,
                        requests: *n,
                        warmup,
                        open_loop: open_loop.clone(),
                        deployment: None,
                        images: *image,
                    });
                }
            }
        }
    }
    with_deployments(out, &plan.deployments)
}

/// The image settings the points take: each swept count × each swept size,
/// or the plan's own; one `None` without `[workload.images]`.
fn image_steps(plan: &PlanFile) -> Vec<Option<crate::images::PointImages>> {
    let Some(images) = &plan.workload.images else {
        return vec![None];
    };
    let counts = plan
        .sweep
        .image_count
        .as_ref()
        .map_or_else(|| vec![images.count()], |l| l.get_ref().clone());
    let sizes: Vec<Option<crate::images::ImageSize>> = match plan.sweep.image_sizes.as_slice() {
        [] => vec![None],
        swept => swept.iter().copied().map(Some).collect(),
    };
    let mut out = Vec::new();
    for &count in &counts {
        for &size in &sizes {
            out.push(Some(crate::images::PointImages {
                count,
                size,
                pixels: (f64::from(count) * images.mean_pixels(size)).round() as u64,
            }));
        }
    }
    out
}

/// A trace plan's one point: the trace replayed, its longest lengths as
/// the point's, `load.max_in_flight` as its concurrency.
fn trace_point(plan: &PlanFile, t: &TraceRef, trace: &Trace) -> Point {
    let n = trace.entries.len() as u32;
    let max_in = trace
        .entries
        .iter()
        .map(|e| e.input_tokens)
        .max()
        .unwrap_or(1);
    let max_out = trace
        .entries
        .iter()
        .map(|e| e.output_tokens)
        .max()
        .unwrap_or(1);
    Point {
        id: 0,
        concurrency: plan.load.max_in_flight.as_ref().map_or(0, |m| *m.get_ref()),
        input_tokens: max_in,
        output_tokens: max_out,
        requests: n,
        warmup: plan.run.warmup_requests,
        open_loop: Some(plan.load.with_stages(Vec::new(), Some(t.clone()))),
        deployment: None,
        images: image_steps(plan).first().copied().flatten(),
    }
}

/// What each (input, output) pair expands into along the load axis:
/// (concurrency, requests, open-loop schedule) per rate, the stages as
/// one step, or per concurrency.
fn load_steps(plan: &PlanFile) -> Vec<(u32, u32, Option<OpenLoop>)> {
    let requests = plan.run.requests();
    let load = &plan.load;
    let cap = load.max_in_flight.as_ref().map_or(0, |m| *m.get_ref());
    let shared = plan.workload.shared_prefix.as_ref();
    // Multi-turn: `run.requests` counts sessions, each of `turns` requests.
    let turns = plan.workload.multi_turn.as_ref().map_or(1, |m| m.turns());
    if let Some(rates) = &plan.sweep.rate {
        rates
            .get_ref()
            .iter()
            .map(|&rate| {
                let n = match (&load.duration_s, requests) {
                    // A shared-prefix workload sends its groups × prompts.
                    _ if shared.is_some() => shared.map_or(0, |s| s.requests()),
                    (Some(d), _) => requests_for(rate, *d.get_ref()),
                    (None, Requests::Count(n)) => n,
                    // "Nx" on a rate point: N seconds' worth of arrivals.
                    (None, Requests::PerConcurrency(k)) => requests_for(rate, f64::from(k)),
                };
                (cap, n, Some(load.at_rate(rate, n)))
            })
            .collect()
    } else if load.stages.is_some() {
        let stages = load.stages();
        let n = stages.iter().map(|s| s.requests).sum();
        vec![(cap, n, Some(load.with_stages(stages, None)))]
    } else {
        let conc = plan
            .sweep
            .concurrency
            .as_ref()
            .map_or_else(|| vec![1], |s| s.get_ref().clone());
        conc.iter()
            .map(|&c| {
                let n = shared.map_or_else(
                    || requests.at(c).max(c).saturating_mul(turns),
                    |s| s.requests(),
                );
                (c, n, None)
            })
            .collect()
    }
}

/// Each point once per deployment, deployment-major: ids `d × P + p`, so
/// a deployment's points are consecutive and in the plan's order.
fn with_deployments(points: Vec<Point>, deployments: &[DeploymentSpec]) -> Vec<Point> {
    if deployments.is_empty() {
        return points;
    }
    let mut out = Vec::with_capacity(points.len() * deployments.len());
    for d in deployments {
        for p in &points {
            out.push(Point {
                id: out.len() as u32,
                deployment: Some(d.name().to_string()),
                ..p.clone()
            });
        }
    }
    out
}
