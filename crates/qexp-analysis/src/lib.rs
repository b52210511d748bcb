//! qexp-analysis owns every number derived from raw rows: per-(trial, point)
//! metrics computed with polars from the Parquet files, statistics across
//! trials, anomaly flags and diffs. It never looks at a live run's memory,
//! so a new statistic needs no re-run. Rendering is qexp-report's job.

pub mod anomaly;
pub mod diff;
mod load;
mod metrics;
pub mod schedule;
pub mod stats;
mod turns;

pub use anomaly::{Flag, Severity, Thresholds};
pub use diff::{diff, DiffError, DiffMetric, DiffOptions, RunDiff};
pub use load::{analyze, analyze_in_batches, AnalysisError, RunAnalysis, ITL_BATCH_ROWS};
pub use metrics::{Axis, PointSummary, TrialMetrics};
pub use turns::TurnSummary;
