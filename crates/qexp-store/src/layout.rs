//! Where a run's files live inside its folder, and how a (trial, point)
//! is spelled in a file name. Every other module takes names from here.

use std::path::{Path, PathBuf};

/// Finished (trial, point) pairs waiting to be merged: `<kind>-NNNNN.parquet`.
pub(crate) const PARTS: &str = "parts";
/// Pairs an interrupt stopped part-way: `<kind>-tTTTT-pPPPPP.parquet`, never merged.
pub(crate) const INCOMPLETE: &str = "incomplete";
/// Rows of the pair in progress, one JSON object a line: `requests-tTTTT-pPPPPP.jsonl`.
pub(crate) const JOURNAL: &str = "journal";
/// Rows of incomplete pairs that `--resume` measured again, kept out of the results.
pub(crate) const SUPERSEDED: &str = "superseded";

/// The extension of a file being written, renamed into place when whole.
pub(crate) const WRITING: &str = "tmp";

/// True for a file of a run folder that holds no result: the writer's lock,
/// or a file still being written (renamed into place when whole). A copy
/// of the folder elsewhere (`qexp run --upload`) leaves them out.
pub fn transient_file(name: &str) -> bool {
    name == crate::lock::LOCK_FILE || name.rsplit_once('.').is_some_and(|(_, ext)| ext == WRITING)
}

/// Where a file of a run folder comes in a copy made while the run goes on
/// (`qexp run --upload`): request rows (parts, journals) first, then the
/// point rows that mark their pair complete, the manifest last; so a copy
/// cut short never holds a pair marked complete without its rows.
pub fn copy_rank(rel: &str) -> u8 {
    let name = rel.rsplit('/').next().unwrap_or(rel);
    if rel == crate::manifest::MANIFEST_FILE {
        2
    } else if name.starts_with(&format!("{POINTS}-")) || name == format!("{POINTS}.parquet") {
        1
    } else {
        0
    }
}

/// The two row kinds a run stores.
pub(crate) const REQUESTS: &str = "requests";
/// See [`REQUESTS`].
pub(crate) const POINTS: &str = "points";

/// `<kind>-tTTTT-pPPPPP.<ext>`: the file of one (trial, point).
pub(crate) fn pair_file(kind: &str, trial: u32, point_id: u32, ext: &str) -> String {
    format!("{kind}-t{trial:04}-p{point_id:05}.{ext}")
}

/// The (trial, point) a [`pair_file`] name stands for.
pub(crate) fn parse_pair(name: &str) -> Option<(u32, u32)> {
    let stem = name.rsplit_once('.')?.0;
    let (rest, point) = stem.rsplit_once("-p")?;
    let (_, trial) = rest.rsplit_once("-t")?;
    Some((trial.parse().ok()?, point.parse().ok()?))
}

/// The merged file of `kind`: `<run>/<kind>.parquet`.
pub(crate) fn merged(run: &Path, kind: &str) -> PathBuf {
    run.join(format!("{kind}.parquet"))
}

/// Files in `dir` named `<kind>-…<suffix>`, sorted (write order for
/// parts: shorter names first, so part 100000 comes after part 99999).
pub(crate) fn files_of(dir: &Path, kind: &str, suffix: &str) -> std::io::Result<Vec<PathBuf>> {
    if !dir.exists() {
        return Ok(Vec::new());
    }
    let prefix = format!("{kind}-");
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with(&prefix) && n.ends_with(suffix))
        })
        .collect();
    files.sort_by(|a, b| {
        let len = |p: &PathBuf| p.as_os_str().len();
        len(a).cmp(&len(b)).then_with(|| a.cmp(b))
    });
    Ok(files)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parts_are_listed_in_write_order_past_five_digits() {
        let tmp = tempfile::tempdir().unwrap();
        for n in [100_000, 2, 99_999, 1_000_001, 0] {
            std::fs::write(tmp.path().join(format!("requests-{n:05}.parquet")), "").unwrap();
        }
        std::fs::write(tmp.path().join("points-00001.parquet"), "").unwrap();
        let names: Vec<String> = files_of(tmp.path(), REQUESTS, ".parquet")
            .unwrap()
            .iter()
            .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
            .collect();
        assert_eq!(
            names,
            [
                "requests-00000.parquet",
                "requests-00002.parquet",
                "requests-99999.parquet",
                "requests-100000.parquet",
                "requests-1000001.parquet"
            ]
        );
    }

    #[test]
    fn pair_names_round_trip() {
        let name = pair_file(REQUESTS, 3, 17, "jsonl");
        assert_eq!(name, "requests-t0003-p00017.jsonl");
        assert_eq!(parse_pair(&name), Some((3, 17)));
        assert_eq!(parse_pair("requests-00001.parquet"), None);
    }

    #[test]
    fn point_rows_follow_their_request_rows_and_the_manifest_comes_last() {
        let ranks = [
            "parts/requests-00001.parquet",
            "journal/requests-t0001-p00002.jsonl",
            "parts/points-00001.parquet",
            "manifest.json",
        ]
        .map(copy_rank);
        assert_eq!(ranks, [0, 0, 1, 2]);
        assert_eq!(copy_rank("requests.parquet"), 0);
        assert_eq!(copy_rank("points.parquet"), 1);
    }

    #[test]
    fn the_lock_and_files_being_written_are_transient() {
        assert!(transient_file(".lock") && transient_file("manifest.tmp"));
        assert!(!transient_file("manifest.json") && !transient_file("requests.parquet"));
    }
}
