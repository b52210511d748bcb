//! The model file: small, versioned JSON that `qexp fit` writes and
//! `qexp predict`, the simulator (`sim:fit=PATH`) and the report read.

use crate::params::{Coef, Params};
use crate::warning::FitWarning;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// The model file's format version; a reader refuses any other.
pub const SCHEMA_VERSION: u32 = 1;

/// What the `kind` field of every model file says.
pub const KIND: &str = "qexp-model";

/// A fitted deployment model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelFile {
    /// [`SCHEMA_VERSION`] when written.
    pub schema_version: u32,
    /// Always [`KIND`].
    pub kind: String,
    /// The qexp version that fitted it.
    pub qexp_version: String,
    /// What it was fitted on: runs (id and plan hash) or a table of medians.
    pub sources: Vec<Source>,
    /// `f`, the share of layers with full attention (1 unless given); the
    /// `L²` coefficient stored is `c·f`, and `c` is that over `f`.
    pub full_attention_share: f64,
    /// The point estimates (unknown coefficients are 0, or no limit; see `unknown`).
    pub params: Params,
    /// 90% interval of each identified coefficient.
    pub intervals: Vec<Interval>,
    /// Coefficients the runs could not identify (see `warnings`).
    pub unknown: Vec<Coef>,
    /// What the runs could not tell, and what to run next.
    pub warnings: Vec<FitWarning>,
    /// The ranges fitted over; predictions outside them are extrapolations.
    pub ranges: Ranges,
    /// Relative half-width of a 90% prediction band per metric, from the
    /// fit's residuals (1.645 × their root mean square).
    pub band: Vec<BandWidth>,
    /// Measured against fitted, per point and metric.
    pub residuals: Vec<Residual>,
    /// The coefficients refitted on trials resampled with replacement.
    pub replicates: Vec<Params>,
    /// How prompts meet (queued, parallel or mixed prefills), as the runs
    /// chose it: every form tried with its error. Absent when the form was
    /// not searched, and in files written before it was.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub evidence: Option<crate::fit::form::FormEvidence>,
    /// Power against the load (`P = idle + per sequence × sequences in
    /// flight`), where the runs measured the deployment's power. Absent
    /// without power, and in files written before it was fitted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub power: Option<crate::power::PowerModel>,
    /// How the fitted runs' answers spread around their median, where the
    /// model stopped them before the plan's length: predictions replay
    /// answers so spread. Absent for answers forced to length, and in
    /// files written before it was kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answers: Option<crate::answers::AnswerShape>,
}

/// Where a model's observations came from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Source {
    /// The run id, or the table's name.
    pub id: String,
    /// The experiment name.
    pub experiment: String,
    /// The plan's hash (`table` for a table of medians).
    pub plan_hash: String,
    /// Where it was read from.
    pub path: PathBuf,
    /// The deployment of the run whose points were fitted, for a run with
    /// `[[deployment]]` tables (`qexp fit --deployment`, or its only one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deployment: Option<String>,
}

/// A coefficient's 90% interval.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Interval {
    /// The coefficient.
    pub coef: Coef,
    /// Lower end.
    pub lo: f64,
    /// Upper end.
    pub hi: f64,
}

/// A fitted range: `[min, max]` of what was run; None when nothing was.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Ranges {
    /// Closed-loop concurrency.
    pub concurrency: Option<[f64; 2]>,
    /// Open-loop rate, requests per second.
    pub rate: Option<[f64; 2]>,
    /// Input tokens.
    pub input_tokens: Option<[f64; 2]>,
    /// Output tokens.
    pub output_tokens: Option<[f64; 2]>,
}

/// A metric the model predicts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ModelMetric {
    /// Median TTFT, seconds.
    TtftS,
    /// 90th percentile TTFT, seconds.
    TtftP90S,
    /// Median TPOT, seconds.
    TpotS,
    /// Median E2E, seconds.
    E2eS,
    /// Aggregate output tokens per second.
    AggTokS,
}

impl ModelMetric {
    /// Every metric, in table order.
    pub const ALL: [ModelMetric; 5] = [
        ModelMetric::TtftS,
        ModelMetric::TtftP90S,
        ModelMetric::TpotS,
        ModelMetric::E2eS,
        ModelMetric::AggTokS,
    ];

    /// Its name in tables and `--slo` (`ttft`, `ttft_p90`, `tpot`, `e2e`, `agg_tok_s`).
    pub fn name(self) -> &'static str {
        match self {
            ModelMetric::TtftS => "ttft",
            ModelMetric::TtftP90S => "ttft_p90",
            ModelMetric::TpotS => "tpot",
            ModelMetric::E2eS => "e2e",
            ModelMetric::AggTokS => "agg_tok_s",
        }
    }

    /// Whether it is a time (seconds) rather than a rate (tok/s).
    pub fn is_time(self) -> bool {
        !matches!(self, ModelMetric::AggTokS)
    }
}

/// The prediction band of one metric.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BandWidth {
    /// The metric.
    pub metric: ModelMetric,
    /// Relative half-width (0.1 = ±10%).
    pub rel: f64,
}

/// One point's measured median against the fitted model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Residual {
    /// The point, as labelled in its run (`c=4 in=1000 out=500`).
    pub point: String,
    /// The metric.
    pub metric: ModelMetric,
    /// Median across trials.
    pub measured: f64,
    /// What the model gives there.
    pub fitted: f64,
}

impl Residual {
    /// Relative error of the fit: fitted / measured − 1.
    pub fn error(&self) -> f64 {
        self.fitted / self.measured - 1.0
    }
}

/// A model file that cannot be read.
#[derive(Debug, thiserror::Error)]
pub enum ModelFileError {
    /// Not readable or not writable.
    #[error("model file {path}")]
    Io {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// Not a model file.
    #[error("model file {path}: not a qexp model file")]
    Parse {
        /// The file.
        path: PathBuf,
        /// Why.
        source: serde_json::Error,
    },
    /// JSON of another kind (a run's manifest, a diff), not a model file.
    #[error("model file {path}: not a qexp model file (its kind is `{found}`, a model file's `{KIND}`); `qexp fit` writes one")]
    Kind {
        /// The file.
        path: PathBuf,
        /// The kind it has (empty when none).
        found: String,
    },
    /// A model file of another format version.
    #[error("model file {path}: schema_version {found}, this qexp reads {SCHEMA_VERSION}; refit with `qexp fit`")]
    Version {
        /// The file.
        path: PathBuf,
        /// The version it has.
        found: u32,
    },
    /// Parameters that cannot drive a prediction.
    #[error("model file {path}: {field} is out of range")]
    Range {
        /// The file.
        path: PathBuf,
        /// The field.
        field: &'static str,
    },
}

impl ModelFile {
    /// The answers of a prediction whose median answer is `output_tokens`
    /// long: spread as the fitted runs' were, or None (all of that length).
    pub fn answers_at(&self, output_tokens: f64) -> Option<crate::answers::AnswerSpread> {
        self.answers.map(|shape| shape.at(output_tokens))
    }

    /// Parses a model file's text (`path` is for messages).
    pub fn parse(text: &str, path: &Path) -> Result<ModelFile, ModelFileError> {
        #[derive(Deserialize)]
        struct Head {
            #[serde(default)]
            kind: String,
            schema_version: u32,
        }
        let p = || path.to_path_buf();
        let head: Head = serde_json::from_str(text)
            .map_err(|source| ModelFileError::Parse { path: p(), source })?;
        if head.kind != KIND {
            return Err(ModelFileError::Kind {
                path: p(),
                found: head.kind,
            });
        }
        if head.schema_version != SCHEMA_VERSION {
            return Err(ModelFileError::Version {
                path: p(),
                found: head.schema_version,
            });
        }
        let m: ModelFile = serde_json::from_str(text)
            .map_err(|source| ModelFileError::Parse { path: p(), source })?;
        m.params
            .check()
            .map_err(|field| ModelFileError::Range { path: p(), field })?;
        Ok(m)
    }

    /// Reads a model file.
    pub fn read(path: &Path) -> Result<ModelFile, ModelFileError> {
        let text = std::fs::read_to_string(path).map_err(|source| ModelFileError::Io {
            path: path.to_path_buf(),
            source,
        })?;
        ModelFile::parse(&text, path)
    }

    /// The file's text (pretty JSON, newline-terminated).
    pub fn to_json(&self) -> String {
        // A struct of plain fields always serializes; the fallback is unreachable.
        let mut s = serde_json::to_string_pretty(self).unwrap_or_default();
        s.push('\n');
        s
    }

    /// Writes the file.
    pub fn write(&self, path: &Path) -> Result<(), ModelFileError> {
        std::fs::write(path, self.to_json()).map_err(|source| ModelFileError::Io {
            path: path.to_path_buf(),
            source,
        })
    }

    /// The 90% interval of `coef`, if identified and resampled or regressed.
    pub fn interval(&self, coef: Coef) -> Option<Interval> {
        self.intervals.iter().find(|i| i.coef == coef).copied()
    }

    /// Relative band half-width of `metric` from the fit's residuals: its
    /// own, or for TTFT p90 without one, TTFT's; None when not measured.
    pub fn band(&self, metric: ModelMetric) -> Option<f64> {
        let own = |m: ModelMetric| self.band.iter().find(|b| b.metric == m).map(|b| b.rel);
        own(metric).or_else(|| match metric {
            ModelMetric::TtftP90S => own(ModelMetric::TtftS),
            _ => None,
        })
    }
}

/// Requests a point needs for its 90th percentile to be predicted: with
/// fewer, linear interpolation puts it between the two slowest requests,
/// so it says how slow the slowest one or two were, not where the
/// slowest tenth begins.
pub const MIN_TAIL_REQUESTS: u32 = 10;

/// Whether `m` is a tail (a percentile above the median).
pub fn is_tail(m: ModelMetric) -> bool {
    m == ModelMetric::TtftP90S
}
