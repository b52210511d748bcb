//! The diff's one chart: a forest plot of the ratio B/A per paired point,
//! one row per point and one coloured mark per metric, with the t-interval
//! interval as a whisker and a reference line at 1 (no change). A filled
//! mark is a significant verdict, a hollow one is `~`. Like the report's
//! charts it is SVG text drawn by plotters without font files, so a diff
//! renders to the same bytes everywhere.

use crate::charts::{ChartError, DrawError, Keyed};
use plotters::coord::Shift;
use plotters::prelude::*;
use qexp_analysis::diff::{Direction, Verdict};
use qexp_analysis::RunDiff;

const FONT: &str = "sans-serif";
const WIDTH: u32 = 900;
const LEGEND_W: u32 = 210;
/// Okabe–Ito colours, as in the run report's charts.
const PALETTE: [RGBColor; 6] = [
    RGBColor(0, 114, 178),
    RGBColor(230, 159, 0),
    RGBColor(0, 158, 115),
    RGBColor(204, 121, 167),
    RGBColor(86, 180, 233),
    RGBColor(0, 0, 0),
];

/// The ratio axis: log10 when the ratios span more than a factor of 2 (so
/// that 1/3 and 3 lie equally far from 1), linear otherwise.
struct RatioAxis {
    log: bool,
    lo: f64,
    hi: f64,
    ticks: Vec<f64>,
}

impl RatioAxis {
    fn new(lo: f64, hi: f64) -> RatioAxis {
        if lo > 0.0 && hi / lo > 2.0 {
            let (a, b) = (lo.log10(), hi.log10());
            let pad = (b - a) * 0.06;
            let (lo, hi) = (10f64.powf(a - pad), 10f64.powf(b + pad));
            // Fewer marks per decade the more decades the axis spans.
            let mantissas: &[f64] = match b - a {
                d if d > 2.0 => &[1.0],
                d if d > 1.0 => &[1.0, 2.0, 5.0],
                _ => &[1.0, 1.5, 2.0, 3.0, 5.0, 7.0],
            };
            let mut ticks = Vec::new();
            for d in (lo.log10().floor() as i32)..=(hi.log10().ceil() as i32) {
                for &m in mantissas {
                    let v = m * 10f64.powi(d);
                    if v >= lo && v <= hi {
                        ticks.push(v);
                    }
                }
            }
            RatioAxis {
                log: true,
                lo,
                hi,
                ticks,
            }
        } else {
            let pad = ((hi - lo) * 0.08).max(0.01);
            let (lo, hi) = (lo - pad, hi + pad);
            // A round step (1, 2, 2.5 or 5 times a power of ten) giving at
            // most 10 intervals, whatever the range.
            let unit = 10f64.powf(((hi - lo) / 10.0).log10().floor());
            let step = [1.0, 2.0, 2.5, 5.0, 10.0]
                .into_iter()
                .map(|m| m * unit)
                .find(|s| (hi - lo) / s <= 10.0)
                .unwrap_or(10.0 * unit);
            let first = (lo / step).ceil() as i64;
            let last = (hi / step).floor() as i64;
            let ticks = (first..=last).map(|i| i as f64 * step).collect();
            RatioAxis {
                log: false,
                lo,
                hi,
                ticks,
            }
        }
    }

    /// Plot coordinate of a ratio.
    fn t(&self, v: f64) -> f64 {
        if self.log {
            v.log10()
        } else {
            v
        }
    }

    fn coord(&self) -> Keyed {
        Keyed::new(
            self.t(self.lo),
            self.t(self.hi),
            self.ticks.iter().map(|v| self.t(*v)).collect(),
        )
    }

    /// Tick label of a plot coordinate: the ratio to three significant
    /// digits, without trailing zeros.
    fn label(&self, c: f64) -> String {
        let v = if self.log { 10f64.powf(c) } else { c };
        if v == 0.0 || !v.is_finite() {
            return "0".into();
        }
        let decimals = (2 - v.abs().log10().floor() as i32).clamp(0, 6) as usize;
        let s = format!("{v:.decimals$}");
        if s.contains('.') {
            s.trim_end_matches('0').trim_end_matches('.').to_string()
        } else {
            s
        }
    }
}

/// One mark: where it goes and how it looks.
struct Mark {
    row: usize,
    metric: usize,
    ratio: f64,
    ci: Option<(f64, f64)>,
    significant: bool,
}

fn err(name: &'static str) -> impl Fn(DrawError) -> ChartError {
    move |source| ChartError { name, source }
}

/// The ratio chart of `d`, rows labelled with `labels` (one per pair); None when no ratio exists.
pub fn ratio_chart(
    d: &RunDiff,
    labels: &[String],
    title: &str,
) -> Result<Option<String>, ChartError> {
    let marks: Vec<Mark> = d
        .pairs
        .iter()
        .enumerate()
        .flat_map(|(row, p)| {
            p.metrics.iter().enumerate().filter_map(move |(metric, m)| {
                Some(Mark {
                    row,
                    metric,
                    ratio: m.ratio?,
                    ci: m.ci.filter(|(lo, hi)| lo.is_finite() && hi.is_finite()),
                    significant: matches!(m.verdict, Verdict::Better | Verdict::Worse),
                })
            })
        })
        .collect();
    if marks.is_empty() {
        return Ok(None);
    }
    draw(d, labels, title, &marks)
        .map(Some)
        .map_err(err("ratios"))
}

/// The chart's drawing surface: ratio (x) against row (y).
type Plot<'a, 'b> = ChartContext<'a, SVGBackend<'b>, Cartesian2d<Keyed, Keyed>>;

/// The row layout: one row per pair, `k` marks stacked within a row.
struct Rows<'l> {
    n: usize,
    k: usize,
    labels: &'l [String],
}

impl Rows<'_> {
    /// Image height: a fixed frame plus a band per row, wide enough for its marks.
    fn height(&self) -> u32 {
        let row_px = (14 * self.k as u32).max(30);
        150 + row_px * self.n as u32
    }

    /// Width of the row labels' area, from the longest label.
    fn label_area(&self) -> u32 {
        let longest = self
            .labels
            .iter()
            .map(|l| l.chars().count())
            .max()
            .unwrap_or(4);
        (12 + 8 * longest as u32).clamp(50, 280)
    }

    /// Plot y of a metric's mark; row i is drawn at y = n - 1 - i, so the first point is at the top.
    fn y(&self, row: usize, metric: usize) -> f64 {
        let (n, k) = (self.n, self.k);
        let step = 0.8 / k as f64;
        (n - 1 - row) as f64 + ((k as f64 - 1.0) / 2.0 - metric as f64) * step
    }

    /// The label of the row nearest a plot y.
    fn label(&self, y: &f64) -> String {
        let i = self.n as f64 - 1.0 - y.round();
        self.labels.get(i as usize).cloned().unwrap_or_default()
    }
}

/// The smallest and largest ratio or interval end among the marks, 1 always included.
fn ratio_span(marks: &[Mark]) -> (f64, f64) {
    let (mut lo, mut hi) = (1.0f64, 1.0f64);
    for m in marks {
        let (a, b) = m.ci.unwrap_or((m.ratio, m.ratio));
        lo = lo.min(a).min(m.ratio);
        hi = hi.max(b).max(m.ratio);
    }
    (lo, hi)
}

/// The chart as SVG text: axes, row frame, every mark, then the legend.
fn draw(d: &RunDiff, labels: &[String], title: &str, marks: &[Mark]) -> Result<String, DrawError> {
    let rows = Rows {
        n: d.pairs.len(),
        k: d.metrics.len().max(1),
        labels,
    };
    let (lo, hi) = ratio_span(marks);
    let x = RatioAxis::new(lo, hi);
    let mut out = String::new();
    {
        let root = SVGBackend::with_string(&mut out, (WIDTH, rows.height())).into_drawing_area();
        root.fill(&WHITE)?;
        let (plot_area, legend_area) = root.split_horizontally(WIDTH - LEGEND_W);
        let mut chart = axes(&plot_area, title, &x, &rows)?;
        frame(&mut chart, &x, rows.n)?;
        for m in marks {
            draw_mark(&mut chart, &x, &rows, m)?;
        }
        legend(&legend_area, d)?;
        root.present()?;
    }
    Ok(out)
}

/// The title, the ratio axis with its ticks and grid, and the row labels.
fn axes<'a, 'b>(
    area: &'a DrawingArea<SVGBackend<'b>, Shift>,
    title: &str,
    x: &RatioAxis,
    rows: &Rows,
) -> Result<Plot<'a, 'b>, DrawError> {
    let n = rows.n;
    let mut chart = ChartBuilder::on(area)
        .caption(title, (FONT, 20))
        .margin(16)
        .x_label_area_size(50)
        .y_label_area_size(rows.label_area())
        .build_cartesian_2d(
            x.coord(),
            Keyed::new(-0.5, n as f64 - 0.5, (0..n).map(|i| i as f64).collect()),
        )?;
    let xl = |v: &f64| x.label(*v);
    let yl = |y: &f64| rows.label(y);
    chart
        .configure_mesh()
        .x_desc(if x.log {
            "Ratio B/A of medians (log scale; 1 = no change)"
        } else {
            "Ratio B/A of medians (1 = no change)"
        })
        .x_label_formatter(&xl)
        .y_label_formatter(&yl)
        .disable_y_mesh()
        .label_style((FONT, 14))
        .axis_desc_style((FONT, 15))
        .bold_line_style(RGBColor(215, 215, 215))
        .light_line_style(TRANSPARENT)
        .draw()?;
    Ok(chart)
}

/// Light separators between the `n` rows and the reference line at ratio 1.
fn frame(chart: &mut Plot, x: &RatioAxis, n: usize) -> Result<(), DrawError> {
    let (xlo, xhi) = (x.t(x.lo), x.t(x.hi));
    let sep = RGBColor(225, 225, 225);
    chart.draw_series((1..n).map(|i| {
        let y = i as f64 - 0.5;
        PathElement::new(vec![(xlo, y), (xhi, y)], sep.stroke_width(1))
    }))?;
    chart.draw_series(std::iter::once(PathElement::new(
        vec![(x.t(1.0), -0.5), (x.t(1.0), n as f64 - 0.5)],
        RGBColor(90, 90, 90).stroke_width(1),
    )))?;
    Ok(())
}

/// One mark: its interval as a capped whisker, then a filled (significant) or hollow dot.
fn draw_mark(chart: &mut Plot, x: &RatioAxis, rows: &Rows, m: &Mark) -> Result<(), DrawError> {
    let color = PALETTE[m.metric % PALETTE.len()];
    let y = rows.y(m.row, m.metric);
    let r = x.t(m.ratio);
    if let Some((a, b)) = m.ci {
        let (a, b) = (x.t(a), x.t(b));
        let style = color.stroke_width(2);
        chart.draw_series([PathElement::new(vec![(a, y), (b, y)], style)])?;
        chart
            .draw_series([a, b].map(|v| {
                EmptyElement::at((v, y)) + PathElement::new(vec![(0, -4), (0, 4)], style)
            }))?;
    }
    let dot = if m.significant {
        Circle::new((r, y), 5, color.filled())
    } else {
        Circle::new((r, y), 5, ShapeStyle::from(&WHITE).filled())
    };
    chart.draw_series([dot])?;
    chart.draw_series([Circle::new((r, y), 5, color.stroke_width(2))])?;
    Ok(())
}

/// The legend beside the plot: each metric's colour and better direction, the dot styles, the whisker.
fn legend(area: &DrawingArea<SVGBackend, Shift>, d: &RunDiff) -> Result<(), DrawError> {
    let text = (FONT, 14).into_font().color(&BLACK);
    let small = (FONT, 13).into_font().color(&RGBColor(80, 80, 80));
    let mut y = 60;
    area.draw(&Text::new("Metric (better is)", (10, y), text.clone()))?;
    for (i, metric) in d.metrics.iter().enumerate() {
        y += 22;
        let color = PALETTE[i % PALETTE.len()];
        area.draw(&Circle::new((18, y + 7), 5, color.filled()))?;
        let way = match metric.direction() {
            Direction::HigherIsBetter => "higher",
            Direction::LowerIsBetter => "lower",
        };
        area.draw(&Text::new(
            format!("{} ({way})", metric.key()),
            (30, y),
            text.clone(),
        ))?;
    }
    y += 34;
    area.draw(&Circle::new((18, y + 7), 5, BLACK.filled()))?;
    area.draw(&Text::new("significant", (30, y), small.clone()))?;
    y += 22;
    area.draw(&Circle::new((18, y + 7), 5, BLACK.stroke_width(2)))?;
    area.draw(&Text::new("~ (not significant)", (30, y), small.clone()))?;
    y += 22;
    area.draw(&Text::new(
        format!("whisker: {}% interval", d.level * 100.0),
        (10, y),
        small,
    ))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::RatioAxis;

    #[test]
    fn extreme_ratio_ranges_keep_few_ticks_and_readable_labels() {
        // A ratio of 0 forces the linear axis; the range is 0..200.
        let x = RatioAxis::new(0.0, 200.0);
        assert!(!x.log);
        assert!((3..=11).contains(&x.ticks.len()), "{:?}", x.ticks);
        // Six decades on the log axis: one mark per decade.
        let x = RatioAxis::new(0.001, 1000.0);
        assert!(x.log);
        assert!((5..=9).contains(&x.ticks.len()), "{:?}", x.ticks);
        assert_eq!(x.label(0.001f64.log10()), "0.001");
        assert_eq!(x.label(1000f64.log10()), "1000");
        assert_eq!(x.label(0.0), "1");
        let x = RatioAxis::new(0.95, 1.12);
        assert_eq!(x.label(1.05), "1.05");
    }

    #[test]
    fn wide_ratios_get_a_log_axis_symmetric_around_one() {
        let x = RatioAxis::new(1.0 / 3.0, 3.0);
        assert!(x.log);
        assert!((x.t(3.0) + x.t(1.0 / 3.0)).abs() < 1e-12);
        assert!(x.ticks.contains(&1.0) && x.ticks.contains(&3.0));
        assert!(x.ticks.iter().all(|t| (x.lo..=x.hi).contains(t)));
        assert_eq!(x.label(x.t(1.5)), "1.5");
    }

    #[test]
    fn narrow_ratios_get_round_linear_ticks() {
        let x = RatioAxis::new(0.95, 1.12);
        assert!(!x.log);
        assert!(x.ticks.len() >= 3 && x.ticks.len() <= 11, "{:?}", x.ticks);
        assert!(x.ticks.iter().any(|t| (t - 1.0).abs() < 1e-9));
        assert_eq!(x.label(1.0), "1");
        // A zero ratio (B produced nothing) cannot go on a log axis.
        assert!(!RatioAxis::new(0.0, 3.0).log);
    }
}
