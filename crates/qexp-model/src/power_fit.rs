//! The power model fitted to the runs' power: idle + per sequence in
//! flight, the load figure replayed on the fitted timing model, with its
//! intervals from the timing fit's resampling.

use crate::des::{quantile, simulate, Load};
use crate::file::ModelFile;
use crate::fit::{draws, resampled_interval, strata, FitOptions, Observation};
use crate::ols::{t95, wls};
use crate::params::Params;
use crate::power::{PowerGap, PowerModel, PowerObservation};
use std::collections::BTreeMap;

/// Fits the power model on `power`, beside `model` fitted on `rows` with
/// `opts` (its resampled refits are redrawn from the same seed).
pub fn fit_power(
    model: &ModelFile,
    rows: &[Observation],
    power: &[PowerObservation],
    opts: &FitOptions,
) -> Result<PowerModel, PowerGap> {
    let loads: BTreeMap<&str, Load> = rows.iter().map(|r| (r.label.as_str(), r.load())).collect();
    let power: Vec<&PowerObservation> = power
        .iter()
        .filter(|p| p.power_w.is_finite() && p.power_w > 0.0 && loads.contains_key(&*p.label))
        .collect();
    if power.is_empty() {
        return Err(PowerGap::NoPower);
    }
    let x = in_flight(&loads, &model.params);
    let point = regress(&power, &x).ok_or(PowerGap::OneLoad)?;
    let refs: Vec<&Observation> = rows.iter().collect();
    let drawn = draws(&strata(&refs), opts);
    let replicates: Vec<[f64; 2]> = drawn
        .iter()
        .enumerate()
        .filter_map(|(i, trials)| {
            // The timing refit of the same draw, where every refit succeeded.
            let params = match model.replicates.len() == drawn.len() {
                true => &model.replicates[i],
                false => &model.params,
            };
            let sample: Vec<&PowerObservation> = trials
                .iter()
                .flat_map(|t| power.iter().copied().filter(move |p| p.trial == *t))
                .collect();
            regress(&sample, &in_flight(&loads, params)).map(|(b, _)| b)
        })
        .collect();
    let df = strata(&refs)
        .values()
        .map(|t| t.len().saturating_sub(1))
        .sum();
    let ([idle_w, per_seq_w], se) = point;
    let interval = |j: usize, value: f64| {
        let reps: Vec<f64> = replicates.iter().map(|r| r[j]).collect();
        let [lo, hi] = resampled_interval(value, &reps, df);
        let half = se[j];
        if half.is_finite() {
            [lo.min(value - half), hi.max(value + half)]
        } else {
            [lo, hi]
        }
    };
    let xs: Vec<f64> = power
        .iter()
        .filter_map(|p| x.get(&*p.label).copied())
        .collect();
    Ok(PowerModel {
        idle_w,
        per_seq_w,
        idle_interval: interval(0, idle_w),
        per_seq_interval: interval(1, per_seq_w),
        in_flight_range: [
            xs.iter().copied().fold(f64::INFINITY, f64::min),
            xs.iter().copied().fold(f64::NEG_INFINITY, f64::max),
        ],
        band: band(&power, &x, idle_w, per_seq_w),
        gpus: None,
        price: None,
        replicates,
    })
}

/// Each point's mean sequences in flight, replayed on `params`.
fn in_flight<'a>(loads: &BTreeMap<&'a str, Load>, params: &Params) -> BTreeMap<&'a str, f64> {
    loads
        .iter()
        .map(|(k, l)| (*k, simulate(params, l).mean_in_flight))
        .collect()
}

/// Least squares of power on `1, x`: `[idle, per sequence]` and the half
/// widths of their t-intervals; None with fewer than two loads.
fn regress(rows: &[&PowerObservation], x: &BTreeMap<&str, f64>) -> Option<([f64; 2], [f64; 2])> {
    let (xs, ys): (Vec<Vec<f64>>, Vec<f64>) = rows
        .iter()
        .filter_map(|p| Some((vec![1.0, *x.get(&*p.label)?], p.power_w)))
        .unzip();
    let distinct = xs
        .iter()
        .any(|r| xs.first().is_some_and(|f| (r[1] - f[1]).abs() > 1e-6));
    if !distinct {
        return None;
    }
    let fit = wls(&xs, &ys, &vec![1.0; ys.len()])?;
    let half = |j: usize| t95(fit.df) * fit.se[j];
    Some(([fit.beta[0], fit.beta[1]], [half(0), half(1)]))
}

/// 1.645 × the root mean square of the relative residuals of each point's
/// median power across trials.
fn band(rows: &[&PowerObservation], x: &BTreeMap<&str, f64>, idle: f64, per_seq: f64) -> f64 {
    let mut by_point: BTreeMap<&str, Vec<f64>> = BTreeMap::new();
    for p in rows {
        by_point.entry(&p.label).or_default().push(p.power_w);
    }
    let e: Vec<f64> = by_point
        .iter()
        .filter_map(|(k, v)| {
            let fitted = idle + per_seq * x.get(k)?;
            Some(fitted / quantile(v, 0.5) - 1.0)
        })
        .filter(|e| e.is_finite())
        .collect();
    if e.is_empty() {
        return 0.0;
    }
    1.645 * (e.iter().map(|v| v * v).sum::<f64>() / e.len() as f64).sqrt()
}
