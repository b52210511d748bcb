//! Energy over a measured window from a GPU's samples, by two methods: the
//! energy counter's change, and the power samples integrated (trapezoids).
//! Both read the samples as a piecewise-linear curve, so the window's edges
//! are interpolated between the samples that bracket them rather than
//! rounded to the nearest scrape (AIPerf widens the window by two scrape
//! intervals instead, which counts up to two intervals of energy that does
//! not belong to it).
//!
//! A figure is trusted only when the samples are good enough: every GPU has
//! a sample at or before the window's start and at or after its end, no two
//! consecutive samples lie further apart than the gap limit, a counter never
//! goes backwards, and a field is there for the whole window or not at all.
//! Otherwise the window's energy is `None` with the reason, one sentence;
//! the run goes on either way.

use crate::sample::{Reading, Sample};
use serde::Serialize;

/// Counter and integrated energy that differ by more than this share are
/// noted (one of the two sources is wrong, or the samples miss something).
pub const DISAGREEMENT: f64 = 0.05;

/// The window and how far apart samples may lie.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Window {
    /// Start, Unix seconds.
    pub start: f64,
    /// End, Unix seconds.
    pub end: f64,
    /// The longest gap between two consecutive samples of a GPU, s.
    pub gap_limit_s: f64,
}

/// One GPU's figures over a window.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct GpuEnergy {
    /// The GPU as the plan names it.
    pub gpu: String,
    /// The energy counter's change, J.
    pub counter_j: Option<f64>,
    /// The power samples integrated, J.
    pub integrated_j: Option<f64>,
    /// Mean power, W (integrated energy over the window's length).
    pub avg_power_w: Option<f64>,
    /// Highest power sampled in the window (edges interpolated), W.
    pub peak_power_w: Option<f64>,
    /// Share of the window the GPU was held back by its power limit.
    pub power_capped_share: Option<f64>,
    /// Share of the window the GPU was held back by temperature.
    pub thermal_share: Option<f64>,
    /// Lowest SM clock sampled in the window, MHz.
    pub sm_clock_min_mhz: Option<f64>,
    /// Highest SM clock sampled in the window, MHz.
    pub sm_clock_max_mhz: Option<f64>,
    /// An XID error the driver reported during the window.
    pub xid: Option<f64>,
}

/// A window's figures, every GPU together.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct WindowEnergy {
    /// The energy qexp trusts, J: the counters' change where every GPU has
    /// a counter, the integrated power otherwise; `None` when invalid.
    pub energy_j: Option<f64>,
    /// Sum of the counters' changes, J (kept when invalid, for inspection).
    pub counter_j: Option<f64>,
    /// Sum of the integrated power, J (likewise).
    pub integrated_j: Option<f64>,
    /// Mean power of all GPUs together, W.
    pub avg_power_w: Option<f64>,
    /// Sum of the GPUs' peak power, W.
    pub peak_power_w: Option<f64>,
    /// Why the energy is not trusted, one sentence.
    pub invalid_reason: Option<String>,
    /// A remark that does not invalidate (the two methods disagree).
    pub note: Option<String>,
    /// Largest share of the window any GPU was power-capped.
    pub power_capped_share: Option<f64>,
    /// Largest share of the window any GPU was held back by temperature.
    pub thermal_share: Option<f64>,
    /// Lowest SM clock of any GPU in the window, MHz.
    pub sm_clock_min_mhz: Option<f64>,
    /// Highest SM clock of any GPU in the window, MHz.
    pub sm_clock_max_mhz: Option<f64>,
    /// The XID error reported during the window, if one was.
    pub xid: Option<f64>,
    /// Per GPU.
    pub gpus: Vec<GpuEnergy>,
}

/// The figures of `gpus` over `w` from `samples` (any order, any GPUs).
pub fn over_window(samples: &[Sample], gpus: &[String], w: &Window) -> WindowEnergy {
    let mut out = WindowEnergy::default();
    let mut reasons = Vec::new();
    for gpu in gpus {
        let mut series: Vec<&Sample> = samples.iter().filter(|s| &s.reading.gpu == gpu).collect();
        series.sort_by(|a, b| a.t.total_cmp(&b.t));
        let (g, reason) = gpu_energy(gpu, &series, w);
        reasons.extend(reason);
        out.gpus.push(g);
    }
    let sum = |f: fn(&GpuEnergy) -> Option<f64>| -> Option<f64> {
        out.gpus.iter().map(f).sum::<Option<f64>>()
    };
    let max = |f: fn(&GpuEnergy) -> Option<f64>| -> Option<f64> {
        out.gpus.iter().filter_map(f).reduce(f64::max)
    };
    out.counter_j = sum(|g| g.counter_j);
    out.integrated_j = sum(|g| g.integrated_j);
    out.avg_power_w = sum(|g| g.avg_power_w);
    out.peak_power_w = sum(|g| g.peak_power_w);
    out.power_capped_share = max(|g| g.power_capped_share);
    out.thermal_share = max(|g| g.thermal_share);
    out.sm_clock_min_mhz = out
        .gpus
        .iter()
        .filter_map(|g| g.sm_clock_min_mhz)
        .reduce(f64::min);
    out.sm_clock_max_mhz = max(|g| g.sm_clock_max_mhz);
    out.xid = out.gpus.iter().find_map(|g| g.xid);
    if gpus.is_empty() {
        reasons.push("no GPU was named to measure".into());
    }
    if reasons.is_empty() && out.counter_j.is_none() && out.integrated_j.is_none() {
        reasons.push("the source gave neither an energy counter nor power for every GPU".into());
    }
    if let (Some(c), Some(i)) = (out.counter_j, out.integrated_j) {
        let d = (c - i).abs() / c.abs().max(i.abs());
        if d > DISAGREEMENT {
            out.note = Some(format!(
                "the energy counter ({c:.1} J) and the integrated power ({i:.1} J) disagree by {:.1}%",
                d * 100.0
            ));
        }
    }
    match reasons.into_iter().next() {
        Some(r) => out.invalid_reason = Some(r),
        None => out.energy_j = out.counter_j.or(out.integrated_j),
    }
    out
}

/// One GPU's figures; with the reason they are not to be trusted.
fn gpu_energy(gpu: &str, series: &[&Sample], w: &Window) -> (GpuEnergy, Option<String>) {
    let mut g = GpuEnergy {
        gpu: gpu.to_string(),
        ..GpuEnergy::default()
    };
    let Some(last) = series.last() else {
        return (g, Some(format!("GPU {gpu} gave no sample")));
    };
    let Some(i0) = series.iter().rposition(|s| s.t <= w.start) else {
        return (
            g,
            Some(format!(
                "GPU {gpu} has no sample at or before the window's start"
            )),
        );
    };
    let Some(i1) = series.iter().position(|s| s.t >= w.end) else {
        let early = w.end - last.t;
        return (
            g,
            Some(format!(
                "GPU {gpu} stopped reporting {early:.1} s before the window ended (it vanished)"
            )),
        );
    };
    let bracket = &series[i0..=i1];
    let curve = Curve { s: bracket, w };
    g.integrated_j = curve.integral(|r| r.power_w).ok().flatten();
    g.avg_power_w = g
        .integrated_j
        .map(|e| e / (w.end - w.start).max(f64::MIN_POSITIVE));
    g.peak_power_w = curve.extreme(|r| r.power_w, f64::max);
    g.sm_clock_min_mhz = curve.extreme(|r| r.sm_clock_mhz, f64::min);
    g.sm_clock_max_mhz = curve.extreme(|r| r.sm_clock_mhz, f64::max);
    g.counter_j = curve.delta(|r| r.energy_j).ok().flatten();
    g.power_capped_share = curve
        .share(|r| r.power_violation_s, |r| r.throttle.map(|t| t.power))
        .ok()
        .flatten();
    g.thermal_share = curve
        .share(|r| r.thermal_violation_s, |r| r.throttle.map(|t| t.thermal))
        .ok()
        .flatten();
    g.xid = curve.xid();
    if let Some((a, b)) = bracket
        .windows(2)
        .map(|p| (p[0].t, p[1].t))
        .find(|(a, b)| b - a > w.gap_limit_s)
    {
        let reason = format!(
            "GPU {gpu} went {:.1} s without a sample (from {:+.1} s of the window), beyond the gap limit of {} s",
            b - a,
            a - w.start,
            w.gap_limit_s
        );
        return (g, Some(reason));
    }
    if let Err(reason) = curve
        .delta(|r| r.energy_j)
        .map_err(|m| format!("the energy counter of GPU {gpu} {m}"))
        .and_then(|_| {
            curve
                .integral(|r| r.power_w)
                .map_err(|m| format!("the power of GPU {gpu} {m}"))
        })
    {
        return (g, Some(reason));
    }
    (g, None)
}

/// The samples that bracket a window, read as a piecewise-linear curve.
struct Curve<'a> {
    s: &'a [&'a Sample],
    w: &'a Window,
}

/// A field of a reading.
type Field = fn(&Reading) -> Option<f64>;

impl Curve<'_> {
    /// The (t, value) points of `f`: `Ok(None)` when the field is never
    /// there, an error when it is there for only part of the window.
    fn points(&self, f: Field) -> Result<Option<Vec<(f64, f64)>>, String> {
        let vals: Vec<Option<f64>> = self.s.iter().map(|s| f(&s.reading)).collect();
        let present = vals.iter().filter(|v| v.is_some()).count();
        if present == 0 {
            return Ok(None);
        }
        if present < vals.len() {
            let appeared = vals.first().is_some_and(Option::is_none);
            return Err(format!(
                "{} in the middle of the window",
                if appeared { "appeared" } else { "disappeared" }
            ));
        }
        Ok(Some(
            self.s
                .iter()
                .zip(vals)
                .filter_map(|(s, v)| Some((s.t, v?)))
                .collect(),
        ))
    }

    /// The points clipped to the window, its edges interpolated.
    fn clipped(&self, f: Field) -> Result<Option<Vec<(f64, f64)>>, String> {
        let Some(p) = self.points(f)? else {
            return Ok(None);
        };
        let (a, b) = (self.w.start, self.w.end);
        let mut out = vec![(a, interpolate(&p, a))];
        out.extend(p.iter().copied().filter(|(t, _)| *t > a && *t < b));
        out.push((b, interpolate(&p, b)));
        Ok(Some(out))
    }

    /// The trapezoid integral of `f` over the window (W × s = J).
    fn integral(&self, f: Field) -> Result<Option<f64>, String> {
        Ok(self.clipped(f)?.map(|p| {
            p.windows(2)
                .map(|q| (q[1].0 - q[0].0) * (q[0].1 + q[1].1) / 2.0)
                .sum()
        }))
    }

    /// A counter's change over the window; an error when it went backwards.
    fn delta(&self, f: Field) -> Result<Option<f64>, String> {
        let Some(p) = self.points(f)? else {
            return Ok(None);
        };
        if let Some(q) = p.windows(2).find(|q| q[1].1 < q[0].1) {
            return Err(format!(
                "went backwards from {:.1} to {:.1} (a reset) at {:+.1} s of the window",
                q[0].1,
                q[1].1,
                q[1].0 - self.w.start
            ));
        }
        Ok(Some(
            interpolate(&p, self.w.end) - interpolate(&p, self.w.start),
        ))
    }

    /// The highest (or lowest) value of `f` in the window.
    fn extreme(&self, f: Field, pick: fn(f64, f64) -> f64) -> Option<f64> {
        let p = self.clipped(f).ok()??;
        p.into_iter().map(|(_, v)| v).reduce(pick)
    }

    /// The share of the window a GPU was held back: from a violation-time
    /// counter where the source has one, else from per-read flags (each
    /// read's state held until the next read).
    fn share(
        &self,
        counter: Field,
        flag: fn(&Reading) -> Option<bool>,
    ) -> Result<Option<f64>, String> {
        let len = (self.w.end - self.w.start).max(f64::MIN_POSITIVE);
        if let Some(d) = self.delta(counter)? {
            return Ok(Some((d / len).clamp(0.0, 1.0)));
        }
        let flags: Vec<(f64, Option<bool>)> =
            self.s.iter().map(|s| (s.t, flag(&s.reading))).collect();
        if flags.iter().all(|(_, v)| v.is_none()) {
            return Ok(None);
        }
        let mut held = 0.0;
        for q in flags.windows(2) {
            let (a, b) = (q[0].0.max(self.w.start), q[1].0.min(self.w.end));
            if b > a && q[0].1 == Some(true) {
                held += b - a;
            }
        }
        Ok(Some((held / len).clamp(0.0, 1.0)))
    }

    /// An XID the driver reported during the window: a value other than
    /// the one it held at the window's start, and not 0.
    fn xid(&self) -> Option<f64> {
        let first = self.s.first()?.reading.xid.unwrap_or(0.0);
        self.s
            .iter()
            .skip(1)
            .filter(|s| s.t > self.w.start)
            .filter_map(|s| s.reading.xid)
            .find(|x| *x != first && *x != 0.0)
    }
}

/// The value at `t` of the piecewise-linear curve through `p` (sorted by
/// time; `t` within its span).
fn interpolate(p: &[(f64, f64)], t: f64) -> f64 {
    let k = p.partition_point(|(x, _)| *x < t);
    match (k.checked_sub(1).and_then(|i| p.get(i)), p.get(k)) {
        (Some(&(t0, v0)), Some(&(t1, v1))) if t1 > t0 => v0 + (v1 - v0) * (t - t0) / (t1 - t0),
        (_, Some(&(_, v))) | (Some(&(_, v)), None) => v,
        (None, None) => f64::NAN,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A GPU at a constant `watts` read every `dt` s from `t0` to `t1`, its
    /// counter starting at 1 kJ.
    fn constant(gpu: &str, watts: f64, t0: f64, t1: f64, dt: f64) -> Vec<Sample> {
        let n = ((t1 - t0) / dt).round() as usize;
        (0..=n)
            .map(|k| {
                let t = t0 + k as f64 * dt;
                Sample {
                    t,
                    reading: Reading {
                        gpu: gpu.into(),
                        power_w: Some(watts),
                        energy_j: Some(1000.0 + watts * (t - t0)),
                        ..Reading::default()
                    },
                }
            })
            .collect()
    }

    fn window(start: f64, end: f64) -> Window {
        Window {
            start,
            end,
            gap_limit_s: 3.0,
        }
    }

    #[test]
    fn constant_power_by_counter_and_integration_with_edges_between_samples() {
        let mut s = constant("0", 300.0, 0.0, 20.0, 0.5);
        s.extend(constant("1", 100.0, 0.0, 20.0, 0.5));
        // Edges fall between reads: 2.3 s to 12.05 s is 9.75 s.
        let e = over_window(&s, &["0".into(), "1".into()], &window(2.3, 12.05));
        let truth = 400.0 * 9.75;
        assert_eq!(e.invalid_reason, None);
        assert!((e.counter_j.unwrap() - truth).abs() < 1e-6, "{e:?}");
        assert!((e.integrated_j.unwrap() - truth).abs() < 1e-6, "{e:?}");
        assert_eq!(e.energy_j, e.counter_j);
        assert!((e.avg_power_w.unwrap() - 400.0).abs() < 1e-9);
        assert!((e.peak_power_w.unwrap() - 400.0).abs() < 1e-9);
        assert_eq!(e.note, None);
    }

    #[test]
    fn a_ramp_integrates_to_its_trapezoid() {
        // Power rises 100 → 300 W over 0..10 s; from 2 to 6 s: mean of 140 and 220 W × 4 s.
        let s: Vec<Sample> = (0..=10)
            .map(|k| Sample {
                t: f64::from(k),
                reading: Reading {
                    gpu: "0".into(),
                    power_w: Some(100.0 + 20.0 * f64::from(k)),
                    ..Reading::default()
                },
            })
            .collect();
        let e = over_window(&s, &["0".into()], &window(2.0, 6.0));
        assert!((e.energy_j.unwrap() - 720.0).abs() < 1e-9);
        assert_eq!(e.counter_j, None);
        assert!((e.peak_power_w.unwrap() - 220.0).abs() < 1e-9);
    }

    #[test]
    fn a_counter_reset_invalidates_with_its_reason() {
        let mut s = constant("0", 300.0, 0.0, 10.0, 0.5);
        for x in s.iter_mut().filter(|x| x.t >= 5.0) {
            x.reading.energy_j = x.reading.energy_j.map(|j| j - 2000.0);
        }
        let e = over_window(&s, &["0".into()], &window(1.0, 9.0));
        assert_eq!(e.energy_j, None);
        let r = e.invalid_reason.unwrap();
        assert!(r.contains("energy counter of GPU 0 went backwards"), "{r}");
        // The integrated figure is kept for inspection.
        assert!((e.integrated_j.unwrap() - 2400.0).abs() < 1e-6);
    }

    #[test]
    fn a_gap_beyond_the_limit_invalidates() {
        let s: Vec<Sample> = constant("0", 300.0, 0.0, 10.0, 0.5)
            .into_iter()
            .filter(|x| !(3.0..7.0).contains(&x.t))
            .collect();
        let e = over_window(&s, &["0".into()], &window(1.0, 9.0));
        let r = e.invalid_reason.unwrap();
        assert!(
            r.contains("went 4.5 s without a sample") && r.contains("gap limit of 3 s"),
            "{r}"
        );
        // The same gap outside the window does no harm.
        let e = over_window(&s, &["0".into()], &window(7.5, 9.0));
        assert_eq!(e.invalid_reason, None);
    }

    #[test]
    fn a_vanished_gpu_invalidates() {
        let mut s = constant("0", 300.0, 0.0, 10.0, 0.5);
        s.extend(constant("1", 300.0, 0.0, 6.0, 0.5));
        let e = over_window(&s, &["0".into(), "1".into()], &window(1.0, 9.0));
        let r = e.invalid_reason.unwrap();
        assert!(
            r.contains("GPU 1 stopped reporting 3.0 s before the window ended"),
            "{r}"
        );
    }

    #[test]
    fn a_field_that_appears_mid_window_invalidates() {
        let mut s = constant("0", 300.0, 0.0, 10.0, 0.5);
        for x in s.iter_mut().filter(|x| x.t < 4.0) {
            x.reading.energy_j = None;
        }
        let e = over_window(&s, &["0".into()], &window(1.0, 9.0));
        let r = e.invalid_reason.unwrap();
        assert_eq!(
            r,
            "the energy counter of GPU 0 appeared in the middle of the window"
        );
        // A window after it appeared is whole.
        let e = over_window(&s, &["0".into()], &window(4.5, 9.0));
        assert_eq!(e.invalid_reason, None);
        assert!(e.counter_j.is_some());
    }

    #[test]
    fn disagreement_is_noted_and_throttle_and_xid_are_read() {
        let mut s = constant("0", 300.0, 0.0, 10.0, 0.5);
        for x in &mut s {
            x.reading.energy_j = x.reading.energy_j.map(|j| j * 1.0 + 30.0 * x.t);
            x.reading.throttle = Some(crate::Throttle {
                power: (4.0..6.0).contains(&x.t),
                thermal: false,
            });
            x.reading.xid = Some(if x.t >= 7.0 { 79.0 } else { 0.0 });
        }
        let e = over_window(&s, &["0".into()], &window(2.0, 6.0));
        assert!(e.note.unwrap().contains("disagree by 9.1%"));
        assert!((e.power_capped_share.unwrap() - 0.5).abs() < 1e-9);
        assert_eq!(e.xid, None);
        let e = over_window(&s, &["0".into()], &window(6.0, 8.0));
        assert_eq!(e.xid, Some(79.0));
    }
}
