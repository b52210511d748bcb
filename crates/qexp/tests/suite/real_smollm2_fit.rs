//! `qexp fit` on a real model answering real prompts: SmolLM2-135M-Instruct
//! served by llama.cpp on CPU (scripts/real-servers, `.ci/run` exports
//! QEXP_SMOLLM2_URL). The same questions are asked bare (about 50 tokens
//! with the chat template) and after a passage of context (about 230), each
//! at concurrency 1–4, once with the answers' lengths forced (`ignore_eos`)
//! and once where the model stops when it is done. Each kind is fitted on
//! concurrency 1 and 2 at both lengths (two lengths, so prefill compute is
//! told from fixed latency) and predicts 3 and 4. The held-out error table
//! and the intervals' coverage are printed; TPOT and E2E must be within
//! 20%, TTFT and its p90 within 30% (docs/model.md "Measured against
//! SmolLM2"). Skips without the server. The model misses these bounds
//! today, so the test is ignored (run it with `--ignored`): it takes about
//! 13 minutes on 2 cores.

use crate::real_servers::server;
use qexp_model::{Check, FitOptions, ModelMetric, Observation};
use qexp_runner::{run, RunOptions};
use std::path::Path;

/// Questions a user asks, sent as they are (a nonce before each, so no
/// request reuses another's prompt cache).
const PROMPTS: &[&str] = &[
    "What is the chemical symbol for gold?",
    "Name three primary colors.",
    "What is the boiling point of water in Celsius?",
    "Explain in one sentence what a compiler does.",
    "Give me a short tip for sleeping better.",
    "Why is the sky blue?",
    "Write a haiku about autumn leaves.",
    "What does a CPU cache do?",
    "Suggest a name for a small bakery.",
    "How many legs does a spider have?",
    "Translate 'good morning' into Spanish.",
    "What is photosynthesis?",
];

/// A passage read before each question in the long runs: it makes the
/// prompt about 230 tokens with the chat template.
const CONTEXT: &str = "Background for the question below. A small town library keeps a \
notebook of the questions its visitors ask at the front desk. Over the years the librarians \
noticed that most questions fall into a few groups: facts about science and nature, help with \
words in other languages, advice about everyday habits such as sleep and cooking, and requests \
for short pieces of writing like poems or names for a new shop. The librarians answer briefly \
and clearly, and when they are not sure they say so. Children ask about animals and the sky; \
older visitors ask about computers and how the machines in their homes work. Each answer is \
written on a card and filed by topic, so the next visitor with the same question can find it \
quickly. The cards are plain, short and friendly, and they never use more words than the \
question needs. Now answer the visitor's question in the same spirit.\n\nQuestion: ";

/// Answer tokens: the forced run's length, the unforced run's cap.
const OUTPUT: u32 = 48;

/// The plan of one run: every question (after the context when `long`) at
/// concurrency 1–4, four requests per user (12 and 16 at the held-out
/// points: enough for a p90), three trials, each in its own shuffled order.
fn plan(url: &str, name: &str, forced: bool, long: bool) -> String {
    let extra = if forced {
        "{ ignore_eos = true, temperature = 0 }"
    } else {
        "{ temperature = 0 }"
    };
    let label = if long { 200 } else { 20 };
    format!(
        "[experiment]\nname = \"{name}\"\nversion = 1\n\n\
         [target]\nbase_url = \"{url}\"\nmodel = \"smollm2\"\napi = \"chat\"\n\
         extra_body = {extra}\n\n\
         [workload]\ninput_tokens = {label}\noutput_tokens = {OUTPUT}\n\n\
         [workload.dataset]\npath = \"prompts.jsonl\"\n\n\
         [sweep]\nconcurrency = [1, 2, 3, 4]\n\n\
         [run]\nrequests = \"4x\"\nwarmup_requests = 1\ntrials = 3\nseed = 11\nshuffle = true\n"
    )
}

async fn run_plan(dir: &Path, text: &str, long: bool) -> std::path::PathBuf {
    std::fs::create_dir_all(dir).unwrap();
    let context = if long { CONTEXT } else { "" };
    let lines: Vec<String> = PROMPTS
        .iter()
        .map(|p| serde_json::json!({ "prompt": format!("{context}{p}") }).to_string())
        .collect();
    std::fs::write(dir.join("prompts.jsonl"), lines.join("\n") + "\n").unwrap();
    let path = dir.join("plan.toml");
    std::fs::write(&path, text).unwrap();
    let opts = RunOptions {
        plan: qexp_plan::Plan::load(&path).unwrap(),
        out: dir.join("results"),
        overrides: Default::default(),
        shard: None,
        folder: Default::default(),
    };
    let (_tx, rx) = tokio::sync::watch::channel(false);
    run(opts, rx).await.expect("run succeeds").dir
}

/// Bound on |error| at each held-out point: TTFT and its p90 30%, TPOT
/// and E2E 20% (the bounds); aggregate throughput is printed only.
fn bound(m: ModelMetric) -> Option<f64> {
    match m {
        ModelMetric::TtftS | ModelMetric::TtftP90S => Some(0.30),
        ModelMetric::TpotS | ModelMetric::E2eS => Some(0.20),
        ModelMetric::AggTokS => None,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "known miss: single held-out points up to 47% (unforced) and 95% (forced TTFT at 52 tokens) off (docs/model.md, Measured against SmolLM2); run with --ignored"]
async fn smollm2_fit_predicts_more_users_on_real_prompts() {
    let Some(url) = server("QEXP_SMOLLM2_URL") else {
        return;
    };
    let _guard = crate::common::heavy().await;
    let tmp = tempfile::tempdir().unwrap();
    let mut misses = Vec::new();
    for (name, forced) in [("forced", true), ("unforced", false)] {
        let mut dirs = Vec::new();
        for long in [false, true] {
            let run = format!("{name}-{}", if long { "long" } else { "short" });
            let text = plan(&url, &run, forced, long);
            dirs.push(run_plan(&tmp.path().join(&run), &text, long).await);
        }
        misses.extend(fit_and_check(name, &dirs));
    }
    assert!(
        misses.is_empty(),
        "SmolLM2 held-out points off the model beyond their bounds:\n{}",
        misses.join("\n")
    );
}

/// Fits the runs in `dirs` on concurrency 1 and 2, prints the held-out
/// table (3 and 4 users) with its coverage, and says what misses its bound.
fn fit_and_check(name: &str, dirs: &[std::path::PathBuf]) -> Vec<String> {
    let rows: Vec<Observation> = dirs
        .iter()
        .flat_map(|d| {
            let a = qexp_analysis::analyze(d).unwrap();
            qexp_analysis::run_observations(&a, 0, None).rows
        })
        .collect();
    eprintln!(
        "smollm2 {name}: {} of {} (trial, point)s replayed with their answers' spread",
        rows.iter().filter(|r| r.answers.is_some()).count(),
        rows.len()
    );
    let (grid, held): (Vec<Observation>, Vec<Observation>) =
        rows.into_iter().partition(|r| r.concurrency <= 2);
    let model = qexp_model::fit(&grid, &FitOptions::default()).unwrap();
    eprintln!(
        "smollm2 {name}: schedule {}, prefills {}, intake window {} s{}",
        model.params.schedule,
        qexp_model::form_label(&model.params),
        model.params.intake_s,
        model
            .evidence
            .as_ref()
            .map_or(String::new(), |e| format!("; chosen {}", e.sentence()))
    );
    for w in &model.warnings {
        eprintln!("smollm2 {name} fit warning: {w}");
    }
    let checks = qexp_model::check(&model, &held);
    eprintln!(
        "smollm2 {name} held out: | point | metric | measured | predicted | 90% interval | error |"
    );
    let mut misses = Vec::new();
    for c in &checks {
        eprintln!(
            "smollm2 {name} held out: | {} | {} | {:.4} | {:.4} | {:.4} … {:.4} | {:+.1}%{} |",
            c.point,
            c.metric.name(),
            c.measured,
            c.predicted,
            c.lo,
            c.hi,
            100.0 * c.error(),
            if c.outside() { " (outside)" } else { "" }
        );
        if let Some(b) = bound(c.metric).filter(|b| c.error().abs() > *b) {
            misses.push(miss(name, c, b));
        }
    }
    for s in qexp_model::summarize(&checks) {
        eprintln!(
            "smollm2 {name} held out {:<9} median |error| {:>5.1}%  inside 90% interval {}/{}",
            s.metric.name(),
            100.0 * s.median_abs_error,
            s.covered,
            s.n
        );
    }
    let p90s = checks
        .iter()
        .filter(|c| c.metric == ModelMetric::TtftP90S)
        .count();
    if p90s != 4 {
        misses.push(format!("{name}: {p90s} TTFT p90s predicted, not 4"));
    }
    misses
}

fn miss(name: &str, c: &Check, bound: f64) -> String {
    format!(
        "{name} {} {}: {:+.1}% (bound ±{:.0}%)",
        c.point,
        c.metric.name(),
        100.0 * c.error(),
        100.0 * bound
    )
}
