//! Where a series of runs stepped to a new level: binary segmentation with
//! the likelihood-ratio test for one shift in the mean of normal values.
//!
//! For a segment of n values, every split k (1 ≤ k < n) is scored by the
//! two-sample t statistic of the values before and after it, with the pooled
//! standard deviation (n − 2 degrees of freedom); the largest |t| is the
//! likelihood-ratio statistic for a single shift in location (Worsley,
//! "On the likelihood ratio test for a shift in location of normal
//! populations", JASA 74, 1979). Its p-value is bounded by Bonferroni over
//! the n − 1 splits (n − 1 times the two-sided t p-value of the best split),
//! a bound Worsley shows to be close for short series and conservative for
//! long ones. A split is a step when that bound is at most `alpha` and the
//! level moved by at least `min_relative` of the earlier level (a practical
//! threshold, so that a long history does not mark differences nobody would
//! act on). Each side of a step is then searched again (binary segmentation:
//! Scott & Knott, Biometrics 30, 1974; Vostrikova, Soviet Math. Dokl. 24,
//! 1981) — the scheme Hunter uses on MongoDB's performance history
//! (Fleming et al., "Hunter: Using Change Point Detection to Hunt for
//! Performance Regressions", ICPE 2023), there with E-divisive's statistic.
//!
//! Unlike a test of the newest run against the ones before, it uses the runs
//! on both sides of a step, so a step is found with few runs after it, and it
//! is located where the level changed, not where a test first noticed.
//! The unit is the run (one value per run, e.g. the median of its trials):
//! trials of one run share the server, the day and the build, so pooling
//! them across runs would count run-to-run variation as signal.
//!
//! NaN policy: non-finite values are the caller's to drop; a segment with
//! fewer than 3 values, or whose values are all equal, has no step.

use crate::stats::t_sf;

/// Limits of the step search.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct StepOptions {
    /// Largest p-value (Bonferroni bound over the splits) that marks a step.
    pub alpha: f64,
    /// Smallest move of the level, as a fraction of the level before.
    pub min_relative: f64,
}

impl Default for StepOptions {
    /// `alpha` 0.005 and a 2% practical threshold: 10 runs of one normal
    /// distribution are marked in at most 1% of histories (0.6% measured by
    /// the test suite's error-rate test), and a 10% step is found.
    fn default() -> StepOptions {
        StepOptions {
            alpha: 0.005,
            min_relative: 0.02,
        }
    }
}

/// A step: the level changed between `index - 1` and `index`.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct Step {
    /// The first value of the new level (0-based, into the series).
    pub index: usize,
    /// Mean of the segment before the step.
    pub before: f64,
    /// Mean of the segment after it.
    pub after: f64,
    /// `after / before − 1`.
    pub relative: f64,
    /// The Bonferroni bound on the p-value of the split.
    pub p_value: f64,
}

/// The steps of `values` (finite, in time order), by index.
pub fn steps(values: &[f64], opts: &StepOptions) -> Vec<Step> {
    let mut found = Vec::new();
    search(values, 0, opts, &mut found);
    found.sort_by_key(|s| s.index);
    found
}

fn search(values: &[f64], offset: usize, opts: &StepOptions, found: &mut Vec<Step>) {
    let Some(best) = best_split(values) else {
        return;
    };
    let n = values.len();
    let df = (n - 2) as f64;
    let p_one = if best.t.is_infinite() {
        0.0
    } else {
        2.0 * t_sf(best.t.abs(), df)
    };
    let p_value = (p_one * (n - 1) as f64).min(1.0);
    let relative = if best.before != 0.0 {
        best.after / best.before - 1.0
    } else {
        f64::INFINITY
    };
    if p_value > opts.alpha || relative.abs() < opts.min_relative {
        return;
    }
    found.push(Step {
        index: offset + best.k,
        before: best.before,
        after: best.after,
        relative,
        p_value,
    });
    let (left, right) = values.split_at(best.k);
    search(left, offset, opts, found);
    search(right, offset + best.k, opts, found);
}

/// The split with the largest |t|.
struct Split {
    k: usize,
    t: f64,
    before: f64,
    after: f64,
}

/// The best split of a segment; None below 3 values or when all are equal.
fn best_split(values: &[f64]) -> Option<Split> {
    let n = values.len();
    if n < 3 {
        return None;
    }
    // Centred first, so the running sums of squares do not cancel.
    let mean = values.iter().sum::<f64>() / n as f64;
    let x: Vec<f64> = values.iter().map(|v| v - mean).collect();
    let total_sq: f64 = x.iter().map(|v| v * v).sum();
    if total_sq == 0.0 {
        return None;
    }
    let total: f64 = x.iter().sum();
    let (mut sum, mut sq) = (0.0, 0.0);
    let mut best: Option<Split> = None;
    for k in 1..n {
        sum += x[k - 1];
        sq += x[k - 1] * x[k - 1];
        let (nl, nr) = (k as f64, (n - k) as f64);
        let (ml, mr) = (sum / nl, (total - sum) / nr);
        // Within-segment sum of squares of both sides.
        let within = (sq - sum * ml) + ((total_sq - sq) - (total - sum) * mr);
        let var = (within / (n - 2) as f64).max(0.0);
        let se = (var * (1.0 / nl + 1.0 / nr)).sqrt();
        let diff = mr - ml;
        let t = if se > 1e-12 * total_sq.sqrt() {
            diff / se
        } else if diff != 0.0 {
            f64::INFINITY.copysign(diff)
        } else {
            0.0
        };
        if best.as_ref().is_none_or(|b| t.abs() > b.t.abs()) {
            best = Some(Split {
                k,
                t,
                before: ml + mean,
                after: mr + mean,
            });
        }
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_or_flat_series_have_no_step() {
        let o = StepOptions::default();
        assert!(steps(&[], &o).is_empty());
        assert!(steps(&[1.0], &o).is_empty());
        assert!(steps(&[1.0, 2.0], &o).is_empty());
        assert!(steps(&[5.0; 10], &o).is_empty());
    }

    #[test]
    fn a_clean_step_without_noise_is_found_where_it_is() {
        let mut v = vec![100.0; 5];
        v.extend([110.0; 5]);
        let s = steps(&v, &StepOptions::default());
        assert_eq!(s.len(), 1, "{s:?}");
        assert_eq!(s[0].index, 5);
        assert!((s[0].relative - 0.10).abs() < 1e-12);
        assert_eq!(s[0].p_value, 0.0);
    }

    #[test]
    fn a_step_below_the_practical_threshold_is_not_marked() {
        let mut v = vec![100.0, 100.1, 99.9, 100.0, 100.05];
        v.extend([101.0, 101.1, 100.9, 101.0, 101.05]);
        // Significant (t is huge) but only 1%.
        assert!(steps(&v, &StepOptions::default()).is_empty());
        let loose = StepOptions {
            min_relative: 0.005,
            ..StepOptions::default()
        };
        assert_eq!(steps(&v, &loose).len(), 1);
    }

    #[test]
    fn two_steps_are_both_found() {
        let base = [0.0, 0.3, -0.2, 0.1, -0.1, 0.2];
        let mut v: Vec<f64> = base.iter().map(|d| 100.0 + d).collect();
        v.extend(base.iter().map(|d| 120.0 + d));
        v.extend(base.iter().map(|d| 90.0 + d));
        let idx: Vec<usize> = steps(&v, &StepOptions::default())
            .iter()
            .map(|s| s.index)
            .collect();
        assert_eq!(idx, vec![6, 12]);
    }

    #[test]
    fn large_offsets_do_not_cancel() {
        let v: Vec<f64> = [0.0, 1.0, -1.0, 0.5, -0.5, 0.0, 1.0, -1.0]
            .iter()
            .map(|d| 1e12 + d)
            .collect();
        let any = StepOptions {
            min_relative: 0.0,
            ..StepOptions::default()
        };
        assert!(steps(&v, &any).is_empty());
    }
}
