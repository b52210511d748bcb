//! Turning what went wrong — a transport error, a non-2xx answer, an error
//! inside the stream — into an [`ErrorClass`] and a one-line message. Server
//! text enters a message through the [`Redactor`], key out before the cut.

use crate::outcome::{ErrorClass, RequestError};
use crate::secret::Redactor;
use serde_json::Value;

/// A header's value as text, when present and printable.
pub(crate) fn header_text(
    resp: &reqwest::Response,
    name: reqwest::header::HeaderName,
) -> Option<String> {
    resp.headers()
        .get(name)
        .and_then(|v| v.to_str().ok())
        .map(str::to_string)
}

/// The class and message of a non-2xx answer whose body is `body`.
pub(crate) fn status_error(
    status: u16,
    body: &str,
    retry_after: Option<String>,
    redact: &Redactor,
) -> RequestError {
    let class = match status {
        429 => ErrorClass::RateLimited,
        503 => ErrorClass::Unavailable,
        400 | 413 | 422 if about_context(body) => ErrorClass::ContextLength,
        _ => ErrorClass::HttpStatus,
    };
    let text = error_text(body, redact);
    let message = match retry_after {
        Some(r) => format!(
            "HTTP {status} (Retry-After: {}): {text}",
            redact.excerpt(&r)
        ),
        None => format!("HTTP {status}: {text}"),
    };
    RequestError { class, message }
}

/// The failure an error inside a 200 stream shows: an `error:` field
/// (llama.cpp), an `error` member of an event's JSON (vLLM, SGLang, TGI), or
/// an `event: error` (JSON or plain text). `text` is the field's or the
/// event's data; a request that does not fit the context is told apart.
pub(crate) fn stream_error(text: &str, redact: &Redactor) -> RequestError {
    let class = if about_context(text) {
        ErrorClass::ContextLength
    } else {
        ErrorClass::ServerError
    };
    let message = match error_text(text, redact) {
        t if t.is_empty() => "the server sent an error in the stream, without text".to_string(),
        t => format!("server error in stream: {t}"),
    };
    RequestError { class, message }
}

/// The failure of an answer whose `Content-Type` is not an event stream.
pub(crate) fn not_event_stream(content_type: &str, redact: &Redactor) -> Option<RequestError> {
    let ok = content_type
        .to_ascii_lowercase()
        .starts_with("text/event-stream");
    (!ok).then(|| RequestError {
        class: ErrorClass::ContentType,
        message: format!(
            "the answer is `{}`, not an event stream",
            redact.excerpt(content_type)
        ),
    })
}

/// How servers say a request does not fit the context, in an error answer
/// or inside a stream: vLLM's and OpenAI's "maximum context length",
/// SGLang's, llama.cpp's "exceeds the available context size" and its error
/// type, TGI's `MaxTotalTokens` and `InputLength` validation errors.
/// Compared in lower case.
const CONTEXT_PHRASES: &[&str] = &[
    "context length",
    "context size",
    "context window",
    "maximum model length",
    "max_model_len",
    "exceed_context_size_error",
    "`max_new_tokens` must be <=",
    "`inputs` must have less than",
];

/// True when a server's error text says the request does not fit the context.
fn about_context(text: &str) -> bool {
    let lower = text.to_ascii_lowercase();
    CONTEXT_PHRASES.iter().any(|p| lower.contains(p))
}

/// True when a request failed before any response byte because the
/// connection was closed or reset under it — what happens when a pooled
/// keep-alive connection is reused just as the server closes it. llama.cpp
/// closes the TCP connection after every streamed response although it
/// advertises keep-alive; uvicorn (vLLM, SGLang) closes idle ones after 5 s.
/// Such a request almost always never reached the server, so it is sent
/// once more (a server that did read it and then died before answering would
/// get it twice; the row's `retries` says it happened). The retry goes out on
/// a new connection, since with many streams in flight the next pooled
/// connection is often just as dead.
pub(crate) fn stale_connection(e: &reqwest::Error) -> bool {
    if e.is_timeout() || e.is_status() || e.is_body() || e.is_decode() {
        return false;
    }
    let mut src: Option<&(dyn std::error::Error + 'static)> = std::error::Error::source(e);
    while let Some(s) = src {
        if let Some(h) = s.downcast_ref::<hyper::Error>() {
            if h.is_incomplete_message() || h.is_canceled() {
                return true;
            }
        }
        if let Some(io) = s.downcast_ref::<std::io::Error>() {
            use std::io::ErrorKind::*;
            if matches!(
                io.kind(),
                ConnectionReset | ConnectionAborted | BrokenPipe | UnexpectedEof
            ) {
                return true;
            }
        }
        src = s.source();
    }
    false
}

/// Classifies a reqwest error.
pub(crate) fn classify(e: reqwest::Error) -> RequestError {
    let class = if e.is_timeout() {
        ErrorClass::Timeout
    } else if e.is_connect() {
        ErrorClass::Connect
    } else if e.is_body() || e.is_decode() {
        ErrorClass::StreamBroken
    } else if e.is_request() {
        ErrorClass::Connect
    } else {
        ErrorClass::Protocol
    };
    // The error chain gives the cause (refused, reset, …) without the URL's secrets: qexp never puts keys in URLs.
    let message = qexp_types::error::chain(&e);
    RequestError { class, message }
}

/// The `error.message` of an OpenAI error body (or its `message`, or its
/// `error` string), else the text; redacted, then cut to an excerpt.
pub(crate) fn error_text(text: &str, redact: &Redactor) -> String {
    serde_json::from_str::<Value>(text)
        .ok()
        .and_then(|v| {
            let e = v.get("error").unwrap_or(&v);
            e.get("message")
                .and_then(Value::as_str)
                .map(str::to_string)
                .or_else(|| e.as_str().map(str::to_string))
        })
        .map(|m| redact.excerpt(&m))
        .unwrap_or_else(|| redact.excerpt(text))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_list_of_context_wordings_serves_answers_and_streams() {
        let r = Redactor::default();
        let wordings = [
            r#"{"error":{"message":"This model's maximum context length is 4096 tokens."}}"#,
            r#"{"error":"Input validation error: `inputs` tokens + `max_new_tokens` must be <= 4096."}"#,
            r#"{"error":"Input validation error: `inputs` must have less than 4096 tokens."}"#,
            r#"{"code":400,"message":"request is too long","type":"exceed_context_size_error"}"#,
            "the request exceeds the available context size, try increasing it",
        ];
        for w in wordings {
            assert_eq!(
                status_error(400, w, None, &r).class,
                ErrorClass::ContextLength,
                "{w}"
            );
            assert_eq!(stream_error(w, &r).class, ErrorClass::ContextLength, "{w}");
        }
        assert_eq!(
            status_error(500, wordings[0], None, &r).class,
            ErrorClass::HttpStatus
        );
        let other = stream_error(r#"{"error":{"message":"slot unavailable"}}"#, &r);
        assert_eq!(other.class, ErrorClass::ServerError);
        assert_eq!(other.message, "server error in stream: slot unavailable");
        assert_eq!(
            stream_error("Bad Gateway", &r).message,
            "server error in stream: Bad Gateway"
        );
    }
}
