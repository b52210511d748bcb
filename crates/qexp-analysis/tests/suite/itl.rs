//! Pooled inter-token latency read back from Parquet: gaps of successful,
//! measured requests only, pooled per (trial, point), in a finished run and
//! in a crashed one whose rows are still in parts/.

use qexp_analysis::{analyze, analyze_in_batches};
use qexp_plan::Plan;
use qexp_store::{Manifest, PointRow, RequestRow, RunStatus, RunWriter};
use qexp_testkit::{ManifestFixture, PlanFixture};
use std::path::{Path, PathBuf};

/// Two points (c = 1 and 2) of 4 output tokens, 2 trials.
fn itl_plan() -> PlanFixture {
    PlanFixture::new("itl")
        .target("http://127.0.0.1:1")
        .input(100)
        .output(4)
        .concurrency(&[1, 2])
        .trials(2)
}

fn manifest(plan: &Plan) -> Manifest {
    ManifestFixture::new("itl", &plan.points(), 2)
        .with("plan_text", itl_plan().toml())
        .with("host.cpu_model", "c")
        .with("host.memory_bytes", 1u64)
        .build()
}

/// A successful request whose chunks arrive `gaps` apart after 0.1 s.
fn request(trial: u32, point_id: u32, index: u32, gaps: &[f64]) -> RequestRow {
    let mut offsets = vec![0.1];
    for g in gaps {
        offsets.push(offsets.last().unwrap() + g);
    }
    RequestRow {
        trial,
        point_id,
        request_index: index,
        output_tokens_target: 4,
        ttft_s: Some(0.1),
        e2e_s: offsets.last().copied(),
        chunks: offsets.len() as u32,
        client_tokens: offsets.len() as u32,
        completion_tokens: Some(offsets.len() as u32),
        finish_reason: Some("length".into()),
        chunk_offsets_s: offsets,
        ..RequestRow::default()
    }
}

/// Trial t, point p: two measured requests with gaps scaled by (10 t + p),
/// plus a warmup and a failed request whose huge gaps must not count.
fn rows_of(trial: u32, point_id: u32) -> (Vec<RequestRow>, PointRow) {
    let s = f64::from(10 * trial + point_id) * 1e-3;
    let mut warmup = request(trial, point_id, 0, &[50.0, 50.0]);
    warmup.warmup = true;
    let mut failed = request(trial, point_id, 3, &[70.0]);
    failed.error_class = Some(qexp_types::ErrorClass::StreamBroken);
    let rows = vec![
        warmup,
        request(trial, point_id, 1, &[s, 2.0 * s, 3.0 * s]),
        failed,
        request(trial, point_id, 2, &[4.0 * s, 5.0 * s, 6.0 * s]),
    ];
    let point = PointRow {
        trial,
        point_id,
        requests_planned: 3,
        requests_done: 3,
        failures: 1,
        ..PointRow::default()
    };
    (rows, point)
}

/// Writes two trials of two points ([`rows_of`]). `split` writes each
/// (trial, point) as two parts, so its rows arrive in two read batches.
fn write_run(root: &Path, finish: bool, split: bool) -> PathBuf {
    let plan = itl_plan().parse();
    let mut w = RunWriter::create(root, manifest(&plan)).expect("create run");
    for trial in 1..=2 {
        for p in plan.points() {
            let (rows, point) = rows_of(trial, p.id);
            if split {
                w.write_point(&rows[..2], &point).expect("write part");
                w.write_point(&rows[2..], &point).expect("write part");
            } else {
                w.write_point(&rows, &point).expect("write part");
            }
        }
    }
    if finish {
        w.finish(RunStatus::Complete, None).expect("merge parts")
    } else {
        w.dir().to_path_buf()
    }
}

/// Checks the whole-run analysis, and the same with the rows read in small
/// batches, so that (trial, point) blocks are cut by batch boundaries.
fn check(dir: &Path) {
    check_with(analyze(dir).expect("analysable"));
    for batch in [1, 2, 3, 5] {
        check_with(analyze_in_batches(dir, batch).expect("analysable"));
    }
}

fn check_with(run: qexp_analysis::RunAnalysis) {
    let mut seen = 0;
    for p in &run.points {
        for t in &p.trials {
            let s = f64::from(10 * t.trial + t.point_id) * 1e-3;
            // Gaps s..6s: numpy-linear p50 = 3.5 s, p90 = 5.5 s, p99 = 5.95 s.
            let (p50, p90, p99) = (3.5 * s, 5.5 * s, 5.95 * s);
            assert!(
                (t.itl_p90_s - p90).abs() < 1e-12,
                "p90 {} != {p90}",
                t.itl_p90_s
            );
            assert!(
                (t.itl_p50_s - p50).abs() < 1e-12,
                "trial {} point {}: p50 {} != {p50}",
                t.trial,
                t.point_id,
                t.itl_p50_s
            );
            assert!(
                (t.itl_p99_s - p99).abs() < 1e-12,
                "trial {} point {}: p99 {} != {p99}",
                t.trial,
                t.point_id,
                t.itl_p99_s
            );
            assert_eq!(t.requests, 3, "the warmup is not measured");
            assert_eq!(t.failures, 1);
            seen += 1;
        }
    }
    assert_eq!(seen, 4, "two trials of two points");
}

#[test]
fn pooled_itl_of_a_finished_run() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = write_run(tmp.path(), true, false);
    assert!(dir.join("requests.parquet").exists());
    check(&dir);
}

#[test]
fn pooled_itl_of_a_run_that_crashed_before_merging() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = write_run(tmp.path(), false, false);
    assert!(!dir.join("requests.parquet").exists());
    check(&dir);
}

/// A (trial, point) whose rows are written in two pieces with another
/// (trial, point)'s rows between them (as a resumed run's can be) is still
/// summarised once, over all of its rows: a pass that took the end of a
/// block for the end of its (trial, point) would count it twice, in halves.
#[test]
fn a_point_whose_rows_come_in_pieces_between_others_is_summarised_whole() {
    let tmp = tempfile::tempdir().unwrap();
    let plan = itl_plan().parse();
    let mut w = RunWriter::create(tmp.path(), manifest(&plan)).expect("create run");
    for trial in 1..=2 {
        let parts: Vec<_> = plan.points().iter().map(|p| rows_of(trial, p.id)).collect();
        for (rows, point) in &parts {
            w.write_point(&rows[..2], point).expect("write part");
        }
        for (rows, point) in &parts {
            w.write_point(&rows[2..], point).expect("write part");
        }
    }
    let dir = w.finish(RunStatus::Complete, None).expect("merge parts");
    check(&dir);
}

#[test]
fn pooled_itl_of_a_point_whose_rows_span_read_batches() {
    let tmp = tempfile::tempdir().unwrap();
    // Unmerged parts are read one file per batch.
    let dir = write_run(tmp.path(), false, true);
    check(&dir);
}

/// numpy's default (linear) quantile of ascending `v`, written out here so
/// the test does not lean on the crate's own implementation.
fn numpy_linear(v: &[f64], q: f64) -> f64 {
    let pos = q * (v.len() - 1) as f64;
    let (lo, hi) = (pos.floor() as usize, pos.ceil() as usize);
    v[lo] + (v[hi] - v[lo]) * (pos - lo as f64)
}

/// A merged file of several row groups (the merge streams parts into groups
/// of at most 262 144 rows): every row is kept, in order, and a (trial,
/// point) cut by a row-group or a batch boundary is pooled whole.
#[test]
fn pooled_itl_across_row_groups_of_a_merged_run() {
    use polars::prelude::{ParquetReader, SerReader};
    const ROWS: u32 = 100_000;
    let tmp = tempfile::tempdir().unwrap();
    let plan = itl_plan().parse();
    let mut w = RunWriter::create(tmp.path(), manifest(&plan)).expect("create run");
    let mut want = std::collections::BTreeMap::new();
    for trial in 1..=2 {
        for p in plan.points() {
            let g = f64::from(10 * trial + p.id) * 1e-3;
            // Two gaps per request, both different in every request.
            let gaps = |i: u32| {
                [
                    g * (1.0 + f64::from(i) / 1e5),
                    g * (3.0 - f64::from(i) / 1e5),
                ]
            };
            let rows: Vec<RequestRow> = (0..ROWS)
                .map(|i| request(trial, p.id, i, &gaps(i)))
                .collect();
            let mut all: Vec<f64> = rows
                .iter()
                .flat_map(|r| r.chunk_offsets_s.windows(2).map(|w| w[1] - w[0]))
                .collect();
            all.sort_by(f64::total_cmp);
            let q = |x| numpy_linear(&all, x);
            want.insert((trial, p.id), [q(0.5), q(0.9), q(0.99)]);
            let point = PointRow {
                trial,
                point_id: p.id,
                ..PointRow::default()
            };
            w.write_point(&rows, &point).expect("write part");
        }
    }
    let dir = w.finish(RunStatus::Complete, None).expect("merge parts");
    let file = std::fs::File::open(dir.join("requests.parquet")).unwrap();
    let groups: Vec<usize> = ParquetReader::new(file)
        .get_metadata()
        .unwrap()
        .row_groups
        .iter()
        .map(|rg| rg.num_rows())
        .collect();
    assert_eq!(groups, vec![262_144, 37_856, 100_000]);
    // Whole-file batches, and batches of 70 000 rows that cut every
    // (trial, point) and every row group somewhere else.
    for run in [analyze(&dir), analyze_in_batches(&dir, 70_000)] {
        let run = run.expect("analysable");
        let mut seen = 0;
        for t in run.points.iter().flat_map(|p| &p.trials) {
            let [p50, p90, p99] = want[&(t.trial, t.point_id)];
            assert_eq!(t.requests, ROWS);
            for (got, want) in [(t.itl_p50_s, p50), (t.itl_p90_s, p90), (t.itl_p99_s, p99)] {
                assert!(
                    (got - want).abs() < 1e-15,
                    "trial {} point {}: {got} != {want}",
                    t.trial,
                    t.point_id
                );
            }
            seen += 1;
        }
        assert_eq!(seen, 4);
    }
}
