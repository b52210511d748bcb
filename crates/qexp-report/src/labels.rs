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
    }
}

/// The axis' snake_case name, as used for table and chart keys.
pub(crate) fn name(a: Axis) -> &'static str {
    match a {
        Axis::Concurrency => "concurrency",
        Axis::InputTokens => "input_tokens",
        Axis::OutputTokens => "output_tokens",
    }
}

/// `k=v` pairs for the given axes, space-separated.
pub(crate) fn pairs(p: &Point, axes: &[Axis], sep: &str) -> String {
    axes.iter()
        .map(|a| format!("{}={}", key(*a), a.value(p)))
        .collect::<Vec<_>>()
        .join(sep)
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
