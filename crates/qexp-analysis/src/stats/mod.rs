//! Statistics for trials and run comparison, each in a small module that cites
//! its method: quantiles and summaries, the order-statistic interval of the
//! median, outlier flags, the Mann–Whitney U test, Student's t distribution
//! with the two-sample t-test, its interval, equivalence test and sample
//! sizes, the permutation test of a difference in means, and Holm's
//! multiple-comparison adjustment. Pure Rust with no dependencies, so results
//! are reproducible bit for bit across machines (random permutations use their
//! own seeded [`Rng`]).
//!
//! NaN policy: callers pass the metric of a failed request as NaN. Every
//! function that takes raw samples drops non-finite values (NaN and ±inf)
//! before computing, so a sample's `n` counts only the values used; functions
//! documented to take `sorted` input expect the output of [`sorted_finite`].
//! Element-wise functions ([`modified_z_scores`], [`holm_adjust`]) keep their
//! output aligned with the input and return NaN in a NaN's place. Nothing here
//! panics on empty input: it returns None or a documented value.

pub mod ci;
pub mod holm;
pub mod mannwhitney;
pub mod mcnemar;
pub mod normal;
pub mod outliers;
pub mod permutation;
pub mod quantile;
pub mod rng;
pub(crate) mod select;
pub mod student;
pub mod summary;
pub mod ttest;
pub mod wilson;

pub use ci::median_ci;
pub use holm::holm_adjust;
pub use mannwhitney::{mann_whitney_u, min_attainable_p, trials_needed, MwResult};
pub use outliers::{classify, modified_z_scores, tukey_fences, Fences, OutlierKind};
pub use permutation::{permutation_floor, permutation_p};
pub use quantile::{median, quantile, quantile_in_place, quantiles_in_place, sorted_finite};
pub use rng::Rng;
pub use student::{t_isf, t_sf};
pub use summary::Summary;
pub use ttest::{mean_diff, paired_diff, trials_to_decide, MeanDiff};

/// Asserts `got` is within `rel` (relative) of `want`, for reference values from scipy.
#[cfg(test)]
fn close(got: f64, want: f64, rel: f64) {
    assert!(
        (got - want).abs() <= rel * want.abs(),
        "{got} != {want} (rel {rel})"
    );
}
