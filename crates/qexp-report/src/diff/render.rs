//! The diff's templates and files: `diff.md` (with `ratios.svg` beside it)
//! and a self-contained `diff.html`, through the same tera machinery as the
//! run report, with built-in templates and a user folder that overrides them.

use super::chart::ratio_chart;
use super::{diff_context, pair_labels, DiffChartView, DiffContext};
use crate::error::RenderError;
use crate::templates::{load_templates, tera_err};
use qexp_analysis::RunDiff;
use std::path::{Path, PathBuf};

const DIFF_MD: &str = "diff.md.tera";
const DIFF_HTML: &str = "diff.html.tera";
const BUILTIN: [(&str, &str); 2] = [
    (DIFF_MD, include_str!("../../../../templates/diff.md.tera")),
    (
        DIFF_HTML,
        include_str!("../../../../templates/diff.html.tera"),
    ),
];
/// File name of the ratio chart.
pub const CHART_FILE: &str = "ratios.svg";

/// A written output of `qexp diff`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DiffFormat {
    /// `diff.md` and `ratios.svg`.
    Markdown,
    /// `diff.html`, chart inline.
    Html,
}

/// The diff template set: built-in, or a user's folder with fallback.
pub struct DiffTemplates {
    tera: tera::Tera,
}

impl DiffTemplates {
    /// The templates compiled into qexp (copies of `templates/diff.*.tera`).
    pub fn builtin() -> Result<DiffTemplates, RenderError> {
        Ok(DiffTemplates {
            tera: load_templates(&BUILTIN, None)?,
        })
    }

    /// Templates from `dir`; a file missing there falls back to the built-in one.
    pub fn from_dir(dir: &Path) -> Result<DiffTemplates, RenderError> {
        Ok(DiffTemplates {
            tera: load_templates(&BUILTIN, Some(dir))?,
        })
    }

    fn render(&self, name: &str, ctx: &DiffContext) -> Result<String, RenderError> {
        let c = tera::Context::from_serialize(ctx).map_err(|e| tera_err(name, e))?;
        self.tera.render(name, &c).map_err(|e| tera_err(name, e))
    }
}

/// Renders the files of `formats` in memory: `(file name, contents)`, in format order, the chart after `diff.md`.
pub fn render_diff(
    d: &RunDiff,
    templates: &DiffTemplates,
    formats: &[DiffFormat],
) -> Result<Vec<(String, String)>, RenderError> {
    let mut ctx = diff_context(d);
    let title = "Ratio B/A per point, with its t-interval".to_string();
    ctx.chart = ratio_chart(d, &pair_labels(d), &title)?.map(|svg| DiffChartView {
        file: CHART_FILE.into(),
        title,
        svg,
    });
    let mut files = Vec::new();
    for f in formats {
        match f {
            DiffFormat::Markdown => {
                files.push(("diff.md".into(), templates.render(DIFF_MD, &ctx)?));
                if let Some(c) = &ctx.chart {
                    files.push((c.file.clone(), c.svg.clone()));
                }
            }
            DiffFormat::Html => {
                files.push(("diff.html".into(), templates.render(DIFF_HTML, &ctx)?))
            }
        }
    }
    Ok(files)
}

/// Renders and writes the files of `formats` into `out_dir`; returns the paths written.
pub fn write_diff(
    d: &RunDiff,
    templates: &DiffTemplates,
    formats: &[DiffFormat],
    out_dir: &Path,
) -> Result<Vec<PathBuf>, RenderError> {
    let files = render_diff(d, templates, formats)?;
    crate::render::write_files(out_dir, files)
}
