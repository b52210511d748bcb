//! One shard of a plan split over N client processes (`qexp run --shard
//! K/N`): which requests of each point this shard sends, with how many in
//! flight, and when. The split is exact: the shards' requests together are
//! the requests one process would send, each once, with the same indices
//! (so the same prompts, lengths and nonces).
//!
//! - Closed loop: concurrency C becomes C/N per shard, the first C mod N
//!   shards taking one more; the measured requests are split in proportion
//!   to each shard's concurrency (largest remainder), as contiguous index
//!   ranges, so every shard finishes at about the same time. Multi-turn
//!   points split whole conversations the same way.
//! - Open loop: measured request m goes to shard m mod N; with Poisson
//!   arrivals a shard draws its own at rate/N per stage from a seed of its
//!   own (the union of N independent Poisson processes at rate/N is one at
//!   the plan's rate); constant and gamma arrivals and a trace's entries keep
//!   their times in the one-process schedule, so the shards' union is that
//!   schedule. A cap on requests in flight is split like a concurrency.
//! - Warmups: warmup j goes to shard j mod N.

use qexp_plan::{Arrival, OpenLoop, Point, Trace};

/// Shard `index` of `count` (from 0); `Shard::WHOLE` is a run made by one process.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shard {
    /// This shard, from 0.
    pub index: u32,
    /// How many shards there are, at least 1.
    pub count: u32,
}

/// Why a `--shard` value cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("--shard {given}: {why}")]
pub struct ShardSpecError {
    given: String,
    why: String,
}

/// The environment variable a Kubernetes Indexed Job sets to each pod's index.
pub const JOB_INDEX_ENV: &str = "JOB_COMPLETION_INDEX";

impl Shard {
    /// The whole plan, in one process.
    pub const WHOLE: Shard = Shard { index: 0, count: 1 };

    /// Parses `K/N`, or `auto/N` and `/N`, where K is `job_index` (the value
    /// of [`JOB_INDEX_ENV`] the caller read).
    pub fn parse(spec: &str, job_index: Option<&str>) -> Result<Shard, ShardSpecError> {
        let err = |why: String| ShardSpecError {
            given: spec.to_string(),
            why,
        };
        let (k, n) = spec
            .split_once('/')
            .ok_or_else(|| err("give K/N (shard K of N, from 0), or auto/N".into()))?;
        let count: u32 = n
            .trim()
            .parse()
            .ok()
            .filter(|n| *n >= 1)
            .ok_or_else(|| err(format!("the shard count `{n}` is not a whole number ≥ 1")))?;
        let k = k.trim();
        let index: u32 = if k.is_empty() || k == "auto" {
            let v = job_index.ok_or_else(|| {
                err(format!(
                    "K is taken from {JOB_INDEX_ENV}, which is not set (a Kubernetes Indexed Job sets it)"
                ))
            })?;
            v.trim()
                .parse()
                .map_err(|_| err(format!("{JOB_INDEX_ENV}=`{v}` is not a whole number")))?
        } else {
            k.parse()
                .map_err(|_| err(format!("the shard index `{k}` is not a whole number")))?
        };
        if index >= count {
            return Err(err(format!(
                "shard {index} does not exist in {count} shards (they count from 0)"
            )));
        }
        Ok(Shard { index, count })
    }

    /// This shard's part of `total` spread evenly: the first `total mod N`
    /// shards take one more.
    pub fn even(&self, total: u32) -> u32 {
        total / self.count + u32::from(self.index < total % self.count)
    }

    /// What this shard sends of `point`; `turns` is the conversation length
    /// of a multi-turn plan.
    pub(crate) fn share(&self, point: &Point, turns: Option<u32>) -> Share {
        let n = self.count;
        let warmup = (0..point.warmup).filter(|j| j % n == self.index).collect();
        match (turns, &point.open_loop) {
            (None, Some(ol)) => Share {
                warmup,
                measured: (0..point.requests)
                    .filter(|m| m % n == self.index)
                    .map(|m| point.warmup + m)
                    .collect(),
                concurrency: self.even(point.concurrency),
                max_in_flight: ol.max_in_flight.map(|m| self.even(m).max(1)),
            },
            (turns, _) => {
                let turns = turns.unwrap_or(1).max(1);
                let weights: Vec<u32> = (0..n)
                    .map(|k| Shard { index: k, count: n }.even(point.concurrency))
                    .collect();
                let units = weighted(point.requests / turns, &weights);
                let before: u32 = units[..self.index as usize].iter().sum();
                let first = point.warmup + before * turns;
                let mine = units[self.index as usize] * turns;
                Share {
                    warmup,
                    measured: (first..first + mine).collect(),
                    concurrency: weights[self.index as usize],
                    max_in_flight: None,
                }
            }
        }
    }

    /// Due times of this shard's measured requests of an open-loop point
    /// (`measured` as [`Share::measured`]), seconds from the point's start.
    pub(crate) fn offsets(
        &self,
        ol: &OpenLoop,
        trace: Option<&Trace>,
        seed: u64,
        warmup: u32,
        measured: &[u32],
    ) -> Vec<f64> {
        if self.count == 1 {
            return crate::arrivals::offsets(ol, trace, seed);
        }
        // A trace, constant and gamma arrivals: this shard's part of the
        // one-process schedule, so the union is that schedule exactly (N
        // independent gamma processes would merge into a less bursty one,
        // and a phase shift holds for one stage only).
        let partition = (ol.trace.is_some() && trace.is_some()) || ol.arrival != Arrival::Poisson;
        if partition {
            let all = crate::arrivals::offsets(ol, trace, seed);
            return measured
                .iter()
                .filter_map(|i| all.get((i - warmup) as usize).copied())
                .collect();
        }
        let n = f64::from(self.count);
        let mut stages = Vec::with_capacity(ol.stages.len());
        let mut start = 0;
        for s in &ol.stages {
            let mine = measured
                .iter()
                .filter(|i| (start..start + s.requests).contains(&(**i - warmup)))
                .count() as u32;
            stages.push(qexp_plan::Stage {
                rate: s.rate / n,
                requests: mine,
            });
            start += s.requests;
        }
        // Poisson: N independent processes at rate/N are one at the plan's
        // rate. One more draw, dropped: the first arrival comes one gap in,
        // as in a process already running, not at 0 on every shard.
        let mut longer = OpenLoop {
            stages,
            ..ol.clone()
        };
        if let Some(s) = longer.stages.first_mut() {
            s.requests += 1;
        }
        let seed = seed ^ (u64::from(self.index) + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        crate::arrivals::offsets(&longer, None, seed)
            .into_iter()
            .skip(1)
            .collect()
    }
}

/// The requests (by index within the point) one shard sends of a point.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Share {
    /// Warmup indices.
    pub warmup: Vec<u32>,
    /// Measured indices, ascending.
    pub measured: Vec<u32>,
    /// Requests in flight (closed loop, sessions).
    pub concurrency: u32,
    /// The open loop's cap on requests in flight.
    pub max_in_flight: Option<u32>,
}

/// `total` split in proportion to `weights` by largest remainder (ties to
/// the lower index); all to nobody when every weight is 0.
fn weighted(total: u32, weights: &[u32]) -> Vec<u32> {
    let sum: u64 = weights.iter().map(|w| u64::from(*w)).sum();
    if sum == 0 {
        return vec![0; weights.len()];
    }
    let exact: Vec<u64> = weights
        .iter()
        .map(|w| u64::from(total) * u64::from(*w))
        .collect();
    let mut out: Vec<u32> = exact.iter().map(|e| (e / sum) as u32).collect();
    let given: u32 = out.iter().sum();
    let mut order: Vec<usize> = (0..weights.len()).collect();
    order.sort_by_key(|&i| std::cmp::Reverse(exact[i] % sum));
    for &i in order.iter().take((total - given) as usize) {
        out[i] += 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use qexp_plan::Stage;

    fn point(c: u32, requests: u32, warmup: u32, open_loop: Option<OpenLoop>) -> Point {
        Point {
            id: 0,
            concurrency: c,
            input_tokens: 10,
            output_tokens: 10,
            requests,
            warmup,
            open_loop,
            deployment: None,
            images: None,
        }
    }

    fn shards(n: u32) -> impl Iterator<Item = Shard> {
        (0..n).map(move |index| Shard { index, count: n })
    }

    fn open(arrival: Arrival, rate: f64, requests: u32) -> OpenLoop {
        OpenLoop {
            arrival,
            burstiness: 1.0,
            max_in_flight: Some(10),
            stages: vec![Stage { rate, requests }],
            trace: None,
        }
    }

    #[test]
    fn parse_takes_k_from_the_job_index() {
        assert_eq!(Shard::parse("2/4", None), Ok(Shard { index: 2, count: 4 }));
        assert_eq!(
            Shard::parse("auto/8", Some("7")),
            Ok(Shard { index: 7, count: 8 })
        );
        assert_eq!(
            Shard::parse("/3", Some("0")),
            Ok(Shard { index: 0, count: 3 })
        );
        for (bad, env, says) in [
            ("4/4", None, "does not exist"),
            ("auto/4", None, "JOB_COMPLETION_INDEX"),
            ("auto/4", Some("x"), "not a whole number"),
            ("1/0", None, "≥ 1"),
            ("3", None, "K/N"),
        ] {
            let e = Shard::parse(bad, env).unwrap_err().to_string();
            assert!(e.contains(says), "{bad}: {e}");
        }
    }

    #[test]
    fn closed_loop_splits_concurrency_and_requests_exactly() {
        for (c, r, n) in [
            (10, 100, 4),
            (8, 64, 4),
            (3, 7, 4),
            (1, 5, 3),
            (16, 1000, 8),
        ] {
            let p = point(c, r, 3, None);
            let parts: Vec<Share> = shards(n).map(|s| s.share(&p, None)).collect();
            let cs: Vec<u32> = parts.iter().map(|s| s.concurrency).collect();
            assert_eq!(cs.iter().sum::<u32>(), c, "{cs:?}");
            assert!(cs.iter().max().unwrap() - cs.iter().min().unwrap() <= 1);
            let mut all: Vec<u32> = parts.iter().flat_map(|s| s.measured.clone()).collect();
            all.sort_unstable();
            assert_eq!(all, (3..3 + r).collect::<Vec<_>>(), "c={c} r={r} n={n}");
            let mut warm: Vec<u32> = parts.iter().flat_map(|s| s.warmup.clone()).collect();
            warm.sort_unstable();
            assert_eq!(warm, vec![0, 1, 2]);
            // Requests follow concurrency: a shard with none sends none, and
            // each shard's requests per slot are within one of the others'.
            for s in &parts {
                if s.concurrency == 0 {
                    assert!(s.measured.is_empty());
                } else {
                    let per = s.measured.len() as f64 / f64::from(s.concurrency);
                    assert!((per - f64::from(r) / f64::from(c)).abs() <= 1.0, "{per}");
                }
            }
        }
    }

    #[test]
    fn sessions_stay_whole() {
        let p = point(6, 5 * 4, 0, None);
        let parts: Vec<Share> = shards(4).map(|s| s.share(&p, Some(4))).collect();
        for s in &parts {
            assert_eq!(s.measured.len() % 4, 0, "{s:?}");
            assert!(s.measured.first().is_none_or(|i| i % 4 == 0));
        }
        assert_eq!(parts.iter().map(|s| s.measured.len()).sum::<usize>(), 20);
    }

    #[test]
    fn open_loop_shards_keep_the_rate_and_every_request() {
        let ol = open(Arrival::Poisson, 1000.0, 40_000);
        let p = point(0, 40_000, 1, Some(ol.clone()));
        let mut union = Vec::new();
        let mut seen = Vec::new();
        for s in shards(4) {
            let share = s.share(&p, None);
            assert_eq!(share.max_in_flight, Some(s.even(10)));
            let o = s.offsets(&ol, None, 9, 1, &share.measured);
            assert_eq!(o.len(), share.measured.len());
            assert!(o[0] > 0.0, "first arrival one gap in");
            union.extend(o);
            seen.extend(share.measured);
        }
        seen.sort_unstable();
        assert_eq!(seen, (1..40_001).collect::<Vec<_>>());
        union.sort_by(f64::total_cmp);
        let rate = (union.len() - 1) as f64 / (union[union.len() - 1] - union[0]);
        assert!((rate / 1000.0 - 1.0).abs() < 0.02, "union rate {rate}");
        // Independent seeds: no two shards draw the same gaps.
        let a = shards(4)
            .next()
            .map(|s| s.offsets(&ol, None, 9, 1, &[1, 5, 9]))
            .unwrap();
        let b = Shard { index: 1, count: 4 }.offsets(&ol, None, 9, 1, &[2, 6, 10]);
        assert_ne!(a, b);
    }

    /// The shards' due times, by request index, put together.
    fn union_of(ol: &OpenLoop, requests: u32) -> Vec<f64> {
        let p = point(0, requests, 0, Some(ol.clone()));
        let mut union = Vec::new();
        for s in shards(4) {
            let share = s.share(&p, None);
            let o = s.offsets(ol, None, 1, 0, &share.measured);
            assert_eq!(o.len(), share.measured.len());
            for (i, t) in share.measured.iter().zip(o) {
                union.push((*i, t));
            }
        }
        union.sort_by_key(|u| u.0);
        union.into_iter().map(|(_, t)| t).collect()
    }

    #[test]
    fn constant_arrivals_interleave_into_the_one_process_schedule() {
        let ol = open(Arrival::Constant, 100.0, 40);
        let single = crate::arrivals::offsets(&ol, None, 1);
        let union = union_of(&ol, 40);
        assert_eq!(union.len(), single.len());
        for (t, want) in union.iter().zip(&single) {
            assert!((t - want).abs() < 1e-9, "{t} vs {want}");
        }
    }

    /// Two stages of constant arrivals, and gamma arrivals (bursty): the
    /// shards' union is still the one-process schedule, time for time.
    #[test]
    fn staged_and_bursty_arrivals_keep_the_one_process_schedule() {
        let mut staged = open(Arrival::Constant, 1.0, 6);
        staged.stages.push(Stage {
            rate: 2.0,
            requests: 6,
        });
        let mut bursty = open(Arrival::Gamma, 50.0, 40);
        bursty.burstiness = 0.25;
        for (ol, n) in [(staged, 12), (bursty, 40)] {
            let single = crate::arrivals::offsets(&ol, None, 1);
            assert_eq!(union_of(&ol, n), single, "{:?}", ol.arrival);
        }
    }

    #[test]
    fn one_shard_is_the_whole_plan() {
        let ol = open(Arrival::Poisson, 50.0, 20);
        let p = point(4, 20, 2, Some(ol.clone()));
        let share = Shard::WHOLE.share(&p, None);
        assert_eq!(share.measured, (2..22).collect::<Vec<_>>());
        assert_eq!(
            Shard::WHOLE.offsets(&ol, None, 3, 2, &share.measured),
            crate::arrivals::offsets(&ol, None, 3)
        );
        let closed = Shard::WHOLE.share(&point(4, 20, 2, None), None);
        assert_eq!((closed.concurrency, closed.measured.len()), (4, 20));
    }
}
