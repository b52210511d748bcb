//! The simulated prefix cache: whole blocks of prompt tokens, each keyed by a
//! hash chained from the first token (as vLLM's automatic prefix caching and
//! SGLang's radix cache key them), evicted least recently used once the
//! cache holds its capacity in tokens.
//!
//! A lookup finds the longest run of cached blocks from the start of the
//! prompt; the engine then prefills only the rest, and stores the prompt's
//! blocks once its prefill is done. Like vLLM, at least one prompt token is
//! always computed, so a prompt found whole is served minus its last block.

use std::collections::{BTreeMap, HashMap};
use std::hash::{DefaultHasher, Hash, Hasher};

/// Prefix-cache state of one simulated server, with vLLM's two counters.
#[derive(Debug)]
pub(crate) struct PrefixCache {
    /// Tokens per block; only whole blocks are cached.
    block: usize,
    /// Blocks the cache holds at most.
    capacity: usize,
    /// Block hash → the tick it was last used.
    used: HashMap<u64, u64>,
    /// Tick → block hash: the eviction order (oldest first).
    by_age: BTreeMap<u64, u64>,
    tick: u64,
    counters: CacheCounters,
}

/// Running totals in tokens, named as vLLM exports them on `/metrics`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct CacheCounters {
    /// Prompt tokens looked up (`vllm:prefix_cache_queries_total`).
    pub queries: u64,
    /// Prompt tokens found cached (`vllm:prefix_cache_hits_total`).
    pub hits: u64,
}

impl PrefixCache {
    /// A cache of `capacity_tokens` (rounded down to whole blocks of `block_tokens`).
    pub(crate) fn new(capacity_tokens: u32, block_tokens: u32) -> PrefixCache {
        let block = block_tokens.max(1) as usize;
        PrefixCache {
            block,
            capacity: capacity_tokens as usize / block,
            used: HashMap::new(),
            by_age: BTreeMap::new(),
            tick: 0,
            counters: CacheCounters::default(),
        }
    }

    /// Tokens at the start of `ids` already cached; marks them used and counts the query.
    pub(crate) fn lookup(&mut self, ids: &[u32]) -> u32 {
        // At least one token is computed: a prompt found whole gives back its last block.
        let limit = ids.len().saturating_sub(1) / self.block;
        let mut found = 0;
        for hash in self.chain(ids).take(limit) {
            if !self.used.contains_key(&hash) {
                break;
            }
            self.touch(hash);
            found += 1;
        }
        let cached = found * self.block;
        self.counters.queries += ids.len() as u64;
        self.counters.hits += cached as u64;
        u32::try_from(cached).unwrap_or(u32::MAX)
    }

    /// Stores every whole block of `ids`, evicting the least recently used beyond capacity.
    pub(crate) fn insert(&mut self, ids: &[u32]) {
        if self.capacity == 0 {
            return;
        }
        let hashes: Vec<u64> = self.chain(ids).collect();
        for hash in hashes {
            self.touch(hash);
        }
        while self.used.len() > self.capacity {
            let Some((_, oldest)) = self.by_age.pop_first() else {
                break;
            };
            self.used.remove(&oldest);
        }
    }

    /// The totals so far.
    pub(crate) fn counters(&self) -> CacheCounters {
        self.counters
    }

    /// One hash per whole block of `ids`, each covering every token before it too.
    fn chain<'a>(&self, ids: &'a [u32]) -> impl Iterator<Item = u64> + 'a {
        ids.chunks_exact(self.block).scan(0u64, |prev, block| {
            let mut h = DefaultHasher::new();
            prev.hash(&mut h);
            block.hash(&mut h);
            *prev = h.finish();
            Some(*prev)
        })
    }

    fn touch(&mut self, hash: u64) {
        self.tick += 1;
        if let Some(old) = self.used.insert(hash, self.tick) {
            self.by_age.remove(&old);
        }
        self.by_age.insert(self.tick, hash);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ids(start: u32, n: u32) -> Vec<u32> {
        (start..start + n).collect()
    }

    #[test]
    fn a_repeated_prompt_hits_all_but_its_last_block() {
        let mut c = PrefixCache::new(1024, 16);
        let p = ids(0, 100); // 6 whole blocks + 4 tokens
        assert_eq!(c.lookup(&p), 0);
        c.insert(&p);
        assert_eq!(c.lookup(&p), 96);
        let whole = ids(0, 96);
        assert_eq!(c.lookup(&whole), 80, "one token is always computed");
        assert_eq!(
            c.counters(),
            CacheCounters {
                queries: 296,
                hits: 176
            }
        );
    }

    #[test]
    fn only_the_shared_prefix_hits() {
        let mut c = PrefixCache::new(1024, 16);
        c.insert(&ids(0, 64));
        let mut other = ids(0, 40);
        other.extend(ids(1000, 60)); // diverges inside the third block
        assert_eq!(c.lookup(&other), 32);
        let mut first_differs = ids(0, 64);
        first_differs[0] = 9999;
        assert_eq!(
            c.lookup(&first_differs),
            0,
            "hashes chain from the first token"
        );
    }

    #[test]
    fn least_recently_used_blocks_go_first() {
        let mut c = PrefixCache::new(64, 16); // 4 blocks
        c.insert(&ids(0, 32)); // A: 2 blocks
        c.insert(&ids(100, 32)); // B: 2 blocks
        assert_eq!(c.lookup(&ids(0, 33)), 32, "A fits");
        c.insert(&ids(200, 32)); // C evicts B, the least recently used
        assert_eq!(c.lookup(&ids(100, 33)), 0);
        assert_eq!(c.lookup(&ids(0, 33)), 32);
        assert_eq!(c.lookup(&ids(200, 33)), 32);
    }

    #[test]
    fn zero_capacity_caches_nothing_but_counts_queries() {
        let mut c = PrefixCache::new(0, 16);
        c.insert(&ids(0, 64));
        assert_eq!(c.lookup(&ids(0, 64)), 0);
        assert_eq!(c.counters().queries, 64);
    }
}
