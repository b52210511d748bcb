//! Prompts: a unique nonce first (16 short words), then a deterministic filler of common
//! words, then a few pad words of one token each. The nonce at the very start
//! breaks every prefix cache (their hashes chain from the first token), so the
//! filler can be the same for all requests and the prompt's token count is
//! stable and calibratable. Filler words can take several tokens (`service` is
//! five on the tiny test model's 2,048-token vocabulary), so a count of words
//! alone may step over the planned length; the pad words close that gap token
//! by token.

use rand::{rngs::StdRng, Rng, SeedableRng};
use serde::Serialize;

const WORDS: &[&str] = &[
    "the", "of", "and", "to", "in", "is", "that", "for", "it", "as", "was", "with", "be", "by",
    "on", "not", "he", "this", "are", "or", "his", "from", "at", "which", "but", "have", "an",
    "had", "they", "you", "were", "their", "one", "all", "we", "can", "her", "has", "there",
    "been", "if", "more", "when", "will", "would", "who", "so", "no", "time", "people", "year",
    "way", "day", "man", "thing", "woman", "life", "child", "world", "school", "state", "family",
    "student", "group", "country", "problem", "hand", "part", "place", "case", "week", "company",
    "system", "program", "question", "work", "number", "night", "point", "home", "water", "room",
    "mother", "area", "money", "story", "fact", "month", "lot", "right", "study", "book", "eye",
    "job", "word", "business", "issue", "side", "kind", "head", "house", "service", "friend",
];

/// Where a prompt is cut: the first `units` filler words, then `pad` pad
/// words (the nonce's words, one token each on common vocabularies).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Cut {
    /// Filler words.
    pub units: usize,
    /// Pad words after them.
    pub pad: usize,
}

impl Cut {
    /// `units` filler words and no pad.
    pub fn words(units: usize) -> Cut {
        Cut { units, pad: 0 }
    }
}

/// A long deterministic word sequence that prompts are cut from.
#[derive(Debug, Clone)]
pub struct Filler {
    text: String,
    /// Byte offset just after each word.
    ends: Vec<usize>,
}

impl Filler {
    /// `words` seeded random common words.
    pub fn new(seed: u64, words: usize) -> Filler {
        let mut rng = StdRng::seed_from_u64(seed ^ 0x7165_7870_6669_6c6c);
        let mut text = String::with_capacity(words * 6);
        let mut ends = Vec::with_capacity(words);
        for i in 0..words {
            if i > 0 {
                text.push(' ');
            }
            text.push_str(WORDS[rng.random_range(0..WORDS.len())]);
            ends.push(text.len());
        }
        Filler { text, ends }
    }

    /// How many words the filler holds.
    pub fn len(&self) -> usize {
        self.ends.len()
    }

    /// True when the filler holds no words.
    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }

    /// The first `units` words (all of them if `units` is larger).
    pub fn take(&self, units: usize) -> &str {
        match units.min(self.ends.len()) {
            0 => "",
            n => &self.text[..self.ends[n - 1]],
        }
    }

    /// The prompt for one request: nonce, then the cut's filler and pad
    /// words, one space between words and none at the end (a trailing space
    /// is a token of its own on byte-level vocabularies).
    pub fn prompt(&self, nonce: &str, cut: Cut) -> String {
        let body = self.take(cut.units);
        let mut p = String::with_capacity(nonce.len() + 1 + body.len() + 4 * cut.pad);
        p.push_str(nonce);
        for word in std::iter::once(body)
            .filter(|b| !b.is_empty())
            .chain(NONCE_WORDS.iter().cycle().take(cut.pad).copied())
        {
            p.push(' ');
            p.push_str(word);
        }
        p
    }
}

/// Words a nonce is spelled with: 16 (4 bits each), every one a single token
/// with or without a leading space in common BPE vocabularies (GPT-2, Llama,
/// Qwen, Mistral). Hex digits are not: a 16-hex-digit nonce takes 6 to 12
/// tokens depending on its digits, which moved real servers' prompt counts
/// by ±3% around the calibrated length.
const NONCE_WORDS: [&str; 16] = [
    "the", "of", "and", "to", "in", "is", "that", "for", "it", "as", "was", "with", "be", "by",
    "on", "not",
];

/// A nonce unique per request: 16 words spelling 64 hashed bits, so its token
/// count is the same for every request (16 on common tokenizers).
pub fn nonce_for(seed: u64, run_salt: u64, trial: u32, point: u32, index: u32) -> String {
    // SplitMix64 over the identifying tuple: cheap, stable, well mixed.
    let mut x = seed
        ^ run_salt.rotate_left(17)
        ^ (u64::from(trial) << 48)
        ^ (u64::from(point) << 24)
        ^ u64::from(index);
    x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    x ^= x >> 31;
    let words: Vec<&str> = (0..16)
        .map(|i| NONCE_WORDS[((x >> (4 * i)) & 0xf) as usize])
        .collect();
    words.join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn filler_is_deterministic_and_cut_by_words() {
        let a = Filler::new(3, 100);
        let b = Filler::new(3, 100);
        assert_eq!(a.take(100), b.take(100));
        assert_eq!(a.take(10).split(' ').count(), 10);
        assert_eq!(a.take(0), "");
        assert_eq!(a.take(1000), a.take(100));
        assert_ne!(Filler::new(4, 100).take(100), a.take(100));
    }

    #[test]
    fn nonces_differ_per_request_and_keep_their_shape() {
        let mut seen = std::collections::HashSet::new();
        for t in 0..3 {
            for p in 0..5 {
                for i in 0..50 {
                    let n = nonce_for(1, 2, t, p, i);
                    assert_eq!(n.split(' ').count(), 16);
                    assert!(n.split(' ').all(|w| NONCE_WORDS.contains(&w)));
                    assert!(seen.insert(n));
                }
            }
        }
    }

    #[test]
    fn prompt_starts_with_the_nonce() {
        let f = Filler::new(1, 10);
        let p = f.prompt("[x]", Cut::words(3));
        assert!(p.starts_with("[x] "));
        assert_eq!(p.split(' ').count(), 4);
    }

    #[test]
    fn pad_words_follow_the_filler_and_nothing_trails() {
        let f = Filler::new(1, 10);
        assert_eq!(f.prompt("[x]", Cut::default()), "[x]");
        let padded = f.prompt("[x]", Cut { units: 3, pad: 18 });
        assert_eq!(
            padded,
            format!("{} {}", f.prompt("[x]", Cut::words(3)), {
                let mut w = NONCE_WORDS.to_vec();
                w.extend_from_slice(&NONCE_WORDS[..2]);
                w.join(" ")
            })
        );
        assert_eq!(f.prompt("[x]", Cut { units: 0, pad: 2 }), "[x] the of");
    }
}
