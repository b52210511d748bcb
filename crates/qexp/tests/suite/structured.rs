//! Tool calls and structured output end to end: a plan whose tool schema is
//! not JSON Schema stops before anything is sent; against the simulator,
//! tool calls that break as the batch grows give a parse rate that falls
//! with load, flagged with the answers; a multi-turn tool session answers
//! each call and goes on.

use crate::common::{qexp, run_plan};
use qexp_analysis::Flag;
use qexp_plan::ApiKind;
use qexp_testkit::PlanFixture;
use std::path::Path;

/// A tools file with one tool, `get_weather(city, days)`.
const TOOLS: &str = r#"[{"type": "function", "function": {
    "name": "get_weather",
    "description": "The forecast for a city.",
    "parameters": {"type": "object", "required": ["city", "days"],
                   "properties": {"city": {"type": "string"},
                                  "days": {"type": "integer", "minimum": 1}}}}}]"#;

fn tools_plan(dir: &Path, name: &str, target: &str) -> PlanFixture {
    std::fs::write(dir.join("tools.json"), TOOLS).unwrap();
    PlanFixture::new(name)
        .target(target)
        .api(ApiKind::Chat)
        .input(40)
        .output(12)
        .set("workload.tools.file", "tools.json")
        .set("workload.tools.choice", "required")
        .warmup(0)
        .trials(1)
        .seed(5)
}

#[test]
fn a_tool_schema_that_is_not_json_schema_stops_the_run_before_anything_is_sent() {
    let tmp = tempfile::tempdir().unwrap();
    // A server that counts what reaches it: nothing must.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let plan = tools_plan(tmp.path(), "bad-tools", &url).concurrency(&[1]);
    let path = plan.write(tmp.path());
    // `"type": "integer"` misspelt: not a type JSON Schema knows.
    std::fs::write(
        tmp.path().join("tools.json"),
        TOOLS.replace("\"integer\"", "\"int\""),
    )
    .unwrap();
    let out = qexp(&["run", path.to_str().unwrap()]).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    let text = plan.toml();
    let line = text
        .lines()
        .position(|l| l.starts_with("file = \"tools.json\""))
        .unwrap()
        + 1;
    let lines: Vec<&str> = stderr.lines().filter(|l| !l.trim().is_empty()).collect();
    assert_eq!(lines.len(), 1, "one sentence: {stderr}");
    assert!(
        lines[0].contains(&format!("bad-tools.toml:{line}:8: `workload.tools.file`: ")),
        "{stderr}"
    );
    assert!(
        lines[0].contains("tool \"get_weather\"'s parameters is not JSON Schema")
            && lines[0].contains("/properties/days/type"),
        "{stderr}"
    );
    assert!(
        matches!(listener.accept(), Err(e) if e.kind() == std::io::ErrorKind::WouldBlock),
        "nothing may reach the server"
    );
    assert!(!tmp.path().join("results").exists(), "no run folder");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tool_calls_that_break_under_load_are_flagged() {
    let _serial = crate::common::shared().await;
    let tmp = tempfile::tempdir().unwrap();
    // Alone every call parses; each other sequence in the batch at a
    // request's admission makes 10% of calls malformed. `exact` prefills
    // one prompt at a time (50 ms each) and decodes 12 tokens in 120 ms,
    // so at 16 users a request joins a batch of a few, not of 16.
    let plan = tools_plan(tmp.path(), "tools", "sim:exact?malformed_per_seq=0.1")
        .concurrency(&[1, 16])
        .requests(32);
    let run = run_plan(tmp.path(), &plan).await;
    let rate = |i: usize| run.points[i].answers.parse.clone().expect("a parse rate");
    let (alone, loaded) = (rate(0), rate(1));
    eprintln!("parse rate: {alone:?} at c=1, {loaded:?} at c=16");
    assert_eq!((alone.parsed, alone.checked), (32, 32));
    assert_eq!(loaded.checked, 32);
    // How large the batch is at each admission depends on how fast this
    // host sends, so the share is bounded only from above: on a slow host a
    // request can join a batch of ten and every call breaks.
    assert!(loaded.parsed <= 28, "{loaded:?}");
    let (lo, hi) = loaded.interval.unwrap();
    assert!(lo <= loaded.share && loaded.share <= hi, "{loaded:?}");
    let flag = run
        .flags
        .iter()
        .find(|f| matches!(f, Flag::ParseRateFalls { .. }))
        .unwrap_or_else(|| panic!("a parse-rate flag: {:?}", run.flags));
    assert_eq!(flag.point_id(), Some(run.points[1].point.id));
    assert_eq!(run.flags[0].title(), "Parse rate falls under load", "first");
    // Every request carries its tool call, and its time to the first tool token.
    let df = qexp_store::scan_requests(&run.dir)
        .unwrap()
        .collect()
        .unwrap();
    let calls = qexp_testkit::u32s(&df, "tool_calls");
    assert!(calls.iter().all(|c| *c == 1), "{calls:?}");
    let (ttft, tool) = (
        qexp_testkit::f64s(&df, "ttft_s"),
        qexp_testkit::f64s(&df, "ttft_tool_s"),
    );
    assert!(ttft.iter().zip(&tool).all(|(a, b)| a == b && *a > 0.0));
    // The report's headline says it.
    let templates = qexp_report::Templates::builtin().unwrap();
    let written = qexp_report::render_run(&run, &templates, &tmp.path().join("report")).unwrap();
    let md = std::fs::read_to_string(&written[0]).unwrap();
    assert!(md.contains("Parse rate falls under load"), "{md}");
    assert!(md.contains("FALLS under load at"), "{md}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tool_session_answers_each_call_and_goes_on() {
    let _serial = crate::common::shared().await;
    let tmp = tempfile::tempdir().unwrap();
    // Three turns per session, every answer a tool call (`required`): turns
    // 2 and 3 send the call back with its result, and the server sees the
    // conversation grow.
    let plan = tools_plan(tmp.path(), "tool-session", "sim:fast")
        .concurrency(&[2])
        .requests(6)
        .set("workload.multi_turn.turns", 3_i64)
        .set("workload.multi_turn.user_tokens", 32_i64);
    let run = run_plan(tmp.path(), &plan).await;
    let df = qexp_store::scan_requests(&run.dir)
        .unwrap()
        .collect()
        .unwrap();
    let errors = df.column("error_class").unwrap().null_count();
    assert_eq!(errors, df.height(), "every turn is answered");
    let calls = qexp_testkit::u32s(&df, "tool_calls");
    assert!(calls.iter().all(|c| *c == 1), "{calls:?}");
    let parse = run.points[0].answers.parse.clone().expect("a parse rate");
    let rows = df.height() as u64;
    assert_eq!((parse.parsed as u64, parse.checked as u64), (rows, rows));
    let (session, turn, prompt) = (
        qexp_testkit::u32s(&df, "session"),
        qexp_testkit::u32s(&df, "turn"),
        qexp_testkit::u32s(&df, "prompt_tokens"),
    );
    let mut sessions = session.clone();
    sessions.sort();
    sessions.dedup();
    assert!(sessions.len() >= 2, "{sessions:?}");
    for s in sessions {
        let mut by_turn: Vec<(u32, u32)> = (0..df.height())
            .filter(|&i| session[i] == s)
            .map(|i| (turn[i], prompt[i]))
            .collect();
        by_turn.sort();
        let turns: Vec<u32> = by_turn.iter().map(|t| t.0).collect();
        assert_eq!(turns, [1, 2, 3]);
        assert!(
            by_turn.windows(2).all(|w| w[1].1 > w[0].1 + 16),
            "each turn resends the conversation with the result: {by_turn:?}"
        );
    }
}
