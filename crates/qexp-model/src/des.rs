//! Prediction by replay: the serving schedule ([`crate::engine`], which
//! qexp-sim runs in real time) driven in virtual time over the model's
//! equations, so a prediction includes what no closed formula gets right at
//! small request counts: the first wave's serialized prefills, the queue
//! for batch slots, the ramp-up and the tail. The replay sends the
//! requests (a closed loop's clients, or seeded Poisson arrivals), jumps
//! from one of the engine's deadlines to the next, and measures what it
//! streams as qexp would.

use crate::answers::{AnswerSpread, ANSWER_ORDERS};
use crate::engine::{Engine, Host, Output, Request as Sent, SeqId};
use crate::params::{Params, Schedule};
use std::collections::VecDeque;

pub use crate::engine::Seen;

/// The intake window of models written before it was a parameter
/// ([`crate::Params::intake_s`]), of the simulator's built-in profiles and
/// the one the fit tries first: how long an idle engine waits, after the
/// prompt that woke it, before it starts its step, so that prompts ready by
/// then share it. A closed loop's requests come in bursts (its first C, or
/// every sequence a step ended), and the simulator's engine waits the same
/// window, so "predict" and "serve the fit" meet the burst alike. The fit
/// also tries no window (docs/model.md "Schedules"): llama.cpp's server
/// starts its step with the prompts it has.
pub const INTAKE_S: f64 = 0.001;

/// How requests arrive.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Arrivals {
    /// Closed loop: this many clients, each sending its next request when the last one ends.
    Closed {
        /// Requests in flight.
        concurrency: u32,
    },
    /// Open loop: Poisson arrivals at this many requests per second (seeded).
    Rate {
        /// Mean arrivals per second.
        per_s: f64,
        /// Seed of the arrival times.
        seed: u64,
    },
}

/// One load point to replay.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Load {
    /// How requests arrive.
    pub arrivals: Arrivals,
    /// Prompt tokens per request, image tokens included.
    pub input_tokens: f64,
    /// Of them, image tokens per request (0 without images).
    pub image_tokens: f64,
    /// Output tokens per request.
    pub output_tokens: f64,
    /// How the answers' lengths spread, when the model stops them before
    /// the plan's length (None: every answer is `output_tokens` long).
    pub answers: Option<AnswerSpread>,
    /// Requests sent in all.
    pub requests: u32,
}

impl Load {
    /// The prefill compute of one of its prompts under `p`: its length's,
    /// plus its image tokens' own.
    pub fn prefill_compute_s(&self, p: &Params) -> f64 {
        p.prefill_compute_s(self.input_tokens) + p.image_compute_s(self.image_tokens)
    }

    /// The answer length of the `i`th of its `n` requests: the plan's, or
    /// the spread's quantile at the middle of the `i`th of `n` equal bins,
    /// the bins visited in an order that strides through them (so
    /// consecutive requests, which a closed loop hands to different users,
    /// are not sorted by length, and every user gets long and short ones).
    pub fn answer_tokens(&self, i: usize, n: usize) -> f64 {
        self.answer_tokens_in(0, i, n)
    }

    /// [`Load::answer_tokens`] in the `order`-th of [`ANSWER_ORDERS`]
    /// orders ([`AnswerSpread::length`]).
    fn answer_tokens_in(&self, order: usize, i: usize, n: usize) -> f64 {
        match &self.answers {
            Some(spread) => spread.length(order, i, n),
            None => self.output_tokens.max(1.0),
        }
    }
}

/// What the replay measured, as qexp would (docs/results.md definitions).
#[derive(Debug, Clone, PartialEq)]
pub struct Outcome {
    /// Per request: sent → first chunk, seconds.
    pub ttft_s: Vec<f64>,
    /// Per request: sent → last chunk, seconds.
    pub e2e_s: Vec<f64>,
    /// Per request: its answer's length, tokens.
    pub output_tokens: Vec<f64>,
    /// All output tokens / (first send → last completion).
    pub agg_tok_s: f64,
    /// Mean requests in flight at the server (sent, not finished) over
    /// first send → last completion: the sum of the E2Es over that window.
    pub mean_in_flight: f64,
    /// Mean sequences decoding over every decode step.
    pub mean_batch: f64,
    /// Mean batch context (tokens) over every decode step.
    pub mean_context: f64,
    /// Per request: the mean batch its own decode steps saw.
    pub batch_seen: Vec<f64>,
    /// Per request: the mean batch context its own decode steps saw.
    pub context_seen: Vec<f64>,
    /// Per request: the mean prefill compute its own decode steps carried
    /// (mixed schedule; 0 otherwise), seconds.
    pub stall_seen: Vec<f64>,
    /// The median of the pooled gaps between chunks, seconds, and what its
    /// step saw (mixed schedule: a decoding sequence's gap is its step;
    /// None on the separate schedule or without a decode step).
    pub median_gap: Option<(f64, Seen)>,
}

impl Outcome {
    /// The mean batch, context and prefill stall seen by the steps of the
    /// median-TPOT request (for an even count, the two middle ones,
    /// weighted as the median of their rates weighs them): the regressors
    /// of the decode time the analysis's median reports, and what a mixed
    /// schedule adds to it.
    pub fn median_request_seen(&self) -> Seen {
        let d = self.tpot_s();
        let mut idx: Vec<usize> = (0..d.len()).filter(|&i| d[i].is_finite()).collect();
        idx.sort_by(|&i, &j| d[i].total_cmp(&d[j]));
        let n = idx.len();
        if n == 0 {
            return Seen {
                batch: 1.0,
                context: 0.0,
                stall_s: 0.0,
            };
        }
        let (a, b) = (idx[(n - 1) / 2], idx[n / 2]);
        // The analysis's median of 1/TPOT over two middle requests is the
        // harmonic mean of their steps: the mean of each one's weighted by
        // the other's length, so their regressors are weighted alike.
        let total = d[a] + d[b];
        let (wa, wb) = if total > 0.0 {
            (d[b] / total, d[a] / total)
        } else {
            (0.5, 0.5)
        };
        let mid = |v: &[f64]| wa * v[a] + wb * v[b];
        Seen {
            batch: mid(&self.batch_seen),
            context: mid(&self.context_seen),
            stall_s: mid(&self.stall_seen),
        }
    }

    /// Replays of one load pooled: their requests together, the means of
    /// their means, and the median gap of the replay whose gap is the
    /// median of theirs.
    fn pooled(outcomes: Vec<Outcome>) -> Outcome {
        let k = outcomes.len().max(1) as f64;
        let mean = |f: fn(&Outcome) -> f64| outcomes.iter().map(f).sum::<f64>() / k;
        let all = |f: fn(&Outcome) -> &Vec<f64>| -> Vec<f64> {
            outcomes.iter().flat_map(|o| f(o).iter().copied()).collect()
        };
        let mut gaps: Vec<(f64, Seen)> = outcomes.iter().filter_map(|o| o.median_gap).collect();
        gaps.sort_by(|a, b| a.0.total_cmp(&b.0));
        Outcome {
            ttft_s: all(|o| &o.ttft_s),
            e2e_s: all(|o| &o.e2e_s),
            output_tokens: all(|o| &o.output_tokens),
            agg_tok_s: mean(|o| o.agg_tok_s),
            mean_in_flight: mean(|o| o.mean_in_flight),
            mean_batch: mean(|o| o.mean_batch),
            mean_context: mean(|o| o.mean_context),
            batch_seen: all(|o| &o.batch_seen),
            context_seen: all(|o| &o.context_seen),
            stall_seen: all(|o| &o.stall_seen),
            median_gap: gaps.get(gaps.len().saturating_sub(1) / 2).copied(),
        }
    }

    /// Per request: (E2E − TTFT)/(output − 1), seconds; NaN for an
    /// answer of one token, which has no time per output token (as in the
    /// analysis).
    pub fn tpot_s(&self) -> Vec<f64> {
        self.ttft_s
            .iter()
            .zip(&self.e2e_s)
            .zip(&self.output_tokens)
            .map(|((t, e), n)| {
                if *n >= 2.0 {
                    (e - t) / (n - 1.0)
                } else {
                    f64::NAN
                }
            })
            .collect()
    }
}

/// Linear-interpolation quantile (numpy's default) of `v`; NaN when empty.
pub fn quantile(v: &[f64], q: f64) -> f64 {
    let mut s: Vec<f64> = v.iter().copied().filter(|x| x.is_finite()).collect();
    if s.is_empty() {
        return f64::NAN;
    }
    s.sort_by(f64::total_cmp);
    let h = (s.len() - 1) as f64 * q.clamp(0.0, 1.0);
    let (lo, hi) = (h.floor() as usize, h.ceil() as usize);
    s[lo] + (s[hi] - s[lo]) * (h - lo as f64)
}

/// What the replay records of one request.
#[derive(Debug, Clone, Copy, Default)]
struct Request {
    sent: f64,
    first: Option<f64>,
    last: f64,
    steps: f64,
    batch_sum: f64,
    context_sum: f64,
    /// Prefill compute in the steps it decoded in (mixed schedule), seconds.
    stall_sum: f64,
}

/// One decode step of the mixed schedule: its length, the gaps it ended
/// (one per decoding sequence) and what it saw.
#[derive(Debug, Clone, Copy)]
struct StepRecord {
    length: f64,
    gaps: usize,
    seen: Seen,
}

/// Every prompt of a load costs the same prefill.
struct Charge(f64);

impl Host for Charge {
    fn prefill_begins(&mut self, _id: SeqId) -> f64 {
        self.0
    }
}

/// The replay's measurements.
struct Replay<'a> {
    p: &'a Params,
    load: Load,
    /// Which order of the answers' lengths it hands out.
    order: usize,
    reqs: Vec<Request>,
    /// Mixed schedule: every decode step run.
    records: Vec<StepRecord>,
    steps: f64,
    batch_sum: f64,
    context_sum: f64,
}

/// Replays `load` on the deployment `p`.
pub fn simulate(p: &Params, load: &Load) -> Outcome {
    if load.answers.is_none() {
        return replay(p, load, 0, &mut |_| {}).0;
    }
    let outcomes: Vec<Outcome> = (0..ANSWER_ORDERS)
        .map(|order| replay(p, load, order, &mut |_| {}).0)
        .collect();
    Outcome::pooled(outcomes)
}

/// What the replay of `load` on `p` did: when it sent each request (in
/// order: request `i` is the schedule's id `i`) and everything its schedule
/// reported, in order. A driver of the same schedule in real time, given
/// the same sends, must report the same.
pub fn trace(p: &Params, load: &Load) -> (Vec<f64>, Vec<Output>) {
    let mut outputs = Vec::new();
    let (_, sends) = replay(p, load, 0, &mut |o| outputs.push(o.clone()));
    (sends, outputs)
}

/// Replays `load` on `p`, showing `tap` each output of the schedule; gives
/// what it measured and when it sent each request.
fn replay(
    p: &Params,
    load: &Load,
    order: usize,
    tap: &mut dyn FnMut(&Output),
) -> (Outcome, Vec<f64>) {
    let n = load.requests.max(1) as usize;
    let mut r = Replay {
        p,
        load: *load,
        order,
        reqs: vec![Request::default(); n],
        records: Vec::new(),
        steps: 0.0,
        batch_sum: 0.0,
        context_sum: 0.0,
    };
    let mut engine = Engine::new(p);
    let mut host = Charge(load.prefill_compute_s(p));
    let mut sends = r.first_sends();
    let mut sent = 0;
    loop {
        let deadline = engine.next_deadline();
        match sends.front().copied() {
            Some(at) if sent < n && deadline.is_none_or(|d| at <= d) => {
                sends.pop_front();
                r.reqs[sent].sent = at;
                engine.arrive(at, r.request(sent), &mut host);
                sent += 1;
            }
            _ => match deadline {
                Some(d) => engine.advance(d, &mut host),
                None => break,
            },
        }
        while let Some(out) = engine.poll() {
            tap(&out);
            let done = r.record(out);
            if let (Some(at), Arrivals::Closed { .. }) = (done, load.arrivals) {
                // The client sends its next request as its last one ends.
                sends.push_back(at);
            }
        }
    }
    (r.outcome(), r.reqs.iter().map(|q| q.sent).collect())
}

impl Replay<'_> {
    /// When requests are sent, as far as known before the replay: an open
    /// loop's every send, drawn up front; a closed loop's first C.
    fn first_sends(&self) -> VecDeque<f64> {
        let n = self.reqs.len();
        match self.load.arrivals {
            Arrivals::Closed { concurrency } => {
                std::iter::repeat_n(0.0, (concurrency.max(1) as usize).min(n)).collect()
            }
            Arrivals::Rate { per_s, seed } => {
                let mut rng = SplitMix(seed);
                let mut t = 0.0;
                (0..n)
                    .map(|_| {
                        let at = t;
                        t += -(1.0 - rng.unit()).ln() / per_s.max(1e-12);
                        at
                    })
                    .collect()
            }
        }
    }

    /// The `i`th request sent.
    fn request(&self, i: usize) -> Sent {
        Sent {
            id: i as SeqId,
            prompt_tokens: self.load.input_tokens,
            output_tokens: self.load.answer_tokens_in(self.order, i, self.reqs.len()),
            priority: 0,
        }
    }

    /// Records what the engine did; gives when a request ended, if one did.
    fn record(&mut self, out: Output) -> Option<f64> {
        match out {
            Output::Admitted { .. } => None,
            Output::Step {
                length,
                decodes,
                seen,
                ..
            } => {
                self.steps += 1.0;
                self.batch_sum += seen.batch;
                self.context_sum += seen.context;
                for &id in &decodes {
                    let req = &mut self.reqs[id as usize];
                    req.steps += 1.0;
                    req.batch_sum += seen.batch;
                    req.context_sum += seen.context;
                    req.stall_sum += seen.stall_s;
                }
                if self.p.schedule == Schedule::Mixed {
                    self.records.push(StepRecord {
                        length,
                        gaps: decodes.len(),
                        seen,
                    });
                }
                None
            }
            Output::Chunk { id, at, last, .. } => {
                let req = &mut self.reqs[id as usize];
                req.first.get_or_insert(at);
                if last {
                    req.last = at;
                }
                last.then_some(at)
            }
        }
    }

    fn outcome(&self) -> Outcome {
        let first_send = self
            .reqs
            .iter()
            .map(|r| r.sent)
            .fold(f64::INFINITY, f64::min);
        let last_done = self.reqs.iter().map(|r| r.last).fold(0.0, f64::max);
        let n = self.reqs.len();
        let output_tokens: Vec<f64> = (0..n)
            .map(|i| self.load.answer_tokens_in(self.order, i, n))
            .collect();
        let tokens: f64 = output_tokens.iter().sum();
        let steps = self.steps.max(1.0);
        Outcome {
            ttft_s: self
                .reqs
                .iter()
                .map(|r| r.first.unwrap_or(r.last) - r.sent)
                .collect(),
            e2e_s: self.reqs.iter().map(|r| r.last - r.sent).collect(),
            output_tokens,
            agg_tok_s: tokens / (last_done - first_send).max(1e-12),
            mean_in_flight: self.reqs.iter().map(|r| r.last - r.sent).sum::<f64>()
                / (last_done - first_send).max(1e-12),
            mean_batch: if self.steps > 0.0 {
                self.batch_sum / steps
            } else {
                1.0
            },
            mean_context: self.context_sum / steps,
            batch_seen: self
                .reqs
                .iter()
                .map(|r| {
                    if r.steps > 0.0 {
                        r.batch_sum / r.steps
                    } else {
                        1.0
                    }
                })
                .collect(),
            context_seen: self
                .reqs
                .iter()
                .map(|r| r.context_sum / r.steps.max(1.0))
                .collect(),
            stall_seen: self
                .reqs
                .iter()
                .map(|r| r.stall_sum / r.steps.max(1.0))
                .collect(),
            median_gap: median_gap(&self.records),
        }
    }
}

/// The median of the pooled gaps, and what its step saw: the steps sorted by
/// length, each counted once per gap it ended, and (for an even count, as
/// the analysis interpolates the two middle gaps) the two middle ones
/// averaged; None without a decode step.
fn median_gap(records: &[StepRecord]) -> Option<(f64, Seen)> {
    let mut sorted: Vec<&StepRecord> = records.iter().filter(|r| r.gaps > 0).collect();
    sorted.sort_by(|a, b| a.length.total_cmp(&b.length));
    let n: usize = sorted.iter().map(|r| r.gaps).sum();
    let nth = |k: usize| {
        let mut below = 0;
        sorted.iter().find(|r| {
            below += r.gaps;
            below > k
        })
    };
    let (a, b) = (nth(n.checked_sub(1)? / 2)?, nth(n / 2)?);
    let seen = Seen {
        batch: (a.seen.batch + b.seen.batch) / 2.0,
        context: (a.seen.context + b.seen.context) / 2.0,
        stall_s: (a.seen.stall_s + b.seen.stall_s) / 2.0,
    };
    Some(((a.length + b.length) / 2.0, seen))
}

/// SplitMix64: a small seeded generator for arrival times.
struct SplitMix(u64);

impl SplitMix {
    fn unit(&mut self) -> f64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^= z >> 31;
        (z >> 11) as f64 / (1u64 << 53) as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(max_batch: Option<u32>) -> Params {
        Params {
            max_batch,
            ..super::tests_params()
        }
    }

    fn mixed(max_batch: Option<u32>) -> Params {
        Params {
            schedule: Schedule::Mixed,
            ..p(max_batch)
        }
    }

    fn closed(c: u32, requests: u32) -> Load {
        Load {
            arrivals: Arrivals::Closed { concurrency: c },
            input_tokens: 1000.0,
            image_tokens: 0.0,
            output_tokens: 11.0,
            answers: None,
            requests,
        }
    }

    #[test]
    fn one_request_alone_follows_the_equations() {
        let o = simulate(&p(None), &closed(1, 3));
        for (t, e) in o.ttft_s.iter().zip(&o.e2e_s) {
            assert!((t - 0.15).abs() < 1e-12, "{t}");
            assert!((e - (0.15 + 10.0 * 0.01)).abs() < 1e-12, "{e}");
        }
        assert_eq!(o.mean_batch, 1.0);
    }

    #[test]
    fn two_at_once_serialize_prefill_and_share_steps() {
        let load = Load {
            output_tokens: 41.0,
            ..closed(2, 2)
        };
        let o = simulate(&p(None), &load);
        let mut t = o.ttft_s.clone();
        t.sort_by(f64::total_cmp);
        // The second waits for the first's 0.1 s prefill.
        assert!(
            (t[0] - 0.15).abs() < 1e-12 && (t[1] - 0.25).abs() < 1e-12,
            "{t:?}"
        );
        // Both decode together for most of their steps, at 2 ms more per step.
        assert!(
            o.mean_batch > 1.5 && o.mean_batch <= 2.0,
            "{}",
            o.mean_batch
        );
        assert!(o.e2e_s.iter().all(|e| *e > 0.15 + 40.0 * 0.01));
    }

    #[test]
    fn a_batch_limit_queues_the_rest() {
        // One slot: each request prefills (0.1 s) and decodes (10 × 10 ms) before the next.
        let limited = simulate(&p(Some(1)), &closed(4, 4));
        // No limit: only the prefills queue.
        let free = simulate(&p(None), &closed(4, 4));
        let max = |v: &[f64]| quantile(v, 1.0);
        assert!((max(&limited.ttft_s) - (0.15 + 3.0 * 0.2)).abs() < 1e-9);
        assert!((max(&free.ttft_s) - (0.15 + 3.0 * 0.1)).abs() < 1e-9);
        assert_eq!(limited.mean_batch, 1.0);
        assert!(limited.agg_tok_s < free.agg_tok_s);
    }

    #[test]
    fn prefill_units_run_prompts_side_by_side() {
        // Unlimited: four prompts prefill at once, each in its 0.1 s.
        let free = simulate(
            &Params {
                prefill_units: None,
                ..p(None)
            },
            &closed(4, 4),
        );
        assert!(free.ttft_s.iter().all(|t| (t - 0.15).abs() < 1e-12));
        // Two units: two at 0.15 s, two at 0.25 s.
        let two = simulate(
            &Params {
                prefill_units: Some(2),
                ..p(None)
            },
            &closed(4, 4),
        );
        let mut t = two.ttft_s.clone();
        t.sort_by(f64::total_cmp);
        let want = [0.15, 0.15, 0.25, 0.25];
        assert!(
            t.iter().zip(want).all(|(a, b)| (a - b).abs() < 1e-12),
            "{t:?}"
        );
    }

    #[test]
    fn open_loop_arrivals_are_seeded() {
        let load = Load {
            arrivals: Arrivals::Rate {
                per_s: 5.0,
                seed: 7,
            },
            ..closed(1, 50)
        };
        let a = simulate(&p(None), &load);
        assert_eq!(a, simulate(&p(None), &load));
        assert!(a.e2e_s.iter().all(|e| *e >= 0.25 - 1e-9));
    }

    #[test]
    fn mixed_the_median_gap_is_the_typical_step() {
        let load = Load {
            output_tokens: 41.0,
            ..closed(3, 3)
        };
        let o = simulate(&mixed(None), &load);
        // Three prompts share one step, then 40 steps of three at 14 ms.
        let (gap, seen) = o.median_gap.unwrap();
        assert!((gap - 0.014).abs() < 1e-12, "{gap}");
        assert_eq!((seen.batch, seen.stall_s), (3.0, 0.0));
        // Without an intake window the first prompt goes alone, and the
        // other two stall its first decode step (one gap of 0.21 s, not
        // the median).
        let o = simulate(
            &Params {
                intake_s: 0.0,
                ..mixed(None)
            },
            &load,
        );
        let (gap, seen) = o.median_gap.unwrap();
        assert!((gap - 0.014).abs() < 1e-12, "{gap}");
        assert_eq!(seen.stall_s, 0.0);
        // The separate schedule has no engine step to take.
        let o = simulate(&p(None), &load);
        assert!(o.median_gap.is_none());
    }

    #[test]
    fn mixed_a_burst_shares_the_first_step() {
        let load = Load {
            output_tokens: 41.0,
            ..closed(3, 3)
        };
        let o = simulate(&mixed(None), &load);
        // All three are ready at a = 0.05 s; the engine, woken, waits its
        // intake window and prefills the three in one step (3 × 0.1 s).
        let first = 0.05 + INTAKE_S + 0.3;
        for t in &o.ttft_s {
            assert!((t - first).abs() < 1e-9, "{:?}", o.ttft_s);
        }
        // Then 40 steps of three at 14 ms, stalled by no prompt.
        for e in &o.e2e_s {
            assert!((e - (first + 40.0 * 0.014)).abs() < 1e-9, "{:?}", o.e2e_s);
        }
        assert!(o.stall_seen.iter().all(|s| *s == 0.0), "{:?}", o.stall_seen);
        // Alone, the mixed step is the separate schedule's, after the window.
        let one = closed(1, 3);
        let (m, s) = (simulate(&mixed(None), &one), simulate(&p(None), &one));
        for (a, b) in m.e2e_s.iter().zip(&s.e2e_s) {
            assert!((a - (b + INTAKE_S)).abs() < 1e-9, "{a} {b}");
        }
    }

    #[test]
    fn mixed_a_prompt_stalls_the_sequence_decoding() {
        let load = Load {
            arrivals: Arrivals::Rate {
                per_s: 5.0,
                seed: 6,
            },
            ..closed(1, 2)
        };
        let load = Load {
            output_tokens: 41.0,
            ..load
        };
        let sent = -(1.0 - SplitMix(6).unit()).ln() / 5.0;
        let w = INTAKE_S;
        // The first decodes alone (10 ms steps from 0.15 s + the window);
        // the second is ready at sent + 0.05 and waits for the step
        // boundary at 0.32 s + the window.
        assert!(sent + 0.05 > 0.31 + w && sent + 0.05 <= 0.32 + w, "{sent}");
        let o = simulate(&mixed(None), &load);
        // That step decodes the first (10 ms) and prefills the second (0.1 s).
        assert!(
            (o.ttft_s[1] - (0.43 + w - sent)).abs() < 1e-9,
            "{:?}",
            o.ttft_s
        );
        // The first's 18 tokens so far, then 22 steps of two at 12 ms.
        assert!(
            (o.e2e_s[0] - (0.43 + w + 22.0 * 0.012)).abs() < 1e-9,
            "{:?}",
            o.e2e_s
        );
        // The second's 22 shared steps, then 18 alone.
        let last = 0.43 + w + 22.0 * 0.012 + 18.0 * 0.01;
        assert!((o.e2e_s[1] - (last - sent)).abs() < 1e-9, "{:?}", o.e2e_s);
        assert!(
            (o.stall_seen[0] - 0.1 / 40.0).abs() < 1e-12,
            "{:?}",
            o.stall_seen
        );
        // Separately, the second prefills at once and stalls nobody.
        let sep = simulate(&p(None), &load);
        assert!((sep.ttft_s[1] - 0.15).abs() < 1e-9);
        assert!(sep.e2e_s[0] < o.e2e_s[0] - 0.09);
    }

    #[test]
    fn mixed_a_batch_limit_queues_the_rest() {
        // One slot: each request prefills (0.1 s) and decodes (10 × 10 ms) before the next.
        // Only the first step waits out the idle engine's window.
        let o = simulate(&mixed(Some(1)), &closed(4, 4));
        let last = 0.15 + INTAKE_S + 3.0 * 0.2;
        assert!((quantile(&o.ttft_s, 1.0) - last).abs() < 1e-9);
        assert_eq!(o.mean_batch, 1.0);
    }

    #[test]
    fn quantile_interpolates_like_numpy() {
        assert_eq!(quantile(&[1.0, 2.0, 3.0, 4.0], 0.5), 2.5);
        assert!((quantile(&[1.0, 2.0, 3.0, 4.0], 0.9) - 3.7).abs() < 1e-12);
        assert!(quantile(&[], 0.5).is_nan());
        assert_eq!(quantile(&[5.0], 0.9), 5.0);
    }
}

/// The deployment of the tests: 50 ms + 0.1 ms per prompt token to the
/// first token, a step of 10 ms + 2 ms per extra sequence.
#[cfg(test)]
fn tests_params() -> Params {
    Params {
        prefill_fixed_s: 0.05,
        prefill_s_per_token: 1e-4,
        prefill_s_per_token2: 0.0,
        prefill_s_per_image_token: 0.0,
        step_base_s: 0.01,
        step_per_seq_s: 0.002,
        step_per_context_token_s: 0.0,
        tokens_per_step: 1.0,
        max_batch: None,
        schedule: Schedule::Separate,
        intake_s: INTAKE_S,
        prefill_units: Some(1),
    }
}

#[cfg(test)]
mod answers {
    use super::*;

    fn spread() -> AnswerSpread {
        crate::answers::tests::spread()
    }

    /// `c` users sending `requests` prompts of 100 tokens, whose answers spread.
    fn load(c: u32, requests: u32) -> Load {
        Load {
            arrivals: Arrivals::Closed { concurrency: c },
            input_tokens: 100.0,
            image_tokens: 0.0,
            output_tokens: 39.0,
            answers: Some(spread()),
            requests,
        }
    }

    #[test]
    fn requests_take_every_part_of_the_spread_out_of_order() {
        let load = load(2, 16);
        let lengths: Vec<f64> = (0..16).map(|i| load.answer_tokens(i, 16)).collect();
        let mut sorted = lengths.clone();
        sorted.sort_by(f64::total_cmp);
        // The 16 bins' middles, read off the spread: its ends repeat.
        assert_eq!(sorted[0], 3.0);
        assert_eq!(sorted[15], 48.0);
        assert_eq!(sorted.iter().filter(|&&x| x == 48.0).count(), 7);
        assert_ne!(lengths, sorted, "handed out in order of length");
        // Each closed-loop user (even and odd sends, roughly) gets short and long answers.
        for user in 0..2 {
            let mine: Vec<f64> = lengths.iter().skip(user).step_by(2).copied().collect();
            assert!(
                mine.iter().any(|&x| x < 20.0) && mine.contains(&48.0),
                "{mine:?}"
            );
        }
        let fixed = Load {
            answers: None,
            ..load
        };
        assert_eq!(fixed.answer_tokens(5, 16), 39.0);
    }

    #[test]
    fn the_replay_counts_each_answer_at_its_own_length() {
        let p = super::tests_params();
        let load = load(1, 8);
        let o = simulate(&p, &load);
        // Every order hands out the same lengths, each in its own order.
        let mut want: Vec<f64> = (0..ANSWER_ORDERS)
            .flat_map(|k| (0..8).map(move |i| load.answer_tokens_in(k, i, 8)))
            .collect();
        assert_eq!(o.output_tokens, want);
        let orders: Vec<&[f64]> = want.chunks(8).collect();
        assert!(orders.windows(2).all(|w| w[0] != w[1]), "{orders:?}");
        want.sort_by(f64::total_cmp);
        let mut one: Vec<f64> = (0..8).map(|i| load.answer_tokens(i, 8)).collect();
        one.sort_by(f64::total_cmp);
        assert!(want
            .chunks(ANSWER_ORDERS)
            .all(|c| c.iter().all(|x| one.contains(x))));
        // One user: every decode step is alone, so every request's time
        // per output token is the step, whatever its length.
        for t in o.tpot_s() {
            assert!((t - 0.01).abs() < 1e-9, "{t}");
        }
        // One user: the window is the sum of the E2Es, in every order.
        let window: f64 = o.e2e_s.iter().sum::<f64>() / ANSWER_ORDERS as f64;
        let tokens: f64 = one.iter().sum();
        assert!(
            (o.agg_tok_s - tokens / window).abs() < 1e-6,
            "{}",
            o.agg_tok_s
        );
    }
}
