//! When a request reached the bench server: the kernel's receive stamp of
//! its bytes (Linux `SO_TIMESTAMPNS`, read with the data through
//! qexp-client's `recv_stamped`), so the server's own TTFT can count from
//! the request's arrival at its socket, not from when its handler ran.
//!
//! Why: in a closed loop the first wave's C requests arrive together, and
//! the server reads and parses them one after another; the last handler of
//! a thousand starts milliseconds after its request arrived. A client sees
//! that wait, rightly, as part of TTFT; a server clock that starts in the
//! handler does not, and the difference would be charged to the client.
//!
//! Each connection keeps the arrival of its latest read. HTTP/1.1 without
//! pipelining (as qexp sends) puts nothing more on the connection before the
//! answer, so when the handler runs, the latest read is its request's last
//! bytes.

use axum::extract::connect_info::Connected;
use axum::serve::{IncomingStream, Listener};
use std::io;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{ready, Context, Poll};
use std::time::Instant;
use tokio::io::{AsyncRead, AsyncWrite, Interest, ReadBuf};
use tokio::net::{TcpListener, TcpStream};

/// A connection's latest kernel-stamped arrival (shared by its reader and
/// its handlers as axum connect info).
#[derive(Clone, Debug, Default)]
pub struct Arrival(Arc<Mutex<Option<Instant>>>);

impl Arrival {
    /// The latest read's kernel arrival; `None` where the kernel stamped none.
    pub fn latest(&self) -> Option<Instant> {
        *self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn set(&self, at: Option<Instant>) {
        *self.0.lock().unwrap_or_else(|e| e.into_inner()) = at;
    }
}

/// A TCP listener whose connections stamp their reads (Nagle off, as
/// inference servers set their sockets).
pub struct StampedListener(pub TcpListener);

impl Listener for StampedListener {
    type Io = StampedIo;
    type Addr = Arrival;

    async fn accept(&mut self) -> (StampedIo, Arrival) {
        loop {
            match self.0.accept().await {
                Ok((sock, _)) => {
                    let _ = sock.set_nodelay(true);
                    let stamped = qexp_client::enable_rx_timestamps(&sock);
                    let arrival = Arrival::default();
                    let io = StampedIo {
                        sock,
                        stamped,
                        arrival: arrival.clone(),
                    };
                    return (io, arrival);
                }
                // Out of file descriptors and the like: wait, as axum does.
                Err(_) => tokio::time::sleep(std::time::Duration::from_millis(5)).await,
            }
        }
    }

    fn local_addr(&self) -> io::Result<Arrival> {
        Ok(Arrival::default())
    }
}

impl Connected<IncomingStream<'_, StampedListener>> for Arrival {
    fn connect_info(stream: IncomingStream<'_, StampedListener>) -> Arrival {
        stream.remote_addr().clone()
    }
}

/// A connection that notes the kernel's arrival of every read.
pub struct StampedIo {
    sock: TcpStream,
    stamped: bool,
    arrival: Arrival,
}

impl AsyncRead for StampedIo {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        if !this.stamped {
            return Pin::new(&mut this.sock).poll_read(cx, buf);
        }
        loop {
            ready!(this.sock.poll_read_ready(cx))?;
            let sock = &this.sock;
            let room = buf.initialize_unfilled();
            match sock.try_io(Interest::READABLE, || qexp_client::recv_stamped(sock, room)) {
                Ok((n, stamp)) => {
                    buf.advance(n);
                    if n > 0 {
                        this.arrival.set(stamp.map(qexp_client::instant_of));
                    }
                    return Poll::Ready(Ok(()));
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => continue,
                Err(e) => return Poll::Ready(Err(e)),
            }
        }
    }
}

impl AsyncWrite for StampedIo {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        data: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().sock).poll_write(cx, data)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().sock).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.sock.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().sock).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().sock).poll_shutdown(cx)
    }
}
