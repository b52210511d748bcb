//! Sources → a run: points (one per tool configuration), trials (one per
//! file of a configuration), request and point rows, and the manifest.

use crate::error::ImportError;
use crate::plan::PlanMatch;
use crate::source::{Request, Source, Summary};
use crate::ImportOptions;
use chrono::Utc;
use qexp_plan::{ApiKind, Point};
use qexp_provenance::HostInfo;
use qexp_store::{
    Comparability, ImportRecord, Manifest, PointRow, RequestRow, RunStatus, SourceFile, TargetInfo,
    SCHEMA_VERSION,
};
use qexp_types::ErrorClass;
use std::collections::BTreeMap;

/// A tool's summary figure and the (trial, point) it belongs to.
pub(crate) type Placed = (u32, u32, Summary);

/// The run to write.
pub(crate) struct Run {
    /// Its manifest (status `running` until written).
    pub manifest: Manifest,
    /// Request rows and the point row of each (trial, point).
    pub pairs: Vec<(Vec<RequestRow>, PointRow)>,
    /// The tools' summary figures, placed.
    pub summaries: Vec<Placed>,
}

impl Run {
    /// True when no file had per-request data.
    pub fn summaries_only(&self) -> bool {
        self.manifest
            .import
            .as_ref()
            .is_some_and(|i| i.summaries_only)
    }

    /// Groups the sources into points and trials and makes the rows.
    pub fn new(
        opts: &ImportOptions,
        sources: Vec<Source>,
        plan: Option<&PlanMatch>,
    ) -> Result<Run, ImportError> {
        let first = sources.first().ok_or(ImportError::NoFiles)?;
        let detailed = per_request_data(first, &sources)?;
        let groups = group(&sources);
        let now = Utc::now();
        let run_id = qexp_store::new_run_id(now);
        let mut points = Vec::new();
        let mut pairs = Vec::new();
        let mut summaries = Vec::new();
        let mut files = Vec::new();
        for (pid, members) in groups.iter().enumerate() {
            let pid = pid as u32;
            let point = point_of(pid, members.iter().map(|i| &sources[*i]));
            let point = match plan {
                Some(plan) => {
                    let s = &sources[members[0]];
                    plan.matching(&point, &s.config, &s.path)?
                }
                None => point,
            };
            let pid = point.id;
            for (t, i) in members.iter().enumerate() {
                let (trial, s) = (t as u32 + 1, &sources[*i]);
                files.extend(source_files(s, trial, pid));
                summaries.extend(s.summaries.iter().map(|m| (trial, pid, m.clone())));
                pairs.push(rows(&run_id, trial, &point, s));
            }
            points.push(point);
        }
        let trials = groups.iter().map(Vec::len).max().unwrap_or(0) as u32;
        let point_order = point_order(&groups, &points, trials);
        let unknown = unknowns(&points, &sources);
        let record = ImportRecord {
            format: opts.format.name().to_string(),
            tool: opts.format.tool().to_string(),
            tool_version: opts.tool_version.clone().or(first.tool_version.clone()),
            files,
            unknown,
            summaries_only: !detailed,
            checks: Vec::new(),
            at: now,
        };
        let mut manifest = manifest(opts, run_id, first, points, trials, point_order, record);
        if let Some(plan) = plan {
            file_under_plan(&mut manifest, opts, plan);
        }
        Ok(Run {
            manifest,
            pairs,
            summaries,
        })
    }
}

/// Whether the sources carry per-request data, as `first` does; a file
/// that differs is an error: files with per-request data and files of
/// summaries only are imported separately.
fn per_request_data(first: &Source, sources: &[Source]) -> Result<bool, ImportError> {
    let detailed = first.requests.is_some();
    if let Some(odd) = sources.iter().find(|s| s.requests.is_some() != detailed) {
        return Err(ImportError::Field {
            path: odd.path.clone(),
            field: "ttfts".into(),
            problem: format!(
                "is {} where {} {}: import files with per-request data and files of summaries only separately",
                if detailed { "missing" } else { "present" },
                first.path.display(),
                if detailed { "has it" } else { "has none" }
            ),
        });
    }
    Ok(detailed)
}

/// The files source `s` was read from (its own and those read beside it),
/// with their digests, as files of `trial` at point `point_id`.
fn source_files(s: &Source, trial: u32, point_id: u32) -> impl Iterator<Item = SourceFile> + '_ {
    let also = s.also.iter().map(|(p, sha)| (p, sha.clone()));
    std::iter::once((&s.path, s.sha256.clone()))
        .chain(also)
        .map(move |(path, sha256)| SourceFile {
            name: path.display().to_string(),
            sha256,
            trial,
            point_id,
        })
}

/// For each of the `trials`, the ids of the points that have it: a point
/// of fewer files (`groups`, beside their `points`) has fewer trials.
fn point_order(groups: &[Vec<usize>], points: &[Point], trials: u32) -> Vec<Vec<u32>> {
    (1..=trials)
        .map(|t| {
            groups
                .iter()
                .zip(points)
                .filter(|(m, _)| m.len() >= t as usize)
                .map(|(_, p)| p.id)
                .collect()
        })
        .collect()
}

/// What the imported run cannot tell, each once: the send lag of
/// closed-loop requests when it has closed-loop points, then what each
/// source's format leaves unknown.
fn unknowns(points: &[Point], sources: &[Source]) -> Vec<String> {
    let mut unknown: Vec<String> = Vec::new();
    if points.iter().any(|p| p.open_loop.is_none()) {
        unknown.push("the send lag of closed-loop requests: the tools' queue times include the wait for a free slot, so qexp records each such request as sent when scheduled".to_string());
    }
    for s in sources {
        for u in &s.unknown {
            if !unknown.contains(u) {
                unknown.push(u.clone());
            }
        }
    }
    unknown
}

/// Source indices grouped by configuration, in order of first appearance.
fn group(sources: &[Source]) -> Vec<Vec<usize>> {
    let mut groups: Vec<Vec<usize>> = Vec::new();
    for (i, s) in sources.iter().enumerate() {
        match groups.iter_mut().find(|g| sources[g[0]].config == s.config) {
            Some(g) => g.push(i),
            None => groups.push(vec![i]),
        }
    }
    groups
}

/// The median of whole counts, rounded (0 when there are none).
fn median_count(mut v: Vec<u32>) -> u32 {
    v.sort_unstable();
    match v.len() {
        0 => 0,
        n if n % 2 == 1 => v[n / 2],
        n => ((u64::from(v[n / 2 - 1]) + u64::from(v[n / 2])).div_ceil(2)) as u32,
    }
}

/// A point's parameters: the configuration's load; lengths are the
/// medians of what the tool counted, since it does not record what it asked.
fn point_of<'a>(id: u32, members: impl Iterator<Item = &'a Source> + Clone) -> Point {
    let ok = || {
        members
            .clone()
            .flat_map(|s| s.requests.iter().flatten())
            .filter(|r| r.error.is_none())
    };
    let config = members.clone().next().map(|s| s.config.clone());
    Point {
        id,
        concurrency: config.as_ref().map_or(0, |c| c.concurrency),
        input_tokens: median_count(
            ok().filter_map(|r| r.prompt_tokens.or(r.prompt_tokens_planned))
                .collect(),
        ),
        output_tokens: median_count(ok().filter_map(|r| r.completion_tokens).collect()),
        requests: config.as_ref().map_or(0, |c| c.requests),
        warmup: 0,
        open_loop: config.and_then(|c| c.open_loop),
        deployment: None,
        images: None,
    }
}

/// The rows of one file: its requests and its (trial, point) row.
fn rows(run_id: &str, trial: u32, point: &Point, s: &Source) -> (Vec<RequestRow>, PointRow) {
    let requests: Vec<RequestRow> = s
        .requests
        .iter()
        .flatten()
        .enumerate()
        .map(|(i, r)| request_row(run_id, trial, point, i as u32, r))
        .collect();
    let ok = || requests.iter().filter(|r| r.error_class.is_none());
    let start = requests
        .iter()
        .map(|r| r.sent_unix_s)
        .fold(f64::INFINITY, f64::min);
    let end = requests
        .iter()
        .map(|r| r.sent_unix_s + r.end_s)
        .fold(f64::NEG_INFINITY, f64::max);
    let output: u64 = ok()
        .filter_map(|r| r.completion_tokens)
        .map(u64::from)
        .sum();
    let has = !requests.is_empty() && end > start;
    let row = PointRow {
        run_id: run_id.to_string(),
        trial,
        point_id: point.id,
        point_order: 0,
        concurrency: point.concurrency,
        input_tokens_target: point.input_tokens,
        output_tokens_target: point.output_tokens,
        requests_planned: point.requests,
        requests_done: requests.len() as u32,
        failures: (requests.len() - ok().count()) as u32,
        window_start_unix_s: if has { start } else { 0.0 },
        window_end_unix_s: if has { end } else { 0.0 },
        output_tokens: output,
        agg_output_tok_s: has.then(|| output as f64 / (end - start)),
        send_lag_max_s: requests.iter().map(|r| r.queue_s).fold(0.0, f64::max),
        ..PointRow::default()
    };
    (requests, row)
}

/// One request as qexp stores it; TTFT, E2E and TPOT follow qexp's
/// definitions from the chunk arrivals the tool kept.
fn request_row(run_id: &str, trial: u32, point: &Point, index: u32, r: &Request) -> RequestRow {
    let (first, last, chunks) = match r.first_last {
        Some((f, l, n)) => (Some(f), Some(l), n),
        None => (
            r.chunk_offsets_s.first().copied(),
            r.chunk_offsets_s.last().copied(),
            r.chunk_offsets_s.len() as u32,
        ),
    };
    let ok = r.error.is_none() && chunks > 0;
    let ttft = first.filter(|_| ok);
    let e2e = last.filter(|_| ok);
    let tpot = match (ttft, e2e, r.completion_tokens) {
        (Some(t), Some(e), Some(n)) if n > 1 => Some((e - t) / f64::from(n - 1)),
        _ => None,
    };
    let gaps: Vec<f64> = r.chunk_offsets_s.windows(2).map(|w| w[1] - w[0]).collect();
    // Without the chunks' arrivals only the mean gap is known.
    let itl_mean = match (r.first_last, ttft, e2e) {
        (Some(_), Some(t), Some(e)) if chunks > 1 => Some((e - t) / f64::from(chunks - 1)),
        (Some(_), ..) => None,
        _ => (!gaps.is_empty()).then(|| gaps.iter().sum::<f64>() / gaps.len() as f64),
    };
    // In a closed loop the tools count the wait for a free slot as queue
    // time; qexp schedules a request when its slot frees, so that wait is
    // no send lag (Run::new records the lag as unknown).
    let queue = match point.open_loop {
        Some(_) => r.queue_s.unwrap_or(0.0),
        None => 0.0,
    };
    let text = r.text.as_deref().filter(|_| ok);
    RequestRow {
        run_id: run_id.to_string(),
        trial,
        point_id: point.id,
        request_index: index,
        concurrency: point.concurrency,
        input_tokens_target: point.input_tokens,
        output_tokens_target: point.output_tokens,
        input_tokens_planned: r
            .prompt_tokens_planned
            .or(r.prompt_tokens)
            .unwrap_or(point.input_tokens),
        output_tokens_planned: point.output_tokens,
        scheduled_unix_s: r.sent_s - queue,
        sent_unix_s: r.sent_s,
        queue_s: queue,
        ttft_s: ttft,
        ttft_answer_s: ttft,
        e2e_s: e2e,
        tpot_s: tpot,
        end_s: r.end_s,
        chunks: if ok { chunks } else { 0 },
        itl_mean_s: itl_mean,
        itl_max_s: gaps.iter().copied().reduce(f64::max),
        chunk_offsets_s: if ok {
            r.chunk_offsets_s.clone()
        } else {
            Vec::new()
        },
        prompt_tokens: r.prompt_tokens,
        completion_tokens: r.completion_tokens.filter(|_| ok),
        // The tool's chunks stand for qexp's content deltas.
        client_tokens: if ok { chunks } else { 0 },
        output_chars: text.map_or(0, |t| t.chars().count() as u64),
        error_class: r.error.as_deref().map(classify),
        error_message: r.error.clone(),
        answer_hash: text.map(|t| xxhash_rust::xxh3::xxh3_64(t.as_bytes())),
        ..RequestRow::default()
    }
}

/// The words of a tool's error text that say which of qexp's failure
/// classes it is, first match first. vLLM's benchmarks keep an HTTP
/// status's reason phrase (`Internal Server Error`; vllm-bench adds `HTTP
/// 500`) and, for a stream cut short, the client library's exception.
const ERROR_WORDS: &[(&str, ErrorClass)] = &[
    ("never received a valid chunk", ErrorClass::NoOutput),
    ("too many requests", ErrorClass::RateLimited),
    ("service unavailable", ErrorClass::Unavailable),
    ("payload is not completed", ErrorClass::StreamBroken),
    ("error decoding response body", ErrorClass::StreamBroken),
    ("connection reset", ErrorClass::StreamBroken),
    ("internal server error", ErrorClass::HttpStatus),
    ("bad gateway", ErrorClass::HttpStatus),
    ("gateway timeout", ErrorClass::HttpStatus),
    ("bad request", ErrorClass::HttpStatus),
    ("not found", ErrorClass::HttpStatus),
    ("timeout", ErrorClass::Timeout),
    ("timed out", ErrorClass::Timeout),
    ("connect", ErrorClass::Connect),
];

/// qexp's failure class for a tool's error text (the tool keeps no
/// status); a text that names none is a server error.
fn classify(message: &str) -> ErrorClass {
    let m = message.to_ascii_lowercase();
    ERROR_WORDS
        .iter()
        .find(|(words, _)| m.contains(words))
        .map_or(ErrorClass::ServerError, |(_, class)| *class)
}

/// The workload keys of the comparability fingerprint that the files say:
/// the API, each sweep axis's distinct values, the format the prompts came
/// from, and the open-loop loads.
fn workload_keys(
    api: ApiKind,
    points: &[Point],
    record: &ImportRecord,
) -> BTreeMap<String, String> {
    let distinct = |f: fn(&Point) -> u32| {
        let mut v: Vec<u32> = points.iter().map(f).collect();
        v.sort_unstable();
        v.dedup();
        v.iter().map(u32::to_string).collect::<Vec<_>>().join(",")
    };
    let mut workload = BTreeMap::new();
    workload.insert("api".to_string(), api.as_str().to_string());
    workload.insert("concurrency".to_string(), distinct(|p| p.concurrency));
    workload.insert("input_tokens".to_string(), distinct(|p| p.input_tokens));
    workload.insert("output_tokens".to_string(), distinct(|p| p.output_tokens));
    workload.insert("requests".to_string(), distinct(|p| p.requests));
    workload.insert("prompt".to_string(), format!("import:{}", record.format));
    let loads: Vec<String> = points
        .iter()
        .filter_map(|p| p.open_loop.as_ref().map(qexp_plan::OpenLoop::fingerprint))
        .collect();
    if !loads.is_empty() {
        workload.insert("load".to_string(), loads.join("; "));
    }
    workload
}

/// The manifest: what the files say, and unknown for everything else.
fn manifest(
    opts: &ImportOptions,
    run_id: String,
    first: &Source,
    points: Vec<Point>,
    trials: u32,
    point_order: Vec<Vec<u32>>,
    record: ImportRecord,
) -> Manifest {
    let c = &first.config;
    let workload = workload_keys(c.api, &points, &record);
    let mut deployment = BTreeMap::new();
    deployment.insert("model".to_string(), c.model.clone());
    let experiment = opts
        .experiment
        .clone()
        .unwrap_or_else(|| format!("import-{}", opts.format.name()));
    Manifest {
        schema_version: SCHEMA_VERSION,
        qexp_version: env!("CARGO_PKG_VERSION").to_string(),
        run_id,
        experiment,
        plan_path: String::new(),
        plan_hash: String::new(),
        plan_text: String::new(),
        overrides: qexp_store::Overrides::default(),
        trials,
        points,
        point_order,
        target: TargetInfo {
            base_url: c.base_url.clone().unwrap_or_default(),
            model: c.model.clone(),
            api: c.api,
            simulated: false,
            sim_profile: None,
            sim_time_scale: None,
            api_key_env: None,
        },
        server: None,
        fingerprint: None,
        calibration: Vec::new(),
        git: None,
        host: HostInfo {
            hostname: None,
            os: None,
            kernel: None,
            arch: String::new(),
            cpu_model: None,
            cpus: 0,
            memory_bytes: 0,
            gpus: Vec::new(),
        },
        comparability: Comparability::new(workload, deployment),
        started_at: first.started_at.unwrap_or(record.at),
        ended_at: None,
        status: RunStatus::Running,
        stop_reason: None,
        resumes: Vec::new(),
        client_timing: None,
        deployments: Vec::new(),
        schedule: Vec::new(),
        order: None,
        restart: None,
        baseline: None,
        shard: None,
        merged: None,
        power: Vec::new(),
        import: Some(record),
        saturation_stops: Vec::new(),
    }
}

/// Files the run under the plan it matched: its experiment (unless
/// `--experiment` says another), its text and hash, its workload keys.
fn file_under_plan(m: &mut Manifest, opts: &ImportOptions, plan: &PlanMatch) {
    if opts.experiment.is_none() {
        m.experiment = plan.plan.name().to_string();
    }
    m.plan_path = plan.plan.path.display().to_string();
    m.plan_hash = plan.plan.hash();
    m.plan_text = plan.plan.text.clone();
    m.comparability = Comparability::new(plan.workload.clone(), m.comparability.deployment.clone());
}
