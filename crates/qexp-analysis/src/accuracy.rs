//! Accuracy under load: the graded requests of `[accuracy]` (each a
//! pinned item's prompt, sent inside the point's measured load), counted
//! per point with a 95% Wilson interval ([`Accuracy`]), and compared on the
//! same items by an exact McNemar test: between two runs or deployments (a
//! [`MetricDiff`] of [`Metric::Accuracy`] in the diff's Holm family) and
//! between the loads of one run ([`by_load`]).
//!
//! Items are paired by (trial, item): a trial's items are the same at every
//! point and deployment of it, and differ from another trial's, so the
//! pairs are independent items. Only items answered on both sides count.

use crate::diff::compare::{Method, MetricDiff, Scale, Test, Untested, Verdict};
use crate::graded::of_trial;
pub use crate::graded::Graded;
use crate::metric::Metric;
use crate::metrics::PointSummary;
use crate::stats::mcnemar::Paired;
use crate::stats::normal::normal_sf;
use crate::stats::wilson::{normal_isf, wilson};
use crate::stats::Summary;
use serde::Serialize;
use std::collections::BTreeMap;

/// The change in accuracy (absolute, B − A) within which two sides are
/// called equivalent (`=`), and at least which one is better or worse.
pub const ACCURACY_MARGIN: f64 = 0.05;

/// The confidence of the Wilson interval reported beside each accuracy.
pub const ACCURACY_CONFIDENCE: f64 = crate::stats::wilson::SHARE_CONFIDENCE;

/// The graded answers of one point, all trials.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Accuracy {
    /// Graded requests sent.
    pub graded: u64,
    /// Of those, answered (the request succeeded) and so graded.
    pub answered: u64,
    /// Of those, right.
    pub right: u64,
    /// `right / answered`.
    pub share: f64,
    /// Its [`ACCURACY_CONFIDENCE`] Wilson interval.
    pub interval: Option<(f64, f64)>,
}

impl Accuracy {
    /// The accuracy of a point's trials; None when none graded anything.
    pub fn of(p: &PointSummary) -> Option<Accuracy> {
        let all: Vec<&Graded> = p.trials.iter().flat_map(|t| &t.graded).collect();
        if all.is_empty() {
            return None;
        }
        let answered = all.iter().filter(|g| g.correct.is_some()).count() as u64;
        let right = all.iter().filter(|g| g.correct == Some(true)).count() as u64;
        Some(Accuracy {
            graded: all.len() as u64,
            answered,
            right,
            share: right as f64 / answered as f64,
            interval: wilson(right, answered, ACCURACY_CONFIDENCE),
        })
    }
}

/// The outcomes of the items both points answered, paired by (trial, item).
fn paired(a: &PointSummary, b: &PointSummary) -> Paired {
    let answers = |p: &PointSummary| -> BTreeMap<(u32, String), bool> {
        p.trials
            .iter()
            .flat_map(|t| {
                t.graded
                    .iter()
                    .filter_map(move |g| Some(((t.trial, g.item.clone()), g.correct?)))
            })
            .collect()
    };
    let (ra, rb) = (answers(a), answers(b));
    let mut table = Paired::default();
    for (key, x) in &ra {
        let Some(y) = rb.get(key) else { continue };
        match (x, y) {
            (true, true) => table.both += 1,
            (true, false) => table.only_a += 1,
            (false, true) => table.only_b += 1,
            (false, false) => table.neither += 1,
        }
    }
    table
}

/// Compares B's accuracy with A's on the items both answered: the change
/// B − A with its interval at `level` (normal, on the paired difference),
/// the exact McNemar p of "no change", and Schuirmann's two one-sided tests
/// of "the change is at least [`ACCURACY_MARGIN`]" (normal, the discordant
/// count taken as at least 1 so that a table without discordance still has
/// a spread). The verdict waits for the Holm adjustment of its family.
/// None when neither point graded anything.
pub(crate) fn compare(a: &PointSummary, b: &PointSummary, level: f64) -> Option<MetricDiff> {
    let summary = |p: &PointSummary| {
        let v: Vec<f64> = p.trials.iter().map(|t| of_trial(&t.graded)).collect();
        Summary::of(&v)
    };
    let (sa, sb) = (summary(a), summary(b));
    if sa.is_none() && sb.is_none() {
        return None;
    }
    let t = paired(a, b);
    let n = t.n();
    let base = MetricDiff {
        metric: Metric::Accuracy,
        a: sa,
        b: sb,
        scale: Scale::Difference,
        ratio: None,
        difference: None,
        ci: None,
        test: None,
        untested: None,
        verdict: Verdict::NotTested,
        undecided: None,
    };
    if n == 0 {
        let side = if Accuracy::of(a).is_none() {
            crate::diff::pairing::Side::A
        } else {
            crate::diff::pairing::Side::B
        };
        return Some(MetricDiff {
            untested: Some(Untested::NoData(side)),
            ..base
        });
    }
    let nf = n as f64;
    let (b_, c_) = (t.only_a as f64, t.only_b as f64);
    let d = (c_ - b_) / nf;
    let discordant = (b_ + c_).max(1.0);
    let se = (discordant - (c_ - b_).powi(2) / nf).max(1.0 / nf).sqrt() / nf;
    let z = normal_isf((1.0 - level) / 2.0);
    let p_equivalent =
        normal_sf((d + ACCURACY_MARGIN) / se).max(normal_sf((ACCURACY_MARGIN - d) / se));
    Some(MetricDiff {
        difference: Some(d),
        ci: Some((d - z * se, d + z * se)),
        test: Some(Test {
            method: Method::McNemar,
            df: None,
            estimate: d,
            margin: ACCURACY_MARGIN,
            sd: None,
            p: t.exact_p(),
            p_holm: f64::NAN,
            p_equivalent: Some(p_equivalent),
            p_equivalent_holm: None,
        }),
        ..base
    })
}

/// A point's accuracy against the lowest load of the same workload and
/// deployment, on the same items.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LoadComparison {
    /// The point compared.
    pub point_id: u32,
    /// The lowest-concurrency point it is compared with.
    pub baseline_point_id: u32,
    /// The comparison (B: this point, A: the baseline).
    pub diff: MetricDiff,
}

/// Every point's accuracy against the lowest concurrency of its workload
/// and deployment (closed-loop points that graded items), Holm-adjusted
/// over these comparisons at `alpha`.
pub fn by_load(points: &[PointSummary], alpha: f64, level: f64) -> Vec<LoadComparison> {
    let key = |p: &PointSummary| {
        (
            p.point.input_tokens,
            p.point.output_tokens,
            p.point.deployment.clone(),
        )
    };
    let graded = |p: &&PointSummary| p.point.open_loop.is_none() && Accuracy::of(p).is_some();
    let mut out = Vec::new();
    for p in points.iter().filter(graded) {
        let Some(base) = points
            .iter()
            .filter(graded)
            .filter(|q| key(q) == key(p))
            .min_by_key(|q| (q.point.concurrency, q.point.id))
        else {
            continue;
        };
        if base.point.id == p.point.id {
            continue;
        }
        if let Some(diff) = compare(base, p, level) {
            out.push(LoadComparison {
                point_id: p.point.id,
                baseline_point_id: base.point.id,
                diff,
            });
        }
    }
    // Holm among themselves, by the diff's own rule (the diff's family
    // adjusts the accuracy rows it holds with the rest of its tests).
    let mut diffs: Vec<&mut MetricDiff> = out.iter_mut().map(|c| &mut c.diff).collect();
    crate::diff::compare::adjust(&mut diffs, alpha);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::anomaly::fixtures::{point, trial};

    /// A point at `concurrency` whose trial 1 answered `outcomes` to items i0, i1, ….
    fn graded_point(id: u32, concurrency: u32, outcomes: &[bool]) -> PointSummary {
        let mut t = trial(1, 100.0, 50.0, 1.0, 11.0);
        t.graded = outcomes
            .iter()
            .enumerate()
            .map(|(i, &c)| Graded {
                item: format!("i{i}"),
                correct: Some(c),
            })
            .collect();
        let p = point(id, concurrency, 100, 10, vec![t]);
        PointSummary::new(p.point, p.trials)
    }

    #[test]
    fn accuracy_has_its_wilson_interval() {
        let p = graded_point(0, 1, &[true, true, true, false]);
        let a = Accuracy::of(&p).unwrap();
        assert_eq!((a.answered, a.right, a.share), (4, 3, 0.75));
        assert_eq!(a.interval, wilson(3, 4, 0.95));
        assert!(Accuracy::of(&graded_point(0, 1, &[])).is_none());
    }

    #[test]
    fn the_same_answers_at_every_load_are_equivalent() {
        let answers: Vec<bool> = (0..48).map(|i| i % 4 != 0).collect();
        let pts = [graded_point(0, 1, &answers), graded_point(1, 4, &answers)];
        let c = by_load(&pts, 0.05, 0.95);
        assert_eq!(c.len(), 1);
        assert_eq!((c[0].point_id, c[0].baseline_point_id), (1, 0));
        assert_eq!(c[0].diff.verdict, Verdict::Equivalent, "{:?}", c[0].diff);
        assert_eq!(c[0].diff.test.unwrap().p, 1.0);
        // Too few items cannot show it.
        let few = [
            graded_point(0, 1, &answers[..10]),
            graded_point(1, 4, &answers[..10]),
        ];
        assert_eq!(by_load(&few, 0.05, 0.95)[0].diff.verdict, Verdict::NoChange);
    }

    #[test]
    fn answers_that_go_wrong_under_load_are_worse() {
        let right = vec![true; 40];
        let mut wrong = right.clone();
        for w in wrong.iter_mut().take(15) {
            *w = false;
        }
        let pts = [graded_point(0, 1, &right), graded_point(1, 64, &wrong)];
        let c = by_load(&pts, 0.05, 0.95);
        let t = c[0].diff.test.unwrap();
        assert_eq!(c[0].diff.verdict, Verdict::Worse, "{t:?}");
        assert!((t.estimate + 15.0 / 40.0).abs() < 1e-12);
        // McNemar exact: 15 discordant, all one way: 2 * 0.5^15.
        assert!((t.p - 2.0 * 0.5f64.powi(15)).abs() < 1e-15);
    }
}
