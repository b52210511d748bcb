//! Latency distributions read back from Parquet by the report's pass, one
//! (trial, point) at a time, equal to [`point_distribution`] over each
//! point's measured requests taken together: the same quantiles, and the
//! same thinned timeline (each trial's share set by how many trials the
//! point has, which the reads know before they begin).

use qexp_analysis::distribution::{point_distribution, RequestSample, TIMELINE_MAX};
use qexp_analysis::{analyze, analyze_bounded, analyze_in_batches};
use qexp_store::{PointRow, RequestRow, RunStatus, RunWriter};
use qexp_testkit::{ManifestFixture, PlanFixture};
use std::path::{Path, PathBuf};

/// Requests per (trial, point): more than a trial's timeline share.
const N: u32 = 400;

/// Two points (ids 0 and 1: c = 1 and 2), 3 trials.
fn plan() -> PlanFixture {
    PlanFixture::new("dist")
        .target("http://127.0.0.1:1")
        .input(100)
        .output(4)
        .concurrency(&[1, 2])
        .trials(3)
}

/// Request `i` of (trial, point): sends out of order, latencies that vary,
/// every 17th failed (no TTFT), the first two warm-ups.
fn request(trial: u32, point_id: u32, i: u32) -> RequestRow {
    let k = f64::from((i * 7919 + trial * 31 + point_id * 7) % 1009);
    let sent = 1.8e9 + f64::from(trial) * 1e4 + f64::from((i * 37) % N) * 0.25;
    let failed = i % 17 == 5;
    RequestRow {
        trial,
        point_id,
        request_index: i,
        warmup: i < 2,
        sent_unix_s: sent,
        scheduled_unix_s: sent,
        ttft_s: (!failed).then_some(0.1 + k * 1e-3),
        e2e_s: Some(0.5 + k * 2e-3),
        chunks: 4,
        client_tokens: 4,
        completion_tokens: Some(4),
        finish_reason: Some("length".into()),
        error_class: failed.then_some(qexp_types::ErrorClass::StreamBroken),
        chunk_offsets_s: vec![0.1, 0.2, 0.3, 0.4],
        ..RequestRow::default()
    }
}

/// Point 0 has rows in trials 1..=3, point 1 only in trials 1 and 2 (so
/// its trials' timeline shares are larger). Each (trial, point) is written
/// as two parts.
fn write_run(root: &Path) -> (PathBuf, Vec<RequestRow>) {
    let plan = plan().parse();
    let manifest = ManifestFixture::new("dist", &plan.points(), 3)
        .with("plan_text", self::plan().toml())
        .build();
    let mut w = RunWriter::create(root, manifest).expect("create run");
    let mut all = Vec::new();
    for trial in 1..=3 {
        for p in plan.points().iter().filter(|p| trial < 3 || p.id == 0) {
            let rows: Vec<RequestRow> = (0..N).map(|i| request(trial, p.id, i)).collect();
            let point = PointRow {
                trial,
                point_id: p.id,
                requests_planned: N,
                requests_done: N,
                ..PointRow::default()
            };
            let half = rows.len() / 2;
            w.write_point(&rows[..half], &point).expect("write part");
            w.write_point(&rows[half..], &point).expect("write part");
            all.extend(rows);
        }
    }
    let dir = w.finish(RunStatus::Complete, None).expect("merge parts");
    (dir, all)
}

#[test]
fn the_pass_gives_each_point_the_distributions_of_all_its_requests() {
    let tmp = tempfile::tempdir().unwrap();
    let (dir, rows) = write_run(tmp.path());
    let want: Vec<_> = [0u32, 1]
        .iter()
        .map(|&id| {
            let samples: Vec<RequestSample> = rows
                .iter()
                .filter(|r| r.point_id == id && !r.warmup)
                .map(|r| RequestSample {
                    trial: r.trial,
                    sent_unix_s: r.sent_unix_s,
                    ttft_s: r.ttft_s.unwrap_or(f64::NAN),
                    e2e_s: r.e2e_s.unwrap_or(f64::NAN),
                    ok: r.error_class.is_none(),
                })
                .collect();
            point_distribution(id, &samples)
        })
        .collect();
    // Point 0 (3 trials) and point 1 (2 trials) are thinned to different
    // shares (a slot with no successful send stays empty).
    let (kept0, kept1) = (want[0].timeline.len(), want[1].timeline.len());
    assert!(
        (3 * (TIMELINE_MAX / 3) * 9 / 10..=3 * (TIMELINE_MAX / 3)).contains(&kept0),
        "{kept0}"
    );
    assert!(
        (TIMELINE_MAX * 9 / 10..=TIMELINE_MAX).contains(&kept1),
        "{kept1}"
    );
    assert_eq!(want[1].trials.len(), 2);
    for run in [analyze(&dir), analyze_in_batches(&dir, 150)] {
        assert_eq!(run.expect("analysable").distributions, want);
    }
}

/// Selections held to 7 values must count, then narrow their buckets over
/// further reads of the run: the results are the same, bit for bit, as
/// with the usual single read that holds a (trial, point)'s values, for
/// the distributions and every per-trial metric.
#[test]
fn selections_that_must_narrow_read_again_and_give_the_same_results() {
    let tmp = tempfile::tempdir().unwrap();
    let (dir, _) = write_run(tmp.path());
    let (usual, usual_reads) = analyze_bounded(&dir, 150, 1 << 20).expect("analysable");
    let (bounded, reads) = analyze_bounded(&dir, 150, 7).expect("analysable");
    // The count, then one read; held to 7, more.
    assert_eq!(usual_reads, 2);
    assert!(reads > 3, "{reads} reads");
    assert_eq!(bounded.distributions, usual.distributions);
    let trials = |a: &qexp_analysis::RunAnalysis| -> String {
        format!(
            "{:?}",
            a.points.iter().map(|p| &p.trials).collect::<Vec<_>>()
        )
    };
    assert_eq!(trials(&bounded), trials(&usual));
    assert!(usual.points[0].trials[0].ttft_s.is_finite());
}
