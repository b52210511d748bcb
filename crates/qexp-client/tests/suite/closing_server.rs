//! A server that behaves like llama.cpp's: it streams one response with
//! `Keep-Alive` advertised, ends the chunked body, and closes the TCP
//! connection 20 ms later without reading anything more. A client that
//! reuses the pooled connection in that window loses the request unless it
//! sends it again; qexp must lose none, and say how many it sent again.

use crate::script::read_request;
use qexp_client::{Client, GenRequest};
use qexp_plan::ApiKind;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::AsyncWriteExt;
use tokio::net::{TcpListener, TcpStream};

const BODY: &str = "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"hi\"},\"finish_reason\":\"length\"}]}\n\n\
data: {\"choices\":[],\"usage\":{\"prompt_tokens\":3,\"completion_tokens\":1}}\n\n\
data: [DONE]\n\n";

/// A request for one token.
fn one_token(api: ApiKind) -> GenRequest {
    GenRequest {
        api,
        model: "m".into(),
        prompt: "p".into(),
        max_tokens: 1,
        extra: Default::default(),
        history: None,
        batch: 1,
        headers: Vec::new(),
        images: Default::default(),
    }
}

async fn serve_one_then_close(mut sock: TcpStream) {
    if read_request(&mut sock).await.is_none() {
        return;
    }
    let head = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\
                Transfer-Encoding: chunked\r\nKeep-Alive: timeout=5, max=100\r\n\r\n";
    let body = format!("{:x}\r\n{BODY}\r\n0\r\n\r\n", BODY.len());
    let _ = sock.write_all(head.as_bytes()).await;
    let _ = sock.write_all(body.as_bytes()).await;
    tokio::time::sleep(Duration::from_millis(20)).await;
    // Dropped without reading what the client may have sent meanwhile.
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_request_is_lost_when_the_server_closes_after_each_stream() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((sock, _)) = listener.accept().await {
            tokio::spawn(serve_one_then_close(sock));
        }
    });
    let client =
        Arc::new(Client::new(&format!("http://{addr}"), None, Duration::from_secs(10)).unwrap());
    let req = one_token(ApiKind::Chat);
    let mut tasks = Vec::new();
    for _ in 0..8 {
        let (client, req) = (client.clone(), req.clone());
        tasks.push(tokio::spawn(async move {
            let mut outcomes = Vec::new();
            for _ in 0..25 {
                outcomes.push(client.stream(&req).await);
            }
            outcomes
        }));
    }
    let mut retries = 0;
    for t in tasks {
        for o in t.await.unwrap() {
            assert!(o.ok(), "lost a request: {:?}", o.error);
            assert_eq!(o.usage.completion_tokens, Some(1));
            assert!(o.retries <= 1);
            retries += o.retries;
        }
    }
    // Back-to-back requests reuse the pooled connection inside the 20 ms window.
    assert!(retries > 0, "the test never hit a closed connection");
}

/// The kernel completes the TCP handshake and holds the request while the
/// server is slow to accept it: the request is on the wire, and that wait is
/// the server's, so it stays inside TTFT (qexp's own set-up time does not).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_slow_to_take_the_request_is_timed_from_the_send() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    // Built first: its set-up (TLS roots and all, tens of ms on a busy
    // host) must not eat into the server's wait.
    let client = Client::new(&format!("http://{addr}"), None, Duration::from_secs(10)).unwrap();
    let unix_now = || {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs_f64()
    };
    let (took_tx, took) = tokio::sync::oneshot::channel();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(300)).await;
        if let Ok((sock, _)) = listener.accept().await {
            let _ = took_tx.send(unix_now());
            serve_one_then_close(sock).await;
        }
    });
    let req = one_token(ApiKind::Completions);
    let before = unix_now();
    let o = client.stream(&req).await;
    assert!(o.ok(), "{:?}", o.error);
    let (sent_after, ttft) = (o.sent_unix_s - before, o.ttft_s().unwrap());
    assert!(
        (0.0..0.2).contains(&sent_after),
        "sent {sent_after} s after the call"
    );
    // Judged against when the server took the request, not against the
    // 300 ms: on a busy host the client's own set-up eats into those.
    let waited = took.await.unwrap() - o.sent_unix_s;
    assert!(
        waited > 0.0,
        "the server took the request {waited} s after it was sent"
    );
    assert!(
        ttft >= waited,
        "TTFT {ttft} s left out the server's wait of {waited} s"
    );
}

/// Connections opened before a point stand ready: the requests that follow
/// use them instead of setting up their own while they are measured.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn warmed_connections_carry_the_requests() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let accepted = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let count = accepted.clone();
    tokio::spawn(async move {
        while let Ok((sock, _)) = listener.accept().await {
            count.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            tokio::spawn(serve_one_then_close(sock));
        }
    });
    let client = Client::new(&format!("http://{addr}"), None, Duration::from_secs(10)).unwrap();
    client.warm_connections(4).await;
    client.warm_connections(4).await; // already warm: opens none
    let req = one_token(ApiKind::Chat);
    let o = client.stream(&req).await;
    assert!(o.ok(), "{:?}", o.error);
    assert_eq!(o.retries, 0);
    tokio::time::sleep(Duration::from_millis(50)).await;
    let n = accepted.load(std::sync::atomic::Ordering::SeqCst);
    assert_eq!(n, 4, "the request opened a connection of its own");
}
