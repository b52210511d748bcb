//! GPU power and energy per point (`[power]`), end to end in-process: runs
//! against the simulator with a fake DCGM exporter or a fake `nvidia-smi`
//! whose power is scripted, so the energy of every window is known; broken
//! telemetry (a counter reset, a sampling gap, a GPU that vanishes, a field
//! that comes and goes) marks a point's energy invalid with its reason and
//! the run still completes; NVML on a machine without a GPU says so.

use qexp_plan::ApiKind;
use qexp_runner::{run, RunOptions, RunResult};
use qexp_testkit::{f64s, fake_nvidia_smi, strings, u32s, FakeDcgm, FakeGpu, PlanFixture};
use std::path::Path;

/// 4 requests at c = 1 against `sim:exact` (TTFT 50 ms, 10 ms per token:
/// about 0.25 s each, a window of about a second), one trial, with `power`
/// as the plan's `[power]` table.
fn plan(name: &str, power: &str) -> PlanFixture {
    PlanFixture::new(name)
        .target("sim:exact")
        .api(ApiKind::Chat)
        .ignore_eos()
        .input(50)
        .output(21)
        .concurrency(&[1])
        .requests(4)
        .warmup(0)
        .trials(1)
        .seed(5)
        .raw(power)
}

async fn run_plan(dir: &Path, plan: &PlanFixture) -> Result<RunResult, qexp_runner::RunError> {
    let (_tx, rx) = tokio::sync::watch::channel(false);
    run(
        RunOptions {
            plan: plan.load(dir),
            out: dir.join("results"),
            overrides: Default::default(),
            shard: None,
            folder: Default::default(),
        },
        rx,
    )
    .await
}

fn points(r: &RunResult) -> polars::prelude::DataFrame {
    qexp_store::scan_points(&r.dir).unwrap().collect().unwrap()
}

/// Two GPUs at a constant 300 W whose energy counters count from 5 kJ.
fn constant_300_w(t0: f64) -> impl Fn(f64, u64) -> Option<Vec<FakeGpu>> {
    move |now, _| {
        Some(
            (0..2)
                .map(|index| FakeGpu {
                    index,
                    power_w: Some(300.0),
                    energy_mj: Some(5e6 + 300.0 * (now - t0) * 1000.0),
                    sm_clock_mhz: Some(1800.0),
                    ..FakeGpu::default()
                })
                .collect(),
        )
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_constant_300_w_gives_the_energy_within_one_percent_by_counter_and_by_integration() {
    let _serial = crate::common::heavy().await;
    let tmp = tempfile::tempdir().unwrap();
    let dcgm = FakeDcgm::start(constant_300_w(qexp_testkit::unix_now())).await;
    let power = format!(
        "[power]\nsource = \"dcgm\"\nurl = \"{}\"\ngpus = [0, \"GPU-fake-1\"]\ninterval_ms = 20\ngap_limit_s = 0.5\n",
        dcgm.url
    );
    let r = run_plan(tmp.path(), &plan("dcgm300", &power))
        .await
        .unwrap();
    assert_eq!(r.manifest.status, qexp_store::RunStatus::Complete);
    let src = &r.manifest.power[0];
    assert_eq!((src.kind.as_str(), src.interval_ms), ("dcgm", 20));
    assert_eq!(src.gpus[1].uuid.as_deref(), Some("GPU-fake-1"));
    assert_eq!(src.gpus[0].model.as_deref(), Some("Fake A6000"));
    let p = points(&r);
    let (start, end) = (
        f64s(&p, "window_start_unix_s")[0],
        f64s(&p, "window_end_unix_s")[0],
    );
    let truth = 600.0 * (end - start);
    let counter = f64s(&p, "energy_counter_j")[0];
    let integrated = f64s(&p, "energy_integrated_j")[0];
    eprintln!(
        "DCGM, 2 GPUs at 300 W over {:.3} s: truth {truth:.2} J, counter {counter:.2} J ({:+.3}%), integrated {integrated:.2} J ({:+.3}%)",
        end - start,
        (counter / truth - 1.0) * 100.0,
        (integrated / truth - 1.0) * 100.0
    );
    assert!(
        (counter / truth - 1.0).abs() < 0.01,
        "counter {counter} vs {truth}"
    );
    assert!(
        (integrated / truth - 1.0).abs() < 0.01,
        "integrated {integrated} vs {truth}"
    );
    assert_eq!(
        f64s(&p, "energy_j")[0],
        counter,
        "the counter is trusted first"
    );
    assert!((f64s(&p, "power_avg_w")[0] - 600.0).abs() < 6.0);
    assert_eq!(u32s(&p, "gpus"), [2]);
    assert_eq!(strings(&p, "energy_invalid_reason"), [None]);
    assert_eq!(f64s(&p, "gpu_sm_clock_min_mhz"), [1800.0]);

    let smi = fake_nvidia_smi(tmp.path(), 300.0);
    let power = format!(
        "[power]\nsource = \"nvidia-smi\"\ncommand = \"{}\"\ngpus = [1]\ninterval_ms = 20\ngap_limit_s = 0.5\n",
        smi.display()
    );
    let r = run_plan(tmp.path(), &plan("smi300", &power)).await.unwrap();
    assert_eq!(r.manifest.power[0].kind, "nvidia-smi");
    assert_eq!(
        r.manifest.power[0].version.as_deref(),
        Some("driver 570.86")
    );
    let p = points(&r);
    let (start, end) = (
        f64s(&p, "window_start_unix_s")[0],
        f64s(&p, "window_end_unix_s")[0],
    );
    let truth = 300.0 * (end - start);
    let integrated = f64s(&p, "energy_integrated_j")[0];
    assert_eq!(strings(&p, "energy_invalid_reason"), [None]);
    eprintln!(
        "nvidia-smi, 1 GPU at 300 W over {:.3} s: truth {truth:.2} J, integrated {integrated:.2} J ({:+.3}%)",
        end - start,
        (integrated / truth - 1.0) * 100.0
    );
    assert!(
        (integrated / truth - 1.0).abs() < 0.01,
        "integrated {integrated} vs {truth}"
    );
    assert_eq!(f64s(&p, "energy_j")[0], integrated);
    assert!(
        f64s(&p, "energy_counter_j")[0].is_nan(),
        "nvidia-smi has no counter"
    );
}

/// A fake exporter whose telemetry breaks in the way `fault` says, all
/// through the run (so that every window sees it).
fn broken(t0: f64, fault: &'static str) -> impl Fn(f64, u64) -> Option<Vec<FakeGpu>> {
    move |now, scrape| {
        let t = now - t0;
        let phase = (t * 1000.0) as u64 % 300;
        // A gap: answers 60 ms of every 700.
        if fault == "gap" && (t * 1000.0) as u64 % 700 >= 60 && scrape > 0 {
            return None;
        }
        let gpus = if fault == "vanish" && scrape > 2 {
            1
        } else {
            2
        };
        Some(
            (0..gpus)
                .map(|index| {
                    let mut energy = 300.0 * t * 1000.0;
                    if fault == "reset" && phase >= 150 {
                        energy -= 1e6;
                    }
                    FakeGpu {
                        index,
                        power_w: Some(300.0),
                        energy_mj: (fault != "flap" || phase < 150).then_some(energy + 1e7),
                        ..FakeGpu::default()
                    }
                })
                .collect(),
        )
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn broken_telemetry_marks_the_energy_invalid_with_its_reason_and_the_run_completes() {
    let tmp = tempfile::tempdir().unwrap();
    for (fault, reason) in [
        ("reset", "the energy counter of GPU 0 went backwards"),
        ("gap", "without a sample"),
        ("vanish", "GPU 1 stopped reporting"),
        ("flap", "in the middle of the window"),
    ] {
        let dcgm = FakeDcgm::start(broken(qexp_testkit::unix_now(), fault)).await;
        let power = format!(
            "[power]\nurl = \"{}\"\ngpus = [0, 1]\ninterval_ms = 20\ngap_limit_s = 0.3\n",
            dcgm.url
        );
        let r = run_plan(tmp.path(), &plan(&format!("broken-{fault}"), &power))
            .await
            .unwrap_or_else(|e| panic!("{fault}: the run must complete: {e}"));
        assert_eq!(
            r.manifest.status,
            qexp_store::RunStatus::Complete,
            "{fault}"
        );
        let p = points(&r);
        let why = strings(&p, "energy_invalid_reason")[0]
            .clone()
            .unwrap_or_else(|| panic!("{fault}: the energy must be invalid"));
        assert!(why.contains(reason), "{fault}: {why}");
        assert!(f64s(&p, "energy_j")[0].is_nan(), "{fault}");
        // Everything else is kept: the point is valid and its requests all succeeded.
        assert_eq!(strings(&p, "invalid_reason"), [None], "{fault}");
        assert_eq!(u32s(&p, "failures"), [0], "{fault}");
        assert!(f64s(&p, "agg_output_tok_s")[0] > 0.0, "{fault}");
        if fault == "reset" {
            // The report says which trial's energy is not trusted, and why.
            let a = qexp_analysis::analyze(&r.dir).unwrap();
            let out = tmp.path().join("reports");
            let templates = qexp_report::Templates::builtin().unwrap();
            let files = qexp_report::render_run(&a, &templates, &out).unwrap();
            let md = std::fs::read_to_string(&files[0]).unwrap();
            assert!(md.contains(&format!("trial 1: not trusted: {why}")), "{md}");
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nvml_without_a_gpu_stops_a_plan_that_requires_it_and_not_one_that_does_not() {
    let tmp = tempfile::tempdir().unwrap();
    let power = "[power]\nsource = \"nvml\"\ngpus = [0]\n";
    match run_plan(tmp.path(), &plan("nvml-required", power)).await {
        Err(e) => {
            let said = e.to_string();
            eprintln!("NVML, required, no GPU: {said}");
            assert!(
                said.starts_with("no GPU power source could be read, and [power] requires one: NVML found no GPU on this machine: "),
                "{said}"
            );
            assert!(!said.contains('\n'), "one line: {said}");
            assert!(
                !tmp.path().join("results").exists(),
                "nothing was measured or written"
            );
        }
        // A machine with a GPU and its driver: NVML answered.
        Ok(r) => assert_eq!(r.manifest.power[0].kind, "nvml"),
    }
    let optional = "[power]\nsource = \"nvml\"\ngpus = [0]\nrequired = false\n";
    let r = run_plan(tmp.path(), &plan("nvml-optional", optional))
        .await
        .unwrap();
    assert_eq!(r.manifest.status, qexp_store::RunStatus::Complete);
    if r.manifest.power.is_empty() {
        let p = points(&r);
        assert!(f64s(&p, "energy_j")[0].is_nan());
        assert_eq!(u32s(&p, "failures"), [0]);
    }
}

/// A fake exporter for one deployment: 2 GPUs drawing 100 W idle and 40 W
/// more per stream in flight on that deployment, no energy counter (the
/// energy is the integrated power).
pub(crate) fn load_following(
    in_flight: impl Fn() -> usize + Send + Sync + 'static,
) -> impl Fn(f64, u64) -> Option<Vec<FakeGpu>> {
    move |_, _| {
        let w = 100.0 + 40.0 * in_flight() as f64;
        Some(
            (0..2)
                .map(|index| FakeGpu {
                    index,
                    power_w: Some(w / 2.0),
                    ..FakeGpu::default()
                })
                .collect(),
        )
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deployments_with_a_fake_exporter_each_give_cost_verdicts_and_the_cost_pareto() {
    let _serial = crate::common::shared().await;
    let tmp = tempfile::tempdir().unwrap();
    let mut tables = String::new();
    let mut keep = Vec::new();
    for (name, profile) in [("spec", "fast"), ("nospec", "fast-nospec")] {
        let sim = qexp_testkit::sim(profile).await;
        let proxy = crate::counting_proxy::CountingProxy::start(sim.addr()).await;
        let dcgm = FakeDcgm::start(load_following(proxy.in_flight_counter())).await;
        tables.push_str(&format!(
            "\n[[deployment]]\nname = \"{name}\"\nbase_url = \"{}\"\npower_url = \"{}\"\n",
            proxy.base_url, dcgm.url
        ));
        keep.push((sim, proxy, dcgm));
    }
    let plan = PlanFixture::new("cost-deployments")
        .api(ApiKind::Chat)
        .ignore_eos()
        .input(100)
        .output(40)
        .concurrency(&[1, 4])
        .requests(8)
        .warmup(1)
        .trials(3)
        .seed(9)
        .raw(&format!(
            "[power]\nsource = \"dcgm\"\ngpus = [0, 1]\ninterval_ms = 10\ngap_limit_s = 1.0\n\n[cost]\ngpu_hour_usd = 2.0\n{tables}"
        ));
    let r = run_plan(tmp.path(), &plan).await.unwrap();
    assert_eq!(r.manifest.status, qexp_store::RunStatus::Complete);
    let deployments: Vec<_> = r
        .manifest
        .power
        .iter()
        .map(|p| p.deployment.clone())
        .collect();
    assert_eq!(
        deployments,
        [Some("nospec".to_string()), Some("spec".to_string())]
    );
    let a = qexp_analysis::analyze(&r.dir).unwrap();
    // Power follows the load: every deployment draws more at c = 4 than at c = 1.
    for d in ["spec", "nospec"] {
        let w = |c: u32| {
            let p = a
                .points
                .iter()
                .find(|p| p.point.deployment.as_deref() == Some(d) && p.point.concurrency == c)
                .unwrap();
            p.energy
                .as_ref()
                .unwrap()
                .power_avg_w
                .as_ref()
                .unwrap()
                .median
        };
        assert!(
            w(4) > w(1) + 20.0,
            "{d}: {} W at c=4, {} W at c=1",
            w(4),
            w(1)
        );
    }
    let cmp = a.deployments.as_ref().expect("a deployments comparison");
    let metrics: Vec<_> = cmp.diffs[0]
        .pairs
        .iter()
        .flat_map(|p| p.metrics.iter().map(|m| m.metric))
        .collect();
    for m in qexp_analysis::Metric::COST {
        assert_eq!(
            metrics.iter().filter(|x| **x == m).count(),
            2,
            "{m:?} compared at both loads"
        );
    }
    let out = tmp.path().join("reports");
    let files =
        qexp_report::render_run(&a, &qexp_report::Templates::builtin().unwrap(), &out).unwrap();
    let md = std::fs::read_to_string(&files[0]).unwrap();
    assert!(md.contains("What a token cost"), "{md}");
    assert!(md.contains("| $ per 1M output tokens |"), "{md}");
    assert!(
        md.contains("Cost per million output tokens vs per-user decode rate"),
        "{md}"
    );
    for m in ["| energy (J/tok) |", "| cost ($/1M tok) |"] {
        assert_eq!(
            md.matches(m).count(),
            2,
            "the {m} verdicts at both loads are in the report: {md}"
        );
    }
    assert!(md.contains("2 paired points × 8 metrics"), "{md}");
    eprintln!("{md}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_throttle_during_one_point_names_its_cause_there_only_and_an_xid_invalidates_it() {
    let _serial = crate::common::shared().await;
    let tmp = tempfile::tempdir().unwrap();
    let sim = qexp_testkit::sim("fast").await;
    let proxy = crate::counting_proxy::CountingProxy::start(sim.addr()).await;
    let in_flight = proxy.in_flight_counter();
    // The power-violation counter runs (µs per µs) while 3 or more streams
    // are in flight, which only the c = 4 point reaches; an XID comes with it.
    let state = std::sync::Mutex::new((qexp_testkit::unix_now(), 0.0_f64, 0.0_f64));
    let dcgm = FakeDcgm::start(move |now, _| {
        let mut s = state.lock().unwrap();
        let busy = in_flight() >= 3;
        if busy {
            s.1 += (now - s.0) * 1e6;
            s.2 = 79.0;
        }
        s.0 = now;
        Some(vec![FakeGpu {
            index: 0,
            power_w: Some(250.0),
            power_violation_us: Some(s.1),
            xid: Some(s.2),
            ..FakeGpu::default()
        }])
    })
    .await;
    let plan = PlanFixture::new("throttle")
        .target(&proxy.base_url)
        .api(ApiKind::Chat)
        .ignore_eos()
        .input(100)
        .output(60)
        .concurrency(&[1, 4])
        .requests(12)
        .warmup(0)
        .trials(1)
        .seed(2)
        .raw(&format!(
            "[power]\nurl = \"{}\"\ngpus = [0]\ninterval_ms = 10\ngap_limit_s = 1.0\n",
            dcgm.url
        ));
    let r = run_plan(tmp.path(), &plan).await.unwrap();
    let a = qexp_analysis::analyze(&r.dir).unwrap();
    let id = |c: u32| {
        a.points
            .iter()
            .find(|p| p.point.concurrency == c)
            .unwrap()
            .point
            .id
    };
    let held: Vec<_> = a
        .flags
        .iter()
        .filter(|f| matches!(f, qexp_analysis::Flag::GpuHeldBack { .. }))
        .collect();
    assert_eq!(held.len(), 1, "{:?}", a.flags);
    assert_eq!(held[0].point_id(), Some(id(4)));
    let said = held[0].to_string();
    eprintln!("{said}");
    assert!(
        said.starts_with("The GPU was power-capped for ") && said.contains("(trial 1)"),
        "{said}"
    );
    let invalid = |c: u32| {
        a.points
            .iter()
            .find(|p| p.point.concurrency == c)
            .unwrap()
            .trials[0]
            .invalid_reason
            .clone()
    };
    assert!(
        invalid(4).unwrap().contains("XID error 79"),
        "{:?}",
        invalid(4)
    );
    assert_eq!(invalid(1), None);
    drop((sim, proxy, dcgm));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_clock_drop_during_one_point_names_its_cause_there_only() {
    let _serial = crate::common::heavy().await;
    let tmp = tempfile::tempdir().unwrap();
    let sim = qexp_testkit::sim("fast").await;
    let proxy = crate::counting_proxy::CountingProxy::start(sim.addr()).await;
    let in_flight = proxy.in_flight_counter();
    // The SM clock falls from 1800 to 900 MHz while 3 or more streams are
    // in flight, which only the c = 4 point reaches; nothing is capped.
    let dcgm = FakeDcgm::start(move |_, _| {
        let clock = if in_flight() >= 3 { 900.0 } else { 1800.0 };
        Some(vec![FakeGpu {
            index: 0,
            power_w: Some(250.0),
            power_violation_us: Some(0.0),
            sm_clock_mhz: Some(clock),
            ..FakeGpu::default()
        }])
    })
    .await;
    let plan = PlanFixture::new("clock-drop")
        .target(&proxy.base_url)
        .api(ApiKind::Chat)
        .ignore_eos()
        .input(100)
        .output(60)
        .concurrency(&[1, 2, 4])
        .requests(8)
        .warmup(0)
        .trials(1)
        .seed(3)
        .raw(&format!(
            "[power]\nurl = \"{}\"\ngpus = [0]\ninterval_ms = 10\ngap_limit_s = 1.0\n",
            dcgm.url
        ));
    let r = run_plan(tmp.path(), &plan).await.unwrap();
    let a = qexp_analysis::analyze(&r.dir).unwrap();
    drop((sim, proxy, dcgm));
    let id = |c: u32| {
        a.points
            .iter()
            .find(|p| p.point.concurrency == c)
            .unwrap()
            .point
            .id
    };
    let held: Vec<_> = a
        .flags
        .iter()
        .filter(|f| matches!(f, qexp_analysis::Flag::GpuHeldBack { .. }))
        .collect();
    assert_eq!(held.len(), 1, "{:?}", a.flags);
    assert_eq!(held[0].point_id(), Some(id(4)));
    let said = held[0].to_string();
    eprintln!("{said}");
    assert!(
        said.starts_with("The GPU's SM clock fell to 900 MHz in this point, 50% below the run's usual 1800 MHz (trial 1)"),
        "{said}"
    );
    for c in [1, 2] {
        assert!(
            a.flags
                .iter()
                .filter(|f| f.point_id() == Some(id(c)))
                .all(|f| !f.to_string().contains("SM clock")),
            "c={c}: {:?}",
            a.flags
        );
    }
}
