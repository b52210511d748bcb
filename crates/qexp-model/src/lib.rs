//! qexp-model: a performance model of an LLM deployment, of how fast it
//! serves, not of the language model it serves (docs/model.md). It
//! owns the model's equations ([`Params`]: prefill `a + b·L + c·f·L²`,
//! decode step `d0 + d1·(B−1) + d2·K`, tokens per step, a batch limit with a
//! FIFO queue), the versioned model file ([`ModelFile`]), the fit of those
//! coefficients to measured per-(trial, point) medians ([`fit()`]), and
//! predictions with intervals ([`predict()`], [`capacity()`]) by replaying a
//! point on the simulator's scheduler in virtual time ([`simulate`]), and,
//! where the runs measured power, the deployment's power against its load
//! ([`PowerModel`]: what a token costs, and [`cheapest()`] load under an SLO).
//!
//! It sits at the bottom of the workspace so that the simulator (which
//! serves a model file) and the analysis (which turns runs into
//! [`Observation`]s and checks runs against a model) share one model. It
//! reads no Parquet and starts no server.

mod answers;
mod check;
mod des;
pub mod engine;
mod file;
mod fit;
mod ols;
mod params;
mod power;
mod power_fit;
mod predict;
mod slo;
mod table;
mod warning;

pub use answers::{AnswerShape, AnswerSpread, ANSWER_ORDERS, ANSWER_QUANTILES};
pub use check::{check, summarize, Check, ErrorSummary, CHECK_TOLERANCE};
pub use des::{quantile, simulate, trace, Arrivals, Load, Outcome, Seen, INTAKE_S};
pub use file::{is_tail, MIN_TAIL_REQUESTS};
pub use file::{
    BandWidth, Interval, ModelFile, ModelFileError, ModelMetric, Ranges, Residual, Source, KIND,
    SCHEMA_VERSION,
};
pub use fit::{
    fit, form_label, predicted, FitError, FitOptions, FormError, FormEvidence, Observation,
    PrefillForm, TRIALS_PER_RUN,
};
pub use params::{Coef, Params, Schedule};
pub use power::{CostPrediction, PowerGap, PowerModel, PowerObservation, Span};
pub use power_fit::fit_power;
pub use predict::{
    capacity, cheapest, default_requests, extrapolated, predict, predict_with, Axis, Capacity,
    CapacityQuery, Cheapest, CostObjective, Predicted, Prediction, TailRefused, MIN_RATE,
};
pub use slo::{Slo, SloError};
pub use table::{
    MedianTable, TableError, TableRow, FOUNDING_MODEL, FOUNDING_MODEL_PATH, FOUNDING_TABLE,
    FOUNDING_TABLE_PATH,
};
pub use warning::FitWarning;
