//! Greedy equivalence between the deployments of a run: at temperature 0,
//! with the same prompt in the same block, does a deployment give the same
//! answer as the baseline? Answers are compared by their hashes (every
//! request keeps one), per point and overall; where both texts were kept,
//! the first word where they part is found.
//!
//! Identical answers are not free even for one deployment: batching moves
//! numerics, so a deployment can answer differently at 64 users than at 1.
//! That baseline is measured on what a run repeats, its graded items
//! (`[accuracy]`: the same items at every load of a trial): each
//! deployment against itself across loads. A pair is judged against the
//! lower of its two baselines, not against 100%, and is a finding when it
//! falls short of it by more than [`EQUIVALENCE_SLACK`].

use crate::deployments::comparison::DeploymentComparison;
use crate::error::AnalysisError;
use polars::prelude::*;
use qexp_store::requests as rq;
use serde::Serialize;
use std::collections::BTreeMap;
use std::path::Path;

/// How far (a share of answers) a pair's identical share may fall below
/// the lower of its two deployments' own baselines before it is a finding.
pub const EQUIVALENCE_SLACK: f64 = 0.05;

/// Identical answers among paired requests.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Identical {
    /// Pairs where both requests succeeded.
    pub pairs: u64,
    /// Of those, pairs with the same answer hash.
    pub identical: u64,
    /// `identical / pairs`.
    pub share: f64,
    /// Median word (whitespace-separated, from 1) at which two different
    /// answers first part, over the differing pairs whose texts were both
    /// kept; None without such a pair.
    pub first_divergence_word: Option<f64>,
    /// How many differing pairs that median is over.
    pub divergences_measured: u64,
}

/// One deployment against the baseline.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PairEquivalence {
    /// The deployment.
    pub deployment: String,
    /// The baseline.
    pub baseline: String,
    /// Per point (the baseline's label), the pair's identical answers.
    pub points: Vec<(String, Identical)>,
    /// Over every point.
    pub overall: Identical,
    /// The baseline against itself across loads (graded items), if measured.
    pub baseline_self: Option<Identical>,
    /// The deployment against itself across loads, if measured.
    pub deployment_self: Option<Identical>,
    /// The pair falls short of the lower of the two baselines by more than
    /// [`EQUIVALENCE_SLACK`]: its answers differ beyond what batching explains.
    pub beyond_baseline: bool,
}

/// One measured, successful request: its answer's hash and kept text.
struct Answer {
    hash: u64,
    text: Option<String>,
}

/// (deployment, trial, input, output, concurrency, request index) → answer.
type Answers = BTreeMap<(String, u32, u32, u32, u32, u32), Answer>;
/// (deployment, trial, item, concurrency) → answer hash.
type Graded = BTreeMap<(String, u32, String, u32), u64>;

/// Whether the run's requests were sent at temperature 0 (its recorded
/// `extra_body`): only then is an answer expected to repeat.
pub fn greedy(manifest: &qexp_store::Manifest) -> bool {
    manifest
        .comparability
        .workload
        .get("extra_body")
        .and_then(|j| serde_json::from_str::<serde_json::Value>(j).ok())
        .and_then(|v| v.get("temperature").and_then(serde_json::Value::as_f64))
        == Some(0.0)
}

/// Each deployment against the baseline, for a run with deployments sent
/// at temperature 0 whose rows carry answer hashes; empty otherwise.
pub fn of_run(
    dir: &Path,
    manifest: &qexp_store::Manifest,
    deployments: Option<&DeploymentComparison>,
) -> Result<Vec<PairEquivalence>, AnalysisError> {
    let Some(c) = deployments else {
        return Ok(Vec::new());
    };
    if !greedy(manifest) {
        return Ok(Vec::new());
    }
    let q = |source| AnalysisError::Query {
        path: dir.to_path_buf(),
        source,
    };
    let scan = qexp_store::scan_requests(dir)?;
    let schema = scan.clone().collect_schema().map_err(q)?;
    if !schema.contains(rq::ANSWER_HASH) || !schema.contains(rq::DEPLOYMENT) {
        return Ok(Vec::new());
    }
    let df = read(scan, schema.contains(rq::ITEM_ID)).map_err(q)?;
    let (answers, graded) = collect(&df).map_err(q)?;
    let baseline = &c.baseline;
    Ok(c.deployments
        .iter()
        .filter(|d| &d.name != baseline)
        .map(|d| pair(&answers, &graded, baseline, &d.name))
        .collect())
}

/// The measured, successful rows with the columns pairing needs.
fn read(scan: LazyFrame, items: bool) -> PolarsResult<DataFrame> {
    let mut columns = vec![
        col(rq::DEPLOYMENT),
        col(rq::TRIAL),
        col(rq::INPUT_TOKENS_TARGET),
        col(rq::OUTPUT_TOKENS_TARGET),
        col(rq::CONCURRENCY),
        col(rq::REQUEST_INDEX),
        col(rq::ANSWER_HASH),
        col(rq::ANSWER_TEXT),
    ];
    columns.push(match items {
        true => col(rq::ITEM_ID),
        false => lit(NULL).cast(DataType::String).alias(rq::ITEM_ID),
    });
    scan.filter(
        col(rq::WARMUP)
            .not()
            .and(col(rq::ERROR_CLASS).is_null())
            .and(col(rq::ANSWER_HASH).is_not_null()),
    )
    .select(columns)
    .collect()
}

fn collect(df: &DataFrame) -> PolarsResult<(Answers, Graded)> {
    let u32s = |name: &str| -> PolarsResult<Vec<u32>> { crate::columns::u32s(df, name) };
    let (trial, input, output, conc, index) = (
        u32s(rq::TRIAL)?,
        u32s(rq::INPUT_TOKENS_TARGET)?,
        u32s(rq::OUTPUT_TOKENS_TARGET)?,
        u32s(rq::CONCURRENCY)?,
        u32s(rq::REQUEST_INDEX)?,
    );
    let deployment = df.column(rq::DEPLOYMENT)?.str()?.clone();
    let hash = df.column(rq::ANSWER_HASH)?.u64()?.clone();
    let text = df.column(rq::ANSWER_TEXT)?.str()?.clone();
    let item = df.column(rq::ITEM_ID)?.str()?.clone();
    let (mut answers, mut graded) = (Answers::new(), Graded::new());
    for i in 0..df.height() {
        let (Some(d), Some(h)) = (deployment.get(i), hash.get(i)) else {
            continue;
        };
        if let Some(it) = item.get(i) {
            graded.insert((d.to_string(), trial[i], it.to_string(), conc[i]), h);
        }
        answers.insert(
            (
                d.to_string(),
                trial[i],
                input[i],
                output[i],
                conc[i],
                index[i],
            ),
            Answer {
                hash: h,
                // A kept tail (after "…") is no whole answer to find a parting in.
                text: text
                    .get(i)
                    .filter(|t| !t.starts_with('…'))
                    .map(str::to_string),
            },
        );
    }
    Ok((answers, graded))
}

/// The word (from 1) at which two different texts first part.
fn first_divergence(a: &str, b: &str) -> usize {
    let (mut x, mut y) = (a.split_whitespace(), b.split_whitespace());
    let mut word = 1;
    loop {
        match (x.next(), y.next()) {
            (Some(p), Some(q)) if p == q => word += 1,
            _ => return word,
        }
    }
}

/// Adds one pair of answers to a tally (divergence words gathered apart).
fn add(tally: &mut Identical, words: &mut Vec<f64>, a: &Answer, b: &Answer) {
    tally.pairs += 1;
    if a.hash == b.hash {
        tally.identical += 1;
    } else if let (Some(x), Some(y)) = (&a.text, &b.text) {
        words.push(first_divergence(x, y) as f64);
    }
}

fn finish(mut tally: Identical, words: Vec<f64>) -> Identical {
    tally.share = tally.identical as f64 / tally.pairs as f64;
    tally.divergences_measured = words.len() as u64;
    tally.first_divergence_word = crate::stats::quantile::median(&words);
    tally
}

fn pair(answers: &Answers, graded: &Graded, baseline: &str, name: &str) -> PairEquivalence {
    let mut by_point: BTreeMap<(u32, u32, u32), (Identical, Vec<f64>)> = BTreeMap::new();
    let (mut all, mut all_words) = (Identical::default(), Vec::new());
    for ((d, trial, input, output, conc, index), a) in answers {
        if d != baseline {
            continue;
        }
        let key = (name.to_string(), *trial, *input, *output, *conc, *index);
        let Some(b) = answers.get(&key) else { continue };
        let (tally, words) = by_point.entry((*input, *output, *conc)).or_default();
        add(tally, words, a, b);
        add(&mut all, &mut all_words, a, b);
    }
    let overall = finish(all, all_words);
    let baseline_self = across_loads(graded, baseline);
    let deployment_self = across_loads(graded, name);
    let floor = match (&baseline_self, &deployment_self) {
        (Some(x), Some(y)) => x.share.min(y.share),
        (Some(x), None) | (None, Some(x)) => x.share,
        (None, None) => 1.0,
    };
    PairEquivalence {
        deployment: name.to_string(),
        baseline: baseline.to_string(),
        points: by_point
            .into_iter()
            .map(|((i, o, c), (t, w))| (format!("c={c} in={i} out={o}"), finish(t, w)))
            .collect(),
        beyond_baseline: overall.pairs > 0 && overall.share < floor - EQUIVALENCE_SLACK,
        overall,
        baseline_self,
        deployment_self,
    }
}

/// A deployment's graded answers at each load against the same items at
/// its lowest load; None when it graded items at one load only.
fn across_loads(graded: &Graded, name: &str) -> Option<Identical> {
    let mine: Vec<_> = graded.iter().filter(|(k, _)| k.0 == name).collect();
    let lowest = mine.iter().map(|(k, _)| k.3).min()?;
    let mut tally = Identical::default();
    for ((d, trial, item, conc), h) in &mine {
        if *conc == lowest {
            continue;
        }
        let Some(base) = graded.get(&(d.clone(), *trial, item.clone(), lowest)) else {
            continue;
        };
        tally.pairs += 1;
        tally.identical += u64::from(*h == base);
    }
    (tally.pairs > 0).then(|| finish(tally, Vec::new()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answer(hash: u64, text: &str) -> Answer {
        Answer {
            hash,
            text: Some(text.to_string()),
        }
    }

    #[test]
    fn pairs_by_block_and_request_and_finds_where_answers_part() {
        let mut answers = Answers::new();
        for (i, (a, b)) in [
            ("one two three", "one two three"),
            ("one two x", "one two y"),
        ]
        .iter()
        .enumerate()
        {
            let hash = |t: &str| t.len() as u64 + t.as_bytes()[t.len() - 1] as u64;
            answers.insert(("base".into(), 1, 10, 5, 1, i as u32), answer(hash(a), a));
            answers.insert(("spec".into(), 1, 10, 5, 1, i as u32), answer(hash(b), b));
        }
        // A request only one side has is not paired.
        answers.insert(("spec".into(), 2, 10, 5, 1, 0), answer(1, "z"));
        let mut graded = Graded::new();
        for (d, c, h) in [
            ("base", 1, 1),
            ("base", 4, 1),
            ("spec", 1, 1),
            ("spec", 4, 2),
        ] {
            graded.insert((d.to_string(), 1, "i0".to_string(), c), h);
        }
        let p = pair(&answers, &graded, "base", "spec");
        assert_eq!((p.overall.pairs, p.overall.identical), (2, 1));
        assert_eq!(p.overall.first_divergence_word, Some(3.0));
        assert_eq!(p.baseline_self.as_ref().map(|s| s.share), Some(1.0));
        assert_eq!(p.deployment_self.as_ref().map(|s| s.share), Some(0.0));
        // 50% identical against a floor of 0% (the deployment's own): not beyond.
        assert!(!p.beyond_baseline);
        assert_eq!(p.points.len(), 1);
    }

    #[test]
    fn first_divergence_counts_words_from_one() {
        assert_eq!(first_divergence("a b c", "a b d"), 3);
        assert_eq!(first_divergence("a", "b"), 1);
        assert_eq!(first_divergence("a b", "a b c"), 3);
    }
}
