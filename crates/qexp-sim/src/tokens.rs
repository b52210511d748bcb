//! The simulator's exact tokenizer: one whitespace-separated word = one token.
//! (What a completion's tokens say is `answer.rs`'s.)

/// Chat-template tokens added once per chat request (the assistant reply header).
pub const CHAT_PRIMER_TOKENS: u32 = 3;

/// Vocabulary size the fake token ids are drawn from (Qwen-sized).
const VOCAB: u32 = 151_936;
/// Id reported for every chat-template token (an `<|im_start|>`-like special).
const TEMPLATE_ID: u32 = VOCAB;

/// Stable fake ids for the words of `text` (FNV-1a of each word, modulo the vocabulary).
pub(crate) fn ids(text: &str, out: &mut Vec<u32>) {
    out.extend(text.split_whitespace().map(|word| {
        let hash = word.bytes().fold(0x811c_9dc5_u32, |h, b| {
            (h ^ u32::from(b)).wrapping_mul(0x0100_0193)
        });
        hash % VOCAB
    }));
}

/// Ids for an image sent as a data URL: one per `patch_px` × `patch_px`
/// patch, drawn from a hash of the URL (the same image, the same ids, so
/// the prefix cache finds it as it finds repeated words); None when the
/// URL is not an image.
pub(crate) fn image_ids(url: &str, patch_px: u32, out: &mut Vec<u32>) -> Option<()> {
    let image = qexp_types::image::from_data_url(url).ok()?;
    let n = qexp_types::image::patches(image.width, image.height, patch_px);
    let hash = url.bytes().fold(0x811c_9dc5_u32, |h, b| {
        (h ^ u32::from(b)).wrapping_mul(0x0100_0193)
    });
    out.extend((0..n).map(|i| hash.wrapping_add(i as u32).wrapping_mul(0x9e37_79b1) % VOCAB));
    Some(())
}

/// Ids for `n` chat-template tokens.
pub(crate) fn template_ids(n: u32, out: &mut Vec<u32>) {
    out.extend(std::iter::repeat_n(TEMPLATE_ID, n as usize));
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Number of tokens in `text`, as the server counts them.
    fn count(text: &str) -> u32 {
        let mut out = Vec::new();
        ids(text, &mut out);
        out.len() as u32
    }

    #[test]
    fn counts_whitespace_separated_words() {
        assert_eq!(count(""), 0);
        assert_eq!(count("   \n\t "), 0);
        assert_eq!(count("one"), 1);
        assert_eq!(count(" nonce-42:  hello\nworld\t! "), 4);
    }

    #[test]
    fn ids_are_stable_and_one_per_word() {
        let (mut a, mut b) = (Vec::new(), Vec::new());
        ids("a b a", &mut a);
        ids("a", &mut b);
        assert_eq!(a.len(), 3);
        assert_eq!(a[0], a[2]);
        assert_eq!(a[0], b[0]);
        assert!(a.iter().all(|&id| id < VOCAB));
        template_ids(2, &mut b);
        assert_eq!(b[1..], [TEMPLATE_ID, TEMPLATE_ID]);
    }
}
