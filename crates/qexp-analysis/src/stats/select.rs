//! Exact quantiles of a sequence too long to hold, read more than once.
//!
//! A (trial, point) of a run of a hundred million requests has millions of
//! values; its percentiles must stay exact (DESIGN: never merged from
//! pieces), and a report must not hold them. [`Quantiles`] finds the order
//! statistics a set of quantile levels needs by radix selection over the
//! values' bits. A sequence of at most [`HELD_MAX`] values is held on the
//! first read and selected at once. A longer one is counted instead, on
//! the first read, into a histogram of the top [`FIRST_BITS`] bits of each
//! value's order key (the IEEE bits ordered as `f64::total_cmp` orders
//! them), which names the bucket holding each wanted rank; each later read
//! keeps only the values of those buckets, or, where they hold more than
//! [`HELD_MAX`] values together, counts them by their next [`NEXT_BITS`]
//! bits and narrows again. Memory is a histogram and at most [`HELD_MAX`]
//! values, whatever the sequence's length. A long sequence is done after
//! its second read when the buckets of its wanted ranks are small; a
//! bucket of millions of near-equal values takes a few more.
//!
//! Most long sequences are done after the first read: when the values
//! first outgrow what is held, those held values (the first [`HELD_MAX`]
//! of the read) name a guess of where each level lies, a few first-read
//! buckets around it ([`Guess`]), and the rest of the read holds the
//! values that fall into those buckets besides counting them. A wanted
//! rank whose bucket was guessed is then selected from the held values at
//! the read's end, exactly (the histogram gives how many values lie below
//! the bucket); one whose bucket was missed, as in a sequence that drifts
//! away from its beginning, is read again as above. The guessed buckets
//! hold at most [`HELD_MAX`] values too, or the guess is dropped.
//!
//! The results are those of [`super::quantiles_in_place`] on all the values
//! at once, bit for bit: the same order statistics, interpolated the same
//! way. Every read must give the same values (in any order).

use super::quantile::{lerp, position};

/// Bits of the first read's histogram: 2^20 counts (4 MiB), made only for
/// a sequence longer than [`HELD_MAX`] and dropped at the read's end.
const FIRST_BITS: u32 = 20;
/// Bits each later histogram narrows a bucket by.
const NEXT_BITS: u32 = 16;
/// How far (in quantile level) on either side of each level the guess
/// reaches, as the first held values place it: for a sequence that keeps
/// its beginning's distribution the wanted rank lies far inside, and a
/// drift of up to about this much still lands in it.
const GUESS_REACH: f64 = 0.02;
/// The fewest held values a guess is made from.
const GUESS_MIN_HELD: usize = 4096;
/// The largest share of the held values that a guess's buckets may hold:
/// a guess that would hold most values saves nothing (many levels, like
/// the 101 of a distribution, or values in a few buckets).
const GUESS_MAX_SHARE: f64 = 0.25;
/// The most values one sequence holds at a time (32 MiB). In the runs
/// `scripts/bench-report.sh` writes (40 (trial, point)s), a (trial, point)
/// of a 10 M-request run (250 K requests, 1.75 M inter-chunk gaps) is held
/// whole; of a 100 M-request run, its requests' values are still held and
/// its 17.5 M gaps are counted, their guessed buckets held (about 2 M
/// values), and not read again.
pub(crate) const HELD_MAX: usize = 1 << 22;

/// The order key of `x`: unsigned integers ordered as `f64::total_cmp`
/// orders the floats (negative values with every bit flipped, the others
/// with the sign bit set).
fn key(x: f64) -> u64 {
    let bits = x.to_bits();
    if bits >> 63 == 1 {
        !bits
    } else {
        bits | (1 << 63)
    }
}

/// The float of order key `k` ([`key`]'s inverse).
fn unkey(k: u64) -> f64 {
    if k >> 63 == 1 {
        f64::from_bits(k & !(1 << 63))
    } else {
        f64::from_bits(!k)
    }
}

/// The exact quantiles at fixed levels of a sequence read more than once:
/// [`Quantiles::push`] every value of a read, then [`Quantiles::end_read`];
/// read again while [`Quantiles::done`] is false; then
/// [`Quantiles::values`].
#[derive(Debug)]
pub(crate) struct Quantiles {
    levels: Vec<f64>,
    /// Values in the first read.
    n: u64,
    /// The order statistics the levels need (ascending ranks), once known.
    ranks: Vec<u64>,
    /// The value at each of `ranks`, as found.
    found: Vec<Option<f64>>,
    state: State,
    held_max: usize,
}

#[derive(Debug)]
enum State {
    /// The first read: its values held while there are at most `held_max`
    /// (then selected at once, with no further read), and from then on
    /// counted by the top [`FIRST_BITS`] bits (u32 counts: a bucket takes
    /// up to 4 G values, far more than a (trial, point) has).
    First {
        held: Vec<f64>,
        counts: Option<Vec<u32>>,
        /// Made with `counts`, while its buckets' values fit.
        guess: Option<Guess>,
    },
    /// A later read: the values of the buckets still open, by prefix.
    Narrow {
        /// Bits of the key every open bucket's prefix holds.
        depth: u32,
        /// Sorted by prefix.
        open: Vec<Bucket>,
        /// At the first read's depth: each prefix's place in `open`, plus
        /// one (0: not open), so that a value finds its bucket in one look.
        /// Made at the read's first value, so that only the sequences being
        /// read hold one.
        lookup: Option<Vec<u16>>,
    },
    Done,
}

/// First-read buckets where the wanted ranks are guessed to lie, and
/// every value of the read that falls into them.
#[derive(Debug)]
struct Guess {
    /// One bit per first-read bucket (2^20 bits: 128 KiB).
    marked: Vec<u64>,
    values: Vec<f64>,
}

impl Guess {
    /// From the first `held` values of a read (reordered; those outside
    /// the guess dropped) and the quantile levels: the buckets from
    /// [`GUESS_REACH`] below each level's value among them to as far
    /// above. None when they are too few, or the buckets would hold more
    /// than [`GUESS_MAX_SHARE`] of them.
    fn new(mut held: Vec<f64>, levels: &[f64]) -> Option<Guess> {
        let m = held.len();
        if m < GUESS_MIN_HELD {
            return None;
        }
        let at = |q: f64| ((m - 1) as f64 * q.clamp(0.0, 1.0)) as usize;
        let ends: Vec<(usize, usize)> = levels
            .iter()
            .filter(|q| (0.0..=1.0).contains(*q))
            .map(|&q| (at(q - GUESS_REACH), (at(q + GUESS_REACH) + 1).min(m - 1)))
            .collect();
        let mut ranks: Vec<usize> = ends.iter().flat_map(|&(a, b)| [a, b]).collect();
        ranks.sort_unstable();
        ranks.dedup();
        super::quantile::select_all(&mut held, &ranks);
        let bucket = |r: usize| (key(held[r]) >> (64 - FIRST_BITS)) as usize;
        let mut marked = vec![0u64; (1 << FIRST_BITS) / 64];
        for &(lo, hi) in &ends {
            for b in bucket(lo)..=bucket(hi) {
                marked[b / 64] |= 1 << (b % 64);
            }
        }
        let mut guess = Guess {
            marked,
            values: Vec::new(),
        };
        held.retain(|&x| guess.covers(key(x)));
        if held.len() as f64 > GUESS_MAX_SHARE * m as f64 {
            return None;
        }
        guess.values = held;
        Some(guess)
    }

    /// Whether the bucket of order key `k` is guessed.
    #[inline]
    fn covers(&self, k: u64) -> bool {
        let b = (k >> (64 - FIRST_BITS)) as usize;
        (self.marked[b / 64] >> (b % 64)) & 1 == 1
    }

    /// Selects the wanted ranks of the guessed buckets among `buckets`
    /// (the first read's, by prefix) into `found`; returns the others.
    fn settle(self, buckets: Vec<Found>, found: &mut [Option<f64>]) -> Vec<Found> {
        let (inside, rest): (Vec<Found>, Vec<Found>) = buckets
            .into_iter()
            .partition(|b| self.covers(b.prefix << (64 - FIRST_BITS)));
        let mut values: Vec<Vec<f64>> = vec![Vec::new(); inside.len()];
        for x in self.values {
            let prefix = key(x) >> (64 - FIRST_BITS);
            if let Ok(i) = inside.binary_search_by_key(&prefix, |b| b.prefix) {
                values[i].push(x);
            }
        }
        for (b, mut values) in inside.into_iter().zip(values) {
            let ranks: Vec<usize> = b.wanted.iter().map(|w| w.1 as usize).collect();
            super::quantile::select_all(&mut values, &ranks);
            for (i, r) in b.wanted {
                found[i] = values.get(r as usize).copied();
            }
        }
        rest
    }
}

#[derive(Debug)]
struct Bucket {
    /// The top `depth` bits of its values' keys.
    prefix: u64,
    /// (index into `ranks`, rank among this bucket's values).
    wanted: Vec<(usize, u64)>,
    /// Held values, or counts by the next bits.
    work: Work,
}

/// A bucket the last histogram found a wanted rank in.
#[derive(Debug)]
struct Found {
    /// The top bits of its values' keys.
    prefix: u64,
    /// Its values.
    count: u64,
    /// (index into `ranks`, rank among its values).
    wanted: Vec<(usize, u64)>,
}

#[derive(Debug)]
enum Work {
    Hold(Vec<f64>),
    Count { bits: u32, counts: Vec<u32> },
}

impl Bucket {
    /// A value of this bucket (key `k`), its prefix `depth` bits.
    #[inline]
    fn add(&mut self, depth: u32, k: u64, x: f64) {
        match &mut self.work {
            Work::Hold(values) => values.push(x),
            Work::Count { bits, counts } => {
                if counts.is_empty() {
                    // Made at its first value: only the sequences being read hold one.
                    *counts = vec![0; 1 << *bits];
                }
                let shift = 64 - depth - *bits;
                counts[((k >> shift) & ((1u64 << *bits) - 1)) as usize] += 1;
            }
        }
    }
}

impl Quantiles {
    /// The quantiles at `levels` (in [0, 1]; a level outside gives None),
    /// holding at most `held_max` values ([`HELD_MAX`]; tests force
    /// narrowing with a small one).
    pub(crate) fn new(levels: &[f64], held_max: usize) -> Quantiles {
        Quantiles {
            levels: levels.to_vec(),
            n: 0,
            ranks: Vec::new(),
            found: Vec::new(),
            state: State::First {
                held: Vec::new(),
                counts: None,
                guess: None,
            },
            held_max: held_max.max(1),
        }
    }

    /// One value of the current read.
    #[inline]
    pub(crate) fn push(&mut self, x: f64) {
        let k = key(x);
        match &mut self.state {
            State::First {
                counts: Some(counts),
                guess,
                ..
            } => {
                self.n += 1;
                counts[(k >> (64 - FIRST_BITS)) as usize] += 1;
                if let Some(g) = guess {
                    if g.covers(k) {
                        match g.values.len() < self.held_max {
                            true => g.values.push(x),
                            false => *guess = None,
                        }
                    }
                }
            }
            State::First {
                held, counts: None, ..
            } if held.len() < self.held_max => {
                self.n += 1;
                held.push(x);
            }
            State::Narrow {
                lookup: Some(lookup),
                open,
                depth,
            } => {
                let i = lookup[(k >> (64 - FIRST_BITS)) as usize];
                if i > 0 {
                    open[i as usize - 1].add(*depth, k, x);
                }
            }
            State::Done => {}
            _ => self.push_slow(k, x),
        }
    }

    /// [`Quantiles::push`] for the rarer cases: the first value past the
    /// held ones, and a narrowed bucket deeper than the first read's.
    #[cold]
    fn push_slow(&mut self, k: u64, x: f64) {
        match &mut self.state {
            State::First {
                held,
                counts,
                guess,
            } => {
                self.n += 1;
                let mut c = vec![0u32; 1 << FIRST_BITS];
                for &h in held.iter().chain([&x]) {
                    c[(key(h) >> (64 - FIRST_BITS)) as usize] += 1;
                }
                *counts = Some(c);
                *guess = Guess::new(std::mem::take(held), &self.levels);
                if let Some(g) = guess {
                    if g.covers(k) {
                        g.values.push(x);
                    }
                }
            }
            State::Narrow {
                depth,
                open,
                lookup,
            } => {
                if *depth == FIRST_BITS && open.len() < usize::from(u16::MAX) {
                    let mut table = vec![0u16; 1 << FIRST_BITS];
                    for (i, b) in open.iter().enumerate() {
                        table[b.prefix as usize] = i as u16 + 1;
                    }
                    let i = table[(k >> (64 - FIRST_BITS)) as usize];
                    if i > 0 {
                        open[i as usize - 1].add(*depth, k, x);
                    }
                    *lookup = Some(table);
                    return;
                }
                let prefix = k >> (64 - *depth);
                let (Some(lo), Some(hi)) = (open.first(), open.last()) else {
                    return;
                };
                if prefix < lo.prefix || prefix > hi.prefix {
                    return;
                }
                if let Ok(i) = open.binary_search_by_key(&prefix, |b| b.prefix) {
                    open[i].add(*depth, k, x);
                }
            }
            State::Done => {}
        }
    }

    /// Whether every quantile is known (no further read is needed).
    pub(crate) fn done(&self) -> bool {
        matches!(self.state, State::Done)
    }

    /// Ends a read: finds what its values settle and prepares the next.
    pub(crate) fn end_read(&mut self) {
        let state = std::mem::replace(&mut self.state, State::Done);
        let (depth, children) = match state {
            State::Done => return,
            State::First {
                held,
                counts,
                guess,
            } => {
                let positions: Vec<Option<(usize, f64)>> = self
                    .levels
                    .iter()
                    .map(|&q| position(self.n as usize, q))
                    .collect();
                let mut ranks: Vec<u64> = positions
                    .iter()
                    .flatten()
                    .flat_map(|&(i, _)| [i as u64, (i as u64 + 1).min(self.n - 1)])
                    .collect();
                ranks.sort_unstable();
                ranks.dedup();
                self.found = vec![None; ranks.len()];
                let wanted: Vec<(usize, u64)> = ranks.iter().copied().enumerate().collect();
                self.ranks = ranks;
                let Some(counts) = counts else {
                    // Every value held: selected now.
                    let mut held = held;
                    let ranks: Vec<usize> = self.ranks.iter().map(|&r| r as usize).collect();
                    super::quantile::select_all(&mut held, &ranks);
                    for (i, r) in ranks.into_iter().enumerate() {
                        self.found[i] = held.get(r).copied();
                    }
                    return;
                };
                let buckets = split(0, FIRST_BITS, &counts, &wanted);
                let buckets = match guess {
                    Some(guess) => guess.settle(buckets, &mut self.found),
                    None => buckets,
                };
                (FIRST_BITS, buckets)
            }
            State::Narrow { depth, open, .. } => {
                let mut children = Vec::new();
                let mut next_depth = depth;
                for b in open {
                    match b.work {
                        Work::Hold(mut values) => {
                            let ranks: Vec<usize> = b.wanted.iter().map(|w| w.1 as usize).collect();
                            super::quantile::select_all(&mut values, &ranks);
                            for (i, r) in b.wanted {
                                self.found[i] = values.get(r as usize).copied();
                            }
                        }
                        Work::Count { bits, counts } => {
                            next_depth = depth + bits;
                            children.extend(split(b.prefix, bits, &counts, &b.wanted));
                        }
                    }
                }
                (next_depth, children)
            }
        };
        self.open(depth, children);
    }

    /// Buckets at `depth` as the next read's work: a bucket of one key
    /// (every bit known) is settled now; the smallest are held while
    /// [`HELD_MAX`] allows; the rest are counted by their next bits.
    fn open(&mut self, depth: u32, mut buckets: Vec<Found>) {
        buckets.retain(|b| {
            if depth < 64 {
                return true;
            }
            for &(i, _) in &b.wanted {
                self.found[i] = Some(unkey(b.prefix));
            }
            false
        });
        if buckets.is_empty() {
            self.state = State::Done;
            return;
        }
        let mut by_size: Vec<usize> = (0..buckets.len()).collect();
        by_size.sort_by_key(|&i| buckets[i].count);
        let mut hold = vec![false; buckets.len()];
        let mut held = 0u64;
        for i in by_size {
            if held + buckets[i].count <= self.held_max as u64 {
                held += buckets[i].count;
                hold[i] = true;
            }
        }
        let bits = NEXT_BITS.min(64 - depth);
        let open: Vec<Bucket> = buckets
            .into_iter()
            .zip(hold)
            .map(|(Found { prefix, wanted, .. }, hold)| Bucket {
                prefix,
                wanted,
                work: if hold {
                    // Grown as values come: a (trial, point) holds only
                    // while it is being read.
                    Work::Hold(Vec::new())
                } else {
                    Work::Count {
                        bits,
                        counts: Vec::new(),
                    }
                },
            })
            .collect();
        self.state = State::Narrow {
            depth,
            open,
            lookup: None,
        };
    }

    /// The quantile at each level, as [`super::quantiles_in_place`] gives
    /// it (all None when the sequence was empty); call once [`Quantiles::done`].
    pub(crate) fn values(&self) -> Vec<Option<f64>> {
        let at = |r: u64| -> Option<f64> {
            let i = self.ranks.binary_search(&r).ok()?;
            self.found[i]
        };
        self.levels
            .iter()
            .map(|&q| {
                let (i, gamma) = position(self.n as usize, q)?;
                let a = at(i as u64)?;
                let b = at((i as u64 + 1).min(self.n - 1))?;
                Some(lerp(a, b, gamma))
            })
            .collect()
    }

    /// Whether a later read still holds or counts anything (for tests of
    /// how many reads a sequence takes).
    #[cfg(test)]
    fn open_buckets(&self) -> usize {
        match &self.state {
            State::Narrow { open, .. } => open.len(),
            _ => 0,
        }
    }
}

/// The buckets of a histogram (`counts` of the values under `prefix`, by
/// their next `bits` bits; empty when none came) holding the `wanted`
/// ranks, by prefix.
fn split(prefix: u64, bits: u32, counts: &[u32], wanted: &[(usize, u64)]) -> Vec<Found> {
    let mut out: Vec<Found> = Vec::new();
    let mut wanted = wanted.iter().copied().peekable();
    let mut below = 0u64;
    for (b, &c) in counts.iter().enumerate() {
        let c = u64::from(c);
        while let Some(&(i, r)) = wanted.peek() {
            if r >= below + c {
                break;
            }
            let child = (prefix << bits) | b as u64;
            match out.last_mut() {
                Some(last) if last.prefix == child => last.wanted.push((i, r - below)),
                _ => out.push(Found {
                    prefix: child,
                    count: c,
                    wanted: vec![(i, r - below)],
                }),
            }
            wanted.next();
        }
        below += c;
        if wanted.peek().is_none() {
            break;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::{quantiles_in_place, Rng};

    const LEVELS: [f64; 6] = [0.0, 0.01, 0.5, 0.9, 0.99, 1.0];

    /// Reads `values` until done; returns the quantiles and the reads taken.
    fn select(values: &[f64], levels: &[f64], held_max: usize) -> (Vec<Option<f64>>, usize) {
        let mut q = Quantiles::new(levels, held_max);
        let mut reads = 0;
        while !q.done() {
            // Every read in another order: the result must not depend on it.
            let rotate = reads * 7 % values.len().max(1);
            for &x in values[rotate..].iter().chain(&values[..rotate]) {
                q.push(x);
            }
            q.end_read();
            reads += 1;
            assert!(reads <= 6, "no more than 6 reads");
        }
        (q.values(), reads)
    }

    fn reference(values: &[f64], levels: &[f64]) -> Vec<Option<f64>> {
        quantiles_in_place(&mut values.to_vec(), levels)
    }

    fn same(a: &[Option<f64>], b: &[Option<f64>]) -> bool {
        a.len() == b.len()
            && a.iter().zip(b).all(|(x, y)| match (x, y) {
                (Some(x), Some(y)) => x.to_bits() == y.to_bits(),
                (x, y) => x == y,
            })
    }

    #[test]
    fn the_order_key_orders_as_total_cmp() {
        let mut xs = vec![
            -f64::INFINITY,
            -1e300,
            -1.0,
            -0.0,
            0.0,
            1e-310,
            0.5,
            1.0,
            f64::INFINITY,
            f64::NAN,
            -f64::NAN,
        ];
        xs.sort_by(f64::total_cmp);
        for w in xs.windows(2) {
            assert!(key(w[0]) < key(w[1]), "{} {}", w[0], w[1]);
        }
        for x in xs {
            assert_eq!(unkey(key(x)).to_bits(), x.to_bits());
        }
    }

    #[test]
    fn matches_selection_over_all_values_bit_for_bit() {
        let mut rng = Rng::new(11);
        let levels: Vec<f64> = (0..=100).map(|i| i as f64 / 100.0).collect();
        for (n, held_max) in [
            (1, 4),
            (2, 1),
            (57, 3),
            (1000, 16),
            (5000, 4999),
            (20000, HELD_MAX),
        ] {
            // Latency-like values: most within one power of two, a tail.
            let values: Vec<f64> = (0..n)
                .map(|_| {
                    0.05 + 0.01 * rng.next_f64() + if rng.next_f64() < 0.01 { 3.0 } else { 0.0 }
                })
                .collect();
            let (got, reads) = select(&values, &levels, held_max);
            assert!(
                same(&got, &reference(&values, &levels)),
                "n {n} held {held_max}"
            );
            // Held whole: one read; counted: at least two.
            assert_eq!(
                reads == 1,
                n <= held_max,
                "n {n} held {held_max}: {reads} reads"
            );
        }
    }

    #[test]
    fn ties_negatives_nan_and_infinities_are_ordered_as_total_cmp() {
        let mut rng = Rng::new(3);
        let mut values: Vec<f64> = (0..3000)
            .map(|_| (rng.next_f64() * 10.0).floor() - 5.0)
            .collect();
        values.extend([f64::NAN, f64::INFINITY, -f64::INFINITY, -0.0, 0.0, 1e-310]);
        for held_max in [1, 7, 100, HELD_MAX] {
            let (got, _) = select(&values, &LEVELS, held_max);
            assert!(same(&got, &reference(&values, &LEVELS)), "held {held_max}");
        }
    }

    #[test]
    fn a_bucket_too_large_to_hold_is_narrowed_by_further_reads() {
        // 10,000 values a few ulps apart: one first-read bucket.
        let values: Vec<f64> = (0..10_000)
            .map(|i| f64::from_bits(0.1f64.to_bits() + (i * 7919) % 10_000))
            .collect();
        let mut q = Quantiles::new(&LEVELS, 100);
        for &x in &values {
            q.push(x);
        }
        q.end_read();
        assert_eq!(q.open_buckets(), 1, "all in one bucket");
        let (got, reads) = select(&values, &LEVELS, 100);
        assert!(reads > 2, "{reads} reads");
        assert!(same(&got, &reference(&values, &LEVELS)));
        // Every value equal: settled by the key's bits alone, nothing held.
        let (got, _) = select(&[0.25; 5000], &LEVELS, 10);
        assert!(same(&got, &reference(&[0.25; 5000], &LEVELS)));
    }

    /// Latency-like values over a few octaves (most near 20 ms, a tail).
    fn latencies(rng: &mut Rng, n: usize) -> Vec<f64> {
        (0..n)
            .map(|_| 0.02 * (1.0 + 2.0 * rng.next_f64()).powi(3))
            .collect()
    }

    /// A sequence whose beginning looks like the whole is done in one read
    /// however long: the first held values guess where each level lies,
    /// and the values of those buckets are held through the read.
    #[test]
    fn a_long_sequence_like_its_beginning_is_done_in_one_read() {
        let mut rng = Rng::new(5);
        let levels = [0.5, 0.9, 0.99];
        let values = latencies(&mut rng, 30_000);
        let (got, reads) = select(&values, &levels, 5000);
        assert!(same(&got, &reference(&values, &levels)));
        assert_eq!(reads, 1);
        // The single level 0 and 1 too (the smallest and largest value).
        let (got, _) = select(&values, &[0.0, 1.0], 5000);
        assert!(same(&got, &reference(&values, &[0.0, 1.0])));
    }

    /// Where the guess misses (values that drift from their beginning) the
    /// missed ranks are read again, and the result is the same; a guess
    /// whose buckets would outgrow what is held is dropped the same way.
    #[test]
    fn a_guess_that_misses_or_outgrows_reads_again_with_the_same_result() {
        let mut rng = Rng::new(9);
        let levels = [0.5, 0.995];
        // Rising: the first values are the smallest, nothing guessed lands.
        let mut rising = latencies(&mut rng, 30_000);
        rising.sort_by(f64::total_cmp);
        let mut q = Quantiles::new(&levels, 5000);
        rising.iter().for_each(|&x| q.push(x));
        q.end_read();
        assert_eq!(q.open_buckets(), 2, "both levels read again");
        let (got, reads) = select(&rising, &levels, 5000);
        assert_eq!(reads, 2);
        assert!(same(&got, &reference(&rising, &levels)));
        // A tail that comes only at the end (the last 1%): the median
        // lands, p99.5 does not.
        let mut tail = latencies(&mut rng, 30_000);
        tail[29_700..].iter_mut().for_each(|x| *x += 10.0);
        let mut q = Quantiles::new(&levels, 5000);
        tail.iter().for_each(|&x| q.push(x));
        q.end_read();
        assert_eq!(q.open_buckets(), 1, "p99.5 read again");
        let (got, _) = select(&tail, &levels, 5000);
        assert!(same(&got, &reference(&tail, &levels)));
        // Ten times longer than what the guessed buckets can hold.
        let long = latencies(&mut rng, 300_000);
        let (got, reads) = select(&long, &levels, 5000);
        assert!(reads >= 2, "{reads} reads");
        assert!(same(&got, &reference(&long, &levels)));
    }

    /// A guess over values with ties, negatives, zeros of both signs,
    /// infinities and NaN, at levels at and next to the ends, gives what
    /// selection over all of them gives, in one read or more.
    #[test]
    fn a_guess_orders_special_values_as_total_cmp() {
        let mut rng = Rng::new(17);
        let mut values: Vec<f64> = (0..30_000)
            .map(|_| (rng.next_f64() * 200.0).floor() / 10.0 - 10.0)
            .collect();
        for (i, x) in [
            f64::NAN,
            f64::INFINITY,
            -f64::INFINITY,
            -0.0,
            0.0,
            -f64::NAN,
        ]
        .into_iter()
        .enumerate()
        {
            values[i * 4999] = x;
            values[29_999 - i] = x;
        }
        for held_max in [4096, 5000, 20_000] {
            let (got, _) = select(&values, &LEVELS, held_max);
            assert!(same(&got, &reference(&values, &LEVELS)), "held {held_max}");
        }
    }

    #[test]
    fn empty_and_bad_levels_give_none() {
        let (got, reads) = select(&[], &[0.5, 2.0], 10);
        assert_eq!(got, vec![None, None]);
        assert_eq!(reads, 1);
        let (got, _) = select(&[1.0, 2.0], &[0.5, -0.1], 10);
        assert_eq!(got, vec![Some(1.5), None]);
    }
}
