//! The metrics a diff compares: qexp's one metric list ([`crate::Metric`]),
//! under the name the diff has always used for it.

pub use crate::metric::{Direction, Metric as DiffMetric};
