use crate::outcome::{ErrorClass, Outcome, RequestError, Usage};
use crate::sse::{SseEvent, SseParser};
use futures_util::StreamExt;
use serde_json::{json, Map, Value};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// Which OpenAI-compatible endpoint a request goes to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Api {
    /// `/v1/chat/completions`.
    Chat,
    /// `/v1/completions`.
    Completions,
}

/// One generation request.
#[derive(Debug, Clone)]
pub struct GenRequest {
    /// Endpoint kind.
    pub api: Api,
    /// Model name.
    pub model: String,
    /// The prompt (sent as one user message for chat).
    pub prompt: String,
    /// `max_tokens`.
    pub max_tokens: u32,
    /// Extra body fields (`ignore_eos`, `temperature`, …), merged last.
    pub extra: Map<String, Value>,
    /// A conversation's earlier turns, sent before `prompt` (chat only).
    /// `Some` also keeps the answer's text in [`Outcome::text`] for the next turn.
    pub history: Option<Vec<crate::conversation::Message>>,
}

impl GenRequest {
    /// The JSON body, streaming with usage requested.
    pub fn body(&self, stream: bool) -> Value {
        let mut body = match self.api {
            Api::Chat => {
                let mut messages = json!(self.history.as_deref().unwrap_or_default());
                if let Value::Array(m) = &mut messages {
                    m.push(json!({"role": "user", "content": self.prompt}));
                }
                json!({
                    "model": self.model,
                    "messages": messages,
                    "max_tokens": self.max_tokens,
                })
            }
            Api::Completions => json!({
                "model": self.model,
                "prompt": self.prompt,
                "max_tokens": self.max_tokens,
            }),
        };
        if let Value::Object(map) = &mut body {
            map.insert("stream".into(), Value::Bool(stream));
            if stream {
                map.insert("stream_options".into(), json!({"include_usage": true}));
            }
            for (k, v) in &self.extra {
                map.insert(k.clone(), v.clone());
            }
        }
        body
    }

    fn path(&self) -> &'static str {
        match self.api {
            Api::Chat => "/v1/chat/completions",
            Api::Completions => "/v1/completions",
        }
    }
}

/// Why a client could not be built.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// The HTTP stack refused the configuration.
    #[error("cannot build the HTTP client: {0}")]
    Build(#[from] reqwest::Error),
}

/// A streaming OpenAI-compatible HTTP client for one server.
#[derive(Clone)]
pub struct Client {
    http: reqwest::Client,
    /// Never pools: retries go out on a connection of their own.
    fresh: reqwest::Client,
    base: String,
    api_key: Option<String>,
    timeout: Duration,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The API key is deliberately left out.
        f.debug_struct("Client").field("base", &self.base).finish()
    }
}

impl Client {
    /// A client for `base_url` (with or without a trailing `/v1`).
    pub fn new(
        base_url: &str,
        api_key: Option<String>,
        timeout: Duration,
    ) -> Result<Client, ClientError> {
        let base = base_url.trim_end_matches('/');
        let base = base.strip_suffix("/v1").unwrap_or(base).to_string();
        let builder = || {
            reqwest::Client::builder()
                .connect_timeout(Duration::from_secs(10))
                .tcp_nodelay(true)
        };
        let http = builder()
            .pool_idle_timeout(Duration::from_secs(30))
            .build()?;
        let fresh = builder().pool_max_idle_per_host(0).build()?;
        Ok(Client {
            http,
            fresh,
            base,
            api_key,
            timeout,
        })
    }

    /// The server's base URL, without `/v1`.
    pub fn base_url(&self) -> &str {
        &self.base
    }

    /// A request to `path` on this server, or to `path` itself when it is an
    /// absolute `http(s)://` URL (a metrics endpoint on another port).
    fn request(&self, method: reqwest::Method, path: &str) -> reqwest::RequestBuilder {
        self.request_on(&self.http, method, path)
    }

    /// The same request on a new connection (for a retry: another pooled
    /// connection may be just as dead as the first).
    fn request_fresh(&self, method: reqwest::Method, path: &str) -> reqwest::RequestBuilder {
        self.request_on(&self.fresh, method, path)
    }

    fn request_on(
        &self,
        http: &reqwest::Client,
        method: reqwest::Method,
        path: &str,
    ) -> reqwest::RequestBuilder {
        let url = if path.starts_with("http://") || path.starts_with("https://") {
            path.to_string()
        } else {
            format!("{}{}", self.base, path)
        };
        let rb = http.request(method, url);
        match &self.api_key {
            Some(key) => rb.bearer_auth(key),
            None => rb,
        }
    }

    /// Sends a request, once more if the first attempt died on a connection
    /// the server had already closed (see [`stale_connection`]). Returns the
    /// response and the retries made.
    async fn send_once_more(
        &self,
        make: impl Fn(bool) -> reqwest::RequestBuilder,
    ) -> Result<(reqwest::Response, u32), reqwest::Error> {
        match make(false).send().await {
            Err(e) if stale_connection(&e) => make(true).send().await.map(|r| (r, 1)),
            other => other.map(|r| (r, 0)),
        }
    }

    /// `request` or, for a retry, `request_fresh`.
    fn request_maybe_fresh(
        &self,
        fresh: bool,
        method: reqwest::Method,
        path: &str,
    ) -> reqwest::RequestBuilder {
        if fresh {
            self.request_fresh(method, path)
        } else {
            self.request(method, path)
        }
    }

    /// GET a JSON document; `Ok(None)` when the server answers non-2xx.
    pub async fn get_json(
        &self,
        path: &str,
        timeout: Duration,
    ) -> Result<Option<Value>, RequestError> {
        let (resp, _) = self
            .send_once_more(|f| {
                self.request_maybe_fresh(f, reqwest::Method::GET, path)
                    .timeout(timeout)
            })
            .await
            .map_err(classify)?;
        if !resp.status().is_success() {
            return Ok(None);
        }
        resp.json::<Value>().await.map(Some).map_err(classify)
    }

    /// GET a text document; `Ok(None)` when the server answers non-2xx.
    pub async fn get_text(
        &self,
        path: &str,
        timeout: Duration,
    ) -> Result<Option<String>, RequestError> {
        let (resp, _) = self
            .send_once_more(|f| {
                self.request_maybe_fresh(f, reqwest::Method::GET, path)
                    .timeout(timeout)
            })
            .await
            .map_err(classify)?;
        if !resp.status().is_success() {
            return Ok(None);
        }
        resp.text().await.map(Some).map_err(classify)
    }

    /// POST JSON and return the status and JSON answer (Null if not JSON).
    pub async fn post_json(&self, path: &str, body: &Value) -> Result<(u16, Value), RequestError> {
        let (resp, _) = self
            .send_once_more(|f| {
                self.request_maybe_fresh(f, reqwest::Method::POST, path)
                    .timeout(self.timeout)
                    .json(body)
            })
            .await
            .map_err(classify)?;
        let status = resp.status().as_u16();
        let text = resp.text().await.map_err(classify)?;
        Ok((status, serde_json::from_str(&text).unwrap_or(Value::Null)))
    }

    /// Sends one streaming request and measures it. Never fails: every
    /// failure is classified inside the returned [`Outcome`].
    pub async fn stream(&self, req: &GenRequest) -> Outcome {
        let body = req.body(true);
        let deadline = tokio::time::Instant::now() + self.timeout;
        let mut t0 = Instant::now();
        let mut out = Outcome {
            sent_unix_s: unix_now(),
            text: req.history.as_ref().map(|_| String::new()),
            ..Outcome::default()
        };
        let resp = loop {
            let send = self
                .request_maybe_fresh(out.retries > 0, reqwest::Method::POST, req.path())
                .json(&body)
                .send();
            let since_t0 = |t: Instant| t.duration_since(t0).as_secs_f64();
            match tokio::time::timeout_at(deadline, send).await {
                Err(_) => {
                    return fail(
                        out,
                        since_t0(Instant::now()),
                        ErrorClass::Timeout,
                        "no response headers before the timeout",
                    )
                }
                // Nothing of this attempt reached the server's generator: the
                // measurement restarts with the retry, and the row says so.
                Ok(Err(e)) if out.retries == 0 && stale_connection(&e) => {
                    out.retries += 1;
                    t0 = Instant::now();
                    out.sent_unix_s = unix_now();
                }
                Ok(Err(e)) => {
                    let err = classify(e);
                    return fail(out, since_t0(Instant::now()), err.class, &err.message);
                }
                Ok(Ok(r)) => break r,
            }
        };
        let since = |t: Instant| t.duration_since(t0).as_secs_f64();
        out.headers_s = Some(since(Instant::now()));
        let status = resp.status();
        out.http_status = Some(status.as_u16());
        if !status.is_success() {
            let text = tokio::time::timeout_at(deadline, resp.text())
                .await
                .ok()
                .and_then(Result::ok)
                .unwrap_or_default();
            let msg = format!("HTTP {}: {}", status.as_u16(), error_text(&text));
            return fail(out, since(Instant::now()), ErrorClass::HttpStatus, &msg);
        }
        let mut stream = resp.bytes_stream();
        let mut parser = SseParser::new();
        let mut events = Vec::new();
        let mut state = StreamState::default();
        loop {
            let next = match tokio::time::timeout_at(deadline, stream.next()).await {
                Err(_) => {
                    return fail(
                        out,
                        since(Instant::now()),
                        ErrorClass::Timeout,
                        "the stream did not finish before the timeout",
                    )
                }
                Ok(n) => n,
            };
            let arrived = since(Instant::now());
            match next {
                None => {
                    parser.finish(&mut events);
                    if let Some(err) = state.apply(&mut out, events.drain(..), arrived) {
                        return fail(out, arrived, err.class, &err.message);
                    }
                    break;
                }
                Some(Err(e)) => {
                    let err = classify(e);
                    let class = if err.class == ErrorClass::Timeout {
                        err.class
                    } else {
                        ErrorClass::StreamBroken
                    };
                    return fail(out, arrived, class, &err.message);
                }
                Some(Ok(bytes)) => {
                    parser.feed(&bytes, &mut events);
                    if let Some(err) = state.apply(&mut out, events.drain(..), arrived) {
                        return fail(out, arrived, err.class, &err.message);
                    }
                    if state.done {
                        break;
                    }
                }
            }
        }
        out.end_s = since(Instant::now());
        if !state.done && out.finish_reason.is_none() {
            out.error = Some(RequestError {
                class: ErrorClass::StreamBroken,
                message: "the stream closed before [DONE] or a finish_reason".into(),
            });
        } else if out.content_chunks == 0 {
            out.error = Some(RequestError {
                class: ErrorClass::NoOutput,
                message: "the stream finished without generated content".into(),
            });
        }
        out
    }
}

#[derive(Default)]
struct StreamState {
    done: bool,
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
                        class: ErrorClass::Protocol,
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

/// The answer text of one choice (`content`, or a completion's `text`).
fn answer_text(choice: &Value) -> &str {
    let text = match choice.get("delta") {
        Some(d) => d.get("content"),
        None => choice.get("text"),
    };
    text.and_then(Value::as_str).unwrap_or_default()
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

fn fail(mut out: Outcome, at: f64, class: ErrorClass, message: &str) -> Outcome {
    out.end_s = at;
    out.error = Some(RequestError {
        class,
        message: message.to_string(),
    });
    out
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
fn classify(e: reqwest::Error) -> RequestError {
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
fn error_text(text: &str) -> String {
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

fn excerpt(s: &str) -> String {
    const MAX: usize = 300;
    let s = s.trim().replace(['\n', '\r'], " ");
    match s.char_indices().nth(MAX) {
        Some((i, _)) => format!("{}…", &s[..i]),
        None => s,
    }
}

fn unix_now() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
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
