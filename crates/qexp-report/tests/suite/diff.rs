//! `qexp diff` output from synthetic runs: snapshots of the terminal table
//! and `diff.md` (run ids and paths redacted), well-formed HTML and SVG,
//! colour only when asked, the trials a `~` would need, and user templates
//! with fallback.

use qexp_analysis::stats::Rng;
use qexp_analysis::{diff, DiffOptions, PointSummary, RunAnalysis, RunDiff, TrialMetrics};
use qexp_plan::Point;
use qexp_report::diff::{diff_context, render_diff, term::render_term, DiffFormat, DiffTemplates};
use qexp_testkit::ManifestFixture;
use serde_json::json;

/// Per-point multipliers of B over A: (throughput, TTFT).
type Effect = fn(u32) -> (f64, f64);

fn points(concurrency: &[u32], trials: u32, effect: Effect, seed: u64) -> Vec<PointSummary> {
    let mut rng = Rng::new(seed);
    let mut noise = move || 1.0 + (rng.next_f64() * 2.0 - 1.0) * 0.02;
    concurrency
        .iter()
        .enumerate()
        .map(|(i, &c)| {
            let point = Point {
                id: i as u32,
                concurrency: c,
                input_tokens: 1000,
                output_tokens: 200,
                requests: 2 * c,
                warmup: 1,
                open_loop: None,
                deployment: None,
                images: None,
            };
            let (speed, slow) = effect(c);
            let cf = f64::from(c);
            let t = (1..=trials)
                .map(|n| TrialMetrics {
                    trial: n,
                    point_id: point.id,
                    requests: 2 * c,
                    failures: 0,
                    agg_tok_s: 70.0 * cf.min(9.0) * speed * noise(),
                    decode_tok_s: (73.0 - cf) * speed * noise(),
                    ttft_s: (0.3 + 0.2 * cf) * slow * noise(),
                    e2e_s: (3.0 + 0.1 * cf) / speed * noise(),
                    itl_p99_s: 0.06 * noise(),
                    prompt_tokens: f64::NAN,
                    ..TrialMetrics::default()
                })
                .collect();
            PointSummary::new(point, t)
        })
        .collect()
}

fn run(id: &str, profile: &str, points: Vec<PointSummary>, trials: u32) -> RunAnalysis {
    let concurrency: Vec<String> = points
        .iter()
        .map(|p| p.point.concurrency.to_string())
        .collect();
    let pts: Vec<&Point> = points.iter().map(|p| &p.point).collect();
    let manifest = ManifestFixture::new("quickstart", &[], trials)
        .with("run_id", id)
        .with("plan_path", "experiments/quickstart.toml")
        .with("points", pts)
        .with("point_order", Vec::<Vec<u32>>::new())
        .simulated(profile, 0.05)
        .with("server", json!({}))
        .with(
            "comparability",
            json!({
                "workload": {"api": "chat", "concurrency": concurrency.join(","), "output_tokens": "200", "prompt": "RandomWords"},
                "deployment": {"base_url": format!("sim:{profile}"), "model": format!("sim-{profile}"),
                    "client_cpu": "AMD EPYC 7313 | 32 cores"},
                "workload_hash": "3f1c5e0d9a7b2c4e"}),
        )
        .with("status", "complete")
        .build();
    RunAnalysis::new(
        format!("results/quickstart/{id}").into(),
        manifest,
        points,
        Vec::new(),
        Vec::new(),
        None,
    )
}

/// A: sim:fast. B: 10% more throughput everywhere, but TTFT 1.5x at c=16; B lacks c=32.
fn faster_but_slower_ttft(trials: u32) -> RunDiff {
    let a = run(
        "20261130T101500Z-1a2b3c",
        "fast",
        points(&[1, 4, 16, 32], trials, |_| (1.0, 1.0), 1),
        trials,
    );
    let b = run(
        "20261130T102000Z-4d5e6f",
        "fast-tuned",
        points(
            &[1, 4, 16],
            trials,
            |c| (1.10, if c == 16 { 1.5 } else { 1.0 }),
            2,
        ),
        trials,
    );
    let opts = DiffOptions {
        ignore: vec!["concurrency".into()],
        ..DiffOptions::default()
    };
    diff(&a, &b, &opts).expect("comparable once concurrency is ignored")
}

macro_rules! redacted_snapshot {
    ($name:expr, $text:expr) => {
        insta::with_settings!({filters => vec![
            (r"\d{8}T\d{6}Z-[0-9a-z]+", "[RUN_ID]"),
            (r"\b[0-9a-f]{12,64}\b", "[HASH]"),
        ]}, {
            insta::assert_snapshot!($name, $text);
        });
    };
}

fn file<'a>(files: &'a [(String, String)], name: &str) -> &'a str {
    files
        .iter()
        .find(|(n, _)| n == name)
        .map(|(_, t)| t.as_str())
        .unwrap_or_else(|| panic!("{name} not rendered"))
}

#[test]
fn terminal_table_snapshot() {
    let d = faster_but_slower_ttft(7);
    let text = render_term(&diff_context(&d), false);
    assert!(!text.contains('\x1b'), "no colour unless asked");
    redacted_snapshot!("diff_term", text);
}

#[test]
fn markdown_snapshot() {
    let d = faster_but_slower_ttft(7);
    let t = DiffTemplates::builtin().expect("built-in diff templates parse");
    let files = render_diff(&d, &t, &[DiffFormat::Markdown]).expect("renders");
    let names: Vec<&str> = files.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names, ["diff.md", "ratios.svg"]);
    redacted_snapshot!("diff_md", file(&files, "diff.md"));
}

#[test]
fn verdicts_match_the_known_effects() {
    let d = faster_but_slower_ttft(7);
    let ctx = diff_context(&d);
    let verdict = |point: usize, metric: &str| {
        let r = ctx
            .rows
            .iter()
            .filter(|r| r.metric_key == metric)
            .nth(point)
            .unwrap_or_else(|| panic!("{metric} at pair {point}"));
        r.verdict.clone()
    };
    for p in 0..3 {
        assert_eq!(verdict(p, "agg_tok_s"), "better");
        assert_eq!(verdict(p, "e2e_s"), "better");
        assert_eq!(verdict(p, "itl_p99_s"), "~");
    }
    assert_eq!(verdict(0, "ttft_s"), "~");
    assert_eq!(verdict(2, "ttft_s"), "worse");
    assert!(d.has_regression());
    assert_eq!(ctx.unpaired.len(), 1);
    assert_eq!(ctx.deployment_differs, 2);
}

#[test]
fn colour_only_when_asked() {
    let ctx = diff_context(&faster_but_slower_ttft(7));
    let text = render_term(&ctx, true);
    assert!(text.contains("\x1b[1;32mbetter"), "{text}");
    assert!(text.contains("\x1b[1;31mworse"), "{text}");
}

#[test]
fn html_and_svg_are_well_formed_and_escape_run_text() {
    let mut d = faster_but_slower_ttft(7);
    d.deployment[0].b = Some("<script>alert(1)</script>".into());
    let t = DiffTemplates::builtin().expect("built-in diff templates parse");
    let files = render_diff(&d, &t, &[DiffFormat::Html, DiffFormat::Markdown]).expect("renders");
    let html = file(&files, "diff.html");
    assert!(!html.contains("<script>"));
    assert!(html.contains("&lt;script&gt;"));
    let opts = roxmltree::ParsingOptions {
        allow_dtd: true,
        ..Default::default()
    };
    let doc = roxmltree::Document::parse_with_options(html, opts)
        .unwrap_or_else(|e| panic!("diff.html: {e}"));
    assert!(
        doc.descendants().any(|n| n.has_tag_name("svg")),
        "chart inline"
    );
    let svg = file(&files, "ratios.svg");
    let doc = roxmltree::Document::parse(svg).unwrap_or_else(|e| panic!("ratios.svg: {e}"));
    // Every paired point is a labelled row.
    let texts: Vec<&str> = doc
        .descendants()
        .filter_map(|n| n.text())
        .map(str::trim)
        .collect();
    for label in ["c=1", "c=4", "c=16"] {
        assert!(texts.contains(&label), "{label} missing from {texts:?}");
    }
    // Rendering twice gives the same bytes (seeded bootstrap, no clock).
    assert_eq!(
        files,
        render_diff(&d, &t, &[DiffFormat::Html, DiffFormat::Markdown]).unwrap_or_default()
    );
}

#[test]
fn two_trials_say_how_many_would_decide() {
    let d = faster_but_slower_ttft(2);
    let ctx = diff_context(&d);
    // Every `~` with a spread names a trial count; other verdicts name none.
    for r in &ctx.rows {
        match r.verdict.as_str() {
            "~" if r.p != "all equal" => assert!(
                r.needed.parse::<usize>().is_ok_and(|n| n > 2) || r.needed == ">1000",
                "{r:?}"
            ),
            _ => assert_eq!(r.needed, "", "{r:?}"),
        }
    }
    let t = DiffTemplates::builtin().expect("built-in diff templates parse");
    let files = render_diff(&d, &t, &[DiffFormat::Markdown]).expect("renders");
    let md = file(&files, "diff.md");
    assert!(
        md.contains("trials to decide: for a `~`, the trials per side"),
        "{md}"
    );
}

#[test]
fn user_templates_override_with_fallback() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("diff.md.tera"), "{{ summary }}\n").expect("write");
    let t = DiffTemplates::from_dir(dir.path()).expect("user templates parse");
    let d = faster_but_slower_ttft(7);
    let files = render_diff(&d, &t, &[DiffFormat::Markdown, DiffFormat::Html]).expect("renders");
    assert!(file(&files, "diff.md").starts_with(&format!("{} better", d.tally.better)));
    assert!(file(&files, "diff.html").starts_with("<!DOCTYPE html>"));
}

/// B's every request at c=16 failed: its rows there say `lost` (styled as
/// worse), the summary and a note count the point, and a warning names it.
#[test]
fn a_point_b_lost_reads_as_lost_everywhere() {
    let a = run(
        "20261130T101500Z-1a2b3c",
        "fast",
        points(&[1, 4, 16], 5, |_| (1.0, 1.0), 1),
        5,
    );
    let mut b_points = points(&[1, 4, 16], 5, |_| (1.0, 1.0), 2);
    let lost = b_points.pop().expect("c=16");
    let trials = lost
        .trials
        .iter()
        .map(|t| TrialMetrics {
            requests: t.requests,
            failures: t.requests,
            ..TrialMetrics::without_requests(t.trial, t.point_id)
        })
        .collect();
    b_points.push(PointSummary::new(lost.point.clone(), trials));
    let b = run("20261130T102000Z-4d5e6f", "fast", b_points, 5);
    let d = diff(&a, &b, &DiffOptions::default()).expect("comparable");
    assert!(d.has_regression());
    let ctx = diff_context(&d);
    let at_16: Vec<_> = ctx.rows.iter().filter(|r| r.point == "c=16").collect();
    let lost: Vec<&str> = at_16
        .iter()
        .filter(|r| r.verdict == "lost")
        .map(|r| r.metric_key.as_str())
        .collect();
    assert_eq!(
        lost,
        ["agg_tok_s", "decode_tok_s", "ttft_s", "e2e_s", "itl_p99_s"]
    );
    assert!(at_16
        .iter()
        .filter(|r| r.verdict == "lost")
        .all(|r| r.class == "worse" && r.b == "no data"));
    assert!(ctx
        .rows
        .iter()
        .filter(|r| r.point != "c=16")
        .all(|r| r.verdict != "lost"));
    assert!(
        ctx.summary
            .starts_with("1 point lost by B (every request failed), "),
        "{}",
        ctx.summary
    );
    assert!(ctx.notes.iter().any(|n| n.starts_with("\"lost\":")));
    assert!(
        ctx.warnings
            .iter()
            .any(|w| w.contains("run B failed 160 of 160 requests at c=16")),
        "{:?}",
        ctx.warnings
    );
    let text = render_term(&ctx, false);
    assert!(text.contains("lost"), "{text}");
}
