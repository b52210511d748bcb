//! qexp-analysis's integration tests, as one test binary (one link of
//! polars): the diff on synthetic runs, its measured error rates, and the
//! pooled ITL read in batches.

mod diff;
mod diff_power;
mod itl;
