//! The fingerprint of an answer, taken as the stream is parsed: an XXH3-64
//! hash of the answer's text and, apart from it, of the reasoning text, and
//! the answer's shape ([`AnswerShape`]) when the stream ends. The text
//! itself stays in [`Outcome::text`] until the runner decides whether to
//! keep it.

use crate::outcome::Outcome;
use qexp_types::AnswerShape;
use xxhash_rust::xxh3::Xxh3;

/// The running hashes of one stream.
#[derive(Clone, Default)]
pub(crate) struct AnswerDigest {
    answer: Xxh3,
    /// Made at the first reasoning text: a stream without any has none.
    reasoning: Option<Xxh3>,
}

impl AnswerDigest {
    /// Adds a delta's answer text.
    pub(crate) fn answer(&mut self, text: &str) {
        self.answer.update(text.as_bytes());
    }

    /// Adds a delta's reasoning text.
    pub(crate) fn reasoning(&mut self, text: &str) {
        self.reasoning
            .get_or_insert_with(Xxh3::new)
            .update(text.as_bytes());
    }

    /// Writes the hashes, and the shape of the answer text, into `out`.
    pub(crate) fn finish(&self, out: &mut Outcome) {
        out.answer_hash = Some(self.answer.digest());
        out.reasoning_hash = self.reasoning.as_ref().map(Xxh3::digest);
        out.answer_shape = out.text.as_deref().map(AnswerShape::of);
    }
}

/// XXH3-64 of a whole text: what a stream's digest gives the same text
/// streamed in any pieces.
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
            d.answer(piece);
        }
        let mut out = Outcome {
            text: Some("The capital of France is Paris.".into()),
            ..Outcome::default()
        };
        d.finish(&mut out);
        assert_eq!(
            out.answer_hash,
            Some(answer_hash("The capital of France is Paris."))
        );
        assert_eq!(out.reasoning_hash, None, "no reasoning, no hash");
        assert_eq!(out.answer_shape.map(|s| s.chars), Some(31));
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
