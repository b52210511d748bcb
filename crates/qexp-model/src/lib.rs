//! qexp-model: a performance model of an LLM deployment, of how fast it
//! serves, not of the language model it serves (docs/model.md). It
//! owns the model's equations ([`Params`]: prefill `a + b·L + c·f·L²`,
//! decode step `d0 + d1·(B−1) + d2·K`, tokens per step, a batch limit with a
//! FIFO queue), the versioned model file ([`ModelFile`]), the fit of those
//! coefficients to measured per-(trial, point) medians ([`fit()`]), and
//! predictions with intervals ([`predict()`], [`capacity()`]) by replaying a
//! point on the simulator's scheduler in virtual time ([`simulate`]).
//!
//! It sits at the bottom of the workspace so that the simulator (which
//! serves a model file) and the analysis (which turns runs into
//! [`Observation`]s and checks runs against a model) share one model. It
//! reads no Parquet and starts no server.

mod check;
mod des;
mod file;
mod fit;
mod ols;
mod params;
mod predict;
mod slo;
mod table;
mod warning;

pub use check::{check, summarize, Check, ErrorSummary, CHECK_TOLERANCE};
pub use des::{quantile, simulate, Arrivals, Load, Outcome, Seen, INTAKE_S};
pub use file::{
    BandWidth, Interval, ModelFile, ModelFileError, ModelMetric, Ranges, Residual, Source, KIND,
    SCHEMA_VERSION,
};
pub use fit::{
    fit, form_label, predicted, FitError, FitOptions, FormError, FormEvidence, Observation,
    PrefillForm, TRIALS_PER_RUN,
};
pub use params::{Coef, Params, Schedule};
pub use predict::{
    capacity, default_requests, extrapolated, is_tail, predict, predict_with, Axis, Capacity,
    CapacityQuery, Predicted, Prediction, TailRefused, MIN_RATE, MIN_TAIL_REQUESTS,
};
pub use slo::{Slo, SloError};
pub use table::{
    MedianTable, TableError, TableRow, FOUNDING_MODEL, FOUNDING_MODEL_PATH, FOUNDING_TABLE,
    FOUNDING_TABLE_PATH,
};
pub use warning::FitWarning;
