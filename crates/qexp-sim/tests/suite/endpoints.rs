//! The HTTP surface over a real loopback socket: probes, usage accounting, errors.

use crate::common::{split, words};
use qexp_sim::{SimProfile, SimServer, CHAT_PRIMER_TOKENS};
use serde_json::{json, Value};

async fn exact() -> (SimServer, reqwest::Client) {
    let server = SimServer::start(SimProfile::by_name("exact").unwrap())
        .await
        .unwrap();
    (server, reqwest::Client::new())
}

async fn post(client: &reqwest::Client, url: String, body: Value) -> (u16, Value) {
    let resp = client.post(url).json(&body).send().await.unwrap();
    let status = resp.status().as_u16();
    (status, resp.json().await.unwrap())
}

#[tokio::test]
async fn probes_answer() {
    let (server, client) = exact().await;
    let base = server.base_url();
    assert_eq!(base, format!("http://127.0.0.1:{}", server.addr().port()));
    let models: Value = client
        .get(format!("{base}/v1/models"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(models["object"], "list");
    assert_eq!(models["data"][0]["id"], "sim-exact");
    assert_eq!(models["data"][0]["owned_by"], "qexp-sim");
    assert_eq!(models["data"][0]["max_model_len"], 131_072);
    let version: Value = client
        .get(format!("{base}/version"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(
        version["version"],
        format!("qexp-sim {}", env!("CARGO_PKG_VERSION"))
    );
    assert_eq!(
        client
            .get(format!("{base}/health"))
            .send()
            .await
            .unwrap()
            .status(),
        200
    );
    server.shutdown().await;
}

#[tokio::test]
async fn tokenize_counts_like_usage() {
    let (server, client) = exact().await;
    let url = format!("{}/tokenize", server.base_url());
    let (status, body) = post(
        &client,
        url.clone(),
        json!({"model": "x", "prompt": words(37)}),
    )
    .await;
    assert_eq!(status, 200);
    assert_eq!(body["count"], 37);
    assert_eq!(body["tokens"].as_array().unwrap().len(), 37);
    assert_eq!(body["max_model_len"], 131_072);
    let messages =
        json!([{"role": "system", "content": words(5)}, {"role": "user", "content": words(10)}]);
    let (_, tok) = post(&client, url, json!({"model": "x", "messages": messages})).await;
    let (_, chat) = post(
        &client,
        format!("{}/v1/chat/completions", server.base_url()),
        json!({"model": "x", "messages": messages, "max_tokens": 1}),
    )
    .await;
    assert_eq!(tok["count"], 15 + CHAT_PRIMER_TOKENS + 2 * 4);
    assert_eq!(tok["count"], chat["usage"]["prompt_tokens"]);
    server.shutdown().await;
}

#[tokio::test]
async fn non_streaming_completion_has_exact_usage() {
    let (server, client) = exact().await;
    let (status, body) = post(
        &client,
        format!("{}/v1/completions", server.base_url()),
        json!({"model": "anything", "prompt": words(100), "max_tokens": 7, "ignore_eos": true, "temperature": 0}),
    )
    .await;
    assert_eq!(status, 200);
    assert_eq!(body["object"], "text_completion");
    assert_eq!(body["model"], "anything");
    assert_eq!(body["choices"][0]["finish_reason"], "length");
    let text = body["choices"][0]["text"].as_str().unwrap();
    assert_eq!(text.split_whitespace().count(), 7);
    let usage = &body["usage"];
    assert_eq!(usage["prompt_tokens"], 100);
    assert_eq!(usage["completion_tokens"], 7);
    assert_eq!(usage["total_tokens"], 107);
    assert_eq!(usage["prompt_tokens_details"]["cached_tokens"], 0);

    // No max_tokens: the default of 16.
    let (_, body) = post(
        &client,
        format!("{}/v1/completions", server.base_url()),
        json!({"prompt": "hi"}),
    )
    .await;
    assert_eq!(body["usage"]["completion_tokens"], 16);
    assert_eq!(body["model"], "sim-exact");
    server.shutdown().await;
}

#[tokio::test]
async fn non_streaming_chat_message_and_usage() {
    let (server, client) = exact().await;
    let (status, body) = post(
        &client,
        format!("{}/v1/chat/completions", server.base_url()),
        json!({"messages": [{"role": "user", "content": words(3)}], "max_completion_tokens": 4}),
    )
    .await;
    assert_eq!(status, 200);
    assert_eq!(body["object"], "chat.completion");
    assert_eq!(body["choices"][0]["message"]["role"], "assistant");
    assert_eq!(
        body["choices"][0]["message"]["content"]
            .as_str()
            .unwrap()
            .split_whitespace()
            .count(),
        4
    );
    assert_eq!(body["usage"]["prompt_tokens"], 3 + CHAT_PRIMER_TOKENS + 4);
    assert_eq!(body["usage"]["completion_tokens"], 4);
    server.shutdown().await;
}

#[tokio::test]
async fn streamed_completion_frames() {
    let (server, client) = exact().await;
    let body = client
        .post(format!("{}/v1/completions", server.base_url()))
        .json(&json!({"prompt": "a b", "max_tokens": 3, "stream": true}))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let events = split(&body);
    // No include_usage: three content chunks then [DONE], no usage chunk.
    assert_eq!(events.len(), 4, "{events:?}");
    assert_eq!(events[3], "[DONE]");
    let chunks: Vec<Value> = events[..3]
        .iter()
        .map(|e| serde_json::from_str(e).unwrap())
        .collect();
    for (i, c) in chunks.iter().enumerate() {
        assert_eq!(c["object"], "text_completion");
        assert_eq!(
            c["choices"][0]["text"]
                .as_str()
                .unwrap()
                .split_whitespace()
                .count(),
            1
        );
        let finish = if i == 2 { json!("length") } else { Value::Null };
        assert_eq!(c["choices"][0]["finish_reason"], finish);
        assert!(c.get("usage").is_none());
    }
    server.shutdown().await;
}

#[tokio::test]
async fn errors_are_openai_style_400s() {
    let (server, client) = exact().await;
    let chat = format!("{}/v1/chat/completions", server.base_url());
    let resp = client
        .post(&chat)
        .header("content-type", "application/json")
        .body("{not json")
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 400);
    let body: Value = resp.json().await.unwrap();
    assert_eq!(body["error"]["type"], "BadRequestError");
    assert_eq!(body["error"]["code"], 400);
    assert!(body["error"]["message"]
        .as_str()
        .unwrap()
        .contains("invalid request body"));

    // 131_072 - 7 template tokens - 100 prompt words leaves room for exactly 130_965.
    let messages = json!([{"role": "user", "content": words(100)}]);
    let at_limit = json!({"messages": messages, "max_tokens": 130_965, "stream": true});
    let resp = client.post(&chat).json(&at_limit).send().await.unwrap();
    assert_eq!(resp.status(), 200, "exactly at the limit is allowed");
    drop(resp); // hang up instead of reading 130K tokens
    let (status, body) = post(
        &client,
        chat.clone(),
        json!({"messages": messages, "max_tokens": 130_966}),
    )
    .await;
    assert_eq!(status, 400);
    let message = body["error"]["message"].as_str().unwrap();
    assert!(message.contains("131072"), "{message}");
    assert!(message.contains("131073"), "{message}");

    let (status, body) = post(
        &client,
        chat.clone(),
        json!({"messages": [], "max_tokens": 1}),
    )
    .await;
    assert_eq!((status, body["error"]["code"].clone()), (400, json!(400)));
    let (status, _) = post(
        &client,
        chat,
        json!({"messages": messages, "max_tokens": 0}),
    )
    .await;
    assert_eq!(status, 400);
    let (status, _) = post(
        &client,
        format!("{}/v1/completions", server.base_url()),
        json!({"prompt": ["a", "b"]}),
    )
    .await;
    assert_eq!(status, 400);
    server.shutdown().await;
}

#[tokio::test]
async fn invalid_profile_is_refused() {
    let mut profile = SimProfile::by_name("exact").unwrap();
    profile.tokens_per_step = 0;
    let err = SimServer::start(profile).await.unwrap_err();
    assert_eq!(err.kind(), std::io::ErrorKind::InvalidInput);
    assert!(err.to_string().contains("tokens_per_step"), "{err}");
}
