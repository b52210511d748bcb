//! The objects' names. A run's Job, Service and ConfigMap are named after
//! the experiment and the run, so that a second run of an experiment is
//! new objects beside the first's (a Job's pod template cannot be changed,
//! and a Service moved to the new run would take the rendezvous from a run
//! still going); the results claim is named after the experiment alone,
//! so that its runs share it.

use sha2::{Digest, Sha256};

/// Characters of the experiment's name kept in the objects' names.
const EXPERIMENT_MAX: usize = 30;
/// Hex digits of the run id's SHA-256 that tell one run's objects from
/// another's. The longest run name, `qexp-` + experiment + `-` + hash, is
/// 44 characters; a pod's host name `<job>-<index>` (index below 10,000)
/// adds at most 5, within the 63 of a DNS label.
const RUN_HASH_LEN: usize = 8;

/// The names of a run's objects.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Names {
    /// `qexp-<experiment>`: the results claim's stem, shared by the experiment's runs.
    pub experiment: String,
    /// `qexp-<experiment>-<hash>`: the Job and the Service; the ConfigMap is `<run>-plan`.
    pub run: String,
}

impl Names {
    /// The names for `experiment`'s run `run_id`.
    pub fn new(experiment: &str, run_id: &str) -> Names {
        let exp = label(experiment, EXPERIMENT_MAX);
        let experiment = if exp.is_empty() {
            "qexp".to_string()
        } else {
            format!("qexp-{exp}")
        };
        let run = format!("{experiment}-{}", run_hash(run_id));
        Names { experiment, run }
    }

    /// The ConfigMap holding the plan and its files.
    pub fn plan(&self) -> String {
        format!("{}-plan", self.run)
    }

    /// The PersistentVolumeClaim holding the results.
    pub fn claim(&self) -> String {
        format!("{}-results", self.experiment)
    }

    /// Shard 0's pod as the other shards reach it: `<job>-0.<service>`.
    pub fn shard0_host(&self) -> String {
        format!("{}-0.{}", self.run, self.run)
    }
}

/// The first [`RUN_HASH_LEN`] hex digits of the SHA-256 of `run_id`
/// (`printf %s ID | sha256sum | cut -c1-8`).
fn run_hash(run_id: &str) -> String {
    let digest = Sha256::digest(run_id.as_bytes());
    let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
    hex[..RUN_HASH_LEN].to_string()
}

/// `s` as a DNS-1123 label part: lower case letters, digits and `-`, at most `max` long.
pub(crate) fn label(s: &str, max: usize) -> String {
    let mut out: String = s
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                '-'
            }
        })
        .collect();
    out.truncate(max);
    out.trim_matches('-').to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A DNS-1035 label (a Service's name): starts with a letter.
    fn dns_1035(s: &str) -> bool {
        s.len() <= 63
            && s.starts_with(|c: char| c.is_ascii_lowercase())
            && s.ends_with(|c: char| c.is_ascii_lowercase() || c.is_ascii_digit())
            && s.chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
    }

    #[test]
    fn runs_of_one_experiment_have_their_own_names_and_share_the_claim() {
        let a = Names::new("Throughput_sweep", "20261203T140000Z-abc123");
        let b = Names::new("Throughput_sweep", "20261203T150000Z-def456");
        assert_ne!(a.run, b.run);
        assert_ne!(a.plan(), b.plan());
        assert_eq!(a.claim(), b.claim());
        assert_eq!(a.claim(), "qexp-throughput-sweep-results");
        // The same run id gives the same names.
        assert_eq!(a, Names::new("Throughput_sweep", "20261203T140000Z-abc123"));
        // sha256("20261203T150000Z-5a4d01"), as `sha256sum` prints it.
        assert_eq!(
            Names::new("throughput", "20261203T150000Z-5a4d01").run,
            "qexp-throughput-843adce3"
        );
    }

    #[test]
    fn every_pod_host_name_is_a_dns_label_within_63() {
        for exp in ["x".repeat(200), "-_-".into(), "Ünïcode name".into()] {
            let n = Names::new(&exp, &"9".repeat(63));
            assert!(
                n.run.len() <= 5 + EXPERIMENT_MAX + 1 + RUN_HASH_LEN,
                "{}",
                n.run
            );
            assert!(dns_1035(&n.run), "{}", n.run);
            // The last index of the largest Job qexp writes (10,000 shards).
            assert!(dns_1035(&format!("{}-9999", n.run)), "{}", n.run);
            assert!(dns_1035(&n.claim()) && dns_1035(&n.plan()));
        }
    }
}
