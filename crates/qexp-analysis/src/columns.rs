//! Reading polars columns into plain vectors, for every module that
//! aggregates rows.

use polars::prelude::*;

/// The float type every aggregate is cast to.
pub(crate) const F: DataType = DataType::Float64;

/// An unsigned column; nulls become 0.
pub(crate) fn u32s(df: &DataFrame, name: &str) -> PolarsResult<Vec<u32>> {
    let c = df.column(name)?.cast(&DataType::UInt32)?;
    Ok(c.u32()?.iter().map(|v| v.unwrap_or(0)).collect())
}

/// A float column; nulls become NaN (statistics drop them).
pub(crate) fn f64s(df: &DataFrame, name: &str) -> PolarsResult<Vec<f64>> {
    let c = df.column(name)?.cast(&F)?;
    Ok(c.f64()?.iter().map(|v| v.unwrap_or(f64::NAN)).collect())
}
