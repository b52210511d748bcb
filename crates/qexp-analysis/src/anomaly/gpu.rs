//! GPU health as a cause: a point whose GPUs were held back (power-capped
//! or throttled by temperature) for a material share of its measured
//! window, or whose SM clock fell well below the run's usual clock, gets a
//! flag of its own, and the noise, outlier and wrong-way flags at that
//! point (or its neighbour) name it as a likely cause, since a throttled
//! GPU is slower than the deployment is.

use super::Flag;
use crate::metrics::PointSummary;
use serde::Serialize;
use std::fmt;

/// A share of the window held back beyond which it counts (5%): below it,
/// brief capping at a load step moves no median.
pub const HELD_BACK_SHARE: f64 = 0.05;

/// A window's lowest SM clock below this share of the run's usual clock
/// (0.8: more than 20% below) is a clock drop. The usual clock is the
/// median over the run's (trial, point) windows of each one's highest SM
/// clock: what the GPUs ran at when nothing held them back. A GPU at load
/// boosts within a few percent of that; a power or thermal slowdown, or a
/// clock locked lower, takes far more.
pub const CLOCK_DROP_SHARE: f64 = 0.8;

/// A point's SM clock fell well below the run's usual clock.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct ClockDrop {
    /// The lowest SM clock of its windows, MHz.
    pub lowest_mhz: f64,
    /// The run's usual SM clock, MHz.
    pub usual_mhz: f64,
}

/// Why a point's GPUs ran slower than they could, over its trials.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GpuCause {
    /// The largest share of a trial's window a GPU was power-capped.
    pub power_capped_share: f64,
    /// The largest share held back by temperature.
    pub thermal_share: f64,
    /// The SM clock's drop, when a trial's fell below [`CLOCK_DROP_SHARE`] of the usual.
    pub clock_drop: Option<ClockDrop>,
    /// The trials held back beyond [`HELD_BACK_SHARE`], or whose clock dropped.
    pub trials: Vec<u32>,
}

/// The run's usual SM clock: the median over its (trial, point) windows
/// of each one's highest SM clock; None when none was sampled.
pub fn usual_sm_clock(points: &[PointSummary]) -> Option<f64> {
    let highs: Vec<f64> = points
        .iter()
        .flat_map(|p| p.trials.iter())
        .filter_map(|t| t.energy.as_ref().map(|e| e.sm_clock_mhz.1))
        .filter(|v| v.is_finite() && *v > 0.0)
        .collect();
    crate::stats::Summary::of(&highs).map(|s| s.median)
}

impl GpuCause {
    /// The cause at `p`, when a trial's GPUs were held back beyond
    /// [`HELD_BACK_SHARE`] or its SM clock fell below [`CLOCK_DROP_SHARE`]
    /// of the run's `usual` clock.
    pub fn of(p: &PointSummary, usual: Option<f64>) -> Option<GpuCause> {
        let share = |v: f64| if v.is_finite() { v } else { 0.0 };
        let mut out = GpuCause {
            power_capped_share: 0.0,
            thermal_share: 0.0,
            clock_drop: None,
            trials: Vec::new(),
        };
        for t in &p.trials {
            let Some(e) = &t.energy else { continue };
            let (pw, th) = (share(e.power_capped_share), share(e.thermal_share));
            let low = e.sm_clock_mhz.0;
            // A window without clock samples reads 0 or NaN: no drop.
            let dropped =
                usual.filter(|u| low.is_finite() && low > 0.0 && low < CLOCK_DROP_SHARE * u);
            if pw.max(th) < HELD_BACK_SHARE && dropped.is_none() {
                continue;
            }
            out.trials.push(t.trial);
            out.power_capped_share = out.power_capped_share.max(pw);
            out.thermal_share = out.thermal_share.max(th);
            if let Some(usual_mhz) = dropped {
                let lowest_mhz = out.clock_drop.map_or(low, |d| d.lowest_mhz.min(low));
                out.clock_drop = Some(ClockDrop {
                    lowest_mhz,
                    usual_mhz,
                });
            }
        }
        (!out.trials.is_empty()).then_some(out)
    }
}

impl fmt::Display for GpuCause {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut held = Vec::new();
        if self.power_capped_share >= HELD_BACK_SHARE {
            held.push(format!(
                "power-capped for {:.0}%",
                self.power_capped_share * 100.0
            ));
        }
        if self.thermal_share >= HELD_BACK_SHARE {
            held.push(format!(
                "held back by temperature for {:.0}%",
                self.thermal_share * 100.0
            ));
        }
        let mut said = Vec::new();
        if !held.is_empty() {
            said.push(format!("the GPU was {} of this point", held.join(" and ")));
        }
        if let Some(d) = self.clock_drop {
            said.push(format!(
                "the GPU's SM clock fell to {:.0} MHz in this point, {:.0}% below the run's usual {:.0} MHz",
                d.lowest_mhz,
                (1.0 - d.lowest_mhz / d.usual_mhz) * 100.0,
                d.usual_mhz
            ));
        }
        let trials: Vec<String> = self.trials.iter().map(u32::to_string).collect();
        write!(f, "{} (trial {})", said.join(", and "), trials.join(", "))
    }
}

/// One flag per point whose GPUs were held back.
pub fn detect(points: &[PointSummary]) -> Vec<Flag> {
    let usual = usual_sm_clock(points);
    points
        .iter()
        .filter_map(|p| {
            Some(Flag::GpuHeldBack {
                point_id: p.point.id,
                cause: GpuCause::of(p, usual)?,
            })
        })
        .collect()
}

/// Names the cause in the noise, outlier and wrong-way flags of a point
/// whose GPUs were held back (a wrong-way flag is shown at its later point).
pub fn name_causes(flags: &mut [Flag], points: &[PointSummary]) {
    let usual = usual_sm_clock(points);
    let cause = |id: u32| {
        points
            .iter()
            .find(|p| p.point.id == id)
            .and_then(|p| GpuCause::of(p, usual))
    };
    for f in flags.iter_mut() {
        match f {
            Flag::NoisyPoint { point_id, gpu, .. } | Flag::OutlierTrial { point_id, gpu, .. } => {
                *gpu = cause(*point_id);
            }
            Flag::WrongDirection { point_id, gpu, .. } => *gpu = cause(*point_id),
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::fixtures::{point, trial};
    use super::super::{detect_points, Thresholds};
    use crate::energy::TrialEnergy;

    /// Two noisy points; the second's GPU was power-capped for 40% of trial 2.
    #[test]
    fn a_noisy_point_names_a_throttle_in_its_window_and_only_there() {
        let noisy = |id: u32, capped: f64| {
            let mut trials = vec![
                trial(1, 500.0, 50.0, 0.5, 10.0),
                trial(2, 350.0, 35.0, 0.7, 14.0),
                trial(3, 500.0, 50.0, 0.5, 10.0),
            ];
            trials[1].energy = Some(TrialEnergy {
                power_capped_share: capped,
                thermal_share: f64::NAN,
                ..TrialEnergy::default()
            });
            point(id, 4 * (id + 1), 1000, 500, trials)
        };
        let pts = [noisy(0, 0.0), noisy(1, 0.4)];
        let flags = detect_points(&pts, &Thresholds::default());
        let text = |id: u32, title: &str| -> Vec<String> {
            flags
                .iter()
                .filter(|f| f.point_id() == Some(id) && f.title() == title)
                .map(ToString::to_string)
                .collect()
        };
        let cause = "Likely cause: the GPU was power-capped for 40% of this point (trial 2).";
        assert!(text(1, "Noisy point")[0].ends_with(cause), "{flags:?}");
        assert!(
            !text(0, "Noisy point")[0].contains("Likely cause"),
            "{flags:?}"
        );
        assert_eq!(text(1, "GPU held back").len(), 1);
        assert!(text(0, "GPU held back").is_empty());
    }

    /// Two noisy points at 1800 MHz; the second's SM clock fell to 900 MHz
    /// in trial 3: its flags name the drop, the first's do not.
    #[test]
    fn a_clock_drop_is_named_at_its_point_only() {
        let noisy = |id: u32, low: f64| {
            let mut trials = vec![
                trial(1, 500.0, 50.0, 0.5, 10.0),
                trial(2, 500.0, 50.0, 0.5, 10.0),
                trial(3, 350.0, 35.0, 0.7, 14.0),
            ];
            for (i, t) in trials.iter_mut().enumerate() {
                t.energy = Some(TrialEnergy {
                    power_capped_share: 0.0,
                    thermal_share: 0.0,
                    sm_clock_mhz: (if i == 2 { low } else { 1790.0 }, 1800.0),
                    ..TrialEnergy::default()
                });
            }
            point(id, 4 * (id + 1), 1000, 500, trials)
        };
        // 1500 MHz is 17% below: not a drop.
        let pts = [noisy(0, 1500.0), noisy(1, 900.0)];
        let flags = detect_points(&pts, &Thresholds::default());
        let text = |id: u32, title: &str| -> Vec<String> {
            flags
                .iter()
                .filter(|f| f.point_id() == Some(id) && f.title() == title)
                .map(ToString::to_string)
                .collect()
        };
        let cause = "Likely cause: the GPU's SM clock fell to 900 MHz in this point, 50% below the run's usual 1800 MHz (trial 3).";
        assert!(text(1, "Noisy point")[0].ends_with(cause), "{flags:?}");
        assert!(
            !text(0, "Noisy point")[0].contains("Likely cause"),
            "{flags:?}"
        );
        assert_eq!(text(1, "GPU held back").len(), 1);
        assert!(text(0, "GPU held back").is_empty(), "{flags:?}");
    }
}
