//! Incremental Server-Sent Events parser (the WHATWG event-stream grammar,
//! restricted to what OpenAI-compatible servers send, plus the `error:`
//! field llama.cpp streams its errors in, which the grammar would drop).
//!
//! Bytes may arrive split anywhere: inside a line, between `\r` and `\n`,
//! inside a multi-byte character. The parser keeps the partial line and
//! emits an event only at the blank line that ends it. A line longer than
//! [`MAX_LINE_BYTES`] is cut and noted, so a server cannot make the client
//! hold an unbounded line in memory.
//!
//! It is on the load generator's hot path (one event per streamed token), so
//! it works over the bytes as read: lines that arrive whole are read in
//! place, events are handed out borrowed, and its buffers are reused from
//! one line and one event to the next (no allocation per event once they
//! have grown to the stream's line length).

/// The longest line kept: a streamed delta is a few tokens, far below this.
pub const MAX_LINE_BYTES: usize = 1 << 20;

/// One dispatched event, borrowed from the parser until the next one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Event<'a> {
    /// The `event:` field, when the server sent one.
    pub event: Option<&'a str>,
    /// All `data:` lines of the event, joined with `\n` (empty when it had none).
    pub data: &'a str,
    /// All `error:` lines of the event, joined with `\n`, when it had any:
    /// llama.cpp sends a failure as `error: {json}` (then `data: [DONE]`).
    pub error: Option<&'a str>,
}

/// An [`Event`] that owns its text (for keeping events past the next one).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SseEvent {
    /// The `event:` field, when the server sent one.
    pub event: Option<String>,
    /// All `data:` lines of the event, joined with `\n` (empty when it had none).
    pub data: String,
    /// All `error:` lines of the event, joined with `\n`, when it had any.
    pub error: Option<String>,
}

impl From<Event<'_>> for SseEvent {
    fn from(e: Event<'_>) -> SseEvent {
        SseEvent {
            event: e.event.map(str::to_string),
            data: e.data.to_string(),
            error: e.error.map(str::to_string),
        }
    }
}

/// Parser state across reads.
#[derive(Debug, Default)]
pub struct SseParser {
    /// The start of a line whose end has not arrived yet.
    partial: Vec<u8>,
    /// The last read ended in `\r`: a `\n` opening the next one belongs to it.
    after_cr: bool,
    /// The pending event's data (valid when `has_data`).
    data: String,
    has_data: bool,
    /// The pending event's name (valid when `has_event`).
    event: String,
    has_event: bool,
    /// The pending event's `error:` lines (valid when `has_error`).
    error: String,
    has_error: bool,
    /// A `data:` or `error:` line has been read.
    begun: bool,
    invalid_utf8: bool,
    oversized: bool,
}

impl SseParser {
    /// A parser at the start of a stream.
    pub fn new() -> SseParser {
        SseParser::default()
    }

    /// Feeds one read; `emit` hears each event it completes, in order.
    pub fn feed(&mut self, bytes: &[u8], mut emit: impl FnMut(Event<'_>)) {
        let mut rest = bytes;
        if self.after_cr && !rest.is_empty() {
            self.after_cr = false;
            if rest[0] == b'\n' {
                rest = &rest[1..];
            }
        }
        while let Some(end) = rest.iter().position(|&b| b == b'\n' || b == b'\r') {
            if self.partial.is_empty() {
                self.line(&rest[..end], &mut emit);
            } else {
                self.keep(&rest[..end]);
                let line = std::mem::take(&mut self.partial);
                self.line(&line, &mut emit);
                self.partial = line;
                self.partial.clear();
            }
            let cr = rest[end] == b'\r';
            rest = &rest[end + 1..];
            if cr {
                match rest.first() {
                    Some(b'\n') => rest = &rest[1..],
                    Some(_) => {}
                    None => self.after_cr = true,
                }
            }
        }
        self.keep(rest);
    }

    /// Ends the stream: an unterminated final event is dispatched, as many
    /// servers omit the last blank line before closing.
    pub fn finish(&mut self, mut emit: impl FnMut(Event<'_>)) {
        if !self.partial.is_empty() {
            let line = std::mem::take(&mut self.partial);
            self.line(&line, &mut emit);
        }
        self.dispatch(&mut emit);
    }

    /// True once a `data:` or `error:` line has been read, even of an event
    /// not yet complete: the stream has begun. Comments (the keep-alives a
    /// server sends while a request waits) and blank lines do not begin it.
    pub fn has_begun(&self) -> bool {
        self.begun
    }

    /// True when a line that was not valid UTF-8 was seen (and skipped).
    pub fn saw_invalid_utf8(&self) -> bool {
        self.invalid_utf8
    }

    /// True when a line longer than [`MAX_LINE_BYTES`] was seen (and cut).
    pub fn saw_oversized_line(&self) -> bool {
        self.oversized
    }

    /// Adds the bytes of an unfinished line, up to [`MAX_LINE_BYTES`].
    fn keep(&mut self, bytes: &[u8]) {
        let room = MAX_LINE_BYTES - self.partial.len();
        if bytes.len() > room {
            self.oversized = true;
        }
        self.partial
            .extend_from_slice(&bytes[..bytes.len().min(room)]);
    }

    /// Handles one complete line (without its end).
    fn line(&mut self, line: &[u8], emit: &mut impl FnMut(Event<'_>)) {
        if line.is_empty() {
            self.dispatch(emit);
            return;
        }
        let line = if line.len() > MAX_LINE_BYTES {
            self.oversized = true;
            &line[..MAX_LINE_BYTES]
        } else {
            line
        };
        let Ok(line) = std::str::from_utf8(line) else {
            self.invalid_utf8 = true;
            return;
        };
        if line.starts_with(':') {
            return; // comment / keep-alive
        }
        let (field, value) = match line.split_once(':') {
            Some((f, v)) => (f, v.strip_prefix(' ').unwrap_or(v)),
            None => (line, ""),
        };
        match field {
            "data" => {
                if self.has_data {
                    self.data.push('\n');
                }
                self.data.push_str(value);
                self.has_data = true;
                self.begun = true;
            }
            "error" => {
                if self.has_error {
                    self.error.push('\n');
                }
                self.error.push_str(value);
                self.has_error = true;
                self.begun = true;
            }
            "event" => {
                self.event.clear();
                self.event.push_str(value);
                self.has_event = true;
            }
            _ => {} // id, retry and unknown fields carry nothing qexp measures
        }
    }

    fn dispatch(&mut self, emit: &mut impl FnMut(Event<'_>)) {
        if self.has_data || self.has_error {
            emit(Event {
                event: self.has_event.then_some(self.event.as_str()),
                data: &self.data,
                error: self.has_error.then_some(self.error.as_str()),
            });
        }
        self.data.clear();
        self.event.clear();
        self.error.clear();
        self.has_data = false;
        self.has_event = false;
        self.has_error = false;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const STREAM: &[u8] = b": keep-alive comment\r\n\
data: {\"a\":1}\r\n\r\n\
data: {\"b\":\"\xc3\xa9t\xc3\xa9\"}\n\n\
event: error\ndata: line1\ndata: line2\n\n\
data:nospace\r\r\
data: [DONE]\n\n";

    fn parse_in_pieces(pieces: &[&[u8]]) -> Vec<SseEvent> {
        let mut p = SseParser::new();
        let mut out = Vec::new();
        for piece in pieces {
            p.feed(piece, |e| out.push(e.into()));
        }
        p.finish(|e| out.push(e.into()));
        out
    }

    fn ev(e: Option<&str>, d: &str) -> SseEvent {
        SseEvent {
            event: e.map(str::to_string),
            data: d.to_string(),
            error: None,
        }
    }

    fn expected() -> Vec<SseEvent> {
        vec![
            ev(None, "{\"a\":1}"),
            ev(None, "{\"b\":\"été\"}"),
            ev(Some("error"), "line1\nline2"),
            ev(None, "nospace"),
            ev(None, "[DONE]"),
        ]
    }

    #[test]
    fn whole_stream_parses() {
        assert_eq!(parse_in_pieces(&[STREAM]), expected());
    }

    #[test]
    fn every_single_split_point_gives_the_same_events() {
        for i in 0..=STREAM.len() {
            let (a, b) = STREAM.split_at(i);
            assert_eq!(parse_in_pieces(&[a, b]), expected(), "split at byte {i}");
        }
    }

    #[test]
    fn every_pair_of_split_points_gives_the_same_events() {
        for i in 0..=STREAM.len() {
            for j in i..=STREAM.len() {
                let pieces = [&STREAM[..i], &STREAM[i..j], &STREAM[j..]];
                assert_eq!(parse_in_pieces(&pieces), expected(), "split at {i},{j}");
            }
        }
    }

    #[test]
    fn byte_at_a_time_gives_the_same_events() {
        let pieces: Vec<&[u8]> = STREAM.chunks(1).collect();
        assert_eq!(parse_in_pieces(&pieces), expected());
    }

    /// llama.cpp's streamed failure: content, an `error:` field (its own
    /// event), `data: [DONE]`; then an event with both fields, and one with
    /// two `error:` lines.
    const ERROR_STREAM: &[u8] = b"data: {\"a\":1}\r\n\r\n\
: keep-alive\n\
error: {\"code\":400,\"message\":\"the request exceeds the available context size\",\"type\":\"exceed_context_size_error\"}\r\n\r\n\
data: [DONE]\n\n\
event: error\r\ndata: d\r\nerror:e1\r\r\
error: e2\nerror: \xc3\xa9\n\n";

    fn expected_with_errors() -> Vec<SseEvent> {
        let err = |e: Option<&str>, d: &str, error: &str| SseEvent {
            error: Some(error.to_string()),
            ..ev(e, d)
        };
        vec![
            ev(None, "{\"a\":1}"),
            err(
                None,
                "",
                "{\"code\":400,\"message\":\"the request exceeds the available context size\",\"type\":\"exceed_context_size_error\"}",
            ),
            ev(None, "[DONE]"),
            err(Some("error"), "d", "e1"),
            err(None, "", "e2\né"),
        ]
    }

    #[test]
    fn an_error_field_is_an_event_at_every_split_point() {
        assert_eq!(parse_in_pieces(&[ERROR_STREAM]), expected_with_errors());
        for i in 0..=ERROR_STREAM.len() {
            let (a, b) = ERROR_STREAM.split_at(i);
            assert_eq!(
                parse_in_pieces(&[a, b]),
                expected_with_errors(),
                "split at byte {i}"
            );
        }
    }

    #[test]
    fn an_error_field_is_an_event_at_every_pair_of_split_points() {
        let s = ERROR_STREAM;
        for i in 0..=s.len() {
            for j in i..=s.len() {
                let pieces = [&s[..i], &s[i..j], &s[j..]];
                assert_eq!(
                    parse_in_pieces(&pieces),
                    expected_with_errors(),
                    "split at {i},{j}"
                );
            }
        }
        let bytes: Vec<&[u8]> = s.chunks(1).collect();
        assert_eq!(parse_in_pieces(&bytes), expected_with_errors());
    }

    #[test]
    fn only_a_data_or_error_line_begins_the_stream() {
        let begun = |pieces: &[&[u8]]| {
            let mut p = SseParser::new();
            for piece in pieces {
                p.feed(piece, |_| {});
            }
            p.has_begun()
        };
        assert!(!begun(&[b": keep-alive\n\n", b":\r\n\r\n", b"\n"]));
        assert!(!begun(&[b"dat"]), "a line not yet whole");
        assert!(!begun(&[b"event: x\nid: 1\nretry: 5\n"]));
        assert!(
            begun(&[b": ka\n\nda", b"ta: {}\n"]),
            "before its blank line"
        );
        assert!(begun(&[b"error: x\n"]));
    }

    #[test]
    fn unterminated_last_event_is_dispatched_at_finish() {
        assert_eq!(parse_in_pieces(&[b"data: x"]).len(), 1);
        assert_eq!(parse_in_pieces(&[b"data: x\n"]).len(), 1);
        assert!(parse_in_pieces(&[b": only a comment\n\n"]).is_empty());
        assert_eq!(
            parse_in_pieces(&[b"error: x"])[0].error.as_deref(),
            Some("x")
        );
    }

    #[test]
    fn invalid_utf8_line_is_skipped_and_noted() {
        let mut p = SseParser::new();
        let mut out = Vec::new();
        p.feed(b"data: \xff\xfe\n\ndata: ok\n\n", |e| {
            out.push(SseEvent::from(e))
        });
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].data, "ok");
        assert!(p.saw_invalid_utf8());
    }

    #[test]
    fn an_oversized_line_is_cut_and_noted() {
        let mut p = SseParser::new();
        let mut out = Vec::new();
        let mut big = b"data: ".to_vec();
        big.resize(MAX_LINE_BYTES + 10, b'x');
        p.feed(&big, |e| out.push(SseEvent::from(e)));
        p.feed(b"\n\ndata: ok\n\n", |e| out.push(SseEvent::from(e)));
        assert!(p.saw_oversized_line());
        assert_eq!(out.len(), 2);
        assert_eq!(out[0].data.len(), MAX_LINE_BYTES - 6);
        assert_eq!(out[1].data, "ok");
    }

    #[test]
    fn an_oversized_line_read_whole_is_cut_the_same_way() {
        let mut big = b"data: ".to_vec();
        big.resize(MAX_LINE_BYTES + 10, b'x');
        let whole = [big.as_slice(), b"\n\ndata: ok\n\n"].concat();
        let mut p = SseParser::new();
        let mut out = Vec::new();
        p.feed(&whole, |e| out.push(SseEvent::from(e)));
        assert!(p.saw_oversized_line());
        assert_eq!(out.len(), 2);
        assert_eq!(out[0].data.len(), MAX_LINE_BYTES - 6);
        assert_eq!(out[1].data, "ok");
    }
}
