//! Open-loop runs end to end in-process against the simulator's `exact`
//! profile (TTFT 50 ms, 10 ms per token): rows keep their planned schedule,
//! a cap on requests in flight shows up as backlog in the response time
//! from the schedule, and the report renders the schedule section with
//! goodput and capacity.

use polars::prelude::*;
use qexp_plan::ApiKind;
use qexp_runner::{run, RunOptions};
use qexp_testkit::{f64s, PlanFixture};

/// Constant arrivals at 20 and 200 requests/s for 0.5 s, at most 4 in
/// flight, and a TTFT objective of 0.2 s at p90.
fn plan() -> PlanFixture {
    PlanFixture::new("open-e2e")
        .target("sim:exact")
        .api(ApiKind::Chat)
        .ignore_eos()
        .input(100)
        .output(6)
        .set("sweep.rate", vec![20, 200])
        .set("load.arrival", "constant")
        .set("load.duration_s", 0.5)
        .set("load.max_in_flight", 4)
        .set("slo.ttft_s", 0.2)
        .set("slo.percentile", 0.9)
        .warmup(1)
        .trials(1)
        .seed(3)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rate_points_keep_their_schedule_and_report_goodput() {
    let _heavy = crate::common::heavy().await;
    let tmp = tempfile::tempdir().unwrap();
    let opts = RunOptions {
        plan: plan().load(tmp.path()),
        out: tmp.path().join("results"),
        overrides: Default::default(),
        shard: None,
        folder: Default::default(),
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
    // The main tables run along the offered rate, not a concurrency the points do not have.
    let t = &ctx.tables[0];
    assert_eq!(
        (t.title.as_str(), t.axis.as_str()),
        ("By offered rate", "rate")
    );
    assert_eq!(t.axis_header, "Offered rate (req/s)");
    let values: Vec<&str> = t.rows.iter().map(|r| r.value.as_str()).collect();
    assert_eq!(values, vec!["20", "200"]);
    // The headline gives the load: achieved rate, attainment, goodput and capacity, not peak throughput.
    let labels: Vec<&str> = ctx.headline.iter().map(|h| h.label.as_str()).collect();
    for want in [
        "Achieved rate, lowest and highest offered",
        "SLO attainment, lowest and highest",
        "Goodput, highest",
        "Capacity",
    ] {
        assert!(labels.contains(&want), "{want}: {labels:?}");
    }
    assert!(!labels.contains(&"Peak aggregate output"), "{labels:?}");
    let achieved = &ctx.headline[0].value;
    assert!(
        achieved.contains("at rate=20/s (offered 20)")
            && achieved.contains("at rate=200/s (offered 200)"),
        "{achieved}"
    );
    let rows = &ctx.open_loop.as_ref().expect("open-loop section").rows;
    assert!(
        rows.iter().any(|r| r.point.contains("rate=20/s")),
        "{rows:?}"
    );
    assert!(ctx.open_loop.unwrap().capacity[0].contains("interpolated"));
}
