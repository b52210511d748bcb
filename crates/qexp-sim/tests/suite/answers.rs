//! What the answers say, over HTTP: the same prompt gets the same text from
//! any simulator and either endpoint form, arithmetic items are answered
//! first, and the profile's knobs make answers loop or go wrong.

use crate::common::stream;
use futures_util::future::join_all;
use qexp_sim::{SimProfile, SimServer};
use qexp_types::AnswerShape;
use serde_json::{json, Value};

async fn start(profile: SimProfile) -> (SimServer, reqwest::Client) {
    (
        SimServer::start(profile).await.unwrap(),
        reqwest::Client::new(),
    )
}

fn exact() -> SimProfile {
    SimProfile::by_name("exact").unwrap()
}

fn chat(content: &str, max_tokens: u32, stream: bool) -> Value {
    json!({"messages": [{"role": "user", "content": content}], "max_tokens": max_tokens, "stream": stream})
}

/// The whole JSON response to a non-streamed request.
async fn whole(client: &reqwest::Client, url: &str, body: &Value) -> Value {
    let resp = client.post(url).json(body).send().await.unwrap();
    resp.json().await.unwrap()
}

/// The answer to a chat request, streamed or not.
async fn answer(server: &SimServer, client: &reqwest::Client, body: Value) -> String {
    let url = format!("{}/v1/chat/completions", server.base_url());
    if body["stream"] == json!(true) {
        let events = stream(client, &url, &body).await;
        return events
            .iter()
            .filter(|e| e.data != "[DONE]")
            .filter_map(|e| {
                e.json()["choices"][0]["delta"]["content"]
                    .as_str()
                    .map(str::to_owned)
            })
            .collect();
    }
    let resp = whole(client, &url, &body).await;
    resp["choices"][0]["message"]["content"]
        .as_str()
        .unwrap()
        .to_owned()
}

#[tokio::test]
async fn the_same_prompt_gets_the_same_answer_from_any_simulator() {
    let (a, client) = start(exact()).await;
    let (b, _) = start(SimProfile::by_name("known").unwrap()).await;
    let streamed = answer(&a, &client, chat("Tell me about rivers.", 40, true)).await;
    let whole = answer(&b, &client, chat("Tell me about rivers.", 40, false)).await;
    assert_eq!(
        streamed, whole,
        "chunked by 1 and by 2 tokens, or not at all"
    );
    assert_eq!(whole.split_whitespace().count(), 40);
    let shape = AnswerShape::of(&whole);
    assert!(
        !shape.loops() && !shape.blank() && !shape.garbled(),
        "{whole}"
    );
    let other = answer(&a, &client, chat("Tell me about lakes.", 40, false)).await;
    assert_ne!(other, whole);
    a.shutdown().await;
    b.shutdown().await;
}

#[tokio::test]
async fn arithmetic_is_answered_first_and_wrong_on_purpose() {
    let (right, client) = start(exact()).await;
    let item = "Answer with the number first. What is 6 * -7?";
    let text = answer(&right, &client, chat(item, 12, true)).await;
    assert!(text.starts_with(" -42. "), "{text}");
    assert!(!text[5..].bytes().any(|b| b.is_ascii_digit()), "{text}");
    let (wrong, _) = start(SimProfile {
        wrong_share: 1.0,
        ..exact()
    })
    .await;
    let text = answer(&wrong, &client, chat(item, 12, false)).await;
    assert!(text.starts_with(" -41. "), "{text}");
    right.shutdown().await;
    wrong.shutdown().await;
}

#[tokio::test]
async fn the_batch_at_admission_makes_answers_wrong() {
    // Every sequence beyond the first makes the answer certainly wrong:
    // alone the prompt is right; two at once, one of them is wrong.
    let (server, client) = start(SimProfile {
        wrong_share_per_seq: 1.0,
        ..exact()
    })
    .await;
    let body = chat("What is 20 + 22?", 30, true);
    let alone = answer(&server, &client, body.clone()).await;
    assert!(alone.starts_with(" 42. "), "{alone}");
    let both = join_all((0..2).map(|_| answer(&server, &client, body.clone()))).await;
    let mut leads: Vec<&str> = both
        .iter()
        .filter_map(|t| t.split_whitespace().next())
        .collect();
    leads.sort_unstable();
    assert_eq!(leads, ["42.", "43."]);
    server.shutdown().await;
}

#[tokio::test]
async fn a_broken_verifier_answers_in_loops() {
    let (server, client) = start(SimProfile::by_name("fast-broken-spec").unwrap()).await;
    let text = answer(&server, &client, chat("Tell me about rivers.", 64, true)).await;
    assert_eq!(text.split_whitespace().count(), 64);
    assert!(AnswerShape::of(&text).loops(), "{text}");
    server.shutdown().await;
}

/// A chat request that sends a tool gets the same call streamed (as
/// `tool_calls` deltas) and not (as the message's `tool_calls`).
#[tokio::test]
async fn a_tool_call_is_a_tool_call_streamed_or_not() {
    let (server, client) = start(exact()).await;
    let url = format!("{}/v1/chat/completions", server.base_url());
    let tools = json!([{"type": "function", "function": {"name": "get_weather",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
                       "required": ["city"]}}}]);
    let body = |stream: bool| {
        let mut b = chat("Weather in Paris?", 24, stream);
        b["tools"] = tools.clone();
        b
    };
    let events = stream(&client, &url, &body(true)).await;
    let streamed: String = events
        .iter()
        .filter(|e| e.data != "[DONE]")
        .filter_map(|e| {
            e.json()["choices"][0]["delta"]["tool_calls"][0]["function"]["arguments"]
                .as_str()
                .map(str::to_owned)
        })
        .collect();
    let resp = whole(&client, &url, &body(false)).await;
    let choice = &resp["choices"][0];
    assert_eq!(choice["finish_reason"], "tool_calls", "{resp}");
    assert!(choice["message"]["content"].is_null(), "{resp}");
    let call = &choice["message"]["tool_calls"][0];
    assert_eq!(call["type"], "function");
    assert_eq!(call["function"]["name"], "get_weather");
    let arguments = call["function"]["arguments"].as_str().unwrap();
    assert_eq!(arguments, streamed);
    let parsed: Value = serde_json::from_str(arguments.trim()).expect("the arguments are JSON");
    assert!(parsed["city"].is_string(), "{parsed}");
    server.shutdown().await;
}
