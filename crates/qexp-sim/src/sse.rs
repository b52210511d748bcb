//! Server-sent-events framing of a generation: `data: {json}\n\n` frames, then `data: [DONE]`.

use std::convert::Infallible;

use bytes::Bytes;
use futures_util::stream::{self, BoxStream, Stream, StreamExt};
use serde_json::Value;

use crate::answer::{Answer, Knobs};
use crate::openai::Envelope;

/// The terminating frame of every complete stream.
pub(crate) const DONE: &[u8] = b"data: [DONE]\n\n";

/// One SSE frame holding `value`.
fn frame(value: &Value) -> Bytes {
    let mut buf = b"data: ".to_vec();
    // Serializing a `Value` to a Vec cannot fail.
    let _ = serde_json::to_writer(&mut buf, value);
    buf.extend_from_slice(b"\n\n");
    Bytes::from(buf)
}

enum Stage {
    Content,
    Usage,
    Done,
    End,
}

struct State {
    env: Envelope,
    chunks: BoxStream<'static, u32>,
    emitted: u32,
    reasoning_tokens: u32,
    knobs: Knobs,
    /// Decided at the first chunk, once the engine has admitted the request.
    answer: Option<Answer>,
    /// Whether a tool call's first piece (with its name) has gone out.
    tool_opened: bool,
    stage: Stage,
}

/// The response body for a streamed request: one content frame per engine chunk;
/// the last one carries `finish_reason`, then the usage frame if asked for, then
/// `[DONE]`. A generation cut short (server shutdown) ends without either.
/// The first `reasoning_tokens` tokens of a chat stream are reasoning text;
/// `knobs` may make the answer wrong.
pub(crate) fn body(
    env: Envelope,
    chunks: BoxStream<'static, u32>,
    reasoning_tokens: u32,
    knobs: Knobs,
) -> impl Stream<Item = Result<Bytes, Infallible>> + Send {
    let state = State {
        env,
        chunks,
        emitted: 0,
        reasoning_tokens,
        knobs,
        answer: None,
        tool_opened: false,
        stage: Stage::Content,
    };
    stream::unfold(state, |mut st| async move {
        let bytes = match st.stage {
            Stage::Content => {
                let n = st.chunks.next().await?;
                let first = st.emitted == 0;
                // Tokens before the reasoning budget's end think; the rest answer.
                let thinking = st.reasoning_tokens.saturating_sub(st.emitted).min(n);
                let (job, knobs, start) = (&st.env.job, st.knobs, st.reasoning_tokens);
                let answer = st
                    .answer
                    .get_or_insert_with(|| Answer::new(job, knobs, start));
                let reasoning = answer.text(st.emitted, thinking);
                let text = answer.text(st.emitted + thinking, n - thinking);
                st.emitted += n;
                let last = st.emitted >= st.env.job.max_tokens;
                if last {
                    st.stage = if st.env.job.include_usage {
                        Stage::Usage
                    } else {
                        Stage::Done
                    };
                }
                match answer.tool() {
                    Some(tool) => {
                        let opens = !st.tool_opened && !text.is_empty();
                        st.tool_opened |= opens;
                        frame(
                            &st.env
                                .tool_chunk(&reasoning, &text, (tool, opens), first, last),
                        )
                    }
                    None => frame(&st.env.chunk(&reasoning, &text, first, last)),
                }
            }
            Stage::Usage => {
                st.stage = Stage::Done;
                frame(&st.env.usage_chunk(st.emitted))
            }
            Stage::Done => {
                st.stage = Stage::End;
                Bytes::from_static(DONE)
            }
            Stage::End => return None,
        };
        Some((Ok(bytes), st))
    })
}
