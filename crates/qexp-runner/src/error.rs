//! Why a run could not start or had to stop.

use std::path::PathBuf;

/// Why a run could not start or had to stop.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// The target string is not usable.
    #[error(transparent)]
    Target(#[from] TargetError),
    /// The simulator profile a `sim:` target names cannot be had.
    #[error(transparent)]
    SimProfile(#[from] qexp_sim::LookupError),
    /// The target did not answer its model list.
    #[error(transparent)]
    Unreachable(#[from] qexp_client::ProbeError),
    /// The API key variable named by the plan is not set.
    #[error("the plan names api_key_env = \"{0}\", but that environment variable is not set")]
    MissingApiKey(String),
    /// A request class names a header's variable that is not set, or
    /// holds what a header cannot carry.
    #[error("class `{class}` takes header `{header}` from ${var}, but that environment variable is not set or holds a line break or control character")]
    MissingHeaderEnv {
        /// The class.
        class: String,
        /// The header.
        header: String,
        /// The variable.
        var: String,
    },
    /// No model was given and the server lists none.
    #[error("no model given (plan target.model or --model) and {0}/v1/models lists none")]
    NoModel(String),
    /// A point needs more context than the server allows (checked before any load).
    #[error("point {point} needs {needed} tokens of {what}, but {engine} at {url} allows {limit} ({limit_source}); restart the server with a larger {flag}, or shrink the point")]
    // Boxed strings keep `Result<_, RunError>` small (clippy::result_large_err).
    ContextTooSmall {
        /// The point's label.
        point: Box<str>,
        /// Tokens it needs (input + output, or input).
        needed: u64,
        /// `context` or `input`.
        what: &'static str,
        /// The server's limit.
        limit: u32,
        /// The engine.
        engine: Box<str>,
        /// The server's URL.
        url: Box<str>,
        /// Where the limit was read.
        limit_source: Box<str>,
        /// The flag that raises it.
        flag: &'static str,
    },
    /// The server does not serve the plan's endpoint (embeddings, rerank),
    /// found by one small request before any load.
    #[error("{url} does not serve {path} for api = \"{api}\" (HTTP {status}: {message}); start the server with that endpoint (llama.cpp: --embeddings or --reranking; vLLM: a pooling model) or change target.api")]
    NoEndpoint {
        /// The server's URL.
        url: Box<str>,
        /// The endpoint asked.
        path: &'static str,
        /// The plan's API.
        api: qexp_plan::ApiKind,
        /// What the server answered.
        status: u16,
        /// Its error message, cut short.
        message: Box<str>,
    },
    /// A point sends more images per request than the server takes.
    #[error("point {point} sends {count} images per request but {url} takes at most {limit} ({read_from}); lower sweep.image_count or workload.images.count, or raise the server's limit (vLLM: --limit-mm-per-prompt)")]
    TooManyImages {
        /// The point's label.
        point: Box<str>,
        /// Images per request it sends.
        count: u32,
        /// The server's limit.
        limit: u32,
        /// Where the limit was read.
        read_from: Box<str>,
        /// The server's URL.
        url: Box<str>,
    },
    /// Prompt lengths could not be made exact.
    #[error("cannot calibrate a {input}-token prompt")]
    Calibration {
        /// Planned prompt tokens.
        input: u32,
        /// The cause.
        source: qexp_client::CalibrationError,
    },
    /// A multi-turn plan's turn lengths could not be measured on the server.
    #[error("cannot measure what a conversation's turn adds to its prompt: {0}")]
    TurnOverhead(qexp_client::CalibrationError),
    /// The replayed trace could not be read again.
    #[error(transparent)]
    Trace(#[from] qexp_plan::TraceError),
    /// The replayed trace changed since the plan was loaded.
    #[error("trace {path} changed after the plan was loaded; run again")]
    TraceChanged {
        /// The trace file, as the plan names it.
        path: String,
    },
    /// The plan's dataset cannot be used.
    #[error(transparent)]
    Dataset(#[from] qexp_client::DatasetError),
    /// Dataset entries carry images, which only chat requests send.
    #[error("dataset {path} has entries with images, which only chat requests send: set target.api = \"chat\" or drop the images")]
    DatasetImagesNotChat {
        /// The dataset file.
        path: PathBuf,
    },
    /// A dataset entry carries more images than the server takes.
    #[error("dataset {} entry {entry} carries {count} images but {url} takes at most {limit} ({read_from}); drop or split such entries, or raise the server's limit (vLLM: --limit-mm-per-prompt)", path.display())]
    DatasetTooManyImages {
        /// The dataset file.
        path: PathBuf,
        /// The entry, counted from 1 in the file.
        entry: usize,
        /// Its images.
        count: usize,
        /// The server's limit.
        limit: u32,
        /// Where the limit was read.
        read_from: Box<str>,
        /// The server's URL.
        url: Box<str>,
    },
    /// The dataset's filters leave no prompt.
    #[error("no prompt of dataset {path} passes the plan's word filters (workload.dataset min_words / max_words)")]
    DatasetFiltered {
        /// The dataset file.
        path: PathBuf,
    },
    /// A dataset prompt could not be counted on the server.
    #[error("cannot count the tokens of dataset prompt {entry}")]
    DatasetCount {
        /// The prompt's position in the dataset (from 0).
        entry: usize,
        /// The cause.
        source: qexp_client::CalibrationError,
    },
    /// `[power]` requires a source and none could be read.
    #[error("no GPU power source{} could be read, and [power] requires one: {}", of_deployment(deployment.as_deref()), said.join("; "))]
    PowerRequired {
        /// The deployment whose source it was, if any.
        deployment: Option<String>,
        /// What each source tried said.
        said: Vec<String>,
    },
    /// The embedded simulator failed to start.
    #[error("cannot start the embedded simulator: {0}")]
    Sim(std::io::Error),
    /// The plan of a run to resume does not load.
    #[error(transparent)]
    Plan(qexp_plan::PlanError),
    /// A run cannot be resumed (complete, or its plan or target changed).
    #[error("cannot resume {}: {why}", dir.display())]
    ResumeRefused {
        /// The run folder.
        dir: PathBuf,
        /// Why, in one phrase.
        why: String,
    },
    /// Results could not be written.
    #[error(transparent)]
    Store(#[from] qexp_store::StoreError),
    /// The HTTP client could not be built.
    #[error(transparent)]
    Client(#[from] qexp_client::ClientError),
    /// A shard option does not fit the plan.
    #[error(transparent)]
    Shard(#[from] ShardRefusal),
    /// Shard 0 cannot serve the rendezvous where it was asked to.
    #[error("shard 0 cannot serve the rendezvous on {bind}")]
    RendezvousServe {
        /// The address asked.
        bind: String,
        /// The cause.
        source: std::io::Error,
    },
    /// The rendezvous cannot be reached, or would not admit this process.
    #[error(transparent)]
    Rendezvous(#[from] qexp_rendezvous::member::JoinError),
    /// The output folder is unusable.
    #[error("cannot use output folder {}: {message}", path.display())]
    Output {
        /// The folder.
        path: PathBuf,
        /// The cause.
        message: String,
    },
}

/// Why a target cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum TargetError {
    /// `--target` given to a plan whose deployments name their servers.
    #[error(
        "--target cannot be used with a plan that has [[deployment]] tables: each deployment names its own server (command or base_url)"
    )]
    WithDeployments,
    /// A `sim:` query value outside what its key takes.
    #[error("target `{given}`: {key}= takes {takes}")]
    Knob {
        /// The target as given.
        given: String,
        /// The query key.
        key: String,
        /// What the key takes, in a phrase.
        takes: &'static str,
    },
    /// A `sim:` target's faults that do not parse.
    #[error("target `{given}`")]
    Faults {
        /// The target as given.
        given: String,
        /// The cause.
        source: qexp_sim::FaultSpecError,
    },
    /// Neither an HTTP URL nor `sim:`.
    #[error("target `{given}` is neither http(s)://host:port nor sim:<profile>")]
    Scheme {
        /// The target as given.
        given: String,
    },
}

/// Why a plan cannot be split into shards.
#[derive(Debug, thiserror::Error)]
pub enum ShardRefusal {
    /// A plan with deployments runs in one process.
    #[error(
        "--shard splits a plan against one target; a plan with [[deployment]] tables runs in one process"
    )]
    Deployments,
    /// `stop_past_saturation` judges a point's whole load.
    #[error(
        "[run] stop_past_saturation judges each point's whole load, which no shard sees; run the plan in one process or drop the key"
    )]
    StopPastSaturation,
    /// The target is a simulator inside each process.
    #[error(transparent)]
    InProcess(#[from] qexp_plan::in_process::InProcessShards),
}

/// ` of deployment NAME` where a deployment is named, else nothing: whose
/// power sources a sentence speaks of.
pub(crate) fn of_deployment(name: Option<&str>) -> String {
    name.map_or(String::new(), |d| format!(" of deployment {d}"))
}
