//! Embeddings and rerank on the simulator: requests that only prefill,
//! answered once. Their E2E is the profile's prefill of every input (a
//! known truth), their rows have no TTFT, and the report, the charts and
//! the diff speak of requests/s, input tok/s and E2E only.

use crate::common::{heavy, run_plan};
use qexp_plan::ApiKind;
use qexp_sim::{SimProfile, SimServer};
use qexp_testkit::{f64s, PlanFixture};

const PREFILL_TOK_S: f64 = 20_000.0;
const FIXED_S: f64 = 0.02;
const INPUT: u32 = 200;
const BATCH: u32 = 4;

/// `exact` with a prefill of `PREFILL_TOK_S` and `FIXED_S` of fixed latency.
async fn sim() -> SimServer {
    SimServer::start(SimProfile {
        name: "pooling".into(),
        prefill_fixed_s: FIXED_S,
        prefill_tokens_per_s: PREFILL_TOK_S,
        prefix_cache_tokens: 0,
        ..SimProfile::by_name("exact").expect("built-in profile")
    })
    .await
    .expect("simulator starts")
}

fn plan(url: &str, api: ApiKind) -> PlanFixture {
    PlanFixture::new(&format!("pooling-{api}"))
        .target(url)
        .api(api)
        .input(INPUT)
        .set("workload.batch", BATCH)
        .concurrency(&[1, 2])
        .requests(4)
        .warmup(1)
        .trials(1)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn embeddings_and_rerank_have_e2e_and_no_ttft() {
    let _heavy = heavy().await;
    let sim = sim().await;
    let tmp = tempfile::tempdir().unwrap();
    for api in [ApiKind::Embeddings, ApiKind::Rerank] {
        let a = run_plan(tmp.path(), &plan(&sim.base_url(), api)).await;
        let rows = qexp_store::scan_requests(&a.dir)
            .unwrap()
            .collect()
            .unwrap();
        let n = rows.height();
        assert!(n >= 8, "{api}: {n} rows");
        assert_eq!(
            rows.column("ttft_s").unwrap().null_count(),
            n,
            "{api}: no TTFT"
        );
        assert_eq!(
            rows.column("tpot_s").unwrap().null_count(),
            n,
            "{api}: no TPOT"
        );
        assert_eq!(
            rows.column("error_class").unwrap().null_count(),
            n,
            "{api}: all ok"
        );
        // The server counted every input (query and document pair) of the batch.
        let prompt = f64s(&rows, "prompt_tokens");
        assert!(
            prompt.iter().all(|&p| p == f64::from(INPUT * BATCH)),
            "{api}: {prompt:?}"
        );
        // Alone (c=1), E2E is the prefill of the batch: the profile's truth.
        let alone = a.points.iter().find(|p| p.point.concurrency == 1).unwrap();
        let e2e = alone.e2e_s.as_ref().unwrap().median;
        let truth = FIXED_S + f64::from(INPUT * BATCH) / PREFILL_TOK_S;
        println!("{api}: E2E {e2e:.4} s, truth {truth:.4} s");
        assert!((e2e / truth - 1.0).abs() < 0.15, "{api}: {e2e} vs {truth}");
        assert!(alone.ttft_s.is_none() && alone.agg_tok_s.is_none(), "{api}");
        let req_s = alone.req_s.as_ref().unwrap().median;
        let input_tok_s = alone.input_tok_s.as_ref().unwrap().median;
        assert!((input_tok_s / req_s - f64::from(INPUT * BATCH)).abs() < 1e-6);
        // Nothing generated is not a token mismatch, an empty answer or a
        // failure (a busy test machine may still be flagged as such).
        let wrong = a.flags.iter().filter(|f| {
            matches!(
                f,
                qexp_analysis::Flag::TokenMismatch { .. }
                    | qexp_analysis::Flag::BrokenAnswers { .. }
                    | qexp_analysis::Flag::Failures { .. }
                    | qexp_analysis::Flag::PointInvalid { .. }
            )
        });
        assert_eq!(wrong.count(), 0, "{api}: {:?}", a.flags);

        let templates = qexp_report::Templates::builtin().expect("built-in templates");
        let out = tmp.path().join(format!("report-{api}"));
        let files = qexp_report::render_run(&a, &templates, &out).expect("report renders");
        let md = std::fs::read_to_string(&files[0]).unwrap();
        assert!(
            md.contains("| Requests (req/s) |") && md.contains("| E2E (s) |"),
            "{md}"
        );
        assert!(
            md.contains("Peak request throughput") && !md.contains("Peak aggregate output"),
            "{api}: the summary's throughput is requests/s\n{md}"
        );
        for absent in ["TTFT (s)", "ITL p99", "Aggregate (tok/s)", "decode"] {
            let results = &md[md.find("## Results").unwrap()..md.find("## How to read").unwrap()];
            assert!(!results.contains(absent), "{api}: {absent} in\n{results}");
        }
        let charts: Vec<String> = files
            .iter()
            .filter_map(|f| f.file_name()?.to_str().map(str::to_string))
            .filter(|f| f.ends_with(".svg"))
            .collect();
        assert!(
            charts.iter().any(|c| c == "req_vs_concurrency.svg"),
            "{charts:?}"
        );
        assert!(!charts.iter().any(|c| c.contains("ttft")), "{charts:?}");

        let d = qexp_analysis::diff(&a, &a, &Default::default()).expect("compares with itself");
        let metrics: Vec<&str> = d.pairs[0].metrics.iter().map(|m| m.metric.key()).collect();
        assert_eq!(
            metrics,
            ["req_s", "input_tok_s", "e2e_s", "failures"],
            "{api}"
        );
    }
    sim.shutdown().await;
}

/// A server that lists a model and answers 404 to everything else: one
/// without a rerank (or embeddings) endpoint.
async fn models_only() -> String {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move {
        while let Ok((mut conn, _)) = listener.accept().await {
            tokio::spawn(async move {
                let mut buf = vec![0u8; 65536];
                let mut got = 0;
                while !buf[..got].windows(4).any(|w| w == b"\r\n\r\n") {
                    match conn.read(&mut buf[got..]).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => got += n,
                    }
                }
                let head = String::from_utf8_lossy(&buf[..got]).to_string();
                let (status, body) = if head.starts_with("GET /v1/models") {
                    (
                        "200 OK",
                        r#"{"object":"list","data":[{"id":"m","object":"model"}]}"#,
                    )
                } else {
                    (
                        "404 Not Found",
                        r#"{"error":{"message":"File Not Found","code":404}}"#,
                    )
                };
                let answer = format!(
                    "HTTP/1.1 {status}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                    body.len()
                );
                let _ = conn.write_all(answer.as_bytes()).await;
            });
        }
    });
    url
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rerank_plan_against_a_server_without_the_endpoint_is_refused_in_one_sentence() {
    let url = models_only().await;
    let tmp = tempfile::tempdir().unwrap();
    let plan = plan(&url, ApiKind::Rerank).write(tmp.path());
    let results = tmp.path().join("results");
    let out = crate::common::qexp(&[
        "run",
        plan.to_str().unwrap(),
        "--out",
        results.to_str().unwrap(),
        "--no-report",
    ])
    .output()
    .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    let lines: Vec<&str> = stderr.lines().filter(|l| l.contains("error")).collect();
    assert_eq!(lines.len(), 1, "{stderr}");
    assert!(
        lines[0].contains(&format!(
            "{url} does not serve /v1/rerank for api = \"rerank\" (HTTP 404: File Not Found)"
        )),
        "{stderr}"
    );
    // Nothing measured: no run was written.
    assert!(
        !results.exists() || crate::common::entries(&results).is_empty(),
        "{stderr}"
    );
}
