//! The one drawing routine every chart shares: medians joined by a line,
//! min–max whiskers with caps, a ring and a marker text on flagged points, a
//! legend when there is more than one series. Log axes are drawn by plotting
//! log10 of the values on a linear axis with ticks placed (and labelled) at
//! round values, so one coordinate type serves every chart.
//!
//! Text goes out as SVG `<text>` elements: plotters' font features (`ttf`,
//! `ab_glyph`) are off, so it estimates text sizes itself and never opens a
//! font file; a machine without fonts renders the same bytes.

use super::ticks::Ticks;
use plotters::coord::ranged1d::{DefaultFormatting, KeyPointHint, Ranged};
use plotters::coord::Shift;
use plotters::prelude::*;
use std::ops::Range;

/// What plotters says when drawing fails (the SVG backend's own errors are I/O errors).
pub type DrawError = plotters::drawing::DrawingAreaErrorKind<std::io::Error>;

/// Width of every chart, pixels.
pub(crate) const WIDTH: u32 = 800;
/// Height of every chart, pixels.
pub(crate) const HEIGHT: u32 = 460;
const FONT: &str = "sans-serif";
/// Okabe–Ito colours (distinguishable with common colour-vision deficiencies), red left for flags.
const PALETTE: [RGBColor; 7] = [
    RGBColor(0, 114, 178),
    RGBColor(230, 159, 0),
    RGBColor(0, 158, 115),
    RGBColor(204, 121, 167),
    RGBColor(86, 180, 233),
    RGBColor(0, 0, 0),
    RGBColor(120, 120, 120),
];
const FLAG: RGBColor = RGBColor(213, 0, 50);

/// One axis: description with unit, scale, ticks and how to label them.
pub(crate) struct AxisSpec {
    /// Description under (or beside) the axis, with unit.
    pub desc: String,
    /// Log10 scale.
    pub log: bool,
    /// Range and ticks in data units.
    pub ticks: Ticks,
    /// Tick label for a value in data units.
    pub label: fn(f64) -> String,
}

impl AxisSpec {
    fn t(&self, v: f64) -> f64 {
        if self.log {
            v.log10()
        } else {
            v
        }
    }

    fn inv(&self, v: f64) -> f64 {
        if self.log {
            10f64.powf(v)
        } else {
            v
        }
    }

    fn coord(&self, values: &[f64]) -> Vec<f64> {
        values.iter().map(|v| self.t(*v)).collect()
    }

    /// The plotting coordinate: linear over the (possibly log10) values, ticks where we put them.
    fn ranged(&self) -> Keyed {
        Keyed {
            lo: self.t(self.ticks.lo),
            hi: self.t(self.ticks.hi),
            bold: self.coord(&self.ticks.bold),
            light: self.coord(&self.ticks.light),
        }
    }
}

/// A linear coordinate with fixed tick positions. (plotters' `WithKeyPoints`
/// over `f64` does not take a label formatter, hence this small one.)
pub(crate) struct Keyed {
    lo: f64,
    hi: f64,
    bold: Vec<f64>,
    light: Vec<f64>,
}

impl Keyed {
    /// `lo..hi` with the same key points for bold and light mesh lines.
    pub(crate) fn new(lo: f64, hi: f64, keys: Vec<f64>) -> Keyed {
        Keyed {
            lo,
            hi,
            bold: keys.clone(),
            light: keys,
        }
    }
}

impl Ranged for Keyed {
    type FormatOption = DefaultFormatting;
    type ValueType = f64;

    fn map(&self, v: &f64, limit: (i32, i32)) -> i32 {
        let span = self.hi - self.lo;
        if span <= 0.0 || !v.is_finite() {
            return (limit.0 + limit.1) / 2;
        }
        // Same rounding as plotters' own numeric ranges.
        limit.0 + (f64::from(limit.1 - limit.0) * (v - self.lo) / span + 1e-3).floor() as i32
    }

    fn key_points<H: KeyPointHint>(&self, hint: H) -> Vec<f64> {
        if hint.weight().allow_light_points() {
            self.light.clone()
        } else {
            self.bold.clone()
        }
    }

    fn range(&self) -> Range<f64> {
        self.lo..self.hi
    }
}

/// One plotted point: median with its min–max across trials.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Mark {
    /// Axis value.
    pub x: f64,
    /// Median across trials.
    pub median: f64,
    /// Smallest trial value.
    pub min: f64,
    /// Largest trial value.
    pub max: f64,
    /// Marker text when the point is flagged.
    pub flag: Option<String>,
}

/// A line of marks sharing the other parameters.
pub(crate) struct Series {
    /// Legend text.
    pub label: String,
    /// Marks in axis order.
    pub marks: Vec<Mark>,
}

/// A whole chart.
pub(crate) struct Plot {
    /// Title above the plot.
    pub title: String,
    /// Horizontal axis.
    pub x: AxisSpec,
    /// Vertical axis.
    pub y: AxisSpec,
    /// The series, in legend order.
    pub series: Vec<Series>,
    /// Where the legend goes (the corner the data leaves empty).
    pub legend: SeriesLabelPosition,
    /// Shift series at the same x a few pixels apart (true for charts over
    /// a swept axis); false where series share points on purpose.
    pub dodge: bool,
    /// How each series' marks are drawn.
    pub style: Style,
}

/// How a series is drawn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Style {
    /// A line through the marks and a dot on each (medians over an axis).
    LineAndDots,
    /// Only the line (a distribution function).
    Line,
    /// Only small dots (one per request).
    Dots,
}

/// A chart's drawing area with the coordinates every chart uses.
type Canvas<'a, 'b> = ChartContext<'a, SVGBackend<'b>, Cartesian2d<Keyed, Keyed>>;

/// What a chart draws beside its series: a band beneath them (which marks
/// the points it passes without hiding their lines) and text beside points.
#[derive(Default)]
pub(crate) struct Extras {
    /// The band's legend text and its points (axis values), left to right.
    pub band: Option<(String, Vec<(f64, f64)>)>,
    /// Text beside a point (axis values), e.g. the load it was measured at.
    pub notes: Vec<(f64, f64, String)>,
}

/// Draws `plot` as SVG text.
pub(crate) fn svg(plot: &Plot) -> Result<String, DrawError> {
    svg_with(plot, &Extras::default())
}

/// [`svg`] with the band beneath the series and the notes beside points.
pub(crate) fn svg_with(plot: &Plot, extras: &Extras) -> Result<String, DrawError> {
    let mut out = String::new();
    {
        let root = SVGBackend::with_string(&mut out, (WIDTH, HEIGHT)).into_drawing_area();
        root.fill(&WHITE)?;
        let mut chart = axes(&root, plot)?;
        let several = plot.series.len() > 1;
        if let Some(band) = &extras.band {
            draw_band(&mut chart, plot, band)?;
        }
        let flagged = draw_series(&mut chart, plot)?;
        draw_notes(&mut chart, plot, &extras.notes)?;
        if !flagged.is_empty() {
            draw_flags(&mut chart, &flagged)?;
        }
        if several || extras.band.is_some() || !flagged.is_empty() {
            chart
                .configure_series_labels()
                .position(plot.legend.clone())
                .margin(12)
                .label_font((FONT, 14))
                .background_style(WHITE.mix(0.9))
                .border_style(RGBColor(170, 170, 170))
                .draw()?;
        }
        root.present()?;
    }
    Ok(out)
}

/// The title, both axes with their descriptions, tick labels and grid.
fn axes<'a, 'b>(
    root: &'a DrawingArea<SVGBackend<'b>, Shift>,
    plot: &Plot,
) -> Result<Canvas<'a, 'b>, DrawError> {
    let (x, y) = (&plot.x, &plot.y);
    let mut chart = ChartBuilder::on(root)
        .caption(&plot.title, (FONT, 22))
        .margin(16)
        .x_label_area_size(56)
        .y_label_area_size(76)
        .build_cartesian_2d(x.ranged(), y.ranged())?;
    let xl = |v: &f64| (x.label)(x.inv(*v));
    let yl = |v: &f64| (y.label)(y.inv(*v));
    chart
        .configure_mesh()
        .x_desc(x.desc.as_str())
        .y_desc(y.desc.as_str())
        .x_label_formatter(&xl)
        .y_label_formatter(&yl)
        .label_style((FONT, 15))
        .axis_desc_style((FONT, 16))
        .bold_line_style(RGBColor(205, 205, 205))
        .light_line_style(RGBColor(237, 237, 237))
        .draw()?;
    Ok(chart)
}

/// Each series: whiskers with caps, the line through the medians (in the
/// legend when there are several) and a dot per median. Returns where the
/// flagged marks are drawn, with their marker text.
fn draw_series<'a, 'b: 'a, 'p>(
    chart: &mut Canvas<'a, 'b>,
    plot: &'p Plot,
) -> Result<Vec<(f64, f64, &'p str)>, DrawError> {
    let (x, y) = (&plot.x, &plot.y);
    let several = plot.series.len() > 1;
    let (ylo, yhi) = (y.ticks.lo, y.ticks.hi);
    let clamp = |v: f64| y.t(v.clamp(ylo, yhi));
    // Several series at the same x are dodged apart by a few pixels so their whiskers stay visible.
    let n = plot.series.len() as f64;
    let step = if plot.dodge {
        0.008 * (x.t(x.ticks.hi) - x.t(x.ticks.lo))
    } else {
        0.0
    };
    let mut flagged: Vec<(f64, f64, &str)> = Vec::new();
    for (i, s) in plot.series.iter().enumerate() {
        let dx = (i as f64 - (n - 1.0) / 2.0) * step;
        let px = |m: &Mark| x.t(m.x) + dx;
        let color = PALETTE[i % PALETTE.len()];
        let style = color.stroke_width(2);
        let spread: Vec<&Mark> = s.marks.iter().filter(|m| m.max > m.min).collect();
        chart.draw_series(spread.iter().map(|m| {
            PathElement::new(vec![(px(m), clamp(m.min)), (px(m), clamp(m.max))], style)
        }))?;
        chart.draw_series(spread.iter().flat_map(|m| {
            [m.min, m.max].map(|v| {
                EmptyElement::at((px(m), clamp(v))) + PathElement::new(vec![(-6, 0), (6, 0)], style)
            })
        }))?;
        let centers: Vec<(f64, f64)> = s.marks.iter().map(|m| (px(m), clamp(m.median))).collect();
        flagged.extend(
            s.marks
                .iter()
                .filter_map(|m| m.flag.as_deref().map(|f| (px(m), clamp(m.median), f))),
        );
        match plot.style {
            Style::LineAndDots | Style::Line => {
                let dots = plot.style == Style::LineAndDots;
                let line = chart.draw_series(LineSeries::new(centers.clone(), style))?;
                if several {
                    line.label(s.label.as_str()).legend(move |(lx, ly)| {
                        let dot = Circle::new((0, 0), if dots { 4 } else { 0 }, color.filled());
                        EmptyElement::at((lx + 10, ly))
                            + PathElement::new(vec![(-10, 0), (10, 0)], style)
                            + dot
                    });
                }
                if dots {
                    chart
                        .draw_series(centers.iter().map(|c| Circle::new(*c, 4, color.filled())))?;
                }
            }
            Style::Dots => {
                let dots = chart.draw_series(
                    centers
                        .iter()
                        .map(|c| Circle::new(*c, 2, color.mix(0.7).filled())),
                )?;
                if several {
                    dots.label(s.label.as_str())
                        .legend(move |(lx, ly)| Circle::new((lx + 10, ly), 4, color.filled()));
                }
            }
        }
    }
    Ok(flagged)
}

/// A wide grey band through `points`, beneath the series, in the legend.
fn draw_band<'a, 'b: 'a>(
    chart: &mut Canvas<'a, 'b>,
    plot: &Plot,
    (label, points): &(String, Vec<(f64, f64)>),
) -> Result<(), DrawError> {
    let (x, y) = (&plot.x, &plot.y);
    let at = |(px, py): &(f64, f64)| (x.t(*px), y.t(py.clamp(y.ticks.lo, y.ticks.hi)));
    let style = RGBColor(150, 150, 150).mix(0.35).stroke_width(12);
    chart
        .draw_series(LineSeries::new(points.iter().map(at), style))?
        .label(label.as_str())
        .legend(move |(lx, ly)| PathElement::new(vec![(lx, ly), (lx + 20, ly)], style));
    chart.draw_series(
        points
            .iter()
            .map(|p| Circle::new(at(p), 8, RGBColor(150, 150, 150).mix(0.35).filled())),
    )?;
    Ok(())
}

/// Each note's text just right of and below its point.
fn draw_notes<'a, 'b: 'a>(
    chart: &mut Canvas<'a, 'b>,
    plot: &Plot,
    notes: &[(f64, f64, String)],
) -> Result<(), DrawError> {
    let (x, y) = (&plot.x, &plot.y);
    let text = (FONT, 13).into_font().color(&RGBColor(80, 80, 80));
    chart.draw_series(notes.iter().map(|(px, py, t)| {
        EmptyElement::at((x.t(*px), y.t(py.clamp(y.ticks.lo, y.ticks.hi))))
            + Text::new(t.clone(), (7, 4), text.clone())
    }))?;
    Ok(())
}

/// A ring and the marker text on each flagged mark, with their legend entry.
fn draw_flags<'a, 'b: 'a>(
    chart: &mut Canvas<'a, 'b>,
    flagged: &[(f64, f64, &str)],
) -> Result<(), DrawError> {
    let ring = FLAG.stroke_width(2);
    let text = (FONT, 15).into_font().color(&FLAG);
    chart
        .draw_series(flagged.iter().map(|(px, py, f)| {
            EmptyElement::at((*px, *py))
                + Circle::new((0, 0), 9, ring)
                + Text::new(f.to_string(), (9, -26), text.clone())
        }))?
        .label("flagged point (see Flags)")
        .legend(move |(lx, ly)| EmptyElement::at((lx + 10, ly)) + Circle::new((0, 0), 6, ring));
    Ok(())
}
