//! qexp-analysis's integration tests, as one test binary (one link of
//! polars): the diff on synthetic runs, its measured error rates, and the
//! pooled ITL read in batches, the history's step search and its error
//! rates, and SQL over a run's rows.

mod diff;
mod diff_power;
mod distributions;
mod history;
mod itl;
mod query;
