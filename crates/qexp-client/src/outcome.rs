//! What one request came to: its timings, the server's token counts, the
//! answer, and the failure with its class when it failed.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Declared in qexp-types: the classes are stored in every run.
pub use qexp_types::ErrorClass;

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
    /// Offset of the first chunk with a tool call's name or arguments.
    #[serde(default)]
    pub first_tool_s: Option<f64>,
    /// The tool calls the answer made, their arguments as streamed (empty
    /// when it made none).
    #[serde(default)]
    pub tool_calls: Vec<qexp_plan::structured::ToolCall>,
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
    /// The answer's text (reasoning apart), kept while the request is
    /// measured: the runner stores it for a sample and for unhealthy
    /// answers, and a conversation sends it back in its next turn.
    #[serde(default)]
    pub text: Option<String>,
    /// XXH3-64 of the answer's text ([`crate::answer_hash`]), taken when
    /// the stream ended; None when no response came.
    #[serde(default)]
    pub answer_hash: Option<u64>,
    /// XXH3-64 of the reasoning text, None when none came.
    #[serde(default)]
    pub reasoning_hash: Option<u64>,
    /// The shape of the answer's text (counts, a repeated stretch at its
    /// end), when its text was kept.
    #[serde(default)]
    pub answer_shape: Option<qexp_types::AnswerShape>,
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
