//! Deterministic pseudo-prose: the words a simulated model answers with.
//!
//! A [`Prose`] is an endless stream of words, one per token, each a pure
//! function of the stream's seed and the word's index: any stretch of it can
//! be written on its own (a streamed chunk is), and every process writes the
//! same stream for the same seed. Words are drawn from [`WORDS`] by a
//! splitmix64 hash of (seed, index), even words from its first half and odd
//! ones from its second, so that no word follows itself and the text has no
//! repeated stretch a loop detector would flag.
//! Sentences of 4 to 19 words start with a capital and end with a period;
//! their ends are drawn per block of [`BLOCK`] words, so that a word's place
//! in its sentence costs a few hashes to find. No word holds a digit.

/// Plain English words, lowercase ASCII letters only.
// One line per word would make this file five times longer.
#[rustfmt::skip]
const WORDS: &[&str] = &[
    "the", "a", "an", "this", "that", "these", "those", "each", "every", "some", "many", "few",
    "most", "other", "same", "new", "old", "small", "large", "long", "short", "early", "late",
    "good", "clear", "simple", "plain", "quiet", "busy", "steady", "quick", "slow", "bright",
    "dark", "warm", "cold", "open", "close", "high", "low", "near", "far", "whole", "common",
    "careful", "useful", "certain", "likely", "real", "main", "first", "last", "next", "final",
    "river", "mountain", "valley", "forest", "garden", "field", "village", "city", "harbour",
    "market", "bridge", "road", "path", "house", "window", "door", "table", "chair", "kitchen",
    "library", "school", "office", "station", "train", "boat", "ship", "letter", "book", "page",
    "story", "song", "picture", "map", "plan", "idea", "question", "answer", "reason", "method",
    "system", "process", "result", "pattern", "detail", "record", "report", "measure", "signal",
    "engine", "machine", "tool", "wheel", "stone", "water", "light", "shadow", "wind", "rain",
    "snow", "cloud", "morning", "evening", "night", "season", "summer", "winter", "spring",
    "autumn", "year", "week", "hour", "moment", "people", "person", "teacher", "student", "farmer",
    "worker", "writer", "reader", "traveller", "neighbour", "friend", "family", "child", "group",
    "team", "crowd", "voice", "word", "name", "place", "world", "country", "region", "coast",
    "island", "lake", "sea", "sky", "earth", "ground", "hill", "tree", "flower", "leaf", "seed",
    "fruit", "bread", "coffee", "tea", "salt", "paper", "glass", "metal", "wood", "cloth", "thread",
    "rope", "box", "basket", "lamp", "clock", "bell", "lantern", "meadow", "orchard", "canal",
    "tower", "ladder", "journey", "harvest", "compass", "walks", "runs", "moves", "turns", "holds",
    "keeps", "brings", "carries", "finds", "makes", "takes", "gives", "shows", "tells", "asks",
    "builds", "opens", "closes", "follows", "leads", "reaches", "crosses", "enters", "leaves",
    "returns", "waits", "watches", "hears", "sees", "knows", "thinks", "learns", "writes", "reads",
    "counts", "checks", "sorts", "joins", "grows", "falls", "rises", "stays", "changes", "remains",
    "seems", "becomes", "helps", "needs", "wants", "likes", "uses", "tries", "starts", "ends",
    "covers", "fills", "marks", "in", "on", "at", "by", "with", "from", "into", "over", "under",
    "across", "through", "behind", "beside", "between", "along", "around", "before", "after",
    "during", "without", "and", "but", "or", "so", "yet", "because", "while", "where", "when",
    "although", "then", "often", "always", "never", "sometimes", "again", "still", "already",
    "soon", "here", "there", "together", "slowly", "quickly", "gently", "nearly", "almost",
    "rather", "quite", "very", "also", "only", "even", "just", "perhaps", "indeed", "mostly",
    "finally",
];

/// Words per block: a block's sentence ends are drawn together, and the
/// last word of a block ends a sentence. At most 64 (one bit per word).
const BLOCK: u32 = 48;
/// Fewest words of a sentence drawn within a block (the block's last
/// sentence takes up what is left: 4 to 19 words).
const SENTENCE_MIN: u64 = 4;
/// How many lengths a drawn sentence may have: 4 to 16 words.
const SENTENCE_SPAN: u64 = 13;

/// splitmix64's output function (Steele, Lea and Flood, OOPSLA 2014): a
/// cheap bijective mix of 64 bits, good enough to draw words and shares.
pub(crate) fn mix(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// One stream of pseudo-prose.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Prose {
    seed: u64,
}

impl Prose {
    /// The stream drawn from `seed`.
    pub(crate) fn new(seed: u64) -> Prose {
        Prose { seed: mix(seed) }
    }

    /// Appends words `start..start + n`, each with a leading space.
    pub(crate) fn push(&self, start: u32, n: u32, out: &mut String) {
        let mut block = u32::MAX;
        let mut ends = 0u64;
        for i in start..start.saturating_add(n) {
            if i / BLOCK != block {
                block = i / BLOCK;
                ends = self.sentence_ends(block);
            }
            let pos = i % BLOCK;
            let first = pos == 0 || (ends >> (pos - 1)) & 1 == 1;
            let word = WORDS[self.word(i)];
            out.push(' ');
            match (first, word.split_at_checked(1)) {
                (true, Some((head, tail))) => {
                    out.push_str(&head.to_ascii_uppercase());
                    out.push_str(tail);
                }
                _ => out.push_str(word),
            }
            if (ends >> pos) & 1 == 1 {
                out.push('.');
            }
        }
    }

    /// Index into [`WORDS`] of word `i`: from the first half for an even
    /// `i`, the second for an odd one (neighbours never match).
    fn word(&self, i: u32) -> usize {
        let half = WORDS.len() / 2;
        let draw = mix(self.seed ^ mix(u64::from(i))) % half as u64;
        (i % 2) as usize * half + draw as usize
    }

    /// Bit `p` set: the word at position `p` of block `block` ends a sentence.
    fn sentence_ends(&self, block: u32) -> u64 {
        let mut state = mix(self.seed.rotate_left(17) ^ u64::from(block));
        let mut ends = 1u64 << (BLOCK - 1);
        let mut pos = 0u64;
        loop {
            state = mix(state);
            pos += SENTENCE_MIN + state % SENTENCE_SPAN;
            // Too little left for a sentence of its own: the block's last
            // sentence takes it.
            if pos + SENTENCE_MIN > u64::from(BLOCK) {
                return ends;
            }
            ends |= 1 << (pos - 1);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(seed: u64, start: u32, n: u32) -> String {
        let mut out = String::new();
        Prose::new(seed).push(start, n, &mut out);
        out
    }

    #[test]
    fn vocabulary_is_plain_lowercase_words() {
        assert!(WORDS.len() >= 300, "{}", WORDS.len());
        let unique: std::collections::BTreeSet<_> = WORDS.iter().collect();
        assert_eq!(unique.len(), WORDS.len());
        for w in WORDS {
            assert!(
                !w.is_empty() && w.bytes().all(|b| b.is_ascii_lowercase()),
                "{w:?}"
            );
        }
    }

    #[test]
    fn chunks_write_the_same_text_as_the_whole() {
        let whole = text(7, 0, 500);
        for step in [1, 3, 4, 48, 49] {
            let mut parts = String::new();
            for s in (0..500).step_by(step as usize) {
                parts.push_str(&text(7, s, step.min(500 - s)));
            }
            assert_eq!(parts, whole, "chunks of {step}");
        }
        assert_eq!(text(7, 0, 0), "");
    }

    #[test]
    fn sentences_start_with_a_capital_and_end_with_a_period() {
        let t = text(3, 0, 2 * BLOCK);
        let words: Vec<&str> = t.split_whitespace().collect();
        assert_eq!(words.len(), 2 * BLOCK as usize);
        assert!(words[0].starts_with(|c: char| c.is_ascii_uppercase()));
        assert!(words[BLOCK as usize - 1].ends_with('.'));
        let mut len = 0;
        for pair in words.windows(2) {
            len += 1;
            let capital = pair[1].starts_with(|c: char| c.is_ascii_uppercase());
            assert_eq!(pair[0].ends_with('.'), capital, "{t}");
            if capital {
                assert!((4..=19).contains(&len), "a sentence of {len} words: {t}");
                len = 0;
            }
        }
        assert!(!t.bytes().any(|b| b.is_ascii_digit()));
    }

    #[test]
    fn no_word_follows_itself() {
        for seed in 0..50 {
            let t = text(seed, 0, 1000).to_ascii_lowercase();
            let words: Vec<&str> = t
                .split_whitespace()
                .map(|w| w.trim_end_matches('.'))
                .collect();
            assert!(words.windows(2).all(|p| p[0] != p[1]), "seed {seed}");
        }
    }
}
