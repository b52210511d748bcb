//! When a request really went out: a request body that notes the moment the
//! HTTP connection first reads it. hyper reads the body right after it has
//! taken the request for a connection that is ready to write (set up, idle,
//! its head encoded), so this is the moment the request goes to the wire:
//! after qexp's own work of building it, waiting for a pooled connection or
//! setting up a new one, which is then not counted in TTFT.

use bytes::Bytes;
use http_body::{Body, Frame, SizeHint};
use std::convert::Infallible;
use std::pin::Pin;
use std::sync::{Arc, OnceLock};
use std::task::{Context, Poll};
use std::time::Instant;

/// A whole request body, sent as one frame of known length.
pub(crate) struct StampedBody {
    data: Option<Bytes>,
    len: u64,
    read_at: Arc<OnceLock<Instant>>,
}

impl StampedBody {
    /// The body and the cell that will hold the moment it was first read.
    pub(crate) fn new(data: Bytes) -> (StampedBody, Arc<OnceLock<Instant>>) {
        let read_at = Arc::new(OnceLock::new());
        let body = StampedBody {
            len: data.len() as u64,
            data: Some(data),
            read_at: read_at.clone(),
        };
        (body, read_at)
    }
}

impl Body for StampedBody {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        self.read_at.get_or_init(Instant::now);
        Poll::Ready(self.data.take().map(|d| Ok(Frame::data(d))))
    }

    fn is_end_stream(&self) -> bool {
        self.data.is_none()
    }

    /// Exact, so the request carries a `Content-Length`, as a plain body would.
    fn size_hint(&self) -> SizeHint {
        SizeHint::with_exact(if self.data.is_some() { self.len } else { 0 })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_first_read_is_noted_and_the_body_is_whole() {
        let (body, read_at) = StampedBody::new(Bytes::from_static(b"{\"a\":1}"));
        assert_eq!(body.size_hint().exact(), Some(7));
        assert!(!body.is_end_stream());
        assert!(read_at.get().is_none(), "not read yet");
        let before = Instant::now();
        let mut body = body;
        let frame = std::future::poll_fn(|cx| Pin::new(&mut body).poll_frame(cx)).await;
        let data = frame.unwrap().unwrap().into_data().unwrap();
        assert_eq!(&data[..], b"{\"a\":1}");
        assert!(*read_at.get().unwrap() >= before);
        assert!(body.is_end_stream());
        assert_eq!(body.size_hint().exact(), Some(0));
    }
}
