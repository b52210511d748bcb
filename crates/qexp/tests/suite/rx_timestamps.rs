//! Which clock timed a run's arrivals is recorded per run: the kernel's
//! receive stamps where the platform has them, the fallback (each read
//! stamped when it returns) when `QEXP_RX_TIMESTAMPS=off` switches them off.
//! The runs go through the real binary, so the switch is read as users set it.

use qexp_client::ClientTiming;

const PLAN: &str = r#"
[experiment]
name = "rx-stamps"
version = 1

[target]
base_url = "sim:exact"

[workload]
input_tokens = 40
output_tokens = 4

[run]
requests = 4
warmup_requests = 0
trials = 1
"#;

/// The `client_timing` a run of [`PLAN`] records, with `QEXP_RX_TIMESTAMPS`
/// set to `switch` (or unset).
fn recorded_timing(switch: Option<&str>) -> Option<ClientTiming> {
    let _serial = crate::common::shared_blocking();
    let tmp = tempfile::tempdir().unwrap();
    let plan = tmp.path().join("rx.toml");
    std::fs::write(&plan, PLAN).unwrap();
    let results = tmp.path().join("results");
    let mut cmd = crate::common::qexp(&[
        "run",
        plan.to_str().unwrap(),
        "--out",
        results.to_str().unwrap(),
        "--no-report",
    ]);
    match switch {
        Some(v) => cmd.env("QEXP_RX_TIMESTAMPS", v),
        None => cmd.env_remove("QEXP_RX_TIMESTAMPS"),
    };
    let out = cmd.output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let run = std::fs::read_dir(results.join("rx-stamps"))
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    qexp_store::read_manifest(&run).unwrap().client_timing
}

#[test]
fn switched_off_the_run_records_the_fallback() {
    assert_eq!(
        recorded_timing(Some("off")),
        Some(ClientTiming::Http1FromWire)
    );
}

#[cfg(target_os = "linux")]
#[test]
fn on_linux_the_run_records_kernel_stamps() {
    assert_eq!(recorded_timing(None), Some(ClientTiming::Http1KernelStamps));
}
