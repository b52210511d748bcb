//! NVIDIA's DCGM exporter: a Prometheus endpoint (`:9400/metrics` by
//! default) with one series per GPU and field, labelled `gpu` (the index)
//! and `UUID`. The fields qexp reads, with their units as the exporter
//! publishes them; any may be missing (the exporter's field list is
//! configurable), and a field that shows up only in the middle of a run is
//! judged by the window's arithmetic, never a crash (AIPerf's telemetry
//! failed exactly there).

use crate::sample::Reading;
use qexp_client::metrics::Exposition;

/// Power draw, W.
pub const POWER: &str = "DCGM_FI_DEV_POWER_USAGE";
/// Energy since the driver loaded, mJ.
pub const ENERGY: &str = "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION";
/// SM clock, MHz.
pub const SM_CLOCK: &str = "DCGM_FI_DEV_SM_CLOCK";
/// Memory clock, MHz.
pub const MEM_CLOCK: &str = "DCGM_FI_DEV_MEM_CLOCK";
/// GPU temperature, °C.
pub const TEMP: &str = "DCGM_FI_DEV_GPU_TEMP";
/// Frame buffer used, MiB.
pub const FB_USED: &str = "DCGM_FI_DEV_FB_USED";
/// Time held back by the power limit, µs (counter).
pub const POWER_VIOLATION: &str = "DCGM_FI_DEV_POWER_VIOLATION";
/// Time held back by temperature, µs (counter).
pub const THERMAL_VIOLATION: &str = "DCGM_FI_DEV_THERMAL_VIOLATION";
/// The last XID error.
pub const XID: &str = "DCGM_FI_DEV_XID_ERRORS";

/// The readings of the GPUs named in `gpus` (an index or a UUID each), in
/// their order, from one scrape; a GPU the exposition lacks is left out.
pub fn readings(text: &str, gpus: &[String]) -> Vec<Reading> {
    let e = Exposition::parse(text);
    let mut out: Vec<Reading> = gpus
        .iter()
        .map(|g| Reading {
            gpu: g.clone(),
            ..Reading::default()
        })
        .collect();
    let mut seen = vec![false; gpus.len()];
    for s in &e.samples {
        let label = |k: &str| {
            s.labels
                .iter()
                .find(|(n, _)| n == k)
                .map(|(_, v)| v.as_str())
        };
        let Some(i) = gpus
            .iter()
            .position(|g| Some(g.as_str()) == label("gpu") || Some(g.as_str()) == label("UUID"))
        else {
            continue;
        };
        let r = &mut out[i];
        let v = Some(s.value).filter(|v| v.is_finite());
        let slot = match s.name.as_str() {
            POWER => &mut r.power_w,
            ENERGY => {
                r.energy_j = v.map(|mj| mj / 1000.0);
                seen[i] = true;
                continue;
            }
            SM_CLOCK => &mut r.sm_clock_mhz,
            MEM_CLOCK => &mut r.mem_clock_mhz,
            TEMP => &mut r.temp_c,
            FB_USED => &mut r.mem_used_mib,
            POWER_VIOLATION => {
                r.power_violation_s = v.map(|us| us / 1e6);
                seen[i] = true;
                continue;
            }
            THERMAL_VIOLATION => {
                r.thermal_violation_s = v.map(|us| us / 1e6);
                seen[i] = true;
                continue;
            }
            XID => &mut r.xid,
            _ => continue,
        };
        *slot = v;
        seen[i] = true;
    }
    out.into_iter()
        .zip(seen)
        .filter_map(|(r, s)| s.then_some(r))
        .collect()
}

/// The GPUs an exposition has, as `index (UUID)`: what an error names when
/// the plan asks for one it lacks.
pub fn gpus_listed(text: &str) -> Vec<String> {
    let mut out: Vec<String> = Exposition::parse(text)
        .samples
        .iter()
        .filter(|s| s.name.starts_with("DCGM_FI_"))
        .filter_map(|s| {
            let l = |k: &str| {
                s.labels
                    .iter()
                    .find(|(n, _)| n == k)
                    .map(|(_, v)| v.clone())
            };
            Some(match (l("gpu")?, l("UUID")) {
                (g, Some(u)) => format!("{g} ({u})"),
                (g, None) => g,
            })
        })
        .collect();
    out.sort();
    out.dedup();
    out
}

/// The exporter's driver version label, where it publishes one.
pub fn driver_version(text: &str) -> Option<String> {
    Exposition::parse(text).samples.iter().find_map(|s| {
        s.labels
            .iter()
            .find(|(k, _)| k == "DCGM_FI_DRIVER_VERSION")
            .map(|(_, v)| v.clone())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_named_gpus_by_index_or_uuid_and_converts_units() {
        let text = "# TYPE DCGM_FI_DEV_POWER_USAGE gauge\n\
            DCGM_FI_DEV_POWER_USAGE{gpu=\"0\",UUID=\"GPU-a\",modelName=\"RTX A6000\"} 301.5\n\
            DCGM_FI_DEV_POWER_USAGE{gpu=\"1\",UUID=\"GPU-b\"} 120\n\
            DCGM_FI_DEV_POWER_USAGE{gpu=\"2\",UUID=\"GPU-c\"} 99\n\
            DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION{gpu=\"0\",UUID=\"GPU-a\"} 5000\n\
            DCGM_FI_DEV_POWER_VIOLATION{gpu=\"1\",UUID=\"GPU-b\"} 2500000\n";
        let r = readings(text, &["0".into(), "GPU-b".into(), "7".into()]);
        assert_eq!(r.len(), 2, "GPU 7 is absent, GPU 2 not asked for");
        assert_eq!(r[0].gpu, "0");
        assert_eq!(r[0].power_w, Some(301.5));
        assert_eq!(r[0].energy_j, Some(5.0));
        assert_eq!(r[1].gpu, "GPU-b");
        assert_eq!(r[1].power_w, Some(120.0));
        assert_eq!(r[1].energy_j, None);
        assert_eq!(r[1].power_violation_s, Some(2.5));
        assert_eq!(
            gpus_listed(text),
            vec!["0 (GPU-a)", "1 (GPU-b)", "2 (GPU-c)"]
        );
    }
}
