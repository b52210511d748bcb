//! Deployments in the plan: the server configurations one run compares.
//! Each `[[deployment]]` is either a launch command that qexp starts, waits
//! for and stops, or the `base_url` of a server qexp must not touch. Trials
//! become blocks: every block visits every deployment once (`[run] order`),
//! with a fresh start per block or one start per run (`[run] restart`).

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::ops::Range;
use toml::Spanned;

use crate::error::Invalid;
use crate::limits::MAX_WAIT_S;

/// The order of deployments within the run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Order {
    /// Every block visits every deployment once, in a seeded random order:
    /// drift over the run falls on all deployments alike.
    #[default]
    Interleaved,
    /// All blocks of the first deployment, then all of the next: drift over
    /// the run is read as a difference between deployments.
    Blocked,
}

impl Order {
    /// The plan's spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Order::Interleaved => "interleaved",
            Order::Blocked => "blocked",
        }
    }
}

/// When a launched deployment is started.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Restart {
    /// A fresh start for every block: each block is one independent repeat.
    #[default]
    #[serde(alias = "per-block")]
    PerBlock,
    /// One start for the whole run; `reset_path` is POSTed between blocks.
    Once,
}

impl Restart {
    /// The plan's spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Restart::PerBlock => "per_block",
            Restart::Once => "once",
        }
    }
}

/// A port: a number, or `"auto"` (a free one picked at each launch).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[serde(untagged)]
pub enum PortSpec {
    /// This port.
    Fixed(i64),
    /// `"auto"`.
    Named(String),
}

impl PortSpec {
    /// The fixed port, or None for `auto`.
    pub fn fixed(&self) -> Option<u16> {
        match self {
            PortSpec::Fixed(p) => u16::try_from(*p).ok(),
            PortSpec::Named(_) => None,
        }
    }
}

/// `[[deployment]]`: one server configuration.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DeploymentSpec {
    /// Names the deployment in rows, reports and log files.
    pub name: Spanned<String>,
    /// Launch: the argv (not a shell string), with placeholders `{port}`,
    /// `{host}`, `{model}`, `{name}`, `{run_dir}` and `{qexp}`.
    #[serde(default)]
    pub command: Option<Spanned<Vec<String>>>,
    /// Or a server already running that qexp must not touch.
    #[serde(default)]
    pub base_url: Option<Spanned<String>>,
    /// Environment for the launched command (placeholders allowed).
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// Port of the launched server: a number or `"auto"` (default).
    #[serde(default)]
    pub port: Option<Spanned<PortSpec>>,
    /// Host the launched server listens on.
    #[serde(default = "default_host")]
    pub host: String,
    /// Path that answers 2xx once the server is ready (503 while loading).
    #[serde(default = "default_ready_path")]
    pub ready_path: String,
    /// Seconds to wait for readiness before the start counts as failed.
    #[serde(default = "default_ready_timeout")]
    pub ready_timeout_s: Spanned<f64>,
    /// Seconds between TERM and KILL when stopping.
    #[serde(default = "default_stop_grace")]
    pub stop_grace_s: Spanned<f64>,
    /// The model the server must list (default: `target.model`).
    #[serde(default)]
    pub model: Option<String>,
    /// Path POSTed between blocks under `restart = "once"` to drop the
    /// server's caches (`/reset_prefix_cache` on vLLM, `/flush_cache` on SGLang).
    #[serde(default)]
    pub reset_path: Option<String>,
    /// Free-form labels shown in reports (`{ spec = "mtp" }`).
    #[serde(default)]
    pub labels: BTreeMap<String, String>,
    /// The DCGM exporter of this deployment's GPUs (overrides `power.url`).
    #[serde(default)]
    pub power_url: Option<Spanned<String>>,
    /// This deployment's GPUs (overrides `power.gpus`).
    #[serde(default)]
    pub gpus: Option<Spanned<Vec<crate::power::GpuName>>>,
}

fn default_host() -> String {
    "127.0.0.1".into()
}
fn default_ready_path() -> String {
    "/v1/models".into()
}
fn default_ready_timeout() -> Spanned<f64> {
    Spanned::new(0..0, 900.0)
}
fn default_stop_grace() -> Spanned<f64> {
    Spanned::new(0..0, 30.0)
}

/// What a deployment's hash covers: everything that makes it this deployment
/// (labels do not).
#[derive(Serialize)]
struct Definition<'a> {
    name: &'a str,
    command: Option<&'a Vec<String>>,
    base_url: Option<&'a String>,
    env: &'a BTreeMap<String, String>,
    port: Option<&'a PortSpec>,
    host: &'a str,
    ready_path: &'a str,
    model: Option<&'a String>,
    reset_path: Option<&'a String>,
}

impl DeploymentSpec {
    /// The deployment's name.
    pub fn name(&self) -> &str {
        self.name.get_ref()
    }

    /// True when qexp launches it (a command), false for a `base_url`.
    pub fn is_launched(&self) -> bool {
        self.command.is_some()
    }

    /// SHA-256 of the definition (name, command, env, port, host, paths,
    /// model), hex: `--resume` refuses a deployment whose hash changed.
    pub fn hash(&self) -> String {
        let d = Definition {
            name: self.name(),
            command: self.command.as_ref().map(Spanned::get_ref),
            base_url: self.base_url.as_ref().map(Spanned::get_ref),
            env: &self.env,
            port: self.port.as_ref().map(Spanned::get_ref),
            host: &self.host,
            ready_path: &self.ready_path,
            model: self.model.as_ref(),
            reset_path: self.reset_path.as_ref(),
        };
        let json = serde_json::to_vec(&d).unwrap_or_default();
        hex::encode(Sha256::digest(json))
    }

    /// Checks deployment `i`: its name, how it is reached, its port, paths and times.
    fn validate(&self, i: usize) -> Result<(), Invalid> {
        if crate::names::safe_component(self.name()).is_err() {
            return bad(
                i,
                self.name.span(),
                "name",
                "use only letters, digits, '-', '_' and '.' (it names log files)",
            );
        }
        self.check_how(i)?;
        self.check_port(i)?;
        self.check_credentials(i)?;
        self.check_paths_and_times(i)
    }

    /// No credential in the plan's text: not in `env` under a name that
    /// marks one, nor as the value of such a flag in `command`
    /// (`--api-key KEY`, `--hf-token=KEY`), nor in `base_url`.
    fn check_credentials(&self, i: usize) -> Result<(), Invalid> {
        if let Some(c) = &self.command {
            if let Some(flag) = crate::secrets::secret_flag(c.get_ref()) {
                return bad(
                    i,
                    c.span(),
                    "command",
                    &crate::secrets::refusal(&format!(
                        "the value of `{flag}` is a credential; write it as {{api_key}}"
                    )),
                );
            }
        }
        if let Some((name, _)) = self.env.iter().find(|(name, value)| {
            crate::secrets::secret_name(name) && crate::secrets::literal(value)
        }) {
            return bad(
                i,
                self.name.span(),
                &format!("env.{name}"),
                &crate::secrets::refusal(crate::secrets::HELD),
            );
        }
        if let Some(u) = &self.base_url {
            if crate::secrets::url_credentials(u.get_ref()) {
                return bad(
                    i,
                    u.span(),
                    "base_url",
                    &crate::secrets::refusal(crate::secrets::IN_URL),
                );
            }
        }
        Ok(())
    }

    /// Exactly one of `command` (a non-empty argv) and `base_url` (a URL qexp can reach).
    fn check_how(&self, i: usize) -> Result<(), Invalid> {
        match (&self.command, &self.base_url) {
            (Some(_), Some(u)) => {
                return bad(
                i,
                    u.span(),
                    "base_url",
                    "give either `command` (qexp launches the server) or `base_url` (it is already running), not both",
                )
            }
            (None, None) => {
                return bad(
                i,
                    self.name.span(),
                    "command",
                    "give `command` (an argv that starts the server) or `base_url` (a server already running)",
                )
            }
            (Some(c), None) if c.get_ref().first().is_none_or(String::is_empty) => {
                return bad(
                i,
                    c.span(),
                    "command",
                    "the argv is empty; give the program and its arguments",
                )
            }
            (None, Some(u)) => {
                let url = u.get_ref();
                if !(url.starts_with("http://")
                    || url.starts_with("https://")
                    || url.starts_with("sim:"))
                {
                    return bad(
                i,
                        u.span(),
                        "base_url",
                        "expected http://host:port, https://host, or sim:<profile>",
                    );
                }
            }
            _ => {}
        }
        Ok(())
    }

    /// A port from 1 to 65535 or "auto", and only for a launched server.
    fn check_port(&self, i: usize) -> Result<(), Invalid> {
        if let Some(p) = &self.port {
            let ok = match p.get_ref() {
                PortSpec::Fixed(n) => (1..=65535).contains(n),
                PortSpec::Named(s) => s == "auto",
            };
            if !ok {
                return bad(
                    i,
                    p.span(),
                    "port",
                    "expected a port from 1 to 65535, or \"auto\"",
                );
            }
            if self.base_url.is_some() {
                return bad(
                    i,
                    p.span(),
                    "port",
                    "a `base_url` deployment has its port in the URL",
                );
            }
        }
        Ok(())
    }

    /// Paths start with '/', the ready timeout is positive and the stop grace not negative.
    fn check_paths_and_times(&self, i: usize) -> Result<(), Invalid> {
        for (k, path) in [
            ("ready_path", Some(&self.ready_path)),
            ("reset_path", self.reset_path.as_ref()),
        ] {
            if path.is_some_and(|p| !p.starts_with('/')) {
                return bad(i, 0..0, k, "expected a path starting with '/'");
            }
        }
        let t = &self.ready_timeout_s;
        if !(t.get_ref().is_finite() && *t.get_ref() > 0.0 && *t.get_ref() <= MAX_WAIT_S) {
            return bad(
                i,
                t.span(),
                "ready_timeout_s",
                "must be a positive number of seconds, at most a week",
            );
        }
        let g = &self.stop_grace_s;
        if !(g.get_ref().is_finite() && *g.get_ref() >= 0.0 && *g.get_ref() <= MAX_WAIT_S) {
            return bad(
                i,
                g.span(),
                "stop_grace_s",
                "must be a number of seconds, 0 or more, at most a week",
            );
        }
        Ok(())
    }
}

/// Deployment `i`'s key `k` is wrong: `m` says why.
fn bad<T>(i: usize, span: Range<usize>, k: &str, m: &str) -> Result<T, Invalid> {
    Err((span, Some(format!("deployment[{i}].{k}")), m.to_string()))
}

/// Checks every deployment and the names they are referred to by.
pub(crate) fn validate(
    deployments: &[DeploymentSpec],
    baseline: Option<&Spanned<String>>,
) -> Result<(), Invalid> {
    for (i, d) in deployments.iter().enumerate() {
        d.validate(i)?;
        if let Some(first) = deployments[..i].iter().find(|e| e.name() == d.name()) {
            return Err((
                d.name.span(),
                Some(format!("deployment[{i}].name")),
                format!(
                    "`{}` names two deployments; names must differ",
                    first.name()
                ),
            ));
        }
    }
    if let Some(b) = baseline {
        if !deployments.iter().any(|d| d.name() == b.get_ref()) {
            let names: Vec<&str> = deployments.iter().map(DeploymentSpec::name).collect();
            return Err((
                b.span(),
                Some("analysis.baseline".into()),
                if names.is_empty() {
                    "a baseline needs [[deployment]] tables to choose from".into()
                } else {
                    format!(
                        "no deployment is named `{}`; the plan has {}",
                        b.get_ref(),
                        names.join(", ")
                    )
                },
            ));
        }
    }
    Ok(())
}
