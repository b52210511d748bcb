//! Writes N small complete runs of two experiments under a results root, one
//! hour apart, for measuring the workspace index (`scripts/bench-index.sh`)
//! and for the browser check (`scripts/browser-check.sh`).
//!
//! `cargo run --release --example synth_runs -- N RESULTS_DIR`
//!
//! Each run: 4 concurrency levels × 3 trials, 1–64 requests per point
//! (85 measured requests per trial). TTFT steps up 20% at 60% of each
//! experiment's history, so the index has a step to mark.

// Examples may panic: the ban on `unwrap` and `expect` (root Cargo.toml,
// [workspace.lints]) is for the code qexp ships.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use qexp_testkit::SynthRun;
use std::path::PathBuf;

const PLAN: &str = r#"[experiment]
name = "EXPERIMENT"
version = 1
description = "Synthetic runs for the workspace index benchmark"

[target]
base_url = "sim:fast"

[workload]
input_tokens = 1000
output_tokens = 64

[sweep]
concurrency = [1, 4, 16, 64]

[run]
requests = "1x"
warmup_requests = 0
trials = 3
"#;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let (Some(n), Some(out)) = (args.get(1).and_then(|n| n.parse::<u32>().ok()), args.get(2))
    else {
        eprintln!("usage: synth_runs N RESULTS_DIR");
        std::process::exit(2);
    };
    let out = PathBuf::from(out);
    let experiments = ["tput-a", "tput-b"];
    for k in 0..n {
        let e = experiments[(k % 2) as usize];
        let i = k / 2;
        let per = n.div_ceil(2);
        let step = if i * 5 >= per * 3 { 1.2 } else { 1.0 };
        // A small run-to-run wobble, deterministic.
        let wobble = 1.0 + 0.01 * f64::from((i * 7) % 5) / 4.0 - 0.005;
        let hours = i64::from(k);
        let start =
            chrono::DateTime::from_timestamp(1_796_000_000 + hours * 3600, 0).unwrap_or_default();
        let id = format!("{}-{k:06}", start.format("%Y%m%dT%H%M%SZ"));
        let plan = PLAN.replace("EXPERIMENT", e);
        SynthRun {
            level: step * wobble,
            ..SynthRun::new(&plan, &id, &start.to_rfc3339())
        }
        .write(&out);
    }
    println!("{}", out.display());
}
