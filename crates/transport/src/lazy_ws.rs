//! tungstenite's side of a server WebSocket connection, made when it is
//! first needed: when the client has sent something and the reader reads
//! it, or when the writer sends a control frame of tungstenite's (the
//! close). Until then the connection holds neither tungstenite's read buffer
//! (1 KiB, `websocket::config`) nor its protocol state, and the writer's
//! frames, which it builds itself, go straight through the stack to the send
//! queue (`send_queue`). Most connections of a broadcast never send
//! anything, so most never make it.
//!
//! On plain TCP the reader's first poll waits for the client's first bytes
//! without reading them (`shared_tcp::Watch`); over TLS there is nothing to
//! watch, and the first poll makes tungstenite and reads. Pongs, the
//! answers to the server's pings, are read without it while they are all
//! the client sends: an idle connection that answers every ping stays as
//! small as one that was never pinged. Their payload is not read (the
//! server's pings are empty, and any pong says the client is there).
//!
//! Once made, a tungstenite that found nothing to read is asked again only
//! when the socket is readable: a connection's task is woken for its
//! writer too (`super::ws_task`), and each read attempt zeroes
//! tungstenite's read buffer.
//!
//! The reader and the writer share one [`LazyWs`] by reference, each through
//! its own end: [`Stream`] for the reader, [`Sink`] for the writer. Both run in
//! one task, so its lock is never contended.

use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use futures_util::{FutureExt, Sink, SinkExt, Stream, StreamExt};
use parking_lot::Mutex;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio_tungstenite::WebSocketStream;
use tokio_tungstenite::tungstenite::protocol::Role;
use tokio_tungstenite::tungstenite::{Error as WsError, Message};

use crate::shared_tcp::Watch;
use crate::websocket::config;

/// One connection's tungstenite, made on first use; see the module docs.
pub struct LazyWs<S> {
    state: Mutex<State<S>>,
}

struct State<S> {
    stack: Stack<S>,
    /// What to watch for the client's bytes: the first, and any after
    /// tungstenite found nothing to read.
    watch: Option<Watch>,
    /// tungstenite's last read found nothing: its buffer holds no whole
    /// frame and the socket had nothing more.
    drained: bool,
    /// The largest message (and frame) tungstenite will take.
    /// (Saturated at 4 GiB: every connection keeps it, in 4 bytes.)
    max_message_size: u32,
}

enum Stack<S> {
    /// The stack tungstenite will be made over, until it is.
    Waiting(S),
    Made(Box<WebSocketStream<S>>),
    /// Making it failed (which it cannot: a stream with no handshake is
    /// ready at once).
    Failed,
}

impl<S: AsyncRead + AsyncWrite + Unpin> LazyWs<S> {
    /// A server connection over `io` (the stack under tungstenite) taking
    /// messages of at most `max_message_size` bytes; `watch`, if any, tells
    /// when the client has sent something.
    pub fn new(io: S, watch: Option<Watch>, max_message_size: usize) -> LazyWs<S> {
        let max_message_size = u32::try_from(max_message_size).unwrap_or(u32::MAX);
        LazyWs { state: Mutex::new(State { stack: Stack::Waiting(io), watch, drained: false, max_message_size }) }
    }

    /// Reads and drops what the client still sends after tungstenite gave
    /// up on its frames (a protocol error): `Ready(true)` once the client's
    /// side has ended or failed, `Ready(false)` after some bytes. A socket
    /// closed with bytes unread is reset, and a reset can cost the client
    /// the close frame it has not read yet.
    pub fn poll_discard(&self, cx: &mut Context<'_>) -> Poll<bool> {
        let mut state = self.state.lock();
        let Some(ws) = state.made() else { return Poll::Ready(true) };
        let mut buf = [0u8; 512];
        let mut read = ReadBuf::new(&mut buf);
        match Pin::new(ws.get_mut()).poll_read(cx, &mut read) {
            Poll::Ready(Ok(())) => Poll::Ready(read.filled().is_empty()),
            Poll::Ready(Err(_)) => Poll::Ready(true),
            Poll::Pending => Poll::Pending,
        }
    }

    /// Ends our side of the stream under tungstenite (a FIN on TCP), once
    /// the close frame is written and the client's is not going to be read.
    pub fn poll_shutdown_write(&self, cx: &mut Context<'_>) -> Poll<()> {
        let mut state = self.state.lock();
        let Some(ws) = state.made() else { return Poll::Ready(()) };
        Pin::new(ws.get_mut()).poll_shutdown(cx).map(|_| ())
    }

    /// Whether tungstenite has been made.
    #[cfg(test)]
    fn is_made(&self) -> bool {
        matches!(self.state.lock().stack, Stack::Made(_))
    }
}

impl<S: AsyncRead + AsyncWrite + Unpin> State<S> {
    /// tungstenite, made now if it was not yet. `None` only if making it
    /// failed.
    fn made(&mut self) -> Option<&mut WebSocketStream<S>> {
        if matches!(self.stack, Stack::Waiting(_))
            && let Stack::Waiting(io) = std::mem::replace(&mut self.stack, Stack::Failed)
        {
            // tungstenite hands each of its frames to the send queue as it
            // makes it (no buffer of its own), so its frames and the
            // writer's keep their order.
            let config = config(self.max_message_size as usize).write_buffer_size(0);
            let made = WebSocketStream::from_raw_socket(io, Role::Server, Some(config)).now_or_never();
            self.stack = made.map_or(Stack::Failed, |ws| Stack::Made(Box::new(ws)));
        }
        match &mut self.stack {
            Stack::Made(ws) => Some(ws),
            _ => None,
        }
    }

    fn with_made<T>(&mut self, f: impl FnOnce(&mut WebSocketStream<S>) -> Result<T, WsError>) -> Result<T, WsError> {
        self.made().map_or(Err(WsError::AlreadyClosed), f)
    }
}

/// The reader's end: tungstenite's messages, made once the client has sent something.
impl<S: AsyncRead + AsyncWrite + Unpin> Stream for &LazyWs<S> {
    type Item = Result<Message, WsError>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let mut state = self.state.lock();
        if let Some(watch) = &state.watch {
            if !matches!(state.stack, Stack::Made(_)) {
                std::task::ready!(watch.poll_readable(cx));
                // An answer to the server's ping: no need for tungstenite yet.
                match std::task::ready!(watch.poll_take_pong(cx)) {
                    Ok(true) => return Poll::Ready(Some(Ok(Message::Pong(Bytes::new())))),
                    Ok(false) => {}
                    Err(e) => return Poll::Ready(Some(Err(WsError::Io(e)))),
                }
            } else if state.drained {
                std::task::ready!(watch.poll_ready(cx));
            }
        }
        let next = match state.made() {
            Some(ws) => ws.poll_next_unpin(cx),
            None => Poll::Ready(None),
        };
        // A read that found nothing left tokio's readiness cleared, so the
        // watch waits for new bytes.
        state.drained = next.is_pending();
        next
    }
}

/// The writer's end, for tungstenite's own frames: sending one makes it.
/// A flush before then writes the stack's queue as it is.
impl<S: AsyncRead + AsyncWrite + Unpin> Sink<Message> for &LazyWs<S> {
    type Error = WsError;

    fn poll_ready(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<(), WsError>> {
        let mut state = self.state.lock();
        match state.made() {
            Some(ws) => ws.poll_ready_unpin(cx),
            None => Poll::Ready(Err(WsError::AlreadyClosed)),
        }
    }

    fn start_send(self: Pin<&mut Self>, message: Message) -> Result<(), WsError> {
        self.state.lock().with_made(|ws| ws.start_send_unpin(message))
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<(), WsError>> {
        let mut state = self.state.lock();
        match &mut state.stack {
            Stack::Made(ws) => ws.poll_flush_unpin(cx),
            Stack::Waiting(io) => Pin::new(io).poll_flush(cx).map_err(WsError::Io),
            Stack::Failed => Poll::Ready(Err(WsError::AlreadyClosed)),
        }
    }

    fn poll_close(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<(), WsError>> {
        let mut state = self.state.lock();
        match state.made() {
            Some(ws) => ws.poll_close_unpin(cx),
            None => Poll::Ready(Err(WsError::AlreadyClosed)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::client_frame;
    use crate::send_queue::{SendQueue, Sending};
    use crate::shared_tcp::SharedTcp;
    use bytes::Bytes;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use tokio::io::{AsyncReadExt, AsyncWriteExt, DuplexStream, ReadBuf, duplex};
    use tokio::net::{TcpListener, TcpStream};
    use tokio_tungstenite::tungstenite::protocol::CloseFrame;

    fn connection() -> (LazyWs<Sending<DuplexStream>>, SendQueue, DuplexStream) {
        let (server, client) = duplex(1024);
        let queue = SendQueue::new();
        (LazyWs::new(Sending::new(server, queue.clone()), None, 1 << 20), queue, client)
    }

    #[tokio::test]
    async fn a_flush_before_it_is_made_writes_the_send_queue() {
        let (ws, queue, mut client) = connection();
        queue.push(&mut vec![Bytes::from_static(b"\x81\x02hi")]).unwrap();
        (&ws).flush().await.unwrap();
        assert!(!ws.is_made(), "a flush makes nothing");
        let mut got = [0u8; 4];
        client.read_exact(&mut got).await.unwrap();
        assert_eq!(&got, b"\x81\x02hi");
    }

    #[tokio::test]
    async fn the_first_read_makes_it() {
        let (ws, _queue, mut client) = connection();
        client.write_all(&client_frame(true, false, 0x1, b"hey", [1, 2, 3, 4])).await.unwrap();
        assert!(!ws.is_made());
        let message = (&ws).next().await.expect("a message").expect("no error");
        assert_eq!(message, Message::text("hey"));
        assert!(ws.is_made());
    }

    /// An AsyncRead that counts the reads asked of it.
    struct Counting<S> {
        inner: S,
        reads: Arc<AtomicUsize>,
    }

    impl<S: AsyncRead + Unpin> AsyncRead for Counting<S> {
        fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<std::io::Result<()>> {
            self.reads.fetch_add(1, Ordering::Relaxed);
            Pin::new(&mut self.inner).poll_read(cx, buf)
        }
    }

    crate::write_through!(Counting);

    #[tokio::test]
    async fn once_it_found_nothing_it_reads_again_only_when_bytes_come() {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let mut client = TcpStream::connect(listener.local_addr().unwrap()).await.unwrap();
        let tcp = SharedTcp::new(listener.accept().await.unwrap().0, Bytes::new());
        let watch = tcp.watch();
        let reads = Arc::new(AtomicUsize::new(0));
        let io = Sending::new(Counting { inner: tcp, reads: reads.clone() }, SendQueue::new());
        let ws = LazyWs::new(io, watch, 1 << 20);
        client.write_all(&client_frame(true, false, 0x1, b"one", [1, 2, 3, 4])).await.unwrap();
        assert_eq!((&ws).next().await.unwrap().unwrap(), Message::text("one"));
        // tungstenite reads on and finds nothing more.
        let waker = futures_util::task::noop_waker();
        let mut cx = Context::from_waker(&waker);
        assert!(Pin::new(&mut &ws).poll_next(&mut cx).is_pending());
        let before = reads.load(Ordering::Relaxed);
        // Wakes for the writer's sake poll the reader too: they read nothing.
        for _ in 0..10 {
            assert!(Pin::new(&mut &ws).poll_next(&mut cx).is_pending());
        }
        assert_eq!(reads.load(Ordering::Relaxed), before, "no read without new bytes");
        client.write_all(&client_frame(true, false, 0x1, b"two", [5, 6, 7, 8])).await.unwrap();
        assert_eq!((&ws).next().await.unwrap().unwrap(), Message::text("two"));
        assert!(reads.load(Ordering::Relaxed) > before);
    }

    /// Over loopback TCP: the client's end, and a `LazyWs` over the
    /// server's, watching it.
    async fn watched() -> (LazyWs<Sending<SharedTcp>>, TcpStream) {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let client = TcpStream::connect(listener.local_addr().unwrap()).await.unwrap();
        let tcp = SharedTcp::new(listener.accept().await.unwrap().0, Bytes::new());
        let watch = tcp.watch();
        (LazyWs::new(Sending::new(tcp, SendQueue::new()), watch, 1 << 20), client)
    }

    #[tokio::test]
    async fn pongs_alone_are_read_without_making_it() {
        let (ws, mut client) = watched().await;
        for key in [[1, 2, 3, 4], [5, 6, 7, 8]] {
            client.write_all(&client_frame(true, false, 0xA, b"", key)).await.unwrap();
            assert!(matches!((&ws).next().await, Some(Ok(Message::Pong(_)))));
        }
        client.write_all(&client_frame(true, false, 0xA, &[7; 125], [1, 2, 3, 4])).await.unwrap();
        assert!(matches!((&ws).next().await, Some(Ok(Message::Pong(_)))));
        assert!(!ws.is_made(), "three pongs, no tungstenite");
        let waker = futures_util::task::noop_waker();
        assert!(Pin::new(&mut &ws).poll_next(&mut Context::from_waker(&waker)).is_pending(), "nothing more");

        // A message after a pong in one write: the pong, then the message
        // from the frame's first byte.
        let mut both = client_frame(true, false, 0xA, b"", [1, 2, 3, 4]);
        both.extend(client_frame(true, false, 0x1, b"hey", [9, 9, 9, 9]));
        client.write_all(&both).await.unwrap();
        assert!(matches!((&ws).next().await, Some(Ok(Message::Pong(_)))));
        assert_eq!((&ws).next().await.unwrap().unwrap(), Message::text("hey"));
        assert!(ws.is_made());
    }

    #[tokio::test]
    async fn a_pong_in_pieces_or_a_ping_is_tungstenites() {
        let (ws, mut client) = watched().await;
        let pong = client_frame(true, false, 0xA, b"ab", [1, 2, 3, 4]);
        client.write_all(&pong[..3]).await.unwrap();
        let waker = futures_util::task::noop_waker();
        assert!(Pin::new(&mut &ws).poll_next(&mut Context::from_waker(&waker)).is_pending());
        assert!(ws.is_made(), "part of a pong: tungstenite reads it");
        client.write_all(&pong[3..]).await.unwrap();
        assert_eq!((&ws).next().await.unwrap().unwrap(), Message::Pong(Bytes::from_static(b"ab")));

        let (ws, mut client) = watched().await;
        client.write_all(&client_frame(true, false, 0x9, b"hi", [1, 2, 3, 4])).await.unwrap();
        assert_eq!((&ws).next().await.unwrap().unwrap(), Message::Ping(Bytes::from_static(b"hi")));
        assert!(ws.is_made(), "tungstenite answers a ping");
    }

    #[tokio::test]
    async fn sending_a_close_makes_it_and_writes_the_frame_after_the_queued_ones() {
        let (ws, queue, mut client) = connection();
        queue.push(&mut vec![Bytes::from_static(b"\x81\x02hi")]).unwrap();
        let close = CloseFrame { code: 1001.into(), reason: "bye".into() };
        (&ws).send(Message::Close(Some(close))).await.unwrap();
        assert!(ws.is_made());
        let mut got = [0u8; 11];
        client.read_exact(&mut got).await.unwrap();
        assert_eq!(&got, b"\x81\x02hi\x88\x05\x03\xe9bye", "the text frame, then an unmasked close: 1001, \"bye\"");
        assert_eq!(queue.push(&mut vec![Bytes::from_static(b"\x81\x00")]), Err(crate::send_queue::Refused::Closed));
    }
}
