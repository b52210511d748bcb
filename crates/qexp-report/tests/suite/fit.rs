//! Reports that fit the run: an open-loop sweep runs along the offered rate
//! with a load headline, every point gets its latency distributions and
//! request timeline, and templates get the tables' values and the filters
//! that format them.

use crate::fixture;
use qexp_report::{render, report_context, Narrative, Rendered, Templates};

fn file<'a>(r: &'a Rendered, name: &str) -> &'a str {
    r.files
        .iter()
        .find(|(n, _)| n == name)
        .map(|(_, t)| t.as_str())
        .unwrap_or_else(|| panic!("{name} missing"))
}

#[test]
fn open_loop_tables_and_charts_run_along_the_offered_rate() {
    let ctx = report_context(&fixture::rate());
    let t = &ctx.tables[0];
    assert_eq!(ctx.tables.len(), 1);
    assert_eq!(
        (t.axis.as_str(), t.title.as_str()),
        ("rate", "By offered rate")
    );
    let values: Vec<&str> = t.rows.iter().map(|r| r.value.as_str()).collect();
    assert_eq!(values, ["1", "2", "4", "8", "16"]);
    assert_eq!(t.rows[4].values.axis, Some(16.0));
    assert_eq!(t.fixed, "Input (tokens) = 1000, Output (tokens) = 200");

    let r = render(
        &fixture::rate(),
        &Templates::builtin().unwrap(),
        &Narrative::None,
    )
    .unwrap();
    let svg = file(&r, "ttft_vs_rate.svg");
    assert!(
        svg.contains("Offered rate (req/s, log scale)"),
        "x axis named by the rate"
    );
    assert!(file(&r, "agg_vs_rate.svg").contains("Aggregate output throughput vs offered rate"));
    assert!(!r.files.iter().any(|(n, _)| n.contains("concurrency")));
    let md = file(&r, "report.md");
    assert!(md.contains("### By offered rate"), "{md}");
    assert!(
        md.contains("| Offered rate (req/s) | n | Aggregate (tok/s) |"),
        "{md}"
    );
    assert!(!md.contains("By concurrency"), "{md}");
}

#[test]
fn open_loop_headline_gives_the_load_not_the_peak_throughput() {
    let ctx = report_context(&fixture::rate());
    let lines: Vec<(String, String)> = ctx
        .headline
        .iter()
        .map(|h| (h.label.clone(), h.value.clone()))
        .collect();
    let get = |label: &str| {
        lines
            .iter()
            .find(|(l, _)| l == label)
            .map(|(_, v)| v.as_str())
            .unwrap_or_else(|| panic!("no `{label}` in {lines:?}"))
    };
    assert_eq!(
        get("Achieved rate, lowest and highest offered"),
        "0.980 req/s at rate=1/s (offered 1); 15.7 req/s at rate=16/s (offered 16)"
    );
    assert_eq!(
        get("SLO attainment, lowest and highest"),
        "40.0% at rate=16/s; 100% at rate=1/s"
    );
    assert_eq!(
        get("Goodput, highest"),
        "7.29 req/s meeting every SLO at rate=8/s"
    );
    assert!(
        get("Capacity").starts_with("at in=1000 out=200: about "),
        "{lines:?}"
    );
    assert!(
        !lines.iter().any(|(l, _)| l == "Peak aggregate output"),
        "{lines:?}"
    );
    // Every point at the same attainment is said once.
    let mut run = fixture::rate();
    if let Some(s) = run.schedule.as_mut() {
        for p in &mut s.points {
            p.median.slo_attainment = Some(1.0);
        }
    }
    let all = report_context(&run);
    let line = all
        .headline
        .iter()
        .find(|h| h.label == "SLO attainment, lowest and highest");
    assert_eq!(line.map(|h| h.value.as_str()), Some("100% at every point"));
    // A closed-loop run keeps its peak throughput.
    let closed = report_context(&fixture::throughput());
    assert_eq!(closed.headline[0].label, "Peak aggregate output");
}

#[test]
fn every_point_gets_its_distributions_and_timeline() {
    let run = fixture::rate();
    let r = render(&run, &Templates::builtin().unwrap(), &Narrative::None).unwrap();
    for id in 0..5 {
        for name in [
            format!("cdf_ttft_p{id}.svg"),
            format!("cdf_e2e_p{id}.svg"),
            format!("timeline_p{id}.svg"),
        ] {
            let svg = file(&r, &name);
            assert!(svg.starts_with("<svg"), "{name}");
        }
    }
    // The CDF: one line per trial (101 vertices each), its legend naming the trials.
    let cdf = file(&r, "cdf_ttft_p4.svg");
    assert!(cdf.contains("Time to first token distribution at rate=16/s, by trial"));
    assert!(cdf.contains("trial 1 (160 requests)") && cdf.contains("trial 3 (160 requests)"));
    let lines: Vec<&str> = cdf.matches("<polyline").collect();
    assert!(lines.len() >= 3, "{}", lines.len());
    assert!(cdf.contains("Requests at or below (cumulative share)"));
    // The timeline: a dot per request (480 of them: 3 trials × 160), coloured by trial.
    let timeline = file(&r, "timeline_p4.svg");
    assert!(timeline.contains("TTFT by send time at rate=16/s"));
    assert!(!timeline.contains(" of "), "not thinned at 480 requests");
    let dots = timeline.matches("<circle").count();
    assert!(dots >= 480, "{dots}");
    let md = file(&r, "report.md");
    assert!(md.contains("## Latency distributions"), "{md}");
    assert!(
        md.contains("![TTFT by send time at rate=1/s](timeline_p0.svg)"),
        "{md}"
    );
    let html = file(&r, "report.html");
    assert!(html.contains("<section id=\"distributions\">"));
    // A run without distributions has no such section.
    let plain = render(
        &fixture::throughput(),
        &Templates::builtin().unwrap(),
        &Narrative::None,
    )
    .unwrap();
    assert!(!file(&plain, "report.md").contains("Latency distributions"));
}

#[test]
fn narratives_print_the_axis_tables_the_report_prints() {
    // One layout (`tables.md.tera`'s `axis_table`): every line of a
    // narrative's `tables.<axis>` is a line of the report's own table.
    let dir = tempfile::tempdir().unwrap();
    for (name, run) in [
        ("longctx", fixture::longctx()),
        ("throughput", fixture::throughput()),
        ("rate", fixture::rate()),
        ("grid", fixture::grid()),
    ] {
        let ctx = report_context(&run);
        let axes: Vec<&str> = ctx.tables.iter().map(|t| t.axis.as_str()).collect();
        let notebook = dir.path().join(format!("{name}.md"));
        let text: String = axes
            .iter()
            .map(|a| format!("{{{{ tables.{a} }}}}\n"))
            .collect();
        std::fs::write(&notebook, text).unwrap();
        let r = render(
            &run,
            &Templates::builtin().unwrap(),
            &Narrative::File(notebook),
        )
        .unwrap();
        let md = file(&r, "report.md");
        let narrative = &ctx_narrative(md);
        let rows: Vec<&str> = narrative.lines().filter(|l| l.starts_with('|')).collect();
        assert!(
            rows.len() > 2,
            "{name}: the narrative printed a table: {narrative}"
        );
        for line in rows {
            assert!(
                md.matches(line).count() >= 2,
                "{name}: {line}\nis not in the report's own table:\n{md}"
            );
        }
    }
}

/// The report's text between the summary and its results: the narrative.
fn ctx_narrative(md: &str) -> String {
    let end = md.find("## Results").expect("a results section");
    md[..end].to_string()
}

#[test]
fn a_users_template_picks_columns_from_the_values() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("report.md.tera"),
        "{% for t in tables %}{% for r in t.rows %}{{ r.value }}: {{ r.values.ttft | cell }} s \
         [{{ r.values.ttft | spread }}], CV {{ r.values.ttft | cv }}, p90 {{ r.values.ttft_p90.median | num }}, \
         ITL p99 {{ r.values.itl_p99 | cell }} {{ r.values.itl_p99.unit }}, {{ r.values.failures }} failed\n\
         {% endfor %}{% endfor %}",
    )
    .unwrap();
    let t = Templates::from_dir(dir.path()).unwrap();
    let r = render(&fixture::longctx(), &t, &Narrative::None).unwrap();
    let md = file(&r, "report.md");
    let first = md.lines().next().unwrap_or_default();
    // TTFT 1.1 s −/+1.5% across three trials: 1.08–1.12 s, CV 1.5%.
    assert_eq!(
        first,
        "1000: 1.10 s [1.08–1.12], CV 1.5%, p90 1.12, ITL p99 81.5 ms, 0 failed"
    );
}

/// A run of one trial has no spread: its headline says `n=1` once, and
/// the headline's values never repeat their label (`Capacity`).
#[test]
fn headline_values_say_each_thing_once() {
    let mut run = fixture::throughput();
    for p in &mut run.points {
        *p = qexp_analysis::PointSummary::new(p.point.clone(), p.trials[..1].to_vec());
    }
    let ctx = report_context(&run);
    for h in &ctx.headline {
        assert!(!h.value.contains("n=1, n=1"), "{}: {}", h.label, h.value);
        assert!(!h.value.contains("spread n=1"), "{}: {}", h.label, h.value);
        assert!(!h.value.starts_with(&h.label), "{}: {}", h.label, h.value);
    }
    let peak = &ctx.headline[0];
    assert!(peak.value.ends_with(" (n=1)"), "{}", peak.value);
    let three = report_context(&fixture::throughput());
    assert!(
        three.headline[0].value.contains("(spread "),
        "{}",
        three.headline[0].value
    );
    assert!(
        three.headline[0].value.ends_with(", n=3)"),
        "{}",
        three.headline[0].value
    );
}
