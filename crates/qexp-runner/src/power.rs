//! `[power]` in a run: the sampler of a target's (or a deployment's) GPUs
//! started before anything is measured, and each (trial, point) window's
//! energy and GPU health put into its point row. The sampling and the
//! arithmetic are qexp-power's; this decides which source, when, and what
//! a failure to start means (the plan's `required`).

use crate::error::RunError;
use qexp_plan::{DeploymentSpec, PlanFile, PowerSection, PowerSource};
use qexp_power::{over_window, Sampler, SamplerConfig, SourceKind, Window};
use qexp_store::PointRow;
use std::time::Duration;

/// A running sampler and the gap limit its windows are judged by.
pub(crate) struct Power {
    sampler: Sampler,
    gap_limit_s: f64,
}

/// Starts the sampler `[power]` asks for (with `deployment`'s own URL and
/// GPUs where it names them). `None` when the plan has no `[power]`, or
/// when no source started and the plan does not require one (said on the
/// terminal); an error when it does.
pub(crate) async fn start(
    plan: &PlanFile,
    deployment: Option<&DeploymentSpec>,
) -> Result<Option<Power>, RunError> {
    let Some(p) = plan.power.as_ref().map(|p| p.get_ref()) else {
        return Ok(None);
    };
    let gpus = deployment
        .and_then(|d| d.gpus.as_ref())
        .map(|g| {
            g.get_ref()
                .iter()
                .map(qexp_plan::GpuName::as_string)
                .collect()
        })
        .unwrap_or_else(|| p.gpu_names());
    let url = deployment
        .and_then(|d| d.power_url.as_ref())
        .or(p.url.as_ref())
        .map(|u| u.get_ref().clone());
    let mut why = Vec::new();
    for source in sources(p, url) {
        let cfg = SamplerConfig {
            source,
            gpus: gpus.clone(),
            interval: Duration::from_millis(*p.interval_ms.get_ref()),
        };
        match Sampler::start(&cfg).await {
            Ok(sampler) => {
                let i = sampler.info();
                tracing::info!(
                    target: crate::PROGRESS_TARGET,
                    "qexp: power: {} ({}) every {} ms, GPUs {}",
                    i.kind,
                    i.location,
                    i.interval_ms,
                    gpus.join(", ")
                );
                return Ok(Some(Power {
                    sampler,
                    gap_limit_s: *p.gap_limit_s.get_ref(),
                }));
            }
            Err(e) => why.push(e),
        }
    }
    let said: Vec<String> = why.iter().map(|e| qexp_types::error::chain(e)).collect();
    let name = deployment.map(|d| d.name.get_ref().clone());
    let whose = crate::error::of_deployment(name.as_deref());
    if p.required {
        return Err(RunError::PowerRequired {
            deployment: name,
            said,
        });
    }
    let said = said.join("; ");
    tracing::warn!(
        target: crate::PROGRESS_TARGET,
        "qexp: power: no source{whose} could be read, going on without energy (power.required = false): {said}"
    );
    Ok(None)
}

/// The sources to try, in order.
fn sources(p: &PowerSection, url: Option<String>) -> Vec<SourceKind> {
    let smi = SourceKind::NvidiaSmi {
        command: p.command.clone(),
    };
    match (*p.source.get_ref(), url) {
        (PowerSource::Dcgm, Some(url)) => vec![SourceKind::Dcgm { url }],
        (PowerSource::Dcgm, None) => Vec::new(),
        (PowerSource::NvidiaSmi, _) => vec![smi],
        (PowerSource::Nvml, _) => vec![SourceKind::Nvml],
        (PowerSource::Auto, url) => url
            .map(|url| SourceKind::Dcgm { url })
            .into_iter()
            .chain([SourceKind::Nvml, smi])
            .collect(),
    }
}

impl Power {
    /// What the source is, for the manifest.
    pub(crate) fn info(&self, deployment: Option<&str>) -> qexp_types::PowerSourceInfo {
        qexp_types::PowerSourceInfo {
            deployment: deployment.map(str::to_string),
            ..self.sampler.info().clone()
        }
    }

    /// Fills `prow`'s energy and GPU health over its window. An XID error
    /// during the window makes the point invalid; anything else wrong with
    /// the samples makes only its energy invalid.
    pub(crate) async fn fill(&self, prow: &mut PointRow) {
        let (start, end) = (prow.window_start_unix_s, prow.window_end_unix_s);
        prow.gpus = Some(self.sampler.info().gpus.len() as u32);
        if !(start.is_finite() && end > start) {
            prow.energy_invalid_reason = Some("the point has no measured window".into());
            return;
        }
        // Without a sample after the end, the window says which GPU stopped.
        let _ = self.sampler.wait_past(end).await;
        let samples = self.sampler.since(start);
        let names: Vec<String> = self
            .sampler
            .info()
            .gpus
            .iter()
            .map(|g| g.name.clone())
            .collect();
        let w = Window {
            start,
            end,
            gap_limit_s: self.gap_limit_s,
        };
        let e = over_window(&samples, &names, &w);
        self.sampler.forget_before(end);
        prow.energy_j = e.energy_j;
        prow.energy_counter_j = e.counter_j;
        prow.energy_integrated_j = e.integrated_j;
        prow.power_avg_w = e.avg_power_w;
        prow.power_peak_w = e.peak_power_w;
        prow.energy_invalid_reason = e.invalid_reason.clone();
        prow.energy_note = e.note.clone();
        prow.gpu_power_capped_share = e.power_capped_share;
        prow.gpu_thermal_share = e.thermal_share;
        prow.gpu_sm_clock_min_mhz = e.sm_clock_min_mhz;
        prow.gpu_sm_clock_max_mhz = e.sm_clock_max_mhz;
        prow.gpu_xid = e.xid;
        prow.energy_gpus_json = serde_json::to_string(&e.gpus).ok();
        if let (Some(x), None) = (e.xid, &prow.invalid_reason) {
            prow.invalid_reason = Some(format!(
                "a GPU reported XID error {x} during this point (a driver or hardware fault): its numbers are not the deployment's"
            ));
        }
    }

    /// Stops sampling (and the nvidia-smi process, where there is one).
    pub(crate) async fn stop(self) {
        self.sampler.stop().await;
    }
}
