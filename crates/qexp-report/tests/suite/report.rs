//! Reports rendered from fixture runs: Markdown snapshots (run ids, times,
//! hashes and hosts redacted), well-formed HTML and SVG, byte-identical
//! re-renders, HTML escaping of run text, charts chosen by the swept axes,
//! user templates with fallback, and the narrative notebook API.

use crate::fixture;

use qexp_report::{render, render_run_with, Narrative, Rendered, Templates};
use std::path::Path;

fn builtin() -> Templates {
    Templates::builtin().expect("built-in templates parse")
}

fn file<'a>(r: &'a Rendered, name: &str) -> &'a str {
    r.files
        .iter()
        .find(|(n, _)| n == name)
        .map(|(_, t)| t.as_str())
        .unwrap_or_else(|| {
            panic!(
                "{name} missing from {:?}",
                r.files.iter().map(|f| &f.0).collect::<Vec<_>>()
            )
        })
}

fn names(r: &Rendered) -> Vec<&str> {
    r.files.iter().map(|(n, _)| n.as_str()).collect()
}

/// Parses `text` as XML; the report's HTML is written to be well-formed XML too.
fn assert_well_formed<'t>(name: &str, text: &'t str) -> roxmltree::Document<'t> {
    let opts = roxmltree::ParsingOptions {
        allow_dtd: true,
        ..Default::default()
    };
    roxmltree::Document::parse_with_options(text, opts)
        .unwrap_or_else(|e| panic!("{name} is not well-formed: {e}"))
}

macro_rules! redacted_snapshot {
    ($name:expr, $text:expr) => {
        insta::with_settings!({filters => vec![
            (r"\d{8}T\d{6}Z-[0-9a-z]+", "[RUN_ID]"),
            (r"\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2} UTC", "[TIME]"),
            (r"\b[0-9a-f]{12,64}\b", "[HASH]"),
            (r"Client host: [^\n]*", "Client host: [HOST]"),
        ]}, {
            insta::assert_snapshot!($name, $text);
        });
    };
}

#[test]
fn longctx_report_md_snapshot() {
    let r = render(
        &fixture::longctx(),
        &builtin(),
        &Narrative::File(fixture::longctx_narrative()),
    )
    .unwrap();
    assert_eq!(
        names(&r),
        [
            "report.md",
            "report.html",
            "decode_vs_input.svg",
            "ttft_vs_input.svg"
        ]
    );
    redacted_snapshot!("longctx_report_md", file(&r, "report.md"));
}

#[test]
fn throughput_report_md_snapshot() {
    let r = render(&fixture::throughput(), &builtin(), &Narrative::None).unwrap();
    assert_eq!(
        names(&r),
        [
            "report.md",
            "report.html",
            "agg_vs_concurrency.svg",
            "ttft_vs_concurrency.svg"
        ]
    );
    redacted_snapshot!("throughput_report_md", file(&r, "report.md"));
}

#[test]
fn html_and_every_svg_are_well_formed() {
    for run in [fixture::longctx(), fixture::throughput(), fixture::grid()] {
        let r = render(
            &run,
            &builtin(),
            &Narrative::File(fixture::longctx_narrative()),
        )
        .unwrap();
        for (name, text) in &r.files {
            if name.ends_with(".svg") {
                let doc = assert_well_formed(name, text);
                assert_eq!(doc.root_element().tag_name().name(), "svg", "{name}");
                let texts: Vec<&str> = doc
                    .descendants()
                    .filter(|n| n.has_tag_name("text"))
                    .filter_map(|n| n.text())
                    .collect();
                assert!(
                    texts
                        .iter()
                        .any(|t| t.contains("(tok/s)") || t.contains("(s")),
                    "{name} has a y label with unit: {texts:?}"
                );
            } else if name.ends_with(".html") {
                let doc = assert_well_formed(name, text);
                let in_section = |id: &str| {
                    doc.descendants()
                        .find(|n| n.attribute("id") == Some(id))
                        .map_or(0, |s| {
                            s.descendants().filter(|n| n.has_tag_name("svg")).count()
                        })
                };
                assert_eq!(
                    in_section("charts"),
                    r.files.len() - 2,
                    "{name} inlines every chart"
                );
                if run.manifest.experiment == "longctx" {
                    assert_eq!(
                        in_section("narrative"),
                        2,
                        "the narrative's two charts are inlined"
                    );
                }
            }
        }
    }
}

#[test]
fn rerendering_gives_identical_bytes() {
    let tmp = tempfile::tempdir().unwrap();
    let run = fixture::longctx();
    let narrative = Narrative::File(fixture::longctx_narrative());
    let a = render_run_with(&run, &builtin(), &narrative, None, &tmp.path().join("a")).unwrap();
    let b = render_run_with(
        &fixture::longctx(),
        &builtin(),
        &narrative,
        None,
        &tmp.path().join("b"),
    )
    .unwrap();
    assert_eq!(a.len(), 4);
    assert!(a[0].ends_with("report.md"), "report.md comes first: {a:?}");
    for (x, y) in a.iter().zip(&b) {
        assert_eq!(x.file_name(), y.file_name());
        let (bx, by) = (std::fs::read(x).unwrap(), std::fs::read(y).unwrap());
        assert!(bx == by, "{} differs between renders", x.display());
    }
}

/// The run analysed again from its (edited) manifest and summaries: flags
/// and thresholds follow the edit.
fn reanalysed(run: qexp_analysis::RunAnalysis) -> qexp_analysis::RunAnalysis {
    qexp_analysis::RunAnalysis::new(
        run.dir,
        run.manifest,
        run.points,
        run.turns,
        run.reasoning,
        run.schedule,
    )
}

#[test]
fn run_text_is_escaped_in_html() {
    let mut run = fixture::longctx();
    run.manifest.target.model = "<script>alert(1)</script>".into();
    run.points[2].trials[1].invalid_reason = Some("<img src=x onerror=alert(2)>".into());
    let p = &run.points[2];
    run.points[2] = qexp_analysis::PointSummary::new(p.point.clone(), p.trials.clone());
    // Analyse again: the invalid trial is a flag whose sentence quotes the reason.
    let run = reanalysed(run);
    let tmp = tempfile::tempdir().unwrap();
    let notebook = tmp.path().join("n.md");
    std::fs::write(
        &notebook,
        "Model: {{ run.model }}.\n\n{{ tables.input_tokens }}\n\n{{ flags_md }}",
    )
    .unwrap();
    let r = render(&run, &builtin(), &Narrative::File(notebook)).unwrap();
    let html = file(&r, "report.html");
    assert!(!html.contains("<script>alert"), "raw script tag in HTML");
    assert!(!html.contains("<img src=x"), "raw img tag in HTML");
    assert!(
        html.contains("&lt;script&gt;alert(1)&lt;/script&gt;"),
        "escaped model name missing"
    );
    assert!(
        html.contains("&lt;img src=x onerror=alert(2)&gt;"),
        "escaped note missing"
    );
    let narrative = html.split("id=\"narrative\"").nth(1).unwrap_or_default();
    assert!(
        narrative.contains("Model: &lt;script&gt;alert(1)&lt;/script&gt;."),
        "narrative: {narrative}"
    );
    assert_well_formed("report.html", html);
}

#[test]
fn failed_requests_are_listed_with_their_messages() {
    let mut run = fixture::longctx();
    let id = run.points[1].point.id;
    run.failures = vec![qexp_analysis::FailureGroup {
        point_id: id,
        class: "http_5xx".into(),
        count: 3,
        trials: vec![1, 3],
        message: "HTTP 503 <b>Service Unavailable</b>: the engine is loading".into(),
    }];
    let r = render(&run, &builtin(), &Narrative::None).unwrap();
    let html = file(&r, "report.html");
    assert!(
        html.contains(
            "HTTP 503 &lt;b&gt;Service Unavailable&lt;&#x2F;b&gt;: the engine is loading"
        ) || html
            .contains("HTTP 503 &lt;b&gt;Service Unavailable&lt;/b&gt;: the engine is loading"),
        "escaped message in the HTML failures table"
    );
    assert!(html.contains("<h3>Failed requests</h3>") && html.contains("<code>http_5xx</code>"));
    assert_well_formed("report.html", html);
    let md = file(&r, "report.md");
    let label = run.points[1].point.label();
    assert!(
        md.contains(&format!("| {label} | http_5xx | 3 | 1, 3 | HTTP 503 <b>Service Unavailable</b>: the engine is loading |")),
        "{md}"
    );
}

/// The grid fixture's plan has no `[target]`: the analysis falls back to
/// default thresholds and the report says so, with the parser's reason; its
/// description is still read from the plan text.
#[test]
fn report_says_when_thresholds_fell_back_to_defaults() {
    let r = render(&fixture::grid(), &builtin(), &Narrative::None).unwrap();
    let md = file(&r, "report.md");
    assert!(
        md.contains("These are qexp's defaults, not the plan's: the recorded plan no longer parses: experiments/grid.toml"),
        "{md}"
    );
    assert!(md.contains("Concurrency × input"), "{md}");
    let html = file(&r, "report.html");
    assert!(
        html.contains("<p class=\"callout\">These are qexp&#39;s defaults"),
        "{html}"
    );
    let long = render(&fixture::longctx(), &builtin(), &Narrative::None).unwrap();
    let md = file(&long, "report.md");
    assert!(!md.contains("qexp's defaults, not the plan's"), "{md}");
}

#[test]
fn charts_follow_the_swept_axes_and_mark_flags() {
    let r = render(&fixture::grid(), &builtin(), &Narrative::None).unwrap();
    assert_eq!(
        names(&r)[2..],
        [
            "agg_vs_concurrency.svg",
            "ttft_vs_concurrency.svg",
            "decode_vs_input.svg",
            "ttft_vs_input.svg"
        ]
    );
    let agg = file(&r, "agg_vs_concurrency.svg");
    for series in ["in=1000", "in=8000", "in=32000"] {
        assert!(agg.contains(series), "legend entry {series} missing");
    }
    assert!(
        agg.contains("Concurrency (requests in flight, log scale)")
            && agg.contains("Aggregate output (tok/s)")
    );
    // The long-context fixture's 120K dip is flagged: its marker sits in the TTFT chart and the table.
    let r = render(&fixture::longctx(), &builtin(), &Narrative::None).unwrap();
    let md = file(&r, "report.md");
    let marker = md
        .split("**⚑")
        .nth(1)
        .and_then(|s| s.split(' ').next())
        .expect("a flag in the summary");
    let svg = file(&r, "ttft_vs_input.svg");
    assert!(
        svg.contains(&format!("⚑{marker}")),
        "flag marker in the chart"
    );
    assert!(
        svg.contains("flagged point (see Flags)"),
        "legend names the flag ring"
    );
    assert!(
        !file(&r, "decode_vs_input.svg").contains("⚑"),
        "a TTFT flag is not drawn on the decode chart"
    );
    assert!(
        md.contains("| 120000 | 3 |") && md.contains(&format!("⚑{marker} |")),
        "flag marker in the table"
    );
}

#[test]
fn user_templates_override_and_fall_back() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(
        tmp.path().join("report.html.tera"),
        "<p>{{ experiment }} by {{ model }}</p>",
    )
    .unwrap();
    let mut run = fixture::longctx();
    run.manifest.target.model = "a<b".into();
    let r = render(
        &run,
        &Templates::from_dir(tmp.path()).unwrap(),
        &Narrative::None,
    )
    .unwrap();
    assert_eq!(
        file(&r, "report.html"),
        "<p>longctx by a&lt;b</p>",
        "user template, autoescaped"
    );
    assert!(
        file(&r, "report.md").starts_with("# longctx — run "),
        "built-in report.md as fallback"
    );
}

fn narrative(run: &qexp_analysis::RunAnalysis, text: &str) -> String {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("n.md");
    std::fs::write(&path, text).unwrap();
    let r = render(run, &builtin(), &Narrative::File(path)).unwrap();
    let md = file(&r, "report.md");
    let start = md
        .find("<<")
        .and_then(|s| md[s..].find(">>").map(|e| (s, s + e + 2)));
    match start {
        Some((s, e)) => md[s..e].to_string(),
        None => md.to_string(),
    }
}

#[test]
fn narrative_api_reaches_into_the_run() {
    let run = fixture::longctx();
    let got = narrative(
        &run,
        "<<{{ metric(point=\"in=100000\", name=\"ttft_s\") }} {{ metric(point=\"c=1 in=120000 out=200\", name=\"ttft_s\", stat=\"spread\") }} \
         {{ points[\"in=1000\"].decode.text }} {{ points[\"in=1000\"].decode.median | num }} {{ point_list | length }} \
         {{ (points[\"in=120000\"].decode.median / points[\"in=1000\"].decode.median - 1) | pct }} {{ 120000 | tokens }} \
         {{ charts.ttft_vs_input.file }} {{ swept | join(sep=\",\") }} {{ run.trials }}>>",
    );
    assert_eq!(
        got,
        "<<15.1 9.65–9.95 73.6 73.6 6 −12% 120K ttft_vs_input.svg input_tokens 3>>"
    );
}

#[test]
fn narrative_errors_are_shown_not_fatal() {
    let run = fixture::longctx();
    let md = narrative(&run, "{{ metric(point=\"in=5\", name=\"ttft_s\") }}");
    assert!(md.contains("could not be rendered"), "{md}");
    assert!(
        md.contains("the run's points are in=1000, in=10000"),
        "{md}"
    );
    assert!(md.contains("## Results"), "the rest of the report is there");
    let md = narrative(&run, "{{ get_env(name=\"HOME\") }}");
    assert!(md.contains("get_env is disabled"), "{md}");
}

#[test]
fn narrative_beside_the_plan_is_found() {
    let tmp = tempfile::tempdir().unwrap();
    let mut run = fixture::throughput();
    run.manifest.plan_path = tmp.path().join("throughput.toml").display().to_string();
    std::fs::write(
        tmp.path().join("throughput.md"),
        "## Notes\n\nPeak <<{{ metric(point=\"c=100\", name=\"agg_tok_s\") }}>>\n",
    )
    .unwrap();
    let out = tmp.path().join("out");
    let files = qexp_report::render_run(&run, &builtin(), &out).unwrap();
    let html = std::fs::read_to_string(out.join("report.html")).unwrap();
    assert!(
        html.contains("<h2>Notes</h2>") && html.contains("Peak &lt;&lt;506&gt;&gt;"),
        "{html}"
    );
    assert_eq!(files.len(), 4);
    let missing = render(
        &run,
        &builtin(),
        &Narrative::File(Path::new("/nonexistent/x.md").into()),
    );
    assert!(
        missing.is_err(),
        "an explicit narrative that cannot be read is an error"
    );
}

#[test]
fn a_run_without_data_still_renders() {
    let mut run = fixture::longctx();
    run.manifest.status = qexp_store::RunStatus::Interrupted;
    run.manifest.stop_reason = Some("interrupted by Ctrl-C".into());
    run.manifest.ended_at = None;
    for p in &mut run.points {
        *p = qexp_analysis::PointSummary::new(p.point.clone(), Vec::new());
    }
    let run = reanalysed(run);
    let r = render(
        &run,
        &builtin(),
        &Narrative::File(fixture::longctx_narrative()),
    )
    .unwrap();
    assert_eq!(
        names(&r),
        ["report.md", "report.html"],
        "no data, no charts"
    );
    let md = file(&r, "report.md");
    assert!(
        md.contains("> **This run is interrupted**: interrupted by Ctrl-C."),
        "{md}"
    );
    assert!(
        md.contains(
            "0 measured requests in 6 points × 3 trials, 0 failed; 6 of 6 points have no data"
        ),
        "{md}"
    );
    assert!(
        md.contains("could not be rendered"),
        "the narrative needs numbers: {md}"
    );
    assert!(md.contains("| 120000 | 0 | – | – |"), "{md}");
    assert_well_formed("report.html", file(&r, "report.html"));
}
