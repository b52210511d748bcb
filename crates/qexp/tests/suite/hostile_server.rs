//! A run against a hostile server: one that echoes the request's headers
//! and body back everywhere it can (model list, version, metrics, error
//! messages, the stream) and names its model `<script>…`. The API key and a
//! class's tenant header, both read from environment variables the plan
//! names, must appear in no output file (manifest, Parquet, report, diff)
//! and in neither output stream of `qexp run` or `qexp diff`; the server's
//! text must be escaped in HTML.

use axum::body::Bytes;
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::Router;
use polars::prelude::*;
use qexp_testkit::PlanFixture;
use serde_json::json;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

const KEY: &str = "sk-qexp-fake-7f3a9c2e51d04b8a";
const KEY_ENV: &str = "QEXP_HOSTILE_TEST_KEY";
const TENANT: &str = "tenant-secret-4b1d0c";
const TENANT_ENV: &str = "QEXP_HOSTILE_TEST_TENANT";
const MODEL: &str = "<script>alert(1)</script>";

/// Everything the request carried, as one line.
fn echo(headers: &HeaderMap, body: &[u8]) -> String {
    let mut s = String::new();
    for (k, v) in headers {
        s.push_str(&format!("{k}: {}; ", String::from_utf8_lossy(v.as_bytes())));
    }
    s.push_str(&String::from_utf8_lossy(body));
    s
}

async fn models(headers: HeaderMap) -> Response {
    let e = echo(&headers, b"");
    axum::Json(
        json!({"object": "list", "data": [{"id": MODEL, "owned_by": e, "max_model_len": 100000}]}),
    )
    .into_response()
}

async fn version(headers: HeaderMap) -> Response {
    axum::Json(json!({"version": echo(&headers, b"")})).into_response()
}

async fn metrics(headers: HeaderMap) -> Response {
    let e = echo(&headers, b"").replace('"', "'");
    format!("# TYPE echo_info gauge\necho_info{{seen=\"{e}\"}} 1\n# TYPE echo_requests_total counter\necho_requests_total{{seen=\"{e}\"}} 3\n")
        .into_response()
}

async fn tokenize(headers: HeaderMap, body: Bytes) -> Response {
    let v: serde_json::Value = serde_json::from_slice(&body).unwrap_or_default();
    let words = v.to_string().split_whitespace().count();
    axum::Json(json!({"count": words + 10, "echo": echo(&headers, &body)})).into_response()
}

async fn chat(
    axum::extract::State(n): axum::extract::State<Arc<AtomicU64>>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let e = echo(&headers, &body);
    if n.fetch_add(1, Ordering::Relaxed) % 3 == 2 {
        let msg = format!("<script>alert(2)</script> you sent: {e}");
        let body = json!({"error": {"message": msg, "type": "BadRequestError"}});
        return (StatusCode::INTERNAL_SERVER_ERROR, axum::Json(body)).into_response();
    }
    let chunk = |content: &str, finish: Option<&str>| json!({"choices": [{"index": 0, "delta": {"content": content}, "finish_reason": finish}], "echo": e});
    let mut sse = String::new();
    for v in [
        chunk(&e, None),
        chunk(" two", Some("length")),
        json!({"choices": [], "usage": {"prompt_tokens": 60, "completion_tokens": 2}, "echo": e}),
    ] {
        sse.push_str(&format!("data: {v}\n\n"));
    }
    sse.push_str("data: [DONE]\n\n");
    ([(header::CONTENT_TYPE, "text/event-stream")], sse).into_response()
}

/// Serves the hostile server on 127.0.0.1:0 from a thread of its own.
fn start_server() -> String {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async move {
            let app = Router::new()
                .route("/v1/models", get(models))
                .route("/version", get(version))
                .route("/metrics", get(metrics))
                .route("/tokenize", post(tokenize))
                .route("/v1/chat/completions", post(chat))
                .with_state(Arc::new(AtomicU64::new(0)));
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            tx.send(listener.local_addr().unwrap()).unwrap();
            axum::serve(listener, app).await.unwrap();
        });
    });
    format!("http://{}", rx.recv().unwrap())
}

fn qexp(args: &[&str]) -> (i32, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_qexp"))
        .args(args)
        .env(KEY_ENV, KEY)
        .env(TENANT_ENV, TENANT)
        .env("RUST_LOG", "trace")
        .output()
        .expect("qexp runs");
    let text = format!(
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.code().unwrap_or(-1), text)
}

fn files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            files(&path, out);
        } else {
            out.push(path);
        }
    }
}

/// The text of every string cell of a Parquet file (it is compressed on disk).
fn parquet_strings(path: &Path) -> String {
    let df = LazyFrame::scan_parquet(
        PlRefPath::new(path.to_string_lossy().as_ref()),
        ScanArgsParquet::default(),
    )
    .unwrap()
    .collect()
    .unwrap();
    let mut text = String::new();
    for col in df.columns() {
        if let Ok(s) = col.str() {
            for v in s.iter().flatten() {
                text.push_str(v);
                text.push('\n');
            }
        }
    }
    text
}

#[test]
fn the_api_key_never_leaves_and_server_text_is_escaped_in_html() {
    let _heavy = crate::common::shared_blocking();
    let url = start_server();
    let tmp = tempfile::tempdir().unwrap();
    let plan = PlanFixture::new("hostile")
        .target(&url)
        .set("target.api_key_env", KEY_ENV)
        .input(60)
        .output(2)
        .concurrency(&[1, 2])
        .requests(6)
        .warmup(1)
        .trials(2)
        .set("tolerance.max_failed_fraction", 0.5)
        .raw(&format!(
            "[[workload.class]]\nname = \"tenant\"\nshare = 1.0\n\
             headers_env = {{ \"x-tenant-key\" = \"{TENANT_ENV}\" }}\n"
        ))
        .write(tmp.path());
    let (results, reports, diff) = (
        tmp.path().join("results"),
        tmp.path().join("reports"),
        tmp.path().join("diff"),
    );
    let s = |p: &Path| p.to_str().unwrap().to_string();
    let (code, run_log) = qexp(&[
        "run",
        &s(&plan),
        "--out",
        &s(&results),
        "--reports",
        &s(&reports),
    ]);
    assert_eq!(code, 0, "qexp run: {run_log}");
    let mut runs = Vec::new();
    files(&results, &mut runs);
    let run_dir = runs
        .iter()
        .find(|p| p.ends_with("manifest.json"))
        .and_then(|p| p.parent())
        .expect("a run folder")
        .to_path_buf();
    let (code, diff_log) = qexp(&[
        "diff",
        &s(&run_dir),
        &s(&run_dir),
        "--format",
        "term,md,html",
        "--out",
        &s(&diff),
    ]);
    assert_eq!(code, 0, "qexp diff: {diff_log}");

    let mut outputs = Vec::new();
    for dir in [&results, &reports, &diff] {
        files(dir, &mut outputs);
    }
    let mut kinds = std::collections::BTreeSet::new();
    let mut redacted_somewhere = false;
    for path in &outputs {
        let bytes = std::fs::read(path).unwrap();
        let mut text = String::from_utf8_lossy(&bytes).into_owned();
        let ext = path.extension().and_then(|e| e.to_str()).unwrap_or("");
        if ext == "parquet" {
            text.push_str(&parquet_strings(path));
        }
        kinds.insert(ext.to_string());
        assert!(!text.contains(KEY), "the key is in {}", path.display());
        assert!(
            !text.contains(TENANT),
            "the tenant is in {}",
            path.display()
        );
        redacted_somewhere |= text.contains(qexp_client::REDACTED);
    }
    for ext in ["json", "parquet", "md", "html"] {
        assert!(
            kinds.contains(ext),
            "no .{ext} output was checked: {kinds:?}"
        );
    }
    assert!(!run_log.contains(KEY), "the key is in qexp run's output");
    assert!(!diff_log.contains(KEY), "the key is in qexp diff's output");
    assert!(
        !run_log.contains(TENANT) && !diff_log.contains(TENANT),
        "the tenant is in qexp's output"
    );
    // The echo did reach the outputs (so the check above could fail), redacted.
    assert!(redacted_somewhere, "no output carried the server's echo");

    let read = |p: PathBuf| std::fs::read_to_string(p).unwrap();
    let report_html = outputs
        .iter()
        .find(|p| p.ends_with("report.html"))
        .map(|p| read(p.clone()))
        .expect("report.html");
    let diff_html = read(diff.join("diff.html"));
    for (name, html) in [("report.html", &report_html), ("diff.html", &diff_html)] {
        assert!(!html.contains("<script>alert"), "raw <script> in {name}");
        assert!(
            html.contains("&lt;script&gt;alert(1)&lt;&#x2F;script&gt;")
                || html.contains("&lt;script&gt;alert(1)&lt;/script&gt;"),
            "the escaped model name is missing from {name}"
        );
    }
}
