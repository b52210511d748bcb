//! qexp-report owns rendering: it turns a [`qexp_analysis::RunAnalysis`]
//! into plain serialisable context structs ([`ReportContext`]), and those
//! into `report.md` and a self-contained `report.html` through tera templates
//! (the repository's `templates/`, compiled in, or a user's own folder), with
//! one SVG chart per swept axis and metric, and per point its latency
//! distributions and request timeline, drawn by plotters ([`charts`]) and
//! an optional narrative notebook (`experiments/<name>.md`, see
//! [`narrative`]) evaluated against the run and converted with pulldown-cmark.
//!
//! It computes no statistics and detects nothing: every number and every
//! anomaly flag comes from qexp-analysis. Output is a function of the run
//! alone (no clock, no randomness, stable ordering), so rendering a run twice
//! gives identical bytes. Text that comes from a run or a server is escaped
//! for HTML (tera autoescape on `.html.tera` templates; [`format::md_text`]
//! inside narratives).
//!
//! Beyond one run: [`notebook`] renders a notebook that names several runs
//! (by experiment or pinned run id), and [`index`] the workspace index of
//! every experiment, its runs and its history.

pub mod charts;
mod classes;
mod context;
mod deployments;
pub mod diff;
mod energy;
mod error;
mod filters;
pub mod format;
mod headline;
pub mod index;
mod labels;
mod model_check;
pub mod narrative;
pub mod notebook;
mod open_loop;
mod render;
mod steady;
mod tables;
mod templates;
mod turns;
mod views;

pub use classes::{ClassRow, ClassView};
pub use context::report_context;
pub use deployments::{ComparisonView, DeploymentRow, DeploymentsView};
pub use error::RenderError;
pub use model_check::ModelBeside;
pub use open_loop::{OpenLoopRow, OpenLoopView};
pub use render::{
    render, render_beside, render_run, render_run_with, write_files, Narrative, Rendered, Templates,
};
pub use steady::SteadyRow;
pub use turns::{ReasoningRow, TurnRow};
pub use views::{
    ChartView, DistributionView, FailureRow, FitRow, FitView, FlagView, Headline, NarrativeView,
    ReportContext, Row, RowValues, ServerDoc, Stat, Table,
};

/// A median with its min–max, for terminal tables.
pub fn format_summary_cell(s: &Option<qexp_analysis::stats::Summary>) -> String {
    format!("{} [{}]", format::center(s), format::spread(s))
}
