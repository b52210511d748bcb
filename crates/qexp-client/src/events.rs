//! Reading the parsed events of a stream into an [`Outcome`]: content
//! chunks and their arrival times, usage, finish reason, `[DONE]`, and the
//! failures the events or the parser show.
//!
//! One event arrives per streamed token, so each is read for the few fields
//! qexp measures, into borrowed text ([`Chunk`]); only an event that does not
//! fit that shape (a `null` where an object was expected, a duplicated key,
//! a number where text was expected) is read again as a whole
//! `serde_json::Value`, which gives every such event the same meaning it
//! always had.

use crate::answer::AnswerDigest;
use crate::classify::stream_error;
use crate::outcome::{parse_usage, ErrorClass, Outcome, RequestError};
use crate::secret::Redactor;
use crate::sse::{Event, SseParser};
use serde::{Deserialize, Deserializer};
use serde_json::Value;
use std::borrow::Cow;

/// Feeds one read to the parser and applies the events it completes, or
/// returns the failure they or the parser show. An over-long line fails
/// first (before its cut event's JSON error); the events before a line that
/// is not UTF-8 still count. `bytes` of `None` is the end of the stream.
pub(crate) fn read(
    parser: &mut SseParser,
    state: &mut StreamState,
    out: &mut Outcome,
    bytes: Option<&[u8]>,
    arrived: f64,
) -> Option<RequestError> {
    let mut failed = None;
    let mut apply = |ev: Event<'_>| {
        if failed.is_none() {
            failed = state.apply(out, ev, arrived);
        }
    };
    match bytes {
        Some(b) => parser.feed(b, &mut apply),
        None => parser.finish(&mut apply),
    }
    if parser.saw_oversized_line() {
        return Some(RequestError {
            class: ErrorClass::OversizedEvent,
            message: format!(
                "a stream line is longer than {} bytes",
                crate::sse::MAX_LINE_BYTES
            ),
        });
    }
    failed.or_else(|| {
        parser.saw_invalid_utf8().then(|| RequestError {
            class: ErrorClass::InvalidUtf8,
            message: "a stream line is not valid UTF-8".to_string(),
        })
    })
}

/// What the events so far leave for the next.
#[derive(Default)]
pub(crate) struct StreamState {
    pub done: bool,
    /// Takes the API key out of the server's text kept in a message.
    pub redact: Redactor,
    /// The reasoning's hash so far.
    pub digest: AnswerDigest,
    /// The server's `index` of each tool call kept, in the order the calls
    /// began (None where the server sent none).
    tool_index: Vec<Option<u32>>,
}

impl StreamState {
    /// The state before a stream's first event.
    pub(crate) fn new(redact: Redactor) -> StreamState {
        StreamState {
            redact,
            ..StreamState::default()
        }
    }
}

/// What one event says, as far as qexp reads it.
#[derive(Debug, Default, PartialEq)]
struct Chunk<'a> {
    /// `choices` was there (even empty or null).
    has_choices: bool,
    /// The first choice.
    choice: Option<ChoiceText<'a>>,
    /// `usage`, as sent (even null).
    usage: Option<Value>,
    /// `error`, as sent (even null).
    error: Option<Value>,
}

/// The first choice's text and finish reason.
#[derive(Debug, Default, PartialEq)]
struct ChoiceText<'a> {
    /// `delta.content`, or a completion's `text`.
    answer: Cow<'a, str>,
    /// `delta.reasoning_content` and `delta.reasoning` (a server sends
    /// one or the other).
    reasoning: [Cow<'a, str>; 2],
    /// `delta.tool_calls`: pieces of tool calls.
    tools: Vec<ToolDelta<'a>>,
    finish_reason: Option<Cow<'a, str>>,
}

/// One piece of a streamed tool call.
#[derive(Debug, Default, PartialEq)]
struct ToolDelta<'a> {
    /// Which call of the answer it belongs to, as the server numbers them.
    index: Option<u32>,
    /// `function.name`, sent with the call's first piece.
    name: Option<Cow<'a, str>>,
    /// A piece of `function.arguments`.
    arguments: Cow<'a, str>,
}

/// Tool calls an answer may make that qexp keeps (a server sending a
/// higher index is folded into the last).
const MAX_TOOL_CALLS: usize = 64;

impl<'a> Chunk<'a> {
    /// Reads one event's JSON: the typed reading, or the whole value when
    /// the event is shaped otherwise; `Err` when it is not JSON at all.
    fn parse(data: &'a str) -> Result<Chunk<'a>, serde_json::Error> {
        match serde_json::from_str::<wire::Chunk<'a>>(data) {
            Ok(c) => Ok(c.into()),
            Err(_) => serde_json::from_str::<Value>(data).map(|v| Chunk::from_value(&v)),
        }
    }

    /// The same reading over a whole JSON value.
    fn from_value(v: &Value) -> Chunk<'static> {
        fn text(v: Option<&Value>) -> &str {
            v.and_then(Value::as_str).unwrap_or_default()
        }
        let choice = v.get("choices").and_then(|c| c.get(0)).map(|c| {
            let owned = |s: &str| Cow::Owned(s.to_string());
            let (answer, reasoning, tools) = match c.get("delta") {
                Some(d) => (
                    text(d.get("content")),
                    [
                        owned(text(d.get("reasoning_content"))),
                        owned(text(d.get("reasoning"))),
                    ],
                    tool_deltas(d.get("tool_calls")),
                ),
                None => (text(c.get("text")), Default::default(), Vec::new()),
            };
            ChoiceText {
                answer: owned(answer),
                reasoning,
                tools,
                finish_reason: c
                    .get("finish_reason")
                    .and_then(Value::as_str)
                    .map(|f| Cow::Owned(f.to_string())),
            }
        });
        Chunk {
            has_choices: v.get("choices").is_some(),
            choice,
            usage: v.get("usage").cloned(),
            error: v.get("error").cloned(),
        }
    }
}

/// The tool-call pieces of a delta's `tool_calls`, read from a whole value.
fn tool_deltas(calls: Option<&Value>) -> Vec<ToolDelta<'static>> {
    let list = calls
        .and_then(Value::as_array)
        .map_or(&[][..], Vec::as_slice);
    list.iter()
        .map(|c| {
            let f = c.get("function");
            let s = |k: &str| f.and_then(|f| f.get(k)).and_then(Value::as_str);
            ToolDelta {
                index: c
                    .get("index")
                    .and_then(Value::as_u64)
                    .map(|i| u32::try_from(i).unwrap_or(u32::MAX)),
                name: s("name").map(|n| Cow::Owned(n.to_string())),
                arguments: Cow::Owned(s("arguments").unwrap_or_default().to_string()),
            }
        })
        .collect()
}

/// The typed reading of an OpenAI-compatible stream chunk. Every field is
/// optional; unknown fields are skipped without being built.
mod wire {
    use super::*;

    #[derive(Deserialize)]
    pub(super) struct Chunk<'a> {
        #[serde(borrow, default, deserialize_with = "present")]
        choices: Option<FirstChoice<'a>>,
        #[serde(default, deserialize_with = "present")]
        usage: Option<Value>,
        #[serde(default, deserialize_with = "present")]
        error: Option<Value>,
    }

    /// The first element of `choices`; the rest are skipped.
    struct FirstChoice<'a>(Option<Choice<'a>>);

    #[derive(Deserialize)]
    struct Choice<'a> {
        #[serde(borrow, default, deserialize_with = "present")]
        delta: Option<Delta<'a>>,
        #[serde(borrow, default)]
        text: Option<Text<'a>>,
        #[serde(borrow, default)]
        finish_reason: Option<Text<'a>>,
    }

    #[derive(Deserialize)]
    struct Delta<'a> {
        #[serde(borrow, default)]
        content: Option<Text<'a>>,
        #[serde(borrow, default)]
        reasoning_content: Option<Text<'a>>,
        #[serde(borrow, default)]
        reasoning: Option<Text<'a>>,
        #[serde(borrow, default)]
        tool_calls: Option<Vec<ToolCallDelta<'a>>>,
    }

    #[derive(Deserialize)]
    struct ToolCallDelta<'a> {
        #[serde(default)]
        index: Option<u64>,
        #[serde(borrow, default)]
        function: Option<FunctionDelta<'a>>,
    }

    #[derive(Deserialize)]
    struct FunctionDelta<'a> {
        #[serde(borrow, default)]
        name: Option<Text<'a>>,
        #[serde(borrow, default)]
        arguments: Option<Text<'a>>,
    }

    /// A JSON string, borrowed from the event unless it holds escapes
    /// (serde's own `Cow` always copies).
    struct Text<'a>(Cow<'a, str>);

    impl<'de: 'a, 'a> Deserialize<'de> for Text<'a> {
        fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
            struct Visit<'a>(std::marker::PhantomData<&'a ()>);
            impl<'de: 'a, 'a> serde::de::Visitor<'de> for Visit<'a> {
                type Value = Text<'a>;
                fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                    f.write_str("a string")
                }
                fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Text<'a>, E> {
                    Ok(Text(Cow::Borrowed(v)))
                }
                fn visit_str<E>(self, v: &str) -> Result<Text<'a>, E> {
                    Ok(Text(Cow::Owned(v.to_string())))
                }
            }
            d.deserialize_str(Visit(std::marker::PhantomData))
        }
    }

    /// A field that is there, whatever its value (`null` included, which
    /// then has to be readable as `T`): tells a `null` from a missing key.
    fn present<'de, D: Deserializer<'de>, T: Deserialize<'de>>(
        d: D,
    ) -> Result<Option<T>, D::Error> {
        T::deserialize(d).map(Some)
    }

    impl<'de: 'a, 'a> Deserialize<'de> for FirstChoice<'a> {
        fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
            struct Visit<'a>(std::marker::PhantomData<&'a ()>);
            impl<'de: 'a, 'a> serde::de::Visitor<'de> for Visit<'a> {
                type Value = FirstChoice<'a>;
                fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                    f.write_str("a list of choices")
                }
                fn visit_seq<A: serde::de::SeqAccess<'de>>(
                    self,
                    mut seq: A,
                ) -> Result<Self::Value, A::Error> {
                    let first = seq.next_element::<Choice<'a>>()?;
                    while seq.next_element::<serde::de::IgnoredAny>()?.is_some() {}
                    Ok(FirstChoice(first))
                }
            }
            d.deserialize_seq(Visit(std::marker::PhantomData))
        }
    }

    impl<'a> From<Chunk<'a>> for super::Chunk<'a> {
        fn from(c: Chunk<'a>) -> super::Chunk<'a> {
            let text = |t: Option<Text<'a>>| t.map(|t| t.0);
            let has_choices = c.choices.is_some();
            let choice = c.choices.and_then(|f| f.0).map(|ch| match ch.delta {
                Some(d) => super::ChoiceText {
                    reasoning: [
                        text(d.reasoning_content).unwrap_or_default(),
                        text(d.reasoning).unwrap_or_default(),
                    ],
                    answer: text(d.content).unwrap_or_default(),
                    tools: d
                        .tool_calls
                        .unwrap_or_default()
                        .into_iter()
                        .map(|c| {
                            let (name, arguments) = match c.function {
                                Some(f) => (text(f.name), text(f.arguments)),
                                None => (None, None),
                            };
                            super::ToolDelta {
                                index: c.index.map(|i| u32::try_from(i).unwrap_or(u32::MAX)),
                                name,
                                arguments: arguments.unwrap_or_default(),
                            }
                        })
                        .collect(),
                    finish_reason: text(ch.finish_reason),
                },
                None => super::ChoiceText {
                    answer: text(ch.text).unwrap_or_default(),
                    reasoning: Default::default(),
                    tools: Vec::new(),
                    finish_reason: text(ch.finish_reason),
                },
            });
            super::Chunk {
                has_choices,
                choice,
                usage: c.usage,
                error: c.error,
            }
        }
    }
}

/// Characters (Unicode scalar values) of `s`: what `output_chars` counts.
fn chars(s: &str) -> usize {
    s.chars().count()
}

/// Adds a delta's tool-call pieces to their calls; returns the characters
/// they carried (names and arguments), noting when the first came. A piece
/// joins the call of its `index`; the server's numbers need not start at 0
/// nor run without gaps. Without an index, a piece that names a tool begins
/// a call and one that does not goes on with the last.
fn tool_pieces(
    out: &mut Outcome,
    index: &mut Vec<Option<u32>>,
    tools: &[ToolDelta<'_>],
    arrived: f64,
) -> usize {
    let mut carried = 0;
    for t in tools {
        let known = match t.index {
            Some(_) => index.iter().position(|i| *i == t.index),
            None if t.name.is_some() => None,
            None => index.len().checked_sub(1),
        };
        let i = match known {
            Some(i) => i,
            None if out.tool_calls.len() < MAX_TOOL_CALLS => {
                out.tool_calls.push(Default::default());
                index.push(t.index);
                out.tool_calls.len() - 1
            }
            None => MAX_TOOL_CALLS - 1,
        };
        let call = &mut out.tool_calls[i];
        if let Some(name) = &t.name {
            call.name.push_str(name);
            carried += chars(name);
        }
        call.arguments.push_str(&t.arguments);
        carried += chars(&t.arguments);
    }
    if carried > 0 {
        out.first_tool_s.get_or_insert(arrived);
    }
    carried
}

impl StreamState {
    /// Applies one event to the outcome; returns an error that ends the
    /// request. An error, however the server words or frames it, ends it
    /// with what came before kept.
    fn apply(&mut self, out: &mut Outcome, ev: Event<'_>, arrived: f64) -> Option<RequestError> {
        if let Some(error) = ev.error {
            return Some(stream_error(error, &self.redact));
        }
        let data = ev.data.trim();
        if ev.event == Some("error") {
            return Some(stream_error(data, &self.redact));
        }
        if data == "[DONE]" {
            self.done = true;
            return None;
        }
        if data.is_empty() {
            return None;
        }
        let chunk = match Chunk::parse(data) {
            Ok(c) => c,
            Err(e) => {
                return Some(RequestError {
                    class: ErrorClass::MalformedJson,
                    message: format!(
                        "stream event is not JSON ({e}): {}",
                        self.redact.excerpt(data)
                    ),
                })
            }
        };
        if chunk.error.as_ref().is_some_and(|e| !e.is_null()) {
            return Some(stream_error(data, &self.redact));
        }
        if let Some(u) = chunk.usage.as_ref().filter(|u| u.is_object()) {
            out.usage = parse_usage(u);
        }
        if let Some(choice) = chunk.choice {
            let answer_len = choice.answer.len();
            let reasoning_len = choice.reasoning[0].len() + choice.reasoning[1].len();
            if reasoning_len > 0 {
                out.first_reasoning_s.get_or_insert(arrived);
                out.reasoning_chunks += 1;
                for r in &choice.reasoning {
                    self.digest.reasoning(r);
                }
            }
            if answer_len > 0 {
                out.first_answer_s.get_or_insert(arrived);
                if let Some(text) = &mut out.text {
                    text.push_str(&choice.answer);
                }
            }
            let tool_len = tool_pieces(out, &mut self.tool_index, &choice.tools, arrived);
            if answer_len + reasoning_len + tool_len > 0 {
                out.first_token_s.get_or_insert(arrived);
                out.last_token_s = Some(arrived);
                out.chunk_offsets_s.push(arrived);
                out.content_chunks += 1;
                out.client_tokens += 1;
                let reasoning_chars = chars(&choice.reasoning[0]) + chars(&choice.reasoning[1]);
                out.output_chars += (chars(&choice.answer) + reasoning_chars + tool_len) as u64;
            }
            if let Some(fr) = choice.finish_reason {
                out.finish_reason = Some(fr.into_owned());
            }
        } else if !chunk.has_choices && chunk.usage.is_none() {
            return Some(RequestError {
                class: ErrorClass::Protocol,
                message: format!(
                    "stream event has neither choices nor usage: {}",
                    self.redact.excerpt(data)
                ),
            });
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(data: &str) -> Event<'_> {
        Event {
            event: None,
            data,
            error: None,
        }
    }

    #[test]
    fn the_answer_text_is_kept_only_when_asked() {
        let steps = [
            "{\"choices\":[{\"delta\":{\"reasoning_content\":\"hmm\"}}]}",
            "{\"choices\":[{\"delta\":{\"content\":\"Hello\"}}]}",
            "{\"choices\":[{\"delta\":{\"content\":\" there\"}}]}",
        ];
        let apply = |out: &mut Outcome| {
            let mut state = StreamState::default();
            for (i, data) in steps.iter().enumerate() {
                assert!(state.apply(out, event(data), i as f64).is_none());
            }
        };
        let mut kept = Outcome {
            text: Some(String::new()),
            ..Outcome::default()
        };
        apply(&mut kept);
        assert_eq!(
            kept.text.as_deref(),
            Some("Hello there"),
            "answer, not reasoning"
        );
        let mut plain = Outcome::default();
        apply(&mut plain);
        assert_eq!(plain.text, None);
        assert_eq!(plain.output_chars, kept.output_chars);
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
            assert!(state.apply(&mut out, event(data), *at).is_none());
        }
        assert_eq!(out.first_token_s, Some(0.20), "TTFT counts reasoning");
        assert_eq!(out.first_reasoning_s, Some(0.20));
        assert_eq!(out.first_answer_s, Some(0.40));
        assert_eq!((out.reasoning_chunks, out.content_chunks), (2, 4));
        assert_eq!(out.output_chars, 16, "6 + 6 + 3 + 1 characters");
    }

    #[test]
    fn output_chars_counts_characters_of_answer_and_reasoning() {
        let mut out = Outcome::default();
        let mut state = StreamState::default();
        let steps = [
            r#"{"choices":[{"delta":{"reasoning_content":"été","reasoning":"ü"}}]}"#,
            r#"{"choices":[{"delta":{"content":"日本"}}]}"#,
            r#"{"choices":[{"text":"ñ"}]}"#,
        ];
        for data in steps {
            assert!(state.apply(&mut out, event(data), 0.1).is_none());
        }
        assert_eq!(out.output_chars, 3 + 1 + 2 + 1, "characters, not bytes");
    }

    /// Calls are told apart by the server's index wherever its numbers
    /// start; without one, a named piece begins a call.
    #[test]
    fn tool_calls_without_index_or_with_gaps_stay_apart() {
        let mut out = Outcome::default();
        let mut state = StreamState::default();
        let steps = [
            r#"{"choices":[{"delta":{"tool_calls":[{"index":3,"function":{"name":"a","arguments":"{"}}]}}]}"#,
            r#"{"choices":[{"delta":{"tool_calls":[{"index":7,"function":{"name":"b","arguments":"{}"}}]}}]}"#,
            r#"{"choices":[{"delta":{"tool_calls":[{"index":3,"function":{"arguments":"}"}}]}}]}"#,
            r#"{"choices":[{"delta":{"tool_calls":[{"function":{"name":"c","arguments":"{\"x\":"}},{"function":{"name":"d","arguments":"{}"}}]}}]}"#,
            r#"{"choices":[{"delta":{"tool_calls":[{"function":{"arguments":"1}"}}]}}]}"#,
        ];
        for data in steps {
            assert!(state.apply(&mut out, event(data), 0.1).is_none());
        }
        let calls: Vec<(&str, &str)> = out
            .tool_calls
            .iter()
            .map(|c| (c.name.as_str(), c.arguments.as_str()))
            .collect();
        assert_eq!(
            calls,
            [("a", "{}"), ("b", "{}"), ("c", "{\"x\":"), ("d", "{}1}")]
        );
    }

    #[test]
    fn tool_calls_are_gathered_and_timed() {
        let mut out = Outcome::default();
        let mut state = StreamState::default();
        let steps = [
            (
                0.1,
                r#"{"choices":[{"delta":{"role":"assistant","content":null,"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"get_weather","arguments":""}}]}}]}"#,
            ),
            (
                0.2,
                r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"city\": "}}]}}]}"#,
            ),
            (
                0.3,
                r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"function":{"arguments":"\"Oslo\"}"}}]}}]}"#,
            ),
            (
                0.4,
                r#"{"choices":[{"delta":{},"finish_reason":"tool_calls"}]}"#,
            ),
        ];
        for (at, data) in steps {
            assert!(state.apply(&mut out, event(data), at).is_none());
        }
        assert_eq!(out.tool_calls.len(), 1);
        assert_eq!(out.tool_calls[0].name, "get_weather");
        assert_eq!(out.tool_calls[0].arguments, r#"{"city": "Oslo"}"#);
        assert_eq!(
            out.first_tool_s,
            Some(0.1),
            "the name is the first tool token"
        );
        assert_eq!(
            (out.first_token_s, out.last_token_s),
            (Some(0.1), Some(0.3))
        );
        assert_eq!(out.first_answer_s, None, "no answer text");
        assert_eq!(out.content_chunks, 3);
        assert_eq!(out.finish_reason.as_deref(), Some("tool_calls"));
    }

    #[test]
    fn plain_completions_have_no_reasoning() {
        let mut out = Outcome::default();
        let mut state = StreamState::default();
        let data = "{\"choices\":[{\"index\":0,\"text\":\" hi\",\"finish_reason\":null}]}";
        assert!(state.apply(&mut out, event(data), 0.3).is_none());
        assert_eq!(
            (out.first_answer_s, out.first_reasoning_s),
            (Some(0.3), None)
        );
        assert_eq!(out.reasoning_chunks, 0);
    }

    #[test]
    fn the_typed_reading_means_what_the_whole_value_means() {
        // Usual chunks, and every odd shape that sends the typed reading to
        // the fallback: both readings must agree on all of them.
        let cases = [
            r#"{"id":"x","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"role":"assistant","content":"Hi"},"logprobs":null,"finish_reason":null}]}"#,
            r#"{"choices":[{"delta":{"content":"a\nb \u00e9"},"finish_reason":"stop"}],"usage":null}"#,
            r#"{"choices":[{"delta":{"reasoning_content":"hm","reasoning":"m"}}]}"#,
            r#"{"choices":[{"text":" x","finish_reason":"length"},{"text":"second"}]}"#,
            r#"{"choices":[],"usage":{"prompt_tokens":3,"completion_tokens":4}}"#,
            r#"{"choices":null}"#,
            r#"{"choices":{}}"#,
            r#"{"choices":[5]}"#,
            r#"{"choices":[{"delta":null,"text":"t"}]}"#,
            r#"{"choices":[{"delta":{"content":5}}]}"#,
            r#"{"choices":[{"delta":{"content":null},"finish_reason":7}]}"#,
            r#"{"choices":[{"delta":{"content":"a","content":"bb"}}]}"#,
            r#"{"usage":null}"#,
            r#"{"usage":5}"#,
            r#"{"error":null,"choices":[]}"#,
            r#"{"error":{"message":"overloaded"}}"#,
            r#"{"object":"error","message":"no"}"#,
            r#"[1,2]"#,
            r#"[]"#,
            r#"{"choices":[{}]}"#,
            r#""text""#,
            r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"id":"c1","type":"function","function":{"name":"f","arguments":""}}]}}]}"#,
            r#"{"choices":[{"delta":{"tool_calls":[{"index":1,"function":{"arguments":"{\"a\":"}}]}}]}"#,
            r#"{"choices":[{"delta":{"tool_calls":[{"function":{"name":null}}]}}]}"#,
            r#"{"choices":[{"delta":{"tool_calls":[{"index":-1,"function":{"arguments":"x"}}]}}]}"#,
            r#"{"choices":[{"delta":{"tool_calls":null}}]}"#,
            r#"{"choices":[{"delta":{"tool_calls":[5]}}]}"#,
        ];
        for data in cases {
            let value: Value = serde_json::from_str(data).unwrap();
            assert_eq!(
                Chunk::parse(data).unwrap(),
                Chunk::from_value(&value),
                "{data}"
            );
        }
        assert!(Chunk::parse("{not json").is_err());
    }
}
