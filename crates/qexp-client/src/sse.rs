//! Incremental Server-Sent Events parser (the WHATWG event-stream grammar,
//! restricted to what OpenAI-compatible servers send).
//!
//! Bytes may arrive split anywhere: inside a line, between `\r` and `\n`,
//! inside a multi-byte character. The parser keeps the partial line and
//! emits an event only at the blank line that ends it. A line longer than
//! [`MAX_LINE_BYTES`] is dropped and noted, so a server cannot make the
//! client hold an unbounded line in memory.

/// The longest line kept: a streamed delta is a few tokens, far below this.
pub const MAX_LINE_BYTES: usize = 1 << 20;

/// One dispatched event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SseEvent {
    /// The `event:` field, when the server sent one.
    pub event: Option<String>,
    /// All `data:` lines of the event, joined with `\n`.
    pub data: String,
}

/// Parser state across reads.
#[derive(Debug, Default)]
pub struct SseParser {
    line: Vec<u8>,
    after_cr: bool,
    data: Option<String>,
    event: Option<String>,
    invalid_utf8: bool,
    oversized: bool,
}

impl SseParser {
    /// A parser at the start of a stream.
    pub fn new() -> SseParser {
        SseParser::default()
    }

    /// Feeds one read; completed events are pushed to `out`.
    pub fn feed(&mut self, bytes: &[u8], out: &mut Vec<SseEvent>) {
        for &b in bytes {
            match b {
                b'\n' if self.after_cr => self.after_cr = false,
                b'\n' | b'\r' => {
                    self.after_cr = b == b'\r';
                    self.end_line(out);
                }
                _ => {
                    self.after_cr = false;
                    if self.line.len() < MAX_LINE_BYTES {
                        self.line.push(b);
                    } else {
                        self.oversized = true;
                    }
                }
            }
        }
    }

    /// Ends the stream: an unterminated final event is dispatched, as many
    /// servers omit the last blank line before closing.
    pub fn finish(&mut self, out: &mut Vec<SseEvent>) {
        if !self.line.is_empty() {
            self.end_line(out);
        }
        self.dispatch(out);
    }

    /// True when a line that was not valid UTF-8 was seen (and skipped).
    pub fn saw_invalid_utf8(&self) -> bool {
        self.invalid_utf8
    }

    /// True when a line longer than [`MAX_LINE_BYTES`] was seen (and cut).
    pub fn saw_oversized_line(&self) -> bool {
        self.oversized
    }

    fn end_line(&mut self, out: &mut Vec<SseEvent>) {
        let line = std::mem::take(&mut self.line);
        if line.is_empty() {
            self.dispatch(out);
            return;
        }
        let Ok(line) = String::from_utf8(line) else {
            self.invalid_utf8 = true;
            return;
        };
        if line.starts_with(':') {
            return; // comment / keep-alive
        }
        let (field, value) = match line.split_once(':') {
            Some((f, v)) => (f, v.strip_prefix(' ').unwrap_or(v)),
            None => (line.as_str(), ""),
        };
        match field {
            "data" => match &mut self.data {
                Some(d) => {
                    d.push('\n');
                    d.push_str(value);
                }
                None => self.data = Some(value.to_string()),
            },
            "event" => self.event = Some(value.to_string()),
            _ => {} // id, retry and unknown fields carry nothing qexp measures
        }
    }

    fn dispatch(&mut self, out: &mut Vec<SseEvent>) {
        let event = self.event.take();
        if let Some(data) = self.data.take() {
            out.push(SseEvent { event, data });
        }
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
            p.feed(piece, &mut out);
        }
        p.finish(&mut out);
        out
    }

    fn expected() -> Vec<SseEvent> {
        let ev = |e: Option<&str>, d: &str| SseEvent {
            event: e.map(str::to_string),
            data: d.to_string(),
        };
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

    #[test]
    fn unterminated_last_event_is_dispatched_at_finish() {
        assert_eq!(parse_in_pieces(&[b"data: x"]).len(), 1);
        assert_eq!(parse_in_pieces(&[b"data: x\n"]).len(), 1);
        assert!(parse_in_pieces(&[b": only a comment\n\n"]).is_empty());
    }

    #[test]
    fn invalid_utf8_line_is_skipped_and_noted() {
        let mut p = SseParser::new();
        let mut out = Vec::new();
        p.feed(b"data: \xff\xfe\n\ndata: ok\n\n", &mut out);
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
        p.feed(&big, &mut out);
        p.feed(b"\n\ndata: ok\n\n", &mut out);
        assert!(p.saw_oversized_line());
        assert_eq!(out.len(), 2);
        assert_eq!(out[0].data.len(), MAX_LINE_BYTES - 6);
        assert_eq!(out[1].data, "ok");
    }
}
