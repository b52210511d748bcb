//! Things a diff goes on despite, as values whose `Display` says what to do.

use super::compat::KeyRow;
use super::pairing::Side;
use qexp_store::RunStatus;
use qexp_types::ClientTiming;
use serde::Serialize;

/// A caveat printed on stderr and at the top of every diff output.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum DiffWarning {
    /// Workload keys differ and `--ignore` named them.
    IgnoredWorkload {
        /// The differing keys.
        keys: Vec<KeyRow>,
    },
    /// An `--ignore` name that is not a differing workload key.
    UnusedIgnore {
        /// The name given.
        key: String,
        /// True when the key exists (with equal values), false when neither run has it.
        known: bool,
    },
    /// A run did not finish.
    Incomplete {
        /// Which run.
        side: Side,
        /// Its status.
        status: RunStatus,
    },
    /// Neither run records workload keys, so comparability cannot be checked.
    NoFingerprint,
    /// Anomaly flags about measurement quality in one run (noise, outliers, a late load generator, …).
    RunFlags {
        /// Which run.
        side: Side,
        /// How many flags.
        count: usize,
        /// Their titles, distinct, in the order the flags come (by point, then kind).
        kinds: Vec<String>,
        /// Labels of the flagged points.
        points: Vec<String>,
    },
    /// The runs were timed by different qexp clients (or one before the
    /// client was recorded, when sends were timed before the request was built).
    ClientTiming {
        /// Run A's client timing, `None` when not recorded.
        a: Option<ClientTiming>,
        /// Run B's.
        b: Option<ClientTiming>,
    },
    /// A run imported from another tool's files (`qexp import`): another
    /// client timed it, under the tool's own definitions where the files
    /// could not tell.
    Imported {
        /// The imported run.
        side: Side,
        /// The tool that measured it.
        tool: String,
    },
    /// A paired point where every request one run measured failed, while
    /// the other run has successful requests: lost by B, a regression.
    Lost {
        /// The run that lost it.
        side: Side,
        /// The point's label.
        point: String,
        /// Its failed requests, all trials.
        failures: u64,
        /// Its measured requests, all trials.
        requests: u64,
    },
    /// Points that have no partner in the other run.
    Unpaired {
        /// The run that has them.
        side: Side,
        /// How many.
        count: usize,
    },
}

impl std::fmt::Display for DiffWarning {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DiffWarning::IgnoredWorkload { keys } => ignored_workload(f, keys),
            DiffWarning::UnusedIgnore { key, known: true } => write!(
                f,
                "--ignore {key}: the runs agree on this workload key, so there was nothing to ignore"
            ),
            DiffWarning::UnusedIgnore { key, known: false } => write!(
                f,
                "--ignore {key}: neither run has a workload key of that name; check the spelling against the workload table"
            ),
            DiffWarning::Incomplete { side, status } => incomplete(f, *side, *status),
            DiffWarning::NoFingerprint => f.write_str(
                "neither run records workload keys (made by an older qexp?), so qexp cannot check that they asked for the same workload",
            ),
            DiffWarning::RunFlags {
                side,
                count,
                kinds,
                points,
            } => run_flags(f, *side, *count, kinds, points),
            DiffWarning::ClientTiming { a, b } => client_timing(f, *a, *b),
            DiffWarning::Imported { side, tool } => write!(
                f,
                "run {side} was measured by {tool} and imported: its client timed the requests, so TTFT and E2E carry that client's overhead and its definitions where they differ from qexp's (docs/importing.md)"
            ),
            DiffWarning::Lost {
                side,
                point,
                failures,
                requests,
            } => lost(f, *side, point, *failures, *requests),
            DiffWarning::Unpaired { side, count } => unpaired(f, *side, *count),
        }
    }
}

/// `one` when `count` is 1, else `many`.
fn plural(count: usize, one: &'static str, many: &'static str) -> &'static str {
    if count == 1 {
        one
    } else {
        many
    }
}

fn ignored_workload(f: &mut std::fmt::Formatter<'_>, keys: &[KeyRow]) -> std::fmt::Result {
    let list: Vec<String> = keys.iter().map(ToString::to_string).collect();
    write!(
        f,
        "the runs asked for different workloads: {}; compared anyway because --ignore names {}. A difference may come from the workload, not the deployment",
        list.join(", "),
        plural(keys.len(), "it", "them")
    )
}

fn incomplete(f: &mut std::fmt::Formatter<'_>, side: Side, status: RunStatus) -> std::fmt::Result {
    let how = match status {
        RunStatus::Running => "still running, or its process died",
        RunStatus::Interrupted => "interrupted",
        RunStatus::Complete => "complete",
    };
    write!(f, "run {side} is {how}: only what it finished is compared")
}

fn run_flags(
    f: &mut std::fmt::Formatter<'_>,
    side: Side,
    count: usize,
    kinds: &[String],
    points: &[String],
) -> std::fmt::Result {
    write!(
        f,
        "run {side} has {count} measurement flag{} ({}) at {}: a verdict there may reflect noise or the client host rather than the deployment; `qexp report` on run {side} explains each",
        plural(count, "", "s"),
        kinds.join(", ").to_lowercase(),
        points.join("; ")
    )
}

fn client_timing(
    f: &mut std::fmt::Formatter<'_>,
    a: Option<ClientTiming>,
    b: Option<ClientTiming>,
) -> std::fmt::Result {
    let said = |t: Option<ClientTiming>| {
        t.map_or(
            "an older qexp that timed from before each request was built",
            |t| t.as_str(),
        )
    };
    write!(
        f,
        "the runs were timed by different qexp clients (A: {}; B: {}): at high concurrency their TTFT and E2E can differ by the client's own overhead, not the deployment's",
        said(a),
        said(b)
    )
}

fn lost(
    f: &mut std::fmt::Formatter<'_>,
    side: Side,
    point: &str,
    failures: u64,
    requests: u64,
) -> std::fmt::Result {
    write!(
        f,
        "run {side} failed {failures} of {requests} requests at {point}, where the other run has data: "
    )?;
    match side {
        Side::B => f.write_str(
            "B lost the point, which counts as a regression (--fail-on-regression fails); `qexp report` on run B lists the errors",
        ),
        Side::A => f.write_str(
            "B's numbers there have no baseline to compare with; `qexp report` on run A lists the errors",
        ),
    }
}

fn unpaired(f: &mut std::fmt::Formatter<'_>, side: Side, count: usize) -> std::fmt::Result {
    write!(
        f,
        "{count} point{} of run {side} {} no partner with the same parameters in the other run and {} not compared (listed below)",
        plural(count, "", "s"),
        plural(count, "has", "have"),
        plural(count, "is", "are"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The sentences no diff snapshot shows, word for word, with both
    /// plural forms.
    #[test]
    fn each_warning_says_what_to_do() {
        let says = |w: DiffWarning| w.to_string();
        assert_eq!(
            says(DiffWarning::UnusedIgnore {
                key: "seed".into(),
                known: true
            }),
            "--ignore seed: the runs agree on this workload key, so there was nothing to ignore"
        );
        assert_eq!(
            says(DiffWarning::UnusedIgnore { key: "sed".into(), known: false }),
            "--ignore sed: neither run has a workload key of that name; check the spelling against the workload table"
        );
        assert_eq!(
            says(DiffWarning::Incomplete {
                side: Side::B,
                status: RunStatus::Running
            }),
            "run B is still running, or its process died: only what it finished is compared"
        );
        assert_eq!(
            says(DiffWarning::Incomplete {
                side: Side::A,
                status: RunStatus::Interrupted
            }),
            "run A is interrupted: only what it finished is compared"
        );
        assert_eq!(
            says(DiffWarning::NoFingerprint),
            "neither run records workload keys (made by an older qexp?), so qexp cannot check that they asked for the same workload"
        );
        assert_eq!(
            says(DiffWarning::ClientTiming { a: None, b: Some(ClientTiming::Http1FromWire) }),
            "the runs were timed by different qexp clients (A: an older qexp that timed from before each request was built; B: qexp-http1, from the wire): at high concurrency their TTFT and E2E can differ by the client's own overhead, not the deployment's"
        );
        assert_eq!(
            says(DiffWarning::Unpaired { side: Side::A, count: 1 }),
            "1 point of run A has no partner with the same parameters in the other run and is not compared (listed below)"
        );
        assert_eq!(
            says(DiffWarning::Unpaired { side: Side::B, count: 2 }),
            "2 points of run B have no partner with the same parameters in the other run and are not compared (listed below)"
        );
        assert_eq!(
            says(DiffWarning::Lost { side: Side::B, point: "c=16 in=1000 out=500".into(), failures: 320, requests: 320 }),
            "run B failed 320 of 320 requests at c=16 in=1000 out=500, where the other run has data: B lost the point, which counts as a regression (--fail-on-regression fails); `qexp report` on run B lists the errors"
        );
        assert_eq!(
            says(DiffWarning::Lost { side: Side::A, point: "c=1 in=1000 out=500".into(), failures: 8, requests: 8 }),
            "run A failed 8 of 8 requests at c=1 in=1000 out=500, where the other run has data: B's numbers there have no baseline to compare with; `qexp report` on run A lists the errors"
        );
        let flags = |count| DiffWarning::RunFlags {
            side: Side::A,
            count,
            kinds: vec!["Noisy point".into()],
            points: vec!["c=1".into(), "c=4".into()],
        };
        assert!(
            says(flags(1)).starts_with("run A has 1 measurement flag (noisy point) at c=1; c=4:")
        );
        assert!(
            says(flags(2)).starts_with("run A has 2 measurement flags (noisy point) at c=1; c=4:")
        );
    }
}
