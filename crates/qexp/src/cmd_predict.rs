//! `qexp predict`: the performance model's predictions, what-ifs and the
//! capacity under an SLO.

use crate::model_text::metric_value;
use crate::{CliError, PredictArgs};
use anyhow::anyhow;
use qexp_model::{
    Arrivals, Axis, Capacity, Coef, Load, ModelFile, ModelMetric, Params, Prediction, Schedule, Slo,
};
use std::path::Path;

/// `qexp predict`: the model's predictions at the points asked, and the
/// capacity under an SLO.
pub(crate) fn predict(args: PredictArgs) -> Result<u8, CliError> {
    let mut model = load_model(&args.model)?;
    price(&mut model, &args)?;
    let params = what_if(&model.params, &args.set, args.step_scale)?;
    if args.image_tokens > 0 && params.prefill_s_per_image_token <= 0.0 {
        return Err(CliError::input(anyhow!(
            "--image-tokens {}: {} has no cost per image token (e is 0): fit it on runs that vary images at two text lengths, or give one with --set",
            args.image_tokens,
            args.model
        )));
    }
    let slo = args
        .slo
        .as_deref()
        .map(Slo::parse)
        .transpose()
        .map_err(CliError::input)?;
    let loads = loads(&args, &model)?;
    if loads.is_empty() && slo.is_none() {
        return Err(CliError::input(anyhow!(
            "nothing to predict: give --plan PLAN, or --concurrency/--rate with --input and --output, or --slo"
        )));
    }
    let mut changes = args.set.clone();
    if let Some(k) = args.step_scale {
        changes.push(format!("decode steps × {k}"));
    }
    if !changes.is_empty() {
        println!("what-if: {}\n", changes.join(", "));
    }
    if !loads.is_empty() {
        let preds: Vec<Prediction> = loads
            .iter()
            .map(|l| qexp_model::predict_with(&model, &params, l))
            .collect();
        print!("{}", table(&preds));
        print!(
            "{}",
            crate::model_text::cost_table(&preds, model.power.as_ref())
        );
    }
    if let Some(slo) = slo {
        let axis = if args.rate.is_empty() {
            Axis::Concurrency
        } else {
            Axis::Rate
        };
        if axis == Axis::Rate && !(args.max_rate.is_finite() && args.max_rate > 0.0) {
            return Err(CliError::input(anyhow::anyhow!(
                "--max-rate {}: give a rate in requests per second above 0",
                args.max_rate
            )));
        }
        let bound = match axis {
            Axis::Rate => args.max_rate,
            _ => f64::from(args.max_concurrency),
        };
        for (input, output) in lengths(&args)? {
            let query = qexp_model::CapacityQuery {
                axis,
                input_tokens: input + f64::from(args.image_tokens),
                image_tokens: f64::from(args.image_tokens),
                output_tokens: output,
                bound,
                requests: args.requests,
            };
            let c = qexp_model::capacity(&model, &params, &slo, &query);
            println!("{}", capacity_line(&slo, &c, input, output));
            if args.cheapest {
                println!("{}", cheapest_line(&model, &params, &slo, &query)?);
            }
        }
    }
    Ok(0)
}

/// The price and GPU count of the flags, over those the fitted runs recorded.
fn price(model: &mut ModelFile, args: &PredictArgs) -> Result<(), CliError> {
    use qexp_types::cost::Price;
    let asked = match (args.gpu_hour_usd, args.kwh_usd) {
        (Some(usd), _) => Some(Price::GpuHour { usd }),
        (None, Some(usd_per_kwh)) => Some(Price::Energy {
            usd_per_kwh,
            pue: args.pue,
        }),
        (None, None) => None,
    };
    let bad = [args.gpu_hour_usd, args.kwh_usd]
        .into_iter()
        .flatten()
        .any(|v| !(v.is_finite() && v >= 0.0));
    if bad || !(args.pue.is_finite() && args.pue >= 1.0) {
        return Err(CliError::input(anyhow!(
            "a price is a number of dollars ≥ 0, and --pue a number ≥ 1"
        )));
    }
    let wants_cost = asked.is_some() || args.gpus.is_some() || args.cheapest;
    match model.power.as_mut() {
        Some(p) => {
            p.price = asked.or(p.price);
            p.gpus = args.gpus.or(p.gpus);
            Ok(())
        }
        None if wants_cost => Err(CliError::input(anyhow!(
            "{}: the model has no power (fit it on runs with [power] in their plan), so it cannot price a token",
            args.model
        ))),
        None => Ok(()),
    }
}

/// The cheapest concurrency holding `slo`, as one line.
fn cheapest_line(
    model: &ModelFile,
    params: &Params,
    slo: &Slo,
    q: &qexp_model::CapacityQuery,
) -> Result<String, CliError> {
    if q.axis == Axis::Rate {
        return Err(CliError::input(anyhow!(
            "--cheapest searches concurrencies; leave out --rate"
        )));
    }
    let Some(c) = qexp_model::cheapest(model, params, slo, q) else {
        return Ok("cheapest: none: no concurrency holds it".to_owned());
    };
    Ok(crate::model_text::cheapest(&c))
}

/// A model file, or `founding`: the embedded fit of the founding tables.
fn load_model(given: &str) -> Result<ModelFile, CliError> {
    if given == "founding" {
        return ModelFile::parse(
            qexp_model::FOUNDING_MODEL,
            Path::new(qexp_model::FOUNDING_MODEL_PATH),
        )
        .map_err(CliError::failure);
    }
    ModelFile::read(Path::new(given)).map_err(CliError::input)
}

/// `params` with each `NAME=VALUE` applied.
fn what_if(params: &Params, set: &[String], step_scale: Option<f64>) -> Result<Params, CliError> {
    let mut p = *params;
    if let Some(k) = step_scale {
        if !(k.is_finite() && k > 0.0) {
            return Err(CliError::input(anyhow!("--step-scale {k}: must be > 0")));
        }
        p.step_base_s *= k;
        p.step_per_seq_s *= k;
        p.step_per_context_token_s *= k;
    }
    for s in set {
        let bad = |why: &str| CliError::input(anyhow!("--set `{s}`: {why}"));
        let (name, value) = s.split_once('=').ok_or_else(|| bad("not NAME=VALUE"))?;
        if name.trim() == "schedule" {
            p.schedule = Schedule::by_name(value.trim())
                .ok_or_else(|| bad("the schedule is `separate` or `mixed`"))?;
            continue;
        }
        if name.trim() == "prefill_units" {
            p.prefill_units = match value.trim() {
                "none" => None,
                v => Some(v.parse().map_err(|_| {
                    bad("prefill units are a whole number ≥ 1, or `none` (no limit)")
                })?),
            };
            continue;
        }
        if name.trim() == "intake_s" {
            p.intake_s = value
                .trim()
                .parse()
                .map_err(|_| bad("the value is not a number"))?;
            continue;
        }
        let coef = Coef::by_name(name.trim()).ok_or_else(|| {
            let names: Vec<&str> = Coef::ALL.iter().map(|c| c.name()).collect();
            bad(&format!(
                "unknown coefficient; names: {}, schedule, intake_s, prefill_units",
                names.join(", ")
            ))
        })?;
        let v: f64 = value
            .trim()
            .parse()
            .map_err(|_| bad("the value is not a number"))?;
        coef.set(&mut p, v);
    }
    p.check()
        .map_err(|field| CliError::input(anyhow!("--set leaves {field} out of range")))?;
    Ok(p)
}

/// The (input, output) pairs asked for.
fn lengths(args: &PredictArgs) -> Result<Vec<(f64, f64)>, CliError> {
    if args.input_tokens.is_empty() || args.output_tokens.is_empty() {
        return Err(CliError::input(anyhow!(
            "give --input and --output (tokens) for the points and the capacity"
        )));
    }
    Ok(args
        .input_tokens
        .iter()
        .flat_map(|i| {
            args.output_tokens
                .iter()
                .map(move |o| (f64::from(*i), f64::from(*o)))
        })
        .collect())
}

/// The points asked for: a plan's, or the grid of the axis values, their
/// answers spread as `model`'s fitted runs' were, around the length asked for.
fn loads(args: &PredictArgs, model: &ModelFile) -> Result<Vec<Load>, CliError> {
    if let Some(path) = &args.plan {
        let plan = qexp_plan::Plan::load(path).map_err(CliError::input)?;
        return Ok(plan
            .points()
            .iter()
            .filter_map(|p| {
                let arrivals = match p.rate() {
                    Some(per_s) => Arrivals::Rate { per_s, seed: 1 },
                    None if p.open_loop.is_some() => return None,
                    None => Arrivals::Closed {
                        concurrency: p.concurrency.max(1),
                    },
                };
                Some(Load {
                    arrivals,
                    input_tokens: f64::from(p.input_tokens) + f64::from(args.image_tokens),
                    image_tokens: f64::from(args.image_tokens),
                    output_tokens: f64::from(p.output_tokens),
                    answers: model.answers_at(f64::from(p.output_tokens)),
                    requests: p.requests.max(1),
                })
            })
            .collect());
    }
    let mut arrivals: Vec<Arrivals> = args
        .concurrency
        .iter()
        .map(|&c| Arrivals::Closed {
            concurrency: c.max(1),
        })
        .collect();
    arrivals.extend(
        args.rate
            .iter()
            .map(|&per_s| Arrivals::Rate { per_s, seed: 1 }),
    );
    if let Some(r) = args.rate.iter().find(|r| !(r.is_finite() && **r > 0.0)) {
        return Err(CliError::input(anyhow!(
            "--rate {r}: must be > 0 requests/s"
        )));
    }
    if arrivals.is_empty() {
        return Ok(Vec::new());
    }
    let mut out = Vec::new();
    for (input, output) in lengths(args)? {
        for &a in &arrivals {
            out.push(Load {
                arrivals: a,
                input_tokens: input + f64::from(args.image_tokens),
                image_tokens: f64::from(args.image_tokens),
                output_tokens: output,
                answers: model.answers_at(output),
                requests: args
                    .requests
                    .unwrap_or_else(|| qexp_model::default_requests(a)),
            });
        }
    }
    Ok(out)
}

/// The prediction table: value [90% interval] per metric.
fn table(preds: &[Prediction]) -> String {
    let mut out = format!("{:<28}", "point");
    for m in ModelMetric::ALL {
        out.push_str(&format!(" {:>30}", m.name()));
    }
    out.push('\n');
    let mut extrapolated = false;
    for p in preds {
        out.push_str(&format!("{:<28}", crate::model_text::load_label(&p.load)));
        for metric in ModelMetric::ALL {
            let cell = match p.get(metric) {
                Some(m) => format!(
                    "{} [{} … {}]",
                    metric_value(m.metric, m.value),
                    metric_value(m.metric, m.lo),
                    metric_value(m.metric, m.hi)
                ),
                None => "not predicted".to_owned(),
            };
            out.push_str(&format!(" {cell:>30}"));
        }
        if !p.extrapolated.is_empty() {
            extrapolated = true;
            let axes: Vec<&str> = p.extrapolated.iter().map(|a| a.name()).collect();
            out.push_str(&format!("  extrapolated ({})", axes.join(", ")));
        }
        out.push('\n');
    }
    out.push_str("\n[lo … hi]: 90% interval (resampled refits and the fit's residual band).\n");
    let mut refused: Vec<String> = preds
        .iter()
        .flat_map(|p| {
            p.refused
                .iter()
                .map(|r| format!("at {}, {r}.", crate::model_text::load_label(&p.load)))
        })
        .collect();
    refused.dedup();
    for r in refused {
        out.push_str(&r);
        out.push('\n');
    }
    if extrapolated {
        out.push_str("extrapolated: outside the fitted ranges on the axes named; trust it less.\n");
    }
    out
}

fn capacity_line(slo: &Slo, c: &Capacity, input: f64, output: f64) -> String {
    let limits: Vec<String> = slo
        .limits
        .iter()
        .map(|(m, v)| format!("{} ≤ {}", m.name(), metric_value(*m, *v)))
        .collect();
    let unit = match c.axis {
        Axis::Rate => " req/s",
        _ => " concurrent",
    };
    let fmt = |x: Option<f64>| match x {
        None => "none".to_owned(),
        Some(v) if c.axis == Axis::Rate => format!("{v:.2}"),
        Some(v) => format!("{v:.0}"),
    };
    let head = format!(
        "capacity at {} (in={input} out={output})",
        limits.join(", ")
    );
    if c.value.is_none() && c.hi.is_none() {
        let lowest = match c.axis {
            Axis::Rate => format!("{} req/s", qexp_model::MIN_RATE),
            _ => "1 concurrent request".to_owned(),
        };
        return format!("{head}: none: not even {lowest} holds it");
    }
    let at_bound = if c.value == Some(c.bound) || c.hi == Some(c.bound) {
        format!(
            " (the search stopped at {}; raise --max-concurrency/--max-rate)",
            c.bound
        )
    } else {
        String::new()
    };
    format!(
        "{head}: {}{unit} (90%: {} … {}){}{}",
        fmt(c.value),
        fmt(c.lo),
        fmt(c.hi),
        if c.extrapolated { ", extrapolated" } else { "" },
        at_bound
    )
}
