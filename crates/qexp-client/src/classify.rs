//! Turning what went wrong — a transport error, a non-2xx answer — into an
//! [`ErrorClass`] and a one-line message.

use crate::outcome::{ErrorClass, RequestError};
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

/// The class and message of a non-2xx answer.
pub(crate) fn status_error(status: u16, text: &str, retry_after: Option<String>) -> RequestError {
    let lower = text.to_ascii_lowercase();
    let class = match status {
        429 => ErrorClass::RateLimited,
        503 => ErrorClass::Unavailable,
        400 | 413 | 422 if CONTEXT_PHRASES.iter().any(|p| lower.contains(p)) => {
            ErrorClass::ContextLength
        }
        _ => ErrorClass::HttpStatus,
    };
    let message = match retry_after {
        Some(r) => format!("HTTP {status} (Retry-After: {}): {text}", excerpt(&r)),
        None => format!("HTTP {status}: {text}"),
    };
    RequestError { class, message }
}

/// The failure of an answer whose `Content-Type` is not an event stream.
pub(crate) fn not_event_stream(content_type: &str) -> Option<RequestError> {
    let ok = content_type
        .to_ascii_lowercase()
        .starts_with("text/event-stream");
    (!ok).then(|| RequestError {
        class: ErrorClass::ContentType,
        message: format!(
            "the answer is `{}`, not an event stream",
            excerpt(content_type)
        ),
    })
}

/// How servers say a request does not fit the context: vLLM, SGLang,
/// llama.cpp, TGI and OpenAI's wordings.
const CONTEXT_PHRASES: &[&str] = &[
    "context length",
    "context size",
    "context window",
    "maximum model length",
    "max_model_len",
    "`max_new_tokens` must be <=",
];
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
    let mut message = e.to_string();
    let mut src = std::error::Error::source(&e);
    while let Some(s) = src {
        message.push_str(": ");
        message.push_str(&s.to_string());
        src = s.source();
    }
    RequestError { class, message }
}

/// The `error.message` of an OpenAI error body, else an excerpt of the text.
pub(crate) fn error_text(text: &str) -> String {
    serde_json::from_str::<Value>(text)
        .ok()
        .and_then(|v| {
            let e = v.get("error").unwrap_or(&v);
            e.get("message")
                .and_then(Value::as_str)
                .map(str::to_string)
                .or_else(|| e.as_str().map(str::to_string))
        })
        .map(|m| excerpt(&m))
        .unwrap_or_else(|| excerpt(text))
}

pub(crate) fn excerpt(s: &str) -> String {
    const MAX: usize = 300;
    let s = s.trim().replace(['\n', '\r'], " ");
    match s.char_indices().nth(MAX) {
        Some((i, _)) => format!("{}…", &s[..i]),
        None => s,
    }
}
