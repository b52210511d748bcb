//! The target a plan names, resolved: an HTTP URL, or the embedded
//! simulator (`sim:PROFILE`, `sim:fit=MODEL`) started on 127.0.0.1:0.

use crate::error::{RunError, TargetError};
use qexp_client::{Client, Timeouts};
use qexp_sim::{FaultPlan, SimProfile, SimServer};
use std::time::Duration;

/// A resolved target: a client, plus the embedded simulator when `sim:`.
pub struct Target {
    /// Client for the server.
    pub client: Client,
    /// The URL as the user gave it (`sim:<profile>` or http…).
    pub given: String,
    /// The simulator serving a `sim:` target; stopped when dropped or shut down.
    pub sim: Option<SimServer>,
}

/// A server's wait between a point's last completion and its closing
/// metrics scrape: it updates its counters as it finishes each step.
const METRICS_SETTLE: Duration = Duration::from_millis(200);

impl Target {
    /// How long a point waits after its last completion before its closing
    /// scrape of the metrics: a server's last steps must land in its
    /// counters; the embedded simulator counts before the first token, so
    /// there it waits nothing.
    pub fn metrics_settle(&self) -> Duration {
        if self.sim.is_some() {
            Duration::ZERO
        } else {
            METRICS_SETTLE
        }
    }

    /// Stops the embedded simulator, if any.
    pub async fn shutdown(self) {
        if let Some(sim) = self.sim {
            sim.shutdown().await;
        }
    }
}

/// `KEY=V` of a `sim:` target's query (the last one given): a value that
/// parses and that `ok` accepts, or `Err(KEY)`; the other parts returned.
fn query_value<'a, T: std::str::FromStr>(
    parts: Vec<&'a str>,
    key: &'static str,
    ok: impl Fn(&T) -> bool,
) -> Result<(Option<T>, Vec<&'a str>), &'static str> {
    let prefix = format!("{key}=");
    let (given, rest): (Vec<&str>, Vec<&str>) =
        parts.into_iter().partition(|p| p.starts_with(&prefix));
    let value = given
        .last()
        .map(|v| {
            v[prefix.len()..]
                .parse::<T>()
                .ok()
                .filter(|v| ok(v))
                .ok_or(key)
        })
        .transpose()?;
    Ok((value, rest))
}

/// The simulator profile of a `sim:` target (`spec`, after `sim:`), its
/// query's knobs and faults applied.
fn sim_profile(spec: &str, given: &str) -> Result<SimProfile, RunError> {
    let (name, query) = spec.split_once('?').unwrap_or((spec, ""));
    let mut profile = SimProfile::lookup(name)?;
    let knob = |key: &str, takes| TargetError::Knob {
        given: given.to_owned(),
        key: key.to_owned(),
        takes,
    };
    // `malformed=F` and `malformed_per_seq=F` (the profile's malformed
    // shares), `stop=F` (its share of answers ended early), `max_images=N`,
    // `drift=F` (per second, for tests of run orders), `time_scale=F`
    // (every duration × F); the rest is faults.
    let (knobs, faults): (Vec<&str>, Vec<&str>) = query.split('&').partition(|p| {
        ["malformed=", "malformed_per_seq=", "stop="]
            .iter()
            .any(|k| p.starts_with(k))
    });
    for part in knobs {
        let (key, value) = part.split_once('=').unwrap_or((part, ""));
        let share = value
            .parse::<f64>()
            .ok()
            .filter(|v| (0.0..=1.0).contains(v));
        let share = share.ok_or_else(|| knob(key, "a share from 0 to 1"))?;
        match key {
            "malformed" => profile.malformed_share = share,
            "stop" => profile.stop_share = share,
            _ => profile.malformed_share_per_seq = share,
        }
    }
    // The images a prompt may carry (reported as `limit_mm_per_prompt`).
    let (images, faults) = query_value::<u32>(faults, "max_images", |_| true)
        .map_err(|key| knob(key, "a whole number of images"))?;
    profile.max_images = images.or(profile.max_images);
    let (drift, faults) = query_value(faults, "drift", |d: &f64| d.is_finite() && *d >= 0.0)
        .map_err(|key| knob(key, "a fraction per second, 0 or more"))?;
    if let Some(d) = drift {
        profile.drift_per_s = d;
        profile.start_drift();
    }
    let (scale, faults) = query_value(faults, "time_scale", |f: &f64| f.is_finite() && *f > 0.0)
        .map_err(|key| knob(key, "a factor above 0"))?;
    profile.time_scale *= scale.unwrap_or(1.0);
    profile.faults =
        FaultPlan::from_query(&faults.join("&")).map_err(|source| TargetError::Faults {
            given: given.to_owned(),
            source,
        })?;
    Ok(profile)
}

/// Resolves `sim:<profile>[?faults=…&seed=N&malformed_per_seq=F&stop=F&max_images=N&time_scale=F]` or `sim:fit=PATH` (a model file; starting the simulator on
/// 127.0.0.1:0, with the faults injected) or an HTTP URL.
pub async fn resolve_target(
    given: &str,
    api_key: Option<String>,
    timeouts: Timeouts,
) -> Result<Target, RunError> {
    if let Some(spec) = given.strip_prefix("sim:") {
        let profile = sim_profile(spec, given)?;
        let sim = SimServer::start(profile).await.map_err(RunError::Sim)?;
        let client = Client::with_timeouts(&sim.base_url(), None, timeouts)?;
        return Ok(Target {
            client,
            given: given.to_string(),
            sim: Some(sim),
        });
    }
    if !(given.starts_with("http://") || given.starts_with("https://")) {
        return Err(TargetError::Scheme {
            given: given.to_owned(),
        }
        .into());
    }
    let client = Client::with_timeouts(given, api_key, timeouts)?;
    Ok(Target {
        client,
        given: given.to_string(),
        sim: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sim_targets_knobs_set_its_profile() {
        let p = sim_profile("known?time_scale=0.5&stop=0.25", "sim:known?…").unwrap();
        assert_eq!((p.time_scale, p.stop_share), (0.5, 0.25));
        assert_eq!(p.params().step_base_s, 0.01);
        // The factor scales the profile's own: `fast` is already at 0.05.
        let fast = sim_profile("fast?time_scale=0.5", "sim:fast?…").unwrap();
        assert_eq!(fast.time_scale, 0.025);
        for bad in [
            "time_scale=0",
            "time_scale=-1",
            "time_scale=x",
            "drift=-0.1",
            "max_images=x",
        ] {
            let e = sim_profile(&format!("known?{bad}"), "sim:known").unwrap_err();
            let key = bad.split('=').next().unwrap();
            assert!(
                matches!(&e, RunError::Target(TargetError::Knob { key: k, .. }) if k == key),
                "{bad}: {e}"
            );
        }
    }
}
