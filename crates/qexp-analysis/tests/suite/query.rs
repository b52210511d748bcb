//! SQL over a run's rows: the founding example (p95 TTFT of requests with
//! more than 900 prompt tokens, per concurrency) against the formula the
//! synthetic run was written from, warm-ups kept out of `requests`, and
//! errors that say what is wrong.

use qexp_analysis::query::{query, Cell, QueryError};
use qexp_analysis::stats::quantile;
use qexp_testkit::{founding_like, SynthRun};

const PLAN: &str = r#"[experiment]
name = "q"
version = 1

[target]
base_url = "sim:fast"

[workload]
input_tokens = 1000
output_tokens = 50

[sweep]
concurrency = [1, 4]

[run]
requests = "3x"
warmup_requests = 2
trials = 2
"#;

fn run() -> (tempfile::TempDir, std::path::PathBuf) {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir =
        SynthRun::new(PLAN, "20261201T100000Z-aaaaaa", "2026-12-01T10:00:00Z").write(tmp.path());
    (tmp, dir)
}

#[test]
fn p95_ttft_of_long_prompts_per_concurrency_matches_the_rows() {
    let (_tmp, dir) = run();
    let t = query(
        &dir,
        "SELECT concurrency, COUNT(*) AS n, QUANTILE_CONT(ttft_s, 0.95) AS p95 \
         FROM requests WHERE prompt_tokens > 900 GROUP BY concurrency ORDER BY concurrency",
    )
    .expect("query");
    assert_eq!(t.columns, ["concurrency", "n", "p95"]);
    assert_eq!(t.total_rows, 2);
    let spec = SynthRun::new(PLAN, "x", "2026-12-01T10:00:00Z");
    let plan = qexp_plan::Plan::parse(std::path::Path::new("q.toml"), PLAN).expect("plan");
    for (row, p) in t.rows.iter().zip(plan.points()) {
        assert_eq!(row[0], Cell::Int(i64::from(p.concurrency)));
        // 2 trials × 3c measured requests; the warm-ups are not in `requests`.
        assert_eq!(row[1], Cell::Int(i64::from(2 * p.requests)));
        let mut ttft: Vec<f64> = (1..=2)
            .flat_map(|trial| {
                let spec = &spec;
                let p = &p;
                (p.warmup..p.warmup + p.requests).map(move |i| founding_like(spec, trial, p, i).0)
            })
            .collect();
        ttft.sort_by(f64::total_cmp);
        let want = quantile(&ttft, 0.95).expect("values");
        let Cell::Float(got) = row[2] else {
            panic!("p95 is {:?}", row[2])
        };
        assert!((got - want).abs() < 1e-9, "{got} vs {want}");
    }
}

#[test]
fn all_requests_keeps_the_warmups_and_points_has_a_row_per_trial_and_point() {
    let (_tmp, dir) = run();
    let t = query(
        &dir,
        "SELECT COUNT(*) AS n, SUM(CAST(warmup AS INT)) AS w FROM all_requests",
    )
    .expect("query");
    // (3 + 12) measured + 2 × 2 warm-ups, per trial.
    assert_eq!(t.rows[0], vec![Cell::Int(2 * (15 + 4)), Cell::Int(8)]);
    let t = query(
        &dir,
        "SELECT trial, point_id FROM points ORDER BY trial, point_id",
    )
    .expect("query");
    assert_eq!(t.total_rows, 4);
}

#[test]
fn bad_queries_say_what_is_wrong() {
    let (_tmp, dir) = run();
    let e = query(&dir, "DROP TABLE requests").unwrap_err();
    assert!(matches!(e, QueryError::NotSelect { .. }), "{e}");
    let e = query(&dir, "SELECT no_such_column FROM requests")
        .unwrap_err()
        .to_string();
    assert!(e.contains("no_such_column"), "{e}");
    assert!(!e.contains('\n'), "{e}");
    let e = query(&dir, "SELECT * FROM nowhere")
        .unwrap_err()
        .to_string();
    assert!(e.contains("nowhere"), "{e}");
    let e = query(&dir.join("missing"), "SELECT 1")
        .unwrap_err()
        .to_string();
    assert!(e.contains("missing"), "{e}");
}

#[test]
fn a_query_reads_the_run_and_nothing_else() {
    let (_tmp, dir) = run();
    // A file beside the run, which polars' table functions would read.
    let outside = dir.join("requests.parquet").display().to_string();
    for sql in [
        format!("SELECT * FROM read_parquet('{outside}')"),
        format!("SELECT COUNT(*) FROM requests JOIN read_csv('{outside}') AS x ON TRUE"),
        format!("SELECT * FROM \"{outside}\""),
        "SELECT * FROM points, nowhere".to_string(),
        "WITH t AS (SELECT * FROM elsewhere) SELECT * FROM t".to_string(),
        format!(
            "SELECT * FROM requests WHERE trial IN (SELECT trial FROM read_parquet('{outside}'))"
        ),
        format!("SELECT (SELECT COUNT(*) FROM read_parquet('{outside}')) AS n FROM points"),
        "SELECT trial FROM points UNION SELECT trial FROM elsewhere".to_string(),
        "SELECT * FROM (SELECT * FROM other.requests) AS r".to_string(),
    ] {
        let e = query(&dir, &sql).unwrap_err();
        assert!(matches!(e, QueryError::Source { .. }), "{sql}: {e}");
        assert!(
            e.to_string()
                .starts_with("a query reads only the run's tables"),
            "{e}"
        );
    }
    // Its own WITH names, subqueries and joins of the run's tables are fine.
    let t = query(
        &dir,
        "WITH long AS (SELECT * FROM requests WHERE prompt_tokens > 900) \
         SELECT COUNT(*) AS n FROM long JOIN (SELECT DISTINCT trial FROM points) p \
         ON long.trial = p.trial",
    )
    .expect("query");
    assert_eq!(t.rows[0], vec![Cell::Int(2 * 15)]);
}

#[test]
fn a_result_without_order_by_comes_back_in_one_order() {
    let (_tmp, dir) = run();
    let sql = "SELECT trial, concurrency, COUNT(*) AS n FROM requests GROUP BY trial, concurrency";
    let first = query(&dir, sql).expect("query");
    let keys: Vec<(Cell, Cell)> = first
        .rows
        .iter()
        .map(|r| (r[0].clone(), r[1].clone()))
        .collect();
    assert_eq!(
        keys,
        [(1, 1), (1, 4), (2, 1), (2, 4)].map(|(t, c)| (Cell::Int(t), Cell::Int(c)))
    );
    for _ in 0..20 {
        assert_eq!(query(&dir, sql).expect("query"), first);
    }
    // The run's tables may be quoted; a list column has no order and is passed over.
    let t = query(
        &dir,
        "SELECT trial, chunk_offsets_s FROM \"requests\" WHERE trial = 1",
    )
    .expect("query");
    assert!(t.total_rows > 1);
    // Rows kept by LIMIT without an ORDER BY could differ from one render to the next.
    for sql in [
        "SELECT * FROM requests LIMIT 3",
        "SELECT trial, COUNT(*) AS n FROM requests GROUP BY trial LIMIT 1",
        "SELECT * FROM requests WHERE trial IN (SELECT trial FROM points LIMIT 1) ORDER BY trial",
    ] {
        let e = query(&dir, sql).unwrap_err();
        assert!(matches!(e, QueryError::Unordered { .. }), "{sql}: {e}");
    }
    // An ORDER BY inside the parentheses that are the whole query is kept too.
    let t = query(
        &dir,
        "(SELECT concurrency FROM requests GROUP BY concurrency ORDER BY concurrency DESC LIMIT 5)",
    )
    .expect("query");
    assert_eq!(t.rows, vec![vec![Cell::Int(4)], vec![Cell::Int(1)]]);
    // A query's own ORDER BY is kept.
    let t = query(
        &dir,
        "SELECT concurrency FROM requests GROUP BY concurrency ORDER BY concurrency DESC",
    )
    .expect("query");
    assert_eq!(t.rows, vec![vec![Cell::Int(4)], vec![Cell::Int(1)]]);
}
