//! A test-local server in front of the simulator that logs every request it
//! finished: it forwards bytes both ways and counts each `data: [DONE]` it
//! delivered to the client in full. That count is the server's own record
//! of finished streams, to hold qexp's results against.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

const DONE: &[u8] = b"data: [DONE]";
/// The header of a streamed response: a stream begins.
const STREAM: &[u8] = b"text/event-stream";

/// The proxy's address and its count of finished streams.
pub struct CountingProxy {
    /// `http://127.0.0.1:PORT`.
    pub base_url: String,
    finished: Arc<AtomicUsize>,
    started: Arc<AtomicUsize>,
}

impl CountingProxy {
    /// Listens on 127.0.0.1:0 and forwards every connection to `upstream`.
    pub async fn start(upstream: std::net::SocketAddr) -> CountingProxy {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base_url = format!("http://{}", listener.local_addr().unwrap());
        let finished = Arc::new(AtomicUsize::new(0));
        let started = Arc::new(AtomicUsize::new(0));
        let counts = (finished.clone(), started.clone());
        tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                let counts = counts.clone();
                tokio::spawn(async move {
                    if let Ok(server) = TcpStream::connect(upstream).await {
                        let _ = client.set_nodelay(true);
                        let _ = server.set_nodelay(true);
                        forward(client, server, counts).await;
                    }
                });
            }
        });
        CountingProxy {
            base_url,
            finished,
            started,
        }
    }

    /// The count of streams the server has begun answering and not
    /// finished, as a function that outlives the proxy's borrow.
    pub fn in_flight_counter(&self) -> impl Fn() -> usize + Send + Sync + 'static {
        let (started, finished) = (self.started.clone(), self.finished.clone());
        move || {
            started
                .load(Ordering::SeqCst)
                .saturating_sub(finished.load(Ordering::SeqCst))
        }
    }

    /// Streams the server has begun answering so far.
    pub fn started(&self) -> usize {
        self.started.load(Ordering::SeqCst)
    }

    /// Streams delivered whole so far.
    pub fn finished(&self) -> usize {
        self.finished.load(Ordering::SeqCst)
    }
}

async fn forward(
    client: TcpStream,
    server: TcpStream,
    (count, started): (Arc<AtomicUsize>, Arc<AtomicUsize>),
) {
    let (mut client_rd, mut client_wr) = client.into_split();
    let (mut server_rd, mut server_wr) = server.into_split();
    let up = tokio::spawn(async move {
        let _ = tokio::io::copy(&mut client_rd, &mut server_wr).await;
        let _ = server_wr.shutdown().await;
    });
    let mut buf = vec![0u8; 64 * 1024];
    // The end of the previous read, so a marker split across reads is seen.
    let mut tail: Vec<u8> = Vec::new();
    loop {
        let n = match server_rd.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        if client_wr.write_all(&buf[..n]).await.is_err() {
            break;
        }
        let mut seen = std::mem::take(&mut tail);
        seen.extend_from_slice(&buf[..n]);
        let hits = seen.windows(DONE.len()).filter(|w| *w == DONE).count();
        let begun = seen.windows(STREAM.len()).filter(|w| *w == STREAM).count();
        started.fetch_add(begun, Ordering::SeqCst);
        // Counted once the bytes are handed to the client's socket.
        count.fetch_add(hits, Ordering::SeqCst);
        let keep = seen.len().min(DONE.len().max(STREAM.len()) - 1);
        tail = seen[seen.len() - keep..].to_vec();
    }
    up.abort();
}
