//! The deployments of one run, compared: each deployment's points seen as
//! a run of their own ([`RunAnalysis::deployment_view`]), and every
//! deployment against the baseline by the diff's method with the block as
//! the unit (the paired t over blocks, since each block measured every
//! deployment at about the same time), Holm's correction over the whole
//! table. Randomized multiple interleaved trials (Abedi & Brecht, ICPE'17)
//! make that pairing sound; a blocked order does not, and says so.

pub(crate) mod comparison;

pub use comparison::{DeploymentComparison, DeploymentSummary, DeploymentWarning};

use crate::diff::{adjust_jointly, diff, DiffOptions};
use crate::run::RunAnalysis;
use qexp_plan::Order;
use std::collections::BTreeSet;

impl RunAnalysis {
    /// The deployments of this run, in plan order (empty without deployments).
    pub fn deployment_names(&self) -> Vec<String> {
        let mut names: Vec<String> = self
            .manifest
            .deployments
            .iter()
            .map(|d| d.name.clone())
            .collect();
        for p in &self.points {
            if let Some(d) = &p.point.deployment {
                if !names.contains(d) {
                    names.push(d.clone());
                }
            }
        }
        names
    }

    /// The points of one deployment as a run of their own, with the
    /// deployment taken off the points (so that they pair with another
    /// deployment's by their parameters) and the run id marked
    /// `<run-id>#<deployment>`. None when no point has that deployment.
    pub fn deployment_view(&self, name: &str) -> Option<RunAnalysis> {
        let mine = |p: &qexp_plan::Point| p.deployment.as_deref() == Some(name);
        let ids: BTreeSet<u32> = self
            .points
            .iter()
            .filter(|p| mine(&p.point))
            .map(|p| p.point.id)
            .collect();
        if ids.is_empty() {
            return None;
        }
        let mut view = self.clone();
        let strip = |p: &mut qexp_plan::Point| p.deployment = None;
        view.points.retain(|p| ids.contains(&p.point.id));
        view.points.iter_mut().for_each(|p| strip(&mut p.point));
        view.flags
            .retain(|f| f.point_id().is_none_or(|id| ids.contains(&id)));
        view.turns.retain(|t| ids.contains(&t.point_id));
        view.reasoning.retain(|r| ids.contains(&r.point_id));
        view.failures.retain(|f| ids.contains(&f.point_id));
        if let Some(s) = view.schedule.as_mut() {
            s.points.retain(|p| ids.contains(&p.point.id));
            s.points.iter_mut().for_each(|p| strip(&mut p.point));
            s.capacity.retain(|c| c.deployment.as_deref() == Some(name));
            s.capacity.iter_mut().for_each(|c| c.deployment = None);
        }
        let m = &mut view.manifest;
        m.run_id = format!("{}#{name}", m.run_id);
        if let Some(d) = m.deployments.iter().find(|d| d.name == name) {
            m.target.base_url = d
                .base_url
                .clone()
                .unwrap_or_else(|| format!("deployment {name}"));
            if let Some(model) = &d.model {
                m.target.model = model.clone();
            }
        }
        m.points.retain(|p| ids.contains(&p.id));
        m.points.iter_mut().for_each(strip);
        Some(view)
    }
}

/// Compares every deployment of `run` with its baseline; None for a run
/// without deployments. A deployment the diff refuses to compare (bad
/// options) is left out with a [`DeploymentWarning::NotCompared`] that says why.
pub fn compare_deployments(run: &RunAnalysis, opts: &DiffOptions) -> Option<DeploymentComparison> {
    let names = run.deployment_names();
    if names.is_empty() {
        return None;
    }
    let baseline = run
        .manifest
        .baseline
        .clone()
        .filter(|b| names.contains(b))
        .unwrap_or_else(|| names[0].clone());
    let mut warnings = Vec::new();
    let order = run.manifest.order.unwrap_or_default();
    if order == Order::Blocked {
        warnings.push(DeploymentWarning::BlockedOrder);
    }
    let views: Vec<(String, Option<RunAnalysis>)> = names
        .iter()
        .map(|n| (n.clone(), run.deployment_view(n)))
        .collect();
    // Failed starts that a later `--resume` made good need no warning.
    let complete = run.manifest.status == qexp_store::RunStatus::Complete;
    for d in run.manifest.deployments.iter().filter(|_| !complete) {
        if let Some(first) = d.failures.first() {
            warnings.push(DeploymentWarning::FailedStarts {
                deployment: d.name.clone(),
                count: d.failures.len(),
                first: first.message.clone(),
            });
        }
    }
    let measured = |v: &RunAnalysis| v.points.iter().any(|p| p.n > 0);
    for (name, view) in &views {
        if !view.as_ref().is_some_and(measured) {
            warnings.push(DeploymentWarning::Unmeasured {
                deployment: name.clone(),
            });
        }
    }
    let base = views
        .iter()
        .find(|(n, _)| *n == baseline)
        .and_then(|(_, v)| v.as_ref())
        .filter(|v| measured(v));
    let paired = DiffOptions {
        paired: true,
        ..opts.clone()
    };
    let mut diffs = Vec::new();
    if let Some(base) = base {
        for (name, view) in &views {
            match view.as_ref().filter(|v| measured(v)) {
                Some(v) if *name != baseline => match diff(base, v, &paired) {
                    Ok(d) => diffs.push(d),
                    Err(e) => warnings.push(DeploymentWarning::NotCompared {
                        deployment: name.clone(),
                        baseline: baseline.clone(),
                        reason: qexp_types::error::chain(&e),
                    }),
                },
                _ => {}
            }
        }
    }
    adjust_jointly(&mut diffs, paired.alpha);
    let deployments = names
        .iter()
        .map(|n| summary(run, n, *n == baseline))
        .collect();
    Some(DeploymentComparison {
        baseline,
        order,
        deployments,
        diffs,
        warnings,
    })
}

fn summary(run: &RunAnalysis, name: &str, baseline: bool) -> DeploymentSummary {
    let rec = run.manifest.deployments.iter().find(|d| d.name == name);
    let how = rec.map_or_else(String::new, |d| match (&d.base_url, d.starts.first()) {
        (Some(u), _) => u.clone(),
        (None, Some(s)) => s
            .launch
            .as_ref()
            .map_or_else(String::new, |l| l.argv.join(" ")),
        (None, None) => String::new(),
    });
    let mut ready: Vec<f64> = rec
        .map(|d| {
            d.starts
                .iter()
                .filter_map(|s| s.launch.as_ref().map(|l| l.time_to_ready_s))
                .collect()
        })
        .unwrap_or_default();
    let blocks: BTreeSet<u32> = run
        .points
        .iter()
        .filter(|p| p.point.deployment.as_deref() == Some(name))
        .flat_map(|p| p.trials.iter().map(|t| t.trial))
        .collect();
    DeploymentSummary {
        name: name.to_string(),
        baseline,
        launched: rec.is_some_and(|d| d.launched),
        how,
        labels: rec.map_or_else(String::new, |d| {
            d.labels
                .iter()
                .map(|(k, v)| format!("{k}={v}"))
                .collect::<Vec<_>>()
                .join(", ")
        }),
        engine: rec
            .and_then(|d| d.fingerprint.as_ref())
            .map_or_else(String::new, |f| f.summary()),
        starts: rec.map_or(0, |d| d.starts.len()),
        failures: rec.map_or(0, |d| d.failures.len()),
        ready_s: crate::stats::quantile_in_place(&mut ready, 0.5),
        blocks: blocks.len(),
    }
}
