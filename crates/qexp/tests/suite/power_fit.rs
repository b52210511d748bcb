//! `qexp fit` and `qexp predict` with cost: a deployment of known timing
//! (decode step 5 ms + 2 ms per other sequence, no batch limit) behind a
//! fake DCGM exporter whose power is 100 W idle + 40 W per request in
//! flight. The fit must recover both figures, predict the J per output
//! token of a load it did not see, and name as the cheapest load holding
//! an SLO one whose run is the cheapest there.

use qexp_model::{Arrivals, CapacityQuery, CostObjective, Load, ModelFile, Params, Schedule, Slo};
use qexp_plan::ApiKind;
use qexp_testkit::{FakeDcgm, PlanFixture};

/// The truth the fake exporter follows.
const IDLE_W: f64 = 100.0;
const PER_SEQ_W: f64 = 40.0;

fn truth() -> Params {
    Params {
        prefill_fixed_s: 0.002,
        prefill_s_per_token: 0.0,
        prefill_s_per_token2: 0.0,
        prefill_s_per_image_token: 0.0,
        step_base_s: 0.005,
        step_per_seq_s: 0.002,
        step_per_context_token_s: 0.0,
        tokens_per_step: 1.0,
        max_batch: None,
        schedule: Schedule::Separate,
        intake_s: qexp_model::INTAKE_S,
        prefill_units: None,
    }
}

/// Measured median across trials of J per output token and TPOT at `c`.
fn measured(a: &qexp_analysis::RunAnalysis, c: u32) -> (f64, f64) {
    let p = a.points.iter().find(|p| p.point.concurrency == c).unwrap();
    let e = p.energy.as_ref().unwrap();
    let j = e.j_per_out_tok.as_ref().unwrap().median;
    let tpots: Vec<f64> = p.trials.iter().map(|t| 1.0 / t.decode_tok_s).collect();
    let mut s = tpots.clone();
    s.sort_by(f64::total_cmp);
    (j, s[s.len() / 2])
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_fit_recovers_idle_and_per_sequence_power_and_predicts_the_cheapest_load() {
    let _serial = crate::common::heavy().await;
    let tmp = tempfile::tempdir().unwrap();
    let sim = qexp_sim::SimServer::start(qexp_sim::SimProfile::from_params("truth", &truth()))
        .await
        .unwrap();
    let proxy = crate::counting_proxy::CountingProxy::start(sim.addr()).await;
    let dcgm = FakeDcgm::start(crate::power::load_following(proxy.in_flight_counter())).await;
    assert_eq!(
        (IDLE_W, PER_SEQ_W),
        (100.0, 40.0),
        "load_following's figures"
    );
    let plan = PlanFixture::new("power-fit")
        .target(&proxy.base_url)
        .api(ApiKind::Chat)
        .ignore_eos()
        .input(50)
        .output(16)
        .concurrency(&[1, 2, 3, 4, 6])
        .requests("2x")
        .warmup(1)
        .trials(3)
        .seed(4)
        .raw(&format!(
            "[power]\nsource = \"dcgm\"\nurl = \"{}\"\ngpus = [0, 1]\ninterval_ms = 10\ngap_limit_s = 1.0\n\n[cost]\nkwh_usd = 0.15\npue = 1.3\n",
            dcgm.url
        ));
    let a = crate::common::run_plan(tmp.path(), &plan).await;
    drop((dcgm, proxy, sim));
    let held = a
        .points
        .iter()
        .find(|p| p.point.concurrency == 4)
        .unwrap()
        .point
        .label();
    let file = tmp.path().join("model.json");
    let dir = a.dir.to_string_lossy().into_owned();
    let out = crate::common::qexp(&[
        "fit",
        &dir,
        "--hold-out",
        &held,
        "--replicates",
        "20",
        "--out",
        &file.to_string_lossy(),
    ])
    .output()
    .unwrap();
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{said}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        said.contains("Power (the deployment's GPUs together"),
        "{said}"
    );
    let model = ModelFile::read(&file).unwrap();
    let power = model.power.clone().expect("a power model");
    eprintln!("{power:?}");
    // Within 10% of the truth.
    assert!(
        (power.idle_w / IDLE_W - 1.0).abs() < 0.10,
        "idle {}",
        power.idle_w
    );
    assert!(
        (power.per_seq_w / PER_SEQ_W - 1.0).abs() < 0.10,
        "per sequence {}",
        power.per_seq_w
    );
    // The resampling worked: a finite interval around the estimate, narrower
    // than half of it (whether a 90% interval holds the truth in one run is
    // chance, so that is printed, not asserted).
    let [lo, hi] = power.per_seq_interval;
    assert!(
        lo.is_finite() && hi.is_finite() && lo < power.per_seq_w && power.per_seq_w < hi,
        "{lo} … {hi}"
    );
    assert!(hi - lo < 0.5 * power.per_seq_w, "{lo} … {hi}");
    assert!(matches!(
        power.price,
        Some(qexp_types::cost::Price::Energy { .. })
    ));
    assert_eq!(power.gpus, Some(2));

    // The held-out load: predicted J per output token within 10% of its run.
    let load = Load {
        arrivals: Arrivals::Closed { concurrency: 4 },
        input_tokens: 50.0,
        image_tokens: 0.0,
        output_tokens: 16.0,
        answers: None,
        requests: 8,
    };
    let cost = qexp_model::predict(&model, &load).cost.unwrap();
    let (j4, _) = measured(&a, 4);
    eprintln!(
        "c=4: predicted {:?} J/tok, measured {j4}",
        cost.j_per_out_tok
    );
    assert!(
        (cost.j_per_out_tok.value / j4 - 1.0).abs() < 0.10,
        "{} vs {j4}",
        cost.j_per_out_tok.value
    );
    assert!(!cost.extrapolated);

    // The cheapest load under TPOT ≤ 16 ms (capacity about 6), by $ per
    // 1M output tokens at a power price: where the runs are cheapest too.
    let slo = Slo::parse("tpot=16ms").unwrap();
    let q = CapacityQuery {
        axis: qexp_model::Axis::Concurrency,
        input_tokens: 50.0,
        image_tokens: 0.0,
        output_tokens: 16.0,
        bound: 8.0,
        requests: None,
    };
    let capacity = qexp_model::capacity(&model, &model.params, &slo, &q)
        .value
        .unwrap() as u32;
    let cheap = qexp_model::cheapest(&model, &model.params, &slo, &q).unwrap();
    assert_eq!(cheap.objective, CostObjective::UsdPerMOut);
    let runs: Vec<(u32, f64, f64)> = [1, 2, 3, 4, 6]
        .into_iter()
        .map(|c| {
            let (j, tpot) = measured(&a, c);
            (c, j, tpot)
        })
        .collect();
    eprintln!(
        "capacity {capacity}, cheapest {}; runs (c, J/tok, TPOT): {runs:?}",
        cheap.concurrency
    );
    assert!(
        cheap.concurrency < capacity,
        "cheapest {} capacity {capacity}",
        cheap.concurrency
    );
    let (_, j_cheap, tpot_cheap) = runs
        .iter()
        .find(|r| r.0 == cheap.concurrency)
        .copied()
        .unwrap();
    assert!(
        tpot_cheap <= 0.016,
        "the run at the cheapest load breaks the SLO: {tpot_cheap}"
    );
    let best = runs
        .iter()
        .filter(|r| r.2 <= 0.016)
        .map(|r| r.1)
        .fold(f64::INFINITY, f64::min);
    assert!(
        j_cheap <= 1.05 * best,
        "{j_cheap} J/tok at the cheapest, {best} the lowest measured"
    );

    // What qexp predict prints.
    let out = crate::common::qexp(&[
        "predict",
        &file.to_string_lossy(),
        "--concurrency",
        "4,12",
        "--input",
        "50",
        "--output",
        "16",
        "--slo",
        "tpot=16ms",
        "--cheapest",
        "--max-concurrency",
        "8",
    ])
    .output()
    .unwrap();
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{said}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    eprintln!("{said}");
    assert!(
        said.contains("J per output token") && said.contains("$ per 1M output tokens"),
        "{said}"
    );
    assert!(
        said.contains("extrapolated (load)"),
        "c=12 is outside the fitted loads: {said}"
    );
    assert!(
        said.contains(&format!("cheapest holding it (the lowest $ per 1M output tokens among the concurrencies up to the capacity): {} concurrent", cheap.concurrency)),
        "{said}"
    );
}
