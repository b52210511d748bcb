//! The first-byte limit holds until the stream's first event: a head, or
//! keep-alive comments (TGI sends `:` every 15 s), while the request waits in
//! a queue or in prefill must not start the shorter idle limit. Once an event
//! has come, silence is judged by the idle limit, also when that event came
//! in the same read as the response head.

use crate::script::{chunk, class, content, message, play, Step, FINISH, LAST_CHUNK, STREAM_HEAD};
use qexp_client::{ErrorClass, Timeouts};
use std::time::Duration;

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

fn write(bytes: &[u8]) -> Step {
    Step::Write(bytes.to_vec())
}

#[tokio::test]
async fn a_keep_alive_comment_does_not_start_the_idle_limit() {
    // The first content comes 0.5 s after the comment: past the idle
    // limit, well inside the first-byte one.
    let script = vec![
        write(STREAM_HEAD.as_bytes()),
        Step::Wait(ms(50)),
        write(&chunk(":\n\n")),
        Step::Wait(ms(500)),
        write(&chunk(&content("hi"))),
        write(&chunk(FINISH)),
        write(LAST_CHUNK),
    ];
    let timeouts = Timeouts {
        connect: ms(2000),
        first_byte: ms(4000),
        idle: ms(250),
        total: ms(8000),
    };
    let o = play(script, timeouts, None).await;
    assert!(o.ok(), "{:?}", o.error);
    assert_eq!(o.content_chunks, 1);
}

#[tokio::test]
async fn keep_alive_comments_alone_end_at_the_first_byte_limit() {
    // Comments every 100 ms for 6 s: never silent for the idle limit,
    // yet nothing was streamed within the first-byte limit.
    let mut script = vec![write(STREAM_HEAD.as_bytes())];
    for _ in 0..60 {
        script.push(write(&chunk(":\n\n")));
        script.push(Step::Wait(ms(100)));
    }
    script.push(write(&chunk(&content("hi"))));
    script.push(write(&chunk(FINISH)));
    script.push(write(LAST_CHUNK));
    let timeouts = Timeouts {
        connect: ms(2000),
        first_byte: ms(800),
        idle: ms(400),
        total: ms(10_000),
    };
    let o = play(script, timeouts, None).await;
    assert_eq!(class(&o), ErrorClass::FirstByteTimeout, "{}", message(&o));
    assert!((0.79..4.0).contains(&o.end_s), "ended at {} s", o.end_s);
}

#[tokio::test]
async fn an_event_in_the_same_read_as_the_head_starts_the_idle_limit() {
    // The head and the first content in one write, then silence: the stream
    // stalled after its first event, which is the idle limit's to judge.
    let first = [STREAM_HEAD.as_bytes(), &chunk(&content("hi"))].concat();
    let script = vec![Step::Write(first), Step::Wait(ms(60_000))];
    let timeouts = Timeouts {
        connect: ms(2000),
        first_byte: ms(4000),
        idle: ms(300),
        total: ms(8000),
    };
    let o = play(script, timeouts, None).await;
    assert_eq!(class(&o), ErrorClass::IdleTimeout, "{}", message(&o));
    assert_eq!(o.content_chunks, 1);
    assert!(o.end_s < 3.0, "ended at {} s", o.end_s);
}
