//! The `known` fit's tails and capacities against a run of the simulator:
//! TTFT p90 at held-out loads within 10% of what the simulator measures
//! (a queueing case: 3 slots, prefills one at a time), and for each SLO
//! metric a capacity that holds when run and breaks one user above.

use qexp_model::{
    capacity, predict, Arrivals, Axis, CapacityQuery, Load, ModelFile, ModelMetric, Observation,
    Slo,
};
use std::collections::BTreeMap;
use std::path::Path;

/// Input length of the check run: between the grid's 1000, 3000 and 6000,
/// so every point is held out.
const INPUT: u32 = 2000;
/// Requests per point: enough for a 90th percentile at every concurrency.
const REQUESTS: u32 = 12;
/// Concurrencies run: each capacity judged is one of the first three, and
/// the one above it is run too.
const CONCURRENCY: [u32; 4] = [2, 3, 4, 5];

fn plan(target: &str) -> String {
    format!(
        r#"
[experiment]
name = "known-check"
version = 1

[target]
base_url = "{target}"
api = "chat"
extra_body = {{ ignore_eos = true }}

[workload]
input_tokens = {INPUT}
output_tokens = 16

[sweep]
concurrency = {CONCURRENCY:?}

[run]
requests = {REQUESTS}
warmup_requests = 1
trials = 2
seed = 9
"#
    )
}

fn load(c: u32) -> Load {
    Load {
        arrivals: Arrivals::Closed { concurrency: c },
        input_tokens: f64::from(INPUT),
        image_tokens: 0.0,
        output_tokens: 16.0,
        answers: None,
        requests: REQUESTS,
    }
}

/// Measured medians across trials, by concurrency and metric.
fn measured(rows: &[Observation]) -> BTreeMap<(u32, ModelMetric), f64> {
    let mut out = BTreeMap::new();
    for c in CONCURRENCY {
        for m in ModelMetric::ALL {
            let v: Vec<f64> = rows
                .iter()
                .filter(|r| r.concurrency == c)
                .map(|r| r.measured(m))
                .collect();
            out.insert((c, m), qexp_model::quantile(&v, 0.5));
        }
    }
    out
}

/// Runs the check plan against `target` (the `known` profile on the clock
/// the model was fitted on) and holds the model to it: what missed, if
/// anything (the caller retries: a stall of the host slows a run, a wrong
/// model misses in every one).
pub(super) async fn check(dir: &Path, model: &ModelFile, target: &str) -> Result<(), String> {
    let run = super::run_plan(dir, &plan(target)).await;
    let a = qexp_analysis::analyze(&run).map_err(|e| e.to_string())?;
    let rows = qexp_analysis::run_observations(&a, 0, None).rows;
    let got = measured(&rows);
    let mut misses = Vec::new();
    let p90 = ModelMetric::TtftP90S;
    for c in CONCURRENCY {
        let pred = predict(model, &load(c));
        let Some(p) = pred.get(p90) else {
            return Err(format!("c={c}: no p90 predicted at {REQUESTS} requests"));
        };
        let truth = got[&(c, p90)];
        let err = p.value / truth - 1.0;
        println!(
            "held out c={c} in={INPUT}: ttft_p90 predicted {:.1} ms [{:.1} … {:.1}], measured {:.1} ms ({:+.1}%); ttft {:.1} ms measured {:.1} ms",
            1e3 * p.value,
            1e3 * p.lo,
            1e3 * p.hi,
            1e3 * truth,
            100.0 * err,
            1e3 * pred.get(ModelMetric::TtftS).map_or(f64::NAN, |m| m.value),
            1e3 * got[&(c, ModelMetric::TtftS)],
        );
        if err.abs() > 0.10 {
            misses.push(format!("ttft_p90 at c={c}: {:+.1}%", 100.0 * err));
        }
    }
    for m in ModelMetric::ALL.into_iter().filter(|m| m.is_time()) {
        if let Err(e) = capacity_holds(model, m, &got) {
            misses.push(e);
        }
    }
    match misses.is_empty() {
        true => Ok(()),
        false => Err(misses.join("; ")),
    }
}

/// One SLO on `m`: its limit set where the model's prediction steps most
/// between two concurrencies run (the geometric mean of the two, so the
/// capacity the model gives is the lower one, k); the run must hold the
/// limit at k and break it at k + 1.
fn capacity_holds(
    model: &ModelFile,
    m: ModelMetric,
    got: &BTreeMap<(u32, ModelMetric), f64>,
) -> Result<(), String> {
    let value = |c: u32| {
        predict(model, &load(c))
            .get(m)
            .map_or(f64::NAN, |p| p.value)
    };
    let k = CONCURRENCY[..3]
        .iter()
        .copied()
        .max_by(|a, b| (value(a + 1) / value(*a)).total_cmp(&(value(b + 1) / value(*b))))
        .unwrap_or(2);
    let limit = (value(k) * value(k + 1)).sqrt();
    let slo = Slo {
        limits: vec![(m, limit)],
    };
    let q = CapacityQuery {
        axis: Axis::Concurrency,
        input_tokens: f64::from(INPUT),
        image_tokens: 0.0,
        output_tokens: 16.0,
        bound: 16.0,
        requests: Some(REQUESTS),
    };
    let cap = capacity(model, &model.params, &slo, &q);
    let (at, above) = (got[&(k, m)], got[&(k + 1, m)]);
    println!(
        "capacity at {} ≤ {:.1} ms: predicted {:?} (model {:.1} ms at c={k}, {:.1} ms at c={}); run: {:.1} ms at c={k} ({:+.1}% of the limit), {:.1} ms at c={} ({:+.1}%)",
        m.name(),
        1e3 * limit,
        cap.value,
        1e3 * value(k),
        1e3 * value(k + 1),
        k + 1,
        1e3 * at,
        100.0 * (at / limit - 1.0),
        1e3 * above,
        k + 1,
        100.0 * (above / limit - 1.0),
    );
    if cap.value != Some(f64::from(k)) {
        return Err(format!(
            "{}: the capacity search gave {:?}, not {k}",
            m.name(),
            cap.value
        ));
    }
    match (at <= limit, above > limit) {
        (true, true) => Ok(()),
        (held, broke) => Err(format!(
            "{} ≤ {:.1} ms: capacity {k} {} ({:+.1}%), {} {} ({:+.1}%)",
            m.name(),
            1e3 * limit,
            if held { "held" } else { "did not hold" },
            100.0 * (at / limit - 1.0),
            k + 1,
            if broke { "broke it" } else { "held it too" },
            100.0 * (above / limit - 1.0),
        )),
    }
}
