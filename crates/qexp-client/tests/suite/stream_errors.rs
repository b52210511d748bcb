//! Errors that servers send inside a 200 event stream, as the engines word
//! them, and the API key kept out of every message however long the
//! server's text is.

use crate::script::{class, content, message, play, stream_of, Step, FINISH};
use qexp_client::{ErrorClass, Timeouts};
use std::time::Duration;

fn timeouts() -> Timeouts {
    Timeouts::total(Duration::from_secs(5))
}

/// llama.cpp's streamed error: an `error:` field, then `data: [DONE]`.
const LLAMA_CPP_CONTEXT: &str = "error: {\"code\":400,\"message\":\"the request exceeds the available context size, try increasing it\",\"type\":\"exceed_context_size_error\"}\n\n";

#[tokio::test]
async fn an_error_field_before_any_content_is_the_server_s_error() {
    let o = play(
        stream_of(&[LLAMA_CPP_CONTEXT, "data: [DONE]\n\n"]),
        timeouts(),
        None,
    )
    .await;
    assert_eq!(class(&o), ErrorClass::ContextLength, "{}", message(&o));
    assert!(
        message(&o).contains("the request exceeds the available context size"),
        "{}",
        message(&o)
    );
}

#[tokio::test]
async fn an_error_field_after_content_fails_the_request() {
    let hi = content("hi");
    let o = play(
        stream_of(&[&hi, &hi, LLAMA_CPP_CONTEXT, "data: [DONE]\n\n"]),
        timeouts(),
        None,
    )
    .await;
    assert_eq!(class(&o), ErrorClass::ContextLength, "{}", message(&o));
    assert_eq!(o.content_chunks, 2, "what came before the error is kept");
}

#[tokio::test]
async fn an_error_field_that_is_not_about_context_is_server_error() {
    let err =
        "error: {\"code\":500,\"message\":\"slot unavailable\",\"type\":\"server_error\"}\n\n";
    let o = play(
        stream_of(&[&content("hi"), err, "data: [DONE]\n\n"]),
        timeouts(),
        None,
    )
    .await;
    assert_eq!(class(&o), ErrorClass::ServerError, "{}", message(&o));
    assert!(message(&o).contains("slot unavailable"), "{}", message(&o));
}

#[tokio::test]
async fn context_wordings_inside_a_200_stream_are_context_length() {
    let cases = [
        // TGI's MaxTotalTokens and InputLength validation errors.
        "data:{\"error\":\"Input validation error: `inputs` tokens + `max_new_tokens` must be <= 4096. Given: 4000 `inputs` tokens and 200 `max_new_tokens`\",\"error_type\":\"validation\"}\n\n",
        "data:{\"error\":\"Input validation error: `inputs` must have less than 4096 tokens. Given: 5000\",\"error_type\":\"validation\"}\n\n",
        // vLLM's wording in an error object.
        "data: {\"error\":{\"object\":\"error\",\"message\":\"This model's maximum context length is 4096 tokens.\",\"type\":\"BadRequestError\",\"code\":400}}\n\n",
        // llama.cpp's error type, whatever the message says.
        "error: {\"code\":400,\"message\":\"request (5000 tokens) is too long\",\"type\":\"exceed_context_size_error\"}\n\n",
        // An `event: error` with the wording in its data.
        "event: error\ndata: {\"message\":\"prompt exceeds the context window\"}\n\n",
    ];
    for case in cases {
        let o = play(stream_of(&[case, "data: [DONE]\n\n"]), timeouts(), None).await;
        assert_eq!(
            class(&o),
            ErrorClass::ContextLength,
            "{case}: {}",
            message(&o)
        );
    }
}

#[tokio::test]
async fn an_error_event_with_plain_text_keeps_the_text() {
    let o = play(
        stream_of(&[
            &content("hi"),
            "event: error\ndata: Internal Server Error\n\n",
        ]),
        timeouts(),
        None,
    )
    .await;
    assert_eq!(class(&o), ErrorClass::ServerError, "{}", message(&o));
    assert!(
        message(&o).contains("Internal Server Error"),
        "{}",
        message(&o)
    );
}

#[tokio::test]
async fn output_chars_counts_characters_not_bytes() {
    let o = play(
        stream_of(&[&content("été"), &content("ü"), FINISH]),
        timeouts(),
        None,
    )
    .await;
    assert!(o.ok(), "{:?}", o.error);
    assert_eq!(o.output_chars, 4);
}

/// A key that starts ten characters before the 300th of the server's
/// text, so that a cut at 300 characters falls inside it.
const KEY: &str = "sk-qexp-0123456789abcdef";

fn text_with_the_key_across_the_cut() -> String {
    format!("{} {KEY} was refused", "x".repeat(289))
}

/// The message keeps no piece of the key: neither its start nor the rest.
fn assert_no_key(msg: &str) {
    for piece in [&KEY[..6], &KEY[KEY.len() - 6..]] {
        assert!(!msg.contains(piece), "`{piece}` in {msg}");
    }
}

#[tokio::test]
async fn the_key_is_redacted_before_an_error_body_is_cut() {
    let body = format!(
        "{{\"error\":{{\"message\":\"{}\"}}}}",
        text_with_the_key_across_the_cut()
    );
    let answer = format!(
        "HTTP/1.1 500 Internal Server Error\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\n\r\n{body}",
        body.len()
    );
    let o = play(
        vec![Step::Write(answer.into_bytes())],
        timeouts(),
        Some(KEY),
    )
    .await;
    assert_eq!(class(&o), ErrorClass::HttpStatus, "{}", message(&o));
    assert_no_key(message(&o));
}

#[tokio::test]
async fn the_key_is_redacted_before_a_stream_event_is_cut() {
    let text = text_with_the_key_across_the_cut();
    let cases = [
        (
            format!("data: {{\"error\":{{\"message\":\"{text}\"}}}}\n\n"),
            ErrorClass::ServerError,
        ),
        (
            format!("event: error\ndata: {text}\n\n"),
            ErrorClass::ServerError,
        ),
        (format!("data: {{{text}\n\n"), ErrorClass::MalformedJson),
        (format!("data: {{\"{text}\":1}}\n\n"), ErrorClass::Protocol),
    ];
    for (event, want) in cases {
        let o = play(stream_of(&[&event]), timeouts(), Some(KEY)).await;
        assert_eq!(class(&o), want, "{}", message(&o));
        assert_no_key(message(&o));
    }
}
