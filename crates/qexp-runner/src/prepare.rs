//! Before a target is measured: its probe and fingerprint, the context
//! check, the model, and prompt lengths made exact (calibrated) on it.

use crate::error::RunError;
use crate::options::RunOptions;
use crate::preflight::{check_context, check_endpoint, check_images};
use crate::target::Target;
use crate::workload::Prompts;
use qexp_client::prompt::Filler;
use qexp_client::{
    calibrate, nonce_for, Calibration, Counter, Fingerprint, MetricsSource, ServerInfo,
};
use qexp_plan::{ApiKind, Point, Trace};
use serde_json::{Map, Value};
use std::collections::BTreeMap;
use std::time::Duration;

/// What a run needs to know of a target before it sends measured requests.
pub(crate) struct Prepared {
    pub model: String,
    pub api: ApiKind,
    pub extra: Map<String, Value>,
    pub filler: Filler,
    pub calibrations: BTreeMap<u32, Calibration>,
    pub dataset: Option<crate::dataset::DatasetPrompts>,
    pub info: ServerInfo,
    pub fingerprint: Fingerprint,
    pub metrics: Option<MetricsSource>,
    /// How long a point waits after its last completion before its closing
    /// scrape of the metrics ([`Target::metrics_settle`]).
    pub metrics_settle: Duration,
    pub trace: Option<Trace>,
    /// What each request class sends (`[[workload.class]]`), in plan order.
    pub classes: Vec<crate::classes::ClassSend>,
    /// Multi-turn: the tokens a turn adds beyond the last prompt, its
    /// answer and the new message's lone-prompt count (0 otherwise).
    pub turn_overhead: i64,
}

/// The trace a plan replays, read again and checked against the plan's hash.
pub(crate) fn load_trace(opts: &RunOptions) -> Result<Option<Trace>, RunError> {
    let Some(tref) = opts
        .plan
        .points()
        .into_iter()
        .find_map(|p| p.open_loop.and_then(|o| o.trace))
    else {
        return Ok(None);
    };
    let trace = Trace::load(std::path::Path::new(&tref.path))?;
    if trace.sha256 != tref.sha256 {
        return Err(RunError::TraceChanged { path: tref.path });
    }
    Ok(Some(trace))
}

/// Probes `target`, checks the plan's points against its context, and
/// calibrates prompt lengths on it (or takes `known` calibrations, made on
/// an earlier start of the same deployment). `model` is the deployment's
/// own model, when it names one.
pub(crate) async fn prepare(
    opts: &RunOptions,
    target: &Target,
    model: Option<&str>,
    known: Option<&BTreeMap<u32, Calibration>>,
) -> Result<Prepared, RunError> {
    let f = &opts.plan.file;
    // Before the server is asked anything: a class's missing variable is bad input.
    let classes = crate::classes::resolve(&f.workload.class)?;
    let metrics_url = f.target.metrics_url.as_ref().map(|m| m.get_ref().as_str());
    let info = qexp_client::probe(&target.client, metrics_url).await?;
    let model = model_for(opts, model, &info)
        .ok_or_else(|| RunError::NoModel(target.client.base_url().to_string()))?;
    let api = f.target.api;
    let extra = extra_body(f);
    let points = opts.plan.points();
    let fingerprint = Fingerprint::from_info(&info, Some(&model));
    tracing::info!(target: crate::PROGRESS_TARGET, "qexp: server: {}", fingerprint.summary());
    // Before any request that costs the server work: calibration already does.
    check_context(
        &points,
        &f.workload.class,
        &fingerprint,
        target.client.base_url(),
    )?;
    check_images(&points, &fingerprint, target.client.base_url())?;
    let probe = qexp_client::GenRequest {
        api,
        model: model.clone(),
        prompt: "hello".into(),
        max_tokens: 1,
        extra: extra.clone(),
        history: None,
        batch: 1,
        headers: Vec::new(),
        images: Default::default(),
    };
    check_endpoint(&target.client, &probe).await?;
    // A metrics URL the plan names is scraped even if the probe found nothing there yet.
    let metrics = metrics_url
        .or(info.metrics_url.as_deref())
        .map(|u| MetricsSource::new(&target.client, u));
    let filler = filler_for(opts, &points);
    let mut counter = Counter::new(&target.client, api, &model, &extra);
    let url = target.client.base_url();
    let dataset = dataset_prompts(opts, &points, (&fingerprint, url), &mut counter).await?;
    // Dataset prompts are counted whole; there is no filler to calibrate.
    let lengths = if dataset.is_some() {
        Vec::new()
    } else {
        Prompts::lengths(&f.workload, &points)
    };
    let calibrations = calibrate_lengths(opts, &mut counter, &filler, lengths, known).await?;
    let turn_overhead = match &f.workload.multi_turn {
        Some(_) => counter
            .turn_overhead()
            .await
            .map_err(RunError::TurnOverhead)?,
        None => 0,
    };
    Ok(Prepared {
        model,
        api,
        extra,
        filler,
        calibrations,
        dataset,
        info,
        fingerprint,
        metrics,
        metrics_settle: target.metrics_settle(),
        trace: load_trace(opts)?,
        classes,
        turn_overhead,
    })
}

/// The fields every request's body carries beyond qexp's own: the plan's
/// `extra_body`, and `tools`, `tool_choice`, `response_format` unless it
/// sends its own.
fn extra_body(f: &qexp_plan::PlanFile) -> Map<String, Value> {
    let mut extra = match serde_json::to_value(&f.target.extra_body) {
        Ok(Value::Object(m)) => m,
        _ => Map::new(),
    };
    for (k, v) in f.workload.structured.body_fields() {
        extra.entry(k).or_insert(v);
    }
    extra
}

/// The dataset's prompts, counted, when the plan has a dataset; its
/// entries are checked against the images the server takes first.
async fn dataset_prompts(
    opts: &RunOptions,
    points: &[qexp_plan::Point],
    (fingerprint, url): (&Fingerprint, &str),
    counter: &mut Counter<'_>,
) -> Result<Option<crate::dataset::DatasetPrompts>, RunError> {
    let Some(source) = &opts.plan.file.workload.dataset else {
        return Ok(None);
    };
    let trials = opts.overrides.trials.unwrap_or(opts.plan.trials());
    let limit =
        fingerprint
            .max_images
            .as_ref()
            .map(|(limit, read_from)| crate::dataset::ImageLimit {
                limit: *limit,
                read_from,
                url,
            });
    let prompts = crate::dataset::prepare(opts, source, points, (trials, limit), counter).await?;
    Ok(Some(prompts))
}

/// The model to ask for: the command line's, the deployment's, the plan's,
/// or the first the server lists.
fn model_for(opts: &RunOptions, model: Option<&str>, info: &ServerInfo) -> Option<String> {
    named_model(opts, model).or_else(|| info.models.first().cloned())
}

/// The model the run names before asking any server: the command line's
/// (`--model`), the deployment's, or the plan's. A launched deployment is
/// started and awaited with it (`{model}`, the readiness check).
pub(crate) fn named_model(opts: &RunOptions, deployment: Option<&str>) -> Option<String> {
    opts.overrides
        .model
        .clone()
        .or_else(|| deployment.map(str::to_string))
        .or_else(|| opts.plan.file.target.model.clone())
}

/// Filler text long enough for the longest prompt of any point, or of the
/// drawn lengths, which may run past it (up to their clamp).
fn filler_for(opts: &RunOptions, points: &[Point]) -> Filler {
    let f = &opts.plan.file;
    let classes = f.workload.class.iter();
    let max_input = points
        .iter()
        .map(|p| p.input_tokens)
        .chain(classes.filter_map(|c| c.input_tokens.as_ref().map(|l| *l.get_ref())))
        .max()
        .unwrap_or(1);
    let drawn_max = f
        .workload
        .input_lengths
        .as_ref()
        .map_or(0, |l| l.bounds().1.min(max_input.saturating_mul(16)));
    Filler::new(f.run.seed, max_input.max(drawn_max) as usize + 16)
}

/// One calibration per prompt length: taken from `known` when an earlier
/// start made it, else measured on the server now.
async fn calibrate_lengths(
    opts: &RunOptions,
    counter: &mut Counter<'_>,
    filler: &Filler,
    lengths: Vec<u32>,
    known: Option<&BTreeMap<u32, Calibration>>,
) -> Result<BTreeMap<u32, Calibration>, RunError> {
    let f = &opts.plan.file;
    let tolerance = f.workload.prompt_tolerance();
    let mut calibrations = BTreeMap::new();
    for input in lengths {
        if let Some(cal) = known.and_then(|k| k.get(&input)) {
            calibrations.insert(input, cal.clone());
            continue;
        }
        let probe_nonce = nonce_for(f.run.seed, 0, 0, 0, 0);
        let cal = calibrate(counter, filler, &probe_nonce, input, tolerance)
            .await
            .map_err(|source| RunError::Calibration { input, source })?;
        tracing::info!(
            input,
            units = cal.units,
            pad = cal.pad,
            measured = cal.measured_tokens,
            "calibrated prompt length"
        );
        calibrations.insert(input, cal);
    }
    Ok(calibrations)
}
