//! `qexp import --plan`: an imported configuration is checked against the
//! plan's points (load, lengths, request count) and, when one matches,
//! takes that point's identity and the plan's workload keys, so the run
//! joins the plan's history and `qexp diff` pairs it with qexp's runs.

use crate::error::ImportError;
use crate::source::Config;
use qexp_plan::{Plan, Point};
use std::collections::BTreeMap;
use std::path::Path;

/// A plan an import is said to match.
#[derive(Debug, Clone)]
pub(crate) struct PlanMatch {
    /// The plan.
    pub plan: Plan,
    /// The workload keys qexp's runs of it record.
    pub workload: BTreeMap<String, String>,
}

impl PlanMatch {
    /// Reads the plan.
    pub fn load(path: &Path) -> Result<PlanMatch, ImportError> {
        let plan = Plan::load(path)?;
        let workload = qexp_runner::plan_workload(&plan);
        Ok(PlanMatch { plan, workload })
    }

    /// The plan's point that `imported` (read from `file`, sent to `api`)
    /// matches, or why none does.
    pub fn matching(
        &self,
        imported: &Point,
        config: &Config,
        file: &Path,
    ) -> Result<Point, ImportError> {
        let (api, planned) = (config.api, self.plan.file.target.api);
        if api != planned {
            // The same words are other token counts on another endpoint (a chat template).
            return Err(self.mismatch(
                file,
                format!(
                    "its requests went to the {} API, the plan's to the {} API",
                    api.as_str(),
                    planned.as_str()
                ),
            ));
        }
        let points = self.plan.points();
        let same_load: Vec<&Point> = points.iter().filter(|p| same_load(p, imported)).collect();
        if same_load.is_empty() {
            let loads: Vec<String> = points.iter().map(Point::load_label).collect();
            return Err(self.mismatch(
                file,
                format!(
                    "its load ({}) is none of the plan's ({})",
                    imported.load_label(),
                    dedup(loads).join(", ")
                ),
            ));
        }
        let tolerance = self.plan.file.workload.prompt_tolerance();
        let lengths_fit = |p: &&&Point| {
            !tolerance.exceeded(f64::from(p.input_tokens), f64::from(imported.input_tokens))
                && !tolerance.exceeded(
                    f64::from(p.output_tokens),
                    f64::from(imported.output_tokens),
                )
        };
        let Some(p) = same_load.iter().find(lengths_fit) else {
            let planned: Vec<String> = same_load
                .iter()
                .map(|p| format!("in={} out={}", p.input_tokens, p.output_tokens))
                .collect();
            return Err(self.mismatch(file, format!(
                "its requests counted a median {} prompt tokens ({}) and {} output tokens, where the plan's points at {} ask {} (tolerance {tolerance})",
                imported.input_tokens, config.prompt_counted_by, imported.output_tokens, imported.load_label(), dedup(planned).join(", ")
            )));
        };
        if p.requests != imported.requests {
            return Err(self.mismatch(
                file,
                format!(
                    "it sent {} requests where the plan's point {} sends {}",
                    imported.requests,
                    p.label(),
                    p.requests
                ),
            ));
        }
        Ok((*p).clone())
    }

    fn mismatch(&self, file: &Path, why: String) -> ImportError {
        ImportError::PlanMismatch {
            file: file.to_path_buf(),
            plan: self.plan.path.clone(),
            why,
        }
    }
}

/// Same closed-loop concurrency, or same open-loop rate and cap.
fn same_load(p: &Point, q: &Point) -> bool {
    match (&p.open_loop, &q.open_loop) {
        (None, None) => p.concurrency == q.concurrency,
        (Some(a), Some(b)) => a.rate() == b.rate() && a.max_in_flight == b.max_in_flight,
        _ => false,
    }
}

fn dedup(mut v: Vec<String>) -> Vec<String> {
    let mut seen = std::collections::BTreeSet::new();
    v.retain(|s| seen.insert(s.clone()));
    v
}
