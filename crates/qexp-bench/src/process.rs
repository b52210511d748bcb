//! What the benchmark reads about its own process: CPU seconds (user +
//! system, all threads, as getrusage's RUSAGE_SELF counts them) and memory
//! from `/proc/self`, and the open-file limit it raises for many streams.

/// User + system CPU seconds of this process so far (10 ms resolution).
pub use qexp_runner::health::process_cpu_s as cpu_s;

/// A `kB` line of `/proc/self/status`, in MB.
fn status_mb(key: &str) -> Option<f64> {
    let s = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = s.lines().find(|l| l.starts_with(key))?;
    let kb: f64 = line[key.len()..]
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .ok()?;
    Some(kb / 1000.0)
}

/// Peak resident memory of this process so far, MB.
pub fn peak_rss_mb() -> Option<f64> {
    status_mb("VmHWM:")
}

/// Resident memory now, MB.
pub fn rss_mb() -> Option<f64> {
    status_mb("VmRSS:")
}

/// The soft and hard open-file limits, from `/proc/self/limits`.
pub fn nofile() -> Option<(u64, u64)> {
    let s = std::fs::read_to_string("/proc/self/limits").ok()?;
    let line = s.lines().find(|l| l.starts_with("Max open files"))?;
    let f: Vec<&str> = line["Max open files".len()..].split_whitespace().collect();
    let num = |x: &str| {
        if x == "unlimited" {
            Some(u64::MAX)
        } else {
            x.parse().ok()
        }
    };
    Some((num(f.first()?)?, num(f.get(1)?)?))
}

/// Raises the soft open-file limit to the hard one (through util-linux's
/// `prlimit`: qexp has no unsafe code to call setrlimit itself); returns the
/// soft limit in force afterwards. Children started later inherit it.
pub fn raise_nofile() -> Option<u64> {
    let (soft, hard) = nofile()?;
    if soft < hard {
        let pid = std::process::id().to_string();
        let hard = if hard == u64::MAX {
            "unlimited".to_string()
        } else {
            hard.to_string()
        };
        let _ = std::process::Command::new("prlimit")
            .args(["--pid", &pid, &format!("--nofile={hard}:{hard}")])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .status();
    }
    nofile().map(|(soft, _)| soft)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn readings_are_plausible() {
        // Spin until 0.2 CPU seconds are counted: one busy thread cannot use
        // more CPU than wall time, and on an idle core it uses about as much.
        let (t0, start) = (cpu_s().unwrap(), std::time::Instant::now());
        let mut x = 0u64;
        while cpu_s().unwrap() - t0 < 0.2 && start.elapsed().as_secs() < 30 {
            for _ in 0..100_000 {
                x = x.wrapping_mul(31).wrapping_add(7);
            }
        }
        std::hint::black_box(x);
        let (used, wall) = (cpu_s().unwrap() - t0, start.elapsed().as_secs_f64());
        assert!(used >= 0.2, "{used} CPU s counted in {wall} s of spinning");
        // Ticks of 10 ms: the count may lead the wall clock by one tick.
        assert!(
            used <= wall + 0.011,
            "{used} CPU s counted in only {wall} s"
        );
        let (rss, peak) = (rss_mb().unwrap(), peak_rss_mb().unwrap());
        assert!(rss > 1.0 && peak >= rss, "rss {rss} MB, peak {peak} MB");
        assert!(raise_nofile().unwrap_or(0) >= 256);
    }
}
