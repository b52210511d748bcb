//! The streaming path for plain `http://` servers: HTTP/1.1 written and read
//! by qexp itself over a pooled TCP connection, the chunked body decoded and
//! its SSE events parsed in place, straight off the socket.
//!
//! Why: through a general HTTP client every streamed token travels as its own
//! body frame from the connection's task to the request's task, two wake-ups
//! and a hand-off per token; at hundreds of thousands of tokens a second that
//! machinery was most of qexp's CPU. Here one task reads whatever the socket
//! holds and handles every event in it, and each read is stamped once, the
//! moment it returns: with the kernel's receive stamp where the platform
//! has one (`rx_stamp`), else when the read returns.
//!
//! It speaks only what the streaming request needs: one POST with a
//! `Content-Length` body, a response framed by chunked encoding, a length or
//! the connection's close, keep-alive. `https://`, proxies (the `*_proxy`
//! environment variables) and everything that is not the streamed request
//! (probes, metrics, tokenizing) go through reqwest, as does every request
//! when `QEXP_HTTP_CLIENT=reqwest` is set.

use crate::http1::{parse_head, Decoder, ResponseHead};
use crate::measure::{Attempt, Body, Head, Transport};
use crate::outcome::{ErrorClass, RequestError};
use crate::rx_stamp::RxStamps;
use crate::timeouts::Limit;
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
    /// How reads are stamped: by the kernel, or when they return.
    stamps: RxStamps,
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
            stamps: RxStamps::from_env(),
        })
    }

    /// This path with kernel receive stamps asked for or not (`QEXP_RX_TIMESTAMPS`
    /// decides otherwise); the pool starts empty.
    pub(crate) fn with_kernel_stamps(self, wanted: bool) -> RawHttp {
        RawHttp {
            stamps: RxStamps::wanted(wanted),
            idle: Arc::default(),
            ..self
        }
    }

    /// How this path stamps reads.
    pub(crate) fn stamps(&self) -> &RxStamps {
        &self.stamps
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
    fn request_bytes(&self, path: &str, headers: &[(String, String)], body: &[u8]) -> Vec<u8> {
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
        for (name, value) in headers {
            r.extend_from_slice(format!("{name}: {value}\r\n").as_bytes());
        }
        r.extend_from_slice(format!("Content-Length: {}\r\n\r\n", body.len()).as_bytes());
        r.extend_from_slice(body);
        r
    }

    /// One streamed request to `path` with `body`, for `measure::measure`.
    pub(crate) fn stream(
        &self,
        path: &str,
        headers: &[(String, String)],
        body: &[u8],
        connect: Duration,
    ) -> RawStream<'_> {
        RawStream {
            http: self,
            request: self.request_bytes(path, headers, body),
            connect,
            wire: None,
        }
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
                self.stamps.set_up(&sock);
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
                self.stamps.set_up(&s);
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

/// One streamed request's I/O: the attempts up to a response head.
pub(crate) struct RawStream<'a> {
    http: &'a RawHttp,
    /// Head and body, as written.
    request: Vec<u8>,
    connect: Duration,
    /// When the latest attempt's request went to the wire.
    wire: Option<Instant>,
}

impl<'a> Transport for RawStream<'a> {
    type Body = RawBody<'a>;

    async fn attempt(&mut self, fresh: bool, first_byte: Limit) -> Attempt<RawBody<'a>> {
        self.wire = None;
        let pooled = if fresh { None } else { self.http.take_idle() };
        let mut sock = match pooled {
            Some(s) => s,
            None => match self.http.connect(self.connect, first_byte).await {
                Ok(s) => s,
                Err((class, msg)) => return Attempt::Failed(class, msg),
            },
        };
        // The request goes to the wire now: times count from here.
        self.wire = Some(Instant::now());
        let answer = async {
            sock.write_all(&self.request).await.map_err(Failure::Io)?;
            read_head(&self.http.stamps, &sock).await
        };
        match answer.await {
            Ok((buf, head, arrived)) => {
                let body = RawBody {
                    http: self.http,
                    sock,
                    buf,
                    decoder: Decoder::new(head.framing),
                    keep_alive: head.keep_alive,
                };
                let head = Head {
                    status: head.status,
                    content_type: head.content_type,
                    retry_after: head.retry_after,
                    arrived: Some(arrived),
                };
                Attempt::Answered(head, body)
            }
            Err(Failure::Io(e)) if closed_under(&e) => Attempt::Stale(e.to_string()),
            Err(Failure::Io(e)) => {
                Attempt::Failed(ErrorClass::Protocol, format!("no response head: {e}"))
            }
            Err(Failure::Protocol(msg)) => Attempt::Failed(ErrorClass::Protocol, msg),
        }
    }

    fn wire_at(&self) -> Option<Instant> {
        self.wire
    }
}

/// A response body on its connection, decoded in place.
pub(crate) struct RawBody<'a> {
    http: &'a RawHttp,
    sock: TcpStream,
    /// Read and not yet decoded (at first, what came with the head).
    buf: BytesMut,
    decoder: Decoder,
    keep_alive: bool,
}

impl Body for RawBody<'_> {
    async fn error_text(mut self) -> String {
        read_error_body(&mut self.sock, &mut self.buf, self.decoder).await
    }

    async fn read_more(&mut self) -> Result<Option<Instant>, RequestError> {
        let broken = |message| RequestError {
            class: ErrorClass::StreamBroken,
            message,
        };
        match self.http.stamps.read(&self.sock, &mut self.buf).await {
            Ok((0, _)) if self.decoder.ends_at_close() => {
                self.decoder.close();
                Ok(None)
            }
            Ok((0, _)) => Err(broken(
                "the connection closed in the middle of the response body".into(),
            )),
            Ok((_, arrived)) => Ok(Some(arrived)),
            Err(e) => Err(broken(format!("reading the stream: {e}"))),
        }
    }

    fn take_data(&mut self, mut data: impl FnMut(&[u8])) -> Result<bool, String> {
        if !self.buf.is_empty() {
            let used = self.decoder.decode(&self.buf, &mut data)?;
            self.buf.advance(used);
        }
        Ok(self.decoder.is_done())
    }

    fn reuse(self) {
        let RawBody {
            http,
            mut sock,
            mut buf,
            decoder: mut body,
            keep_alive,
        } = self;
        if !keep_alive {
            return;
        }
        if body.is_done() {
            if buf.is_empty() {
                push(&http.idle, sock);
            }
            return;
        }
        // `[DONE]` came; the end of the body is usually in the same read or
        // the next. Wait for it aside, so the connection can serve again;
        // the measurement is over.
        let idle = http.idle.clone();
        tokio::spawn(async move {
            let drained = drain_body(&mut sock, &mut buf, &mut body);
            if tokio::time::timeout(END_GRACE, drained).await == Ok(true) && buf.is_empty() {
                push(&idle, sock);
            }
        });
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

/// Reads up to the end of a final (non-1xx) response head; returns the
/// bytes read after it, the head, and when the read that completed it arrived.
async fn read_head(
    stamps: &RxStamps,
    sock: &TcpStream,
) -> Result<(BytesMut, ResponseHead, Instant), Failure> {
    let mut buf = BytesMut::with_capacity(16 * 1024);
    let mut arrived = Instant::now();
    loop {
        if let Some((len, head)) = parse_head(&buf).map_err(Failure::Protocol)? {
            buf.advance(len);
            if (100..200).contains(&head.status) {
                continue; // 100 Continue and the like: the answer follows
            }
            return Ok((buf, head, arrived));
        }
        if buf.len() > MAX_HEAD_BYTES {
            return Err(Failure::Protocol(format!(
                "the response head is longer than {MAX_HEAD_BYTES} bytes"
            )));
        }
        let (n, at) = stamps.read(sock, &mut buf).await.map_err(Failure::Io)?;
        arrived = at;
        if n == 0 {
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

/// Reads an error answer's body (up to [`MAX_ERROR_BODY`]) as text.
async fn read_error_body(sock: &mut TcpStream, buf: &mut BytesMut, mut body: Decoder) -> String {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_plain_http_without_a_proxy_takes_the_raw_path() {
        // The proxy variables are not set in qexp's tests.
        let raw = RawHttp::for_base("http://127.0.0.1:8000", Some("k")).unwrap();
        assert_eq!(
            (raw.connect_to.as_str(), raw.host.as_str()),
            ("127.0.0.1:8000", "127.0.0.1:8000")
        );
        let head = String::from_utf8(raw.request_bytes("/v1/completions", &[], b"{}")).unwrap();
        assert!(
            head.starts_with("POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1:8000\r\n"),
            "{head}"
        );
        assert!(
            head.contains("Authorization: Bearer k\r\n")
                && head.ends_with("Content-Length: 2\r\n\r\n{}")
        );
        // A request class's headers go out with the request.
        let tenant = [("x-tenant".to_string(), "a".to_string())];
        let head = String::from_utf8(raw.request_bytes("/v1/completions", &tenant, b"{}")).unwrap();
        assert!(head.contains("\r\nx-tenant: a\r\n"), "{head}");
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
