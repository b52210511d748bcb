//! A report rendered against a fitted model: the report fixture's founding
//! long-context sweep against the fit of the founding tables. The 120K
//! TTFT dip of the founding case lies outside the model's interval (with
//! the fixture's other misses: its 1K TTFT, and aggregate throughput, which
//! the fixture derives rather than records); the report says so in its own
//! section, draws the model along the swept axis and links the whole
//! comparison in `model.md`.

use crate::fixture;
use qexp_model::ModelFile;
use qexp_report::{render_beside, ModelBeside, Narrative, Rendered, Templates};
use std::path::Path;

fn file<'a>(r: &'a Rendered, name: &str) -> &'a str {
    r.files
        .iter()
        .find(|(n, _)| n == name)
        .map(|(_, t)| t.as_str())
        .unwrap_or_else(|| panic!("{name} missing: {:?}", names(r)))
}

fn names(r: &Rendered) -> Vec<&str> {
    r.files.iter().map(|(n, _)| n.as_str()).collect()
}

#[test]
fn the_founding_dip_lies_outside_the_model_and_the_report_says_so() {
    let path = Path::new(qexp_model::FOUNDING_MODEL_PATH);
    let model = ModelFile::parse(qexp_model::FOUNDING_MODEL, path).unwrap();
    let mut run = fixture::longctx();
    // The lengths a real run records per trial (the fixture's tables do
    // not need them).
    for p in &mut run.points {
        for t in &mut p.trials {
            t.input_planned = f64::from(p.point.input_tokens);
            t.completion_tokens = f64::from(p.point.output_tokens);
        }
    }
    let checks = qexp_analysis::check_against_model(&run, &model);
    for c in &checks {
        println!(
            "{} {}: measured {:.3} model {:.3} [{:.3} … {:.3}]{}",
            c.point,
            c.metric.name(),
            c.measured,
            c.predicted,
            c.lo,
            c.hi,
            if c.unexplained() { " outside" } else { "" }
        );
    }
    let ttft_outside: Vec<&str> = checks
        .iter()
        .filter(|c| c.metric.name() == "ttft" && c.unexplained())
        .map(|c| c.point.as_str())
        .collect();
    assert!(
        ttft_outside.iter().any(|p| p.contains("in=120000")),
        "{ttft_outside:?}"
    );

    let t = Templates::builtin().unwrap();
    let m = ModelBeside {
        model: &model,
        path,
    };
    let r = render_beside(&run, &t, &Narrative::None, Some(m)).unwrap();
    let md = file(&r, "report.md");
    let section = &md[md.find("## Against the model").expect(md)..];
    let section = &section[..section[3..].find("\n## ").map_or(section.len(), |i| i + 3)];
    // Five metrics at six points, less the TTFT p90s: a point of fewer
    // than qexp_model::MIN_TAIL_REQUESTS requests has no predicted tail.
    assert!(
        section.contains("6 of 24 medians lie outside the interval widened"),
        "{section}"
    );
    assert!(section.contains("[model.md](model.md)"), "{section}");
    assert!(section.contains("fitted on founding"), "{section}");
    let row = section
        .lines()
        .find(|l| l.contains("in=120000") && l.contains("| ttft |"))
        .unwrap_or_else(|| panic!("no 120K TTFT row: {section}"));
    assert!(row.contains("9.8 s"), "{row}");
    assert!(section.contains("![ttft ("), "{section}");
    let html = file(&r, "report.html");
    assert!(html.contains("<section id=\"model\">") && html.contains("href=\"model.md\""));
    // The model's charts run along the input length the sweep varies.
    let svg = file(&r, "model_ttft.svg");
    if let Ok(dir) = std::env::var("QEXP_KEEP_MODEL_REPORT") {
        for (name, text) in &r.files {
            std::fs::write(Path::new(&dir).join(name), text).unwrap();
        }
    }
    assert!(svg.contains("Input length (tokens)"), "x axis by input");
    assert!(!svg.contains("Point (numbered"), "not by point number");
    let full = file(&r, "model.md");
    assert!(full.contains("[report.md](report.md)"), "{full}");
    assert_eq!(
        full.matches("⚑ outside |").count(),
        section
            .lines()
            .filter(|l| l.starts_with("| ") && !l.starts_with("| Point"))
            .count()
    );

    // Without a model, no section and no model files.
    let plain = render_beside(&run, &t, &Narrative::None, None).unwrap();
    assert!(!file(&plain, "report.md").contains("Against the model"));
    assert!(!names(&plain).iter().any(|n| n.starts_with("model")));
}
