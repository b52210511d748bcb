//! Notebooks across runs: Markdown with tera expressions, like a narrative
//! (see [`crate::narrative`]), whose front matter ([`front`]) names the runs
//! it draws on — an experiment's newest complete run, or a pinned run id.
//! Each named run offers what a narrative sees of its own run, under
//! `runs.<name>`: `run`, `swept`, `points`, `point_list`, `tables`, `charts`,
//! `flags`, `flags_md`; `metric(run=…, …)` and `query(run=…, sql=…)` take
//! the run's name.
//!
//! It renders to `notebook.md` and a self-contained `notebook.html`
//! (templates `notebook.md.tera`, `notebook.html.tera`), with the charts it
//! can show beside the Markdown as `<name>-<chart>.svg` and inlined in the
//! HTML. A footer lists the runs it was rendered from: run id, plan hash and
//! git commit. A run that cannot be found, or an expression or query that
//! fails, shows its error in place (see the `cells` module); the rest renders. Output
//! depends on the notebook and its runs only, so a notebook whose runs are
//! pinned renders the same bytes whatever runs land later.

mod cells;
pub mod front;

use crate::charts::Chart;
use crate::error::RenderError;
use crate::narrative::{self, html::to_html, query::query_md, Context, PointView};
use crate::render::{prepare, Rendered};
use crate::templates::{load_templates, tera_err};
pub use front::{FrontMatterError, RunSpec};
use qexp_analysis::workspace::{find_run, newest_complete};
use qexp_types::error::chain;
use serde::Serialize;
use serde_json::Value;
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

const NAME: &str = "notebook";
const NOTEBOOK_MD: &str = "notebook.md.tera";
const NOTEBOOK_HTML: &str = "notebook.html.tera";
const BUILTIN: [(&str, &str); 2] = [
    (
        NOTEBOOK_MD,
        include_str!("../../../../templates/notebook.md.tera"),
    ),
    (
        NOTEBOOK_HTML,
        include_str!("../../../../templates/notebook.html.tera"),
    ),
];

/// Why a notebook could not be rendered at all (errors inside it show in place).
#[derive(Debug, thiserror::Error)]
pub enum NotebookError {
    /// Its front matter is missing or malformed.
    #[error("{}", path.display())]
    Front {
        /// The notebook.
        path: PathBuf,
        /// What is wrong.
        source: FrontMatterError,
    },
    /// A template failed, or a file could not be read.
    #[error(transparent)]
    Render(#[from] RenderError),
}

/// A run the notebook drew on, as its footer lists it.
#[derive(Debug, Clone, Serialize)]
pub struct SourceView {
    /// The notebook's name for it.
    pub name: String,
    /// How it was chosen: `newest complete` or `pinned`.
    pub how: String,
    /// The experiment, or a dash when only a run id was given and it was not found.
    pub experiment: String,
    /// The run id, when found.
    pub run_id: Option<String>,
    /// Its status.
    pub status: Option<String>,
    /// SHA-256 of its plan.
    pub plan_hash: Option<String>,
    /// The git commit its plan was run from.
    pub git_commit: Option<String>,
    /// When it started (UTC).
    pub started_at: Option<String>,
    /// Why it could not be used, when it could not.
    pub error: Option<String>,
}

/// What the notebook templates see.
#[derive(Debug, Clone, Serialize)]
pub struct NotebookView {
    /// The front matter's title, or the file's stem.
    pub title: String,
    /// The notebook file, as given.
    pub source: String,
    /// The body, evaluated, as Markdown.
    pub markdown: String,
    /// The same as HTML, charts inlined.
    pub html: String,
    /// The runs it was rendered from, in name order.
    pub sources: Vec<SourceView>,
}

/// One named run, loaded.
struct Loaded {
    context: Context,
    dir: PathBuf,
    charts: Vec<Chart>,
    /// What the footer says of it, as recorded (not Markdown-escaped).
    facts: [String; 6],
}

/// Renders the notebook `text` (read from `path`) over runs under
/// `results`, with the templates in `templates` where given.
pub fn render_notebook(
    path: &Path,
    text: &str,
    results: &Path,
    templates: Option<&Path>,
) -> Result<Rendered, NotebookError> {
    let parsed = front::parse(text).map_err(|source| NotebookError::Front {
        path: path.to_path_buf(),
        source,
    })?;
    let mut loaded: BTreeMap<String, Loaded> = BTreeMap::new();
    let mut sources = Vec::new();
    for spec in &parsed.runs {
        let (source, run) = load(spec, results);
        sources.push(source);
        if let Some(run) = run {
            loaded.insert(spec.name.clone(), run);
        }
    }
    let missing: BTreeMap<String, String> = sources
        .iter()
        .filter_map(|s| Some((s.name.clone(), s.error.clone()?)))
        .collect();
    let markdown = evaluate(&parsed, &loaded, &missing);
    let inline: Vec<(String, &str)> = loaded
        .iter()
        .flat_map(|(name, l)| {
            l.charts
                .iter()
                .map(move |c| (format!("{name}-{}.svg", c.name), c.svg.as_str()))
        })
        // Only the charts the notebook shows (or links) are written beside it.
        .filter(|(file, _)| references(&markdown, file))
        .collect();
    let view = NotebookView {
        title: parsed.title.clone().unwrap_or_else(|| {
            path.file_stem()
                .map_or("notebook".into(), |s| s.to_string_lossy().into_owned())
        }),
        source: path.display().to_string(),
        html: to_html(&markdown, &inline),
        markdown,
        sources,
    };
    let tera = load_templates(&BUILTIN, templates)?;
    let ctx = tera::Context::from_serialize(&view).map_err(|e| tera_err(NAME, e))?;
    let mut files = Vec::new();
    for (file, template) in [
        ("notebook.md", NOTEBOOK_MD),
        ("notebook.html", NOTEBOOK_HTML),
    ] {
        let text = tera
            .render(template, &ctx)
            .map_err(|e| tera_err(template, e))?;
        files.push((file.to_string(), text));
    }
    files.extend(
        inline
            .into_iter()
            .map(|(file, svg)| (file, svg.to_string())),
    );
    Ok(Rendered { files })
}

/// Finds, analyses and prepares one named run; the footer's line for it either way.
fn load(spec: &RunSpec, results: &Path) -> (SourceView, Option<Loaded>) {
    let mut source = SourceView {
        name: spec.name.clone(),
        how: if spec.run_id.is_some() {
            "pinned"
        } else {
            "newest complete"
        }
        .into(),
        experiment: spec.experiment.clone().unwrap_or_else(|| "–".into()),
        run_id: spec.run_id.clone(),
        status: None,
        plan_hash: None,
        git_commit: None,
        started_at: None,
        error: None,
    };
    let found = match (&spec.experiment, &spec.run_id) {
        (_, Some(id)) => find_run(results, spec.experiment.as_deref(), id).map_err(|e| chain(&e)),
        (Some(e), None) => newest_complete(results, e).map_err(|e| chain(&e)),
        // front::parse refuses an entry that names neither.
        (None, None) => Err("names neither an experiment nor a run".to_string()),
    };
    let loaded = found
        .and_then(|r| qexp_analysis::analyze(&r.dir).map_err(|e| chain(&e)))
        .and_then(|a| {
            let (ctx, charts) = prepare(&a).map_err(|e| chain(&e))?;
            let context = narrative::context(&a, &ctx, &charts, &format!("{}-", spec.name));
            let m = &a.manifest;
            let commit = m.git.as_ref().and_then(|g| g.commit.clone());
            Ok(Loaded {
                context,
                dir: a.dir.clone(),
                charts,
                facts: [
                    m.experiment.clone(),
                    m.run_id.clone(),
                    ctx.status.clone(),
                    m.plan_hash.clone(),
                    commit.unwrap_or_else(|| "not in git".into()),
                    ctx.started_at.clone(),
                ],
            })
        });
    match loaded {
        Ok(l) => {
            let [experiment, run_id, status, plan_hash, commit, started] = l.facts.clone();
            source.experiment = experiment;
            source.run_id = Some(run_id);
            source.status = Some(status);
            source.plan_hash = Some(plan_hash);
            source.git_commit = Some(commit);
            source.started_at = Some(started);
            (source, Some(l))
        }
        Err(e) => {
            source.error = Some(e);
            (source, None)
        }
    }
}

/// The body evaluated: whole when it can be, else cell by cell with errors in place.
fn evaluate(
    parsed: &front::Parsed,
    loaded: &BTreeMap<String, Loaded>,
    missing: &BTreeMap<String, String>,
) -> String {
    let runs: BTreeMap<&str, &Context> = loaded
        .iter()
        .map(|(k, l)| (k.as_str(), &l.context))
        .collect();
    let mut data = tera::Context::new();
    data.insert("runs", &runs);
    let points: BTreeMap<String, Vec<PointView>> = loaded
        .iter()
        .map(|(k, l)| (k.clone(), l.context.point_list.clone()))
        .collect();
    let dirs: BTreeMap<String, PathBuf> = loaded
        .iter()
        .map(|(k, l)| (k.clone(), l.dir.clone()))
        .collect();
    let render = |text: &str| -> Result<String, String> {
        let mut tera = narrative::engine();
        tera.add_raw_template(NAME, text).map_err(|e| chain(&e))?;
        let (p, m) = (points.clone(), missing.clone());
        tera.register_function("metric", move |args: &HashMap<String, Value>| {
            let name = run_arg("metric", args, p.keys(), &m)?;
            narrative::metric(p.get(&name).map_or(&[][..], |v| v.as_slice()), args)
        });
        let (d, m) = (dirs.clone(), missing.clone());
        tera.register_function("query", move |args: &HashMap<String, Value>| {
            let name = run_arg("query", args, d.keys(), &m)?;
            let dir = d.get(&name).ok_or("query(): no such run")?;
            query_md(dir, args)
        });
        tera.render(NAME, &data).map_err(|e| chain(&e))
    };
    if let Ok(md) = render(&parsed.body) {
        return format!("{}\n", md.trim());
    }
    let cells = cells::cells(&parsed.body, parsed.body_line);
    cells::render_cells(&cells, render, |cell, e| explain(cell, e, missing))
}

/// The `run=` argument of `metric()` / `query()`: a loaded run's name.
fn run_arg<'a>(
    function: &str,
    args: &HashMap<String, Value>,
    names: impl Iterator<Item = &'a String>,
    missing: &BTreeMap<String, String>,
) -> tera::Result<String> {
    let names: Vec<&String> = names.collect();
    let Some(name) = args.get("run").and_then(Value::as_str) else {
        return match names.as_slice() {
            [only] if missing.is_empty() => Ok((*only).clone()),
            _ => Err(
                format!("{function}() needs run=\"<name>\" (one of the front matter's runs)")
                    .into(),
            ),
        };
    };
    if let Some(why) = missing.get(name) {
        return Err(format!("run `{name}` is missing: {why}").into());
    }
    if !names.iter().any(|n| *n == name) {
        let known: Vec<&str> = names.iter().map(|s| s.as_str()).collect();
        return Err(format!(
            "{function}(): no run `{name}` in the front matter (runs: {})",
            known.join(", ")
        )
        .into());
    }
    Ok(name.to_string())
}

/// A cell's error; when the cell uses a run that is missing, that is the cause to show.
fn explain(cell: &cells::Cell, error: String, missing: &BTreeMap<String, String>) -> String {
    for (name, why) in missing {
        let uses = [
            format!("runs.{name}."),
            format!("runs[\"{name}\"]"),
            format!("run=\"{name}\""),
        ];
        if uses.iter().any(|u| cell.text.contains(u.as_str())) && !error.contains(why.as_str()) {
            return format!("run `{name}` is missing: {why}");
        }
    }
    error
}

/// Whether `markdown` names `file` as a whole name (`(a-ttft.svg)` names
/// `a-ttft.svg`; `(ba-ttft.svg)` does not).
fn references(markdown: &str, file: &str) -> bool {
    markdown.match_indices(file).any(|(i, _)| {
        let before = markdown[..i].chars().next_back();
        let after = markdown[i + file.len()..].chars().next();
        let part_of_name = |c: char| c.is_alphanumeric() || matches!(c, '-' | '_' | '.');
        !before.is_some_and(part_of_name) && !after.is_some_and(|c| c.is_alphanumeric())
    })
}

#[cfg(test)]
mod tests {
    use super::references;

    #[test]
    fn a_chart_is_named_only_by_its_whole_file_name() {
        let md = "![x](ba-ttft.svg) and [y](./c-agg.svg)";
        assert!(references(md, "ba-ttft.svg"));
        assert!(!references(md, "a-ttft.svg"));
        assert!(references(md, "c-agg.svg"));
        assert!(!references(md, "c-ag.svg"));
    }
}
