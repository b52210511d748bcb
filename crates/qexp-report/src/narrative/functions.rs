//! The filters and functions a narrative can call: `num`, `pct`, `tokens`,
//! `metric(point=…, name=…, stat=…)`.

use super::PointView;
use crate::format::num;
use serde_json::Value;
use std::collections::HashMap;

pub(super) fn number(v: &Value) -> tera::Result<Option<f64>> {
    match v {
        Value::Null => Ok(None),
        Value::Number(n) => Ok(n.as_f64()),
        other => Err(format!("expected a number, got {other}").into()),
    }
}

/// A fraction as a percentage, with a real minus sign: `−12%`, `4.2%`.
pub(super) fn pct(f: f64) -> String {
    let v = f * 100.0;
    let s = if v.abs() >= 10.0 {
        format!("{:.0}%", v.abs())
    } else {
        format!("{:.1}%", v.abs())
    };
    if v < 0.0 && !s.trim_end_matches(['0', '.', '%']).is_empty() {
        format!("−{s}")
    } else {
        s
    }
}

/// `metric(point=…, name=…, stat=…)`.
pub(super) fn metric(points: &[PointView], args: &HashMap<String, Value>) -> tera::Result<Value> {
    let arg = |k: &str| args.get(k).and_then(Value::as_str);
    let want = arg("point").ok_or("metric() needs point=\"c=… in=… out=…\"")?;
    let name = arg("name")
        .ok_or("metric() needs name=\"ttft_s\" (or agg_tok_s, decode_tok_s, e2e_s, itl_p99_s)")?;
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
    let m = match name {
        "agg_tok_s" => &p.agg,
        "decode_tok_s" => &p.decode,
        "ttft_s" => &p.ttft,
        "e2e_s" => &p.e2e,
        "itl_p99_s" => &p.itl_p99,
        other => return Err(format!("metric(): unknown name `{other}`").into()),
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
