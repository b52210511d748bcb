//! qexp against real inference servers: vLLM (CPU build) and llama.cpp's own
//! server, both serving the tiny random-weight model of scripts/real-servers.
//! `.ci/run` starts them and exports QEXP_VLLM_URL and QEXP_LLAMACPP_URL.
//!
//! Without those variables a test skips, saying why ([`qexp_testkit::skip`]),
//! unless `QEXP_REQUIRE_REAL_SERVERS` is set (`.ci/run` sets it): then it
//! fails, so that run can never skip the servers quietly.
//! Tests share one lock: the machine has two cores, and a throughput
//! measurement next to another test's load would measure that load.

use polars::prelude::*;
use qexp_client::metrics::Exposition;
use qexp_client::prompt::{Cut, Filler};
use qexp_client::{nonce_for, Client, GenRequest, MetricsSource};
use qexp_plan::ApiKind;
use qexp_runner::{run, RunError, RunOptions, RunResult};
use qexp_testkit::{f64s, skip, strings, Need, PlanFixture};
use std::path::Path;
use std::time::Duration;

const MODEL: &str = "tiny-llama";

/// The server URL from `var`; `None` after a skip ([`qexp_testkit::skip`]),
/// which fails instead where `QEXP_REQUIRE_REAL_SERVERS` is set.
pub(crate) fn server(var: &str) -> Option<String> {
    match std::env::var(var) {
        Ok(u) if !u.trim().is_empty() => Some(u.trim().to_string()),
        _ => {
            skip(
                Need::RealServer,
                &format!(
                    "{var} is not set; start a server with \
                     `scripts/real-servers/start.sh vllm|llamacpp|smollm2|smollm2-embeddings` and export {var}=<its URL>"
                ),
            );
            None
        }
    }
}

/// A plan named `real` against `url` serving MODEL, chat, every request
/// running to its output length; the caller sets the workload and run.
fn real(url: &str) -> PlanFixture {
    PlanFixture::new("real")
        .target(url)
        .set("target.model", MODEL)
        .api(ApiKind::Chat)
        .ignore_eos()
}

/// Runs a plan named `real` against `url` whose workload and run sections
/// are `body`, as TOML text (for tests that state the grid verbatim).
pub(crate) async fn run_plan_body(dir: &Path, url: &str, body: &str) -> RunResult {
    let text = format!(
        "[experiment]\nname = \"real\"\nversion = 1\n\n\
         [target]\nbase_url = \"{url}\"\nmodel = \"{MODEL}\"\napi = \"chat\"\n\
         extra_body = {{ ignore_eos = true }}\n\n{body}"
    );
    std::fs::create_dir_all(dir).unwrap();
    let path = dir.join("real.toml");
    std::fs::write(&path, text).unwrap();
    let opts = RunOptions {
        plan: qexp_plan::Plan::load(&path).unwrap(),
        out: dir.join("results"),
        overrides: Default::default(),
        shard: None,
        folder: Default::default(),
    };
    let (_tx, rx) = tokio::sync::watch::channel(false);
    run(opts, rx).await.expect("run succeeds")
}

fn options(dir: &Path, plan: &PlanFixture) -> RunOptions {
    RunOptions {
        plan: plan.load(dir),
        out: dir.join("results"),
        overrides: Default::default(),
        shard: None,
        folder: Default::default(),
    }
}

async fn run_plan(dir: &Path, plan: &PlanFixture) -> RunResult {
    let (_tx, rx) = tokio::sync::watch::channel(false);
    run(options(dir, plan), rx).await.expect("run succeeds")
}

fn requests(r: &RunResult) -> DataFrame {
    qexp_store::scan_requests(&r.dir)
        .unwrap()
        .collect()
        .unwrap()
}

fn measured(r: &RunResult) -> DataFrame {
    qexp_store::scan_requests(&r.dir)
        .unwrap()
        .filter(col("warmup").not())
        .collect()
        .unwrap()
}

fn points(r: &RunResult) -> DataFrame {
    qexp_store::scan_points(&r.dir).unwrap().collect().unwrap()
}

/// Asserts no failures, prompts within 1% of `input`, exactly `output` completion tokens.
fn assert_exact(df: &DataFrame, input: f64, output: f64) {
    let failed = df
        .clone()
        .lazy()
        .filter(col("error_class").is_not_null())
        .select([
            col("request_index"),
            col("error_class"),
            col("error_message"),
            col("retries"),
        ])
        .collect()
        .unwrap();
    assert_eq!(failed.height(), 0, "failed requests: {failed}");
    for p in f64s(df, "prompt_tokens") {
        assert!(
            (p - input).abs() <= input * 0.01,
            "prompt tokens {p} not within 1% of {input}"
        );
    }
    for c in f64s(df, "completion_tokens") {
        assert_eq!(c, output, "completion tokens");
    }
}

/// A counter summed over label sets, from one scrape.
async fn counter(url: &str, name: &str) -> f64 {
    let client = Client::new(url, None, Duration::from_secs(30)).unwrap();
    let text = client
        .get_text("/metrics", Duration::from_secs(10))
        .await
        .unwrap()
        .unwrap();
    Exposition::parse(&text)
        .samples
        .iter()
        .filter(|s| s.name == name)
        .map(|s| s.value)
        .sum()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn vllm_throughput_mini_sweep() {
    let Some(url) = server("QEXP_VLLM_URL") else {
        return;
    };
    let _guard = crate::common::heavy().await;
    let tmp = tempfile::tempdir().unwrap();
    let plan = real(&url)
        .input(256)
        .output(64)
        .concurrency(&[1, 4, 16])
        .requests("2x")
        .warmup(1)
        .trials(2)
        .seed(7);
    let r = run_plan(tmp.path(), &plan).await;
    assert_eq!(r.manifest.status, qexp_store::RunStatus::Complete);
    let fp = r.manifest.fingerprint.clone().expect("fingerprint");
    assert_eq!(
        (fp.engine.as_str(), fp.max_context),
        ("vllm", Some(131_072))
    );
    assert_eq!(
        fp.flags.get("prefix_caching").map(String::as_str),
        Some("on")
    );
    let d = &r.manifest.comparability.deployment;
    assert_eq!(d.get("engine").map(String::as_str), Some("vllm"));
    assert!(d.contains_key("engine_version") && d.contains_key("flag.prefix_caching"));

    // 2 trials × (1+2 + 1+8 + 1+32) requests, 2 × 3 points.
    assert_eq!(requests(&r).height(), 2 * (3 + 9 + 33));
    let m = measured(&r);
    assert_eq!(m.height(), 2 * (2 + 8 + 32));
    assert_exact(&m, 256.0, 64.0);
    assert!(f64s(&m, "cached_tokens").iter().all(|c| *c == 0.0));

    let p = points(&r);
    assert_eq!(p.height(), 6);
    // The scrapes around each point see exactly its measured requests.
    let planned = f64s(&p, "requests_planned");
    assert_eq!(f64s(&p, "server_ttft_count"), planned, "server TTFT count");
    assert!(f64s(&p, "server_prefix_cache_hits")
        .iter()
        .all(|h| *h == 0.0));
    for (q, n) in f64s(&p, "server_prefix_cache_queries").iter().zip(&planned) {
        assert!(*q >= 250.0 * n, "prefix-cache queries {q} for {n} requests");
    }
    assert!(p.column("server_counters_json").unwrap().null_count() == 0);

    let a = qexp_analysis::analyze(&r.dir).unwrap();
    let agg: Vec<f64> = a
        .points
        .iter()
        .map(|p| p.agg_tok_s.as_ref().unwrap().median)
        .collect();
    eprintln!("vLLM aggregate tok/s at C=1, 4, 16: {agg:?}");
    assert!(
        agg[0] < agg[1] && agg[1] < agg[2],
        "aggregate tok/s must grow with concurrency: {agg:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn vllm_long_context_mini_sweep() {
    let Some(url) = server("QEXP_VLLM_URL") else {
        return;
    };
    let _guard = crate::common::heavy().await;
    let tmp = tempfile::tempdir().unwrap();
    let plan = real(&url)
        .input(1024)
        .output(16)
        .set("sweep.input_tokens", vec![1024, 8192, 32768])
        .requests(1)
        .warmup(0)
        .trials(2)
        .seed(11);
    let r = run_plan(tmp.path(), &plan).await;
    let m = measured(&r);
    assert_eq!(m.height(), 6);
    for input in [1024.0, 8192.0, 32768.0] {
        let rows = m
            .clone()
            .lazy()
            .filter(
                col("input_tokens_target")
                    .cast(DataType::Float64)
                    .eq(lit(input)),
            )
            .collect()
            .unwrap();
        assert_exact(&rows, input, 16.0);
    }
    assert!(
        f64s(&m, "cached_tokens").iter().all(|c| *c == 0.0),
        "no cached tokens: {:?}",
        f64s(&m, "cached_tokens")
    );
    let a = qexp_analysis::analyze(&r.dir).unwrap();
    let ttft: Vec<f64> = a
        .points
        .iter()
        .map(|p| p.ttft_s.as_ref().unwrap().median)
        .collect();
    eprintln!("vLLM TTFT at 1K, 8K, 32K input: {ttft:?} s");
    assert!(
        ttft[0] < ttft[1] && ttft[1] < ttft[2],
        "TTFT must grow with input: {ttft:?}"
    );
}

/// Short prompts land on their planned length exactly: every measured
/// request of a 64- and a 128-token point, under several seeds (each seed
/// cuts its prompts from other filler words, some of them several tokens
/// long on the tiny model's vocabulary), is counted at the planned length by
/// the server's own `usage.prompt_tokens`, and no point is marked invalid
/// for its prompt length. The plan names the server as two deployments, as
/// a comparison of two launched servers would.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn vllm_short_prompts_are_exact() {
    let Some(url) = server("QEXP_VLLM_URL") else {
        return;
    };
    let _guard = crate::common::heavy().await;
    let (mut off, mut failed) = (Vec::new(), Vec::new());
    for seed in 0..12 {
        let tmp = tempfile::tempdir().unwrap();
        let plan = PlanFixture::new("short")
            .set("target.model", MODEL)
            .api(ApiKind::Chat)
            .ignore_eos()
            .input(128)
            .output(2)
            .set("sweep.input_tokens", vec![64, 128])
            .concurrency(&[4])
            .requests(16)
            .warmup(1)
            .trials(2)
            .seed(seed)
            .raw(&format!(
                "[[deployment]]\nname = \"a\"\nbase_url = \"{url}\"\n\
                 [[deployment]]\nname = \"b\"\nbase_url = \"{url}\"\n"
            ));
        let (_tx, rx) = tokio::sync::watch::channel(false);
        let r = match run(options(tmp.path(), &plan), rx).await {
            Ok(r) => r,
            Err(e) => {
                failed.push(format!("seed {seed}: {e}"));
                continue;
            }
        };
        let m = measured(&r);
        assert_eq!(m.height(), 2 * 2 * 2 * 16);
        let planned = f64s(&m, "input_tokens_planned");
        let counted = f64s(&m, "prompt_tokens");
        let mut seen = std::collections::BTreeMap::<(u64, u64), u32>::new();
        for (p, c) in planned.iter().zip(&counted) {
            *seen.entry((*p as u64, *c as u64)).or_default() += 1;
        }
        eprintln!("seed {seed}: (planned, server-counted) prompt tokens → requests: {seen:?}");
        off.extend(seen.keys().filter(|(p, c)| p != c).map(|k| (seed, *k)));
        let invalid = strings(&points(&r), "invalid_reason");
        failed.extend(
            invalid
                .into_iter()
                .flatten()
                .map(|i| format!("seed {seed}: {i}")),
        );
    }
    assert!(
        failed.is_empty(),
        "runs refused or points invalid: {failed:#?}"
    );
    assert!(
        off.is_empty(),
        "(seed, (planned, counted)) off the plan: {off:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn vllm_shared_prefix_is_cached_the_second_time() {
    let Some(url) = server("QEXP_VLLM_URL") else {
        return;
    };
    let _guard = crate::common::heavy().await;
    let client = Client::new(&url, None, Duration::from_secs(300)).unwrap();
    let salt = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos() as u64;
    let prompt = Filler::new(5, 8000).prompt(&nonce_for(5, salt, 0, 0, 0), Cut::words(8000));
    let req = GenRequest {
        api: ApiKind::Chat,
        model: MODEL.into(),
        prompt,
        max_tokens: 4,
        extra: Default::default(),
        history: None,
        batch: 1,
        headers: Vec::new(),
        images: Default::default(),
    };
    let metrics = MetricsSource::new(&client, "/metrics");
    let before = metrics.scrape().await.expect("vLLM serves /metrics");
    let first = client.stream(&req).await;
    let second = client.stream(&req).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let after = metrics.scrape().await.unwrap();
    assert!(first.ok() && second.ok(), "{first:?}\n{second:?}");
    let prompt_tokens = first.usage.prompt_tokens.unwrap();
    assert!(prompt_tokens > 8000, "{prompt_tokens}");
    assert_eq!(first.usage.cached_tokens, Some(0));
    let cached = second.usage.cached_tokens.unwrap();
    // vLLM caches whole 128-token blocks: all but the last partial one.
    assert!(
        cached >= prompt_tokens - 128,
        "second request cached {cached} of {prompt_tokens}"
    );
    let (t1, t2) = (first.ttft_s().unwrap(), second.ttft_s().unwrap());
    eprintln!(
        "shared prefix of {prompt_tokens} tokens: TTFT {t1:.3} s → {t2:.3} s, cached 0 → {cached}"
    );
    assert!(
        t2 < t1,
        "TTFT with the cached prefix ({t2}) must be lower than without ({t1})"
    );
    let s = qexp_client::ServerCounters::between(&before, &after);
    assert_eq!(
        s.get(qexp_client::ServerCounter::PrefixCacheHits),
        Some(f64::from(cached))
    );
}

/// A shared-prefix point and its cache-busted twin (the same lengths, every
/// system prompt unique): vLLM (started with --enable-prefix-caching and
/// --enable-prompt-tokens-details) reports cached tokens for the repeats of
/// the shared one only, and their TTFT is lower.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn vllm_shared_prefix_point_beats_its_cache_busted_twin() {
    let Some(url) = server("QEXP_VLLM_URL") else {
        return;
    };
    let _guard = crate::common::heavy().await;
    let tmp = tempfile::tempdir().unwrap();
    let plan = |unique: bool| {
        real(&url)
            .input(8500)
            .output(4)
            .set("workload.shared_prefix.groups", 1)
            .set("workload.shared_prefix.prompts_per_group", 3)
            .set("workload.shared_prefix.system_tokens", 8000)
            .set("workload.shared_prefix.unique_prefixes", unique)
            .warmup(0)
            .trials(1)
            .seed(13)
    };
    let shared = run_plan(tmp.path(), &plan(false)).await;
    let busted = run_plan(tmp.path(), &plan(true)).await;
    let (ms, mb) = (measured(&shared), measured(&busted));
    assert_exact(&ms, 8500.0, 4.0);
    assert_exact(&mb, 8500.0, 4.0);
    let cached = f64s(&ms, "cached_tokens");
    assert_eq!(cached[0], 0.0, "the group's first prompt: {cached:?}");
    // vLLM on CPU caches whole 128-token blocks of the ~8,000-token system prompt.
    for c in &cached[1..] {
        assert!(
            *c >= 7000.0,
            "repeats find the system prompt cached: {cached:?}"
        );
    }
    assert!(f64s(&mb, "cached_tokens").iter().all(|c| *c < 128.0));
    let (a, b) = (
        qexp_analysis::analyze(&shared.dir).unwrap(),
        qexp_analysis::analyze(&busted.dir).unwrap(),
    );
    let (ps, pb) = (&a.points[0], &b.points[0]);
    let (ts, tb) = (
        ps.ttft_s.as_ref().unwrap().median,
        pb.ttft_s.as_ref().unwrap().median,
    );
    eprintln!(
        "vLLM shared prefix: TTFT {ts:.3} s, cached {:.1}% (expected {:.1}%); \
         cache-busted: TTFT {tb:.3} s, cached {:.1}%",
        ps.cached_share.as_ref().unwrap().median * 100.0,
        ps.cached_share_expected.as_ref().unwrap().median * 100.0,
        pb.cached_share.as_ref().unwrap().median * 100.0,
    );
    assert!(
        ts < tb,
        "shared-prefix TTFT {ts} must be below the cache-busted {tb}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn vllm_preflight_refuses_before_any_load() {
    let Some(url) = server("QEXP_VLLM_URL") else {
        return;
    };
    let _guard = crate::common::heavy().await;
    let tmp = tempfile::tempdir().unwrap();
    let before = counter(&url, "vllm:prompt_tokens_total").await;
    let (_tx, rx) = tokio::sync::watch::channel(false);
    let opts = options(
        tmp.path(),
        &real(&url)
            .input(1000)
            .output(16)
            .set("sweep.input_tokens", vec![1000, 140_000]),
    );
    let err = run(opts, rx).await.expect_err("must refuse");
    assert!(matches!(err, RunError::ContextTooSmall { .. }), "{err}");
    let msg = err.to_string();
    assert!(
        msg.contains("in=140000") && msg.contains("131072") && msg.contains("--max-model-len"),
        "{msg}"
    );
    assert!(!tmp.path().join("results").exists(), "no results folder");
    let after = counter(&url, "vllm:prompt_tokens_total").await;
    assert_eq!(before, after, "no prompt reached the server");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn llamacpp_loses_no_request_at_c16() {
    let Some(url) = server("QEXP_LLAMACPP_URL") else {
        return;
    };
    let _guard = crate::common::heavy().await;
    let tmp = tempfile::tempdir().unwrap();
    let plan = real(&url)
        .input(128)
        .output(32)
        .concurrency(&[16])
        .requests("6x")
        .warmup(0)
        .trials(2)
        .seed(3);
    let r = run_plan(tmp.path(), &plan).await;
    let fp = r.manifest.fingerprint.clone().expect("fingerprint");
    assert_eq!(fp.engine, "llama.cpp");
    assert_eq!(fp.max_context, Some(33_024));
    let m = measured(&r);
    assert_eq!(m.height(), 2 * 96);
    assert_exact(&m, 128.0, 32.0);
    let retries: f64 = f64s(&m, "retries").iter().sum();
    eprintln!("llama.cpp C=16: 192 requests, 0 lost, {retries} sent again on a closed connection");

    let p = points(&r);
    assert!(
        f64s(&p, "server_prefix_cache_queries")
            .iter()
            .all(|q| *q >= 96.0 * 120.0),
        "llama.cpp prompt-token counters scraped"
    );
    // The chat template's few shared tokens must not read as a cache hit.
    let a = qexp_analysis::analyze(&r.dir).unwrap();
    let flags = qexp_analysis::anomaly::detect(&a, &qexp_analysis::Thresholds::default());
    assert!(
        !flags
            .iter()
            .any(|f| matches!(f, qexp_analysis::Flag::UnexpectedCacheHits { .. })),
        "{flags:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn llamacpp_preflight_names_the_per_slot_context() {
    let Some(url) = server("QEXP_LLAMACPP_URL") else {
        return;
    };
    let _guard = crate::common::heavy().await;
    let tmp = tempfile::tempdir().unwrap();
    let (_tx, rx) = tokio::sync::watch::channel(false);
    let opts = options(tmp.path(), &real(&url).input(40_000).output(16));
    let msg = run(opts, rx).await.expect_err("must refuse").to_string();
    assert!(msg.contains("33024") && msg.contains("--ctx-size"), "{msg}");
    assert!(!tmp.path().join("results").exists());
}

/// qexp launches llama.cpp itself twice, with 1 and with 4 parallel slots,
/// and measures both at concurrency 4 in interleaved blocks: 4 slots decode
/// the 4 streams as one batch, 1 slot queues them, so the report must call
/// 4 slots better on aggregate throughput — and no server may be left
/// afterwards. The tiny model's tokens cost a fraction of a millisecond, so
/// on a 2-core host a block's figure moves with whatever else runs: each
/// cell decodes 8,192 tokens on one server thread (the other core is
/// qexp's), and 6 blocks leave the paired t room for one disturbed block.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn llamacpp_slots_launched_by_qexp_differ_as_expected() {
    // The running server only proves that .ci/run installed llama.cpp.
    let Some(_url) = server("QEXP_LLAMACPP_URL") else {
        return;
    };
    let var = |name: &str| std::env::var(name).unwrap_or_else(|_| panic!("{name} (env.sh)"));
    let (venv, gguf, scripts) = (
        var("QEXP_LLAMA_VENV"),
        var("QEXP_TINY_GGUF"),
        var("QEXP_REAL_SCRIPTS"),
    );
    let _guard = crate::common::heavy().await;
    let tmp = tempfile::tempdir().unwrap();
    let deployment = |name: &str, slots: u32| {
        format!(
            "[[deployment]]\nname = \"{name}\"\n\
             command = [\"{venv}/bin/python\", \"{scripts}/serve_llamacpp.py\", \"--model\", \"{gguf}\", \
             \"--alias\", \"{{model}}\", \"--host\", \"{{host}}\", \"--port\", \"{{port}}\", \
             \"--slots\", \"{slots}\", \"--ctx-per-slot\", \"1024\", \"--threads\", \"1\"]\n\
             env = {{ PYTHONUNBUFFERED = \"1\" }}\nready_path = \"/health\"\n\
             ready_timeout_s = 120\nstop_grace_s = 10\n"
        )
    };
    let plan = PlanFixture::new("slots")
        .set("target.model", MODEL)
        .api(ApiKind::Chat)
        .ignore_eos()
        .input(64)
        .output(256)
        .concurrency(&[4])
        .requests("8x")
        .warmup(4)
        .trials(6)
        .seed(4)
        .set("analysis.baseline", "slots-1")
        .raw(&deployment("slots-1", 1))
        .raw(&deployment("slots-4", 4));
    let opts = options(tmp.path(), &plan);
    let started = std::time::Instant::now();
    let (_tx, rx) = tokio::sync::watch::channel(false);
    let r = run(opts, rx).await.expect("run succeeds");
    assert!(
        r.failed_deployments.is_empty(),
        "{:?}",
        r.failed_deployments
    );
    assert_eq!(r.manifest.status, qexp_store::RunStatus::Complete);
    assert_exact(&measured(&r), 64.0, 256.0);
    // Every start stopped, its process gone and its port free.
    for d in &r.manifest.deployments {
        assert_eq!(d.starts.len(), 6, "{}", d.name);
        for s in &d.starts {
            let l = s.launch.as_ref().unwrap();
            let stop = s.stop.as_ref().unwrap();
            assert!(stop.port_freed, "{stop:?}");
            let alive = std::process::Command::new("kill")
                .args(["-0", &l.pid.to_string()])
                .stderr(std::process::Stdio::null())
                .status()
                .unwrap()
                .success();
            assert!(!alive, "{} still running", s.start_id);
            eprintln!(
                "{}: ready after {:.2} s, stopped in {:.2} s ({:?})",
                s.start_id, l.time_to_ready_s, stop.took_s, stop.how
            );
        }
    }
    let a = qexp_analysis::analyze(&r.dir).unwrap();
    for p in &a.points {
        let per_block: Vec<String> = p
            .trials
            .iter()
            .map(|t| format!("block {}: {:.0}", t.trial, t.agg_tok_s))
            .collect();
        eprintln!(
            "{}: aggregate tok/s {}",
            p.point.label(),
            per_block.join(", ")
        );
    }
    let c = a.deployments.as_ref().expect("compared");
    let agg = c.diffs[0].pairs[0]
        .metrics
        .iter()
        .find(|m| m.metric == qexp_analysis::DiffMetric::AggTokS)
        .unwrap();
    eprintln!(
        "llama.cpp 4 slots / 1 slot at c=4, aggregate tok/s: ratio {:?}, CI {:?}, p_holm {:?}, verdict {:?}; A {:?}, B {:?}; whole run {:.0} s",
        agg.ratio,
        agg.ci,
        agg.test.map(|t| t.p_holm),
        agg.verdict,
        agg.a.as_ref().map(|s| s.median),
        agg.b.as_ref().map(|s| s.median),
        started.elapsed().as_secs_f64()
    );
    assert_eq!(agg.verdict, qexp_analysis::diff::Verdict::Better, "{agg:?}");
}
