//! Complete runs written to disk from a plan and a formula, without a
//! server: deterministic rows for notebooks, the workspace index and its
//! benchmark (every number is the formula's, so tests know them exactly).

use crate::ManifestFixture;
use qexp_plan::{Plan, Point};
use qexp_store::{PointRow, RequestRow, RunStatus, RunWriter};
use std::path::{Path, PathBuf};

/// A request's timing: TTFT and per-request decode rate.
pub type Timing = fn(&SynthRun, u32, &Point, u32) -> (f64, f64);

/// A request's answer length, tokens.
pub type Answer = fn(&SynthRun, u32, &Point, u32) -> u32;

/// Every answer as long as the plan asks (answers forced to length).
pub fn planned_length(_: &SynthRun, _: u32, p: &Point, _: u32) -> u32 {
    p.output_tokens
}

/// A run to write: the plan it ran, when, and the timing of every request.
#[derive(Clone)]
pub struct SynthRun {
    /// Experiment name (the plan's unless set).
    pub experiment: String,
    /// Run id.
    pub run_id: String,
    /// Start, RFC 3339.
    pub started_at: String,
    /// The plan's text (its points and trials are the run's).
    pub plan_text: String,
    /// Trials, overriding the plan's.
    pub trials: u32,
    /// The comparability fingerprint's workload hash.
    pub workload_hash: String,
    /// Git commit of the plan's repository.
    pub git_commit: String,
    /// A level the timing formula may scale by (e.g. 1.1 for a 10% slower run).
    pub level: f64,
    /// (run, trial, point, request index) → (TTFT s, decode tok/s).
    pub timing: Timing,
    /// (run, trial, point, request index) → answer tokens (the plan's
    /// length unless set; a shorter answer ended with `stop`).
    pub answer: Answer,
}

/// TTFT growing with input and queueing with concurrency, scaled by the
/// run's level, with a small deterministic wobble by trial and request.
pub fn founding_like(run: &SynthRun, trial: u32, p: &Point, i: u32) -> (f64, f64) {
    let wobble = 1.0 + 0.01 * f64::from((trial * 7 + i * 3) % 5) - 0.02;
    let queue = if p.concurrency > 8 {
        0.6 * f64::from(p.concurrency - 8)
    } else {
        0.0
    };
    let ttft = (0.3 + f64::from(p.input_tokens) / 7000.0 + queue) * run.level * wobble;
    let decode =
        (73.5 - 0.2 * f64::from(p.concurrency.min(100)) - f64::from(p.input_tokens) / 12000.0)
            / run.level;
    (ttft, decode)
}

impl SynthRun {
    /// A run of `plan_text` with id `run_id`, started at `started_at`, the founding-like timing.
    pub fn new(plan_text: &str, run_id: &str, started_at: &str) -> SynthRun {
        let plan = Plan::parse(Path::new("plan.toml"), plan_text)
            .unwrap_or_else(|e| panic!("synthetic plan: {e}"));
        SynthRun {
            experiment: plan.name().to_string(),
            run_id: run_id.to_string(),
            started_at: started_at.to_string(),
            plan_text: plan_text.to_string(),
            trials: plan.trials(),
            workload_hash: plan.hash(),
            git_commit: "0123456789abcdef0123456789abcdef01234567".into(),
            level: 1.0,
            timing: founding_like,
            answer: planned_length,
        }
    }

    /// Writes the run as a complete run folder under `root`; returns it.
    pub fn write(&self, root: &Path) -> PathBuf {
        let plan = Plan::parse(Path::new("plan.toml"), &self.plan_text)
            .unwrap_or_else(|e| panic!("synthetic plan: {e}"));
        let points = plan.points();
        let manifest = ManifestFixture::new(&self.experiment, &points, self.trials)
            .simulated("fast", 0.05)
            .with("run_id", &self.run_id)
            .with("started_at", &self.started_at)
            .with("plan_path", format!("experiments/{}.toml", self.experiment))
            .with("plan_text", &self.plan_text)
            .with("plan_hash", plan.hash())
            .with("comparability.workload_hash", &self.workload_hash)
            .with(
                "git",
                serde_json::json!({"commit": self.git_commit, "branch": "main", "dirty": false, "remote": null}),
            )
            .build();
        let mut w = RunWriter::create(root, manifest).unwrap_or_else(|e| panic!("{e}"));
        for trial in 1..=self.trials {
            for p in &points {
                // Warm-ups first, as the runner writes them.
                let reqs: Vec<RequestRow> = (0..p.warmup + p.requests)
                    .map(|i| RequestRow {
                        warmup: i < p.warmup,
                        ..self.request(trial, p, i)
                    })
                    .collect();
                let measured = reqs.iter().filter(|r| !r.warmup);
                let first = measured
                    .clone()
                    .map(|r| r.sent_unix_s)
                    .fold(f64::INFINITY, f64::min);
                let last = measured
                    .map(|r| r.sent_unix_s + r.end_s)
                    .fold(0.0, f64::max);
                let tokens: u64 = (p.warmup..p.warmup + p.requests)
                    .map(|i| u64::from((self.answer)(self, trial, p, i)))
                    .sum();
                let point = PointRow {
                    run_id: self.run_id.clone(),
                    trial,
                    point_id: p.id,
                    point_order: p.id,
                    concurrency: p.concurrency,
                    input_tokens_target: p.input_tokens,
                    output_tokens_target: p.output_tokens,
                    requests_planned: p.requests,
                    requests_done: p.requests,
                    window_start_unix_s: first,
                    window_end_unix_s: last,
                    output_tokens: tokens,
                    agg_output_tok_s: Some(tokens as f64 / (last - first)),
                    ..PointRow::default()
                };
                w.write_point(&reqs, &point)
                    .unwrap_or_else(|e| panic!("{e}"));
            }
        }
        w.finish(RunStatus::Complete, None)
            .unwrap_or_else(|e| panic!("{e}"))
    }

    fn request(&self, trial: u32, p: &Point, i: u32) -> RequestRow {
        let (ttft, decode) = (self.timing)(self, trial, p, i);
        let answer = (self.answer)(self, trial, p, i);
        let out = answer.max(2);
        let e2e = ttft + f64::from(out - 1) / decode;
        let offsets: Vec<f64> = (0..4)
            .map(|k| ttft + (e2e - ttft) * f64::from(k) / 3.0)
            .collect();
        // Requests of a point go out in waves of `concurrency`.
        let wave = f64::from(i / p.concurrency.max(1));
        let sent = 1.8e9 + f64::from(trial) * 1000.0 + f64::from(p.id) * 100.0 + wave * e2e;
        RequestRow {
            run_id: self.run_id.clone(),
            client_host: "synthetic".into(),
            trial,
            point_id: p.id,
            point_order: p.id,
            request_index: i,
            concurrency: p.concurrency,
            input_tokens_target: p.input_tokens,
            output_tokens_target: p.output_tokens,
            input_tokens_planned: p.input_tokens,
            output_tokens_planned: p.output_tokens,
            scheduled_unix_s: sent,
            sent_unix_s: sent,
            headers_s: Some(0.01),
            ttft_s: Some(ttft),
            ttft_answer_s: Some(ttft),
            e2e_s: Some(e2e),
            tpot_s: Some(1.0 / decode),
            end_s: e2e,
            chunks: 4,
            itl_mean_s: Some((e2e - ttft) / 3.0),
            itl_max_s: Some((e2e - ttft) / 3.0),
            chunk_offsets_s: offsets,
            prompt_tokens: Some(p.input_tokens),
            completion_tokens: Some(answer),
            cached_tokens: Some(0),
            client_tokens: answer,
            output_chars: 4 * u64::from(answer),
            finish_reason: Some(
                if answer < p.output_tokens {
                    "stop"
                } else {
                    "length"
                }
                .into(),
            ),
            http_status: Some(200),
            ..RequestRow::default()
        }
    }
}
