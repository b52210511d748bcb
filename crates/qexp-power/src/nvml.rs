//! NVML, the driver's own library, through `nvml-wrapper`: it loads
//! `libnvidia-ml.so` when qexp asks for it, so qexp builds and runs on a
//! machine without a GPU, where starting this source fails with one
//! sentence. Its total-energy counter (mJ since the driver loaded, Volta
//! and newer) and power draw are read with the clocks, temperature, memory
//! and throttle reasons every interval, on tokio's blocking pool (NVML calls
//! block).

use crate::sample::{Reading, Throttle};
use crate::source::{missing, push, Buffer, PowerGpu, SamplerConfig, SourceInfo, Started};
use crate::PowerError;
use nvml_wrapper::enum_wrappers::device::{Clock, TemperatureSensor};
use nvml_wrapper::{Device, Nvml};
use std::sync::Arc;

/// Loads NVML, finds every GPU the plan names, and starts reading them.
pub(crate) async fn start(cfg: &SamplerConfig, buf: Buffer) -> Result<Started, PowerError> {
    let gpus = cfg.gpus.clone();
    let loaded = tokio::task::spawn_blocking(move || load(&gpus))
        .await
        .map_err(|e| PowerError::NoGpu(Box::new(e)))??;
    let (nvml, info) = loaded;
    let nvml = Arc::new(nvml);
    let info = SourceInfo {
        interval_ms: cfg.interval.as_millis() as u64,
        ..info
    };
    let (gpus, interval) = (cfg.gpus.clone(), cfg.interval);
    let task = tokio::spawn(async move {
        let mut tick = tokio::time::interval(interval);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tick.tick().await;
            let (n, g) = (nvml.clone(), gpus.clone());
            if let Ok(r) = tokio::task::spawn_blocking(move || read_all(&n, &g)).await {
                push(&buf, r);
            }
        }
    });
    Ok(Started {
        task,
        child: None,
        info,
    })
}

/// NVML loaded, and what it says about the GPUs.
fn load(gpus: &[String]) -> Result<(Nvml, SourceInfo), PowerError> {
    let nvml = Nvml::init().map_err(|e| PowerError::NoGpu(Box::new(e)))?;
    let mut named = Vec::new();
    for g in gpus {
        let Ok(d) = device(&nvml, g) else {
            let count = nvml.device_count().unwrap_or(0);
            let has: Vec<String> = (0..count)
                .filter_map(|i| {
                    let d = nvml.device_by_index(i).ok()?;
                    Some(format!("{i} ({})", d.uuid().ok()?))
                })
                .collect();
            let cfg = SamplerConfig {
                source: crate::SourceKind::Nvml,
                gpus: gpus.to_vec(),
                interval: std::time::Duration::ZERO,
            };
            missing("NVML", &cfg, &has)?;
            continue;
        };
        named.push(PowerGpu {
            name: g.clone(),
            uuid: d.uuid().ok(),
            model: d.name().ok(),
        });
    }
    let info = SourceInfo {
        kind: "nvml".into(),
        location: "libnvidia-ml".into(),
        version: nvml
            .sys_driver_version()
            .ok()
            .map(|v| format!("driver {v}")),
        interval_ms: 0,
        gpus: named,
        deployment: None,
    };
    Ok((nvml, info))
}

/// The device a plan's name means: an index, or a UUID.
fn device<'n>(nvml: &'n Nvml, name: &str) -> Result<Device<'n>, nvml_wrapper::error::NvmlError> {
    match name.parse::<u32>() {
        Ok(i) => nvml.device_by_index(i),
        Err(_) => nvml.device_by_uuid(name),
    }
}

/// One read of every GPU that still answers.
fn read_all(nvml: &Nvml, gpus: &[String]) -> Vec<Reading> {
    gpus.iter()
        .filter_map(|g| {
            let d = device(nvml, g).ok()?;
            Some(Reading {
                gpu: g.clone(),
                power_w: d.power_usage().ok().map(|mw| f64::from(mw) / 1000.0),
                energy_j: d
                    .total_energy_consumption()
                    .ok()
                    .map(|mj| mj as f64 / 1000.0),
                sm_clock_mhz: d.clock_info(Clock::SM).ok().map(f64::from),
                mem_clock_mhz: d.clock_info(Clock::Memory).ok().map(f64::from),
                temp_c: d.temperature(TemperatureSensor::Gpu).ok().map(f64::from),
                mem_used_mib: d.memory_info().ok().map(|m| m.used as f64 / 1048576.0),
                throttle: d
                    .current_throttle_reasons()
                    .ok()
                    .map(|r| Throttle::from_mask(r.bits())),
                ..Reading::default()
            })
        })
        .collect()
}
