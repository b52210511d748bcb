//! qexp-analysis owns every number derived from raw rows: per-(trial, point)
//! metrics computed with polars from the Parquet files, statistics across
//! trials, anomaly flags and diffs. It never looks at a live run's memory,
//! so a new statistic needs no re-run. Rendering is qexp-report's job.
//!
//! The vocabulary is declared once here: [`Metric`] (the per-trial metrics
//! with their names, units and directions), [`ServerMetric`] (numbers
//! derived from the server's counters) and [`format`](mod@format) (numbers for people).
//!
//! Beyond one run: [`history`](mod@history) (a metric across an experiment's runs and
//! where it stepped), [`query`](mod@query) (SQL over a run's rows, for notebooks) and
//! [`workspace`] (which runs a results root holds, and which one a notebook
//! means).

pub mod accuracy;
pub mod anomaly;
pub mod answers;
pub mod classes;
mod columns;
pub mod deployments;
pub mod diff;
pub mod distribution;
pub mod energy;
pub mod equivalence;
mod error;
mod failures;
pub mod format;
mod graded;
pub mod history;
mod load;
mod metric;
mod metrics;
mod model_fit;
mod pass;
pub mod query;
mod reasoning;
mod run;
pub mod schedule;
mod server;
pub mod stats;
pub mod steady;
mod trial_frames;
mod turns;
pub mod workspace;

pub use anomaly::{Flag, Severity, Thresholds};
pub use answers::{AnswerHealth, AnswerTally};
pub use deployments::{compare_deployments, DeploymentComparison, DeploymentWarning};
pub use diff::{diff, DiffError, DiffMetric, DiffOptions, RunDiff};
pub use distribution::PointDistribution;
pub use energy::{EnergySummary, TrialEnergy};
pub use error::AnalysisError;
pub use failures::FailureGroup;
pub use load::{analyze, analyze_bounded, analyze_in_batches, ITL_BATCH_ROWS};
pub use metric::{Direction, Metric, MetricSpec, Unit};
pub use metrics::{Axis, PointSummary, TrialMetrics};
pub use model_fit::{check_against_model, run_deployments, run_observations, RunObservations};
pub use reasoning::ReasoningSummary;
pub use run::RunAnalysis;
pub use server::{CounterValues, ServerMetric, ServerMetricSpec, ServerUnit};
pub use trial_frames::each_gap;
pub use turns::TurnSummary;
