//! The workspace's lookups: the run a notebook means by an experiment's
//! name is its newest complete run by start, whatever the run ids.

use qexp_analysis::workspace::newest_complete;
use qexp_store::{RunStatus, RunWriter};
use qexp_testkit::ManifestFixture;
use std::path::Path;

/// A run of experiment `w` with this id and start, finished with `status`.
fn finished_run(root: &Path, run_id: &str, started_at: &str, status: RunStatus) {
    let m = ManifestFixture::new("w", &[], 1)
        .with("run_id", run_id)
        .with("started_at", started_at)
        .build();
    let w = RunWriter::create(root, m).expect("a new run");
    w.finish(status, None).expect("finished");
}

#[test]
fn the_newest_complete_run_is_the_one_that_started_last_whatever_its_id() {
    let tmp = tempfile::tempdir().expect("a temporary folder");
    let root = tmp.path();
    // Ids given with --run-id, sorting opposite to their starts.
    finished_run(root, "z-first", "2026-01-01T09:00:00Z", RunStatus::Complete);
    finished_run(
        root,
        "m-second",
        "2026-01-02T09:00:00Z",
        RunStatus::Complete,
    );
    finished_run(
        root,
        "a-third",
        "2026-01-03T09:00:00Z",
        RunStatus::Interrupted,
    );
    let newest = newest_complete(root, "w").expect("a complete run");
    assert_eq!(newest.run_id, "m-second");
}
