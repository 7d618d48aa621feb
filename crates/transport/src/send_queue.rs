//! The write side of a WebSocket connection whose data frames are built once
//! and shared between recipients.
//!
//! A server's frames are unmasked, so a broadcast message's frame, header and
//! payload, is the same bytes for every recipient. The connection's writer
//! pushes such frames ([`Bytes`], shared, not copied) onto the connection's
//! [`SendQueue`]; [`Sending`] sits under tungstenite and writes the queue to
//! the socket with vectored writes. tungstenite still writes its own frames
//! (pongs, the close handshake, pings) through the same layer: those bytes are
//! copied onto the queue in the order they come, so every frame goes out
//! whole and in the order it was made.
//!
//! Two rules keep the frames whole and the protocol right:
//! - tungstenite's bytes are taken whole or not at all. When the queue is full
//!   and the socket takes nothing, its write is refused (it keeps the bytes
//!   and tries again), and until it has written them the queue takes no
//!   shared frame ([`Refused::Behind`]): the writer flushes tungstenite first.
//! - once tungstenite has written a close frame, the queue takes no data frame
//!   ([`Refused::Closed`]): nothing may follow a close (RFC 6455 §5.5.1).
//!
//! The shared writer (`transport::shared_writer`) may write frames to the
//! socket itself ([`SendQueue::try_send`]) while the queue is empty, under
//! the queue's lock, which every write to the socket holds: what it writes
//! is never cut into by another write, and what the socket does not take
//! is queued first.

use std::collections::VecDeque;
use std::io::{self, IoSlice};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, ready};

use bytes::{Buf, Bytes};
use hub::Sent;
use parking_lot::Mutex;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;

use wire::websocket::frame_header::FrameHeader;

/// Queued bytes past which tungstenite's own writes wait for the socket. The
/// writer's frames are bounded by the client's outbox; this bounds what a
/// client can make tungstenite queue on its own (a pong for every ping it
/// sends while it reads nothing).
const TUNGSTENITE_ROOM: usize = 64 * 1024;

/// Frames handed to one vectored write.
const MAX_SLICES: usize = 64;

/// Why a frame was not queued.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refused {
    /// tungstenite has bytes it could not queue yet; they go first.
    Behind,
    /// A close frame has been queued: nothing may follow it.
    Closed,
}

/// The frames waiting for one connection's socket, shared between the
/// connection's writer and the [`Sending`] layer, and the shared writer.
/// Writer and reader run in one task, so the lock is contended only by the
/// shared writer.
#[derive(Debug, Clone, Default)]
pub struct SendQueue(Arc<Mutex<Queue>>);

#[derive(Debug, Default)]
struct Queue {
    frames: VecDeque<Bytes>,
    /// Bytes in `frames`.
    len: usize,
    /// tungstenite was refused a write and has not yet made it.
    behind: bool,
    /// A close frame has been queued.
    closed: bool,
    /// The plain TCP socket under the connection, which the shared writer
    /// may write to; none over TLS.
    socket: Option<Arc<TcpStream>>,
}

impl SendQueue {
    pub fn new() -> SendQueue {
        SendQueue::default()
    }

    /// A queue for a connection whose socket the shared writer may write
    /// to ([`SendQueue::try_send`]).
    pub fn with_socket(socket: Option<Arc<TcpStream>>) -> SendQueue {
        SendQueue(Arc::new(Mutex::new(Queue { socket, ..Queue::default() })))
    }

    /// Whether the shared writer may write to the socket.
    pub fn has_socket(&self) -> bool {
        self.0.lock().socket.is_some()
    }

    /// Whether nothing waits to be written.
    pub fn is_empty(&self) -> bool {
        self.0.lock().len == 0
    }

    /// Writes `frames` (taking them all) to the socket now, in order, if
    /// nothing waits before them and the socket takes some without
    /// waiting; what it does not take is queued for the next flush
    /// ([`Sent::Part`]). With [`Sent::Nothing`] nothing was written or queued.
    pub fn try_send(&self, frames: &mut Vec<Bytes>) -> Sent {
        let mut q = self.0.lock();
        if q.len > 0 || q.behind || q.closed {
            return Sent::Nothing;
        }
        // Out of the queue while it writes, which borrows the queue.
        let Some(socket) = q.socket.take() else { return Sent::Nothing };
        let total = frames.iter().map(Bytes::len).sum();
        q.len = total;
        q.frames.extend(frames.drain(..));
        let done = q.write_out(true, |slices| {
            let written = if let [one] = slices { socket.try_write(one) } else { socket.try_write_vectored(slices) };
            match written {
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => Poll::Pending,
                written => Poll::Ready(written),
            }
        });
        q.socket = Some(socket);
        match done {
            Poll::Ready(Ok(())) => Sent::Whole,
            // Would block, or failed (the writer meets it): what is left waits.
            _ if q.len < total => Sent::Part,
            _ => {
                q.frames.clear();
                q.len = 0;
                Sent::Nothing
            }
        }
    }

    /// Queues whole frames made elsewhere, in order, taking them all from
    /// `frames`, or refuses them all and takes none. They go out at the
    /// next flush.
    pub fn push(&self, frames: &mut Vec<Bytes>) -> Result<(), Refused> {
        let mut q = self.0.lock();
        if q.closed {
            return Err(Refused::Closed);
        }
        if q.behind {
            return Err(Refused::Behind);
        }
        q.len += frames.iter().map(Bytes::len).sum::<usize>();
        q.frames.extend(frames.drain(..));
        Ok(())
    }

    /// Gives back the room the queue grew to, if nothing waits in it.
    pub fn release(&self) {
        let mut q = self.0.lock();
        if q.frames.is_empty() {
            q.frames = VecDeque::new();
        }
    }

    /// Bytes waiting.
    #[cfg(test)]
    fn len(&self) -> usize {
        self.0.lock().len
    }
}

/// The layer under tungstenite that owns the connection's write order; see
/// the module docs. Reads pass through.
#[derive(Debug)]
pub struct Sending<S> {
    inner: S,
    queue: SendQueue,
}

impl<S> Sending<S> {
    pub fn new(inner: S, queue: SendQueue) -> Sending<S> {
        Sending { inner, queue }
    }
}

impl<S: AsyncWrite + Unpin> Sending<S> {
    /// Writes queued frames until the queue is empty or the socket is full.
    fn poll_write_out(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let Sending { inner, queue } = self;
        let vectored = inner.is_write_vectored();
        queue.0.lock().write_out(vectored, |slices| match slices {
            [one] => Pin::new(&mut *inner).poll_write(cx, one),
            _ => Pin::new(&mut *inner).poll_write_vectored(cx, slices),
        })
    }
}

impl Queue {
    /// Writes the queued frames through `write` until the queue is empty or
    /// `write` is not ready: one frame alone (a plain write, send(2), which
    /// costs the kernel less than writev(2)), or, if `vectored`, several
    /// in one vectored write. A frame written in part stays first, less
    /// what went.
    fn write_out(&mut self, vectored: bool, mut write: impl FnMut(&[IoSlice<'_>]) -> Poll<io::Result<usize>>) -> Poll<io::Result<()>> {
        while self.len > 0 {
            let mut slices = [IoSlice::new(&[]); MAX_SLICES];
            let n = if vectored { MAX_SLICES } else { 1 };
            let n = self.frames.iter().take(n).zip(slices.iter_mut()).map(|(f, s)| *s = IoSlice::new(f)).count();
            let written = ready!(write(&slices[..n]))?;
            if written == 0 {
                return Poll::Ready(Err(io::ErrorKind::WriteZero.into()));
            }
            self.len -= written;
            let mut left = written;
            while left > 0 {
                let front = self.frames.front_mut().expect("written bytes were queued");
                if front.len() <= left {
                    left -= front.len();
                    self.frames.pop_front();
                } else {
                    front.advance(left);
                    left = 0;
                }
            }
        }
        Poll::Ready(Ok(()))
    }
}

/// Whether `bytes`, whole frames as tungstenite writes them, hold a close frame.
fn holds_close(mut bytes: &[u8]) -> bool {
    while let Some(header) = FrameHeader::parse(bytes) {
        if header.opcode == 0x8 {
            return true;
        }
        let end = header.len.saturating_add(usize::try_from(header.payload).unwrap_or(usize::MAX));
        bytes = bytes.get(end..).unwrap_or_default();
    }
    false
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Sending<S> {
    /// tungstenite's bytes: taken whole, or refused while the queue is full.
    /// They are written out at once, with everything queued before them:
    /// tungstenite counts a frame it has written as sent, and after the
    /// close handshake it flushes no more.
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, data: &[u8]) -> Poll<io::Result<usize>> {
        let this = &mut *self;
        if this.queue.0.lock().len >= TUNGSTENITE_ROOM {
            // Make room if the socket takes some; a partly written queue still
            // has room for a control frame once under the mark.
            let _ = this.poll_write_out(cx)?;
            let mut q = this.queue.0.lock();
            if q.len >= TUNGSTENITE_ROOM {
                q.behind = true;
                return Poll::Pending;
            }
        }
        {
            let mut q = this.queue.0.lock();
            q.behind = false;
            q.closed |= holds_close(data);
            q.len += data.len();
            q.frames.push_back(Bytes::copy_from_slice(data));
        }
        // What the socket does not take now goes at the next flush.
        let _ = this.poll_write_out(cx)?;
        Poll::Ready(Ok(data.len()))
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        ready!(self.poll_write_out(cx))?;
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        ready!(self.poll_write_out(cx))?;
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for Sending<S> {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    /// A write side that takes at most `room` bytes, then blocks, and counts
    /// its write calls.
    struct Narrow {
        taken: Vec<u8>,
        room: usize,
        calls: usize,
    }

    impl AsyncWrite for Narrow {
        fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, data: &[u8]) -> Poll<io::Result<usize>> {
            self.poll_write_vectored(cx, &[IoSlice::new(data)])
        }

        fn poll_write_vectored(mut self: Pin<&mut Self>, _: &mut Context<'_>, bufs: &[IoSlice<'_>]) -> Poll<io::Result<usize>> {
            self.calls += 1;
            let free = self.room - self.taken.len();
            if free == 0 {
                return Poll::Pending;
            }
            let mut n = 0;
            for b in bufs {
                let take = b.len().min(free - n);
                self.taken.extend_from_slice(&b[..take]);
                n += take;
            }
            Poll::Ready(Ok(n))
        }

        fn is_write_vectored(&self) -> bool {
            true
        }

        fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
            Poll::Ready(Ok(()))
        }

        fn poll_shutdown(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
            Poll::Ready(Ok(()))
        }
    }

    fn narrow(room: usize) -> (Sending<Narrow>, SendQueue) {
        let queue = SendQueue::new();
        (Sending::new(Narrow { taken: Vec::new(), room, calls: 0 }, queue.clone()), queue)
    }

    fn poll<T>(f: impl FnOnce(&mut Context<'_>) -> Poll<T>) -> Poll<T> {
        f(&mut Context::from_waker(std::task::Waker::noop()))
    }

    #[tokio::test]
    async fn frames_go_out_in_order_in_one_vectored_write() {
        let (mut out, queue) = narrow(1024);
        let shared = Bytes::from_static(&[0x81, 0x02, b'h', b'i']);
        let mut frames = vec![shared.clone(), Bytes::from_static(&[0x82, 0x01, 0xff]), shared.clone()];
        queue.push(&mut frames).unwrap();
        assert!(frames.is_empty(), "all taken");
        assert_eq!(out.inner.calls, 0, "nothing goes before the flush");
        out.flush().await.unwrap();
        assert_eq!(out.inner.taken, [0x81, 2, b'h', b'i', 0x82, 1, 0xff, 0x81, 2, b'h', b'i']);
        assert_eq!(out.inner.calls, 1, "one write call for the three frames");
        assert_eq!(queue.len(), 0);
        // tungstenite's frame goes out at once, after what was queued before it.
        queue.push(&mut vec![shared.clone()]).unwrap();
        out.write_all(&[0x89, 0x00]).await.unwrap();
        assert_eq!(&out.inner.taken[11..], [0x81, 2, b'h', b'i', 0x89, 0]);
        assert_eq!(out.inner.calls, 2);
    }

    #[tokio::test]
    async fn an_empty_queue_gives_back_its_room_and_a_waiting_one_keeps_it() {
        let (mut out, queue) = narrow(3);
        let room = || queue.0.lock().frames.capacity();
        queue.push(&mut vec![Bytes::from_static(b"abc"), Bytes::from_static(b"def")]).unwrap();
        assert!(poll(|cx| Pin::new(&mut out).poll_flush(cx)).is_pending());
        queue.release();
        assert!(room() > 0, "a frame still waits");
        out.inner.room = 6;
        out.flush().await.unwrap();
        queue.release();
        assert_eq!(room(), 0);
    }

    #[tokio::test]
    async fn a_partial_write_resumes_mid_frame() {
        let (mut out, queue) = narrow(5);
        queue.push(&mut vec![Bytes::from_static(b"abc")]).unwrap();
        queue.push(&mut vec![Bytes::from_static(b"defg")]).unwrap();
        assert!(poll(|cx| Pin::new(&mut out).poll_flush(cx)).is_pending());
        assert_eq!(out.inner.taken, b"abcde");
        assert_eq!(queue.len(), 2);
        out.inner.room = 7;
        assert!(poll(|cx| Pin::new(&mut out).poll_flush(cx)).is_ready());
        assert_eq!(out.inner.taken, b"abcdefg");
    }

    #[tokio::test]
    async fn tungstenite_waits_when_the_queue_is_full_and_its_bytes_then_go_first() {
        let (mut out, queue) = narrow(0);
        queue.push(&mut vec![Bytes::from(vec![0u8; TUNGSTENITE_ROOM])]).unwrap();
        let pong = [0x8a, 0x00];
        assert!(poll(|cx| Pin::new(&mut out).poll_write(cx, &pong)).is_pending(), "refused whole");
        let mut x = vec![Bytes::from_static(b"x")];
        assert_eq!(queue.push(&mut x), Err(Refused::Behind), "tungstenite's bytes go first");
        assert_eq!(x.len(), 1, "a refused frame is not taken");
        out.inner.room = TUNGSTENITE_ROOM;
        assert!(matches!(poll(|cx| Pin::new(&mut out).poll_write(cx, &pong)), Poll::Ready(Ok(2))), "taken once there is room");
        queue.push(&mut x).unwrap();
        out.inner.room += 3;
        out.flush().await.unwrap();
        assert_eq!(&out.inner.taken[TUNGSTENITE_ROOM..], [0x8a, 0x00, b'x']);
    }

    #[tokio::test]
    async fn nothing_is_queued_after_a_close_frame() {
        let (mut out, queue) = narrow(1024);
        out.write_all(&[0x8a, 0x01, b'p', 0x88, 0x02, 0x03, 0xe8]).await.unwrap(); // a pong, then close 1000
        assert_eq!(queue.push(&mut vec![Bytes::from_static(&[0x81, 0x00])]), Err(Refused::Closed));
        out.flush().await.unwrap();
        assert_eq!(out.inner.taken, [0x8a, 0x01, b'p', 0x88, 0x02, 0x03, 0xe8]);
    }

    /// The shared writer's frames go to the socket only while nothing
    /// waits before them; what the socket does not take waits, and the
    /// next flush sends it before anything queued after it.
    #[tokio::test]
    async fn the_shared_writer_writes_only_behind_nothing_and_leaves_the_rest_first_in_line() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let mut client = tokio::net::TcpStream::connect(listener.local_addr().unwrap()).await.unwrap();
        let socket = Arc::new(listener.accept().await.unwrap().0);
        let queue = SendQueue::with_socket(Some(socket.clone()));
        assert_eq!(SendQueue::new().try_send(&mut vec![Bytes::from_static(b"x")]), Sent::Nothing, "no socket, no direct write");

        assert_eq!(queue.try_send(&mut vec![Bytes::from_static(b"ab"), Bytes::from_static(b"c")]), Sent::Whole);
        let mut got = [0u8; 3];
        client.read_exact(&mut got).await.unwrap();
        assert_eq!(&got, b"abc");

        queue.push(&mut vec![Bytes::from_static(b"d")]).unwrap();
        assert_eq!(queue.try_send(&mut vec![Bytes::from_static(b"e")]), Sent::Nothing, "behind a queued frame");
        let mut out = Sending::new(SharedSocket(socket.clone()), queue.clone());
        out.flush().await.unwrap();

        // Fill the socket until it takes only part of what it is given.
        let frame = Bytes::from(vec![7u8; 1 << 20]);
        let mut sent = 0;
        while queue.try_send(&mut vec![frame.clone(), Bytes::from_static(b"f")]) == Sent::Whole {
            sent += 1;
        }
        assert!(!queue.is_empty(), "the rest waits");
        assert_eq!(queue.try_send(&mut vec![Bytes::from_static(b"g")]), Sent::Nothing, "behind the rest");
        queue.push(&mut vec![Bytes::from_static(b"end")]).unwrap();
        let reading = tokio::spawn(async move {
            let mut all = Vec::new();
            let mut buf = vec![0u8; 1 << 16];
            while !all.ends_with(b"end") {
                let n = client.read(&mut buf).await.unwrap();
                assert!(n > 0);
                all.extend_from_slice(&buf[..n]);
            }
            all
        });
        out.flush().await.unwrap();
        let all = reading.await.unwrap();
        let mut expected = b"d".to_vec();
        for _ in 0..=sent {
            expected.extend_from_slice(&frame);
            expected.push(b'f');
        }
        expected.extend_from_slice(b"end");
        assert!(all == expected, "every frame whole and in order, the rest before what was queued after it ({} bytes, {} expected)", all.len(), expected.len());
    }

    /// Every connection has a send queue, idle or not.
    #[test]
    fn a_send_queue_in_its_arc_fits_80_bytes() {
        let size = std::mem::size_of::<Mutex<Queue>>() + 16;
        assert!(size <= 80, "a send queue in its Arc is {size} bytes");
    }

    /// A socket written through tokio's readiness, as the connection's is.
    struct SharedSocket(Arc<tokio::net::TcpStream>);

    impl AsyncWrite for SharedSocket {
        fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, data: &[u8]) -> Poll<io::Result<usize>> {
            loop {
                ready!(self.0.poll_write_ready(cx))?;
                match self.0.try_write(data) {
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                    written => return Poll::Ready(written),
                }
            }
        }

        fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
            Poll::Ready(Ok(()))
        }

        fn poll_shutdown(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
            Poll::Ready(Ok(()))
        }
    }

    #[tokio::test]
    async fn reads_pass_through() {
        let (client, server) = tokio::io::duplex(64);
        let mut layer = Sending::new(server, SendQueue::new());
        let mut client = client;
        client.write_all(b"hello").await.unwrap();
        let mut got = [0u8; 5];
        layer.read_exact(&mut got).await.unwrap();
        assert_eq!(&got, b"hello");
    }
}
