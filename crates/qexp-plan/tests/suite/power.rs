//! `[power]` and `[cost]`: the deployment's GPUs and their source, and a
//! price; every mistake one sentence at file:line:col.

use qexp_plan::{GpuName, Plan, PlanError, PowerSource};
use std::path::Path;

const HEAD: &str = r#"
[experiment]
name = "t"
version = 1

[target]
base_url = "sim:tiny"

[workload]
input_tokens = 100
output_tokens = 20
"#;

fn parse(tail: &str) -> Result<Plan, PlanError> {
    Plan::parse(Path::new("experiments/t.toml"), &format!("{HEAD}{tail}"))
}

fn err(tail: &str) -> String {
    let e = parse(tail)
        .expect_err("plan should be rejected")
        .to_string();
    assert!(!e.contains('\n'), "one line: {e}");
    e
}

#[test]
fn power_and_cost_keys_parse_with_their_defaults() {
    let p = parse("[power]\ngpus = [0, \"GPU-a\"]\n[cost]\ngpu_hour_usd = 2.5\n").unwrap();
    let power = p.file.power.unwrap().into_inner();
    assert_eq!(*power.source.get_ref(), PowerSource::Auto);
    assert_eq!(
        *power.gpus.get_ref(),
        [GpuName::Index(0), GpuName::Id("GPU-a".into())]
    );
    assert_eq!(power.gpu_names(), ["0", "GPU-a"]);
    assert_eq!(
        (*power.interval_ms.get_ref(), *power.gap_limit_s.get_ref()),
        (500, 3.0)
    );
    assert!(power.required);
    assert_eq!(power.command, "nvidia-smi");
    assert_eq!(p.file.cost.unwrap().gpu_hour_usd, Some(2.5));
    let p =
        parse("[power]\nsource = \"nvidia-smi\"\ngpus = [1]\n[cost]\nkwh_usd = 0.15\npue = 1.3\n")
            .unwrap();
    assert_eq!(
        *p.file.power.unwrap().get_ref().source.get_ref(),
        PowerSource::NvidiaSmi
    );
}

#[test]
fn power_mistakes_are_located() {
    assert_eq!(
        err("[power]\nsource = \"nvml\"\n"),
        "experiments/t.toml:12:1: `power.gpus`: name the deployment's GPUs by index or UUID, e.g. gpus = [0, 1] (qexp never measures every GPU on the host by accident)"
    );
    assert_eq!(
        err("[power]\nsource = \"dcgm\"\ngpus = [0]\n"),
        "experiments/t.toml:13:10: `power.source`: a DCGM source needs its exporter's url, e.g. url = \"http://127.0.0.1:9400/metrics\""
    );
    assert_eq!(
        err("[power]\ngpus = [0]\ninterval_ms = 5\n"),
        "experiments/t.toml:14:15: `power.interval_ms`: expected milliseconds between reads from 10 to 60000, e.g. 500"
    );
    assert_eq!(
        err("[power]\ngpus = [0]\ninterval_ms = 5000\ngap_limit_s = 3\n"),
        "experiments/t.toml:15:15: `power.gap_limit_s`: must be seconds longer than the interval between reads, e.g. 3"
    );
    assert!(
        err("[power]\ngpus = [0]\nsource = \"amd\"\n").starts_with("experiments/t.toml:14:10: ")
    );
    assert!(err("[power]\ngpus = [0]\nwatts = 3\n").contains("unknown field `watts`"));
}

#[test]
fn cost_mistakes_are_located() {
    let e = err("[power]\ngpus = [0]\n[cost]\ngpu_hour_usd = 2\nkwh_usd = 0.1\n");
    assert_eq!(
        e,
        "experiments/t.toml:16:11: `cost.kwh_usd`: give one price: gpu_hour_usd (rent, power included) or kwh_usd (energy), not both"
    );
    assert!(err("[cost]\nkwh_usd = 0.1\n")
        .ends_with("a price per kWh needs measured energy: add a [power] table"));
    assert!(err("[cost]\ngpu_hour_usd = 2\n")
        .ends_with("say how many GPUs the deployment rents (or name them in [power])"));
    assert!(
        err("[power]\ngpus = [0]\n[cost]\nkwh_usd = 0.1\npue = 0.8\n")
            .contains("`cost.pue`: expected a power usage effectiveness from 1.0 to 5.0")
    );
    assert!(err("[power]\ngpus = [0]\n[cost]\ngpu_hour_usd = -1\n")
        .contains("`cost.gpu_hour_usd`: must be a positive number of dollars"));
    assert!(parse("[cost]\ngpu_hour_usd = 2\ngpus = 4\n").is_ok());
}
