//! HTTP/1.1 as qexp's own reader (`raw`) sees it, without any I/O: the
//! response head (status, framing, keep-alive, the headers qexp uses) and an
//! incremental body decoder (chunked, by length, or to the connection's
//! close) that hands out the body's bytes as slices of its input.

use crate::secret::excerpt;

/// How a response body ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Framing {
    Chunked,
    Length(u64),
    Close,
}

/// The parts of a response head qexp uses.
#[derive(Debug)]
pub(crate) struct ResponseHead {
    pub status: u16,
    pub framing: Framing,
    pub keep_alive: bool,
    pub content_type: Option<String>,
    pub retry_after: Option<String>,
}

/// Parses a response head at the start of `bytes`: `Ok(None)` when it is
/// not complete yet, else its length and what it says.
pub(crate) fn parse_head(bytes: &[u8]) -> Result<Option<(usize, ResponseHead)>, String> {
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
        ResponseHead {
            status,
            framing,
            keep_alive,
            content_type,
            retry_after,
        },
    )))
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
                Step::Size | Step::Trailer => match self.line(rest)? {
                    Some(used) => at += used,
                    None => break,
                },
            }
        }
        Ok(at)
    }

    /// Reads one chunk-size or trailer line at the start of `rest`: the
    /// bytes it used, or `None` when the line is not complete yet.
    fn line(&mut self, rest: &[u8]) -> Result<Option<usize>, String> {
        let Some(end) = rest.iter().position(|&b| b == b'\n') else {
            if rest.len() > MAX_LINE {
                return Err("a chunk-size line of the response body is too long".into());
            }
            return Ok(None);
        };
        let line = &rest[..end];
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        if self.step == Step::Trailer {
            if line.is_empty() {
                self.step = Step::Done;
            }
            return Ok(Some(end + 1));
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
        Ok(Some(end + 1))
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
}
