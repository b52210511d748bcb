//! Why a request failed: one class per failure, stored by name.

use serde::{Deserialize, Serialize};

/// Why a request did not complete. Every failure gets exactly one class;
/// the snake_case names are what `requests.parquet` stores and never change.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorClass {
    /// No connection could be made (refused, DNS, TLS, or the connect timeout).
    Connect,
    /// The request exceeded its total timeout.
    Timeout,
    /// The server answered with a non-2xx status that no other class names.
    HttpStatus,
    /// The connection broke, or closed before the stream said it was done.
    StreamBroken,
    /// The stream was not valid SSE/JSON of the expected shape.
    Protocol,
    /// The server sent an error object inside the stream.
    ServerError,
    /// The stream finished without any generated content.
    NoOutput,
    /// qexp stopped the request (the run was interrupted).
    Cancelled,
    /// qexp did not send it: an earlier turn of its conversation failed.
    Skipped,
    /// The server closed the connection before any response byte, also when it was sent again.
    ConnectionClosed,
    /// HTTP 429: the server (or a gateway) limits the request rate.
    RateLimited,
    /// HTTP 503: the server is overloaded or starting; its `Retry-After` is in the message.
    Unavailable,
    /// HTTP 400/413/422, or an error inside a 200 stream, saying the prompt
    /// and output do not fit the model's context.
    ContextLength,
    /// No streamed event before the first-byte timeout (queueing and
    /// prefill included; keep-alive comments do not count).
    FirstByteTimeout,
    /// After its first event, the stream went silent for longer than the
    /// idle timeout.
    IdleTimeout,
    /// A stream event whose data is not JSON.
    MalformedJson,
    /// The stream ended cleanly after its finish reason but without `data: [DONE]`.
    MissingDone,
    /// A stream line longer than qexp accepts (see `sse::MAX_LINE_BYTES`).
    OversizedEvent,
    /// A stream line that is not UTF-8.
    InvalidUtf8,
    /// A 2xx answer that is not `text/event-stream`.
    ContentType,
}

impl ErrorClass {
    /// Every class, in declaration order.
    pub const ALL: [ErrorClass; 20] = [
        ErrorClass::Connect,
        ErrorClass::Timeout,
        ErrorClass::HttpStatus,
        ErrorClass::StreamBroken,
        ErrorClass::Protocol,
        ErrorClass::ServerError,
        ErrorClass::NoOutput,
        ErrorClass::Cancelled,
        ErrorClass::Skipped,
        ErrorClass::ConnectionClosed,
        ErrorClass::RateLimited,
        ErrorClass::Unavailable,
        ErrorClass::ContextLength,
        ErrorClass::FirstByteTimeout,
        ErrorClass::IdleTimeout,
        ErrorClass::MalformedJson,
        ErrorClass::MissingDone,
        ErrorClass::OversizedEvent,
        ErrorClass::InvalidUtf8,
        ErrorClass::ContentType,
    ];

    /// The class stored as `name` in Parquet, if any.
    pub fn from_name(name: &str) -> Option<ErrorClass> {
        Self::ALL.into_iter().find(|c| c.as_str() == name)
    }

    /// The stable snake_case name stored in Parquet (`error_class`) and
    /// serialised; recorded runs hold these spellings, so never change one.
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorClass::Connect => "connect",
            ErrorClass::Timeout => "timeout",
            ErrorClass::HttpStatus => "http_status",
            ErrorClass::StreamBroken => "stream_broken",
            ErrorClass::Protocol => "protocol",
            ErrorClass::ServerError => "server_error",
            ErrorClass::NoOutput => "no_output",
            ErrorClass::Cancelled => "cancelled",
            ErrorClass::Skipped => "skipped",
            ErrorClass::ConnectionClosed => "connection_closed",
            ErrorClass::RateLimited => "rate_limited",
            ErrorClass::Unavailable => "unavailable",
            ErrorClass::ContextLength => "context_length",
            ErrorClass::FirstByteTimeout => "first_byte_timeout",
            ErrorClass::IdleTimeout => "idle_timeout",
            ErrorClass::MalformedJson => "malformed_json",
            ErrorClass::MissingDone => "missing_done",
            ErrorClass::OversizedEvent => "oversized_event",
            ErrorClass::InvalidUtf8 => "invalid_utf8",
            ErrorClass::ContentType => "content_type",
        }
    }
}

impl std::fmt::Display for ErrorClass {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::ErrorClass;

    #[test]
    fn stored_names_are_pinned_and_match_serde() {
        let names: Vec<&str> = ErrorClass::ALL.iter().map(|c| c.as_str()).collect();
        assert_eq!(
            names,
            [
                "connect",
                "timeout",
                "http_status",
                "stream_broken",
                "protocol",
                "server_error",
                "no_output",
                "cancelled",
                "skipped",
                "connection_closed",
                "rate_limited",
                "unavailable",
                "context_length",
                "first_byte_timeout",
                "idle_timeout",
                "malformed_json",
                "missing_done",
                "oversized_event",
                "invalid_utf8",
                "content_type",
            ]
        );
        for c in ErrorClass::ALL {
            let json = serde_json::to_value(c).unwrap_or_default();
            assert_eq!(json, serde_json::Value::from(c.as_str()));
            assert_eq!(ErrorClass::from_name(c.as_str()), Some(c));
        }
        assert_eq!(ErrorClass::from_name("Timeout"), None);
    }
}
