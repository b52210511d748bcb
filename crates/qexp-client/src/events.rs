//! Reading the parsed events of a stream into an [`Outcome`]: content
//! chunks and their arrival times, usage, finish reason, `[DONE]`, and the
//! failures the events or the parser show.

use crate::classify::{error_text, excerpt};
use crate::outcome::{ErrorClass, Outcome, RequestError};
use crate::parse_usage;
use crate::sse::{SseEvent, SseParser};
use serde_json::Value;

/// Applies the events parsed from one read, or returns the failure they or
/// the parser show. An over-long line fails before its (cut) event is read
/// as JSON; the events before a line that is not UTF-8 still count.
pub(crate) fn read(
    parser: &SseParser,
    state: &mut StreamState,
    out: &mut Outcome,
    events: &mut Vec<SseEvent>,
    arrived: f64,
) -> Option<RequestError> {
    if parser.saw_oversized_line() {
        return Some(RequestError {
            class: ErrorClass::OversizedEvent,
            message: format!(
                "a stream line is longer than {} bytes",
                crate::sse::MAX_LINE_BYTES
            ),
        });
    }
    if let Some(err) = state.apply(out, events.drain(..), arrived) {
        return Some(err);
    }
    parser.saw_invalid_utf8().then(|| RequestError {
        class: ErrorClass::InvalidUtf8,
        message: "a stream line is not valid UTF-8".to_string(),
    })
}

#[derive(Default)]
pub(crate) struct StreamState {
    pub done: bool,
}

impl StreamState {
    /// Applies parsed events to the outcome; returns an error that ends the request.
    fn apply(
        &mut self,
        out: &mut Outcome,
        events: impl Iterator<Item = SseEvent>,
        arrived: f64,
    ) -> Option<RequestError> {
        for ev in events {
            let data = ev.data.trim();
            if data == "[DONE]" {
                self.done = true;
                continue;
            }
            if data.is_empty() {
                continue;
            }
            let v: Value = match serde_json::from_str(data) {
                Ok(v) => v,
                Err(e) => {
                    return Some(RequestError {
                        class: ErrorClass::MalformedJson,
                        message: format!("stream event is not JSON ({e}): {}", excerpt(data)),
                    })
                }
            };
            if let Some(err) = v.get("error").filter(|e| !e.is_null()) {
                return Some(RequestError {
                    class: ErrorClass::ServerError,
                    message: format!("server error in stream: {}", error_text(&err.to_string())),
                });
            }
            if ev.event.as_deref() == Some("error") {
                return Some(RequestError {
                    class: ErrorClass::ServerError,
                    message: format!("server error event: {}", excerpt(data)),
                });
            }
            if let Some(u) = v.get("usage").filter(|u| u.is_object()) {
                out.usage = parse_usage(u);
            }
            let choice = v.get("choices").and_then(|c| c.get(0));
            if let Some(choice) = choice {
                let (answer_len, reasoning_len) = text_lens(choice);
                if reasoning_len > 0 {
                    out.first_reasoning_s.get_or_insert(arrived);
                    out.reasoning_chunks += 1;
                }
                if answer_len > 0 {
                    out.first_answer_s.get_or_insert(arrived);
                    if let Some(text) = &mut out.text {
                        text.push_str(answer_text(choice));
                    }
                }
                let text_len = answer_len + reasoning_len;
                if text_len > 0 {
                    out.first_token_s.get_or_insert(arrived);
                    out.last_token_s = Some(arrived);
                    out.chunk_offsets_s.push(arrived);
                    out.content_chunks += 1;
                    out.client_tokens += 1;
                    out.output_chars += text_len as u64;
                }
                if let Some(fr) = choice.get("finish_reason").and_then(Value::as_str) {
                    out.finish_reason = Some(fr.to_string());
                }
            } else if v.get("choices").is_none() && v.get("usage").is_none() {
                return Some(RequestError {
                    class: ErrorClass::Protocol,
                    message: format!(
                        "stream event has neither choices nor usage: {}",
                        excerpt(data)
                    ),
                });
            }
        }
        None
    }
}

/// The answer text of one choice (`content`, or a completion's `text`).
fn answer_text(choice: &Value) -> &str {
    let text = match choice.get("delta") {
        Some(d) => d.get("content"),
        None => choice.get("text"),
    };
    text.and_then(Value::as_str).unwrap_or_default()
}

/// Characters of (answer, reasoning) text in one choice: `content` or a
/// completion's `text`; `reasoning_content` (vLLM, SGLang) or `reasoning`.
fn text_lens(choice: &Value) -> (usize, usize) {
    let s = |v: Option<&Value>| v.and_then(Value::as_str).map_or(0, str::len);
    match choice.get("delta") {
        Some(d) => (
            s(d.get("content")),
            s(d.get("reasoning_content")) + s(d.get("reasoning")),
        ),
        None => (s(choice.get("text")), 0),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(data: &str) -> SseEvent {
        SseEvent {
            event: None,
            data: data.to_string(),
        }
    }

    #[test]
    fn the_answer_text_is_kept_only_when_asked() {
        let steps = [
            "{\"choices\":[{\"delta\":{\"reasoning_content\":\"hmm\"}}]}",
            "{\"choices\":[{\"delta\":{\"content\":\"Hello\"}}]}",
            "{\"choices\":[{\"delta\":{\"content\":\" there\"}}]}",
        ];
        let apply = |out: &mut Outcome| {
            let mut state = StreamState::default();
            for (i, data) in steps.iter().enumerate() {
                assert!(state
                    .apply(out, [event(data)].into_iter(), i as f64)
                    .is_none());
            }
        };
        let mut kept = Outcome {
            text: Some(String::new()),
            ..Outcome::default()
        };
        apply(&mut kept);
        assert_eq!(
            kept.text.as_deref(),
            Some("Hello there"),
            "answer, not reasoning"
        );
        let mut plain = Outcome::default();
        apply(&mut plain);
        assert_eq!(plain.text, None);
        assert_eq!(plain.output_chars, kept.output_chars);
    }

    #[test]
    fn reasoning_and_answer_are_timed_apart() {
        let mut out = Outcome::default();
        let mut state = StreamState::default();
        let chunk = |delta: &str| {
            format!("{{\"choices\":[{{\"index\":0,\"delta\":{delta},\"finish_reason\":null}}]}}")
        };
        let steps = [
            (0.10, chunk("{\"role\":\"assistant\",\"content\":\"\"}")),
            (0.20, chunk("{\"reasoning_content\":\"Let me\"}")),
            (0.25, chunk("{\"reasoning_content\":\" think\"}")),
            (0.40, chunk("{\"content\":\"Yes\"}")),
            (0.45, chunk("{\"content\":\".\"}")),
        ];
        for (at, data) in &steps {
            assert!(state
                .apply(&mut out, [event(data)].into_iter(), *at)
                .is_none());
        }
        assert_eq!(out.first_token_s, Some(0.20), "TTFT counts reasoning");
        assert_eq!(out.first_reasoning_s, Some(0.20));
        assert_eq!(out.first_answer_s, Some(0.40));
        assert_eq!((out.reasoning_chunks, out.content_chunks), (2, 4));
        assert_eq!(out.output_chars, 16, "6 + 6 + 3 + 1 characters");
    }

    #[test]
    fn plain_completions_have_no_reasoning() {
        let mut out = Outcome::default();
        let mut state = StreamState::default();
        let data = "{\"choices\":[{\"index\":0,\"text\":\" hi\",\"finish_reason\":null}]}";
        assert!(state
            .apply(&mut out, [event(data)].into_iter(), 0.3)
            .is_none());
        assert_eq!(
            (out.first_answer_s, out.first_reasoning_s),
            (Some(0.3), None)
        );
        assert_eq!(out.reasoning_chunks, 0);
    }
}
