//! Notebooks across runs, over runs written to disk: the founding notebook
//! over a throughput and a long-context run (snapshot), a pinned run that
//! keeps rendering the same bytes after a newer run lands, and a missing
//! run and a bad query shown in place while the rest renders.

use qexp_report::notebook::{render_notebook, NotebookError};
use qexp_report::Rendered;
use qexp_testkit::SynthRun;
use std::path::Path;

const THROUGHPUT: &str = include_str!("../../../../experiments/throughput.toml");
const LONGCTX: &str = include_str!("../../../../experiments/longctx.toml");
const FOUNDING: &str = include_str!("../../../../notebooks/founding.md");

fn file<'a>(r: &'a Rendered, name: &str) -> &'a str {
    r.files
        .iter()
        .find(|(n, _)| n == name)
        .map(|(_, t)| t.as_str())
        .unwrap_or_else(|| panic!("{name} missing"))
}

fn render(root: &Path, text: &str) -> Rendered {
    render_notebook(Path::new("notebooks/test.md"), text, root, None).expect("notebook renders")
}

fn well_formed(html: &str) {
    let opts = roxmltree::ParsingOptions {
        allow_dtd: true,
        ..Default::default()
    };
    if let Err(e) = roxmltree::Document::parse_with_options(html, opts) {
        panic!("notebook.html is not well-formed: {e}");
    }
}

#[test]
fn founding_notebook_over_two_experiments_snapshot() {
    let tmp = tempfile::tempdir().expect("tempdir");
    SynthRun::new(
        THROUGHPUT,
        "20261201T100000Z-aaaaaa",
        "2026-12-01T10:00:00Z",
    )
    .write(tmp.path());
    SynthRun::new(LONGCTX, "20261201T110000Z-bbbbbb", "2026-12-01T11:00:00Z").write(tmp.path());
    let r = render_notebook(
        Path::new("notebooks/founding.md"),
        FOUNDING,
        tmp.path(),
        None,
    )
    .expect("renders");
    let md = file(&r, "notebook.md");
    assert!(!md.contains("Notebook error"), "{md}");
    let html = file(&r, "notebook.html");
    well_formed(html);
    // Charts sit beside the Markdown and inline in the HTML.
    assert!(md.contains("(throughput-agg_vs_concurrency.svg)"), "{md}");
    assert!(r
        .files
        .iter()
        .any(|(n, _)| n == "longctx-ttft_vs_input.svg"));
    assert!(html.matches("<svg").count() >= 2);
    assert!(!html.contains("ttft_vs_input.svg\""));
    insta::with_settings!({filters => vec![
        (r"\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2} UTC", "[TIME]"),
        (r"Client host: [^;]*;", "Client host: [HOST];"),
    ]}, {
        insta::assert_snapshot!("founding_notebook_md", md);
    });
}

const PINNED: &str = "+++\n[runs]\nlc = { experiment = \"longctx\", run = \"20261201T100000Z-aaaaaa\" }\n+++\nTTFT at 100K: {{ runs.lc.points[\"in=100000\"].ttft.text }} s.\n\n{{ runs.lc.charts.ttft_vs_input.md }}\n";
const NEWEST: &str = "+++\n[runs]\nlc = \"longctx\"\n+++\nTTFT at 100K: {{ runs.lc.points[\"in=100000\"].ttft.text }} s.\n";

#[test]
fn a_pinned_run_renders_the_same_bytes_after_a_newer_run_lands() {
    let tmp = tempfile::tempdir().expect("tempdir");
    SynthRun::new(LONGCTX, "20261201T100000Z-aaaaaa", "2026-12-01T10:00:00Z").write(tmp.path());
    let pinned = render(tmp.path(), PINNED);
    let newest = render(tmp.path(), NEWEST);
    assert!(file(&pinned, "notebook.md").contains("`20261201T100000Z-aaaaaa`"));
    // A newer, slower run of the same experiment.
    SynthRun {
        level: 1.5,
        ..SynthRun::new(LONGCTX, "20261202T100000Z-cccccc", "2026-12-02T10:00:00Z")
    }
    .write(tmp.path());
    assert_eq!(render(tmp.path(), PINNED), pinned);
    // The unpinned notebook did see it, so the newer run was there to be seen.
    let now = render(tmp.path(), NEWEST);
    assert_ne!(file(&now, "notebook.md"), file(&newest, "notebook.md"));
    assert!(file(&now, "notebook.md").contains("`20261202T100000Z-cccccc`"));
}

const BROKEN: &str = r#"+++
[runs]
tp = "throughput"
gone = "no_such_experiment"
+++
{% set p = runs.tp.point_list | first %}
First point: {{ p.label }}.

Missing: {{ runs.gone.run.run_id }}.

{{ query(run="tp", sql="SELECT nope FROM requests") }}

Still here: {{ p.ttft.text }} s at {{ p.label }}.
"#;

#[test]
fn a_missing_run_and_a_bad_query_show_in_place_and_the_rest_renders() {
    let tmp = tempfile::tempdir().expect("tempdir");
    SynthRun::new(
        THROUGHPUT,
        "20261201T100000Z-aaaaaa",
        "2026-12-01T10:00:00Z",
    )
    .write(tmp.path());
    let r = render(tmp.path(), BROKEN);
    let md = file(&r, "notebook.md");
    let lines: Vec<&str> = md.lines().filter(|l| !l.is_empty()).collect();
    assert_eq!(lines[0], "First point: c=1.", "{md}");
    assert!(lines[1].starts_with("> **⚠ Notebook error** (line 9): run \\`gone\\` is missing: experiment \\`no\\_such\\_experiment\\` has no complete run"), "{md}");
    assert!(
        lines[2].starts_with("> **⚠ Notebook error** (line 11): "),
        "{md}"
    );
    assert!(lines[2].contains("nope"), "{md}");
    assert!(
        lines[3].starts_with("Still here: ") && lines[3].ends_with(" s at c=1."),
        "{md}"
    );
    // The footer says which run was missing, and which one was used.
    assert!(
        md.contains("| gone | newest complete | no_such_experiment | **missing**: "),
        "{md}"
    );
    assert!(md.contains("`20261201T100000Z-aaaaaa`"), "{md}");
    well_formed(file(&r, "notebook.html"));
}

#[test]
fn a_notebook_without_front_matter_is_refused_with_the_reason() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let e = render_notebook(Path::new("n.md"), "# Hello\n", tmp.path(), None).unwrap_err();
    assert!(matches!(e, NotebookError::Front { .. }), "{e}");
    assert!(
        qexp_types::error::chain(&e)
            .starts_with("n.md: a notebook starts with a `+++` front-matter block"),
        "{e}"
    );
}

#[test]
fn a_run_id_in_two_experiments_is_named_with_its_experiment_or_refused_in_place() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let id = "20261201T100000Z-aaaaaa";
    SynthRun::new(THROUGHPUT, id, "2026-12-01T10:00:00Z").write(tmp.path());
    SynthRun::new(LONGCTX, id, "2026-12-01T10:00:00Z").write(tmp.path());
    let by_id =
        format!("+++\n[runs]\nr = {{ run = \"{id}\" }}\n+++\nRun: {{{{ runs.r.run.run_id }}}}.\n");
    let md = file(&render(tmp.path(), &by_id), "notebook.md").to_string();
    assert!(
        md.contains(&format!(
            "run \\`{id}\\` is in 2 experiments under {} (longctx, throughput): name the \\`experiment\\` too",
            tmp.path().display()
        )),
        "{md}"
    );
    let named = by_id.replace("r = { run", "r = { experiment = \"longctx\", run");
    let md = file(&render(tmp.path(), &named), "notebook.md").to_string();
    assert!(md.contains(&format!("Run: {id}.")), "{md}");
    assert!(md.contains("| r | pinned | longctx |"), "{md}");
}
