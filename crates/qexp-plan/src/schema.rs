//! The plan file as TOML: every section and key, with its default and its
//! check.

use crate::limits::{TimeoutsSection, ToleranceSection};
use crate::open_loop::{LoadSection, TraceRef};
use crate::slo::SloSection;
use serde::Deserialize;
use std::ops::Range;
use toml::Spanned;

use crate::error::Invalid;

/// The whole plan file. Keys are snake_case; unknown keys are errors.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PlanFile {
    /// `[experiment]`: name and version.
    pub experiment: ExperimentSection,
    /// `[target]`: where requests go (may be left out: `--target` names the
    /// server, or `[[deployment]]` tables do).
    #[serde(default)]
    pub target: TargetSection,
    /// `[workload]`: what each request looks like.
    pub workload: Workload,
    /// `[sweep]`: the axes whose combinations are the points.
    #[serde(default)]
    pub sweep: Sweep,
    /// `[run]`: requests per point, warmup, trials, seed.
    #[serde(default)]
    pub run: RunSection,
    /// `[analysis]`: thresholds for the report's flags.
    #[serde(default)]
    pub analysis: AnalysisSection,
    /// `[load]`: open-loop arrivals (rates, stages, trace replay).
    #[serde(default)]
    pub load: LoadSection,
    /// `[slo]`: per-request objectives for goodput and capacity.
    #[serde(default)]
    pub slo: Option<Spanned<SloSection>>,
    /// The replayed trace as read when the plan was loaded (`load.trace`).
    #[serde(skip)]
    pub(crate) trace: Option<(TraceRef, crate::trace::Trace)>,
    /// `[timeouts]`: limits on each request's time.
    #[serde(default)]
    pub timeouts: TimeoutsSection,
    /// `[tolerance]`: failed requests a point may have.
    #[serde(default)]
    pub tolerance: ToleranceSection,
    /// `[[deployment]]`: the server configurations the run compares (none:
    /// the one server at `target.base_url`).
    #[serde(default, rename = "deployment")]
    pub deployments: Vec<crate::deploy::DeploymentSpec>,
    /// `[accuracy]`: graded items sent inside the measured load.
    #[serde(default)]
    pub accuracy: Option<crate::accuracy::AccuracySection>,
    /// `[power]`: the deployment's GPUs and where their power is read.
    #[serde(default)]
    pub power: Option<Spanned<crate::power::PowerSection>>,
    /// `[cost]`: a price per GPU-hour or per kWh.
    #[serde(default)]
    pub cost: Option<crate::power::CostSection>,
}

/// `[experiment]`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExperimentSection {
    /// Folder name under results/ and reports/: letters, digits, `-`, `_`, `.`.
    pub name: Spanned<String>,
    /// The plan's own version; bump it when the plan's meaning changes.
    pub version: u32,
    /// One line on what the experiment asks.
    #[serde(default)]
    pub description: String,
}

/// Which OpenAI-compatible endpoint to call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ApiKind {
    /// `/v1/chat/completions` (the server applies its chat template).
    Chat,
    /// `/v1/completions` (raw prompt).
    Completions,
    /// `/v1/embeddings` (OpenAI's shape): `workload.batch` inputs per
    /// request, one JSON answer, no stream.
    Embeddings,
    /// `/v1/rerank` (the vLLM, Cohere and Jina shape, which llama.cpp
    /// serves too): the prompt as the query, `workload.batch` documents.
    Rerank,
}

impl ApiKind {
    /// The stable snake_case name: what plans, manifests and the workload
    /// hash hold (`chat`, `completions`). Never change a spelling: old runs
    /// would stop being comparable.
    pub fn as_str(self) -> &'static str {
        match self {
            ApiKind::Chat => "chat",
            ApiKind::Completions => "completions",
            ApiKind::Embeddings => "embeddings",
            ApiKind::Rerank => "rerank",
        }
    }

    /// Whether its answers stream tokens (and so have a TTFT, a TPOT and
    /// gaps between chunks); embeddings and rerank answer once.
    pub fn streams(self) -> bool {
        matches!(self, ApiKind::Chat | ApiKind::Completions)
    }
}

impl std::fmt::Display for ApiKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// `[target]`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TargetSection {
    /// `http(s)://host:port` of an OpenAI-compatible server, or `sim:<profile>`;
    /// empty in a plan whose `[[deployment]]` tables say where the servers are,
    /// or one that leaves it to `--target` ([`crate::Plan::target`]).
    #[serde(default = "no_base_url")]
    pub base_url: Spanned<String>,
    /// Model name to request; defaults to the first model `/v1/models` lists.
    #[serde(default)]
    pub model: Option<String>,
    /// `chat` or `completions`.
    #[serde(default = "default_api")]
    pub api: ApiKind,
    /// Name of the environment variable holding the API key (the key itself never appears in a plan).
    #[serde(default)]
    pub api_key_env: Option<String>,
    /// Per-request total timeout in seconds (`[timeouts]` sets the others).
    #[serde(default = "default_timeout")]
    pub timeout_s: f64,
    /// Extra fields merged into every request body, e.g. `{ ignore_eos = true }`.
    #[serde(default)]
    pub extra_body: toml::Table,
    /// Prometheus metrics to scrape before and after each point: an
    /// `http(s)://` URL or a path on the server; default `/metrics` when it answers.
    #[serde(default)]
    pub metrics_url: Option<Spanned<String>>,
}

impl Default for TargetSection {
    fn default() -> Self {
        TargetSection {
            base_url: no_base_url(),
            model: None,
            api: default_api(),
            api_key_env: None,
            timeout_s: default_timeout(),
            extra_body: toml::Table::new(),
            metrics_url: None,
        }
    }
}

fn no_base_url() -> Spanned<String> {
    Spanned::new(0..0, String::new())
}

fn default_api() -> ApiKind {
    ApiKind::Chat
}
fn default_timeout() -> f64 {
    600.0
}

/// How prompts are made.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, serde::Serialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum PromptRecipe {
    /// A unique nonce, then seeded random common English words.
    #[default]
    RandomWords,
}

impl PromptRecipe {
    /// The recipe as the workload fingerprint records it (`RandomWords`, the
    /// spelling recorded runs hold). Never change it: old runs would stop
    /// being comparable.
    pub fn fingerprint(self) -> &'static str {
        match self {
            PromptRecipe::RandomWords => "RandomWords",
        }
    }
}

/// `[workload]`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Workload {
    /// Prompt length in tokens as the server counts them, chat template included.
    pub input_tokens: Spanned<u32>,
    /// Output tokens asked for (`max_tokens`); send `ignore_eos` for exact lengths.
    pub output_tokens: Spanned<u32>,
    /// Inputs per request (`api = "embeddings"`) or documents per
    /// request (`api = "rerank"`); 1 when absent.
    #[serde(default)]
    pub batch: Option<Spanned<u32>>,
    /// Prompt recipe.
    #[serde(default)]
    pub prompt: PromptRecipe,
    /// Allowed relative difference between planned and server-reported prompt
    /// tokens (see [`Workload::prompt_tolerance`]).
    #[serde(default = "default_tolerance")]
    pub input_tolerance: Spanned<f64>,
    /// Tokens of difference always allowed, however short the prompt.
    #[serde(default = "default_tolerance_tokens")]
    pub input_tolerance_tokens: u32,
    /// Prompts in groups that share a system prompt (see `workload.rs`).
    #[serde(default)]
    pub shared_prefix: Option<crate::workload::SharedPrefix>,
    /// Per-request prompt lengths around the point's `input_tokens`.
    #[serde(default)]
    pub input_lengths: Option<crate::workload::Lengths>,
    /// Per-request `max_tokens` around the point's `output_tokens`.
    #[serde(default)]
    pub output_lengths: Option<crate::workload::Lengths>,
    /// Prompts sampled from a local dataset file instead of filler words.
    #[serde(default)]
    pub dataset: Option<crate::workload::DatasetSource>,
    /// Conversations of several turns, each carrying the turns before it.
    #[serde(default)]
    pub multi_turn: Option<crate::multi_turn::MultiTurn>,
    /// Tools sent with every request (`tools`, `tool_choice`).
    #[serde(default)]
    pub tools: Option<crate::structured::ToolsSection>,
    /// The JSON Schema answers must match (`response_format`).
    #[serde(default)]
    pub response_format: Option<crate::structured::ResponseFormatSection>,
    /// The tools and response schema, read and compiled when the plan loads.
    #[serde(skip)]
    pub structured: crate::structured::Structured,
    /// Request classes (`[[workload.class]]`): adapters, priorities, tenants.
    #[serde(default)]
    pub class: Vec<crate::classes::Class>,
    /// Images in every request's user message (chat only).
    #[serde(default)]
    pub images: Option<crate::images::ImagesSection>,
}

fn default_tolerance() -> Spanned<f64> {
    Spanned::new(0..0, crate::DEFAULT_INPUT_TOLERANCE)
}

fn default_tolerance_tokens() -> u32 {
    crate::DEFAULT_INPUT_TOLERANCE_TOKENS
}

impl Workload {
    /// How far the server's prompt count may be from the plan's:
    /// `input_tolerance` of it, but at least `input_tolerance_tokens`.
    pub fn prompt_tolerance(&self) -> crate::InputTolerance {
        crate::InputTolerance {
            share: *self.input_tolerance.get_ref(),
            tokens: self.input_tolerance_tokens,
        }
    }
}

/// `[sweep]`: each combination of the lists is one point.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Sweep {
    /// Closed-loop concurrency levels (requests in flight).
    #[serde(default)]
    pub concurrency: Option<Spanned<Vec<u32>>>,
    /// Input lengths; overrides `workload.input_tokens`.
    #[serde(default)]
    pub input_tokens: Option<Spanned<Vec<u32>>>,
    /// Output lengths; overrides `workload.output_tokens`.
    #[serde(default)]
    pub output_tokens: Option<Spanned<Vec<u32>>>,
    /// Open-loop arrival rates, requests per second (see `[load]`).
    #[serde(default)]
    pub rate: Option<Spanned<Vec<f64>>>,
    /// Images per request; overrides `workload.images.count`.
    #[serde(default)]
    pub image_count: Option<Spanned<Vec<u32>>>,
    /// Image sizes (`"WxH"`); overrides `workload.images`' size, sizes or files.
    #[serde(default)]
    pub image_size: Option<Spanned<Vec<Spanned<String>>>>,
    /// `image_size`, parsed.
    #[serde(skip)]
    pub image_sizes: Vec<crate::images::ImageSize>,
}

/// Requests per point: a fixed count, or a multiple of the concurrency (`"4x"`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Requests {
    /// Exactly this many requests.
    Count(u32),
    /// This many times the point's concurrency.
    PerConcurrency(u32),
}

impl Requests {
    /// Number of measured requests at a concurrency.
    pub fn at(self, concurrency: u32) -> u32 {
        match self {
            Requests::Count(n) => n,
            Requests::PerConcurrency(k) => k.saturating_mul(concurrency),
        }
    }

    /// The count as the workload fingerprint records it (`Count(8)`,
    /// `PerConcurrency(4)`, the spellings recorded runs hold). Never change
    /// them: old runs would stop being comparable.
    pub fn fingerprint(self) -> String {
        match self {
            Requests::Count(n) => format!("Count({n})"),
            Requests::PerConcurrency(k) => format!("PerConcurrency({k})"),
        }
    }
}

#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
enum RequestsRaw {
    Int(i64),
    Text(String),
}

/// `[run]`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunSection {
    /// Measured requests per point: an integer, or `"Nx"` for N × concurrency.
    #[serde(default = "default_requests", rename = "requests")]
    requests_raw: Spanned<RequestsRaw>,
    #[serde(skip)]
    requests_parsed: Option<Requests>,
    /// Unmeasured requests sent before each point (marked `warmup` in the rows).
    #[serde(default = "default_warmup")]
    pub warmup_requests: u32,
    /// How many times every point is repeated.
    #[serde(default = "default_trials")]
    pub trials: u32,
    /// Seed for prompts and point order.
    #[serde(default)]
    pub seed: u64,
    /// Shuffle the order of points within each trial (seeded); the order is recorded.
    #[serde(default)]
    pub shuffle: bool,
    /// With `[[deployment]]`: `interleaved` (default) or `blocked`.
    #[serde(default)]
    pub order: Option<Spanned<crate::deploy::Order>>,
    /// With launched deployments: `per_block` (default) or `once`.
    #[serde(default)]
    pub restart: Option<Spanned<crate::deploy::Restart>>,
    /// Which answers' texts the run keeps: `sample` (default), `all` or `none`.
    #[serde(default)]
    pub keep_answers: KeepAnswers,
    /// Stop climbing a concurrency or rate sweep, per trial, once the
    /// server is past saturation (docs/plans.md).
    #[serde(default)]
    pub stop_past_saturation: Option<Spanned<bool>>,
}

/// Which answers' texts a run keeps in its request rows (answers can be
/// sensitive; every answer's hash and shape are kept whatever this says).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum KeepAnswers {
    /// The first [`KeepAnswers::SAMPLED`] measured answers of each
    /// (trial, point), whole, and the last [`KeepAnswers::TAIL_CHARS`]
    /// characters of every answer with a health issue.
    #[default]
    Sample,
    /// Every answer, whole.
    All,
    /// No text at all.
    None,
}

impl KeepAnswers {
    /// Measured answers of each (trial, point) kept whole by `sample`.
    pub const SAMPLED: u32 = 3;
    /// Characters kept of the end of an unhealthy answer by `sample`.
    pub const TAIL_CHARS: usize = 256;
}

fn default_requests() -> Spanned<RequestsRaw> {
    Spanned::new(0..0, RequestsRaw::Text("4x".into()))
}
fn default_warmup() -> u32 {
    1
}
fn default_trials() -> u32 {
    3
}

impl Default for RunSection {
    fn default() -> Self {
        RunSection {
            requests_raw: default_requests(),
            requests_parsed: None,
            warmup_requests: default_warmup(),
            trials: default_trials(),
            seed: 0,
            shuffle: false,
            order: None,
            restart: None,
            keep_answers: KeepAnswers::default(),
            stop_past_saturation: None,
        }
    }
}

impl RunSection {
    /// Requests per point, as validated.
    pub fn requests(&self) -> Requests {
        self.requests_parsed
            .or_else(|| parse_requests(self.requests_raw.get_ref()).ok())
            .unwrap_or(Requests::PerConcurrency(4))
    }
}

/// A `run.requests` that is neither a count nor a multiple of concurrency.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("expected a positive integer or a multiple of concurrency such as \"4x\"")]
struct BadRequests;

fn parse_requests(raw: &RequestsRaw) -> Result<Requests, BadRequests> {
    match raw {
        RequestsRaw::Int(n) if *n > 0 && *n <= u32::MAX as i64 => Ok(Requests::Count(*n as u32)),
        RequestsRaw::Int(_) => Err(BadRequests),
        RequestsRaw::Text(s) => s
            .trim()
            .strip_suffix(['x', 'X'])
            .and_then(|k| k.trim().parse::<u32>().ok())
            .filter(|k| *k > 0)
            .map(Requests::PerConcurrency)
            .ok_or(BadRequests),
    }
}

/// `[analysis]`: thresholds for flags in the report.
#[derive(Debug, Clone, Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields)]
pub struct AnalysisSection {
    /// Coefficient of variation across trials above which a point is flagged noisy.
    #[serde(default = "default_cv")]
    pub cv_threshold: f64,
    /// Aggregate-throughput gain per doubling of concurrency below which throughput has stopped scaling (the saturation knee).
    #[serde(default = "default_knee_gain")]
    pub knee_gain: f64,
    /// TTFT above this many times its value at the lowest concurrency has left its low-load plateau (the knee's latency side).
    #[serde(default = "default_ttft_plateau")]
    pub ttft_plateau: f64,
    /// Relative change too small to flag as a curve going the wrong way or as an outlier trial.
    #[serde(default = "default_min_change")]
    pub min_change: f64,
    /// Send lag (scheduled → sent, seconds) above which the load generator fell behind, if also above `send_lag_fraction` of TTFT.
    #[serde(default = "default_send_lag_s")]
    pub send_lag_s: f64,
    /// Send lag as a fraction of the trial's median TTFT above which the load generator fell behind, if also above `send_lag_s`.
    #[serde(default = "default_send_lag_fraction")]
    pub send_lag_fraction: f64,
    /// With `[[deployment]]`: the deployment the others are compared with (default: the first).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub baseline: Option<Spanned<String>>,
}

fn default_cv() -> f64 {
    0.10
}
fn default_knee_gain() -> f64 {
    0.05
}
fn default_ttft_plateau() -> f64 {
    2.0
}
fn default_min_change() -> f64 {
    0.02
}
fn default_send_lag_s() -> f64 {
    0.010
}
fn default_send_lag_fraction() -> f64 {
    0.05
}

impl Default for AnalysisSection {
    fn default() -> Self {
        AnalysisSection {
            cv_threshold: default_cv(),
            knee_gain: default_knee_gain(),
            ttft_plateau: default_ttft_plateau(),
            min_change: default_min_change(),
            send_lag_s: default_send_lag_s(),
            send_lag_fraction: default_send_lag_fraction(),
            baseline: None,
        }
    }
}

fn invalid<T>(span: Range<usize>, key: &str, msg: impl Into<String>) -> Result<T, Invalid> {
    Err((span, Some(key.to_string()), msg.into()))
}

fn check_list(list: &Option<Spanned<Vec<u32>>>, key: &str) -> Result<(), Invalid> {
    if let Some(l) = list {
        if l.get_ref().is_empty() {
            return invalid(l.span(), key, "the list is empty; give at least one value");
        }
        if l.get_ref().contains(&0) {
            return invalid(l.span(), key, "values must be at least 1");
        }
    }
    Ok(())
}

impl PlanFile {
    /// The deployments, the keys that refer to them, and `target.base_url`
    /// beside them.
    fn validate_deployments(&self) -> Result<(), Invalid> {
        crate::deploy::validate(&self.deployments, self.analysis.baseline.as_ref())?;
        if self.deployments.is_empty() {
            for (key, span) in [
                ("run.order", self.run.order.as_ref().map(Spanned::span)),
                ("run.restart", self.run.restart.as_ref().map(Spanned::span)),
            ] {
                if let Some(span) = span {
                    return invalid(span, key, "needs [[deployment]] tables to order or restart");
                }
            }
            return Ok(());
        }
        if !self.target.base_url.get_ref().is_empty() {
            return invalid(
                self.target.base_url.span(),
                "target.base_url",
                "a plan with [[deployment]] tables takes its servers from them; remove target.base_url",
            );
        }
        Ok(())
    }

    /// Checks what serde cannot: ranges, names, URL schemes.
    pub(crate) fn validate(&mut self) -> Result<(), Invalid> {
        let name = &self.experiment.name;
        if crate::names::safe_component(name.get_ref()).is_err() {
            return invalid(
                name.span(),
                "experiment.name",
                "use only letters, digits, '-', '_' and '.' (it names a folder)",
            );
        }
        self.validate_target()?;
        self.validate_workload()?;
        self.validate_images()?;
        self.validate_power()?;
        self.validate_run()
    }

    /// `[workload.images]` and the image sweeps, which need it.
    fn validate_images(&mut self) -> Result<(), Invalid> {
        let chat = self.target.api == ApiKind::Chat;
        let Some(images) = &mut self.workload.images else {
            let swept = [
                self.sweep
                    .image_count
                    .as_ref()
                    .map(|l| (l.span(), "sweep.image_count")),
                self.sweep
                    .image_size
                    .as_ref()
                    .map(|l| (l.span(), "sweep.image_size")),
            ];
            if let Some((span, key)) = swept.into_iter().flatten().next() {
                return invalid(span, key, "sweeps images: add [workload.images]");
            }
            return Ok(());
        };
        images.validate(chat)?;
        if let Some(m) = &self.workload.multi_turn {
            return invalid(
                m.turns.span(),
                "workload.multi_turn",
                "images are sent with single requests; drop [workload.images] or the sessions",
            );
        }
        if let Some(l) = &self.sweep.image_count {
            if l.get_ref().is_empty() {
                return invalid(l.span(), "sweep.image_count", "must not be empty");
            }
        }
        if let Some(l) = &self.sweep.image_size {
            if l.get_ref().is_empty() {
                return invalid(l.span(), "sweep.image_size", "must not be empty");
            }
            for s in l.get_ref() {
                let size = crate::images::ImageSize::parse(s.get_ref())
                    .or_else(|m| invalid(s.span(), "sweep.image_size", m))?;
                self.sweep.image_sizes.push(size);
            }
        }
        Ok(())
    }

    /// `[power]`, `[cost]` and the deployments' own power keys.
    fn validate_power(&self) -> Result<(), Invalid> {
        let named = |d: &crate::deploy::DeploymentSpec| {
            d.gpus.as_ref().is_some_and(|g| !g.get_ref().is_empty())
        };
        let all = |f: &dyn Fn(&crate::deploy::DeploymentSpec) -> bool| {
            !self.deployments.is_empty() && self.deployments.iter().all(f)
        };
        let all_urls = all(&|d| d.power_url.is_some());
        if let Some(p) = &self.power {
            p.get_ref().validate((all(&named), all_urls), p.span())?;
        }
        if self.power.is_none() {
            for d in &self.deployments {
                for (key, span) in [
                    ("power_url", d.power_url.as_ref().map(Spanned::span)),
                    ("gpus", d.gpus.as_ref().map(Spanned::span)),
                ] {
                    if let Some(span) = span {
                        return invalid(
                            span,
                            &format!("deployment.{key}"),
                            "needs a [power] table saying how power is read",
                        );
                    }
                }
            }
        }
        if let Some(c) = &self.cost {
            c.validate(self.power.is_some())?;
        }
        Ok(())
    }

    /// `[target]` and the `[[deployment]]` tables beside it.
    fn validate_target(&self) -> Result<(), Invalid> {
        self.validate_deployments()?;
        let url = self.target.base_url.get_ref();
        // Empty in a plan with deployments (they say where their servers
        // are), and checked where `--target` can stand in for it otherwise
        // (`Plan::target`).
        if !(url.is_empty()
            || url.starts_with("http://")
            || url.starts_with("https://")
            || url.starts_with("sim:"))
        {
            return invalid(
                self.target.base_url.span(),
                "target.base_url",
                "expected http://host:port, https://host, or sim:<profile>",
            );
        }
        if let Some(m) = &self.target.metrics_url {
            let u = m.get_ref();
            if !(u.starts_with("http://") || u.starts_with("https://") || u.starts_with('/')) {
                return invalid(
                    m.span(),
                    "target.metrics_url",
                    "expected http://host:port/metrics or a path such as /metrics",
                );
            }
        }
        self.validate_credentials()?;
        let t = self.target.timeout_s;
        if !(t.is_finite() && t > 0.0 && t <= crate::limits::MAX_WAIT_S) {
            return invalid(
                0..0,
                "target.timeout_s",
                "must be a positive number of seconds, at most a week",
            );
        }
        if let Some(env) = &self.target.api_key_env {
            if env.is_empty() || env.starts_with("sk-") {
                return invalid(
                    0..0,
                    "target.api_key_env",
                    "give the NAME of an environment variable, never the key itself",
                );
            }
        }
        Ok(())
    }

    /// No credential in `[target]`: not in a URL, nor in `extra_body` under
    /// a name that marks one (crate::secrets).
    fn validate_credentials(&self) -> Result<(), Invalid> {
        let urls = [
            ("target.base_url", Some(&self.target.base_url)),
            ("target.metrics_url", self.target.metrics_url.as_ref()),
        ];
        for (key, url) in urls {
            if let Some(u) = url.filter(|u| crate::secrets::url_credentials(u.get_ref())) {
                return invalid(
                    u.span(),
                    key,
                    crate::secrets::refusal(crate::secrets::IN_URL),
                );
            }
        }
        if let Some(path) =
            crate::secrets::secret_in_table(&self.target.extra_body, "target.extra_body")
        {
            return invalid(0..0, &path, crate::secrets::refusal(crate::secrets::HELD));
        }
        Ok(())
    }

    /// `[workload]`, `[sweep]`, `[load]` and `[slo]`: what is sent, and at which loads.
    fn validate_workload(&self) -> Result<(), Invalid> {
        self.validate_lengths()?;
        self.validate_batch()?;
        self.validate_load()?;
        if let Some(slo) = &self.slo {
            slo.get_ref()
                .validate()
                .map_err(|(_, key, msg)| (slo.span(), key, msg))?;
        }
        self.validate_generators()
    }

    /// `workload.batch` and what an API without a stream cannot take.
    fn validate_batch(&self) -> Result<(), Invalid> {
        let api = self.target.api;
        if let Some(b) = &self.workload.batch {
            if *b.get_ref() == 0 {
                return invalid(b.span(), "workload.batch", "must be at least 1");
            }
            if api.streams() {
                return invalid(
                    b.span(),
                    "workload.batch",
                    format!(
                        "is for api = \"embeddings\" or \"rerank\"; this plan's api is \"{api}\""
                    ),
                );
            }
        }
        if api.streams() {
            return Ok(());
        }
        let why = format!("api = \"{api}\" answers once, without generated text");
        if let Some(a) = &self.accuracy {
            return invalid(
                a.items.span(),
                "accuracy.items",
                format!("{why}: it has no answers to grade"),
            );
        }
        if let Some(l) = &self.workload.output_lengths {
            return invalid(
                l.distribution.span(),
                "workload.output_lengths",
                format!("{why}: drop the output lengths"),
            );
        }
        if let Some(l) = &self.sweep.output_tokens {
            return invalid(
                l.span(),
                "sweep.output_tokens",
                format!("{why}: drop the output sweep"),
            );
        }
        Ok(())
    }

    /// The planned lengths and the swept lists.
    fn validate_lengths(&self) -> Result<(), Invalid> {
        if *self.workload.input_tokens.get_ref() == 0 {
            return invalid(
                self.workload.input_tokens.span(),
                "workload.input_tokens",
                "must be at least 1",
            );
        }
        if *self.workload.output_tokens.get_ref() == 0 {
            return invalid(
                self.workload.output_tokens.span(),
                "workload.output_tokens",
                "must be at least 1",
            );
        }
        let tol = *self.workload.input_tolerance.get_ref();
        if !(0.0..0.5).contains(&tol) {
            return invalid(
                self.workload.input_tolerance.span(),
                "workload.input_tolerance",
                "expected a fraction between 0 and 0.5, e.g. 0.01",
            );
        }
        check_list(&self.sweep.concurrency, "sweep.concurrency")?;
        check_list(&self.sweep.input_tokens, "sweep.input_tokens")?;
        check_list(&self.sweep.output_tokens, "sweep.output_tokens")?;
        Ok(())
    }

    /// `[load]` with the sweep: one schedule, and no sweep of what a trace
    /// or a shared prefix fixes.
    fn validate_load(&self) -> Result<(), Invalid> {
        self.load.validate(
            self.sweep.rate.as_ref(),
            self.sweep.concurrency.as_ref().map(|c| c.span()),
        )?;
        if let Some(t) = &self.load.trace {
            for (key, list) in [
                ("sweep.input_tokens", &self.sweep.input_tokens),
                ("sweep.output_tokens", &self.sweep.output_tokens),
            ] {
                if let Some(l) = list {
                    return invalid(
                        l.span(),
                        key,
                        format!(
                            "a trace gives each request its own lengths; drop this sweep or the trace `{}`",
                            t.path.get_ref()
                        ),
                    );
                }
            }
        }
        if let (Some(shared), true) = (
            &self.workload.shared_prefix,
            self.load.stages.is_some() || self.load.trace.is_some(),
        ) {
            return invalid(
                shared.system_tokens.span(),
                "workload.shared_prefix",
                "shared-prefix groups fix each point's request count; use them with `sweep.rate` or concurrency, not with `load.stages` or `load.trace`",
            );
        }
        Ok(())
    }

    /// `[workload.multi_turn]` and what it excludes elsewhere in the plan.
    fn validate_multi_turn(&self, m: &crate::MultiTurn) -> Result<(), Invalid> {
        let w = &self.workload;
        m.validate(self.target.api == ApiKind::Chat)?;
        if w.shared_prefix.is_some() || w.dataset.is_some() || w.input_lengths.is_some() {
            return invalid(
                m.turns.span(),
                "workload.multi_turn.turns",
                "multi-turn sessions make their own prompts: drop shared_prefix, dataset and \
                 input_lengths",
            );
        }
        if self.load.is_open(self.sweep.rate.is_some()) {
            return invalid(
                m.turns.span(),
                "workload.multi_turn",
                "sessions run closed-loop (concurrency counts sessions); drop `sweep.rate`, \
                 `load.stages` and `load.trace`",
            );
        }
        if let Some(c) = w.class.first() {
            return invalid(
                c.name.span(),
                "workload.class.name",
                "request classes are drawn per request, and a session's turns would change \
                 model and tenant: drop [[workload.class]] or [workload.multi_turn]",
            );
        }
        Ok(())
    }

    /// Where prompts come from: a dataset, length distributions,
    /// multi-turn sessions or shared-prefix groups, each with its limits.
    fn validate_generators(&self) -> Result<(), Invalid> {
        let w = &self.workload;
        if let Some(d) = &w.dataset {
            d.validate()?;
            if w.shared_prefix.is_some() || w.input_lengths.is_some() {
                return invalid(
                    d.path.span(),
                    "workload.dataset.path",
                    "dataset prompts have their own lengths: drop shared_prefix and input_lengths",
                );
            }
        }
        if let Some(l) = &w.input_lengths {
            l.validate("workload.input_lengths")?;
        }
        crate::classes::validate(&w.class)?;
        let class_input = w.class.iter().find_map(|c| c.input_tokens.as_ref());
        if let Some(l) = class_input.filter(|_| w.dataset.is_some() || w.multi_turn.is_some()) {
            return invalid(
                l.span(),
                "workload.class.input_tokens",
                "dataset prompts and multi-turn sessions make their own lengths: drop the class's input_tokens",
            );
        }
        if let Some(l) = &w.output_lengths {
            l.validate("workload.output_lengths")?;
        }
        if let Some(m) = &w.multi_turn {
            self.validate_multi_turn(m)?;
        }
        let structured = w
            .tools
            .as_ref()
            .map(|t| (t.file.span(), "workload.tools"))
            .or_else(|| {
                w.response_format
                    .as_ref()
                    .map(|r| (r.schema.span(), "workload.response_format"))
            });
        if let Some((span, key)) = structured.filter(|_| self.target.api != ApiKind::Chat) {
            return invalid(
                span,
                key,
                "tools and response formats are chat requests' fields; set target.api = \"chat\"",
            );
        }
        if let Some(shared) = &w.shared_prefix {
            shared.validate()?;
            // An explicit `requests` has a span; the default has none.
            if !self.run.requests_raw.span().is_empty() {
                return invalid(
                    self.run.requests_raw.span(),
                    "run.requests",
                    "a shared-prefix workload sends groups × prompts_per_group requests per \
                     point; remove run.requests",
                );
            }
        }
        Ok(())
    }

    /// `[run]`, `[analysis]`, `[timeouts]` and `[tolerance]`.
    /// `run.stop_past_saturation` needs a sweep to climb, in order, against one server.
    fn validate_saturation_stop(&self) -> Result<(), Invalid> {
        let Some(stop) = self
            .run
            .stop_past_saturation
            .as_ref()
            .filter(|s| *s.get_ref())
        else {
            return Ok(());
        };
        let levels = self
            .sweep
            .concurrency
            .as_ref()
            .map(|c| c.get_ref().len())
            .max(self.sweep.rate.as_ref().map(|r| r.get_ref().len()))
            .unwrap_or(0);
        let why = if levels < 3 {
            Some("needs a sweep of at least 3 concurrency levels or rates to judge saturation by")
        } else if self.run.shuffle {
            Some("judges each series in increasing load; drop run.shuffle")
        } else if !self.deployments.is_empty() {
            Some("is for plans against one server, not [[deployment]] tables")
        } else {
            None
        };
        match why {
            Some(why) => invalid(stop.span(), "run.stop_past_saturation", why),
            None => Ok(()),
        }
    }

    fn validate_run(&mut self) -> Result<(), Invalid> {
        let parsed = parse_requests(self.run.requests_raw.get_ref())
            .or_else(|m| invalid(self.run.requests_raw.span(), "run.requests", m.to_string()))?;
        self.run.requests_parsed = Some(parsed);
        if self.run.trials == 0 {
            return invalid(0..0, "run.trials", "must be at least 1");
        }
        self.validate_saturation_stop()?;
        if let Some(a) = &self.accuracy {
            if a.per_point == 0 {
                return invalid(0..0, "accuracy.per_point", "must be at least 1");
            }
            if self.workload.multi_turn.is_some() {
                return invalid(
                    a.items.span(),
                    "accuracy.items",
                    "graded items are single requests; a plan with [workload.multi_turn] cannot grade them",
                );
            }
        }
        if self.analysis.cv_threshold.is_nan() || self.analysis.cv_threshold <= 0.0 {
            return invalid(
                0..0,
                "analysis.cv_threshold",
                "must be a positive fraction, e.g. 0.1",
            );
        }
        let a = &self.analysis;
        if a.knee_gain.is_nan() || a.knee_gain <= 0.0 {
            return invalid(
                0..0,
                "analysis.knee_gain",
                "must be a positive fraction, e.g. 0.05",
            );
        }
        if !(a.ttft_plateau > 1.0 && a.ttft_plateau.is_finite()) {
            return invalid(
                0..0,
                "analysis.ttft_plateau",
                "must be a factor above 1, e.g. 2 for twice the lowest concurrency's TTFT",
            );
        }
        // `qexp diff` divides changes into better/worse and `=` at this
        // threshold and refuses 0 (every change would count) and 1 or more.
        if !(a.min_change > 0.0 && a.min_change < 1.0) {
            return invalid(
                0..0,
                "analysis.min_change",
                "must be a fraction more than 0 and below 1, e.g. 0.02 for 2%",
            );
        }
        if !(a.send_lag_s >= 0.0 && a.send_lag_s.is_finite()) {
            return invalid(
                0..0,
                "analysis.send_lag_s",
                "must be a number of seconds, 0 or more, e.g. 0.01",
            );
        }
        if !(a.send_lag_fraction >= 0.0 && a.send_lag_fraction.is_finite()) {
            return invalid(
                0..0,
                "analysis.send_lag_fraction",
                "must be a fraction, 0 or more, e.g. 0.05",
            );
        }
        self.timeouts.validate()?;
        self.tolerance.validate()?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// These spellings feed the workload hash of every recorded run (they
    /// are what `{:?}` printed when the hash was first defined): a change
    /// here makes old runs incomparable with new ones.
    #[test]
    fn fingerprint_spellings_are_pinned() {
        assert_eq!(ApiKind::Chat.as_str(), "chat");
        assert_eq!(ApiKind::Completions.as_str(), "completions");
        assert_eq!(PromptRecipe::RandomWords.fingerprint(), "RandomWords");
        assert_eq!(Requests::Count(8).fingerprint(), "Count(8)");
        assert_eq!(
            Requests::PerConcurrency(4).fingerprint(),
            "PerConcurrency(4)"
        );
        let formats = [crate::DatasetFormat::Jsonl, crate::DatasetFormat::Sharegpt];
        for f in formats {
            assert_eq!(f.fingerprint(), format!("{f:?}"));
        }
        let shapes = [
            crate::LengthShape::Fixed,
            crate::LengthShape::Uniform,
            crate::LengthShape::Normal,
            crate::LengthShape::Lognormal,
        ];
        for s in shapes {
            assert_eq!(s.fingerprint(), format!("{s:?}"));
        }
        for api in [ApiKind::Chat, ApiKind::Completions] {
            let json = serde_json::to_value(api).unwrap_or_default();
            assert_eq!(json, serde_json::Value::from(api.as_str()));
        }
    }
}
