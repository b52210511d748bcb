//! Targets that live inside the qexp process: `sim:<profile>` starts the
//! embedded simulator in whichever process runs the plan, so shards of one
//! run (`qexp run --shard`, `qexp kube`) would each measure a private
//! simulator and share no load.

/// The profile of a `sim:` target (`fast` of `sim:fast?faults=…`), or None
/// for a server reached over the network.
pub fn sim_profile(target: &str) -> Option<&str> {
    let spec = target.strip_prefix("sim:")?;
    Some(spec.split_once('?').map_or(spec, |(name, _)| name))
}

/// A run split into shards against a simulator that each shard would start
/// inside its own process: they would share no load.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "target `{target}` is a simulator inside each qexp process, so {shards} shards would each measure a private one and share no load: serve it once with `qexp sim --profile {profile} --host 0.0.0.0 --port 8000` and give --target http://HOST:8000"
)]
pub struct InProcessShards {
    /// The target as given.
    pub target: String,
    /// The simulator profile it names.
    pub profile: String,
    /// The shards asked for (more than one).
    pub shards: u32,
}

/// The refusal of a run split into `shards` processes against `target`,
/// when that target is in-process; None when the shards can share it (a
/// server over the network, or a single shard).
pub fn shard_refusal(target: &str, shards: u32) -> Option<InProcessShards> {
    let profile = sim_profile(target)?;
    (shards > 1).then(|| InProcessShards {
        target: target.to_owned(),
        profile: profile.to_owned(),
        shards,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_sim_targets_split_over_shards_are_refused() {
        assert_eq!(sim_profile("sim:fast?faults=reset=1:0.1"), Some("fast"));
        assert_eq!(sim_profile("http://127.0.0.1:8000"), None);
        let why = shard_refusal("sim:fit=m.json", 4).unwrap().to_string();
        assert!(why.contains("--profile fit=m.json"), "{why}");
        assert!(why.contains("4 shards"), "{why}");
        assert_eq!(shard_refusal("sim:fast", 1), None);
        assert_eq!(shard_refusal("http://10.0.0.1:8000", 8), None);
    }
}
