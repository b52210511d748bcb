//! The tera filters every template set gets (the report's, a user's own,
//! narratives): they turn the values templates are handed
//! ([`crate::views::Stat`] cells and plain numbers) into the text the
//! built-in tables print, so a template can pick, order and restyle
//! columns and still format numbers as qexp does. Each filter formats with
//! [`crate::format`], the one place numbers for people are made.
//!
//! - `cell`: a `Stat`'s median by its unit (`73.5`, `52.0%`, `1000`), or a dash.
//! - `spread`: its min–max across trials (`n=1` with one trial).
//! - `iqr`, `ci`, `cv`: its interquartile range, 95% CI of the median (or
//!   why there is none), coefficient of variation.
//! - `num`: a number to three significant digits, as the tables (a `Stat`: its median).
//! - `pct`: a fraction as a percentage for prose (`−12%`, `4.2%`).
//! - `tokens`: a token count (`120000` → `120K`).
//! - `md_cell`, `md_text`: escaping for a Markdown table cell, and for run
//!   text inside Markdown that becomes HTML.

use crate::format::{md_cell, md_text, num, percent1, percent_prose, tokens};
use serde_json::Value;
use std::collections::HashMap;

/// A filter's arguments, unused by these.
type Args = HashMap<String, Value>;

/// Registers every filter on `tera`.
pub(crate) fn register(tera: &mut tera::Tera) {
    tera.register_filter("cell", |v: &Value, _: &Args| stat_text(v, cell));
    tera.register_filter("spread", |v: &Value, _: &Args| stat_text(v, spread));
    tera.register_filter("iqr", |v: &Value, _: &Args| stat_text(v, iqr));
    tera.register_filter("ci", |v: &Value, _: &Args| stat_text(v, ci));
    tera.register_filter("cv", |v: &Value, _: &Args| stat_text(v, cv));
    tera.register_filter("num", |v: &Value, _: &Args| {
        let v = match v.get("median") {
            Some(m) => m,
            None => v,
        };
        Ok(Value::from(number(v)?.map_or("–".into(), num)))
    });
    tera.register_filter("pct", |v: &Value, _: &Args| {
        Ok(Value::from(number(v)?.map_or("–".into(), percent_prose)))
    });
    tera.register_filter("tokens", |v: &Value, _: &Args| {
        Ok(Value::from(number(v)?.map_or("–".into(), tokens)))
    });
    tera.register_filter("md_cell", |v: &Value, _: &Args| {
        Ok(Value::from(md_cell(v.as_str().unwrap_or_default())))
    });
    tera.register_filter("md_text", |v: &Value, _: &Args| {
        Ok(Value::from(md_text(v.as_str().unwrap_or_default())))
    });
}

/// A number, or None for null.
pub(crate) fn number(v: &Value) -> tera::Result<Option<f64>> {
    match v {
        Value::Null => Ok(None),
        Value::Number(n) => Ok(n.as_f64()),
        other => Err(format!("expected a number, got {other}").into()),
    }
}

/// What a filter reads of a `Stat`.
struct StatIn {
    unit: String,
    n: u64,
    median: Option<f64>,
    min: Option<f64>,
    max: Option<f64>,
    iqr: Option<f64>,
    ci95: Option<(f64, f64)>,
    cv: Option<f64>,
}

/// Applies `f` to a `Stat` (null: a dash).
fn stat_text(v: &Value, f: fn(&StatIn) -> String) -> tera::Result<Value> {
    if v.is_null() {
        return Ok(Value::from("–"));
    }
    let Some(o) = v.as_object() else {
        return Err(format!("expected a cell (with `median`, `unit`, …), got {v}").into());
    };
    let get = |k: &str| o.get(k).and_then(Value::as_f64);
    let ci95 = o.get("ci95").and_then(Value::as_array).and_then(|a| {
        let lo = a.first()?.as_f64()?;
        let hi = a.get(1)?.as_f64()?;
        Some((lo, hi))
    });
    let s = StatIn {
        unit: o
            .get("unit")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string(),
        n: o.get("n").and_then(Value::as_u64).unwrap_or(0),
        median: get("median"),
        min: get("min"),
        max: get("max"),
        iqr: get("iqr"),
        ci95,
        cv: get("cv"),
    };
    Ok(Value::from(f(&s)))
}

fn dash() -> String {
    "–".into()
}

/// The median as its unit prints it.
fn cell(s: &StatIn) -> String {
    let Some(m) = s.median else { return dash() };
    match s.unit.as_str() {
        "share" => percent1(m),
        "tokens" => format!("{m:.0}"),
        // A count: whole numbers without decimals (a median of two may be x.5).
        "count" if m.fract() == 0.0 => format!("{m:.0}"),
        "count" => format!("{m:.1}"),
        _ => num(m),
    }
}

fn spread(s: &StatIn) -> String {
    match (s.min, s.max) {
        (Some(lo), Some(hi)) if s.n > 1 => format!("{}–{}", num(lo), num(hi)),
        _ if s.median.is_some() => "n=1".into(),
        _ => dash(),
    }
}

fn iqr(s: &StatIn) -> String {
    match s.iqr {
        Some(v) if s.n > 1 => num(v),
        _ => dash(),
    }
}

fn ci(s: &StatIn) -> String {
    match (s.ci95, s.median) {
        (Some((lo, hi)), _) => format!("{}–{}", num(lo), num(hi)),
        (None, Some(_)) => format!("none at n={} (needs 6)", s.n),
        (None, None) => dash(),
    }
}

fn cv(s: &StatIn) -> String {
    s.cv.map_or_else(dash, percent1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format;
    use crate::views::Stat;
    use qexp_analysis::stats::Summary;

    fn render(template: &str, value: &impl serde::Serialize) -> String {
        let mut tera = tera::Tera::default();
        tera.add_raw_template("t", template).unwrap();
        register(&mut tera);
        let mut ctx = tera::Context::new();
        ctx.insert("v", value);
        tera.render("t", &ctx).unwrap()
    }

    #[test]
    fn a_stat_formats_as_the_tables_print_it() {
        let s = Summary::of(&[73.5, 70.0, 80.25]);
        let stat = Stat::of(&s, "tok/s", 1.0);
        assert_eq!(render("{{ v | cell }}", &stat), format::center(&s));
        assert_eq!(render("{{ v | spread }}", &stat), format::spread(&s));
        let summary = s.as_ref().unwrap();
        assert_eq!(render("{{ v | iqr }}", &stat), num(summary.iqr));
        assert_eq!(render("{{ v | ci }}", &stat), "none at n=3 (needs 6)");
        assert_eq!(render("{{ v | cv }}", &stat), percent1(summary.cv.unwrap()));
        assert_eq!(render("{{ v | num }}", &stat), "73.5");
        assert_eq!(render("{{ v.median | num }}", &stat), "73.5");
        let ms = Stat::of(&Summary::of(&[0.0125]), "ms", 1e3);
        assert_eq!(render("{{ v | cell }} {{ v | spread }}", &ms), "12.5 n=1");
        let share = Stat::of(&Summary::of(&[0.52]), "share", 1.0);
        assert_eq!(render("{{ v | cell }}", &share), "52.0%");
    }

    #[test]
    fn missing_values_are_dashes_and_wrong_types_are_errors() {
        let none = Stat::of(&None, "s", 1.0);
        for f in ["cell", "spread", "iqr", "ci", "cv", "num"] {
            assert_eq!(render(&format!("{{{{ v | {f} }}}}"), &none), "–", "{f}");
        }
        assert_eq!(render("{{ v | tokens }}", &120_000), "120K");
        assert_eq!(render("{{ v | pct }}", &-0.12), "−12%");
        let mut tera = tera::Tera::default();
        tera.add_raw_template("t", "{{ v | cell }}").unwrap();
        register(&mut tera);
        let mut ctx = tera::Context::new();
        ctx.insert("v", "text");
        let e = tera.render("t", &ctx).unwrap_err();
        assert!(
            qexp_types::error::chain(&e).contains("expected a cell"),
            "{e:?}"
        );
    }
}
