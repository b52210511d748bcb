//! GPU health as a cause: a point whose GPUs were held back (power-capped
//! or throttled by temperature) for a material share of its measured
//! window gets a flag of its own, and the noise, outlier and wrong-way
//! flags at that point (or its neighbour) name it as a likely cause,
//! since a throttled GPU is slower than the deployment is.

use super::Flag;
use crate::metrics::PointSummary;
use serde::Serialize;
use std::fmt;

/// A share of the window held back beyond which it counts (5%): below it,
/// brief capping at a load step moves no median.
pub const HELD_BACK_SHARE: f64 = 0.05;

/// Why a point's GPUs ran slower than they could, over its trials.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GpuCause {
    /// The largest share of a trial's window a GPU was power-capped.
    pub power_capped_share: f64,
    /// The largest share held back by temperature.
    pub thermal_share: f64,
    /// The trials held back beyond [`HELD_BACK_SHARE`].
    pub trials: Vec<u32>,
}

impl GpuCause {
    /// The cause at `p`, when a trial's GPUs were held back beyond [`HELD_BACK_SHARE`].
    pub fn of(p: &PointSummary) -> Option<GpuCause> {
        let share = |v: f64| if v.is_finite() { v } else { 0.0 };
        let mut out = GpuCause {
            power_capped_share: 0.0,
            thermal_share: 0.0,
            trials: Vec::new(),
        };
        for t in &p.trials {
            let Some(e) = &t.energy else { continue };
            let (pw, th) = (share(e.power_capped_share), share(e.thermal_share));
            if pw.max(th) >= HELD_BACK_SHARE {
                out.trials.push(t.trial);
                out.power_capped_share = out.power_capped_share.max(pw);
                out.thermal_share = out.thermal_share.max(th);
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
        let trials: Vec<String> = self.trials.iter().map(u32::to_string).collect();
        write!(
            f,
            "the GPU was {} of this point (trial {})",
            held.join(" and "),
            trials.join(", ")
        )
    }
}

/// One flag per point whose GPUs were held back.
pub fn detect(points: &[PointSummary]) -> Vec<Flag> {
    points
        .iter()
        .filter_map(|p| {
            Some(Flag::GpuHeldBack {
                point_id: p.point.id,
                cause: GpuCause::of(p)?,
            })
        })
        .collect()
}

/// Names the cause in the noise, outlier and wrong-way flags of a point
/// whose GPUs were held back (a wrong-way flag is shown at its later point).
pub fn name_causes(flags: &mut [Flag], points: &[PointSummary]) {
    let cause = |id: u32| {
        points
            .iter()
            .find(|p| p.point.id == id)
            .and_then(GpuCause::of)
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
}
