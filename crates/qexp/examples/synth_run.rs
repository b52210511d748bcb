//! Writes a synthetic run folder with N request rows, for measuring
//! `qexp report` at scale (see docs/reports.md "Performance").
//!
//! `cargo run --release --example synth_run -- ROWS OUT_DIR [CHUNKS] [SHARDS]`
//!
//! Rows are spread over a throughput-style sweep (8 concurrency levels × 5
//! trials); each request carries CHUNKS (default 8) chunk arrival offsets.
//! With SHARDS (N > 1) the rows are written as the N shard folders of one
//! run (`--shard K/N`; request i of a (trial, point) in shard i mod N), one
//! line each, for measuring `qexp merge` (scripts/bench-merge.sh).

// Examples may panic: the ban on `unwrap` and `expect` (root Cargo.toml,
// [workspace.lints]) is for the code qexp ships.
#![allow(clippy::unwrap_used, clippy::expect_used)]
// A test tells one story end to end; the 80-line limit is for the code
// qexp ships.
#![allow(clippy::too_many_lines)]

use chrono::Utc;
use qexp_plan::Plan;
use qexp_store::{
    Comparability, Manifest, PointRow, RequestRow, RunStatus, RunWriter, ShardRecord, TargetInfo,
    SCHEMA_VERSION,
};
use std::path::{Path, PathBuf};

const PLAN: &str = r#"[experiment]
name = "synthetic"
version = 1
description = "Synthetic rows for the report benchmark"

[target]
base_url = "http://127.0.0.1:1"

[workload]
input_tokens = 1000
output_tokens = 8

[sweep]
concurrency = [1, 2, 4, 8, 16, 32, 64, 100]

[run]
trials = 5
"#;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() < 3 {
        eprintln!("usage: synth_run ROWS OUT_DIR [CHUNKS] [SHARDS]");
        std::process::exit(2);
    }
    let rows: usize = args[1].parse().expect("ROWS is a number");
    let out = PathBuf::from(&args[2]);
    let chunks: usize = args
        .get(3)
        .map_or(8, |c| c.parse().expect("CHUNKS is a number"));
    let shards: u32 = args
        .get(4)
        .map_or(1, |c| c.parse().expect("SHARDS is a number"));
    for dir in write(rows, &out, chunks, shards.max(1)) {
        println!("{}", dir.display());
    }
}

fn write(total: usize, out: &Path, chunks: usize, shards: u32) -> Vec<PathBuf> {
    let plan = Plan::parse(Path::new("synthetic.toml"), PLAN).expect("valid plan");
    let points = plan.points();
    let trials = plan.trials();
    let now = Utc::now();
    let manifest = Manifest {
        schema_version: SCHEMA_VERSION,
        qexp_version: env!("CARGO_PKG_VERSION").into(),
        run_id: qexp_store::new_run_id(now),
        experiment: plan.name().into(),
        plan_path: "synthetic.toml".into(),
        plan_hash: plan.hash(),
        plan_text: PLAN.into(),
        overrides: Default::default(),
        trials,
        points: points.clone(),
        point_order: (0..trials)
            .map(|_| points.iter().map(|p| p.id).collect())
            .collect(),
        target: TargetInfo {
            base_url: "synthetic".into(),
            model: "synthetic".into(),
            api: qexp_plan::ApiKind::Chat,
            simulated: true,
            sim_profile: Some("synthetic".into()),
            sim_time_scale: Some(1.0),
            api_key_env: None,
        },
        server: None,
        fingerprint: None,
        calibration: Vec::new(),
        git: None,
        host: qexp_provenance::host_info(),
        comparability: Comparability::default(),
        started_at: now,
        ended_at: None,
        status: RunStatus::Running,
        stop_reason: None,
        resumes: Vec::new(),
        client_timing: None,
        deployments: Vec::new(),
        schedule: Vec::new(),
        order: None,
        restart: None,
        baseline: None,
        shard: None,
        merged: None,
        power: Vec::new(),
        import: None,
        saturation_stops: Vec::new(),
    };
    let mut writers: Vec<RunWriter> = (0..shards)
        .map(|k| {
            let mut m = manifest.clone();
            let mut root = out.to_path_buf();
            if shards > 1 {
                m.shard = Some(ShardRecord {
                    index: k,
                    count: shards,
                    rendezvous: None,
                    clock_offset_s: 0.0,
                    clock_rtt_s: None,
                    lost: Vec::new(),
                });
                root = out.join(format!("shard-{k}"));
            }
            RunWriter::create(&root, m).expect("create run")
        })
        .collect();
    let run_id = manifest.run_id.clone();
    let parts = points.len() * trials as usize;
    let per_part = total.div_ceil(parts);
    let mut written = 0usize;
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut noise = || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        (x >> 11) as f64 / (1u64 << 53) as f64
    };
    for trial in 1..=trials {
        for p in &points {
            let n = per_part.min(total - written);
            let mut reqs = Vec::with_capacity(n);
            for i in 0..n {
                let ttft = 0.3 + 0.02 * f64::from(p.concurrency) * (0.9 + 0.2 * noise());
                // Every gap drawn on its own, so the Parquet encoder and the
                // quantile selection see realistic, incompressible offsets.
                let (mut t, mut max_gap) = (ttft, 0.0f64);
                let mut offsets = Vec::with_capacity(chunks);
                for k in 0..chunks {
                    if k > 0 {
                        let g = 0.0136 * (0.5 + noise());
                        max_gap = max_gap.max(g);
                        t += g;
                    }
                    offsets.push(t);
                }
                let e2e = offsets.last().copied().unwrap_or(ttft);
                let gap = (e2e - ttft) / (chunks.max(2) - 1) as f64;
                let sent = 1.8e9 + i as f64 * 0.01;
                reqs.push(RequestRow {
                    run_id: run_id.clone(),
                    client_host: "synthetic".into(),
                    trial,
                    point_id: p.id,
                    point_order: p.id,
                    request_index: i as u32,
                    warmup: false,
                    concurrency: p.concurrency,
                    input_tokens_target: p.input_tokens,
                    output_tokens_target: p.output_tokens,
                    input_tokens_planned: p.input_tokens,
                    output_tokens_planned: p.output_tokens,
                    cached_tokens_expected: 0,
                    prefix_group: None,
                    session: None,
                    turn: None,
                    scheduled_unix_s: sent,
                    sent_unix_s: sent,
                    queue_s: 0.0,
                    headers_s: Some(0.01),
                    ttft_s: Some(ttft),
                    ttft_reasoning_s: None,
                    ttft_answer_s: Some(ttft),
                    e2e_s: Some(e2e),
                    tpot_s: Some((e2e - ttft) / (chunks.max(2) - 1) as f64),
                    end_s: e2e,
                    chunks: chunks as u32,
                    reasoning_chunks: 0,
                    itl_mean_s: Some(gap),
                    itl_max_s: Some(max_gap),
                    chunk_offsets_s: offsets,
                    prompt_tokens: Some(p.input_tokens),
                    completion_tokens: Some(chunks as u32),
                    cached_tokens: Some(0),
                    client_tokens: chunks as u32,
                    output_chars: 5 * chunks as u64,
                    finish_reason: Some("length".into()),
                    http_status: Some(200),
                    error_class: None,
                    error_message: None,
                    retries: 0,
                    deployment: None,
                    deployment_hash: None,
                    start_id: None,
                    answer_hash: Some((i as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15)),
                    reasoning_hash: None,
                    answer_chars: Some(5 * chunks as u64),
                    answer_nonblank_chars: Some(4 * chunks as u64),
                    answer_replacement_chars: Some(0),
                    repeat_period_words: Some(0),
                    repeat_words: Some(0),
                    repeat_chars: Some(0),
                    length_forced: true,
                    answer_text: None,
                    item_id: None,
                    correct: None,
                    parsed: None,
                    ttft_tool_s: None,
                    tool_calls: 0,
                    class: None,
                    shard: (shards > 1).then_some(i as u32 % shards),
                    images: None,
                    image_pixels: None,
                    image_bytes: None,
                });
            }
            let window = n as f64 * 0.01 + 1.0;
            let mut by_shard: Vec<Vec<RequestRow>> = vec![Vec::new(); shards as usize];
            for r in reqs {
                by_shard[r.shard.unwrap_or(0) as usize].push(r);
            }
            for (w, reqs) in writers.iter_mut().zip(&by_shard) {
                let n = reqs.len();
                let point = PointRow {
                    run_id: run_id.clone(),
                    trial,
                    point_id: p.id,
                    point_order: p.id,
                    concurrency: p.concurrency,
                    input_tokens_target: p.input_tokens,
                    output_tokens_target: p.output_tokens,
                    requests_planned: n as u32,
                    requests_done: n as u32,
                    failures: 0,
                    window_start_unix_s: 1.8e9,
                    window_end_unix_s: 1.8e9 + window,
                    output_tokens: (n * chunks) as u64,
                    agg_output_tok_s: Some((n * chunks) as f64 / window),
                    send_lag_max_s: 0.0,
                    prompt_units: 0,
                    invalid_reason: None,
                    ..PointRow::default()
                };
                w.write_point(reqs, &point).expect("write part");
            }
            written += n;
        }
    }
    writers
        .into_iter()
        .map(|w| w.finish(RunStatus::Complete, None).expect("merge parts"))
        .collect()
}
