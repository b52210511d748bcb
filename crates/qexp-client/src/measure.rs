//! The measuring procedure of one streamed request, written once for both
//! transports (qexp's own HTTP/1.1 reader in `raw`, reqwest in `client`):
//! the time limits, the one retry on a stale connection, when the request
//! counts as sent, the status and content-type checks, the event loop with
//! its deadline, and settling the outcome.
//!
//! A transport does only I/O ([`Transport`], [`Body`]): an attempt (a
//! connection, the request written, the response head read), an error
//! answer's body, and the body's reads. A read's arrival is the transport's
//! (qexp's own reader gives the kernel's receive stamp where it has one),
//! else it is stamped here, once, the moment the read returns. quinn is built the same way: `quinn-proto` holds
//! the protocol without I/O and `quinn` drives it. The procedure is generic
//! over the transport, so the per-read path has no boxing or dynamic calls.

use crate::answer_json::{self, not_json, Expected};
use crate::classify::{not_event_stream, status_error};
use crate::events::{read, StreamState};
use crate::outcome::{ErrorClass, Outcome, RequestError};
use crate::secret::Redactor;
use crate::sse::SseParser;
use crate::timeouts::{Limit, StreamDeadline, Timeouts};
use qexp_types::unix_now;
use std::future::Future;
use std::time::{Duration, Instant};

/// What a response head says, as far as the procedure checks it.
#[derive(Debug)]
pub(crate) struct Head {
    pub status: u16,
    pub content_type: Option<String>,
    pub retry_after: Option<String>,
    /// When the read that completed the head arrived, if the transport knows.
    pub arrived: Option<Instant>,
}

/// How one attempt to send the request ended.
pub(crate) enum Attempt<B> {
    /// The response head arrived; the body follows.
    Answered(Head, B),
    /// The connection died before any response byte, as a pooled
    /// connection the server had already closed does (the message says how).
    Stale(String),
    /// Any other failure before the response head.
    Failed(ErrorClass, String),
}

/// One way of sending the streamed request: its I/O up to the response head.
pub(crate) trait Transport {
    /// The response body it reads.
    type Body: Body;

    /// Sends the request on a pooled connection, or a new one when `fresh`,
    /// and reads the response head. It is dropped at `first_byte.at`.
    fn attempt(
        &mut self,
        fresh: bool,
        first_byte: Limit,
    ) -> impl Future<Output = Attempt<Self::Body>>;

    /// When the latest attempt's request went to the wire, if it got so far.
    fn wire_at(&self) -> Option<Instant>;
}

/// The I/O of one response body.
pub(crate) trait Body {
    /// The body of an error answer as text (empty when it cannot be read).
    fn error_text(self) -> impl Future<Output = String>;

    /// Waits for the next read from the connection; returns when it does,
    /// with when its data arrived if the transport knows better than the
    /// moment it returns (a kernel receive stamp).
    fn read_more(&mut self) -> impl Future<Output = Result<Option<Instant>, RequestError>>;

    /// Hands the body data read so far to `data`, piece by piece; true once
    /// the body has ended, `Err` when its framing is broken.
    fn take_data(&mut self, data: impl FnMut(&[u8])) -> Result<bool, String>;

    /// The stream was read to its end: the connection may serve again.
    fn reuse(self);
}

/// A failure and when it happened (seconds since the request was sent).
type Ended = (f64, RequestError);

/// Sends one streamed request over `transport` and measures it into `out`.
/// Never fails: every failure is classified inside the returned outcome,
/// the server's text in its message passed through `redact`.
///
/// With `json`, the answer is one JSON document instead of a stream
/// (embeddings, rerank: see `answer_json`).
pub(crate) async fn measure<T: Transport>(
    mut transport: T,
    timeouts: &Timeouts,
    redact: &Redactor,
    out: Outcome,
    json: Option<Expected>,
) -> Outcome {
    let mut m = Measurement::start(timeouts, redact, out);
    m.json = json;
    let body = async {
        let (head, body) = m.send(&mut transport).await?;
        m.check(head, body).await
    };
    let stream = match (body.await, json) {
        (Ok(b), None) => m.events(b).await,
        (Ok(b), Some(expected)) => m.whole(b, expected).await,
        (Err(e), _) => Err(e),
    };
    if json.is_none() {
        m.state.digest.finish(&mut m.out);
    }
    match stream {
        Ok((done, body)) => {
            m.out.end_s = m.elapsed();
            if json.is_none() {
                settle(&mut m.out, done);
            }
            body.reuse();
            m.out
        }
        Err((at, error)) => {
            m.out.end_s = at;
            m.out.error = Some(error);
            m.out
        }
    }
}

/// One request being measured: its clock, its limits and its outcome.
struct Measurement {
    out: Outcome,
    /// The moment times count from, and `out.sent_unix_s` is.
    t0: Instant,
    first_byte: Limit,
    total: Limit,
    idle: Duration,
    redact: Redactor,
    /// What the stream's events so far leave for the next.
    state: StreamState,
    /// A JSON answer instead of a stream, and what it must hold.
    json: Option<Expected>,
}

impl Measurement {
    fn start(timeouts: &Timeouts, redact: &Redactor, mut out: Outcome) -> Measurement {
        let started = tokio::time::Instant::now();
        let limit = |after: Duration, class| Limit {
            at: started + after,
            class,
            after,
        };
        let total = limit(timeouts.total, ErrorClass::Timeout);
        let first_byte = Limit::earliest(
            total,
            limit(timeouts.first_byte, ErrorClass::FirstByteTimeout),
        );
        // `t0` and `sent_unix_s` name the same moment; both move together.
        let t0 = Instant::now();
        out.sent_unix_s = unix_now();
        Measurement {
            out,
            t0,
            first_byte,
            total,
            idle: timeouts.idle,
            redact: redact.clone(),
            state: StreamState::new(redact.clone()),
            json: None,
        }
    }

    fn since(&self, t: Instant) -> f64 {
        t.saturating_duration_since(self.t0).as_secs_f64()
    }

    fn elapsed(&self) -> f64 {
        self.since(Instant::now())
    }

    /// Times count from `at` from now on, if it is later.
    fn restart_at(&mut self, at: Instant) {
        if at > self.t0 {
            self.out.sent_unix_s += (at - self.t0).as_secs_f64();
            self.t0 = at;
        }
    }

    fn ended(&self, at: f64, class: ErrorClass, message: String) -> Ended {
        (at, RequestError { class, message })
    }

    /// Sends the request, once more on a new connection if the first
    /// attempt died on a stale one (see `classify::stale_connection`): such
    /// a request almost always never reached the server, so the measurement
    /// restarts with the retry and the row's `retries` says so. Times count
    /// from the moment the request went to the wire; one that never got that
    /// far counts from when its attempt began.
    async fn send<T: Transport>(&mut self, t: &mut T) -> Result<(Head, T::Body), Ended> {
        loop {
            let fresh = self.out.retries > 0;
            let attempt = t.attempt(fresh, self.first_byte);
            let attempt = tokio::time::timeout_at(self.first_byte.at, attempt).await;
            if let Some(wire) = t.wire_at() {
                self.restart_at(wire);
            }
            let lim = self.first_byte;
            match attempt {
                Err(_) => return Err(self.ended(self.elapsed(), lim.class, lim.message())),
                Ok(Attempt::Answered(head, body)) => return Ok((head, body)),
                Ok(Attempt::Stale(_)) if self.out.retries == 0 => {
                    self.out.retries = 1;
                    self.restart_at(Instant::now());
                }
                Ok(Attempt::Stale(msg)) => {
                    let msg = format!(
                        "the server closed the connection before answering, {} times: {msg}",
                        self.out.retries + 1
                    );
                    return Err(self.ended(self.elapsed(), ErrorClass::ConnectionClosed, msg));
                }
                Ok(Attempt::Failed(class, msg)) => {
                    return Err(self.ended(self.elapsed(), class, msg))
                }
            }
        }
    }

    /// Notes the head's arrival and status; a non-2xx answer (with its
    /// body's text) or one that is not an event stream ends the request.
    async fn check<B: Body>(&mut self, head: Head, body: B) -> Result<B, Ended> {
        let arrived = head
            .arrived
            .map_or_else(|| self.elapsed(), |at| self.since(at));
        self.out.headers_s = Some(arrived);
        self.out.http_status = Some(head.status);
        if !(200..300).contains(&head.status) {
            let text = tokio::time::timeout_at(self.first_byte.at, body.error_text())
                .await
                .unwrap_or_default();
            let err = status_error(head.status, &text, head.retry_after, &self.redact);
            return Err((self.elapsed(), err));
        }
        let content_type = head.content_type.as_deref();
        let wrong = |c| match self.json {
            Some(_) => not_json(c, &self.redact),
            None => not_event_stream(c, &self.redact),
        };
        match content_type.and_then(wrong) {
            Some(err) => Err((self.elapsed(), err)),
            None => Ok(body),
        }
    }

    /// Reads the event stream to `[DONE]` or the body's end, against the
    /// first-byte, idle and total limits; each read is stamped before
    /// anything of it is parsed. The first-byte limit holds until the
    /// stream begins (its first event, or that event's first data line):
    /// keep-alive comments while the request waits for a slot do not end it.
    /// From then on the idle limit counts from each read, the one that
    /// brought the head included. Returns whether `[DONE]` came.
    async fn events<B: Body>(&mut self, mut body: B) -> Result<(bool, B), Ended> {
        let mut parser = SseParser::new();
        let mut deadline = StreamDeadline::new(self.first_byte, self.total, self.idle);
        // Bytes that came with the head arrived when it did, and their read
        // returned just now (the head's checks do not wait).
        let mut arrived = self.out.headers_s.unwrap_or_default();
        let mut returned = Instant::now();
        loop {
            let mut failed = None;
            let (out, state) = (&mut self.out, &mut self.state);
            let ended = body.take_data(|data| {
                if failed.is_none() && !state.done {
                    failed = read(&mut parser, state, out, Some(data), arrived);
                }
            });
            let ended = ended.map_err(|msg| self.ended(arrived, ErrorClass::StreamBroken, msg))?;
            if let Some(err) = failed {
                return Err((arrived, err));
            }
            if ended {
                return match read(&mut parser, &mut self.state, &mut self.out, None, arrived) {
                    Some(err) => Err((arrived, err)),
                    None => Ok((self.state.done, body)),
                };
            }
            if self.state.done {
                return Ok((true, body));
            }
            if parser.has_begun() {
                deadline.read_at(returned);
            }
            let next = tokio::select! {
                biased;
                n = body.read_more() => n,
                lim = deadline.expired() => {
                    return Err(self.ended(self.elapsed(), lim.class, lim.message()));
                }
            };
            let now = Instant::now();
            // The kernel's stamp when there is one; never before an earlier read.
            let at = match &next {
                Ok(Some(at)) => *at,
                _ => now,
            };
            arrived = self.since(at).max(arrived);
            returned = now;
            next.map_err(|e| (arrived, e))?;
        }
    }
}

impl Measurement {
    /// Reads a JSON answer whole, against the first-byte, idle and total
    /// limits; E2E is the arrival of its last read. Returns true (it ended).
    async fn whole<B: Body>(
        &mut self,
        mut body: B,
        expected: Expected,
    ) -> Result<(bool, B), Ended> {
        let mut deadline = StreamDeadline::new(self.first_byte, self.total, self.idle);
        let mut arrived = self.out.headers_s.unwrap_or_default();
        let mut bytes: Vec<u8> = Vec::new();
        loop {
            let ended = body.take_data(|data| bytes.extend_from_slice(data));
            let ended = ended.map_err(|msg| self.ended(arrived, ErrorClass::StreamBroken, msg))?;
            if ended {
                self.out.last_token_s = Some(arrived);
                answer_json::settle(&mut self.out, &bytes, expected).map_err(|e| (arrived, e))?;
                return Ok((true, body));
            }
            if !bytes.is_empty() {
                deadline.read_at(Instant::now());
            }
            let next = tokio::select! {
                biased;
                n = body.read_more() => n,
                lim = deadline.expired() => {
                    return Err(self.ended(self.elapsed(), lim.class, lim.message()));
                }
            };
            let at = match &next {
                Ok(Some(at)) => *at,
                _ => Instant::now(),
            };
            arrived = self.since(at).max(arrived);
            next.map_err(|e| (arrived, e))?;
        }
    }
}

/// The failure a stream that ended shows, if any: closed before `[DONE]`
/// and a finish reason, ended without `[DONE]`, or without any content.
fn settle(out: &mut Outcome, done: bool) {
    let end = if !done && out.finish_reason.is_none() {
        Some((
            ErrorClass::StreamBroken,
            "the stream closed before [DONE] or a finish_reason",
        ))
    } else if !done {
        Some((
            ErrorClass::MissingDone,
            "the stream ended after its finish_reason without data: [DONE]",
        ))
    } else if out.content_chunks == 0 {
        Some((
            ErrorClass::NoOutput,
            "the stream finished without generated content",
        ))
    } else {
        None
    };
    if let Some((class, message)) = end {
        out.error = Some(RequestError {
            class,
            message: message.into(),
        });
    }
}
