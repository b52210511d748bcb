use serde::{Deserialize, Serialize};
use serde_json::Value;

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
    /// HTTP 400/413 saying the prompt and output do not fit the model's context.
    ContextLength,
    /// No response byte before the first-byte timeout (queueing and prefill included).
    FirstByteTimeout,
    /// The stream went silent for longer than the idle timeout.
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

/// A classified failure with a one-line message.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RequestError {
    /// The failure's class.
    pub class: ErrorClass,
    /// What happened, for people (server text is truncated).
    pub message: String,
}

/// Token counts as the server reported them in `usage`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    /// `usage.prompt_tokens`.
    pub prompt_tokens: Option<u32>,
    /// `usage.completion_tokens`.
    pub completion_tokens: Option<u32>,
    /// `usage.prompt_tokens_details.cached_tokens`, where reported.
    pub cached_tokens: Option<u32>,
}

/// Everything measured about one streamed request.
///
/// Offsets are seconds since the request was handed to the HTTP stack
/// (`sent`); they are taken when the bytes arrive, before parsing.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Outcome {
    /// Wall-clock time the request was sent, Unix seconds.
    pub sent_unix_s: f64,
    /// Offset of the response headers.
    pub headers_s: Option<f64>,
    /// Offset of the first chunk with non-empty content (or reasoning) — TTFT.
    pub first_token_s: Option<f64>,
    /// Offset of the last content chunk.
    pub last_token_s: Option<f64>,
    /// Offset of the first chunk with reasoning text (`reasoning_content` or `reasoning` deltas).
    #[serde(default)]
    pub first_reasoning_s: Option<f64>,
    /// Offset of the first chunk with answer text (`content`, or a completion's `text`).
    #[serde(default)]
    pub first_answer_s: Option<f64>,
    /// Chunks that carried reasoning text (counted apart from the answer's).
    #[serde(default)]
    pub reasoning_chunks: u32,
    /// Offset at which the stream ended (or failed).
    pub end_s: f64,
    /// Offsets of every content chunk, in arrival order.
    pub chunk_offsets_s: Vec<f64>,
    /// Content chunks received.
    pub content_chunks: u32,
    /// The client's own count of generated tokens (content deltas; one
    /// delta may carry several tokens under speculative decoding).
    pub client_tokens: u32,
    /// Characters of generated text received.
    pub output_chars: u64,
    /// What the server reported in `usage`.
    pub usage: Usage,
    /// Finish reason of the first choice, when sent.
    pub finish_reason: Option<String>,
    /// HTTP status, when a response arrived.
    pub http_status: Option<u16>,
    /// The failure, if the request did not complete.
    pub error: Option<RequestError>,
    /// The answer's text, kept only for multi-turn requests (the next turn sends it back).
    #[serde(default)]
    pub text: Option<String>,
    /// Times the request was sent again because its connection had been
    /// closed under it before any response byte (offsets count from the last send).
    #[serde(default)]
    pub retries: u32,
}

impl Outcome {
    /// True when the request completed and produced output.
    pub fn ok(&self) -> bool {
        self.error.is_none()
    }

    /// Time to first token.
    pub fn ttft_s(&self) -> Option<f64> {
        self.first_token_s
    }

    /// Sent → last content chunk.
    pub fn e2e_s(&self) -> Option<f64> {
        self.last_token_s
    }

    /// Output tokens: the server's count, else the client's.
    pub fn output_tokens(&self) -> u32 {
        self.usage.completion_tokens.unwrap_or(self.client_tokens)
    }

    /// Time per output token after the first: (E2E − TTFT)/(tokens − 1).
    pub fn tpot_s(&self) -> Option<f64> {
        let (ttft, e2e) = (self.first_token_s?, self.last_token_s?);
        let n = self.output_tokens();
        (n > 1 && e2e > ttft).then(|| (e2e - ttft) / f64::from(n - 1))
    }

    /// Gaps between consecutive content chunks.
    pub fn chunk_gaps_s(&self) -> Vec<f64> {
        self.chunk_offsets_s
            .windows(2)
            .map(|w| w[1] - w[0])
            .collect()
    }
}

impl std::fmt::Display for ErrorClass {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Reads an OpenAI `usage` object.
pub fn parse_usage(u: &Value) -> Usage {
    let n = |v: Option<&Value>| {
        v.and_then(Value::as_u64)
            .map(|x| x.min(u32::MAX as u64) as u32)
    };
    Usage {
        prompt_tokens: n(u.get("prompt_tokens")),
        completion_tokens: n(u.get("completion_tokens")),
        cached_tokens: n(u
            .get("prompt_tokens_details")
            .and_then(|d| d.get("cached_tokens"))),
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
