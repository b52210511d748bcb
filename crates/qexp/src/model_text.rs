//! Terminal text for `qexp fit` and `qexp predict`: numbers with units.

use qexp_model::{Coef, FitWarning, ModelFile, ModelMetric};

/// A coefficient's value with its unit.
pub(crate) fn coef_value(c: Coef, v: f64) -> String {
    match c {
        Coef::PrefillFixed | Coef::StepBase | Coef::StepPerSeq => time(v),
        Coef::PrefillPerToken | Coef::StepPerContextToken => format!("{v:.3e} s/token"),
        Coef::PrefillPerToken2 => format!("{v:.3e} s/token²"),
        Coef::TokensPerStep => format!("{v:.2} tokens"),
        Coef::MaxBatch => format!("{v:.0} sequences"),
    }
}

/// Seconds as `52.3 ms` or `2.41 s`.
pub(crate) fn time(s: f64) -> String {
    if !s.is_finite() {
        "-".to_owned()
    } else if s.abs() < 1.0 {
        format!("{:.1} ms", s * 1e3)
    } else {
        format!("{s:.2} s")
    }
}

/// A metric's value with its unit.
pub(crate) fn metric_value(m: ModelMetric, v: f64) -> String {
    if m.is_time() {
        time(v)
    } else {
        format!("{v:.1} tok/s")
    }
}

/// The coefficient table: value and 90% interval, or why it is unknown.
pub(crate) fn coefficients(model: &ModelFile) -> String {
    let mut out = format!(
        "{:<4} {:<44} {:>20}   {}\n",
        "", "coefficient", "value", "90% interval"
    );
    for c in Coef::ALL {
        let name = format!("{} ({})", c.meaning(), c.name());
        let (value, interval) = if model.unknown.contains(&c) {
            ("unknown".to_owned(), "see warnings".to_owned())
        } else {
            let v = c.get(&model.params).unwrap_or(f64::NAN);
            let i = model.interval(c).map_or_else(
                || "-".to_owned(),
                |i| format!("{} … {}", coef_value(c, i.lo), coef_value(c, i.hi)),
            );
            (coef_value(c, v), i)
        };
        out.push_str(&format!(
            "{:<4} {name:<44} {value:>20}   {interval}\n",
            c.symbol()
        ));
    }
    let s = model.params.schedule;
    let unknown = model.warnings.iter().any(|w| {
        matches!(
            w,
            FitWarning::ScheduleUnknown | FitWarning::OneConcurrency { .. }
        )
    });
    let why = if unknown {
        "unknown, see warnings"
    } else {
        "the schedule whose replay explains the medians best, or the one asked for"
    };
    out.push_str(&format!("     schedule: {s} ({why}): {}\n", s.meaning()));
    let form = qexp_model::PrefillForm::of(&model.params);
    out.push_str(&format!(
        "     prefills: {}: {}\n",
        qexp_model::form_label(&model.params),
        form.meaning()
    ));
    if let Some(e) = &model.evidence {
        out.push_str(&format!("     chosen by the runs: {}\n", e.sentence()));
    }
    if s == qexp_model::Schedule::Mixed {
        let w = model.params.intake_s;
        out.push_str(&if w > 0.0 {
            format!(
                "     intake window: {:.1} ms (an idle engine waits this long for more prompts before its step)\n",
                1e3 * w
            )
        } else {
            "     intake window: none (an idle engine starts its step with the prompt that woke it)\n"
                .to_owned()
        });
    }
    let f = model.full_attention_share;
    if f < 1.0 && !model.unknown.contains(&Coef::PrefillPerToken2) {
        out.push_str(&format!(
            "     c = (c·f)/f with f = {f} (full-attention share): {:.3e} s/token²\n",
            model.params.prefill_s_per_token2 / f
        ));
    }
    out
}

/// The residual table: measured, fitted, error per point and metric.
pub(crate) fn residuals(model: &ModelFile) -> String {
    let mut out = format!(
        "{:<40} {:<10} {:>14} {:>14} {:>8}\n",
        "point", "metric", "measured", "fitted", "error"
    );
    for r in &model.residuals {
        out.push_str(&format!(
            "{:<40} {:<10} {:>14} {:>14} {:>+7.1}%\n",
            r.point,
            r.metric.name(),
            metric_value(r.metric, r.measured),
            metric_value(r.metric, r.fitted),
            100.0 * r.error()
        ));
    }
    out
}
