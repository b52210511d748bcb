//! The fingerprint of an answer: an XXH3-64 hash of the answer's text and,
//! apart from it, of the reasoning text, and the answer's shape
//! ([`AnswerShape`]) when the stream ends.
//!
//! The answer's text is gathered in [`Outcome::text`] as the stream is
//! parsed (the runner then decides whether to keep it) and hashed once, in
//! one call over the whole text, when the stream ends: measured with
//! `qexp bench`, a streaming hasher updated on every delta (a few bytes
//! each) cost more CPU per token and some 600 bytes of state per stream.
//! The reasoning text is not kept, so it is hashed as it streams, by a
//! hasher made at its first delta.

use crate::outcome::Outcome;
use qexp_types::AnswerShape;
use xxhash_rust::xxh3::Xxh3;

/// The reasoning's running hash, when reasoning came.
#[derive(Clone, Default)]
pub(crate) struct AnswerDigest {
    /// Made at the first reasoning text (boxed: most streams have none).
    reasoning: Option<Box<Xxh3>>,
}

impl AnswerDigest {
    /// Adds a delta's reasoning text.
    pub(crate) fn reasoning(&mut self, text: &str) {
        self.reasoning
            .get_or_insert_with(|| Box::new(Xxh3::new()))
            .update(text.as_bytes());
    }

    /// Writes the hashes, and the shape of the answer text, into `out`;
    /// a request that got no response has neither.
    pub(crate) fn finish(&self, out: &mut Outcome) {
        let text = out.text.as_deref().filter(|_| out.headers_s.is_some());
        out.answer_hash = text.map(answer_hash);
        out.answer_shape = text.map(AnswerShape::of);
        out.reasoning_hash = self.reasoning.as_deref().map(Xxh3::digest);
    }
}

/// XXH3-64 (seed 0) of a whole text: an answer's `answer_hash`, and what
/// the reasoning's running hash gives the same text streamed in pieces.
pub fn answer_hash(text: &str) -> u64 {
    xxhash_rust::xxh3::xxh3_64(text.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pieces_hash_as_the_whole() {
        let mut d = AnswerDigest::default();
        for piece in ["The cap", "ital of Fr", "ance is Paris."] {
            d.reasoning(piece);
        }
        let mut out = Outcome {
            text: Some("The capital of France is Paris.".into()),
            headers_s: Some(0.01),
            ..Outcome::default()
        };
        d.finish(&mut out);
        assert_eq!(
            out.reasoning_hash,
            Some(answer_hash("The capital of France is Paris.")),
            "streamed in pieces, hashed as the whole"
        );
        assert_eq!(
            out.answer_hash,
            Some(answer_hash("The capital of France is Paris."))
        );
        assert_eq!(out.answer_shape.map(|s| s.chars), Some(31));
        let mut unanswered = Outcome {
            text: Some(String::new()),
            ..Outcome::default()
        };
        AnswerDigest::default().finish(&mut unanswered);
        assert_eq!(unanswered.reasoning_hash, None, "no reasoning, no hash");
        assert_eq!(unanswered.answer_hash, None, "no response, no answer");
    }

    #[test]
    fn the_hash_is_xxh3_64() {
        // XXH3-64 with seed 0, as the Python `xxhash` package's
        // `xxh3_64_intdigest` gives it (the reference C library): stored
        // hashes must never change meaning.
        assert_eq!(answer_hash(""), 0x2D06_8005_38D3_94C2);
        assert_eq!(answer_hash("a"), 0xE6C6_32B6_1E96_4E1F);
        assert_eq!(
            answer_hash("The capital of France is Paris."),
            0xD1DC_F9A9_0B81_91E4
        );
        let mut d = AnswerDigest::default();
        d.reasoning("");
        let mut out = Outcome::default();
        d.finish(&mut out);
        assert_eq!(out.reasoning_hash, Some(answer_hash("")));
        assert_eq!(out.answer_shape, None, "no text kept, no shape");
    }
}
