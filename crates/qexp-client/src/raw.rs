//! The streaming path for plain `http://` servers: HTTP/1.1 written and read
//! by qexp itself over a pooled TCP connection, the chunked body decoded and
//! its SSE events parsed in place, straight off the socket.
//!
//! Why: through a general HTTP client every streamed token travels as its own
//! body frame from the connection's task to the request's task, two wake-ups
//! and a hand-off per token; at hundreds of thousands of tokens a second that
//! machinery was most of qexp's CPU. Here one task reads whatever the socket
//! holds and handles every event in it, and each read is stamped once, the
//! moment it returns.
//!
//! It speaks only what the streaming request needs: one POST with a
//! `Content-Length` body, a response framed by chunked encoding, a length or
//! the connection's close, keep-alive. `https://`, proxies (the `*_proxy`
//! environment variables) and everything that is not the streamed request
//! (probes, metrics, tokenizing) go through reqwest, as does every request
//! when `QEXP_HTTP_CLIENT=reqwest` is set.

use crate::classify::{error_text, excerpt, not_event_stream, status_error};
use crate::client::{fail, settle, unix_now, GenRequest};
use crate::events::{read, StreamState};
use crate::outcome::{ErrorClass, Outcome};
use crate::sse::SseParser;
use crate::timeouts::{Limit, StreamDeadline, Timeouts};
use bytes::{Buf, BytesMut};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// The longest response head qexp reads.
const MAX_HEAD_BYTES: usize = 64 * 1024;
/// The most of an error answer's body qexp reads.
const MAX_ERROR_BODY: usize = 64 * 1024;
/// How long a finished stream may take to send the end of its body, so that
/// its connection can be used again.
const END_GRACE: Duration = Duration::from_millis(200);

/// A plain-HTTP server's connections. (No `Debug`: it holds the API key.)
pub(crate) struct RawHttp {
    /// `host:port` to connect to.
    connect_to: String,
    /// The `Host` header.
    host: String,
    /// The base URL's path, without a trailing `/` (usually empty).
    prefix: String,
    /// `Authorization` header line, when a key is set (never printed).
    auth: Option<String>,
    /// Idle keep-alive connections.
    idle: Arc<Mutex<Vec<TcpStream>>>,
}

impl RawHttp {
    /// The raw path for `base` (qexp's normalised base URL), or `None` when
    /// reqwest must carry the request: not `http://`, a proxy configured, or
    /// `QEXP_HTTP_CLIENT=reqwest`.
    pub(crate) fn for_base(base: &str, api_key: Option<&str>) -> Option<RawHttp> {
        if std::env::var("QEXP_HTTP_CLIENT").is_ok_and(|v| v.eq_ignore_ascii_case("reqwest")) {
            return None;
        }
        let proxied = ["http_proxy", "HTTP_PROXY", "all_proxy", "ALL_PROXY"]
            .iter()
            .any(|k| std::env::var_os(k).is_some_and(|v| !v.is_empty()));
        if proxied {
            return None;
        }
        let url = reqwest::Url::parse(base).ok()?;
        if url.scheme() != "http" || url.query().is_some() || !url.username().is_empty() {
            return None;
        }
        let host = url.host_str()?.to_string();
        let port = url.port_or_known_default()?;
        Some(RawHttp {
            connect_to: format!("{host}:{port}"),
            host: match url.port() {
                Some(p) => format!("{host}:{p}"),
                None => host,
            },
            prefix: url.path().trim_end_matches('/').to_string(),
            auth: api_key.map(|k| format!("Authorization: Bearer {k}\r\n")),
            idle: Arc::default(),
        })
    }

    /// An idle connection the server has not closed (as far as can be
    /// told: its end may still be on the way, which the retry covers).
    fn take_idle(&self) -> Option<TcpStream> {
        let mut idle = self.idle.lock().ok()?;
        while let Some(sock) = idle.pop() {
            match sock.try_read(&mut [0u8; 1]) {
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => return Some(sock),
                _ => {} // closed, broken, or talking out of turn: dropped
            }
        }
        None
    }

    /// The request's head and body, as written.
    fn request_bytes(&self, path: &str, body: &[u8]) -> Vec<u8> {
        let mut r = Vec::with_capacity(256 + body.len());
        r.extend_from_slice(b"POST ");
        r.extend_from_slice(self.prefix.as_bytes());
        r.extend_from_slice(path.as_bytes());
        r.extend_from_slice(b" HTTP/1.1\r\nHost: ");
        r.extend_from_slice(self.host.as_bytes());
        r.extend_from_slice(b"\r\nContent-Type: application/json\r\nAccept: */*\r\n");
        if let Some(a) = &self.auth {
            r.extend_from_slice(a.as_bytes());
        }
        r.extend_from_slice(format!("Content-Length: {}\r\n\r\n", body.len()).as_bytes());
        r.extend_from_slice(body);
        r
    }

    /// Sends one streaming request and measures it, as `Client::measure`
    /// does over reqwest: the same limits, classes and retry.
    pub(crate) async fn measure(
        &self,
        req: &GenRequest,
        body: &[u8],
        timeouts: &Timeouts,
        (first_byte, total): (Limit, Limit),
        mut out: Outcome,
    ) -> Outcome {
        let request = self.request_bytes(req.path(), body);
        // `sent_unix_s` and `t0` name the same moment; both move to the wire below.
        let mut t0 = Instant::now();
        out.sent_unix_s = unix_now();
        let since = |t0: Instant| Instant::now().saturating_duration_since(t0).as_secs_f64();
        let (mut sock, mut buf, head) = loop {
            let fresh_only = out.retries > 0;
            let pooled = if fresh_only { None } else { self.take_idle() };
            let sock = match pooled {
                Some(s) => Ok(s),
                None => self.connect(timeouts.connect, first_byte).await,
            };
            let mut sock = match sock {
                Ok(s) => s,
                Err((class, msg)) => return fail(out, since(t0), class, &msg),
            };
            // The request goes to the wire now: times count from here.
            let wire = Instant::now();
            out.sent_unix_s += wire.saturating_duration_since(t0).as_secs_f64();
            t0 = wire;
            let attempt = async {
                sock.write_all(&request).await.map_err(Failure::Io)?;
                read_head(&mut sock).await
            };
            match tokio::time::timeout_at(first_byte.at, attempt).await {
                Err(_) => return fail(out, since(t0), first_byte.class, &first_byte.message()),
                Ok(Ok((buf, head))) => break (sock, buf, head),
                Ok(Err(Failure::Io(e))) if closed_under(&e) => {
                    if out.retries == 0 {
                        // Nothing reached the server's generator: measure again.
                        out.retries = 1;
                        let now = Instant::now();
                        out.sent_unix_s += now.saturating_duration_since(t0).as_secs_f64();
                        t0 = now;
                        continue;
                    }
                    let msg =
                        format!("the server closed the connection before answering, 2 times: {e}");
                    return fail(out, since(t0), ErrorClass::ConnectionClosed, &msg);
                }
                Ok(Err(Failure::Io(e))) => {
                    let msg = format!("no response head: {e}");
                    return fail(out, since(t0), ErrorClass::Protocol, &msg);
                }
                Ok(Err(Failure::Protocol(msg))) => {
                    return fail(out, since(t0), ErrorClass::Protocol, &msg)
                }
            }
        };
        out.headers_s = Some(since(t0));
        out.http_status = Some(head.status);
        if !(200..300).contains(&head.status) {
            let text = tokio::time::timeout_at(
                first_byte.at,
                read_error_body(&mut sock, &mut buf, head.framing),
            )
            .await
            .unwrap_or_default();
            let err = status_error(head.status, &error_text(&text), head.retry_after);
            return fail(out, since(t0), err.class, &err.message);
        }
        if let Some(err) = head.content_type.as_deref().and_then(not_event_stream) {
            return fail(out, since(t0), err.class, &err.message);
        }
        let mut parser = SseParser::new();
        let mut state = StreamState::default();
        let mut body = Decoder::new(head.framing);
        // Bytes that came with the head arrived when it did.
        let mut arrived = out.headers_s.unwrap_or_default();
        let mut deadline = StreamDeadline::new(first_byte, total, timeouts.idle);
        let mut ended = false;
        loop {
            if !buf.is_empty() {
                let mut failed = None;
                let used = body.decode(&buf, |data| {
                    if failed.is_none() && !state.done {
                        failed = read(&mut parser, &mut state, &mut out, Some(data), arrived);
                    }
                });
                match used {
                    Ok(n) => buf.advance(n),
                    Err(msg) => return fail(out, arrived, ErrorClass::StreamBroken, &msg),
                }
                if let Some(err) = failed {
                    return fail(out, arrived, err.class, &err.message);
                }
            }
            if body.is_done() {
                if let Some(err) = read(&mut parser, &mut state, &mut out, None, arrived) {
                    return fail(out, arrived, err.class, &err.message);
                }
                ended = true;
                break;
            }
            if state.done {
                break;
            }
            buf.reserve(16 * 1024);
            let n = tokio::select! {
                biased;
                n = sock.read_buf(&mut buf) => n,
                lim = deadline.expired() => {
                    return fail(out, since(t0), lim.class, &lim.message());
                }
            };
            // The arrival time is taken before anything of the read is parsed.
            let now = Instant::now();
            arrived = now.saturating_duration_since(t0).as_secs_f64();
            deadline.read_at(now);
            match n {
                Ok(0) if body.ends_at_close() => body.close(),
                Ok(0) => {
                    let msg = "the connection closed in the middle of the response body";
                    return fail(out, arrived, ErrorClass::StreamBroken, msg);
                }
                Ok(_) => {}
                Err(e) => {
                    let msg = format!("reading the stream: {e}");
                    return fail(out, arrived, ErrorClass::StreamBroken, &msg);
                }
            }
        }
        out.end_s = since(t0);
        settle(&mut out, state.done);
        if head.keep_alive {
            if ended {
                if buf.is_empty() {
                    push(&self.idle, sock);
                }
            } else {
                // `[DONE]` came; the end of the body is usually in the same
                // read or the next. Wait for it aside, so the connection can
                // serve again; the measurement is over.
                let idle = self.idle.clone();
                tokio::spawn(async move {
                    let drained = drain_body(&mut sock, &mut buf, &mut body);
                    if tokio::time::timeout(END_GRACE, drained).await == Ok(true) && buf.is_empty()
                    {
                        push(&idle, sock);
                    }
                });
            }
        }
        out
    }

    /// Opens connections until `n` are idle, a few at a time; one that
    /// cannot be opened ends the warm-up (the requests will say why).
    pub(crate) async fn warm(&self, n: usize, connect: Duration) {
        const AT_ONCE: usize = 64;
        let have = self.idle.lock().map_or(0, |i| i.len());
        let mut missing = n.saturating_sub(have);
        while missing > 0 {
            let batch = missing.min(AT_ONCE);
            let opened = futures_util::future::join_all((0..batch).map(|_| async {
                let s = tokio::time::timeout(connect, TcpStream::connect(&self.connect_to)).await;
                s.ok().and_then(Result::ok)
            }))
            .await;
            let ok = opened.iter().filter(|s| s.is_some()).count();
            for sock in opened.into_iter().flatten() {
                let _ = sock.set_nodelay(true);
                push(&self.idle, sock);
            }
            if ok < batch {
                return;
            }
            missing -= batch;
        }
    }

    /// A new connection, within the connect limit and the first-byte deadline.
    async fn connect(
        &self,
        connect: Duration,
        first_byte: Limit,
    ) -> Result<TcpStream, (ErrorClass, String)> {
        let deadline = tokio::time::Instant::now() + connect;
        let by_connect = deadline < first_byte.at;
        let at = if by_connect { deadline } else { first_byte.at };
        match tokio::time::timeout_at(at, TcpStream::connect(&self.connect_to)).await {
            Ok(Ok(s)) => {
                let _ = s.set_nodelay(true);
                Ok(s)
            }
            Ok(Err(e)) => Err((
                ErrorClass::Connect,
                format!("cannot connect to {}: {e}", self.connect_to),
            )),
            Err(_) if by_connect => Err((
                ErrorClass::Connect,
                format!(
                    "no connection to {} within the connect timeout ({} s)",
                    self.connect_to,
                    connect.as_secs_f64()
                ),
            )),
            Err(_) => Err((first_byte.class, first_byte.message())),
        }
    }
}

fn push(idle: &Mutex<Vec<TcpStream>>, sock: TcpStream) {
    if let Ok(mut idle) = idle.lock() {
        idle.push(sock);
    }
}

/// What went wrong before a response head was read.
enum Failure {
    Io(std::io::Error),
    Protocol(String),
}

/// True for the ways a connection dies under a request before any answer:
/// reset, aborted, a broken pipe, or closed without a byte.
fn closed_under(e: &std::io::Error) -> bool {
    use std::io::ErrorKind::*;
    matches!(
        e.kind(),
        ConnectionReset | ConnectionAborted | BrokenPipe | UnexpectedEof
    )
}

/// How a response body ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Framing {
    Chunked,
    Length(u64),
    Close,
}

/// The parts of a response head qexp uses.
#[derive(Debug)]
pub(crate) struct Head {
    pub status: u16,
    pub framing: Framing,
    pub keep_alive: bool,
    pub content_type: Option<String>,
    pub retry_after: Option<String>,
}

/// Reads up to the end of a final (non-1xx) response head; returns the
/// bytes read after it and the head.
async fn read_head(sock: &mut TcpStream) -> Result<(BytesMut, Head), Failure> {
    let mut buf = BytesMut::with_capacity(16 * 1024);
    loop {
        if let Some((len, head)) = parse_head(&buf).map_err(Failure::Protocol)? {
            buf.advance(len);
            if (100..200).contains(&head.status) {
                continue; // 100 Continue and the like: the answer follows
            }
            return Ok((buf, head));
        }
        if buf.len() > MAX_HEAD_BYTES {
            return Err(Failure::Protocol(format!(
                "the response head is longer than {MAX_HEAD_BYTES} bytes"
            )));
        }
        buf.reserve(16 * 1024);
        if sock.read_buf(&mut buf).await.map_err(Failure::Io)? == 0 {
            let kind = if buf.is_empty() {
                std::io::ErrorKind::UnexpectedEof
            } else {
                std::io::ErrorKind::InvalidData
            };
            return Err(Failure::Io(std::io::Error::new(
                kind,
                "the server closed the connection before a complete response head",
            )));
        }
    }
}

/// Parses a response head at the start of `bytes`: `Ok(None)` when it is
/// not complete yet, else its length and what it says.
pub(crate) fn parse_head(bytes: &[u8]) -> Result<Option<(usize, Head)>, String> {
    let mut headers = [httparse::EMPTY_HEADER; 64];
    let mut resp = httparse::Response::new(&mut headers);
    let len = match resp.parse(bytes) {
        Ok(httparse::Status::Complete(n)) => n,
        Ok(httparse::Status::Partial) => return Ok(None),
        Err(e) => return Err(format!("the response is not HTTP/1.1: {e}")),
    };
    let status = resp.code.unwrap_or(0);
    let mut keep_alive = resp.version == Some(1);
    let (mut chunked, mut length, mut content_type, mut retry_after) = (false, None, None, None);
    for h in resp.headers.iter() {
        let value = String::from_utf8_lossy(h.value).trim().to_string();
        let name = h.name;
        if name.eq_ignore_ascii_case("transfer-encoding") {
            chunked = value
                .rsplit(',')
                .next()
                .is_some_and(|last| last.trim().eq_ignore_ascii_case("chunked"));
        } else if name.eq_ignore_ascii_case("content-length") {
            length = Some(
                value
                    .parse::<u64>()
                    .map_err(|_| format!("bad Content-Length `{}`", excerpt(&value)))?,
            );
        } else if name.eq_ignore_ascii_case("connection") {
            let v = value.to_ascii_lowercase();
            if v.contains("close") {
                keep_alive = false;
            } else if v.contains("keep-alive") {
                keep_alive = true;
            }
        } else if name.eq_ignore_ascii_case("content-type") {
            content_type = Some(value);
        } else if name.eq_ignore_ascii_case("retry-after") {
            retry_after = Some(value);
        }
    }
    let framing = if status == 204 || status == 304 {
        Framing::Length(0)
    } else if chunked {
        Framing::Chunked
    } else if let Some(n) = length {
        Framing::Length(n)
    } else {
        keep_alive = false;
        Framing::Close
    };
    Ok(Some((
        len,
        Head {
            status,
            framing,
            keep_alive,
            content_type,
            retry_after,
        },
    )))
}

/// Reads an error answer's body (up to [`MAX_ERROR_BODY`]) as text.
async fn read_error_body(sock: &mut TcpStream, buf: &mut BytesMut, framing: Framing) -> String {
    let mut body = Decoder::new(framing);
    let mut text = Vec::new();
    loop {
        let used = body.decode(buf, |d| {
            let room = MAX_ERROR_BODY.saturating_sub(text.len());
            text.extend_from_slice(&d[..d.len().min(room)]);
        });
        match used {
            Ok(n) => buf.advance(n),
            Err(_) => break,
        }
        if body.is_done() || text.len() >= MAX_ERROR_BODY {
            break;
        }
        buf.reserve(16 * 1024);
        match sock.read_buf(buf).await {
            Ok(0) if body.ends_at_close() => body.close(),
            Ok(0) | Err(_) => break,
            Ok(_) => {}
        }
    }
    String::from_utf8_lossy(&text).into_owned()
}

/// Reads to the end of the body, discarding it; true when it ended.
async fn drain_body(sock: &mut TcpStream, buf: &mut BytesMut, body: &mut Decoder) -> bool {
    loop {
        match body.decode(buf, |_| {}) {
            Ok(n) => buf.advance(n),
            Err(_) => return false,
        }
        if body.is_done() {
            return true;
        }
        buf.reserve(4096);
        match sock.read_buf(buf).await {
            Ok(0) | Err(_) => return false,
            Ok(_) => {}
        }
    }
}

/// Where a body decoder stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Step {
    /// Expecting a chunk-size line.
    Size,
    /// Inside a chunk's data, this many bytes left.
    Data(u64),
    /// Expecting the CRLF after a chunk's data.
    DataEnd,
    /// After the last chunk: trailer lines up to an empty one.
    Trailer,
    /// Plain bytes, this many left (`u64::MAX`: until the connection closes).
    Raw(u64),
    Done,
}

/// An incremental HTTP/1.1 body decoder that hands out the body's bytes as
/// slices of the input (no copy).
#[derive(Debug)]
pub(crate) struct Decoder {
    step: Step,
    close_ends: bool,
}

/// The longest chunk-size or trailer line accepted.
const MAX_LINE: usize = 4096;

impl Decoder {
    pub(crate) fn new(framing: Framing) -> Decoder {
        let (step, close_ends) = match framing {
            Framing::Chunked => (Step::Size, false),
            Framing::Length(0) => (Step::Done, false),
            Framing::Length(n) => (Step::Raw(n), false),
            Framing::Close => (Step::Raw(u64::MAX), true),
        };
        Decoder { step, close_ends }
    }

    pub(crate) fn is_done(&self) -> bool {
        self.step == Step::Done
    }

    /// True when the connection's close is the body's end.
    pub(crate) fn ends_at_close(&self) -> bool {
        self.close_ends
    }

    /// The connection closed: the end of a close-framed body.
    pub(crate) fn close(&mut self) {
        self.step = Step::Done;
    }

    /// Decodes as much of `input` as is complete, handing each piece of body
    /// data to `data`; returns the bytes used (the rest is an incomplete
    /// chunk-size or trailer line, to come again with more bytes).
    pub(crate) fn decode<'a>(
        &mut self,
        input: &'a [u8],
        mut data: impl FnMut(&'a [u8]),
    ) -> Result<usize, String> {
        let mut at = 0;
        while at < input.len() {
            let rest = &input[at..];
            match self.step {
                Step::Done => break,
                Step::Raw(left) => {
                    let n = rest.len().min(usize::try_from(left).unwrap_or(usize::MAX));
                    data(&rest[..n]);
                    at += n;
                    if left != u64::MAX {
                        let left = left - n as u64;
                        self.step = if left == 0 {
                            Step::Done
                        } else {
                            Step::Raw(left)
                        };
                    }
                }
                Step::Data(left) => {
                    let n = rest.len().min(usize::try_from(left).unwrap_or(usize::MAX));
                    data(&rest[..n]);
                    at += n;
                    let left = left - n as u64;
                    self.step = if left == 0 {
                        Step::DataEnd
                    } else {
                        Step::Data(left)
                    };
                }
                Step::DataEnd => match rest {
                    [b'\r', b'\n', ..] => {
                        at += 2;
                        self.step = Step::Size;
                    }
                    [b'\r'] => break,
                    [b'\n', ..] => {
                        at += 1;
                        self.step = Step::Size;
                    }
                    _ => return Err("a chunk of the response body does not end in CRLF".into()),
                },
                Step::Size | Step::Trailer => {
                    let Some(end) = rest.iter().position(|&b| b == b'\n') else {
                        if rest.len() > MAX_LINE {
                            return Err("a chunk-size line of the response body is too long".into());
                        }
                        break;
                    };
                    let line = &rest[..end];
                    let line = line.strip_suffix(b"\r").unwrap_or(line);
                    at += end + 1;
                    if self.step == Step::Trailer {
                        if line.is_empty() {
                            self.step = Step::Done;
                        }
                        continue;
                    }
                    let hex = line.split(|&b| b == b';').next().unwrap_or_default();
                    let hex = std::str::from_utf8(hex).unwrap_or("").trim();
                    let size = u64::from_str_radix(hex, 16).map_err(|_| {
                        format!(
                            "bad chunk size `{}` in the response body",
                            excerpt(&String::from_utf8_lossy(line))
                        )
                    })?;
                    self.step = if size == 0 {
                        Step::Trailer
                    } else {
                        Step::Data(size)
                    };
                }
            }
        }
        Ok(at)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const CHUNKED: &[u8] = b"7\r\ndata: a\r\n4;ext=1\r\n\n\nda\r\n10\r\nta: [DONE]\n\n----\r\n0\r\nX-Trailer: 1\r\n\r\n";

    fn decode_in_pieces(input: &[u8], cuts: &[usize]) -> (Vec<u8>, bool) {
        let mut d = Decoder::new(Framing::Chunked);
        let mut out = Vec::new();
        let mut pending: Vec<u8> = Vec::new();
        let mut start = 0;
        for &c in cuts.iter().chain([input.len()].iter()) {
            pending.extend_from_slice(&input[start..c]);
            start = c;
            let used = d.decode(&pending, |s| out.extend_from_slice(s)).unwrap();
            pending.drain(..used);
        }
        (out, d.is_done())
    }

    #[test]
    fn chunked_bodies_decode_the_same_however_they_are_split() {
        let whole = decode_in_pieces(CHUNKED, &[]);
        assert_eq!(whole.0, b"data: a\n\ndata: [DONE]\n\n----");
        assert!(whole.1);
        for i in 0..=CHUNKED.len() {
            assert_eq!(decode_in_pieces(CHUNKED, &[i]), whole, "split at {i}");
            for j in i..=CHUNKED.len() {
                assert_eq!(
                    decode_in_pieces(CHUNKED, &[i, j]),
                    whole,
                    "split at {i},{j}"
                );
            }
        }
    }

    #[test]
    fn bad_chunk_framing_is_an_error() {
        let mut d = Decoder::new(Framing::Chunked);
        assert!(d.decode(b"zz\r\n", |_| {}).is_err());
        let mut d = Decoder::new(Framing::Chunked);
        assert!(d.decode(b"2\r\nabXY", |_| {}).is_err());
        let mut d = Decoder::new(Framing::Chunked);
        let long = vec![b'1'; MAX_LINE + 1];
        assert!(d.decode(&long, |_| {}).is_err());
    }

    #[test]
    fn length_and_close_framed_bodies() {
        let mut d = Decoder::new(Framing::Length(4));
        let mut out = Vec::new();
        assert_eq!(d.decode(b"abcdef", |s| out.extend_from_slice(s)), Ok(4));
        assert!(d.is_done() && out == b"abcd");
        let mut d = Decoder::new(Framing::Close);
        assert_eq!(d.decode(b"xyz", |_| {}), Ok(3));
        assert!(!d.is_done() && d.ends_at_close());
        d.close();
        assert!(d.is_done());
    }

    #[test]
    fn response_heads_say_status_framing_and_keep_alive() {
        let (len, h) = parse_head(
            b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\nrest",
        )
        .unwrap()
        .unwrap();
        assert_eq!(len, 80);
        assert_eq!(
            (h.status, h.framing, h.keep_alive),
            (200, Framing::Chunked, true)
        );
        assert_eq!(h.content_type.as_deref(), Some("text/event-stream"));
        let (_, h) = parse_head(b"HTTP/1.1 503 Busy\r\nContent-Length: 2\r\nConnection: close\r\nRetry-After: 7\r\n\r\n")
            .unwrap()
            .unwrap();
        assert_eq!(
            (h.status, h.framing, h.keep_alive),
            (503, Framing::Length(2), false)
        );
        assert_eq!(h.retry_after.as_deref(), Some("7"));
        let (_, h) = parse_head(b"HTTP/1.0 200 OK\r\n\r\n").unwrap().unwrap();
        assert_eq!((h.framing, h.keep_alive), (Framing::Close, false));
        assert!(parse_head(b"HTTP/1.1 200 OK\r\nContent-Ty")
            .unwrap()
            .is_none());
        assert!(parse_head(b"SSH-2.0-OpenSSH\r\n\r\n").is_err());
        assert!(parse_head(b"HTTP/1.1 200 OK\r\nContent-Length: x\r\n\r\n").is_err());
    }

    #[test]
    fn only_plain_http_without_a_proxy_takes_the_raw_path() {
        // The proxy variables are not set in qexp's tests.
        let raw = RawHttp::for_base("http://127.0.0.1:8000", Some("k")).unwrap();
        assert_eq!(
            (raw.connect_to.as_str(), raw.host.as_str()),
            ("127.0.0.1:8000", "127.0.0.1:8000")
        );
        let head = String::from_utf8(raw.request_bytes("/v1/completions", b"{}")).unwrap();
        assert!(
            head.starts_with("POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1:8000\r\n"),
            "{head}"
        );
        assert!(
            head.contains("Authorization: Bearer k\r\n")
                && head.ends_with("Content-Length: 2\r\n\r\n{}")
        );
        let raw = RawHttp::for_base("http://example.test/api", None).unwrap();
        assert_eq!(
            (
                raw.connect_to.as_str(),
                raw.host.as_str(),
                raw.prefix.as_str()
            ),
            ("example.test:80", "example.test", "/api")
        );
        assert!(RawHttp::for_base("https://example.test", None).is_none());
    }
}
