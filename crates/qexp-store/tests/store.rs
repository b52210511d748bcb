//! The results folder on its own: rows written come back, a crashed run
//! (parts, journal, a last line cut short) reads whole, a run is never
//! written over, a newer layout is refused, a resumed run ends with exactly
//! its rows, a failed write names its file and cause, and the newest run
//! is the one that started last.

// Tests may panic: the ban on `unwrap` and `expect` (root Cargo.toml,
// [workspace.lints]) is for the code qexp ships.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use polars::prelude::DataFrame;
use qexp_store::{
    find_runs, latest_runs, read_manifest, scan_points, scan_requests, Manifest, PointRow,
    RequestRow, RunStatus, RunWriter, StoreError,
};
use serde_json::json;
use std::path::{Path, PathBuf};

const RUN_ID: &str = "20261130T101500Z-0000aa";

fn manifest() -> Manifest {
    serde_json::from_value(json!({
        "schema_version": qexp_store::SCHEMA_VERSION,
        "qexp_version": "0.1.0",
        "run_id": RUN_ID,
        "experiment": "store",
        "plan_path": "store.toml",
        "plan_hash": "00",
        "plan_text": "",
        "overrides": {},
        "trials": 2,
        "points": [],
        "point_order": [],
        "target": {"base_url": "http://127.0.0.1:1", "model": "m", "api": "chat",
                   "simulated": false, "sim_profile": null, "sim_time_scale": null,
                   "api_key_env": null},
        "server": null,
        "calibration": [],
        "git": null,
        "host": {"hostname": "h", "os": "o", "kernel": "k", "arch": "x86_64",
                 "cpu_model": "c", "cpus": 2, "memory_bytes": 1u64, "gpus": []},
        "comparability": {"workload": {}, "deployment": {}, "workload_hash": "00"},
        "started_at": "2026-11-30T10:15:00Z",
        "ended_at": null,
        "status": "running",
        "stop_reason": null
    }))
    .expect("manifest matches the schema")
}

fn request(trial: u32, point_id: u32, index: u32) -> RequestRow {
    RequestRow {
        run_id: RUN_ID.into(),
        trial,
        point_id,
        request_index: index,
        sent_unix_s: 1_764_497_700.0 + f64::from(index),
        ttft_s: Some(0.05 + f64::from(index) / 1000.0),
        e2e_s: Some(0.25),
        end_s: 0.25,
        chunks: 3,
        chunk_offsets_s: vec![0.05, 0.15, 0.25],
        completion_tokens: Some(3),
        client_tokens: 3,
        finish_reason: Some("length".into()),
        http_status: Some(200),
        ..RequestRow::default()
    }
}

fn rows(trial: u32, point_id: u32, n: u32) -> Vec<RequestRow> {
    (0..n).map(|i| request(trial, point_id, i)).collect()
}

fn point(trial: u32, point_id: u32, n: u32) -> PointRow {
    PointRow {
        run_id: RUN_ID.into(),
        trial,
        point_id,
        requests_planned: n,
        requests_done: n,
        ..PointRow::default()
    }
}

fn u32s(df: &DataFrame, name: &str) -> Vec<u32> {
    let c = df.column(name).unwrap().u32().unwrap();
    c.into_no_null_iter().collect()
}

/// (trial, point_id, request_index) of every request row, sorted.
fn keys(run: &Path) -> Vec<(u32, u32, u32)> {
    let df = scan_requests(run).unwrap().collect().unwrap();
    let (t, p) = (u32s(&df, "trial"), u32s(&df, "point_id"));
    let i = u32s(&df, "request_index");
    let mut k: Vec<_> = (0..df.height()).map(|r| (t[r], p[r], i[r])).collect();
    k.sort();
    k
}

/// (trial, point_id) of every point row, sorted.
fn pairs(run: &Path) -> Vec<(u32, u32)> {
    let df = scan_points(run).unwrap().collect().unwrap();
    let mut k: Vec<_> = u32s(&df, "trial")
        .into_iter()
        .zip(u32s(&df, "point_id"))
        .collect();
    k.sort();
    k
}

fn expected(pairs: &[(u32, u32, u32)]) -> Vec<(u32, u32, u32)> {
    let mut k: Vec<_> = pairs
        .iter()
        .flat_map(|&(t, p, n)| (0..n).map(move |i| (t, p, i)))
        .collect();
    k.sort();
    k
}

fn run_dir(root: &Path) -> PathBuf {
    root.join("store").join(RUN_ID)
}

#[test]
fn rows_written_come_back_whole_after_the_merge() {
    let tmp = tempfile::tempdir().unwrap();
    let mut w = RunWriter::create(tmp.path(), manifest()).unwrap();
    let written = rows(1, 0, 3);
    w.begin_point(1, 0).unwrap();
    for r in &written {
        w.journal(r).unwrap();
    }
    w.write_point(&written, &point(1, 0, 3)).unwrap();
    let dir = w.finish(RunStatus::Complete, None).unwrap();
    assert!(dir.join("requests.parquet").is_file());
    assert!(!dir.join("parts").exists(), "parts are merged away");
    assert!(
        !dir.join("journal")
            .join("requests-t0001-p00000.jsonl")
            .exists(),
        "a written pair's journal is removed"
    );
    let df = scan_requests(&dir).unwrap().collect().unwrap();
    assert_eq!(df.height(), 3);
    let ttft: Vec<f64> = df
        .column("ttft_s")
        .unwrap()
        .f64()
        .unwrap()
        .into_no_null_iter()
        .collect();
    let want: Vec<f64> = written.iter().map(|r| r.ttft_s.unwrap()).collect();
    assert_eq!(ttft, want, "floats come back bit for bit");
    let offsets = df
        .column("chunk_offsets_s")
        .unwrap()
        .list()
        .unwrap()
        .get_as_series(2);
    assert_eq!(
        offsets
            .unwrap()
            .f64()
            .unwrap()
            .into_no_null_iter()
            .collect::<Vec<_>>(),
        [0.05, 0.15, 0.25]
    );
    let m = read_manifest(&dir).unwrap();
    assert_eq!(m.status, RunStatus::Complete);
    assert!(m.ended_at.is_some());
}

#[test]
fn a_crashed_run_reads_its_parts_and_its_journal() {
    let tmp = tempfile::tempdir().unwrap();
    let mut w = RunWriter::create(tmp.path(), manifest()).unwrap();
    w.begin_point(1, 0).unwrap();
    w.write_point(&rows(1, 0, 2), &point(1, 0, 2)).unwrap();
    w.begin_point(1, 1).unwrap();
    for r in rows(1, 1, 3) {
        w.journal(&r).unwrap();
    }
    w.flush_journal().unwrap();
    // The process dies here: no write_point, no finish.
    drop(w);
    let dir = run_dir(tmp.path());
    let journal = dir.join("journal").join("requests-t0001-p00001.jsonl");
    // A kill in the middle of a write leaves a last line cut short.
    let mut text = std::fs::read_to_string(&journal).unwrap();
    text.push_str("{\"run_id\":\"2026");
    std::fs::write(&journal, text).unwrap();

    assert_eq!(keys(&dir), expected(&[(1, 0, 2), (1, 1, 3)]));
    assert_eq!(pairs(&dir), [(1, 0)], "only written pairs have point rows");
    assert_eq!(read_manifest(&dir).unwrap().status, RunStatus::Running);
}

/// The index reads each (trial, point) whole and alone, whether its rows
/// lie in one part, cross the edge of a read batch, or are in the journal.
#[test]
fn the_request_index_reads_each_trial_point_whole_and_alone() {
    let tmp = tempfile::tempdir().unwrap();
    let mut w = RunWriter::create(tmp.path(), manifest()).unwrap();
    for (trial, id, n) in [(1, 0, 5), (1, 1, 3), (2, 0, 4)] {
        w.begin_point(trial, id).unwrap();
        w.write_point(&rows(trial, id, n), &point(trial, id, n))
            .unwrap();
    }
    w.begin_point(2, 1).unwrap();
    for r in rows(2, 1, 2) {
        w.journal(&r).unwrap();
    }
    w.flush_journal().unwrap();
    drop(w);
    let dir = run_dir(tmp.path());
    for batch in [1, 2, 3, 1000] {
        let index = qexp_store::RequestIndex::of(&dir, batch).unwrap();
        let pairs: Vec<(u32, u32)> = index.pairs().collect();
        assert_eq!(pairs, [(1, 0), (1, 1), (2, 0), (2, 1)], "batch {batch}");
        for (pair, n) in [((1, 0), 5), ((1, 1), 3), ((2, 0), 4), ((2, 1), 2)] {
            let df = index
                .read(pair, Some(&["trial", "point_id", "request_index"]))
                .unwrap()
                .unwrap();
            assert_eq!(df.width(), 3);
            let got: Vec<(u32, u32, u32)> = (0..df.height())
                .map(|r| {
                    let at = |c: &str| u32s(&df, c)[r];
                    (at("trial"), at("point_id"), at("request_index"))
                })
                .collect();
            let want: Vec<(u32, u32, u32)> = (0..n).map(|i| (pair.0, pair.1, i)).collect();
            assert_eq!(got, want, "batch {batch}, pair {pair:?}");
        }
        assert!(index.read((3, 0), None).unwrap().is_none());
        let whole = index.read((1, 1), None).unwrap().unwrap();
        assert_eq!(
            whole.width(),
            qexp_store::requests_frame(&[]).unwrap().width()
        );
    }
}

#[test]
fn a_journal_left_beside_its_written_pair_is_not_counted_twice() {
    let tmp = tempfile::tempdir().unwrap();
    let mut w = RunWriter::create(tmp.path(), manifest()).unwrap();
    w.begin_point(1, 0).unwrap();
    for r in rows(1, 0, 2) {
        w.journal(&r).unwrap();
    }
    w.flush_journal().unwrap();
    let dir = run_dir(tmp.path());
    let journal = dir.join("journal").join("requests-t0001-p00000.jsonl");
    let copy = std::fs::read(&journal).unwrap();
    w.write_point(&rows(1, 0, 2), &point(1, 0, 2)).unwrap();
    // A crash between writing the part and removing the journal.
    std::fs::write(&journal, copy).unwrap();
    drop(w);
    assert_eq!(keys(&dir), expected(&[(1, 0, 2)]));
}

#[test]
fn a_bad_line_inside_a_journal_is_an_error_naming_file_and_line() {
    let tmp = tempfile::tempdir().unwrap();
    let mut w = RunWriter::create(tmp.path(), manifest()).unwrap();
    w.begin_point(1, 0).unwrap();
    w.journal(&request(1, 0, 0)).unwrap();
    w.flush_journal().unwrap();
    drop(w);
    let dir = run_dir(tmp.path());
    let journal = dir.join("journal").join("requests-t0001-p00000.jsonl");
    let good = std::fs::read_to_string(&journal).unwrap();
    std::fs::write(&journal, format!("{{oops\n{good}")).unwrap();
    let err = scan_requests(&dir).err().expect("must refuse").to_string();
    assert!(
        err.starts_with(&format!(
            "{}:1 is not a qexp journal line",
            journal.display()
        )),
        "{err}"
    );
}

#[test]
fn a_run_folder_is_never_written_over() {
    let tmp = tempfile::tempdir().unwrap();
    let mut w = RunWriter::create(tmp.path(), manifest()).unwrap();
    w.write_point(&rows(1, 0, 1), &point(1, 0, 1)).unwrap();
    let err = RunWriter::create(tmp.path(), manifest()).expect_err("must refuse");
    assert!(matches!(err, StoreError::RunExists { .. }), "{err}");
    assert!(err.to_string().ends_with(
        "already exists; qexp never writes into another run's folder (start the run again for a new run id)"
    ));
    assert_eq!(keys(&run_dir(tmp.path())), expected(&[(1, 0, 1)]));
}

#[test]
fn a_run_of_a_newer_schema_is_refused_in_one_sentence() {
    let tmp = tempfile::tempdir().unwrap();
    let w = RunWriter::create(tmp.path(), manifest()).unwrap();
    let dir = w.finish(RunStatus::Complete, None).unwrap();
    let path = dir.join("manifest.json");
    let mut m: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    m["schema_version"] = json!(99);
    // A newer layout may also change the shape: refused before it is parsed.
    m["status"] = json!({"new": "shape"});
    std::fs::write(&path, m.to_string()).unwrap();
    let want = format!(
        "{} was written by a newer qexp (schema_version 99; this qexp reads up to {}); upgrade qexp to read it",
        path.display(),
        qexp_store::SCHEMA_VERSION
    );
    assert_eq!(read_manifest(&dir).unwrap_err().to_string(), want);
    assert_eq!(scan_requests(&dir).err().unwrap().to_string(), want);
}

#[test]
fn reopening_supersedes_incomplete_pairs_and_the_run_ends_with_exactly_its_rows() {
    let tmp = tempfile::tempdir().unwrap();
    let mut w = RunWriter::create(tmp.path(), manifest()).unwrap();
    w.begin_point(1, 0).unwrap();
    w.write_point(&rows(1, 0, 3), &point(1, 0, 3)).unwrap();
    // Interrupted in (1, 1) after 2 of 3 requests.
    w.begin_point(1, 1).unwrap();
    w.write_incomplete_point(
        &rows(1, 1, 2),
        &PointRow {
            requests_done: 2,
            ..point(1, 1, 3)
        },
    )
    .unwrap();
    let dir = w
        .finish(RunStatus::Interrupted, Some("test".into()))
        .unwrap();
    assert_eq!(
        keys(&dir),
        expected(&[(1, 0, 3), (1, 1, 2)]),
        "incomplete rows are read"
    );
    assert_eq!(pairs(&dir), [(1, 0), (1, 1)]);
    // No lock and no empty journal folder: only results, and the pair to measure again.
    assert_eq!(
        entries(&dir),
        [
            "incomplete",
            "manifest.json",
            "points.parquet",
            "requests.parquet"
        ]
    );

    let mut w = RunWriter::reopen(&dir, qexp_store::RunLock::acquire(&dir).unwrap()).unwrap();
    assert_eq!(w.complete_count(), 1);
    assert!(w.is_complete(1, 0) && !w.is_complete(1, 1));
    assert_eq!(
        keys(&dir),
        expected(&[(1, 0, 3)]),
        "superseded rows are out of the run"
    );
    let superseded: Vec<_> = std::fs::read_dir(dir.join("superseded")).unwrap().collect();
    assert_eq!(superseded.len(), 2, "kept, not deleted");
    for (t, p) in [(1, 1), (2, 0), (2, 1)] {
        w.begin_point(t, p).unwrap();
        w.write_point(&rows(t, p, 3), &point(t, p, 3)).unwrap();
    }
    let dir = w.finish(RunStatus::Complete, None).unwrap();
    assert_eq!(
        keys(&dir),
        expected(&[(1, 0, 3), (1, 1, 3), (2, 0, 3), (2, 1, 3)])
    );
    assert_eq!(pairs(&dir), [(1, 0), (1, 1), (2, 0), (2, 1)]);
    // `incomplete/`, emptied by the resume, goes; what it held stays superseded.
    assert_eq!(
        entries(&dir),
        [
            "manifest.json",
            "points.parquet",
            "requests.parquet",
            "superseded"
        ]
    );
}

/// The names in a folder, dot files included, sorted.
fn entries(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

#[test]
fn a_journal_on_a_full_disk_fails_naming_the_file_and_the_cause() {
    let tmp = tempfile::tempdir().unwrap();
    let mut w = RunWriter::create(tmp.path(), manifest()).unwrap();
    let journal = run_dir(tmp.path()).join("journal");
    std::fs::create_dir_all(&journal).unwrap();
    let file = journal.join("requests-t0001-p00000.jsonl");
    // /dev/full answers every write with ENOSPC, as a full disk does.
    std::os::unix::fs::symlink("/dev/full", &file).unwrap();
    w.begin_point(1, 0).unwrap();
    // The journal's thread meets the error; it is reported on the next
    // append or, at the latest, when the pair's journal is flushed.
    w.journal(&request(1, 0, 0)).unwrap();
    let err = w.flush_journal().expect_err("the disk is full");
    assert_eq!(
        qexp_types::error::chain(&err),
        format!(
            "cannot write {}: No space left on device (os error 28)",
            file.display()
        )
    );
}

#[test]
fn a_failed_merge_is_reported_and_the_parts_stay_readable() {
    let tmp = tempfile::tempdir().unwrap();
    let mut w = RunWriter::create(tmp.path(), manifest()).unwrap();
    w.write_point(&rows(1, 0, 2), &point(1, 0, 2)).unwrap();
    let dir = run_dir(tmp.path());
    // A folder where the merge's temporary file must go.
    std::fs::create_dir(dir.join("requests.tmp")).unwrap();
    let err = w
        .finish(RunStatus::Complete, None)
        .expect_err("the merge must fail");
    assert!(
        err.to_string().starts_with(&format!(
            "cannot create {}",
            dir.join("requests.tmp").display()
        )),
        "{err}"
    );
    assert_eq!(keys(&dir), expected(&[(1, 0, 2)]));
}

/// A manifest as runs recorded it before `overrides`, `server` and
/// `client_timing` had types (a string map, a JSON value, a sentence): it
/// reads into the types and writes those three keys back unchanged.
#[test]
fn an_older_manifest_reads_and_writes_its_typed_keys_unchanged() {
    let mut old = serde_json::to_value(manifest()).expect("a manifest serialises");
    let recorded = [
        (
            "overrides",
            json!({"model": "m2", "target": "http://127.0.0.1:9", "trials": "5"}),
        ),
        (
            "server",
            json!({"base_url": "http://127.0.0.1:9", "models": ["m2"],
                   "documents": {"/v1/models": {"data": [{"id": "m2"}]}},
                   "metrics_url": "/metrics", "metric_families": ["vllm:x_total"]}),
        ),
        ("client_timing", json!("reqwest, from the wire")),
    ];
    for (key, value) in &recorded {
        old[*key] = value.clone();
    }
    let m: Manifest = serde_json::from_value(old).expect("an older manifest reads");
    assert_eq!(m.overrides.trials, Some(5));
    assert_eq!(m.overrides.target.as_deref(), Some("http://127.0.0.1:9"));
    assert_eq!(m.overrides.model.as_deref(), Some("m2"));
    let server = m.server.as_ref().expect("a server object");
    assert_eq!(server.models, ["m2"]);
    assert_eq!(server.metrics_url.as_deref(), Some("/metrics"));
    assert_eq!(
        m.client_timing,
        Some(qexp_types::ClientTiming::ReqwestFromWire)
    );
    let again = serde_json::to_value(&m).expect("it writes");
    for (key, value) in &recorded {
        assert_eq!(&again[*key], value, "{key}");
    }
    // A run with deployments records no server, and one without overrides an empty object.
    let none = manifest();
    assert_eq!(none.server, None);
    let again = serde_json::to_value(&none).expect("it writes");
    assert_eq!(again["server"], serde_json::Value::Null);
    assert_eq!(again["overrides"], json!({}));
}

/// `qexp merge`'s writer: rows given in frames of any size are written
/// straight into the run's request file, in order, as whole row groups of
/// 262 144 rows (the last one smaller), with nothing else left in the
/// folder; a merge of no rows still writes an empty request file.
#[test]
fn a_merge_writes_its_rows_in_order_as_whole_row_groups() {
    use polars::prelude::*;
    const GROUP: usize = 512 * 512;
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("merged");
    let mut w = qexp_store::MergeWriter::create(&dir).unwrap();
    let mut next = 0u32;
    for len in [1, GROUP - 1, 100_000, 2 * GROUP, 7] {
        let ids: Vec<u32> = (next..next + len as u32).collect();
        next += len as u32;
        w.requests(df!("request_index" => ids).unwrap()).unwrap();
    }
    w.finish(&manifest(), &[point(1, 0, next)]).unwrap();

    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(
        names,
        ["manifest.json", "points.parquet", "requests.parquet"]
    );
    let file = std::fs::File::open(dir.join("requests.parquet")).unwrap();
    let mut reader = ParquetReader::new(file);
    let groups: Vec<usize> = reader
        .get_metadata()
        .unwrap()
        .row_groups
        .iter()
        .map(|g| g.num_rows())
        .collect();
    let total = next as usize;
    assert_eq!(groups, [GROUP, GROUP, GROUP, total - 3 * GROUP]);
    let df = reader.finish().unwrap();
    let got = u32s(&df, "request_index");
    assert!(got.iter().copied().eq(0..next), "rows out of order");
    assert_eq!(pairs(&dir), [(1, 0)]);

    let empty = tmp.path().join("empty");
    qexp_store::MergeWriter::create(&empty)
        .unwrap()
        .finish(&manifest(), &[])
        .unwrap();
    assert_eq!(keys(&empty), []);
    assert!(
        qexp_store::MergeWriter::create(&empty).is_err(),
        "an existing run is refused"
    );

    // A merge killed part-way leaves its files under temporary names and
    // no manifest: the next merge into that folder goes ahead.
    let killed = tmp.path().join("killed");
    std::fs::create_dir(&killed).unwrap();
    std::fs::write(killed.join("merging.tmp"), "").unwrap();
    std::fs::write(killed.join("requests.tmp"), "half a file").unwrap();
    let w = qexp_store::MergeWriter::create(&killed).unwrap();
    w.finish(&manifest(), &[]).unwrap();
    assert!(!killed.join("requests.tmp").exists());
    assert_eq!(keys(&killed), []);
    // Killed after its request file was renamed into place: the same.
    std::fs::remove_dir_all(&killed).unwrap();
    std::fs::create_dir(&killed).unwrap();
    std::fs::write(killed.join("merging.tmp"), "").unwrap();
    std::fs::write(killed.join("requests.parquet"), "rows").unwrap();
    std::fs::write(killed.join("points.tmp"), "half").unwrap();
    let w = qexp_store::MergeWriter::create(&killed).unwrap();
    w.finish(&manifest(), &[]).unwrap();
    assert_eq!(keys(&killed), []);
    // Anything else in the folder, or no marker, and it is refused.
    let other = tmp.path().join("other");
    std::fs::create_dir(&other).unwrap();
    std::fs::write(other.join("merging.tmp"), "").unwrap();
    std::fs::write(other.join("notes.txt"), "mine").unwrap();
    assert!(qexp_store::MergeWriter::create(&other).is_err());
    assert!(other.join("notes.txt").exists());
    let data = tmp.path().join("data");
    std::fs::create_dir(&data).unwrap();
    std::fs::write(data.join("requests.parquet"), "someone's rows").unwrap();
    assert!(qexp_store::MergeWriter::create(&data).is_err());
    assert!(data.join("requests.parquet").exists());
}

/// A run of experiment `store` with this id and start, finished with `status`.
fn finished_run(root: &Path, run_id: &str, started_at: &str, status: RunStatus) -> PathBuf {
    let mut m = serde_json::to_value(manifest()).expect("a manifest serialises");
    m["run_id"] = json!(run_id);
    m["started_at"] = json!(started_at);
    let m: Manifest = serde_json::from_value(m).expect("the manifest reads");
    let w = RunWriter::create(root, m).expect("a new run");
    w.finish(status, None).expect("finished")
}

/// A run id given with `--run-id` can sort anywhere: the newest run is the
/// one that started last, whatever its id, and a folder whose manifest
/// does not read is never the newest.
#[test]
fn the_newest_run_is_the_one_that_started_last_whatever_its_id() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    finished_run(
        root,
        "zz-baseline",
        "2026-01-02T09:00:00Z",
        RunStatus::Complete,
    );
    finished_run(
        root,
        "aa-candidate",
        "2026-01-03T09:00:00Z",
        RunStatus::Complete,
    );
    let broken = root.join("store").join("zzz-broken");
    std::fs::create_dir_all(&broken).unwrap();
    std::fs::write(broken.join("manifest.json"), "{").unwrap();
    let ids: Vec<String> = find_runs(root).into_iter().map(|r| r.run_id).collect();
    assert_eq!(ids, ["zzz-broken", "zz-baseline", "aa-candidate"]);
    let latest = latest_runs(root);
    assert_eq!(latest.len(), 1);
    assert_eq!(latest[0].run_id, "aa-candidate");
    assert_eq!(
        latest[0].started_at.map(|t| t.to_rfc3339()).as_deref(),
        Some("2026-01-03T09:00:00+00:00")
    );
}

/// A command line names a run by its folder or by its id under the results
/// root: an id one run has exactly wins over the shard folders it is a
/// prefix of, a prefix only one run has is enough, and a prefix several
/// runs share, a name no run has or a folder without a manifest is refused.
#[test]
fn a_run_is_named_by_folder_or_by_id() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    let at = "2026-01-02T09:00:00Z";
    let merged = finished_run(root, "20260102T0900Z-ab", at, RunStatus::Complete);
    for k in 0..2 {
        let id = qexp_store::shard_folder_name("20260102T0900Z-ab", k, 2);
        finished_run(root, &id, at, RunStatus::Complete);
    }
    let other = finished_run(root, "20260103T0900Z-cd", at, RunStatus::Complete);
    let resolve = |name: &str| qexp_store::resolve_run(Path::new(name), root);
    assert_eq!(resolve("20260102T0900Z-ab").unwrap(), merged);
    assert_eq!(resolve("20260103").unwrap(), other);
    assert_eq!(resolve(merged.to_str().unwrap()).unwrap(), merged);
    assert!(
        matches!(
            resolve("2026010"),
            Err(StoreError::AmbiguousRunId { count: 4, .. })
        ),
        "{:?}",
        resolve("2026010")
    );
    assert!(matches!(resolve("nope"), Err(StoreError::NoSuchRun { .. })));
    let plain = root.join("plain");
    std::fs::create_dir(&plain).unwrap();
    assert!(matches!(
        resolve(plain.to_str().unwrap()),
        Err(StoreError::NotARun { .. })
    ));
}
