//! The workspace index, `reports/index.md` and `index.html`: every
//! experiment under the results root with its runs (date, git commit,
//! target and engine, status, trials, the headline figure, flags, a link to
//! its report) and its history — one chart per workload of a chosen metric
//! at each point across the complete runs, with the runs where it stepped
//! (found by qexp-analysis, [`qexp_analysis::history`]). Runs of another
//! workload (a different workload hash) get a chart of their own, never a
//! shared line; a workload of one run has no chart (its run is a row of the
//! table). Shard folders belong to the run `qexp merge` made of them: they
//! are no rows of their own once merged, and never feed a history, whose
//! runs each ran the plan's whole load.

mod digest;

use crate::charts::{self, signed, Chart};
use crate::error::RenderError;
use crate::labels;
use crate::render::Rendered;
use crate::templates::{load_templates, tera_err};
pub use digest::{digests, CacheUse, DigestedRun, RunDigest};
use qexp_analysis::history::{history, HistoryInput, StepOptions, WorkloadHistory};
use qexp_analysis::{Direction, Metric};
use serde::Serialize;
use std::collections::BTreeMap;
use std::path::Path;

const INDEX_MD: &str = "index.md.tera";
const INDEX_HTML: &str = "index.html.tera";
const BUILTIN: [(&str, &str); 2] = [
    (
        INDEX_MD,
        include_str!("../../../../templates/index.md.tera"),
    ),
    (
        INDEX_HTML,
        include_str!("../../../../templates/index.html.tera"),
    ),
];

/// What the index templates see.
#[derive(Debug, Clone, Serialize)]
pub struct IndexView {
    /// The metric the history charts follow, as a sentence name.
    pub metric: String,
    /// Its key (`ttft_s`, …).
    pub metric_key: String,
    /// How steps are found, in a sentence.
    pub method: String,
    /// Experiments by name.
    pub experiments: Vec<ExperimentView>,
}

/// One experiment of the index.
#[derive(Debug, Clone, Serialize)]
pub struct ExperimentView {
    /// Its name (the results folder's).
    pub name: String,
    /// The newest run's plan description.
    pub description: String,
    /// Runs, newest first.
    pub runs: Vec<RunRow>,
    /// One history per workload, the newest first.
    pub histories: Vec<HistoryView>,
}

/// One run in the index.
#[derive(Debug, Clone, Serialize)]
pub struct RunRow {
    /// The run id.
    pub run_id: String,
    /// Start, UTC.
    pub date: String,
    /// The git commit (12 characters), or a dash.
    pub git: String,
    /// Target URL and model.
    pub target: String,
    /// Engine and version from the server's fingerprint, or a dash.
    pub engine: String,
    /// `complete`, `interrupted`, `running`, or `unreadable`.
    pub status: String,
    /// For a merged run, the shards it was merged from; for a shard not
    /// merged yet, which one it is.
    pub shards: Option<String>,
    /// Trials.
    pub trials: u32,
    /// The report's first headline figure.
    pub headline: String,
    /// Anomaly flags (warnings and findings).
    pub flags: usize,
    /// The report's HTML, relative to the index, when it has been rendered.
    pub report: Option<String>,
    /// The workload hash, 8 characters.
    pub workload: String,
    /// Points where this run started a new level of the metric, e.g. `c=64 +12.0% (worse)`.
    pub steps: Vec<String>,
    /// Why the run could not be read, when it could not.
    pub error: Option<String>,
}

/// One workload's history chart and its steps.
#[derive(Debug, Clone, Serialize)]
pub struct HistoryView {
    /// Chart title.
    pub title: String,
    /// The SVG file beside the index; none for a workload of one run.
    pub file: Option<String>,
    /// The SVG, for the HTML (empty without a chart).
    pub svg: String,
    /// The workload hash, 8 characters.
    pub workload: String,
    /// Complete runs drawn.
    pub runs: usize,
    /// Each step: run, point, change.
    pub steps: Vec<StepView>,
}

/// A step found in a history, or a point a run lost (every request failed).
#[derive(Debug, Clone, Serialize)]
pub struct StepView {
    /// The first run of the new level.
    pub run_id: String,
    /// The point.
    pub point: String,
    /// `+12.0%`, or `lost`.
    pub change: String,
    /// `worse` or `better`, by the metric's direction.
    pub verdict: String,
    /// Mean before → after, formatted with the unit (or `every request failed`).
    pub levels: String,
    /// The p-value bound.
    pub p: String,
}

/// Renders the index of `runs` (every run under the results root, see
/// [`digests`]) with `metric`'s history; `reports` is where each run's
/// report would be, to link it.
pub fn render_index(
    runs: &[DigestedRun],
    metric: Metric,
    reports: &Path,
    templates: Option<&Path>,
) -> Result<Rendered, RenderError> {
    let mut by_experiment: BTreeMap<&str, Vec<&DigestedRun>> = BTreeMap::new();
    for r in runs {
        by_experiment
            .entry(r.0.experiment.as_str())
            .or_default()
            .push(r);
    }
    let mut files = Vec::new();
    let mut experiments = Vec::new();
    for (name, runs) in by_experiment {
        let (view, charts) = experiment(name, &runs, metric, reports)?;
        files.extend(charts);
        experiments.push(view);
    }
    let opts = StepOptions::default();
    let view = IndexView {
        metric: metric.name().to_string(),
        metric_key: metric.key().to_string(),
        method: format!(
            "A step is marked where the run medians of a point shift in level: binary segmentation with the likelihood-ratio (max-t) test for one shift in a normal mean, p ≤ {} (Bonferroni over the splits) and a move of at least {} (Worsley 1979; Hunter, ICPE 2023). Only complete runs of the same workload are compared.",
            opts.alpha,
            signed(opts.min_relative).trim_start_matches('+')
        ),
        experiments,
    };
    let tera = load_templates(&BUILTIN, templates)?;
    let ctx = tera::Context::from_serialize(&view).map_err(|e| tera_err(INDEX_MD, e))?;
    let mut out = Vec::new();
    for (file, template) in [("index.md", INDEX_MD), ("index.html", INDEX_HTML)] {
        let text = tera
            .render(template, &ctx)
            .map_err(|e| tera_err(template, e))?;
        out.push((file.to_string(), text));
    }
    out.extend(files);
    Ok(Rendered { files: out })
}

/// One experiment's rows and history charts (file name, SVG).
fn experiment(
    name: &str,
    runs: &[&DigestedRun],
    metric: Metric,
    reports: &Path,
) -> Result<(ExperimentView, Vec<(String, String)>), RenderError> {
    let ok: Vec<&RunDigest> = runs.iter().filter_map(|r| r.1.as_ref().ok()).collect();
    // A shard ran part of the plan's load: it is no point of a history.
    let inputs: Vec<&HistoryInput> = ok
        .iter()
        .filter(|d| d.manifest.shard.is_none())
        .map(|d| &d.history)
        .collect();
    let histories = history(&inputs, metric, &StepOptions::default());
    // Steps by run id, for the run rows.
    let mut steps_of: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut views = Vec::new();
    let mut files = Vec::new();
    for (i, w) in histories.iter().enumerate() {
        let (view, chart) = history_view(name, i, w, histories.len(), metric)?;
        for s in &view.steps {
            steps_of
                .entry(s.run_id.clone())
                .or_default()
                .push(format!("{} {} ({})", s.point, s.change, s.verdict));
        }
        if let (Some(file), Some(c)) = (&view.file, chart) {
            files.push((file.clone(), c.svg));
        }
        views.push(view);
    }
    // Newest first, by start: a run id given with --run-id can sort anywhere.
    let mut newest_first: Vec<&DigestedRun> = listed(runs);
    newest_first.sort_by(|a, b| (b.0.started_at, &b.0.run_id).cmp(&(a.0.started_at, &a.0.run_id)));
    let rows: Vec<RunRow> = newest_first
        .iter()
        .map(|r| row(r, reports, &steps_of))
        .collect();
    let description = ok
        .iter()
        .max_by_key(|a| a.manifest.started_at)
        .map_or(String::new(), |a| a.description.clone());
    Ok((
        ExperimentView {
            name: name.to_string(),
            description,
            runs: rows,
            histories: views,
        },
        files,
    ))
}

/// The runs that are rows of the index: all but the shard folders of a
/// merged run among `runs` (the merged run's row names them).
fn listed<'a>(runs: &[&'a DigestedRun]) -> Vec<&'a DigestedRun> {
    let merged: Vec<&str> = runs
        .iter()
        .filter_map(|r| r.1.as_ref().ok())
        .filter(|d| d.manifest.merged.is_some())
        .map(|d| d.manifest.run_id.as_str())
        .collect();
    runs.iter()
        .copied()
        .filter(|r| match &r.1 {
            Ok(d) => d.manifest.shard.is_none() || !merged.contains(&d.manifest.run_id.as_str()),
            Err(_) => true,
        })
        .collect()
}

/// What the index says of a run's shards: the shards a merged run was
/// made of, or which shard a folder not merged yet is.
fn shards_note(m: &qexp_store::Manifest) -> Option<String> {
    if let Some(merged) = &m.merged {
        return Some(format!(
            "merged from {} of {} shards",
            merged.shards.len(),
            merged.count
        ));
    }
    m.shard.as_ref().map(|s| {
        format!(
            "shard {} of {}, not merged: qexp merge its shard folders",
            s.index, s.count
        )
    })
}

fn short(hash: &str) -> String {
    hash.chars().take(8).collect()
}

/// The chart and step list of one workload's history.
fn history_view(
    experiment: &str,
    i: usize,
    w: &WorkloadHistory,
    of: usize,
    metric: Metric,
) -> Result<(HistoryView, Option<Chart>), RenderError> {
    let mut title = format!("{experiment}: {} per point across runs", metric.name());
    if of > 1 {
        title.push_str(&format!(" (workload {})", short(&w.workload_hash)));
    }
    let first = w.runs.first().map_or("", |r| r.run_id.as_str());
    // One run has no history to draw: it is a row of the table.
    let chart = match w.runs.len() {
        0 | 1 => None,
        _ => charts::history(w, metric, &title, first)?,
    };
    let swept = labels::swept(w.points.iter().map(|p| &p.point));
    let steps = w
        .points
        .iter()
        .flat_map(|p| {
            let label = labels::with_deployment(&p.point, &swept);
            let lost = p.lost.iter().map({
                let label = label.clone();
                move |&r| StepView {
                    run_id: w.runs[r].run_id.clone(),
                    point: label.clone(),
                    change: "lost".into(),
                    verdict: "worse".into(),
                    levels: "every request failed".into(),
                    p: "–".into(),
                }
            });
            let stepped = p.values.iter().filter_map(move |v| {
                let s = v.step?;
                let worse = match metric.direction() {
                    Direction::HigherIsBetter => s.relative < 0.0,
                    Direction::LowerIsBetter => s.relative > 0.0,
                };
                Some(StepView {
                    run_id: w.runs[v.run].run_id.clone(),
                    point: label.clone(),
                    change: signed(s.relative),
                    verdict: if worse { "worse" } else { "better" }.into(),
                    levels: match &v.gpu {
                        // A step whose run was held back there says so.
                        Some(cause) => format!(
                            "{} → {}; likely cause: {cause}",
                            metric.format(s.before),
                            metric.format(s.after)
                        ),
                        None => format!("{} → {}", metric.format(s.before), metric.format(s.after)),
                    },
                    p: format!("{:.1e}", s.p_value),
                })
            });
            lost.chain(stepped)
        })
        .collect();
    let view = HistoryView {
        title,
        file: chart
            .as_ref()
            .map(|_| format!("history-{experiment}-{}.svg", i + 1)),
        svg: chart.as_ref().map_or(String::new(), |c| c.svg.clone()),
        workload: short(&w.workload_hash),
        runs: w.runs.len(),
        steps,
    };
    Ok((view, chart))
}

/// A run's row; a run that could not be analysed keeps its error.
fn row(r: &DigestedRun, reports: &Path, steps: &BTreeMap<String, Vec<String>>) -> RunRow {
    let (rref, result) = r;
    let link = format!("{}/{}/report.html", rref.experiment, rref.run_id);
    let report = reports.join(&link).is_file().then_some(link);
    let a = match result {
        Ok(a) => a,
        Err(e) => {
            return RunRow {
                run_id: rref.run_id.clone(),
                date: "–".into(),
                git: "–".into(),
                target: "–".into(),
                engine: "–".into(),
                status: "unreadable".into(),
                shards: None,
                trials: 0,
                headline: "–".into(),
                flags: 0,
                report,
                workload: "–".into(),
                steps: Vec::new(),
                error: Some(e.clone()),
            }
        }
    };
    let m = &a.manifest;
    RunRow {
        // A shard's folder, whose name says which shard it is.
        run_id: m.folder_name(),
        date: m.started_at.format("%Y-%m-%d %H:%M UTC").to_string(),
        git: m
            .git
            .as_ref()
            .and_then(|g| g.commit.as_deref())
            .map_or("–".into(), |c| c.chars().take(12).collect()),
        target: format!("{} ({})", m.target_label(), m.target.model),
        engine: m.fingerprint.as_ref().map_or("–".into(), |f| {
            format!(
                "{}{}",
                f.engine,
                f.version
                    .as_deref()
                    .map_or(String::new(), |v| format!(" {v}"))
            )
        }),
        status: m.status.as_str().to_string(),
        shards: shards_note(m),
        trials: m.trials,
        headline: a.headline.clone().unwrap_or_else(|| "–".into()),
        flags: a.flags,
        report,
        workload: short(&m.comparability.workload_hash),
        steps: steps.get(&m.run_id).cloned().unwrap_or_default(),
        error: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use qexp_analysis::history::{HistoryRun, HistoryValue, PointHistory};
    use qexp_analysis::stats::Summary;
    use qexp_plan::Point;

    /// A workload whose points at `concurrency` (each of every deployment
    /// named) have values in `runs` runs.
    fn workload(runs: usize, concurrency: &[u32], deployments: &[&str]) -> WorkloadHistory {
        let names: Vec<Option<String>> = match deployments {
            [] => vec![None],
            d => d.iter().map(|n| Some(n.to_string())).collect(),
        };
        let runs: Vec<HistoryRun> = (0..runs)
            .map(|i| HistoryRun {
                run_id: format!("run-{i}"),
                input: i,
                started_unix_s: 600.0 * i as f64,
            })
            .collect();
        let value = |run| HistoryValue {
            run,
            summary: Summary::of(&[0.5, 0.51, 0.49]).expect("values"),
            step: None,
            gpu: None,
        };
        let points = names
            .iter()
            .flat_map(|d| concurrency.iter().map(move |&c| (d.clone(), c)))
            .enumerate()
            .map(|(id, (deployment, concurrency))| PointHistory {
                point: Point {
                    id: id as u32,
                    concurrency,
                    input_tokens: 1000,
                    output_tokens: 500,
                    requests: 128,
                    warmup: 0,
                    open_loop: None,
                    deployment,
                    images: None,
                },
                values: (0..runs.len()).map(value).collect(),
                lost: Vec::new(),
            })
            .collect();
        WorkloadHistory {
            workload_hash: "0123456789abcdef".into(),
            runs,
            points,
        }
    }

    /// A point a run lost is listed beside the steps, as that run's flag.
    #[test]
    fn a_lost_point_is_listed_with_the_run_that_lost_it() {
        let mut w = workload(3, &[64], &[]);
        w.points[0].values.remove(1);
        w.points[0].lost = vec![1];
        let (view, chart) = history_view("tput", 0, &w, 1, Metric::TtftS).expect("renders");
        assert!(chart.is_some());
        assert_eq!(view.steps.len(), 1, "{:?}", view.steps);
        let s = &view.steps[0];
        assert_eq!(
            (s.run_id.as_str(), s.change.as_str(), s.verdict.as_str()),
            ("run-1", "lost", "worse")
        );
        assert_eq!(s.levels, "every request failed");
    }

    /// One run is a row of the table, not a chart with a single point at 0.
    #[test]
    fn one_run_has_no_history_chart_and_two_have_one() {
        let (view, chart) =
            history_view("tput", 0, &workload(1, &[1, 8], &[]), 1, Metric::TtftS).expect("renders");
        assert!(chart.is_none() && view.file.is_none() && view.svg.is_empty());
        assert_eq!(view.runs, 1);
        let (view, chart) =
            history_view("tput", 0, &workload(2, &[1, 8], &[]), 1, Metric::TtftS).expect("renders");
        assert!(chart.is_some());
        assert_eq!(view.file.as_deref(), Some("history-tput-1.svg"));
    }

    /// Lines of several deployments at the same loads are told apart by
    /// the deployment's name in the legend.
    #[test]
    fn the_legend_names_each_lines_deployment() {
        let w = workload(2, &[1, 8], &["mtp", "no-mtp"]);
        let (_, chart) = history_view("mtp", 0, &w, 1, Metric::TtftS).expect("renders");
        let svg = chart.expect("a chart of two runs").svg;
        for label in ["mtp: c=1", "mtp: c=8", "no-mtp: c=1", "no-mtp: c=8"] {
            assert!(
                svg.contains(&format!(">\n{label}\n<")),
                "{label} is not in the legend"
            );
        }
    }
}
