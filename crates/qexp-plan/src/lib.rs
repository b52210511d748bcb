//! qexp-plan owns the experiment plan: its TOML schema, validation with
//! file:line:col diagnostics, expansion into points × trials, and the plan's
//! content hash. It knows nothing about HTTP, Parquet or reports.

pub mod accuracy;
pub mod classes;
mod deploy;
mod error;
mod expand;
pub mod grade;
pub mod images;
pub mod in_process;
mod input_tolerance;
mod limits;
mod multi_turn;
mod names;
mod open_loop;
mod power;
mod schema;
mod secrets;
mod slo;
pub mod structured;
mod trace;
mod workload;

pub use accuracy::AccuracySection;
pub use classes::{is_header_value, Class, ClassRecord, Classes};
pub use deploy::{DeploymentSpec, Order, PortSpec, Restart};
pub use error::PlanError;
pub use expand::Point;
pub use grade::{GradeError, Grader, Item};
pub use images::{ImageSize, ImageSource, ImagesSection, PointImages};
pub use input_tolerance::{
    InputTolerance, DEFAULT_INPUT_TOLERANCE, DEFAULT_INPUT_TOLERANCE_TOKENS,
};
pub use limits::{RequestTimeouts, TimeoutsSection, ToleranceSection};
pub use multi_turn::MultiTurn;
pub use names::{safe_component, UnsafeName};
pub use open_loop::{Arrival, LoadSection, OpenLoop, Stage, StageSpec, TraceRef, TraceSpec};
pub use power::{CostSection, GpuName, PowerSection, PowerSource};
pub use schema::{
    AnalysisSection, ApiKind, ExperimentSection, KeepAnswers, PlanFile, PromptRecipe, Requests,
    RunSection, Sweep, TargetSection, Workload,
};
pub use slo::SloSection;
pub use trace::{Trace, TraceEntry, TraceError};
pub use workload::{
    DatasetFormat, DatasetSource, LengthShape, Lengths, SharedPrefix, MIN_QUESTION_TOKENS,
};

use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};

/// A parsed and validated plan, with the verbatim text it came from.
#[derive(Debug, Clone)]
pub struct Plan {
    /// Where the plan was read from (as given by the user).
    pub path: PathBuf,
    /// The plan file's text, byte for byte.
    pub text: String,
    /// The parsed plan.
    pub file: PlanFile,
}

impl Plan {
    /// Reads and validates a plan file.
    pub fn load(path: &Path) -> Result<Plan, PlanError> {
        let text = std::fs::read_to_string(path).map_err(|source| PlanError::Io {
            path: path.to_path_buf(),
            source,
        })?;
        Plan::parse(path, &text)
    }

    /// Parses and validates plan text; `path` is only used in messages.
    pub fn parse(path: &Path, text: &str) -> Result<Plan, PlanError> {
        let mut file: PlanFile =
            toml::from_str(text).map_err(|e| PlanError::from_toml(path, text, &e))?;
        file.validate().map_err(|(span, key, message)| {
            // A check of a plain (unspanned) value points at where the text sets it.
            let span = match &key {
                Some(k) if span.is_empty() => error::value_span(text, k).unwrap_or(span),
                _ => span,
            };
            PlanError::at(path, text, span, key, message)
        })?;
        if let Some(spec) = &file.load.trace {
            let at = |message: String| {
                PlanError::at(
                    path,
                    text,
                    spec.path.span(),
                    Some("load.trace.path".into()),
                    message,
                )
            };
            let resolved = path
                .parent()
                .unwrap_or(Path::new(""))
                .join(spec.path.get_ref());
            let trace = Trace::load(&resolved).map_err(|e| at(qexp_types::error::chain(&e)))?;
            let speed = *spec.speed.get_ref();
            let tref = TraceRef {
                path: resolved.display().to_string(),
                speed,
                sha256: trace.sha256.clone(),
                span_s: trace.span_s() / speed,
                requests: trace
                    .entries
                    .len()
                    .try_into()
                    .map_err(|_| at("the trace has more than 4 billion requests".into()))?,
            };
            file.trace = Some((tref, trace));
        }
        let dir = path.parent().unwrap_or(Path::new(""));
        let w = &file.workload;
        file.workload.structured =
            structured::load(w.tools.as_ref(), w.response_format.as_ref(), dir).map_err(
                |((span, key), message)| PlanError::at(path, text, span, Some(key.into()), message),
            )?;
        if let Some(images) = &mut file.workload.images {
            images
                .load(dir)
                .map_err(|(span, key, message)| PlanError::at(path, text, span, key, message))?;
        }
        if let Some(a) = &mut file.accuracy {
            let span = a.items.span();
            a.load(path.parent().unwrap_or(Path::new("")))
                .map_err(|e| {
                    PlanError::at(
                        path,
                        text,
                        span,
                        Some("accuracy.items".into()),
                        qexp_types::error::chain(&e),
                    )
                })?;
        }
        Ok(Plan {
            path: path.to_path_buf(),
            text: text.to_string(),
            file,
        })
    }

    /// The files the plan reads, as it names them (relative to its folder
    /// unless absolute): the dataset, the trace, the graded items, the
    /// tools and the response schema.
    pub fn files_read(&self) -> Vec<String> {
        let w = &self.file.workload;
        let dataset = w.dataset.as_ref().map(|d| &d.path);
        let tools = w.tools.as_ref().map(|t| &t.file);
        let schema = w.response_format.as_ref().map(|r| &r.schema);
        let trace = self.file.load.trace.as_ref().map(|t| &t.path);
        let items = self
            .file
            .accuracy
            .as_ref()
            .filter(|a| !a.builtin())
            .map(|a| &a.items);
        dataset
            .into_iter()
            .chain(trace)
            .chain(items)
            .chain(tools)
            .chain(schema)
            .map(|p| p.get_ref().clone())
            .collect()
    }

    /// SHA-256 of the plan's verbatim text, hex encoded.
    pub fn hash(&self) -> String {
        hex::encode(Sha256::digest(self.text.as_bytes()))
    }

    /// The experiment's name, used as the results folder name.
    pub fn name(&self) -> &str {
        self.file.experiment.name.get_ref()
    }

    /// Every point of the sweep, in plan order.
    pub fn points(&self) -> Vec<Point> {
        expand::points(&self.file)
    }

    /// Whether the plan's text sets `dotted` (`analysis.cv_threshold`)
    /// itself rather than leaving it to its default.
    pub fn sets(&self, dotted: &str) -> bool {
        raw_value(&self.text, dotted).is_some()
    }

    /// Number of trials (each trial runs every point once); with
    /// deployments, the number of blocks.
    pub fn trials(&self) -> u32 {
        self.file.run.trials
    }

    /// The `[[deployment]]` tables, in plan order (empty: one server at
    /// `target.base_url`).
    pub fn deployments(&self) -> &[DeploymentSpec] {
        &self.file.deployments
    }

    /// The one server of a plan without `[[deployment]]` tables: `given`
    /// (`qexp run --target`) over `target.base_url`. A plan that names
    /// neither is refused here, not when it is read, so that the flag can
    /// stand in for the key.
    pub fn target<'a>(&'a self, given: Option<&'a str>) -> Result<&'a str, PlanError> {
        match given.unwrap_or(self.file.target.base_url.get_ref()) {
            "" => Err(PlanError::at(
                &self.path,
                &self.text,
                0..0,
                Some("target.base_url".into()),
                "missing: give the server's http://host:port (or sim:<profile>) here or with \
                 --target URL, or [[deployment]] tables"
                    .into(),
            )),
            url => Ok(url),
        }
    }

    /// The deployment the others are compared with: `analysis.baseline`,
    /// else the first; None without deployments.
    pub fn baseline(&self) -> Option<&str> {
        match &self.file.analysis.baseline {
            Some(b) => Some(b.get_ref().as_str()),
            None => self.file.deployments.first().map(DeploymentSpec::name),
        }
    }

    /// `[run] order` (interleaved unless the plan says blocked).
    pub fn order(&self) -> Order {
        self.file
            .run
            .order
            .as_ref()
            .map_or_else(Order::default, |o| *o.get_ref())
    }

    /// `[run] stop_past_saturation`.
    pub fn stop_past_saturation(&self) -> bool {
        self.file
            .run
            .stop_past_saturation
            .as_ref()
            .is_some_and(|s| *s.get_ref())
    }

    /// `[run] restart` (per block unless the plan says once).
    pub fn restart(&self) -> Restart {
        self.file
            .run
            .restart
            .as_ref()
            .map_or_else(Restart::default, |r| *r.get_ref())
    }
}

/// A value of plan text read as plain TOML, without validating the plan:
/// for a recorded plan that this qexp no longer accepts (`experiment.description`).
fn raw_value(text: &str, dotted: &str) -> Option<toml::Value> {
    let table: toml::Table = toml::from_str(text).ok()?;
    let mut keys = dotted.split('.');
    let mut value = table.get(keys.next()?)?;
    for k in keys {
        value = value.get(k)?;
    }
    Some(value.clone())
}

/// A string of plan text read as plain TOML, without validating the plan;
/// None when the text is not TOML or has no such string.
pub fn raw_str(text: &str, dotted: &str) -> Option<String> {
    raw_value(text, dotted).and_then(|v| v.as_str().map(str::to_string))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn raw_values_need_only_toml() {
        let text = "[experiment]\nname = \"g\"\ndescription = \"Concurrency × input\"\n";
        assert!(Plan::parse(Path::new("g.toml"), text).is_err());
        assert_eq!(
            raw_str(text, "experiment.description").as_deref(),
            Some("Concurrency × input")
        );
        assert_eq!(raw_str(text, "experiment.version"), None);
        assert_eq!(raw_str("not toml [", "experiment.name"), None);
    }
}
