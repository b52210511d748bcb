//! The answer of a request that does not stream (`api = "embeddings"` or
//! `"rerank"`): one JSON document, read whole. Its E2E is sent → the last
//! byte of the body; it has no first token, no chunks and no generated
//! text, so TTFT, TPOT and ITL stay empty (never E2E under another name).

use crate::outcome::{parse_usage, ErrorClass, Outcome, RequestError};
use qexp_plan::ApiKind;
use serde_json::Value;

/// What a non-streamed answer must hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Expected {
    /// The endpoint asked.
    pub api: ApiKind,
    /// Inputs (embeddings) or documents (rerank) sent.
    pub batch: u32,
}

/// Whether a 2xx answer's content type is JSON; the error when not.
pub(crate) fn not_json(
    content_type: &str,
    redact: &crate::secret::Redactor,
) -> Option<RequestError> {
    let ok = content_type
        .to_ascii_lowercase()
        .starts_with("application/json");
    (!ok).then(|| RequestError {
        class: ErrorClass::ContentType,
        message: format!("the answer is `{}`, not JSON", redact.excerpt(content_type)),
    })
}

/// Reads the whole body into `out`: usage, and the check that it holds one
/// embedding per input (one score per document), each well formed.
pub(crate) fn settle(
    out: &mut Outcome,
    body: &[u8],
    expected: Expected,
) -> Result<(), RequestError> {
    let protocol = |message: String| RequestError {
        class: ErrorClass::Protocol,
        message,
    };
    let v: Value = serde_json::from_slice(body)
        .map_err(|e| protocol(format!("the {} answer is not JSON: {e}", expected.api)))?;
    if let Some(u) = v.get("usage") {
        out.usage = parse_usage(u);
    }
    let (key, field) = match expected.api {
        ApiKind::Rerank => ("results", "relevance_score"),
        _ => ("data", "embedding"),
    };
    let items = v
        .get(key)
        .and_then(Value::as_array)
        .ok_or_else(|| protocol(format!("the {} answer has no `{key}` list", expected.api)))?;
    if items.len() != expected.batch as usize {
        return Err(protocol(format!(
            "the {} answer has {} entries in `{key}` for {} sent",
            expected.api,
            items.len(),
            expected.batch
        )));
    }
    let well_formed = |item: &Value| match item.get(field) {
        Some(Value::Array(e)) => !e.is_empty() && e.iter().all(Value::is_number),
        Some(Value::String(e)) => !e.is_empty(),
        Some(Value::Number(_)) => true,
        _ => false,
    };
    if let Some(i) = items.iter().position(|item| !well_formed(item)) {
        return Err(protocol(format!(
            "entry {i} of the {} answer's `{key}` has no {field}",
            expected.api
        )));
    }
    out.output_chars = body.len() as u64;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn expect(api: ApiKind, batch: u32) -> Expected {
        Expected { api, batch }
    }

    #[test]
    fn an_embeddings_answer_gives_its_usage_and_must_hold_every_input() {
        let mut out = Outcome::default();
        let body = br#"{"data":[{"embedding":[0.1,0.2]},{"embedding":[0.3,0.4]}],"usage":{"prompt_tokens":12,"total_tokens":12}}"#;
        settle(&mut out, body, expect(ApiKind::Embeddings, 2)).unwrap();
        assert_eq!(out.usage.prompt_tokens, Some(12));
        assert_eq!(out.usage.completion_tokens, None);
        let e = settle(&mut out, body, expect(ApiKind::Embeddings, 3)).unwrap_err();
        assert_eq!(e.class, ErrorClass::Protocol);
        assert_eq!(
            e.message,
            "the embeddings answer has 2 entries in `data` for 3 sent"
        );
        let empty = br#"{"data":[{"embedding":[]}]}"#;
        let e = settle(&mut out, empty, expect(ApiKind::Embeddings, 1)).unwrap_err();
        assert_eq!(
            e.message,
            "entry 0 of the embeddings answer's `data` has no embedding"
        );
        let e = settle(&mut out, b"<html>", expect(ApiKind::Embeddings, 1)).unwrap_err();
        assert!(
            e.message.starts_with("the embeddings answer is not JSON"),
            "{e:?}"
        );
    }

    #[test]
    fn a_rerank_answer_scores_every_document() {
        let mut out = Outcome::default();
        let body = br#"{"results":[{"index":1,"relevance_score":0.9},{"index":0,"relevance_score":-1.5}],"usage":{"prompt_tokens":30}}"#;
        settle(&mut out, body, expect(ApiKind::Rerank, 2)).unwrap();
        assert_eq!(out.usage.prompt_tokens, Some(30));
        let e = settle(&mut out, br#"{"error":"no"}"#, expect(ApiKind::Rerank, 2)).unwrap_err();
        assert_eq!(e.message, "the rerank answer has no `results` list");
    }
}
