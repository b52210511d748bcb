//! The request qexp sends (which endpoint, which body) and the HTTP client
//! that sends it and times its stream.

use crate::classify::{classify, header_text, stale_connection};
use crate::conversation::Role;
use crate::measure::{measure, Attempt, Body, Head, Transport};
use crate::outcome::{ErrorClass, Outcome, RequestError};
use crate::raw::RawHttp;
use crate::secret::Redactor;
use crate::sent::StampedBody;
use crate::timeouts::{Limit, Timeouts};
use serde_json::{json, Map, Value};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

/// Which OpenAI-compatible endpoint a request goes to: the plan's
/// `target.api`, one enum from the plan to the manifest.
use qexp_plan::ApiKind as Api;

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
    /// When they end in a tool's result, `prompt` is not sent again: the
    /// conversation continues from the result.
    pub history: Option<Vec<crate::conversation::Message>>,
    /// Embeddings: inputs sent (`prompt` each time); rerank: documents
    /// ranked against `prompt` (`prompt` each time). Ignored by the
    /// streaming APIs.
    pub batch: u32,
    /// Headers sent with this request beside the client's own (a request
    /// class's tenant header); their values are never recorded.
    pub headers: Vec<(String, String)>,
    /// Data URLs of images sent after `prompt` in the user message, as
    /// `image_url` content parts (chat only; empty for none).
    pub images: std::sync::Arc<[String]>,
}

impl GenRequest {
    /// The JSON body, streaming with usage requested.
    pub fn body(&self, stream: bool) -> Value {
        let mut body = match self.api {
            Api::Chat => {
                let history = self.history.as_deref().unwrap_or_default();
                let mut messages = json!(history);
                // A conversation that ends in tool results continues from
                // them: the prompt went out as the result.
                let continues = history.last().is_some_and(|m| m.role == Role::Tool);
                if let (Value::Array(m), false) = (&mut messages, continues) {
                    m.push(json!({"role": "user", "content": self.user_content()}));
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
            Api::Embeddings => json!({
                "model": self.model,
                "input": vec![&self.prompt; self.batch.max(1) as usize],
            }),
            Api::Rerank => json!({
                "model": self.model,
                "query": self.prompt,
                "documents": vec![&self.prompt; self.batch.max(1) as usize],
            }),
        };
        if let Value::Object(map) = &mut body {
            if self.api.streams() {
                map.insert("stream".into(), Value::Bool(stream));
            }
            if stream && self.api.streams() {
                map.insert("stream_options".into(), json!({"include_usage": true}));
            }
            for (k, v) in &self.extra {
                map.insert(k.clone(), v.clone());
            }
        }
        body
    }

    /// The user message's content: the prompt, or with images the prompt's
    /// text part then one `image_url` part per image.
    fn user_content(&self) -> Value {
        if self.images.is_empty() {
            return Value::String(self.prompt.clone());
        }
        let mut parts = vec![json!({"type": "text", "text": self.prompt})];
        parts.extend(
            self.images
                .iter()
                .map(|url| json!({"type": "image_url", "image_url": {"url": url}})),
        );
        Value::Array(parts)
    }

    pub(crate) fn path(&self) -> &'static str {
        match self.api {
            Api::Chat => "/v1/chat/completions",
            Api::Completions => "/v1/completions",
            Api::Embeddings => "/v1/embeddings",
            Api::Rerank => "/v1/rerank",
        }
    }
}

/// Why a client could not be built.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// The HTTP stack refused the configuration.
    #[error("cannot build the HTTP client")]
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
    redact: Redactor,
    timeouts: Timeouts,
    /// The streaming path for plain `http://` servers (see `raw`).
    raw: Option<std::sync::Arc<RawHttp>>,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The API key is deliberately left out.
        f.debug_struct("Client").field("base", &self.base).finish()
    }
}

impl Client {
    /// A client for `base_url` (with or without a trailing `/v1`) whose
    /// requests end after `timeout` (first-byte and idle limits alike).
    pub fn new(
        base_url: &str,
        api_key: Option<String>,
        timeout: Duration,
    ) -> Result<Client, ClientError> {
        Client::with_timeouts(base_url, api_key, Timeouts::total(timeout))
    }

    /// A client for `base_url` with each of the four time limits given.
    pub fn with_timeouts(
        base_url: &str,
        api_key: Option<String>,
        timeouts: Timeouts,
    ) -> Result<Client, ClientError> {
        let base = base_url.trim_end_matches('/');
        let base = base.strip_suffix("/v1").unwrap_or(base).to_string();
        let builder = || {
            reqwest::Client::builder()
                .connect_timeout(timeouts.connect)
                .tcp_nodelay(true)
        };
        let http = builder()
            .pool_idle_timeout(Duration::from_secs(30))
            .build()?;
        let fresh = builder().pool_max_idle_per_host(0).build()?;
        Ok(Client {
            http,
            fresh,
            raw: RawHttp::for_base(&base, api_key.as_deref()).map(std::sync::Arc::new),
            base,
            redact: Redactor::new(api_key.as_deref()),
            api_key,
            timeouts,
        })
    }

    /// This client, also keeping `secrets` (header values read from the
    /// environment) out of everything it returns from the server.
    pub fn redacting(mut self, secrets: impl IntoIterator<Item = String>) -> Client {
        self.redact = self.redact.with(secrets);
        self
    }

    /// How this client times streamed requests, as runs record it: qexp's
    /// own HTTP/1.1 reader with the kernel's receive stamps (while every read
    /// so far had one), the same reader stamping reads when they return, or
    /// reqwest; either way from the wire.
    pub fn timing(&self) -> &'static str {
        match &self.raw {
            Some(raw) if raw.stamps().timed_every_read() => {
                "qexp-http1, from the wire, kernel receive stamps"
            }
            Some(_) => "qexp-http1, from the wire",
            None => "reqwest, from the wire",
        }
    }

    /// Streamed-request reads so far: (stamped by the kernel, stamped when
    /// they returned); reqwest's reads are not counted.
    pub fn read_stamps(&self) -> (u64, u64) {
        self.raw.as_ref().map_or((0, 0), |r| r.stamps().counts())
    }

    /// This client with the kernel's receive stamps asked for or left off,
    /// whatever `QEXP_RX_TIMESTAMPS` says (by default they are on where the
    /// platform has them); without them qexp's reader stamps each read when
    /// it returns. Idle connections are dropped; reqwest is unaffected.
    pub fn with_kernel_stamps(mut self, wanted: bool) -> Client {
        if let Some(raw) = RawHttp::for_base(&self.base, self.api_key.as_deref()) {
            if self.raw.is_some() {
                self.raw = Some(Arc::new(raw.with_kernel_stamps(wanted)));
            }
        }
        self
    }

    /// This client with streamed requests sent through reqwest even to a
    /// plain-HTTP server, as `QEXP_HTTP_CLIENT=reqwest` does (for setting
    /// the two paths against each other).
    pub fn over_reqwest(mut self) -> Client {
        self.raw = None;
        self
    }

    /// Opens connections until `n` stand ready for streamed requests, so a
    /// point's first requests do not each set one up (and queue at the
    /// server's accept) while they are measured. Only the plain-HTTP path
    /// keeps a pool it can fill; otherwise this does nothing.
    pub async fn warm_connections(&self, n: u32) {
        if let Some(raw) = &self.raw {
            raw.warm(n as usize, self.timeouts.connect).await;
        }
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
            .map_err(|e| self.classify(e))?;
        if !resp.status().is_success() {
            return Ok(None);
        }
        resp.json::<Value>()
            .await
            .map(|v| Some(self.redact.value(v)))
            .map_err(|e| self.classify(e))
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
            .map_err(|e| self.classify(e))?;
        if !resp.status().is_success() {
            return Ok(None);
        }
        resp.text()
            .await
            .map(|t| Some(self.redact.text(&t)))
            .map_err(|e| self.classify(e))
    }

    /// POST JSON and return the status and JSON answer (Null if not JSON).
    pub async fn post_json(&self, path: &str, body: &Value) -> Result<(u16, Value), RequestError> {
        let (resp, _) = self
            .send_once_more(|f| {
                self.request_maybe_fresh(f, reqwest::Method::POST, path)
                    .timeout(self.timeouts.total)
                    .json(body)
            })
            .await
            .map_err(|e| self.classify(e))?;
        let status = resp.status().as_u16();
        let text = resp.text().await.map_err(|e| self.classify(e))?;
        let value = serde_json::from_str(&text).unwrap_or(Value::Null);
        Ok((status, self.redact.value(value)))
    }

    /// Sends one streaming request and measures it. Never fails: every
    /// failure is classified inside the returned [`Outcome`]. What the server
    /// said (error text, finish reason, the answer's text) has the API key
    /// redacted; the answer's hash and shape are of the text as it came.
    pub async fn stream(&self, req: &GenRequest) -> Outcome {
        let mut out = self.measure(req).await;
        if let Some(e) = &mut out.error {
            e.message = self.redact.text(&e.message);
        }
        if let Some(f) = &mut out.finish_reason {
            *f = self.redact.text(f);
        }
        if let Some(t) = &mut out.text {
            self.redact.in_place(t);
        }
        out
    }

    /// A classified reqwest error, the key redacted from its message.
    fn classify(&self, e: reqwest::Error) -> RequestError {
        let mut err = classify(e);
        err.message = self.redact.text(&err.message);
        err
    }

    async fn measure(&self, req: &GenRequest) -> Outcome {
        // Serialized once; every attempt sends the same bytes.
        let body = bytes::Bytes::from(req.body(true).to_string());
        let json = (!req.api.streams()).then_some(crate::answer_json::Expected {
            api: req.api,
            batch: req.batch.max(1),
        });
        let out = Outcome {
            // The answer's text, for its hash, its shape and its sample (a
            // few bytes a token, against the JSON around each one; grown
            // as it comes, so an open stream holds only what it received).
            text: json.is_none().then(String::new),
            // One arrival time per token, for the tokens asked for.
            chunk_offsets_s: Vec::with_capacity(req.max_tokens.min(1 << 16) as usize),
            ..Outcome::default()
        };
        let timeouts = &self.timeouts;
        match &self.raw {
            Some(raw) => {
                let transport = raw.stream(req.path(), &req.headers, &body, timeouts.connect);
                measure(transport, timeouts, &self.redact, out, json).await
            }
            None => {
                let transport = ViaReqwest {
                    client: self,
                    path: req.path(),
                    headers: &req.headers,
                    body,
                    on_wire: Default::default(),
                };
                measure(transport, timeouts, &self.redact, out, json).await
            }
        }
    }
}

/// One streamed request's I/O over reqwest, for [`measure`].
struct ViaReqwest<'a> {
    client: &'a Client,
    path: &'static str,
    headers: &'a [(String, String)],
    body: bytes::Bytes,
    /// When the latest attempt's body was first read by its connection.
    on_wire: Arc<OnceLock<Instant>>,
}

impl Transport for ViaReqwest<'_> {
    type Body = ReqwestBody;

    async fn attempt(&mut self, fresh: bool, _: Limit) -> Attempt<ReqwestBody> {
        let (stamped, read_at) = StampedBody::new(self.body.clone());
        self.on_wire = read_at;
        let mut rb = self
            .client
            .request_maybe_fresh(fresh, reqwest::Method::POST, self.path)
            .header(reqwest::header::CONTENT_TYPE, "application/json");
        for (name, value) in self.headers {
            rb = rb.header(name.as_str(), value.as_str());
        }
        let sent = rb.body(reqwest::Body::wrap(stamped)).send().await;
        match sent {
            Ok(resp) => {
                let head = Head {
                    status: resp.status().as_u16(),
                    content_type: header_text(&resp, reqwest::header::CONTENT_TYPE),
                    retry_after: header_text(&resp, reqwest::header::RETRY_AFTER),
                    arrived: None,
                };
                let body = ReqwestBody {
                    resp,
                    read: None,
                    ended: false,
                };
                Attempt::Answered(head, body)
            }
            Err(e) if stale_connection(&e) => Attempt::Stale(classify(e).message),
            Err(e) => {
                let err = classify(e);
                Attempt::Failed(err.class, err.message)
            }
        }
    }

    /// The moment the connection first read the body (see `sent`).
    fn wire_at(&self) -> Option<Instant> {
        self.on_wire.get().copied()
    }
}

/// A response body as reqwest hands it out, one frame per read.
struct ReqwestBody {
    resp: reqwest::Response,
    /// The latest frame, not yet taken.
    read: Option<bytes::Bytes>,
    ended: bool,
}

impl Body for ReqwestBody {
    async fn error_text(self) -> String {
        self.resp.text().await.unwrap_or_default()
    }

    async fn read_more(&mut self) -> Result<Option<Instant>, RequestError> {
        match self.resp.chunk().await {
            Ok(Some(bytes)) => self.read = Some(bytes),
            Ok(None) => self.ended = true,
            Err(e) => {
                let mut err = classify(e);
                if err.class != ErrorClass::Timeout {
                    err.class = ErrorClass::StreamBroken;
                }
                return Err(err);
            }
        }
        Ok(None)
    }

    fn take_data(&mut self, mut data: impl FnMut(&[u8])) -> Result<bool, String> {
        if let Some(bytes) = self.read.take() {
            data(&bytes);
        }
        Ok(self.ended)
    }

    /// reqwest's pool takes the connection back by itself.
    fn reuse(self) {}
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chat(history: Vec<crate::Message>) -> GenRequest {
        GenRequest {
            api: Api::Chat,
            model: "m".into(),
            prompt: "next".into(),
            max_tokens: 3,
            extra: Map::new(),
            history: Some(history),
            batch: 1,
            headers: Vec::new(),
            images: Default::default(),
        }
    }

    #[test]
    fn a_conversation_is_sent_before_the_prompt() {
        let req = chat(vec![
            crate::Message::text(Role::User, "first".into()),
            crate::Message::text(Role::Assistant, "answer".into()),
        ]);
        assert_eq!(
            req.body(true)["messages"],
            json!([
                {"role": "user", "content": "first"},
                {"role": "assistant", "content": "answer"},
                {"role": "user", "content": "next"},
            ])
        );
    }

    #[test]
    fn a_conversation_ending_in_a_tool_result_continues_from_it() {
        let call = crate::conversation::SentToolCall {
            id: "call_1_0".into(),
            kind: "function".into(),
            function: crate::conversation::SentFunction {
                name: "get_weather".into(),
                arguments: r#"{"city": "Oslo"}"#.into(),
            },
        };
        let req = chat(vec![
            crate::Message::text(Role::User, "first".into()),
            crate::Message {
                tool_calls: vec![call],
                ..crate::Message::text(Role::Assistant, String::new())
            },
            crate::Message {
                tool_call_id: Some("call_1_0".into()),
                ..crate::Message::text(Role::Tool, "next".into())
            },
        ]);
        assert_eq!(
            req.body(true)["messages"],
            json!([
                {"role": "user", "content": "first"},
                {"role": "assistant", "content": "", "tool_calls": [{"id": "call_1_0", "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\": \"Oslo\"}"}}]},
                {"role": "tool", "content": "next", "tool_call_id": "call_1_0"},
            ])
        );
    }
}
