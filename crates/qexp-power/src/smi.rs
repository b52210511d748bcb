//! `nvidia-smi --query-gpu=… --format=csv,noheader,nounits --loop-ms=N --id=GPUS`
//! as a child process: one CSV line per GPU every N ms, stamped when qexp
//! reads it. nvidia-smi has no energy counter in its query fields, so its
//! energy is the integrated power. A field it cannot read prints as
//! `[N/A]` or `[Not Supported]`, read as absent.

use crate::sample::{Reading, Throttle};

/// The fields asked for, in the order parsed below.
pub const QUERY: &str = "index,uuid,power.draw,clocks.sm,clocks.mem,temperature.gpu,memory.used,clocks_throttle_reasons.active";

/// What identifies the GPUs and their driver, asked once at start.
pub const IDENTIFY: &str = "index,uuid,name,driver_version";

/// The arguments of the sampling process for `gpus` every `interval_ms`.
pub fn sampling_args(gpus: &[String], interval_ms: u64) -> Vec<String> {
    vec![
        format!("--query-gpu={QUERY}"),
        "--format=csv,noheader,nounits".into(),
        format!("--loop-ms={interval_ms}"),
        format!("--id={}", gpus.join(",")),
    ]
}

/// The arguments of the identifying call.
pub fn identify_args(gpus: &[String]) -> Vec<String> {
    vec![
        format!("--query-gpu={IDENTIFY}"),
        "--format=csv,noheader,nounits".into(),
        format!("--id={}", gpus.join(",")),
    ]
}

/// One line of the sampling process, as the reading of whichever of `gpus`
/// (index or UUID) it is about; `None` for a line of another GPU or one
/// that does not parse.
pub fn parse_line(line: &str, gpus: &[String]) -> Option<Reading> {
    let f: Vec<&str> = line.split(',').map(str::trim).collect();
    if f.len() < 8 {
        return None;
    }
    let gpu = gpus
        .iter()
        .find(|g| g.as_str() == f[0] || g.as_str() == f[1])?;
    let num = |s: &str| s.parse::<f64>().ok().filter(|v| v.is_finite());
    let mask = f[7]
        .strip_prefix("0x")
        .and_then(|h| u64::from_str_radix(h, 16).ok());
    Some(Reading {
        gpu: gpu.clone(),
        power_w: num(f[2]),
        sm_clock_mhz: num(f[3]),
        mem_clock_mhz: num(f[4]),
        temp_c: num(f[5]),
        mem_used_mib: num(f[6]),
        throttle: mask.map(Throttle::from_mask),
        ..Reading::default()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_a_line_and_not_applicable_fields() {
        let gpus = vec!["1".to_string()];
        let r = parse_line(
            "1, GPU-b, 287.41, 1740, 8001, 71, 40211, 0x0000000000000004",
            &gpus,
        )
        .unwrap();
        assert_eq!(r.gpu, "1");
        assert_eq!(r.power_w, Some(287.41));
        assert_eq!(r.sm_clock_mhz, Some(1740.0));
        assert_eq!(
            r.throttle,
            Some(Throttle {
                power: true,
                thermal: false
            })
        );
        let na = parse_line(
            "1, GPU-b, [N/A], 1740, 8001, 71, 40211, [Not Supported]",
            &gpus,
        )
        .unwrap();
        assert_eq!(na.power_w, None);
        assert_eq!(na.throttle, None);
        assert!(parse_line("0, GPU-a, 100, 1, 1, 1, 1, 0x0", &gpus).is_none());
        assert!(parse_line("garbage", &gpus).is_none());
    }
}
