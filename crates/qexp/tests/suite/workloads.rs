//! Workload kinds end to end against the simulator's prefix cache: a
//! shared-prefix point beside its cache-busted twin, and the founding 120K
//! dip reproduced in miniature and flagged with its cause; multi-turn
//! conversations that resend what came before.

use crate::common::run_plan;
use polars::prelude::DataType;
use qexp_analysis::{Flag, Thresholds};
use qexp_plan::ApiKind;
use qexp_sim::{SimProfile, SimServer};
use qexp_testkit::PlanFixture;
use std::collections::BTreeMap;
use std::path::Path;

/// Prefill is all that costs: no fixed latency, 100K prompt tokens/s, 1 ms decode steps.
async fn prefill_bound_sim() -> SimServer {
    SimServer::start(SimProfile {
        name: "prefill".to_owned(),
        prefill_fixed_s: 0.0,
        prefill_tokens_per_s: 100_000.0,
        step_base_s: 0.001,
        ..SimProfile::by_name("exact").unwrap()
    })
    .await
    .unwrap()
}

fn shared_plan(url: &str, unique: bool) -> PlanFixture {
    PlanFixture::new(&format!("shared-{unique}"))
        .target(url)
        .api(ApiKind::Chat)
        .input(2500)
        .output(4)
        .set("workload.shared_prefix.groups", 2)
        .set("workload.shared_prefix.prompts_per_group", 3)
        .set("workload.shared_prefix.system_tokens", 2000)
        .set("workload.shared_prefix.unique_prefixes", unique)
        .warmup(1)
        .trials(2)
        .seed(9)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shared_prefix_is_cached_and_faster_than_its_cache_busted_twin() {
    let _serial = crate::common::shared().await;
    let server = prefill_bound_sim().await;
    let tmp = tempfile::tempdir().unwrap();
    let url = server.base_url();
    let shared = run_plan(tmp.path(), &shared_plan(&url, false)).await;
    let busted = run_plan(tmp.path(), &shared_plan(&url, true)).await;

    let (s, b) = (&shared.points[0], &busted.points[0]);
    assert_eq!(s.requests, 12, "2 trials × 2 groups × 3 prompts");
    // Per trial: 4 of 6 prompts follow their group's first; each expects S of S + Q cached.
    let expected = 4.0 / 6.0 * 2000.0 / 2500.0;
    for t in &s.trials {
        assert!((t.cached_share_expected - expected).abs() < 1e-9, "{t:?}");
        // The server caches whole 16-token blocks of the ~2,000-token system prompt.
        assert!(
            (t.cached_share - expected).abs() < 0.02,
            "reported {} vs expected {expected}",
            t.cached_share
        );
    }
    for t in &b.trials {
        assert_eq!(
            (t.cached_tokens, t.cached_share_expected),
            (0, 0.0),
            "{t:?}"
        );
    }
    // Request by request: after each group's first prompt, S / (S + Q) of the prompt is cached.
    let df = qexp_store::scan_requests(&shared.dir)
        .unwrap()
        .collect()
        .unwrap();
    let warmup: Vec<bool> = df
        .column("warmup")
        .unwrap()
        .bool()
        .unwrap()
        .iter()
        .map(|w| w.unwrap_or(false))
        .collect();
    let (cached, prompt, expected) = (
        u32_col(&df, "cached_tokens"),
        u32_col(&df, "prompt_tokens"),
        u32_col(&df, "cached_tokens_expected"),
    );
    let mut repeats = 0;
    for i in (0..df.height()).filter(|&i| !warmup[i]) {
        let share = f64::from(cached[i]) / f64::from(prompt[i]);
        if expected[i] > 0 {
            repeats += 1;
            assert!((share - 2000.0 / 2500.0).abs() < 0.02, "row {i}: {share}");
        } else {
            assert_eq!(cached[i], 0, "row {i}: a group's first prompt");
        }
    }
    assert_eq!(repeats, 8, "2 trials × 2 groups × 2 repeats");
    let (ts, tb) = (s.ttft_s.as_ref().unwrap(), b.ttft_s.as_ref().unwrap());
    eprintln!(
        "shared prefix: TTFT {:.4} s, cached {:.1}%; cache-busted: TTFT {:.4} s, cached {:.1}%",
        ts.median,
        s.cached_share.as_ref().unwrap().median * 100.0,
        tb.median,
        b.cached_share.as_ref().unwrap().median * 100.0
    );
    // Median of 6 prompts: 4 prefill ~500 tokens, 2 the whole 2,500.
    assert!(
        ts.median < 0.7 * tb.median,
        "{} vs {}",
        ts.median,
        tb.median
    );
    // A planned shared prefix is not an unexpected cache hit.
    let flags = qexp_analysis::anomaly::detect(&shared, &Thresholds::default());
    assert!(
        !flags
            .iter()
            .any(|f| matches!(f, Flag::UnexpectedCacheHits { .. })),
        "{flags:?}"
    );
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cached_prefix_at_the_longest_point_is_flagged_with_its_cause() {
    let _serial = crate::common::heavy().await;
    let server = prefill_bound_sim().await;
    let tmp = tempfile::tempdir().unwrap();
    // experiments/prefix-dip.toml at a tenth of the lengths: only the longest
    // point holds the 10K-token shared prefix; its second prompt prefills 2K.
    let plan = PlanFixture::new("dip")
        .target(&server.base_url())
        .api(ApiKind::Chat)
        .input(1000)
        .output(4)
        .set("workload.shared_prefix.groups", 1)
        .set("workload.shared_prefix.prompts_per_group", 2)
        .set("workload.shared_prefix.system_tokens", 10000)
        .set("sweep.input_tokens", vec![6000, 10000, 12000])
        .warmup(0)
        .trials(3)
        .seed(1);
    let analysis = run_plan(tmp.path(), &plan).await;
    let flags = qexp_analysis::anomaly::detect(&analysis, &Thresholds::default());
    let dip = flags
        .iter()
        .find(|f| matches!(f, Flag::WrongDirection { point_id: 2, .. }))
        .unwrap_or_else(|| panic!("no wrong-direction flag at 12K: {flags:?}"));
    let Flag::WrongDirection {
        verified,
        cache_explains,
        ..
    } = dip
    else {
        unreachable!()
    };
    assert!(*verified, "{dip:?}");
    assert_eq!(*cache_explains, Some(true));
    let text = dip.to_string();
    assert!(text.starts_with("TTFT fell from"), "{text}");
    assert!(text.contains("Prefix-cache hits explain it"), "{text}");
    server.shutdown().await;
}

fn u32_col(df: &polars::prelude::DataFrame, name: &str) -> Vec<u32> {
    df.column(name)
        .unwrap()
        .u32()
        .unwrap()
        .into_no_null_iter()
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn drawn_lengths_are_sent_recorded_and_reproducible() {
    let _serial = crate::common::shared().await;
    let tmp = tempfile::tempdir().unwrap();
    let plan = PlanFixture::new("lengths")
        .target("sim:exact")
        .api(ApiKind::Chat)
        .input(300)
        .output(8)
        .set("workload.input_lengths.distribution", "lognormal")
        .set("workload.input_lengths.std_dev", 100)
        .set("workload.input_lengths.min", 100)
        .set("workload.input_lengths.max", 600)
        .set("workload.output_lengths.distribution", "uniform")
        .set("workload.output_lengths.min", 2)
        .set("workload.output_lengths.max", 12)
        .concurrency(&[4])
        .requests(24)
        .warmup(0)
        .trials(1)
        .seed(5);
    let mut planned = Vec::new();
    for _ in 0..2 {
        let analysis = run_plan(tmp.path(), &plan).await;
        let df = qexp_store::scan_requests(&analysis.dir)
            .unwrap()
            .collect()
            .unwrap();
        let (input, output) = (
            u32_col(&df, "input_tokens_planned"),
            u32_col(&df, "output_tokens_planned"),
        );
        assert!(input.iter().all(|x| (100..=600).contains(x)), "{input:?}");
        assert!(output.iter().all(|x| (2..=12).contains(x)), "{output:?}");
        let distinct = |v: &[u32]| v.iter().collect::<std::collections::BTreeSet<_>>().len();
        assert!(distinct(&input) > 10 && distinct(&output) > 5);
        // The simulator counts exactly: what was sent is what was planned.
        assert_eq!(u32_col(&df, "prompt_tokens"), input);
        assert_eq!(u32_col(&df, "completion_tokens"), output);
        let p = &analysis.points[0];
        assert!(p.trials[0].lengths_vary);
        assert!(analysis.points[0].trials[0].invalid_reason.is_none());
        // The Lengths table sets the planned output beside the counted one
        // (equal here, on a simulator that counts exactly).
        let t = &p.trials[0];
        assert!(t.output_planned.is_finite(), "{t:?}");
        assert_eq!(t.output_planned, t.completion_tokens);
        assert!(qexp_report::report_context(&analysis).tables[0].lengths);
        let md = render(&analysis, &tmp.path().join("report"));
        assert!(
            md.contains("| Output planned, median (tokens) | Output counted, median (tokens) |"),
            "{md}"
        );
        let mut rows: Vec<(u32, u32, u32)> = u32_col(&df, "request_index")
            .into_iter()
            .zip(input.into_iter().zip(output))
            .map(|(i, (a, b))| (i, a, b))
            .collect();
        rows.sort_unstable();
        planned.push(rows);
    }
    assert_eq!(planned[0], planned[1], "the plan's seed fixes every length");
}

fn dataset_plan(path: &Path, format: &str) -> PlanFixture {
    PlanFixture::new("data")
        .target("sim:exact")
        .api(ApiKind::Chat)
        .input(40)
        .output(3)
        .set("workload.dataset.path", path.display().to_string())
        .set("workload.dataset.format", format)
        .concurrency(&[2])
        .requests(12)
        .warmup(0)
        .trials(1)
        .seed(4)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dataset_prompts_are_counted_sent_and_fingerprinted() {
    let _serial = crate::common::shared().await;
    let tmp = tempfile::tempdir().unwrap();
    let shipped = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../datasets");
    for (file, format) in [
        ("sample-chat.jsonl", "jsonl"),
        ("sample-sharegpt.json", "sharegpt"),
    ] {
        let copy = tmp.path().join(file);
        std::fs::copy(shipped.join(file), &copy).unwrap();
        let a = run_plan(tmp.path(), &dataset_plan(&copy, format)).await;
        let df = qexp_store::scan_requests(&a.dir)
            .unwrap()
            .collect()
            .unwrap();
        let planned = u32_col(&df, "input_tokens_planned");
        // Counted before the run, and the simulator counts exactly.
        assert_eq!(u32_col(&df, "prompt_tokens"), planned, "{file}");
        assert!(
            planned
                .iter()
                .collect::<std::collections::BTreeSet<_>>()
                .len()
                > 3,
            "{file}: sampled prompts of several lengths: {planned:?}"
        );
        assert!(a.points[0].trials[0].invalid_reason.is_none());
        let sha = |a: &qexp_analysis::RunAnalysis| {
            a.manifest.comparability.workload["dataset_sha256"].clone()
        };
        assert_eq!(sha(&a).len(), 64);
        // A changed file changes the fingerprint, so a diff of the two runs refuses.
        std::fs::write(
            &copy,
            std::fs::read_to_string(&copy)
                .unwrap()
                .replacen("a", "A", 1),
        )
        .unwrap();
        let b = run_plan(tmp.path(), &dataset_plan(&copy, format)).await;
        assert_ne!(sha(&a), sha(&b), "{file}");
        assert_ne!(
            a.manifest.comparability.workload_hash,
            b.manifest.comparability.workload_hash
        );
    }
}

/// A float column without nulls.
fn f64_col(df: &polars::prelude::DataFrame, name: &str) -> Vec<f64> {
    let c = df.column(name).unwrap().cast(&DataType::Float64).unwrap();
    c.f64().unwrap().iter().map(|v| v.unwrap()).collect()
}

/// The run's report.md, rendered with the built-in templates into `out`.
fn render(run: &qexp_analysis::RunAnalysis, out: &Path) -> String {
    let templates = qexp_report::Templates::builtin().unwrap();
    let written = qexp_report::render_run(run, &templates, out).unwrap();
    std::fs::read_to_string(&written[0]).unwrap()
}

fn multi_turn_plan(url: &str) -> PlanFixture {
    PlanFixture::new("multi-turn")
        .target(url)
        .api(ApiKind::Chat)
        .input(400)
        .output(24)
        .set("workload.multi_turn.turns", 3)
        .set("workload.multi_turn.user_tokens", 60)
        .set("workload.multi_turn.think_time_s", 0.02)
        .concurrency(&[2])
        .requests(3)
        .warmup(1)
        .trials(2)
        .seed(5)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn multi_turn_sessions_resend_the_conversation_in_order() {
    let _serial = crate::common::shared().await;
    let server = prefill_bound_sim().await;
    let tmp = tempfile::tempdir().unwrap();
    let run = run_plan(tmp.path(), &multi_turn_plan(&server.base_url())).await;
    let point = &run.points[0];
    assert_eq!(point.requests, 18, "2 trials × 3 sessions × 3 turns");
    assert_eq!(point.failures, 0);
    assert!(
        point.trials.iter().all(|t| t.invalid_reason.is_none()),
        "{:?}",
        point.trials
    );
    let df = qexp_store::scan_requests(&run.dir)
        .unwrap()
        .collect()
        .unwrap();
    let opt = |name: &str| -> Vec<Option<u32>> {
        let c = df.column(name).unwrap().cast(&DataType::UInt32).unwrap();
        c.u32().unwrap().iter().collect()
    };
    let f64s = |name: &str| f64_col(&df, name);
    let (trial, session, turn) = (u32_col(&df, "trial"), opt("session"), opt("turn"));
    let (prompt, completion, cached, planned) = (
        u32_col(&df, "prompt_tokens"),
        u32_col(&df, "completion_tokens"),
        u32_col(&df, "cached_tokens"),
        u32_col(&df, "input_tokens_planned"),
    );
    let (sent, end) = (f64s("sent_unix_s"), f64s("end_s"));
    let mut conversations: BTreeMap<(u32, u32), Vec<usize>> = BTreeMap::new();
    for i in 0..df.height() {
        match (session[i], turn[i]) {
            (Some(s), Some(_)) => conversations.entry((trial[i], s)).or_default().push(i),
            _ => assert!(session[i].is_none() && turn[i].is_none(), "row {i}"),
        }
    }
    assert_eq!(conversations.len(), 6, "3 sessions in each of 2 trials");
    for rows in conversations.values() {
        let turns: Vec<u32> = rows.iter().map(|&i| turn[i].unwrap()).collect();
        assert_eq!(turns, [1, 2, 3]);
        assert_eq!(cached[rows[0]], 0, "a conversation's first turn is new");
        for w in rows.windows(2) {
            let (a, b) = (w[0], w[1]);
            // In order: a turn goes out after the answer before it, plus think time.
            assert!(sent[b] >= sent[a] + end[a] + 0.02, "rows {a}, {b}");
            // The whole earlier conversation plus a 60-token user turn; the
            // simulator's template adds 4 tokens per message and 3 to prime
            // the answer, so 60 + 4 - 3 tokens more than the sum.
            let before = prompt[a] + completion[a];
            assert_eq!(prompt[b], before + 60 + 1, "rows {a}, {b}");
            // The plan knows that 1 token from its probes of the template.
            assert_eq!(planned[b], before + 60 + 1, "rows {a}, {b}");
            // The simulator caches whole 16-token blocks of the earlier prompt.
            assert!(cached[b] + 16 > prompt[a] && cached[b] <= before, "row {b}");
        }
    }
    // The analysis gives every turn its own row; the prompt grows turn by turn.
    let turns: Vec<u32> = run.turns.iter().map(|t| t.turn).collect();
    assert_eq!(turns, [1, 2, 3]);
    let prompts: Vec<f64> = run
        .turns
        .iter()
        .map(|t| t.prompt_tokens.as_ref().unwrap().median)
        .collect();
    assert!(
        prompts[0] < prompts[1] && prompts[1] < prompts[2],
        "{prompts:?}"
    );
    assert_eq!(run.turns[0].cached_share.as_ref().unwrap().median, 0.0);
    assert!(run.turns[2].cached_share.as_ref().unwrap().median > 0.5);
    let md = render(&run, &tmp.path().join("report"));
    assert!(md.contains("### Per turn"), "{md}");
    assert!(md.contains("| c=2 in=400 out=24 | 3 | 2 |"), "{md}");
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reasoning_is_timed_apart_from_the_answer_and_reported() {
    let _serial = crate::common::heavy().await;
    // 8 tokens of thinking, one token per 10 ms step, then the answer.
    let server = SimServer::start(SimProfile {
        name: "thinking".to_owned(),
        reasoning_tokens: 8,
        ..SimProfile::by_name("exact").unwrap()
    })
    .await
    .unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let plan = |name: &str, server: &SimServer| {
        PlanFixture::new(name)
            .target(&server.base_url())
            .api(ApiKind::Chat)
            .input(100)
            .output(12)
            .requests(2)
            .warmup(0)
            .trials(2)
    };
    let run = run_plan(tmp.path(), &plan("reasoning", &server)).await;
    assert_eq!(run.points[0].failures, 0);
    let df = qexp_store::scan_requests(&run.dir)
        .unwrap()
        .collect()
        .unwrap();
    let f64s = |name: &str| f64_col(&df, name);
    let (ttft, thinking, answer) = (
        f64s("ttft_s"),
        f64s("ttft_reasoning_s"),
        f64s("ttft_answer_s"),
    );
    assert_eq!(u32_col(&df, "reasoning_chunks"), [8, 8, 8, 8]);
    assert_eq!(u32_col(&df, "chunks"), [12, 12, 12, 12]);
    for i in 0..df.height() {
        assert_eq!(ttft[i], thinking[i], "TTFT is the first reasoning chunk");
        // The answer starts after 8 reasoning steps of 10 ms each.
        assert!(answer[i] >= thinking[i] + 0.07, "row {i}");
    }
    let r = &run.reasoning;
    assert_eq!(r.len(), 1);
    assert_eq!(r[0].reasoning_share.as_ref().unwrap().median, 8.0 / 12.0);
    let md = render(&run, &tmp.path().join("report"));
    assert!(md.contains("### Reasoning"), "{md}");
    assert!(md.contains("| 66.7% |"), "{md}");
    // A run without reasoning has no reasoning table.
    let other = prefill_bound_sim().await;
    let plain = run_plan(tmp.path(), &plan("plain", &other)).await;
    assert!(plain.reasoning.is_empty());
    let md = render(&plain, &tmp.path().join("plain-report"));
    assert!(!md.contains("### Reasoning"), "{md}");
    other.shutdown().await;
    server.shutdown().await;
}
