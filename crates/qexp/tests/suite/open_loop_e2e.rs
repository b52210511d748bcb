//! Open-loop runs end to end in-process against the simulator's `exact`
//! profile (TTFT 50 ms, 10 ms per token): rows keep their planned schedule,
//! a cap on requests in flight shows up as backlog in the response time
//! from the schedule, and the report renders the schedule section with
//! goodput and capacity.

use polars::prelude::*;
use qexp_plan::Plan;
use qexp_runner::{run, RunOptions};
use qexp_testkit::f64s;

const PLAN: &str = r#"
[experiment]
name = "open-e2e"
version = 1

[target]
base_url = "sim:exact"
api = "chat"
extra_body = { ignore_eos = true }

[workload]
input_tokens = 100
output_tokens = 6

[sweep]
rate = [20, 200]

[load]
arrival = "constant"
duration_s = 0.5
max_in_flight = 4

[slo]
ttft_s = 0.2
percentile = 0.9

[run]
warmup_requests = 1
trials = 1
seed = 3
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rate_points_keep_their_schedule_and_report_goodput() {
    let _heavy = crate::common::heavy().await;
    let tmp = tempfile::tempdir().unwrap();
    let plan_path = tmp.path().join("open.toml");
    std::fs::write(&plan_path, PLAN).unwrap();
    let opts = RunOptions {
        plan: Plan::load(&plan_path).unwrap(),
        out: tmp.path().join("results"),
        overrides: Default::default(),
        shard: None,
    };
    let (_tx, rx) = tokio::sync::watch::channel(false);
    let result = run(opts, rx).await.expect("run succeeds");

    let df = qexp_store::scan_requests(&result.dir)
        .unwrap()
        .filter(col("warmup").not())
        .sort(["point_id", "request_index"], Default::default())
        .collect()
        .unwrap();
    // 20/s × 0.5 s = 10 requests, 200/s × 0.5 s = 100.
    assert_eq!(df.height(), 110);
    assert_eq!(df.column("error_class").unwrap().null_count(), 110);
    let sched = f64s(&df, "scheduled_unix_s");
    let queue = f64s(&df, "queue_s");
    // Point 0: constant 50 ms spacing, exactly as planned.
    for w in sched[..10].windows(2) {
        assert!((w[1] - w[0] - 0.05).abs() < 1e-6, "{:?}", &sched[..10]);
    }
    // At 20/s each request (~0.1 s) ends before the cap binds: little lag
    // (a busy machine adds some client lag, never the backlog below).
    let mut lag0 = queue[..10].to_vec();
    lag0.sort_by(f64::total_cmp);
    assert!(lag0[5] < 0.05, "{lag0:?}");
    // At 200/s with 4 in flight the backlog grows: the last requests waited long.
    assert!(queue[109] > 0.5, "last queue {}", queue[109]);

    let a = qexp_analysis::analyze(&result.dir).unwrap();
    let s = a.schedule.as_ref().expect("schedule analysis");
    assert_eq!(s.points.len(), 2);
    let (p0, p1) = (&s.points[0], &s.points[1]);
    assert!(
        (p0.median.achieved_rate / 20.0 - 1.0).abs() < 0.1,
        "{}",
        p0.median.achieved_rate
    );
    assert_eq!(
        p1.median.lag_cause,
        qexp_analysis::schedule::LagCause::Backlog
    );
    assert!(p1.median.response_ttft_p99_s > p1.median.service_ttft_p99_s + 0.3);
    assert_eq!(p0.slo_holds, Some(true));
    assert_eq!(p1.slo_holds, Some(false));
    assert_eq!(s.capacity.len(), 1);
    assert_eq!(
        s.capacity[0].bound,
        qexp_analysis::schedule::CapacityBound::Interpolated
    );
    assert!(s.capacity[0].value > 20.0 && s.capacity[0].value < 200.0);

    // The backlog point is flagged with its cause, and not as a slow client.
    let flags = qexp_analysis::anomaly::detect(&a, &qexp_analysis::Thresholds::default());
    // (Point 0 may be flagged for client lag on a busy machine: that is its job.)
    let at_1: Vec<&qexp_analysis::Flag> =
        flags.iter().filter(|f| f.point_id() == Some(1)).collect();
    assert!(
        at_1.iter().any(|f| matches!(
            f,
            qexp_analysis::Flag::ScheduleDelay {
                cause: qexp_analysis::schedule::LagCause::Backlog,
                ..
            }
        )),
        "{flags:?}"
    );
    assert!(
        !at_1.iter().any(|f| matches!(
            f,
            qexp_analysis::Flag::LoadGeneratorBehind { .. }
                | qexp_analysis::Flag::RateShortfall { .. }
        )),
        "{flags:?}"
    );
    assert!(flags
        .iter()
        .any(|f| f.to_string().contains("server's backlog")));

    let ctx = qexp_report::report_context(&a);
    // The main tables name each point's rate, not a concurrency it does not have.
    let values: Vec<&str> = ctx.tables[0]
        .rows
        .iter()
        .map(|r| r.value.as_str())
        .collect();
    assert_eq!(values, vec!["rate=20/s", "rate=200/s"]);
    assert!(
        ctx.headline.iter().any(|h| h.value.contains("rate=")),
        "{:?}",
        ctx.headline
    );
    let md = ctx
        .open_loop
        .as_ref()
        .expect("open-loop section")
        .markdown
        .clone();
    assert!(md.contains("rate=20/s"), "{md}");
    assert!(ctx.open_loop.unwrap().capacity[0].contains("interpolated"));
}
