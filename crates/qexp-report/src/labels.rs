//! How points and axes are named everywhere in a report: `c=4 in=1000`,
//! naming only the parameters the run sweeps, so labels stay short and a
//! narrative author can write the key they see in the tables.

use qexp_analysis::Axis;
use qexp_plan::Point;

/// Every axis, in display order.
pub(crate) const AXES: [Axis; 3] = [Axis::Concurrency, Axis::InputTokens, Axis::OutputTokens];

/// The short key of an axis in labels: `c`, `in`, `out`.
pub(crate) fn key(a: Axis) -> &'static str {
    match a {
        Axis::Concurrency => "c",
        Axis::InputTokens => "in",
        Axis::OutputTokens => "out",
        Axis::ImagePixels => "img_px",
    }
}

/// The axis' snake_case name, as used for table and chart keys.
pub(crate) fn name(a: Axis) -> &'static str {
    match a {
        Axis::Concurrency => "concurrency",
        Axis::InputTokens => "input_tokens",
        Axis::OutputTokens => "output_tokens",
        Axis::ImagePixels => "image_pixels",
    }
}

/// `k=v` pairs for the given axes, space-separated.
pub(crate) fn pairs(p: &Point, axes: &[Axis], sep: &str) -> String {
    axes.iter()
        .map(|a| format!("{}={}", key(*a), a.value(p)))
        .collect::<Vec<_>>()
        .join(sep)
}

/// [`short`], after the point's deployment (`plain: c=8`) where it has one:
/// for lines that name points of several deployments together.
pub(crate) fn with_deployment(p: &Point, swept: &[Axis]) -> String {
    match &p.deployment {
        Some(d) => format!("{d}: {}", short(p, swept)),
        None => short(p, swept),
    }
}

/// The point's label naming only the swept axes (all three when none is swept).
pub(crate) fn short(p: &Point, swept: &[Axis]) -> String {
    if p.open_loop.is_some() {
        // A rate, stages or a trace: the concurrency axis says nothing here.
        let rest: Vec<Axis> = swept
            .iter()
            .copied()
            .filter(|a| *a != Axis::Concurrency)
            .collect();
        let load = p.load_label();
        return if rest.is_empty() {
            load
        } else {
            format!("{load} {}", pairs(p, &rest, " "))
        };
    }
    if swept.is_empty() {
        pairs(p, &AXES, " ")
    } else {
        pairs(p, swept, " ")
    }
}

/// The axes swept across these points.
pub(crate) fn swept<'a>(points: impl IntoIterator<Item = &'a Point>) -> Vec<Axis> {
    let plain: Vec<Point> = points.into_iter().cloned().collect();
    Axis::swept(&plain)
}

/// What a table's rows or a chart's x axis run along: a swept plan
/// parameter, or the offered rate of open-loop points (which have no
/// concurrency to show).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Along {
    /// A plan parameter.
    Param(Axis),
    /// The planned arrival rate of single-rate open-loop points, req/s.
    Rate,
}

impl Along {
    /// Every kind, in display order: the load first.
    pub(crate) const ALL: [Along; 5] = [
        Along::Param(Axis::Concurrency),
        Along::Rate,
        Along::Param(Axis::InputTokens),
        Along::Param(Axis::OutputTokens),
        Along::Param(Axis::ImagePixels),
    ];

    /// The point's value on it: None for the rate of a closed-loop,
    /// multi-stage or trace point (no single rate).
    pub(crate) fn value(self, p: &Point) -> Option<f64> {
        match self {
            Along::Param(a) => Some(f64::from(a.value(p))),
            Along::Rate => p
                .open_loop
                .as_ref()
                .filter(|o| o.trace.is_none() && o.stages.len() == 1)
                .map(|o| o.rate()),
        }
    }

    /// snake_case name, as table and chart keys use it (`rate`, `concurrency`, …).
    pub(crate) fn name(self) -> &'static str {
        match self {
            Along::Param(a) => name(a),
            Along::Rate => "rate",
        }
    }

    /// Column header with unit.
    pub(crate) fn header(self) -> &'static str {
        match self {
            Along::Param(a) => a.header(),
            Along::Rate => "Offered rate (req/s)",
        }
    }

    /// Table title: "By concurrency", "By offered rate".
    pub(crate) fn title(self) -> String {
        let what = self.header().split(" (").next().unwrap_or("");
        format!("By {}", what.to_lowercase())
    }

    /// The point's cell in a table: its value, or its load's label where it has no single rate.
    pub(crate) fn cell(self, p: &Point) -> String {
        match (self, &p.open_loop) {
            // Open-loop points have no concurrency to show: name their load instead.
            (Along::Param(Axis::Concurrency), Some(_)) => p.load_label(),
            (Along::Param(a), _) => a.value(p).to_string(),
            (Along::Rate, _) => self
                .value(p)
                .map_or_else(|| p.load_label(), qexp_analysis::format::sig3),
        }
    }

    /// `c=4`, `in=1000`, `rate=2/s`.
    pub(crate) fn pair(self, p: &Point) -> String {
        match self {
            Along::Param(a) => format!("{}={}", key(a), a.value(p)),
            Along::Rate => p.load_label(),
        }
    }

    /// The kinds that apply to these points: concurrency only with
    /// closed-loop points, the rate only with open-loop ones.
    pub(crate) fn applicable<'a>(points: impl IntoIterator<Item = &'a Point>) -> Vec<Along> {
        let (mut open, mut closed, mut images) = (false, false, false);
        for p in points {
            open |= p.open_loop.is_some();
            closed |= p.open_loop.is_none();
            images |= p.images.is_some();
        }
        Along::ALL
            .into_iter()
            .filter(|a| match a {
                Along::Param(Axis::Concurrency) => closed,
                Along::Rate => open,
                // A run that sends no images has no image axis to name.
                Along::Param(Axis::ImagePixels) => images,
                Along::Param(_) => true,
            })
            .collect()
    }

    /// What these points sweep: the parameters that take several values,
    /// and the offered rate when single-rate open-loop points take several.
    pub(crate) fn swept(points: &[&Point]) -> Vec<Along> {
        let params = swept(points.iter().copied());
        Along::applicable(points.iter().copied())
            .into_iter()
            .filter(|a| match a {
                Along::Param(axis) => params.contains(axis),
                Along::Rate => {
                    let mut rates: Vec<u64> = points
                        .iter()
                        .filter_map(|p| a.value(p))
                        .map(f64::to_bits)
                        .collect();
                    rates.sort_unstable();
                    rates.dedup();
                    rates.len() > 1
                }
            })
            .collect()
    }
}
