//! Workload kinds in the plan: parsing, expansion and located errors.

use qexp_plan::{Plan, PlanError};
use std::path::Path;

const SHARED: &str = r#"
[experiment]
name = "t"
version = 1

[target]
base_url = "sim:fast"

[workload]
input_tokens = 2000
output_tokens = 20

[workload.shared_prefix]
groups = 3
prompts_per_group = 4
system_tokens = 1500

[sweep]
input_tokens = [1000, 2000]
concurrency = [1, 8]
"#;

fn parse(text: &str) -> Result<Plan, PlanError> {
    Plan::parse(Path::new("experiments/t.toml"), text)
}

fn err(text: &str) -> String {
    parse(text)
        .expect_err("plan should be rejected")
        .to_string()
}

#[test]
fn shared_prefix_sets_requests_per_point() {
    let plan = parse(SHARED).unwrap();
    let shared = plan.file.workload.shared_prefix.as_ref().unwrap();
    assert!(!shared.unique_prefixes);
    let requests: Vec<u32> = plan.points().iter().map(|p| p.requests).collect();
    assert_eq!(requests, [12, 12, 12, 12], "groups × prompts_per_group");
    // The 1000-token points are shorter than the system prompt: nothing shared there.
    assert_eq!(shared.system_tokens_at(1000), None);
    assert_eq!(shared.system_tokens_at(2000), Some(1500));
    let busted = parse(&SHARED.replace(
        "system_tokens = 1500",
        "system_tokens = 1500\nunique_prefixes = true",
    ))
    .unwrap();
    assert!(busted.file.workload.shared_prefix.unwrap().unique_prefixes);
}

#[test]
fn shared_prefix_errors_are_located() {
    let msg = err(&SHARED.replace("groups = 3", "groups = 0"));
    assert_eq!(
        msg,
        "experiments/t.toml:14:10: `workload.shared_prefix.groups`: must be at least 1"
    );
    let msg = err(&SHARED.replace("groups = 3", "groups = 3\nprefix = 1"));
    assert!(msg.starts_with("experiments/t.toml:15:1: "), "{msg}");
    assert!(msg.contains("unknown field `prefix`"), "{msg}");
    let msg = err(&SHARED.replace(
        "concurrency = [1, 8]",
        "concurrency = [1, 8]\n\n[run]\nrequests = 10",
    ));
    assert!(
        msg.starts_with("experiments/t.toml:23:12: `run.requests`: a shared-prefix workload"),
        "{msg}"
    );
}

const LENGTHS: &str = r#"[experiment]
name = "t"
version = 1

[target]
base_url = "sim:fast"

[workload]
input_tokens = 1000
output_tokens = 100

[workload.input_lengths]
distribution = "normal"
std_dev = 200
min = 500
max = 1500
"#;

#[test]
fn length_distributions_parse_with_defaults() {
    let plan = parse(LENGTHS).unwrap();
    let l = plan.file.workload.input_lengths.as_ref().unwrap();
    assert_eq!(*l.distribution.get_ref(), qexp_plan::LengthShape::Normal);
    assert_eq!((l.bounds(), l.std_dev()), ((500, 1500), 200.0));
    assert!(plan.file.workload.output_lengths.is_none());
    let plan = parse(&format!(
        "{LENGTHS}\n[workload.output_lengths]\ndistribution = \"fixed\"\n"
    ))
    .unwrap();
    assert_eq!(
        plan.file.workload.output_lengths.unwrap().bounds(),
        (1, u32::MAX)
    );
}

#[test]
fn length_distribution_errors_are_located() {
    let msg = err(&LENGTHS.replace("std_dev = 200\n", ""));
    assert_eq!(
        msg,
        "experiments/t.toml:13:16: `workload.input_lengths.std_dev`: normal and lognormal lengths need std_dev (tokens)"
    );
    let msg = err(&LENGTHS.replace("std_dev = 200", "std_dev = -1"));
    assert!(msg.starts_with("experiments/t.toml:14:11: "), "{msg}");
    let msg = err(&LENGTHS.replace("min = 500", "min = 2000"));
    assert_eq!(
        msg,
        "experiments/t.toml:15:7: `workload.input_lengths.min`: must not be above max"
    );
    let msg = err(&LENGTHS.replace("\"normal\"", "\"uniform\""));
    assert!(
        msg.contains("only normal and lognormal lengths take std_dev"),
        "{msg}"
    );
    let msg = err(&LENGTHS.replace("\"normal\"", "\"zipf\""));
    assert!(msg.starts_with("experiments/t.toml:13:16: "), "{msg}");
    assert!(msg.contains("unknown variant `zipf`"), "{msg}");
    let msg = err(&LENGTHS
        .replace("std_dev = 200\n", "")
        .replace("\"normal\"", "\"uniform\"")
        .replace("max = 1500\n", ""));
    assert!(
        msg.contains("uniform lengths need both min and max"),
        "{msg}"
    );
}

const DATASET: &str = r#"[experiment]
name = "t"
version = 1

[target]
base_url = "sim:fast"

[workload]
input_tokens = 40
output_tokens = 100

[workload.dataset]
path = "data/chat.jsonl"
max_words = 300
"#;

#[test]
fn dataset_format_follows_the_extension() {
    let plan = parse(DATASET).unwrap();
    let d = plan.file.workload.dataset.unwrap();
    assert_eq!(d.format(), Some(qexp_plan::DatasetFormat::Jsonl));
    assert!(d.keeps(300) && !d.keeps(301) && d.keeps(0));
    let plan = parse(&DATASET.replace("chat.jsonl", "sg.json")).unwrap();
    assert_eq!(
        plan.file.workload.dataset.unwrap().format(),
        Some(qexp_plan::DatasetFormat::Sharegpt)
    );
}

#[test]
fn dataset_errors_are_located() {
    let msg = err(&DATASET.replace("chat.jsonl", "chat.txt"));
    assert_eq!(
        msg,
        "experiments/t.toml:13:8: `workload.dataset.format`: cannot tell the layout from the extension; set format = \"jsonl\" or \"sharegpt\""
    );
    let msg = err(&DATASET.replace("max_words = 300", "max_words = 3\nmin_words = 4"));
    assert!(
        msg.ends_with("`workload.dataset.min_words`: must not be above max_words"),
        "{msg}"
    );
    let msg = err(&format!(
        "{DATASET}\n[workload.input_lengths]\ndistribution = \"fixed\"\n"
    ));
    assert!(
        msg.contains("dataset prompts have their own lengths"),
        "{msg}"
    );
}

const MULTI: &str = r#"
[experiment]
name = "t"
version = 1

[target]
base_url = "sim:fast"

[workload]
input_tokens = 1000
output_tokens = 50

[workload.multi_turn]
turns = 4
user_tokens = 100
think_time_s = 1.5

[sweep]
concurrency = [1, 8]

[run]
requests = "2x"
"#;

#[test]
fn multi_turn_requests_count_sessions_of_turns() {
    let plan = parse(MULTI).unwrap();
    let m = plan.file.workload.multi_turn.as_ref().unwrap();
    assert_eq!((m.turns(), m.think_time_s()), (4, 1.5));
    let requests: Vec<u32> = plan.points().iter().map(|p| p.requests).collect();
    assert_eq!(
        requests,
        [8, 64],
        "2 sessions per concurrency level × 4 turns"
    );
}

#[test]
fn multi_turn_errors_are_located() {
    assert_eq!(
        err(&MULTI.replace("turns = 4", "turns = 1")),
        "experiments/t.toml:14:9: `workload.multi_turn.turns`: must be at least 2"
    );
    assert_eq!(
        err(&MULTI.replace("user_tokens = 100", "user_tokens = 10")),
        "experiments/t.toml:15:15: `workload.multi_turn.user_tokens`: must be at least 32: \
         a user message opens with a 16-token nonce"
    );
    assert_eq!(
        err(&MULTI.replace("think_time_s = 1.5", "think_time_s = -1.0")),
        "experiments/t.toml:16:16: `workload.multi_turn.think_time_s`: must be 0 or more seconds"
    );
    let msg = err(&MULTI.replace("sim:fast\"", "sim:fast\"\napi = \"completions\""));
    assert!(msg.contains("set target.api = \"chat\""), "{msg}");
    let msg = err(&MULTI.replace(
        "[sweep]",
        "[workload.input_lengths]\ndistribution = \"fixed\"\n\n[sweep]",
    ));
    assert!(
        msg.contains("drop shared_prefix, dataset and input_lengths"),
        "{msg}"
    );
    let msg = err(&MULTI.replace("concurrency = [1, 8]", "rate = [2.0]"));
    assert!(msg.contains("sessions run closed-loop"), "{msg}");
    let msg = err(&MULTI.replace("think_time_s", "think_s"));
    assert!(msg.contains("unknown field `think_s`"), "{msg}");
    // Tool sessions: a session answers its answers' tool calls.
    let tools = concat!(env!("CARGO_MANIFEST_DIR"), "/../../experiments/tools.json");
    let plan = parse(&MULTI.replace(
        "[sweep]",
        &format!("[workload.tools]\nfile = \"{tools}\"\n\n[sweep]"),
    ))
    .expect("tools in a multi-turn session");
    assert!(plan.file.workload.tools.is_some() && plan.file.workload.multi_turn.is_some());
}

const IMAGES: &str = r#"
[experiment]
name = "t"
version = 1

[target]
base_url = "sim:fast"

[workload]
input_tokens = 200
output_tokens = 20

[workload.images]
sizes = [{ size = "256x256", weight = 1 }, { size = "512x512", weight = 3 }]

[sweep]
concurrency = [1, 4]
image_count = [0, 2]
"#;

#[test]
fn images_are_a_point_parameter_with_their_mean_pixels() {
    let plan = parse(IMAGES).unwrap();
    let points = plan.points();
    let images: Vec<(u32, u64)> = points
        .iter()
        .map(|p| p.images.map(|i| (i.count, i.pixels)).unwrap())
        .collect();
    // Mean pixels per image: (256² + 3 · 512²) / 4 = 212,992.
    assert_eq!(images, [(0, 0), (0, 0), (2, 425_984), (2, 425_984)]);
    assert_eq!(points[2].label(), "c=1 in=200 out=20 img=2");
    let sized = parse(&IMAGES.replace(
        "image_count = [0, 2]",
        "image_count = [1]\nimage_size = [\"28x28\", \"56X28\"]",
    ))
    .unwrap();
    let pixels: Vec<u64> = sized
        .points()
        .iter()
        .map(|p| p.images.unwrap().pixels)
        .collect();
    assert_eq!(pixels, [784, 784, 1568, 1568]);
    assert_eq!(sized.points()[3].label(), "c=4 in=200 out=20 img=1x56x28");
}

#[test]
fn image_errors_are_located() {
    let msg = err(&IMAGES.replace("\"512x512\"", "\"512 by 512\""));
    assert!(
        msg.starts_with(
            "experiments/t.toml:14:53: `workload.images.sizes`: `512 by 512` is not a size"
        ),
        "{msg}"
    );
    let msg = err(&IMAGES.replace("sim:fast\"", "sim:fast\"\napi = \"completions\""));
    assert!(msg.contains("set target.api = \"chat\""), "{msg}");
    let without = IMAGES
        .lines()
        .filter(|l| !l.starts_with("[workload.images]") && !l.starts_with("sizes"))
        .collect::<Vec<_>>()
        .join("\n");
    let msg = err(&without);
    assert!(
        msg.contains("`sweep.image_count`: sweeps images: add [workload.images]"),
        "{msg}"
    );
    let msg = err(&IMAGES.replace("weight = 3", "weight = 0"));
    assert!(msg.contains("a weight must be a positive number"), "{msg}");
}
