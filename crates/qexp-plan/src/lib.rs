//! qexp-plan owns the experiment plan: its TOML schema, validation with
//! file:line:col diagnostics, expansion into points × trials, and the plan's
//! content hash. It knows nothing about HTTP, Parquet or reports.

mod error;
mod expand;
mod multi_turn;
mod open_loop;
mod schema;
mod slo;
mod trace;
mod workload;

pub use error::PlanError;
pub use expand::Point;
pub use multi_turn::MultiTurn;
pub use open_loop::{Arrival, LoadSection, OpenLoop, Stage, StageSpec, TraceRef, TraceSpec};
pub use schema::{
    AnalysisSection, ApiKind, ExperimentSection, PlanFile, PromptRecipe, Requests, RunSection,
    Sweep, TargetSection, Workload,
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
        file.validate()
            .map_err(|(span, key, message)| PlanError::at(path, text, span, key, message))?;
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
            let trace = Trace::load(&resolved).map_err(|e| at(e.to_string()))?;
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
        Ok(Plan {
            path: path.to_path_buf(),
            text: text.to_string(),
            file,
        })
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

    /// Number of trials (each trial runs every point once).
    pub fn trials(&self) -> u32 {
        self.file.run.trials
    }
}
