//! The client's host: name, OS, kernel, CPU, memory and the GPUs `nvidia-smi` lists.

use serde::{Deserialize, Serialize};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// One GPU as `nvidia-smi` reports it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Gpu {
    /// Marketing name.
    pub name: String,
    /// Total memory in MiB.
    pub memory_mib: Option<u64>,
    /// Driver version.
    pub driver: Option<String>,
}

/// The machine qexp ran on (the client, not the server).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HostInfo {
    /// Host name.
    pub hostname: Option<String>,
    /// OS name and version.
    pub os: Option<String>,
    /// Kernel version.
    pub kernel: Option<String>,
    /// CPU architecture.
    pub arch: String,
    /// CPU model string.
    pub cpu_model: Option<String>,
    /// Logical CPUs.
    pub cpus: usize,
    /// Total memory in bytes.
    pub memory_bytes: u64,
    /// GPUs, where `nvidia-smi` answers.
    pub gpus: Vec<Gpu>,
}

/// Fingerprints this host. Never fails: unknown fields are `None`.
pub fn host_info() -> HostInfo {
    let mut sys = sysinfo::System::new();
    sys.refresh_memory();
    sys.refresh_cpu_list(sysinfo::CpuRefreshKind::nothing());
    let cpu_model = sys
        .cpus()
        .first()
        .map(|c| c.brand().trim().to_string())
        .filter(|s| !s.is_empty());
    HostInfo {
        hostname: sysinfo::System::host_name(),
        os: sysinfo::System::long_os_version(),
        kernel: sysinfo::System::kernel_version(),
        arch: std::env::consts::ARCH.to_string(),
        cpu_model,
        cpus: sys.cpus().len(),
        memory_bytes: sys.total_memory(),
        gpus: nvidia_gpus(),
    }
}

/// GPUs from `nvidia-smi`; empty when it is absent, fails or hangs (5 s).
fn nvidia_gpus() -> Vec<Gpu> {
    let child = Command::new("nvidia-smi")
        .args([
            "--query-gpu=name,memory.total,driver_version",
            "--format=csv,noheader,nounits",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn();
    let Ok(mut child) = child else {
        return Vec::new();
    };
    let start = Instant::now();
    loop {
        match child.try_wait() {
            Ok(Some(_)) => break,
            Ok(None) if start.elapsed() < Duration::from_secs(5) => {
                std::thread::sleep(Duration::from_millis(20))
            }
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                return Vec::new();
            }
        }
    }
    let Ok(out) = child.wait_with_output() else {
        return Vec::new();
    };
    if !out.status.success() {
        return Vec::new();
    }
    parse_nvidia_smi(&String::from_utf8_lossy(&out.stdout))
}

fn parse_nvidia_smi(text: &str) -> Vec<Gpu> {
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            let f: Vec<&str> = l.split(',').map(str::trim).collect();
            Gpu {
                name: f.first().copied().unwrap_or("").to_string(),
                memory_mib: f.get(1).and_then(|m| m.parse().ok()),
                driver: f.get(2).map(|d| d.to_string()),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nvidia_smi_csv_is_parsed() {
        let g = parse_nvidia_smi(
            "NVIDIA RTX A6000, 49140, 550.54.15\nNVIDIA RTX A6000, 49140, 550.54.15\n",
        );
        assert_eq!(g.len(), 2);
        assert_eq!(g[0].name, "NVIDIA RTX A6000");
        assert_eq!(g[0].memory_mib, Some(49140));
        assert_eq!(g[1].driver.as_deref(), Some("550.54.15"));
    }

    #[test]
    fn host_info_has_cpus_and_memory() {
        let h = host_info();
        assert!(h.cpus >= 1);
        assert!(h.memory_bytes > 0);
    }
}
