//! Kernel receive timestamps for qexp's own HTTP/1.1 reader (`raw`): where
//! the platform has them (Linux `SO_TIMESTAMPNS`), each socket read comes
//! with the moment the kernel received its data, so the arrival qexp
//! records no longer includes the time the data waited in the socket for
//! qexp's event loop (at a thousand streams the first wave's answers wait
//! for milliseconds). Elsewhere, or when `QEXP_RX_TIMESTAMPS=off` is set,
//! the option is refused, or a read comes without a stamp, the read is
//! stamped when it returns, as before; [`StampCounts`] says which of the two
//! timed a client's reads, for the run's `client_timing`.
//!
//! The kernel's stamp is on the wall clock (`CLOCK_REALTIME`) while qexp
//! times requests on the monotonic clock (`Instant`, with `sent_unix_s`
//! taken once beside it). The stamp is turned into an `Instant` by how long
//! before the read's return it lies on the wall clock, read beside the
//! monotonic one at that return: only a difference of microseconds to
//! milliseconds crosses clocks, so a wall-clock step during a run moves no
//! time qexp records.
//!
//! A caveat the kernel sets: when data waited in the socket and more came
//! behind it, the kernel merges them and keeps the later stamp, so a read
//! that returns several events carries the arrival of the last of them.

use bytes::BytesMut;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant, SystemTime};
use tokio::net::TcpStream;

/// The environment variable that turns kernel receive stamps off.
pub(crate) const ENV: &str = "QEXP_RX_TIMESTAMPS";

/// True when `value` (of [`ENV`]) asks for kernel stamps to be left off:
/// `off`, `0`, `false` or `no`, in any case.
pub(crate) fn switched_off(value: Option<&str>) -> bool {
    value.is_some_and(|v| {
        let v = v.trim();
        ["off", "0", "false", "no"]
            .iter()
            .any(|o| v.eq_ignore_ascii_case(o))
    })
}

/// How many of a client's stamped reads the kernel timed, and how many
/// were stamped when they returned (no stamp came with the data).
#[derive(Debug, Default)]
pub(crate) struct StampCounts {
    kernel: AtomicU64,
    user: AtomicU64,
}

impl StampCounts {
    fn note(&self, kernel: bool) {
        let c = if kernel { &self.kernel } else { &self.user };
        c.fetch_add(1, Ordering::Relaxed);
    }

    /// Reads so far: (kernel-stamped, stamped on return).
    pub(crate) fn get(&self) -> (u64, u64) {
        (
            self.kernel.load(Ordering::Relaxed),
            self.user.load(Ordering::Relaxed),
        )
    }
}

/// Kernel receive stamps for one client: on when the platform has them, the
/// user did not switch them off and a socket accepted the option.
pub(crate) struct RxStamps {
    /// A socket with the option set, kept open for the client's life: the
    /// kernel turns its stamping on (deferred, for everyone) with the first
    /// such socket and off with the last, so none of the streams' first
    /// packets come unstamped while it switches.
    #[cfg(target_os = "linux")]
    _keep_on: Option<std::os::fd::OwnedFd>,
    on: bool,
    counts: StampCounts,
}

impl std::fmt::Debug for RxStamps {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RxStamps").field("on", &self.on).finish()
    }
}

impl RxStamps {
    /// Stamps as the environment ([`ENV`]) and the platform allow.
    pub(crate) fn from_env() -> RxStamps {
        let off = switched_off(std::env::var(ENV).ok().as_deref());
        RxStamps::wanted(!off)
    }

    /// Stamps when `wanted` and the platform has them.
    pub(crate) fn wanted(wanted: bool) -> RxStamps {
        #[cfg(target_os = "linux")]
        {
            let keep = wanted.then(linux::probe).flatten();
            RxStamps {
                on: keep.is_some(),
                _keep_on: keep,
                counts: StampCounts::default(),
            }
        }
        #[cfg(not(target_os = "linux"))]
        {
            let _ = wanted;
            RxStamps {
                on: false,
                counts: StampCounts::default(),
            }
        }
    }

    /// True when kernel stamps are on and timed every read so far.
    pub(crate) fn timed_every_read(&self) -> bool {
        self.on && self.counts.get().1 == 0
    }

    /// Reads so far: (kernel-stamped, stamped on return).
    pub(crate) fn counts(&self) -> (u64, u64) {
        self.counts.get()
    }

    /// Asks for the kernel's stamps on `sock` (a new connection); a socket
    /// that refuses reads unstamped, and [`StampCounts`] says so.
    pub(crate) fn set_up(&self, sock: &TcpStream) {
        #[cfg(target_os = "linux")]
        if self.on {
            let _ = linux::enable(sock);
        }
        #[cfg(not(target_os = "linux"))]
        let _ = sock;
    }

    /// Reads what `sock` holds onto the end of `buf`, waiting until it holds
    /// something; returns the bytes read (0: the peer closed) and, for a
    /// read of data, when it arrived: the kernel's stamp, or the moment the
    /// read returned.
    pub(crate) async fn read(
        &self,
        sock: &TcpStream,
        buf: &mut BytesMut,
    ) -> std::io::Result<(usize, Instant)> {
        #[cfg(target_os = "linux")]
        if self.on {
            let (n, at) = linux::read(sock, buf).await?;
            if n > 0 {
                self.counts.note(at.is_some());
            }
            return Ok((n, at.unwrap_or_else(Instant::now)));
        }
        let n = plain_read(sock, buf).await?;
        if n > 0 {
            self.counts.note(false);
        }
        Ok((n, Instant::now()))
    }
}

/// A read without a stamp (the fallback).
async fn plain_read(sock: &TcpStream, buf: &mut BytesMut) -> std::io::Result<usize> {
    loop {
        sock.readable().await?;
        buf.reserve(16 * 1024);
        match sock.try_read_buf(buf) {
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => continue,
            r => return r,
        }
    }
}

/// The moment `stamp` (on the wall clock) names, as an `Instant`, given
/// that the wall clock read `wall_now` at the monotonic `now`. A stamp after
/// `wall_now` (the wall clock stepped back) is taken as `now`.
pub(crate) fn arrival(stamp: SystemTime, now: Instant, wall_now: SystemTime) -> Instant {
    let waited = wall_now.duration_since(stamp).unwrap_or(Duration::ZERO);
    now.checked_sub(waited).unwrap_or(now)
}

/// The moment a kernel receive stamp (on the wall clock) names, on the
/// monotonic clock qexp times with: as long before now as the stamp lies
/// before the wall clock's now.
pub fn instant_of(stamp: SystemTime) -> Instant {
    arrival(stamp, Instant::now(), SystemTime::now())
}

/// Asks the kernel to stamp the data `sock` receives (Linux
/// `SO_TIMESTAMPNS`); false where it refuses or the platform has no such
/// option. [`recv_stamped`] then returns the stamps.
pub fn enable_rx_timestamps(sock: &TcpStream) -> bool {
    #[cfg(target_os = "linux")]
    {
        linux::enable(sock)
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = sock;
        false
    }
}

/// One non-blocking read from `sock` into `buf` (`WouldBlock` when it holds
/// nothing), with the kernel's receive stamp of the data (wall clock) when
/// one came: after [`enable_rx_timestamps`], on Linux.
pub fn recv_stamped(
    sock: &TcpStream,
    buf: &mut [u8],
) -> std::io::Result<(usize, Option<SystemTime>)> {
    #[cfg(target_os = "linux")]
    {
        linux::recv(sock, buf)
    }
    #[cfg(not(target_os = "linux"))]
    {
        sock.try_read(buf).map(|n| (n, None))
    }
}

#[cfg(target_os = "linux")]
mod linux {
    use super::{arrival, recv_stamped};
    use bytes::BytesMut;
    use nix::sys::socket::{recvmsg, setsockopt, sockopt, ControlMessageOwned, MsgFlags};
    use nix::sys::time::TimeSpec;
    use std::cell::RefCell;
    use std::io::IoSliceMut;
    use std::os::fd::{AsRawFd, OwnedFd};
    use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};
    use tokio::io::Interest;
    use tokio::net::TcpStream;

    /// The most one read takes from a socket.
    const READ_BYTES: usize = 64 * 1024;

    thread_local! {
        /// One thread's buffer for the client's reads (each read runs to its
        /// end on the thread that began it): filled, then copied out at once.
        static SCRATCH: RefCell<Vec<u8>> = RefCell::new(vec![0; READ_BYTES]);
        /// Room for a read's control messages.
        static CONTROL: RefCell<Vec<u8>> = RefCell::new(nix::cmsg_space!([TimeSpec; 4]));
    }

    /// A TCP socket with `SO_TIMESTAMPNS` set, or `None` when the kernel
    /// refuses the option.
    pub(super) fn probe() -> Option<OwnedFd> {
        use nix::sys::socket::{socket, AddressFamily, SockFlag, SockType};
        let fd = socket(
            AddressFamily::Inet,
            SockType::Stream,
            SockFlag::SOCK_CLOEXEC,
            None,
        )
        .ok()?;
        setsockopt(&fd, sockopt::ReceiveTimestampns, &true).ok()?;
        Some(fd)
    }

    pub(super) fn enable(sock: &TcpStream) -> bool {
        match setsockopt(sock, sockopt::ReceiveTimestampns, &true) {
            Ok(()) => true,
            Err(e) => {
                tracing::debug!(
                    "SO_TIMESTAMPNS refused on a connection ({e}): its reads are stamped on return"
                );
                false
            }
        }
    }

    /// One `recvmsg` into `buf`, and the `SCM_TIMESTAMPNS` that came with it.
    pub(super) fn recv(
        sock: &TcpStream,
        buf: &mut [u8],
    ) -> std::io::Result<(usize, Option<SystemTime>)> {
        CONTROL.with_borrow_mut(|control| {
            let mut iov = [IoSliceMut::new(buf)];
            let msg = recvmsg::<()>(
                sock.as_raw_fd(),
                &mut iov,
                Some(control),
                MsgFlags::MSG_DONTWAIT,
            )?;
            let stamp = msg.cmsgs().ok().and_then(|mut c| {
                c.find_map(|m| match m {
                    ControlMessageOwned::ScmTimestampns(ts) => Some(ts),
                    _ => None,
                })
            });
            let stamp = stamp.and_then(|ts| {
                let secs = u64::try_from(ts.tv_sec()).ok()?;
                let nanos = u32::try_from(ts.tv_nsec()).ok()?;
                (secs > 0).then(|| UNIX_EPOCH + Duration::new(secs, nanos))
            });
            Ok((msg.bytes, stamp))
        })
    }

    /// Waits until `sock` holds something and reads it onto `buf`, with the
    /// kernel's stamp as an `Instant`.
    pub(super) async fn read(
        sock: &TcpStream,
        buf: &mut BytesMut,
    ) -> std::io::Result<(usize, Option<Instant>)> {
        loop {
            sock.readable().await?;
            match sock.try_io(Interest::READABLE, || receive(sock, buf)) {
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => continue,
                r => return r,
            }
        }
    }

    fn receive(sock: &TcpStream, buf: &mut BytesMut) -> std::io::Result<(usize, Option<Instant>)> {
        SCRATCH.with_borrow_mut(|data| {
            let (n, stamp) = recv_stamped(sock, data)?;
            let (now, wall_now) = (Instant::now(), SystemTime::now());
            buf.extend_from_slice(&data[..n]);
            Ok((n, stamp.map(|s| arrival(s, now, wall_now))))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::UNIX_EPOCH;

    #[test]
    fn only_off_like_values_switch_stamps_off() {
        for v in ["off", "OFF", " 0", "false", "No"] {
            assert!(switched_off(Some(v)), "{v}");
        }
        for v in [None, Some("on"), Some(""), Some("1"), Some("offf")] {
            assert!(!switched_off(v), "{v:?}");
        }
    }

    #[test]
    fn a_stamp_becomes_the_instant_as_long_before_the_read() {
        let now = Instant::now();
        let wall = UNIX_EPOCH + Duration::from_secs(1_800_000_000);
        let stamp = wall - Duration::from_millis(30);
        assert_eq!(arrival(stamp, now, wall), now - Duration::from_millis(30));
        // A stamp ahead of the wall clock (it stepped back): the read's return.
        let ahead = wall + Duration::from_secs(1);
        assert_eq!(arrival(ahead, now, wall), now);
    }

    /// How long the client's only thread is kept from reading.
    const BLOCKED: Duration = Duration::from_millis(1000);
    /// When the server answers after the request came.
    const ANSWER_AFTER: Duration = Duration::from_millis(50);

    /// One streamed request to a server that answers [`ANSWER_AFTER`] the
    /// request, while the client's (only) thread is blocked for [`BLOCKED`]
    /// from the moment the request reached the server: the answer waits in
    /// the socket until the client reads it, late on purpose.
    async fn read_late(kernel: bool) -> (crate::Outcome, crate::Client) {
        use std::io::{Read, Write};
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let (came, request_came) = tokio::sync::oneshot::channel::<()>();
        let server = std::thread::spawn(move || {
            let (mut sock, _) = listener.accept().unwrap();
            let mut req = Vec::new();
            let mut chunk = [0u8; 4096];
            // The request's body is `{...}` after its head: read to its `}`.
            while !req.ends_with(b"}") {
                let n = sock.read(&mut chunk).unwrap();
                assert!(n > 0, "the client closed before its request was whole");
                req.extend_from_slice(&chunk[..n]);
            }
            let _ = came.send(());
            std::thread::sleep(ANSWER_AFTER);
            let events = "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"hi\"},\"finish_reason\":\"length\"}]}\n\n\
                data: {\"choices\":[],\"usage\":{\"prompt_tokens\":1,\"completion_tokens\":1}}\n\ndata: [DONE]\n\n";
            let answer = format!(
                "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n{:x}\r\n{events}\r\n0\r\n\r\n",
                events.len()
            );
            sock.write_all(answer.as_bytes()).unwrap();
        });
        let client = crate::Client::new(&url, None, Duration::from_secs(10))
            .unwrap()
            .with_kernel_stamps(kernel);
        let blocker = tokio::spawn(async move {
            if request_came.await.is_ok() {
                std::thread::sleep(BLOCKED); // the runtime's only thread
            }
        });
        let req = crate::GenRequest {
            api: qexp_plan::ApiKind::Chat,
            model: "m".into(),
            prompt: "p".into(),
            max_tokens: 1,
            extra: Default::default(),
            history: None,
            batch: 1,
            headers: Vec::new(),
            images: Default::default(),
        };
        let out = client.stream(&req).await;
        blocker.await.unwrap();
        server.join().unwrap();
        (out, client)
    }

    /// On Linux the arrival is the kernel's: about [`ANSWER_AFTER`] after
    /// the request went out, not the [`BLOCKED`] late read (as stamping on
    /// return would give).
    #[cfg(target_os = "linux")]
    #[tokio::test(flavor = "current_thread")]
    async fn a_late_read_keeps_the_kernels_arrival() {
        let (out, client) = read_late(true).await;
        assert!(out.ok(), "{:?}", out.error);
        let ttft = out.ttft_s().unwrap();
        assert!(
            ttft >= ANSWER_AFTER.as_secs_f64() && ttft < BLOCKED.as_secs_f64() / 2.0,
            "TTFT {ttft} s: not the kernel's arrival"
        );
        let (kernel, user) = client.read_stamps();
        assert!(
            kernel > 0 && user == 0,
            "{kernel} kernel, {user} user stamps"
        );
        assert_eq!(
            client.client_timing(),
            qexp_types::ClientTiming::Http1KernelStamps
        );
    }

    /// With kernel stamps off (as `QEXP_RX_TIMESTAMPS=off`, or a platform
    /// without them) the same late read is stamped when it returns, and the
    /// client says so.
    #[tokio::test(flavor = "current_thread")]
    async fn without_kernel_stamps_a_late_read_is_stamped_on_return() {
        let (out, client) = read_late(false).await;
        assert!(out.ok(), "{:?}", out.error);
        let ttft = out.ttft_s().unwrap();
        assert!(ttft >= BLOCKED.as_secs_f64(), "TTFT {ttft} s");
        let (kernel, user) = client.read_stamps();
        assert!(
            kernel == 0 && user > 0,
            "{kernel} kernel, {user} user stamps"
        );
        assert_eq!(
            client.client_timing(),
            qexp_types::ClientTiming::Http1FromWire
        );
    }
}
