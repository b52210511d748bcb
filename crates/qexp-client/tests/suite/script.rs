//! A server on 127.0.0.1:0 that answers every request by playing a script:
//! bytes written exactly as given, with pauses between them. It lets a test
//! send what a real server sends (an `error:` field, keep-alive comments,
//! the first event in the same packet as the head) where the simulator has
//! no fault for it.

use qexp_client::{Client, ErrorClass, GenRequest, Outcome, Timeouts};
use qexp_plan::ApiKind;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// One step of a scripted answer.
#[derive(Debug, Clone)]
pub enum Step {
    /// Bytes written in one `write_all`.
    Write(Vec<u8>),
    /// A pause.
    Wait(Duration),
}

/// The head of a 200 event-stream answer with a chunked body.
pub const STREAM_HEAD: &str = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\
                               Transfer-Encoding: chunked\r\n\r\n";

/// `data` as one chunk of a chunked body.
pub fn chunk(data: &str) -> Vec<u8> {
    format!("{:x}\r\n{data}\r\n", data.len()).into_bytes()
}

/// The last chunk of a chunked body.
pub const LAST_CHUNK: &[u8] = b"0\r\n\r\n";

/// A 200 event stream whose body is `events`, each one chunk written at once.
pub fn stream_of(events: &[&str]) -> Vec<Step> {
    let mut steps = vec![Step::Write(STREAM_HEAD.as_bytes().to_vec())];
    steps.extend(events.iter().map(|e| Step::Write(chunk(e))));
    steps.push(Step::Write(LAST_CHUNK.to_vec()));
    steps
}

/// A streamed chunk carrying `text` as content.
pub fn content(text: &str) -> String {
    format!("data: {{\"choices\":[{{\"index\":0,\"delta\":{{\"content\":\"{text}\"}},\"finish_reason\":null}}]}}\n\n")
}

/// The chunk that ends a generation, and `[DONE]`.
pub const FINISH: &str =
    "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"length\"}]}\n\n\
                          data: [DONE]\n\n";

/// Reads one HTTP request (headers and a Content-Length body).
pub async fn read_request(sock: &mut TcpStream) -> Option<()> {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
        let n = sock.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        buf.extend_from_slice(&chunk[..n]);
        if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&buf[..end]).to_ascii_lowercase();
            let len: usize = head
                .lines()
                .find_map(|l| l.strip_prefix("content-length:"))
                .and_then(|v| v.trim().parse().ok())
                .unwrap_or(0);
            while buf.len() < end + 4 + len {
                let n = sock.read(&mut chunk).await.ok()?;
                if n == 0 {
                    return None;
                }
                buf.extend_from_slice(&chunk[..n]);
            }
            return Some(());
        }
    }
}

/// Starts a server that plays `script` to every request and then closes
/// the connection; returns its base URL.
pub async fn serve(script: Vec<Step>) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let script = Arc::new(script);
    tokio::spawn(async move {
        while let Ok((mut sock, _)) = listener.accept().await {
            let script = script.clone();
            tokio::spawn(async move {
                if read_request(&mut sock).await.is_none() {
                    return;
                }
                for step in script.iter() {
                    match step {
                        Step::Write(bytes) => {
                            if sock.write_all(bytes).await.is_err() {
                                return;
                            }
                        }
                        Step::Wait(d) => tokio::time::sleep(*d).await,
                    }
                }
            });
        }
    });
    format!("http://{addr}")
}

/// A request for a few tokens.
pub fn request() -> GenRequest {
    GenRequest {
        api: ApiKind::Chat,
        model: "m".into(),
        prompt: "p".into(),
        max_tokens: 8,
        extra: Default::default(),
        history: None,
        batch: 1,
        headers: Vec::new(),
        images: Default::default(),
    }
}

/// Plays `script` to one request through each transport (qexp's own reader
/// and reqwest), checks that both end the same way, and returns the
/// outcome of qexp's own reader.
pub async fn play(script: Vec<Step>, timeouts: Timeouts, api_key: Option<&str>) -> Outcome {
    let base = serve(script).await;
    let client = Client::with_timeouts(&base, api_key.map(str::to_string), timeouts).unwrap();
    let measure = |client: Client| async move {
        tokio::time::timeout(Duration::from_secs(20), client.stream(&request()))
            .await
            .expect("the client ends every request by its timeouts")
    };
    let via_reqwest = measure(client.clone().over_reqwest()).await;
    let out = measure(client).await;
    let class = |o: &Outcome| o.error.as_ref().map(|e| e.class);
    assert_eq!(
        (class(&out), out.content_chunks),
        (class(&via_reqwest), via_reqwest.content_chunks),
        "{out:?}\n{via_reqwest:?}"
    );
    out
}

/// The class of a failed outcome.
pub fn class(o: &Outcome) -> ErrorClass {
    o.error.as_ref().expect("the request failed").class
}

/// The message of a failed outcome.
pub fn message(o: &Outcome) -> &str {
    &o.error.as_ref().expect("the request failed").message
}
