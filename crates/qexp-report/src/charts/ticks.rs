//! Axis ranges and tick positions a person can read: linear axes from zero in
//! steps of 1, 2, 2.5 or 5 × 10^k; log axes at 1-2-5 per decade (decades only
//! when the range is wide); concurrency at the swept values themselves.

/// An axis' range and ticks, in data units.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Ticks {
    /// Lower end of the axis.
    pub lo: f64,
    /// Upper end of the axis.
    pub hi: f64,
    /// Labelled ticks with grid lines.
    pub bold: Vec<f64>,
    /// Unlabelled light grid lines.
    pub light: Vec<f64>,
}

/// The smallest step of 1, 2, 2.5 or 5 × 10^k that is at least `raw`.
fn round_step(raw: f64) -> f64 {
    let mag = 10f64.powf(raw.log10().floor());
    [1.0, 2.0, 2.5, 5.0, 10.0]
        .into_iter()
        .map(|m| m * mag)
        .find(|s| *s >= raw)
        .unwrap_or(10.0 * mag)
}

/// A linear axis from 0 to a little above `max`, with about six steps.
pub(crate) fn linear(max: f64) -> Ticks {
    let max = if max.is_finite() && max > 0.0 {
        max
    } else {
        1.0
    };
    let step = round_step(max / 6.0);
    let steps = (max * 1.05 / step).ceil().max(1.0) as usize;
    let bold: Vec<f64> = (0..=steps).map(|i| i as f64 * step).collect();
    let light = (0..steps).map(|i| (i as f64 + 0.5) * step).collect();
    Ticks {
        lo: 0.0,
        hi: steps as f64 * step,
        bold,
        light,
    }
}

/// A linear axis around `lo..hi` (not from zero), in round steps of 1, 2,
/// 2.5 or 5 × 10^k: for values that sit far from zero, such as ratios near 1.
pub(crate) fn around(lo: f64, hi: f64) -> Ticks {
    let (lo, hi) = if lo.is_finite() && hi.is_finite() && hi >= lo {
        (lo, hi)
    } else {
        (0.0, 1.0)
    };
    // One value: a small range around it.
    let (lo, hi) = if hi > lo {
        (lo, hi)
    } else {
        let half = (hi.abs() * 0.05).max(1e-9);
        (lo - half, hi + half)
    };
    let step = round_step((hi - lo) / 5.0);
    let first = (lo / step).floor();
    let last = (hi / step).ceil().max(first + 1.0);
    let bold: Vec<f64> = (0..=(last - first) as usize)
        .map(|i| (first + i as f64) * step)
        .collect();
    let light = (0..(last - first) as usize)
        .map(|i| (first + i as f64 + 0.5) * step)
        .collect();
    Ticks {
        lo: first * step,
        hi: last * step,
        bold,
        light,
    }
}

/// A linear axis from 0 that ends just past `max` (data reach the right edge;
/// the last labelled tick is the last round value below the end).
pub(crate) fn linear_to(max: f64) -> Ticks {
    let full = linear(max);
    let hi = full
        .bold
        .iter()
        .copied()
        .fold(0.0, f64::max)
        .min(max.max(0.0) * 1.06);
    let hi = if hi > 0.0 { hi } else { full.hi };
    Ticks {
        lo: 0.0,
        hi,
        bold: full.bold.into_iter().filter(|v| *v <= hi).collect(),
        light: full.light.into_iter().filter(|v| *v <= hi).collect(),
    }
}

/// A log axis over whole decades around `[min, max]` (both > 0).
pub(crate) fn log(min: f64, max: f64) -> Ticks {
    let (min, max) = if min > 0.0 && max >= min && max.is_finite() {
        (min, max)
    } else {
        (1.0, 10.0)
    };
    let d0 = min.log10().floor() as i32;
    let mut d1 = max.log10().ceil() as i32;
    if d1 <= d0 {
        d1 = d0 + 1;
    }
    let mults: &[f64] = if d1 - d0 > 3 {
        &[1.0]
    } else {
        &[1.0, 2.0, 5.0]
    };
    let mut bold = Vec::new();
    let mut light = Vec::new();
    for d in d0..=d1 {
        let base = 10f64.powi(d);
        for m in 1..10 {
            let v = base * f64::from(m);
            if d == d1 && m > 1 {
                break;
            }
            if mults.contains(&f64::from(m)) {
                bold.push(v);
            } else {
                light.push(v);
            }
        }
    }
    Ticks {
        lo: 10f64.powi(d0),
        hi: 10f64.powi(d1),
        bold,
        light,
    }
}

/// A log axis whose ticks are the swept values (e.g. concurrency 1, 2, 4 … 100).
pub(crate) fn at_values(values: &[f64]) -> Ticks {
    let min = values.iter().copied().fold(f64::INFINITY, f64::min);
    let max = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let (min, max) = if min > 0.0 && max.is_finite() {
        (min, max)
    } else {
        (1.0, 10.0)
    };
    // A margin of a quarter of a doubling keeps end points off the frame.
    Ticks {
        lo: min / 1.3,
        hi: max * 1.3,
        bold: values.to_vec(),
        light: Vec::new(),
    }
}

/// A tick label with at most three significant digits and no trailing zeros.
pub(crate) fn label(v: f64) -> String {
    if v.is_finite() {
        crate::format::sig3(v)
    } else {
        "0".into()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn around_covers_the_values_in_round_steps() {
        let t = around(0.93, 1.08);
        assert!(t.lo <= 0.93 && t.hi >= 1.08, "{t:?}");
        assert!(t.lo > 0.5, "not from zero: {t:?}");
        assert_eq!(t.bold.first().copied(), Some(t.lo));
        assert_eq!(t.bold.last().copied(), Some(t.hi));
        // One value: a small range around it.
        let t = around(1.0, 1.0);
        assert!(t.lo < 1.0 && t.hi > 1.0, "{t:?}");
    }

    #[test]
    fn linear_steps_are_round() {
        let t = linear(505.0);
        assert_eq!(t.bold, vec![0.0, 100.0, 200.0, 300.0, 400.0, 500.0, 600.0]);
        assert_eq!(t.hi, 600.0);
        let t = linear(73.6);
        assert_eq!(t.bold.last(), Some(&80.0));
        assert_eq!(t.bold[1], 20.0);
        let t = linear(15.1);
        assert_eq!((t.bold[1], t.hi), (5.0, 20.0));
    }

    #[test]
    fn linear_survives_empty_and_zero() {
        for t in [linear(0.0), linear(f64::NAN), linear(-3.0)] {
            assert!((t.hi - 1.2).abs() < 1e-9, "{t:?}");
            assert_eq!(t.bold.len(), 7);
        }
    }

    #[test]
    fn linear_to_ends_near_the_data() {
        let t = linear_to(120000.0);
        assert!((t.hi - 127200.0).abs() < 1e-6, "{t:?}");
        assert_eq!(t.bold.last(), Some(&120000.0));
        assert_eq!(linear_to(0.0).hi, linear(0.0).hi);
    }

    #[test]
    fn log_covers_decades() {
        let t = log(0.3, 61.0);
        assert_eq!((t.lo, t.hi), (0.1, 100.0));
        assert_eq!(t.bold.len(), 3 * 3 + 1);
        assert!(t.bold.contains(&0.5) && t.bold.contains(&20.0));
        let wide = log(0.001, 900.0);
        assert_eq!(wide.bold.len(), 7, "{wide:?}");
        let one = log(2.0, 2.0);
        assert_eq!((one.lo, one.hi), (1.0, 10.0));
    }

    #[test]
    fn labels_are_short() {
        assert_eq!(label(0.0), "0");
        assert_eq!(label(0.30000000000000004), "0.3");
        assert_eq!(label(2.5), "2.5");
        assert_eq!(label(600.0), "600");
        assert_eq!(label(61.0), "61");
        assert_eq!(label(0.05), "0.05");
    }
}
