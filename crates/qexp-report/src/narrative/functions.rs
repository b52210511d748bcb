//! The filters and functions a narrative can call: `num`, `pct`, `tokens`,
//! `metric(point=…, name=…, stat=…)`.

use super::points::PointView;
use crate::format::{num, percent_prose as pct};
use qexp_analysis::Metric;
use serde_json::Value;
use std::collections::HashMap;

/// `metric(point=…, name=…, stat=…)`.
pub(crate) fn metric(points: &[PointView], args: &HashMap<String, Value>) -> tera::Result<Value> {
    let arg = |k: &str| args.get(k).and_then(Value::as_str);
    let want = arg("point").ok_or("metric() needs point=\"c=… in=… out=…\"")?;
    let names = || {
        let names: Vec<&str> = Metric::ALL
            .into_iter()
            .filter(|m| PointView::has_metric(*m))
            .map(Metric::key)
            .collect();
        names.join(", ")
    };
    let name =
        arg("name").ok_or_else(|| format!("metric() needs name=\"…\", one of {}", names()))?;
    let stat = arg("stat").unwrap_or("median");
    let mut filters = Vec::new();
    for part in want.split_whitespace() {
        let (k, v) = part
            .split_once('=')
            .ok_or_else(|| format!("metric(): `{part}` is not key=value"))?;
        let v: u32 = v
            .parse()
            .map_err(|_| format!("metric(): `{part}` needs a whole number"))?;
        filters.push((k.to_string(), v));
    }
    let matches: Vec<&PointView> = points
        .iter()
        .filter(|p| {
            filters.iter().all(|(k, v)| match k.as_str() {
                "c" => p.concurrency == *v,
                "in" => p.input_tokens == *v,
                "out" => p.output_tokens == *v,
                _ => false,
            })
        })
        .collect();
    let [p] = matches.as_slice() else {
        let known: Vec<&str> = points.iter().map(|p| p.label.as_str()).collect();
        return Err(format!(
            "metric(): `{want}` matches {} points; the run's points are {}",
            matches.len(),
            known.join(", ")
        )
        .into());
    };
    let Some(m) = Metric::from_key(name).and_then(|m| p.metric(m)) else {
        return Err(format!("metric(): unknown name `{name}`; known: {}", names()).into());
    };
    let fmt = |v: Option<f64>| v.map_or("–".to_string(), num);
    Ok(Value::from(match stat {
        "median" => fmt(m.median),
        "min" => fmt(m.min),
        "max" => fmt(m.max),
        "q1" => fmt(m.q1),
        "q3" => fmt(m.q3),
        "mean" => fmt(m.mean),
        "cv" => m.cv.map_or("–".into(), pct),
        "n" => m.n.to_string(),
        "spread" => m.spread.clone(),
        other => return Err(format!("metric(): unknown stat `{other}`").into()),
    }))
}
