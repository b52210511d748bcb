//! Terminal text for `qexp fit` and `qexp predict`: numbers with units.

use qexp_model::{Coef, FitWarning, ModelFile, ModelMetric};

/// A coefficient's value with its unit.
pub(crate) fn coef_value(c: Coef, v: f64) -> String {
    match c {
        Coef::PrefillFixed | Coef::StepBase | Coef::StepPerSeq => time(v),
        Coef::PrefillPerToken | Coef::StepPerContextToken => format!("{v:.3e} s/token"),
        Coef::PrefillPerImageToken => format!("{v:.3e} s/image token"),
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
/// The power model's two coefficients with their intervals, its GPUs and price.
pub(crate) fn power(p: &qexp_model::PowerModel) -> String {
    let [a, b] = p.idle_interval;
    let [c, d] = p.per_seq_interval;
    let [lo, hi] = p.in_flight_range;
    let price = match p.price {
        Some(qexp_types::cost::Price::GpuHour { usd }) => format!("${usd} per GPU-hour"),
        Some(qexp_types::cost::Price::Energy { usd_per_kwh, pue }) => {
            format!("${usd_per_kwh} per kWh at PUE {pue}")
        }
        None => "none (give one to qexp predict)".to_owned(),
    };
    let gpus = p
        .gpus
        .map_or_else(|| "not recorded".to_owned(), |g| g.to_string());
    format!(
        "Power (the deployment's GPUs together: P = idle + per sequence × sequences in flight):\n\
         {:<4} {:<44} {:>20}   {a:.1} … {b:.1}\n\
         {:<4} {:<44} {:>20}   {c:.2} … {d:.2}\n\
         \u{20}    fitted at {lo:.2} … {hi:.2} sequences in flight; GPUs: {gpus}; price: {price}\n",
        "P0",
        "idle power (idle_w)",
        format!("{:.1} W", p.idle_w),
        "Ps",
        "power per sequence in flight (per_seq_w)",
        format!("{:.2} W", p.per_seq_w),
    )
}

pub(crate) fn coefficients(model: &ModelFile) -> String {
    let mut out = format!(
        "{:<4} {:<44} {:>20}   {}\n",
        "", "coefficient", "value", "90% interval"
    );
    for c in Coef::ALL {
        // The image term only where the runs sent images.
        let images = model.params.prefill_s_per_image_token > 0.0 || model.unknown.contains(&c);
        if c == Coef::PrefillPerImageToken && !images {
            continue;
        }
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
    if let Some(shape) = &model.answers {
        let share = |k: usize| format!("{:.2}", shape.0[k]);
        out.push_str(&format!(
            "     answers: stopped by the model, {} to {} of the median answer (1/16 to 15/16 of them); predictions replay them so\n",
            share(0),
            share(qexp_model::ANSWER_QUANTILES - 1)
        ));
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

/// A value with its 90% interval, `digits` after the point.
fn span(s: &qexp_model::Span, digits: usize) -> String {
    format!("{:.d$} [{:.d$} … {:.d$}]", s.value, s.lo, s.hi, d = digits)
}

/// The cost of each prediction (power, J per output token, $ per 1M output
/// tokens), when the model has power; empty otherwise.
pub(crate) fn cost_table(
    preds: &[qexp_model::Prediction],
    power: Option<&qexp_model::PowerModel>,
) -> String {
    let Some(power) = power else {
        return String::new();
    };
    let mut out = format!(
        "\n{:<28} {:>9} {:>28} {:>28} {:>30}\n",
        "point", "in flight", "power (W)", "J per output token", "$ per 1M output tokens"
    );
    let mut extrapolated = false;
    for p in preds {
        let Some(c) = &p.cost else { continue };
        let usd = c
            .usd_per_m_out
            .as_ref()
            .map_or_else(|| "-".to_owned(), |u| span(u, 4));
        out.push_str(&format!(
            "{:<28} {:>9.2} {:>28} {:>28} {:>30}{}\n",
            load_label(&p.load),
            c.in_flight,
            span(&c.power_w, 1),
            span(&c.j_per_out_tok, 4),
            usd,
            if c.extrapolated {
                "  extrapolated (load)"
            } else {
                ""
            }
        ));
        extrapolated |= c.extrapolated;
    }
    if power.price.is_none() {
        out.push_str("$ per 1M output tokens: no price; give --gpu-hour-usd or --kwh-usd.\n");
    } else if power.gpus.is_none() {
        out.push_str(
            "$ per 1M output tokens: the runs did not record their GPU count; give --gpus.\n",
        );
    }
    if extrapolated {
        let [lo, hi] = power.in_flight_range;
        out.push_str(&format!(
            "extrapolated (load): outside the {lo:.2} … {hi:.2} sequences in flight that power was fitted at.\n"
        ));
    }
    out
}

/// The cheapest concurrency under an SLO, as one line.
pub(crate) fn cheapest(c: &qexp_model::Cheapest) -> String {
    let Some(cost) = &c.prediction.cost else {
        return "cheapest: not predicted (the model has no power)".to_owned();
    };
    let (what, figure) = match (c.objective, &cost.usd_per_m_out) {
        (qexp_model::CostObjective::UsdPerMOut, Some(u)) => (
            "the lowest $ per 1M output tokens",
            format!("${}", span(u, 4)),
        ),
        _ => (
            "the lowest J per output token",
            format!("{} J", span(&cost.j_per_out_tok, 4)),
        ),
    };
    format!(
        "cheapest holding it ({what} among the concurrencies up to the capacity): {} concurrent, {figure} per {}, {} W{}",
        c.concurrency,
        if matches!(c.objective, qexp_model::CostObjective::UsdPerMOut) { "1M output tokens" } else { "output token" },
        span(&cost.power_w, 1),
        if cost.extrapolated { ", extrapolated (load)" } else { "" }
    )
}

/// A predicted load as qexp prints it: `c=4 in=1000 out=200` or `rate=2/s in=… out=…`.
pub(crate) fn load_label(l: &qexp_model::Load) -> String {
    let lead = match l.arrivals {
        qexp_model::Arrivals::Closed { concurrency } => format!("c={concurrency}"),
        qexp_model::Arrivals::Rate { per_s, .. } => format!("rate={per_s}/s"),
    };
    // The prompt's length counts its image tokens; the label gives them apart.
    let images = match l.image_tokens > 0.0 {
        true => format!(" img_tok={}", l.image_tokens),
        false => String::new(),
    };
    let text = l.input_tokens - l.image_tokens;
    format!("{lead} in={text}{images} out={}", l.output_tokens)
}
