//! Templates and the files of one report: `report.md`, `report.html` and one
//! SVG per chart, all derived from the run alone so that rendering a run
//! twice gives the same bytes.

use crate::charts::{self, Chart, FlagMark, PointCharts};
use crate::context::report_context;
use crate::error::RenderError;
use crate::model_check::ModelBeside;
use crate::narrative;
use crate::templates::{load_templates, tera_err, TABLES_MD, TABLES_MD_TEXT};
use crate::views::{chart_view, DistributionView, ReportContext};
use qexp_analysis::RunAnalysis;
use std::path::{Path, PathBuf};

const REPORT_MD: &str = "report.md.tera";
const REPORT_HTML: &str = "report.html.tera";
const BUILTIN: [(&str, &str); 3] = [
    (REPORT_MD, include_str!("../../../templates/report.md.tera")),
    (
        REPORT_HTML,
        include_str!("../../../templates/report.html.tera"),
    ),
    (TABLES_MD, TABLES_MD_TEXT),
];

/// The template set: the built-in one, or files from a user's folder.
pub struct Templates {
    tera: tera::Tera,
}

impl Templates {
    /// The templates compiled into qexp (a copy of the repository's `templates/`).
    pub fn builtin() -> Result<Templates, RenderError> {
        Ok(Templates {
            tera: load_templates(&BUILTIN, None)?,
        })
    }

    /// Templates from `dir`; any file missing there falls back to the built-in one.
    pub fn from_dir(dir: &Path) -> Result<Templates, RenderError> {
        Ok(Templates {
            tera: load_templates(&BUILTIN, Some(dir))?,
        })
    }
}

/// Where the narrative notebook comes from.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum Narrative {
    /// `<plan dir>/<experiment>.md` if it exists (the plan path recorded in the manifest).
    #[default]
    BesidePlan,
    /// This file; an error if it cannot be read.
    File(PathBuf),
    /// No narrative.
    None,
}

/// A rendered report in memory: file names (relative to the report folder) and contents.
#[derive(Debug, Clone, PartialEq)]
pub struct Rendered {
    /// `report.md`, `report.html`, then one `<chart>.svg` per chart; with
    /// a model, `model.md` and its charts last.
    pub files: Vec<(String, String)>,
}

/// A run's template context with its charts drawn and placed (no narrative yet).
pub(crate) fn prepare(a: &RunAnalysis) -> Result<(ReportContext, Vec<charts::Chart>), RenderError> {
    let mut ctx = report_context(a);
    let (mut charts, per_point) = draw_charts(a, &mut ctx)?;
    charts.extend(
        per_point
            .into_iter()
            .flat_map(|p| [p.ttft_cdf, p.e2e_cdf, p.timeline])
            .flatten(),
    );
    Ok((ctx, charts))
}

/// Renders every file of one run's report, without writing anything.
pub fn render(
    a: &RunAnalysis,
    templates: &Templates,
    narrative: &Narrative,
) -> Result<Rendered, RenderError> {
    render_beside(a, templates, narrative, None)
}

/// [`render`], and with a model the run against it: a section of the
/// report, and `model.md` with its charts after the report's files.
pub fn render_beside(
    a: &RunAnalysis,
    templates: &Templates,
    narrative: &Narrative,
    model: Option<ModelBeside>,
) -> Result<Rendered, RenderError> {
    let (mut ctx, charts) = prepare(a)?;
    let mut beside = Vec::new();
    if let Some(m) = model {
        let (view, files) = crate::model_check::model_check(a, m)?;
        ctx.fit = Some(view);
        beside = files;
    }
    let source = match narrative {
        Narrative::BesidePlan => narrative::beside_plan(a),
        Narrative::File(p) => Some(p.clone()),
        Narrative::None => None,
    };
    if let Some(path) = source {
        let text = std::fs::read_to_string(&path).map_err(|source| RenderError::Io {
            action: "cannot read narrative",
            path: path.clone(),
            source,
        })?;
        ctx.narrative = Some(narrative::render(
            &path.display().to_string(),
            &text,
            a,
            &ctx,
            &charts,
        ));
    }
    let mut files = vec![
        (
            "report.md".to_string(),
            render_one(templates, REPORT_MD, &ctx)?,
        ),
        (
            "report.html".to_string(),
            render_one(templates, REPORT_HTML, &ctx)?,
        ),
    ];
    files.extend(
        charts
            .into_iter()
            .map(|c| (format!("{}.svg", c.name), c.svg)),
    );
    files.extend(beside);
    Ok(Rendered { files })
}

/// Draws every chart of the run into `ctx`; returns them (the swept-axis
/// charts, then each point's) for the narrative and the files.
fn draw_charts(
    a: &RunAnalysis,
    ctx: &mut ReportContext,
) -> Result<(Vec<Chart>, Vec<PointCharts>), RenderError> {
    let marks: Vec<FlagMark> = ctx
        .flags
        .iter()
        .filter_map(|f| {
            f.point_id.map(|point_id| FlagMark {
                point_id,
                marker: f.marker.clone(),
                metrics: f.metrics.clone(),
            })
        })
        .collect();
    let mut charts = charts::all(&a.points, &marks, a.manifest.target.api)?;
    charts.extend(charts::ttft_by_class(&a.points, &a.classes)?);
    ctx.charts = charts.iter().map(chart_view).collect();
    let per_point = charts::per_point(&a.points, &a.distributions)?;
    ctx.distributions = per_point
        .iter()
        .map(|p| DistributionView {
            point_id: p.point_id,
            point: p.label.clone(),
            ttft_cdf: p.ttft_cdf.as_ref().map(chart_view),
            e2e_cdf: p.e2e_cdf.as_ref().map(chart_view),
            timeline: p.timeline.as_ref().map(chart_view),
        })
        .collect();
    Ok((charts, per_point))
}

fn render_one(t: &Templates, name: &str, ctx: &ReportContext) -> Result<String, RenderError> {
    let c = tera::Context::from_serialize(ctx).map_err(|e| tera_err(name, e))?;
    t.tera.render(name, &c).map_err(|e| tera_err(name, e))
}

/// Renders one run's report into `out_dir` with the narrative beside its plan; returns the files written, `report.md` first.
pub fn render_run(
    a: &RunAnalysis,
    templates: &Templates,
    out_dir: &Path,
) -> Result<Vec<PathBuf>, RenderError> {
    render_run_with(a, templates, &Narrative::BesidePlan, None, out_dir)
}

/// Renders one run's report into `out_dir`, against `model` when given;
/// returns the files written, `report.md` first.
pub fn render_run_with(
    a: &RunAnalysis,
    templates: &Templates,
    narrative: &Narrative,
    model: Option<ModelBeside>,
    out_dir: &Path,
) -> Result<Vec<PathBuf>, RenderError> {
    let rendered = render_beside(a, templates, narrative, model)?;
    write_files(out_dir, rendered.files)
}

/// Writes `files` (name, text) into `out_dir`, creating it; returns the paths, in order.
pub fn write_files(
    out_dir: &Path,
    files: Vec<(String, String)>,
) -> Result<Vec<PathBuf>, RenderError> {
    std::fs::create_dir_all(out_dir).map_err(|source| RenderError::Io {
        action: "cannot create",
        path: out_dir.to_path_buf(),
        source,
    })?;
    let mut written = Vec::new();
    for (name, text) in files {
        let path = out_dir.join(name);
        std::fs::write(&path, text).map_err(|source| RenderError::Io {
            action: "cannot write",
            path: path.clone(),
            source,
        })?;
        written.push(path);
    }
    Ok(written)
}
