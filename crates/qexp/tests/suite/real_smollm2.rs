//! Answer checks against a real model: SmolLM2-135M-Instruct, served by
//! llama.cpp on CPU (scripts/real-servers, `start.sh smollm2`; `.ci/run`
//! starts it and exports QEXP_SMOLLM2_URL). At temperature 0 it answers
//! some prompts right and loops on others, the same way every time: a plan
//! of looping prompts must be flagged, and a plan of prompts it answers
//! cleanly must not. Skips (saying so) without the server, fails in CI.

use crate::real_servers::server;
use qexp_analysis::answers::AnswerIssue;
use qexp_analysis::RunAnalysis;
use qexp_runner::{run, RunOptions};
use std::path::Path;

const MODEL: &str = "smollm2";

/// Prompts SmolLM2 answers with a repetition loop at temperature 0, sent
/// without a nonce ("the capital of France" repeats "la femme au martyre,",
/// the days of the week go round past Sunday).
const LOOPING: &[&str] = &[
    "What is the capital of France?",
    "List the days of the week.",
];

/// Prompts it answers in a sentence or two and stops.
const CLEAN: &[&str] = &[
    "What is the chemical symbol for gold?",
    "Name three primary colors.",
    "What is the boiling point of water in Celsius?",
];

/// Runs `prompts` (as a dataset sent without nonces, temperature 0,
/// answers up to 160 tokens: the days of the week
/// need about that many to go round four times) at concurrency 1 and 2 against `url`.
async fn run_prompts(dir: &Path, url: &str, name: &str, prompts: &[&str]) -> RunAnalysis {
    std::fs::create_dir_all(dir).unwrap();
    let lines: Vec<String> = prompts
        .iter()
        .map(|p| serde_json::json!({ "prompt": p }).to_string())
        .collect();
    std::fs::write(dir.join("prompts.jsonl"), lines.join("\n") + "\n").unwrap();
    let plan = format!(
        "[experiment]\nname = \"{name}\"\nversion = 1\n\n\
         [target]\nbase_url = \"{url}\"\nmodel = \"{MODEL}\"\napi = \"chat\"\n\
         extra_body = {{ temperature = 0 }}\n\n\
         [workload]\ninput_tokens = 20\noutput_tokens = 160\n\n\
         [workload.dataset]\npath = \"prompts.jsonl\"\nnonce = false\n\n\
         [sweep]\nconcurrency = [1, 2]\n\n\
         [run]\nrequests = 4\nwarmup_requests = 0\ntrials = 1\nseed = 3\nkeep_answers = \"all\"\n"
    );
    let path = dir.join(format!("{name}.toml"));
    std::fs::write(&path, plan).unwrap();
    let r = run_plan_file(&path, dir).await;
    qexp_analysis::analyze(&r.dir).unwrap()
}

/// Runs the plan file at `path`, results under `dir`.
async fn run_plan_file(path: &Path, dir: &Path) -> qexp_runner::RunResult {
    let opts = RunOptions {
        plan: qexp_plan::Plan::load(path).unwrap(),
        out: dir.join("results"),
        overrides: Default::default(),
        shard: None,
        folder: Default::default(),
    };
    let (_tx, rx) = tokio::sync::watch::channel(false);
    run(opts, rx).await.expect("run succeeds")
}

/// Every point's answer health, for the log: the figures behind the verdict.
fn describe(a: &RunAnalysis) -> String {
    a.points
        .iter()
        .map(|p| {
            let issues: Vec<String> = p
                .answers
                .issues
                .iter()
                .map(|s| format!("{} {}/{}", s.issue.as_str(), s.count, p.answers.checked))
                .collect();
            format!(
                "{}: {} checked, broken {}, issues [{}]",
                p.point.label(),
                p.answers.checked,
                p.answers.broken(),
                issues.join(", ")
            )
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn smollm2_loops_are_flagged_and_clean_answers_are_not() {
    let Some(url) = server("QEXP_SMOLLM2_URL") else {
        return;
    };
    let _guard = crate::common::heavy().await;
    let tmp = tempfile::tempdir().unwrap();

    let looping = run_prompts(&tmp.path().join("loops"), &url, "loops", LOOPING).await;
    eprintln!("looping prompts:\n{}", describe(&looping));
    for p in &looping.points {
        assert!(p.answers.checked > 0, "{}", describe(&looping));
        assert!(p.answers.broken(), "{}", describe(&looping));
        assert!(
            p.answers.share(AnswerIssue::Loop) >= 0.5,
            "{}",
            describe(&looping)
        );
    }
    let first = looping
        .flags
        .first()
        .map(|f| f.to_string())
        .unwrap_or_default();
    eprintln!("first flag: {first}");
    assert!(
        matches!(
            looping.flags.first(),
            Some(qexp_analysis::Flag::BrokenAnswers { .. })
        ),
        "{:?}",
        looping.flags
    );

    let clean = run_prompts(&tmp.path().join("clean"), &url, "clean", CLEAN).await;
    eprintln!("clean prompts:\n{}", describe(&clean));
    for p in &clean.points {
        assert!(p.answers.checked > 0, "{}", describe(&clean));
        assert!(!p.answers.broken(), "{}", describe(&clean));
    }
    assert!(
        !clean
            .flags
            .iter()
            .any(|f| matches!(f, qexp_analysis::Flag::BrokenAnswers { .. })),
        "{:?}",
        clean.flags
    );
}

/// The built-in arithmetic set at 1 and 4 users on the same SmolLM2 server:
/// each load's accuracy with its interval, and `=` between the loads when
/// llama.cpp's batching leaves every answer as it was (SmolLM2's answers at
/// temperature 0 were byte-identical alone and four at a time when this was
/// written); if batching changed answers, the test says so with the figures.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn smollm2_accuracy_at_one_and_four_users() {
    let Some(url) = server("QEXP_SMOLLM2_URL") else {
        return;
    };
    let _guard = crate::common::heavy().await;
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let plan = format!(
        "[experiment]\nname = \"accuracy\"\nversion = 1\n\n\
         [target]\nbase_url = \"{url}\"\nmodel = \"{MODEL}\"\napi = \"chat\"\n\
         extra_body = {{ temperature = 0 }}\n\n\
         [workload]\ninput_tokens = 64\noutput_tokens = 8\n\n\
         [sweep]\nconcurrency = [1, 4]\n\n\
         [run]\nrequests = 80\nwarmup_requests = 0\ntrials = 1\nseed = 11\n\n\
         [accuracy]\nitems = \"arithmetic\"\nper_point = 40\n"
    );
    let path = dir.join("accuracy.toml");
    std::fs::write(&path, plan).unwrap();
    let r = run_plan_file(&path, dir).await;
    let a = qexp_analysis::analyze(&r.dir).unwrap();
    for p in &a.points {
        let acc = qexp_analysis::accuracy::Accuracy::of(p).expect("graded");
        eprintln!(
            "{}: {}/{} right = {:.1}%, 95% interval {:?}",
            p.point.label(),
            acc.right,
            acc.answered,
            acc.share * 100.0,
            acc.interval
        );
        assert_eq!(acc.graded, 40);
        assert_eq!(acc.answered, 40, "no graded request failed");
        let (lo, hi) = acc.interval.unwrap();
        assert!(lo <= acc.share && acc.share <= hi);
    }
    assert_eq!(a.accuracy_by_load.len(), 1);
    let c = &a.accuracy_by_load[0].diff;
    let t = c.test.unwrap();
    eprintln!(
        "c=4 against c=1: {} (change {:+.1} points, McNemar p = {}, p= {:?})",
        c.verdict.symbol(),
        t.estimate * 100.0,
        t.p,
        t.p_equivalent_holm
    );
    // Which answers differ between the loads, by item.
    let df = qexp_store::scan_requests(&r.dir)
        .unwrap()
        .collect()
        .unwrap();
    let texts = |c: u32| -> std::collections::BTreeMap<String, String> {
        let (items, text, conc) = (
            df.column("item_id").unwrap().str().unwrap().clone(),
            df.column("answer_text").unwrap().str().unwrap().clone(),
            df.column("concurrency").unwrap().u32().unwrap().clone(),
        );
        (0..df.height())
            .filter(|&i| conc.get(i) == Some(c))
            .filter_map(|i| Some((items.get(i)?.to_string(), text.get(i)?.to_string())))
            .collect()
    };
    let (one, four) = (texts(1), texts(4));
    let changed = one.iter().filter(|(k, v)| four.get(*k) != Some(v)).count();
    if changed == 0 {
        assert_eq!(t.p, 1.0);
        assert_eq!(
            c.verdict,
            qexp_analysis::diff::Verdict::Equivalent,
            "every answer the same at 4 users as at 1: {c:?}"
        );
    } else {
        eprintln!("llama.cpp's batching changed {changed} of 40 answers between 1 and 4 users");
        assert_ne!(c.verdict, qexp_analysis::diff::Verdict::NotTested);
    }
}

/// SmolLM2 launched three times by one plan: plainly (the baseline), plainly
/// again, and with llama.cpp's n-gram speculative decoding, which drafts a
/// looping answer's next words from its own past and so speeds up exactly
/// the answers that are broken. The same server launched twice answers
/// identically, as its own baseline across loads predicts; speculation is
/// lossless here too; qexp reads the drafts and acceptances llama.cpp
/// counts; and the loops' speed-up is never a plain `better`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn smollm2_twice_and_with_ngram_speculation() {
    let Some(_url) = server("QEXP_SMOLLM2_URL") else {
        return;
    };
    let _guard = crate::common::heavy().await;
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let script = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../scripts/real-servers/serve_smollm2.sh")
        .canonicalize()
        .unwrap();
    let deployment = |name: &str, extra: &str| {
        format!(
            "[[deployment]]\nname = \"{name}\"\ncommand = [\"{}\", \"--host\", \"{{host}}\", \
             \"--port\", \"{{port}}\", \"--alias\", \"{{model}}\"{extra}]\nready_timeout_s = 60\n\
             stop_grace_s = 5\n\n",
            script.display()
        )
    };
    let lines: Vec<String> = LOOPING
        .iter()
        .map(|p| serde_json::json!({ "prompt": p }).to_string())
        .collect();
    std::fs::write(dir.join("prompts.jsonl"), lines.join("\n") + "\n").unwrap();
    let plan = format!(
        "[experiment]\nname = \"twice\"\nversion = 1\n\n\
         [target]\nmodel = \"{MODEL}\"\napi = \"chat\"\nextra_body = {{ temperature = 0 }}\n\n\
         [workload]\ninput_tokens = 20\noutput_tokens = 32\n\n\
         [workload.dataset]\npath = \"prompts.jsonl\"\nnonce = false\n\n\
         [sweep]\nconcurrency = [1, 2]\n\n\
         [run]\nrequests = 4\nwarmup_requests = 0\ntrials = 2\nseed = 4\nkeep_answers = \"all\"\n\n\
         [analysis]\nbaseline = \"plain\"\n\n\
         [accuracy]\nitems = \"arithmetic\"\nper_point = 2\n\n{}{}{}",
        deployment("plain", ""),
        deployment("again", ""),
        deployment("ngram", ", \"--spec\", \"ngram\""),
    );
    let path = dir.join("twice.toml");
    std::fs::write(&path, plan).unwrap();
    let r = run_plan_file(&path, dir).await;
    let a = qexp_analysis::analyze(&r.dir).unwrap();
    for e in &a.equivalence {
        eprintln!(
            "{} against {}: identical {}/{} ({:.0}%), first parting {:?}; baselines {} {:?}, {} {:?}; beyond: {}",
            e.deployment,
            e.baseline,
            e.overall.identical,
            e.overall.pairs,
            e.overall.share * 100.0,
            e.overall.first_divergence_word,
            e.baseline,
            e.baseline_self.as_ref().map(|s| s.share),
            e.deployment,
            e.deployment_self.as_ref().map(|s| s.share),
            e.beyond_baseline
        );
    }
    let pair = |name: &str| a.equivalence.iter().find(|e| e.deployment == name).unwrap();
    // The same server twice: what its own baseline predicts.
    let again = pair("again");
    let own = again
        .baseline_self
        .as_ref()
        .expect("a baseline across loads");
    assert!(again.overall.pairs > 0);
    assert!(
        again.overall.share >= own.share - qexp_analysis::equivalence::EQUIVALENCE_SLACK,
        "{again:?}"
    );
    assert!(!again.beyond_baseline, "{again:?}");
    // Speculation at temperature 0 is lossless on this server.
    let ngram = pair("ngram");
    eprintln!("ngram against plain: {:?}", ngram.points);
    assert!(!ngram.beyond_baseline, "{ngram:?}");
    // qexp read llama.cpp's draft counters for the speculating deployment.
    let accepted: f64 = a
        .points
        .iter()
        .filter(|p| p.point.deployment.as_deref() == Some("ngram"))
        .flat_map(|p| &p.trials)
        .filter_map(|t| t.server_metric(qexp_analysis::ServerMetric::SpecAcceptanceLength))
        .sum();
    eprintln!("ngram acceptance length summed over trials: {accepted}");
    assert!(accepted > 0.0, "llama.cpp's spec_decode counters were read");
    // The loops are broken on every deployment, so no speed-up is `better`.
    let c = a.deployments.as_ref().unwrap();
    for d in &c.diffs {
        for p in &d.pairs {
            for m in &p.metrics {
                eprintln!("{} {} {}", d.b.run_id, m.metric.key(), m.verdict.symbol());
                assert_ne!(m.verdict, qexp_analysis::diff::Verdict::Better, "{m:?}");
            }
        }
    }
}

/// Embeddings from SmolLM2's GGUF on a llama.cpp started with
/// `--embeddings` (`start.sh smollm2-embeddings`, QEXP_SMOLLM2_EMBEDDINGS_URL):
/// batches of 2 inputs of 24 tokens at 1 and 2 users (short: SmolLM2
/// embeds about 150 tokens a second on the one thread it gets). Every request has an E2E and no
/// TTFT, the server counted every input, and the run's metrics are
/// requests/s, input tok/s and E2E.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn smollm2_embeddings_have_e2e_and_no_ttft() {
    let Some(url) = server("QEXP_SMOLLM2_EMBEDDINGS_URL") else {
        return;
    };
    let _heavy = crate::common::heavy().await;
    let tmp = tempfile::tempdir().unwrap();
    let plan = format!(
        "[experiment]\nname = \"smollm2-embeddings\"\nversion = 1\n\n\
         [target]\nbase_url = \"{url}\"\nmodel = \"{MODEL}\"\napi = \"embeddings\"\n\n\
         [workload]\ninput_tokens = 24\noutput_tokens = 1\nbatch = 2\n\n\
         [sweep]\nconcurrency = [1, 2]\n\n\
         [run]\nrequests = 4\nwarmup_requests = 1\ntrials = 1\n"
    );
    let path = tmp.path().join("embeddings.toml");
    std::fs::write(&path, plan).unwrap();
    let r = run_plan_file(&path, tmp.path()).await;
    let a = qexp_analysis::analyze(&r.dir).unwrap();
    let rows = qexp_store::scan_requests(&a.dir)
        .unwrap()
        .collect()
        .unwrap();
    let n = rows.height();
    assert_eq!(
        rows.column("error_class").unwrap().null_count(),
        n,
        "every request answered"
    );
    assert_eq!(rows.column("ttft_s").unwrap().null_count(), n, "no TTFT");
    let prompt = qexp_testkit::f64s(&rows, "prompt_tokens");
    assert!(
        prompt.iter().all(|&p| p == 48.0),
        "2 inputs of 24 tokens: {prompt:?}"
    );
    for p in &a.points {
        let (e2e, req_s) = (p.e2e_s.as_ref().unwrap(), p.req_s.as_ref().unwrap());
        println!(
            "{}: E2E {:.4} s, {:.2} req/s, {:.0} input tok/s",
            p.point.label(),
            e2e.median,
            req_s.median,
            p.input_tok_s.as_ref().unwrap().median
        );
        assert!(e2e.median > 0.0 && p.ttft_s.is_none() && p.agg_tok_s.is_none());
    }
    let d = qexp_analysis::diff(&a, &a, &Default::default()).unwrap();
    let keys: Vec<&str> = d.pairs[0].metrics.iter().map(|m| m.metric.key()).collect();
    assert_eq!(keys, ["req_s", "input_tok_s", "e2e_s", "failures"]);
}

/// Prompts that ask for a person as JSON with a name and an age. SmolLM2
/// fences its answer as a code block; after some it goes on with a sentence
/// about the JSON, so the answer is no longer JSON (at temperature 0 the
/// same prompts every time: the sailor and the astronaut).
const ASK_JSON: &[&str] = &[
    "Describe a teacher as a JSON object with a string \"name\" and an integer \"age\". Answer with the JSON object only.",
    "Describe a sailor as a JSON object with a string \"name\" and an integer \"age\". Answer with the JSON object only.",
    "Describe a baker as a JSON object with a string \"name\" and an integer \"age\". Answer with the JSON object only.",
    "Describe a child as a JSON object with a string \"name\" and an integer \"age\". Answer with the JSON object only.",
    "Describe an astronaut as a JSON object with a string \"name\" and an integer \"age\". Answer with the JSON object only.",
    "Describe a doctor as a JSON object with a string \"name\" and an integer \"age\". Answer with the JSON object only.",
];

/// The schema those prompts ask for.
const PERSON: &str = r#"{"type": "object", "required": ["name", "age"],
  "properties": {"name": {"type": "string"}, "age": {"type": "integer"}}}"#;

/// Runs 8 requests drawn from [`ASK_JSON`] (no nonce, temperature 0, up
/// to 64 tokens, one user) with [`PERSON`] as the response schema, sent as
/// `response_format` when `enforce`, else only checked.
async fn run_structured(dir: &Path, url: &str, enforce: bool) -> RunAnalysis {
    std::fs::create_dir_all(dir).unwrap();
    let lines: Vec<String> = ASK_JSON
        .iter()
        .map(|p| serde_json::json!({ "prompt": p }).to_string())
        .collect();
    std::fs::write(dir.join("prompts.jsonl"), lines.join("\n") + "\n").unwrap();
    std::fs::write(dir.join("person.json"), PERSON).unwrap();
    let plan = format!(
        "[experiment]\nname = \"structured-{enforce}\"\nversion = 1\n\n\
         [target]\nbase_url = \"{url}\"\nmodel = \"{MODEL}\"\napi = \"chat\"\n\
         extra_body = {{ temperature = 0 }}\n\n\
         [workload]\ninput_tokens = 40\noutput_tokens = 64\n\n\
         [workload.dataset]\npath = \"prompts.jsonl\"\nnonce = false\n\n\
         [workload.response_format]\nschema = \"person.json\"\nenforce = {enforce}\n\n\
         [sweep]\nconcurrency = [1]\n\n\
         [run]\nrequests = 8\nwarmup_requests = 0\ntrials = 1\nseed = 3\nkeep_answers = \"all\"\n"
    );
    let path = dir.join("structured.toml");
    std::fs::write(&path, plan).unwrap();
    let r = run_plan_file(&path, dir).await;
    qexp_analysis::analyze(&r.dir).unwrap()
}

/// llama.cpp turns `response_format`'s schema into a grammar: every answer
/// parses. Asked only in the prompt, SmolLM2 gets some right.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn smollm2_structured_output_parses_when_the_schema_is_enforced() {
    let Some(url) = server("QEXP_SMOLLM2_URL") else {
        return;
    };
    let _heavy = crate::common::heavy().await;
    let tmp = tempfile::tempdir().unwrap();
    let rate = |a: &RunAnalysis| a.points[0].answers.parse.clone().expect("a parse rate");
    let enforced = rate(&run_structured(&tmp.path().join("enforced"), &url, true).await);
    let asked = rate(&run_structured(&tmp.path().join("asked"), &url, false).await);
    eprintln!(
        "parse rate: {}/{} with response_format, {}/{} asked in the prompt only",
        enforced.parsed, enforced.checked, asked.parsed, asked.checked
    );
    assert_eq!((enforced.parsed, enforced.checked), (8, 8), "{enforced:?}");
    assert_eq!(asked.checked, 8, "{asked:?}");
    assert!(asked.parsed > 0, "{asked:?}");
}

/// Multi-turn sessions on SmolLM2's chat template, which gives a lone
/// prompt a system prompt that a conversation carries once: every later
/// turn's prompt must be the length the plan expects (the last prompt, its
/// answer, the new message, and what the template adds per turn as the
/// server measured it), so no trial is marked invalid for its prompts.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn smollm2_conversation_turns_have_the_planned_lengths() {
    let Some(url) = server("QEXP_SMOLLM2_URL") else {
        return;
    };
    let _heavy = crate::common::heavy().await;
    let tmp = tempfile::tempdir().unwrap();
    let plan = format!(
        "[experiment]\nname = \"smollm2-turns\"\nversion = 1\n\n\
         [target]\nbase_url = \"{url}\"\nmodel = \"{MODEL}\"\napi = \"chat\"\n\n\
         [workload]\ninput_tokens = 96\noutput_tokens = 24\n\n\
         [workload.multi_turn]\nturns = 3\nuser_tokens = 64\n\n\
         [sweep]\nconcurrency = [1]\n\n\
         [run]\nrequests = 2\nwarmup_requests = 0\ntrials = 1\nseed = 4\n"
    );
    let path = tmp.path().join("turns.toml");
    std::fs::write(&path, plan).unwrap();
    let r = run_plan_file(&path, tmp.path()).await;
    let a = qexp_analysis::analyze(&r.dir).unwrap();
    let rows = qexp_store::scan_requests(&a.dir)
        .unwrap()
        .collect()
        .unwrap();
    let (turn, got, planned) = (
        qexp_testkit::u32s(&rows, "turn"),
        qexp_testkit::u32s(&rows, "prompt_tokens"),
        qexp_testkit::u32s(&rows, "input_tokens_planned"),
    );
    let off: Vec<(u32, u32, u32)> = (0..rows.height())
        .map(|i| (turn[i], got[i], planned[i]))
        .collect();
    eprintln!("(turn, server prompt tokens, planned): {off:?}");
    assert!(off.iter().any(|t| t.0 == 3), "{off:?}");
    assert!(
        off.iter().all(|(_, g, p)| g.abs_diff(*p) <= 2),
        "every turn within 2 tokens of its plan: {off:?}"
    );
    let invalid: Vec<&Option<String>> = a
        .points
        .iter()
        .flat_map(|p| p.trials.iter().map(|t| &t.invalid_reason))
        .filter(|r| r.is_some())
        .collect();
    assert!(invalid.is_empty(), "{invalid:?}");
}
