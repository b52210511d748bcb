//! Dataset workloads before the run: the plan's file read and filtered, the
//! prompt each request will send chosen (seeded), and every chosen prompt
//! counted on the server once, so each request has a planned length that
//! the server's own count is checked against like a calibrated one.

use crate::error::RunError;
use crate::options::RunOptions;
use qexp_client::{nonce_for, CountTokens, Counter, Dataset};
use qexp_plan::{DatasetFormat, DatasetSource, Point};
use rand::{rngs::StdRng, Rng, SeedableRng};
use std::collections::BTreeMap;

/// The prompts a run samples from, with the server's count of those it sends.
#[derive(Debug, Clone)]
pub(crate) struct DatasetPrompts {
    /// Prompts that passed the filters, in file order.
    pub prompts: Vec<String>,
    /// Their images (empty for none), by position in `prompts`.
    pub images: Vec<Vec<qexp_types::image::Image>>,
    /// Server-counted tokens of nonce + prompt (the prompt alone without
    /// a nonce), by position in `prompts`.
    pub tokens: BTreeMap<usize, u32>,
    /// Whether each prompt follows its request's nonce (`[workload.dataset] nonce`).
    pub nonce: bool,
    /// SHA-256 of the file.
    pub sha256: String,
}

impl DatasetPrompts {
    /// The prompt the `index`-th request of `point` in `trial` sends (seeded, with replacement).
    pub(crate) fn entry(&self, seed: u64, trial: u32, point: u32, index: u32) -> usize {
        let key = (u64::from(trial) << 48) ^ (u64::from(point) << 24) ^ u64::from(index);
        let mut rng = StdRng::seed_from_u64(seed.rotate_left(41) ^ key ^ 0x6461_7461_7365_7421);
        rng.random_range(0..self.prompts.len().max(1))
    }
}

/// The images a prompt may carry, as the server said (`Fingerprint::max_images`).
#[derive(Debug, Clone, Copy)]
pub(crate) struct ImageLimit<'a> {
    /// Images per prompt.
    pub limit: u32,
    /// Where the server said it.
    pub read_from: &'a str,
    /// The server's URL.
    pub url: &'a str,
}

/// Reads the plan's dataset and counts every prompt the run will send.
pub(crate) async fn prepare(
    opts: &RunOptions,
    source: &DatasetSource,
    points: &[Point],
    (trials, max_images): (u32, Option<ImageLimit<'_>>),
    counter: &mut Counter<'_>,
) -> Result<DatasetPrompts, RunError> {
    let given = std::path::Path::new(source.path.get_ref());
    let path = match opts.plan.path.parent() {
        Some(dir) if given.is_relative() => dir.join(given),
        _ => given.to_path_buf(),
    };
    // A file whose extension names no format is read as JSONL, one prompt a line.
    let format = source.format().unwrap_or(DatasetFormat::Jsonl);
    let dataset = Dataset::load(&path, format)?;
    let kept: Vec<(usize, (String, Vec<_>))> = dataset
        .prompts
        .into_iter()
        .zip(dataset.images)
        .enumerate()
        .filter(|(_, (p, _))| source.keeps(p.split_whitespace().count()))
        .collect();
    // Before any prompt is counted: an entry the server would refuse (or
    // whose images it would drop) is bad input, as a point's images are.
    if let Some(max) = max_images {
        let over = |(_, (_, i)): &&(usize, (String, Vec<_>))| i.len() > max.limit as usize;
        if let Some((i, (_, many))) = kept.iter().find(over) {
            return Err(RunError::DatasetTooManyImages {
                path,
                entry: i + 1,
                count: many.len(),
                limit: max.limit,
                read_from: max.read_from.into(),
                url: max.url.into(),
            });
        }
    }
    let (prompts, images): (Vec<String>, Vec<_>) = kept.into_iter().map(|(_, e)| e).unzip();
    if prompts.is_empty() {
        return Err(RunError::DatasetFiltered { path });
    }
    let chat = opts.plan.file.target.api == qexp_plan::ApiKind::Chat;
    if !chat && images.iter().any(|i: &Vec<_>| !i.is_empty()) {
        return Err(RunError::DatasetImagesNotChat { path });
    }
    let mut out = DatasetPrompts {
        nonce: source.nonce,
        prompts,
        images,
        tokens: BTreeMap::new(),
        sha256: dataset.sha256,
    };
    count_drawn(&mut out, opts.plan.file.run.seed, points, trials, counter).await?;
    tracing::info!(
        prompts = out.prompts.len(),
        counted = out.tokens.len(),
        "dataset prompts counted"
    );
    Ok(out)
}

/// Counts on the server the tokens of every entry the run's requests draw
/// (each entry once, with a nonce where the prompts carry one: every nonce
/// has the same token count, so one probe nonce stands for all).
async fn count_drawn(
    out: &mut DatasetPrompts,
    seed: u64,
    points: &[Point],
    trials: u32,
    counter: &mut Counter<'_>,
) -> Result<(), RunError> {
    let probe_nonce = nonce_for(seed, 0, 0, 0, 0);
    for trial in 1..=trials {
        for p in points {
            for index in 0..p.warmup + p.requests {
                let e = out.entry(seed, trial, p.id, index);
                if out.tokens.contains_key(&e) {
                    continue;
                }
                let text = match out.nonce {
                    true => format!("{probe_nonce} {}", out.prompts[e]),
                    false => out.prompts[e].clone(),
                };
                let (n, _) = counter
                    .count(&text)
                    .await
                    .map_err(|source| RunError::DatasetCount { entry: e, source })?;
                out.tokens.insert(e, n);
            }
        }
    }
    Ok(())
}
