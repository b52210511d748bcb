//! What each request of a point sends: its prompt and the lengths the plan
//! meant it to have, for every workload kind.
//!
//! Default: a unique nonce, then calibrated filler words. Shared prefix: the
//! measured prompts of a group start with the group's system prompt (its own
//! nonce, then filler calibrated to `system_tokens`), then the request's
//! nonce and filler up to the point's input length; warmups stay unique so
//! they warm nothing a measured request reads. Every nonce depends on the
//! run, trial and point, so no trial or point finds another's prefix.
//!
//! Length distributions draw each request's prompt length and `max_tokens`
//! from a generator seeded by the plan's seed, trial, point and request
//! index alone, so a rerun of the plan plans the same lengths. A drawn
//! prompt length moves the calibrated filler by one word per token.
//!
//! Multi-turn sessions: turn 1 is a default prompt of the point's length;
//! each later turn's user message is a nonce and filler calibrated to
//! `user_tokens` (the conversation before it is added by `session.rs`).
//!
//! Dataset prompts are the request's nonce, then a prompt sampled from the
//! plan's file (see `dataset.rs`); their planned length is the server's count.

use crate::dataset::DatasetPrompts;
use qexp_client::prompt::{Cut, Filler};
use qexp_client::{nonce_for, Calibration, LengthDist, Shape};
use qexp_plan::{LengthShape, Lengths, MultiTurn, Point, SharedPrefix, Workload};
use rand::{rngs::StdRng, SeedableRng};
use std::collections::BTreeMap;

/// Words in every nonce (see `qexp_client::nonce_for`).
const NONCE_WORDS: usize = 16;
/// Mixed into the run salt for system-prompt nonces, so they never equal a request's.
const SYSTEM_SALT: u64 = 0x7379_7374_656d_5f70;

/// What the plan meant one request to be; stored beside what was measured.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Planned {
    /// Prompt tokens planned.
    pub input_tokens: u32,
    /// `max_tokens` sent.
    pub output_tokens: u32,
    /// Prompt tokens the plan expects the server to find in its prefix cache.
    pub cached_tokens: u32,
    /// The shared-prefix group, for grouped prompts.
    pub prefix_group: Option<u32>,
    /// The conversation (from 0 within the point), for multi-turn requests.
    pub session: Option<u32>,
    /// The turn within its conversation, from 1.
    pub turn: Option<u32>,
    /// Whether the request forces its answer's length.
    pub length_forced: bool,
    /// The graded item it asks (`[accuracy]`), by position in its trial's items.
    pub graded: Option<u32>,
    /// Its request class (`[[workload.class]]`), by position in the plan.
    pub class: Option<usize>,
    /// Images sent in its user message (`[workload.images]`).
    pub images: u32,
    /// Their pixels, all images together.
    pub image_pixels: u64,
    /// Their encoded bytes, all images together (before base64).
    pub image_bytes: u64,
    /// Whether the plan sends images (`[workload.images]`, or a dataset
    /// whose entries carry them): the rows then record them, 0 included.
    pub with_images: bool,
}

/// Whether a request body's extra fields force the answer to `max_tokens`:
/// `ignore_eos = true`, or `min_tokens` at least `max_tokens`.
pub(crate) fn forces_length(
    extra: &serde_json::Map<String, serde_json::Value>,
    max_tokens: u32,
) -> bool {
    extra.get("ignore_eos").and_then(serde_json::Value::as_bool) == Some(true)
        || extra
            .get("min_tokens")
            .and_then(serde_json::Value::as_u64)
            .is_some_and(|m| m >= u64::from(max_tokens))
}

/// Builds the prompts of a run.
pub(crate) struct Prompts<'a> {
    pub filler: &'a Filler,
    pub seed: u64,
    pub salt: u64,
    pub shared: Option<&'a SharedPrefix>,
    pub input_lengths: Option<&'a Lengths>,
    pub output_lengths: Option<&'a Lengths>,
    pub dataset: Option<&'a DatasetPrompts>,
    pub multi_turn: Option<&'a MultiTurn>,
    /// A replayed trace: measured request i takes the lengths of entry i.
    pub trace: Option<&'a qexp_plan::Trace>,
    pub calibrations: &'a BTreeMap<u32, Calibration>,
    /// Points per deployment (all points in a plan without deployments).
    pub per_deployment: u32,
    /// The request classes (`[[workload.class]]`; empty without).
    pub classes: &'a [qexp_plan::Class],
    /// Images in each request (`[workload.images]`).
    pub images: Option<&'a qexp_plan::ImagesSection>,
}

/// The salt a run's nonces are keyed by: the hex suffix of a generated run
/// id (`<UTC time>-<hex>`, as runs have always been salted), else a hash of
/// the whole id, so that two runs given their own `--run-id`s never share
/// prompts (and never find each other's prefixes in a server's cache).
pub(crate) fn run_salt(run_id: &str) -> u64 {
    // `YYYYMMDDTHHMMSSZ-xxxxxx`, as `qexp_store::new_run_id` makes them.
    let generated = run_id.split_once('-').and_then(|(time, hex)| {
        let time_ok = time.len() == 16
            && time.chars().enumerate().all(|(i, c)| match i {
                8 => c == 'T',
                15 => c == 'Z',
                _ => c.is_ascii_digit(),
            });
        let hex_ok = hex.len() == 6 && hex.chars().all(|c| c.is_ascii_hexdigit());
        (time_ok && hex_ok).then(|| u64::from_str_radix(hex, 16).ok())?
    });
    // Otherwise FNV-1a over the whole id: stable across builds and platforms.
    generated.unwrap_or_else(|| {
        run_id.bytes().fold(0xcbf2_9ce4_8422_2325, |h: u64, b| {
            (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
        })
    })
}

/// The client's distribution for a plan's `lengths` around `mean`.
fn dist(lengths: &Lengths, mean: u32) -> LengthDist {
    let (min, max) = lengths.bounds();
    let std_dev = lengths.std_dev();
    LengthDist {
        shape: match lengths.distribution.get_ref() {
            LengthShape::Fixed => Shape::Fixed,
            LengthShape::Uniform => Shape::Uniform,
            LengthShape::Normal => Shape::Normal { std_dev },
            LengthShape::Lognormal => Shape::LogNormal { std_dev },
        },
        mean,
        min,
        max,
    }
}

/// The generator for one request's lengths: from the plan's seed and the request's place only.
fn length_rng(seed: u64, trial: u32, point: u32, index: u32) -> StdRng {
    let key = (u64::from(trial) << 48) ^ (u64::from(point) << 24) ^ u64::from(index);
    StdRng::seed_from_u64(seed.rotate_left(29) ^ key ^ 0x6c65_6e67_7468_7321)
}

impl Prompts<'_> {
    /// Prompt lengths to calibrate for `points`: their inputs and the system
    /// prompt wherever a point (or a drawn length) can hold it.
    pub(crate) fn lengths(w: &Workload, points: &[Point]) -> Vec<u32> {
        let mut out: Vec<u32> = points.iter().map(|p| p.input_tokens).collect();
        if let Some(s) = &w.shared_prefix {
            let held = points
                .iter()
                .any(|p| s.system_tokens_at(p.input_tokens).is_some());
            if held || w.input_lengths.is_some() {
                out.push(*s.system_tokens.get_ref());
            }
        }
        if let Some(m) = &w.multi_turn {
            out.push(*m.user_tokens.get_ref());
        }
        out.extend(
            w.class
                .iter()
                .filter_map(|c| c.input_tokens.as_ref().map(|l| *l.get_ref())),
        );
        out.sort_unstable();
        out.dedup();
        out
    }

    /// The images of the `index`-th request of `point` in `trial`, measured
    /// into `planned`; none without `[workload.images]`.
    pub(crate) fn images(
        &self,
        trial: u32,
        point: &Point,
        index: u32,
        planned: &mut Planned,
    ) -> Vec<qexp_types::image::Image> {
        let place = crate::images::Place {
            seed: self.seed,
            salt: self.salt,
            trial,
            point: point.id % self.per_deployment.max(1),
            index,
        };
        // A dataset entry's own images, else the plan's.
        let from_dataset = self
            .dataset
            .filter(|d| d.images.iter().any(|i| !i.is_empty()));
        let images = match (from_dataset, self.images) {
            (Some(d), _) => {
                let e = d.entry(self.seed, trial, place.point, index);
                d.images.get(e).cloned().unwrap_or_default()
            }
            (None, Some(section)) => crate::images::for_request(section, point, place),
            (None, None) => return Vec::new(),
        };
        planned.with_images = true;
        planned.images = images.len() as u32;
        planned.image_pixels = images.iter().map(qexp_types::image::Image::pixels).sum();
        planned.image_bytes = images.iter().map(|i| i.bytes).sum();
        images
    }

    /// The cut of the filler after the nonce that gives `tokens` (none when not calibrated).
    fn cut(&self, tokens: u32) -> Cut {
        self.calibrations
            .get(&tokens)
            .map_or(Cut::default(), Calibration::cut)
    }

    /// The `index`-th request of `point` in `trial` (warmups first) and what it should be.
    /// Every deployment gets the same prompts in a block: requests are keyed
    /// by the point's place in the sweep, not by its id (which counts the
    /// deployment too).
    pub(crate) fn request(&self, trial: u32, point: &Point, index: u32) -> (String, Planned) {
        let place = point.id % self.per_deployment.max(1);
        let class = qexp_plan::Classes(self.classes).of(self.seed, trial, place, index);
        let (prompt, mut planned) = match class.map(|k| &self.classes[k]) {
            // A class with lengths of its own makes its requests as a point of them.
            Some(c) if c.input_tokens.is_some() || c.output_tokens.is_some() => {
                let own = Point {
                    input_tokens: c
                        .input_tokens
                        .as_ref()
                        .map_or(point.input_tokens, |l| *l.get_ref()),
                    output_tokens: c
                        .output_tokens
                        .as_ref()
                        .map_or(point.output_tokens, |l| *l.get_ref()),
                    ..point.clone()
                };
                self.unclassed(trial, &own, index, place)
            }
            _ => self.unclassed(trial, point, index, place),
        };
        planned.class = class;
        (prompt, planned)
    }

    /// The request as if the workload had no classes, at `place` in the sweep.
    fn unclassed(&self, trial: u32, point: &Point, index: u32, place: u32) -> (String, Planned) {
        let mut rng = length_rng(self.seed, trial, place, index);
        let input = self.input_lengths.map_or(point.input_tokens, |l| {
            dist(l, point.input_tokens).sample(&mut rng)
        });
        let output = self.output_lengths.map_or(point.output_tokens, |l| {
            dist(l, point.output_tokens).sample(&mut rng)
        });
        let traced = self
            .trace
            .filter(|_| point.open_loop.as_ref().is_some_and(|o| o.trace.is_some()));
        let (input, output) = traced
            .and_then(|t| t.entries.get(index.checked_sub(point.warmup)? as usize))
            .map_or((input, output), |e| (e.input_tokens, e.output_tokens));
        // One filler word per token away from the calibrated length.
        let calibrated = self.cut(point.input_tokens);
        let cut = Cut {
            units: (calibrated.units as i64 + i64::from(input) - i64::from(point.input_tokens))
                .max(0) as usize,
            pad: calibrated.pad,
        };
        let nonce = nonce_for(self.seed, self.salt, trial, place, index);
        let mut planned = Planned {
            input_tokens: input,
            output_tokens: output,
            ..Planned::default()
        };
        if let Some(d) = self.dataset {
            let at = (trial, place, index);
            return dataset_request(d, self.seed, at, &nonce, planned);
        }
        let turn_place = index
            .checked_sub(point.warmup)
            .zip(self.multi_turn)
            .map(|(measured, m)| (m, m.place(measured)));
        if let Some((m, (session, turn))) = turn_place {
            planned.session = Some(session);
            planned.turn = Some(turn);
            if turn > 1 {
                // The turn's own message; the conversation so far goes before it.
                let user = *m.user_tokens.get_ref();
                planned.input_tokens = user;
                return (self.filler.prompt(&nonce, self.cut(user)), planned);
            }
        }
        let grouped = index.checked_sub(point.warmup).and_then(|measured| {
            let shared = self.shared?;
            let system = shared.system_tokens_at(input)?;
            Some((shared, system, measured))
        });
        let Some((shared, system, measured)) = grouped else {
            return (self.filler.prompt(&nonce, cut), planned);
        };
        let (prompt, group) =
            self.grouped_prompt(shared, (system, cut), (trial, place, measured), &nonce);
        planned.cached_tokens = shared.expected_cached(input, measured);
        planned.prefix_group = Some(group);
        (prompt, planned)
    }

    /// A prompt of a shared-prefix group: its group's (or, with unique
    /// prefixes, its own) system prompt of `system` tokens, then a question
    /// that fills the rest of `cut`; and the group.
    fn grouped_prompt(
        &self,
        shared: &SharedPrefix,
        (system, cut): (u32, Cut),
        (trial, place, measured): (u32, u32, u32),
        nonce: &str,
    ) -> (String, u32) {
        let group = shared.group_of(measured);
        // Unique prefixes: a system prompt per request, keyed past every group's.
        let key = if shared.unique_prefixes {
            shared.groups.get_ref().saturating_add(measured)
        } else {
            group
        };
        let system_nonce = nonce_for(self.seed, self.salt ^ SYSTEM_SALT, trial, place, key);
        let system_cut = self.cut(system);
        // The question takes the words the whole prompt has beyond the system
        // prompt's, its nonce's among them.
        let question = Cut::words(
            (cut.units + cut.pad).saturating_sub(system_cut.units + system_cut.pad + NONCE_WORDS),
        );
        let mut prompt = self.filler.prompt(&system_nonce, system_cut);
        prompt.push(' ');
        prompt.push_str(&self.filler.prompt(nonce, question));
        (prompt, group)
    }
}

/// A request whose prompt is a dataset entry, drawn by the seed and the
/// request's place `(trial, place, index)`: counted as the server counted
/// it before the run, the nonce first unless the plan sends prompts as
/// written.
fn dataset_request(
    d: &DatasetPrompts,
    seed: u64,
    (trial, place, index): (u32, u32, u32),
    nonce: &str,
    mut planned: Planned,
) -> (String, Planned) {
    // The nonce first, as for filler prompts: no request reuses another's prefix.
    let e = d.entry(seed, trial, place, index);
    planned.input_tokens = d.tokens.get(&e).copied().unwrap_or(planned.input_tokens);
    let prompt = match d.nonce {
        true => format!("{nonce} {}", d.prompts[e]),
        false => {
            // Sent as written, a prompt sampled before may be
            // found whole in the prefix cache: not unexpected.
            planned.cached_tokens = planned.input_tokens;
            d.prompts[e].clone()
        }
    };
    (prompt, planned)
}

/// Workload keys that make two runs comparable, beyond the point parameters.
pub(crate) fn comparability_keys(w: &Workload) -> Vec<(String, String)> {
    let mut out = Vec::new();
    if let Some(s) = &w.shared_prefix {
        out.push((
            "shared_prefix".into(),
            format!(
                "{} groups x {} prompts, system {} tokens{}",
                s.groups.get_ref(),
                s.prompts_per_group.get_ref(),
                s.system_tokens.get_ref(),
                if s.unique_prefixes {
                    ", unique prefixes"
                } else {
                    ""
                }
            ),
        ));
    }
    if let Some(classes) = crate::classes::fingerprint(&w.class) {
        out.push(("classes".into(), classes));
    }
    if let Some(m) = &w.multi_turn {
        out.push((
            "multi_turn".into(),
            format!(
                "{} turns, user {} tokens, think {} s",
                m.turns(),
                m.user_tokens.get_ref(),
                m.think_time_s()
            ),
        ));
    }
    if let Some(d) = &w.dataset {
        out.push((
            "dataset".into(),
            format!(
                "{} ({}), words {}..{}",
                d.path.get_ref(),
                // The spelling `{:?}` gave this Option when the key was defined.
                d.format()
                    .map_or("None".into(), |f| format!("Some({})", f.fingerprint())),
                d.min_words.unwrap_or(0),
                d.max_words.map_or("".into(), |m| m.to_string())
            ),
        ));
    }
    if let Some(i) = &w.images {
        out.push((
            "images".into(),
            format!("count {}, {}", i.count(), image_source_key(&i.source(None))),
        ));
    }
    for (key, lengths) in [
        ("input_lengths", &w.input_lengths),
        ("output_lengths", &w.output_lengths),
    ] {
        if let Some(l) = lengths {
            let (min, max) = l.bounds();
            out.push((
                key.into(),
                format!(
                    "{} std_dev {} min {min} max {max}",
                    l.distribution.get_ref().fingerprint(),
                    l.std_dev()
                )
                .to_lowercase(),
            ));
        }
    }
    out
}

/// Where a workload's images come from, as its comparability key says it.
fn image_source_key(source: &qexp_plan::ImageSource) -> String {
    match source {
        qexp_plan::ImageSource::Fixed(s) => format!("size {s}"),
        qexp_plan::ImageSource::Buckets(b) => {
            let sizes: Vec<String> = b.iter().map(|(s, w)| format!("{s}:{w}")).collect();
            format!("sizes {}", sizes.join(","))
        }
        qexp_plan::ImageSource::Files(f) => {
            let files: Vec<String> = f
                .iter()
                .map(|i| format!("{}x{}:{}", i.width, i.height, i.bytes))
                .collect();
            format!("files {}", files.join(","))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use qexp_client::CountMethod;
    use toml::Spanned;

    fn calibration(tokens: u32, units: usize) -> (u32, Calibration) {
        let c = Calibration {
            target_tokens: tokens,
            units,
            pad: 0,
            measured_tokens: tokens,
            method: CountMethod::Tokenize,
            probes: 1,
        };
        (tokens, c)
    }

    fn point(input: u32) -> Point {
        Point {
            id: 2,
            concurrency: 1,
            input_tokens: input,
            output_tokens: 10,
            requests: 4,
            warmup: 1,
            open_loop: None,
            deployment: None,
            images: None,
        }
    }

    #[test]
    fn run_ids_salt_their_prompts_apart() {
        // Generated ids keep the salt they always had: their hex suffix.
        assert_eq!(run_salt("20261130T101500Z-1a2b3c"), 0x1a2b3c);
        // Ids given by hand are hashed whole: no two share a salt.
        let given = [
            "nightly-run",
            "nightly-abc",
            "other-abc",
            "nightly",
            "a.b_c",
        ];
        let salts: std::collections::BTreeSet<u64> = given.iter().map(|g| run_salt(g)).collect();
        assert_eq!(salts.len(), given.len(), "{salts:?}");
        assert_ne!(run_salt("nightly-run"), 0);
    }

    #[test]
    fn grouped_prompts_share_their_system_prompt_and_keep_their_length() {
        let filler = Filler::new(1, 500);
        let cal: BTreeMap<u32, Calibration> = [calibration(300, 284), calibration(200, 184)].into();
        let shared = SharedPrefix {
            groups: Spanned::new(0..0, 2),
            prompts_per_group: Spanned::new(0..0, 2),
            system_tokens: Spanned::new(0..0, 200),
            unique_prefixes: false,
        };
        let prompts = Prompts {
            filler: &filler,
            seed: 1,
            salt: 2,
            shared: Some(&shared),
            input_lengths: None,
            output_lengths: None,
            dataset: None,
            multi_turn: None,
            trace: None,
            calibrations: &cal,
            per_deployment: 1,
            classes: &[],
            images: None,
        };
        let p = point(300);
        let built: Vec<(String, Planned)> = (0..5).map(|i| prompts.request(1, &p, i)).collect();
        for (prompt, _) in &built {
            assert_eq!(prompt.split(' ').count(), 16 + 284, "{prompt}");
        }
        let system = |s: &str| s.split(' ').take(16 + 184).collect::<Vec<_>>().join(" ");
        // Index 0 is the warmup: unique, no group.
        assert_eq!(built[0].1.prefix_group, None);
        assert_ne!(system(&built[0].0), system(&built[1].0));
        assert_eq!(system(&built[1].0), system(&built[3].0), "group 0");
        assert_eq!(system(&built[2].0), system(&built[4].0), "group 1");
        assert_ne!(system(&built[1].0), system(&built[2].0));
        assert_ne!(built[1].0, built[3].0, "questions differ");
        let cached: Vec<u32> = built.iter().map(|(_, p)| p.cached_tokens).collect();
        assert_eq!(cached, [0, 0, 0, 200, 200]);
        // Another trial gets other system prompts.
        assert_ne!(system(&prompts.request(2, &p, 1).0), system(&built[1].0));

        let busted = SharedPrefix {
            unique_prefixes: true,
            ..shared.clone()
        };
        let prompts = Prompts {
            shared: Some(&busted),
            ..prompts
        };
        let a = prompts.request(1, &p, 1).0;
        let b = prompts.request(1, &p, 3).0;
        assert_ne!(system(&a), system(&b));
        assert_eq!(a.split(' ').count(), 16 + 284);
    }
}
