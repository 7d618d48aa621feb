//! A plain TCP stream shared between a WebSocket connection's stack and its
//! reader, so the reader can wait for the client's first bytes before it
//! asks tungstenite to read.
//!
//! tungstenite is made on its first read (`super::lazy_ws`), with its read
//! buffer (1 KiB, [`super::websocket::config`]), which it zeroes before
//! every read attempt. Most connections of a broadcast never send anything:
//! waiting for readability first ([`Watch::poll_readable`]) means they never make
//! it. After that the stream reads and writes like the `TcpStream` it is,
//! starting with any bytes read past the handshake.

use std::io::{self, IoSlice};
use std::mem::MaybeUninit;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, ready};

use bytes::Bytes;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::io::Interest;
use tokio::net::TcpStream;
use wire::websocket::frame_header;

/// The connection's end of the stream; see the module docs.
#[derive(Debug)]
pub struct SharedTcp {
    stream: Arc<TcpStream>,
    /// Bytes read ahead (with the handshake), read before the stream's.
    /// (Boxed: most connections have none, and every one keeps this.)
    pre: Option<Box<Bytes>>,
}

/// A handle that watches the stream for readability.
#[derive(Debug, Clone)]
pub struct Watch(Arc<TcpStream>);

impl SharedTcp {
    /// The stream, with `pre` the bytes already read from it past the handshake.
    pub fn new(stream: TcpStream, pre: Bytes) -> SharedTcp {
        // An empty slice of hyper's read buffer would keep all of it.
        let pre = (!pre.is_empty()).then(|| Box::new(pre));
        SharedTcp { stream: Arc::new(stream), pre }
    }

    /// The socket, for writes made beside this stream's (`super::send_queue`).
    pub fn socket(&self) -> Arc<TcpStream> {
        self.stream.clone()
    }

    /// A watch on the stream, unless bytes were read ahead: then there is
    /// something to read already.
    pub fn watch(&self) -> Option<Watch> {
        self.pre.is_none().then(|| Watch(self.stream.clone()))
    }
}

impl Watch {
    /// Ready once the stream may have something to read: tokio's readiness,
    /// which a read that would block clears. Reads nothing, and makes no
    /// system call.
    pub fn poll_ready(&self, cx: &mut Context<'_>) -> Poll<()> {
        self.0.poll_read_ready(cx).map(|_| ())
    }

    /// Ready once the client has sent something (or the stream has ended);
    /// reads nothing.
    pub fn poll_readable(&self, cx: &mut Context<'_>) -> Poll<()> {
        loop {
            // Waiting in the stream's one reader slot rather than its list of
            // waiters also drops the waker that the HTTP task left there,
            // and with it the finished task's memory. An error is met again
            // by the read that follows.
            if ready!(self.0.poll_read_ready(cx)).is_err() {
                return Poll::Ready(());
            }
            // The readiness may be left over from the handshake, which hyper
            // read without draining the socket: a peek tells, and clears it
            // (so the next poll waits) if there is nothing.
            let mut byte = [MaybeUninit::uninit()];
            match self.0.try_io(Interest::READABLE, || socket2::SockRef::from(&*self.0).peek(&mut byte)) {
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                _ => return Poll::Ready(()),
            }
        }
    }

    /// Reads the client's pong, if what it has sent starts with a whole
    /// one ([`frame_header::client_pong`]): `Ready(Ok(true))`. Reads
    /// nothing and is `Ready(Ok(false))` if it starts with anything else
    /// (or the stream has ended), and pending while there is nothing. An
    /// idle connection answers the server's pings this way without making
    /// tungstenite and its read buffer (`super::lazy_ws`); only at a
    /// frame's start, before anything else has read from the stream.
    pub fn poll_take_pong(&self, cx: &mut Context<'_>) -> Poll<io::Result<bool>> {
        let mut bytes = [0u8; frame_header::MAX_CLIENT_CONTROL];
        let mut peeked = ReadBuf::new(&mut bytes);
        ready!(self.0.poll_peek(cx, &mut peeked))?;
        let Some(len) = frame_header::client_pong(peeked.filled()) else { return Poll::Ready(Ok(false)) };
        // The bytes just peeked are still there and this is the stream's
        // only reader: all of them are read.
        Poll::Ready(match self.0.try_read(&mut bytes[..len]) {
            Ok(read) if read == len => Ok(true),
            Ok(_) => Err(io::Error::new(io::ErrorKind::UnexpectedEof, "a pong read in part")),
            Err(e) => Err(e),
        })
    }
}

impl AsyncRead for SharedTcp {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        if let Some(pre) = &mut self.pre {
            let n = pre.len().min(buf.remaining());
            buf.put_slice(&pre.split_to(n));
            if pre.is_empty() {
                self.pre = None;
            }
            return Poll::Ready(Ok(()));
        }
        loop {
            ready!(self.stream.poll_read_ready(cx))?;
            // A spurious readiness is cleared by the WouldBlock, and the loop
            // waits again.
            match self.stream.try_read(buf.initialize_unfilled()) {
                Ok(n) => {
                    buf.advance(n);
                    return Poll::Ready(Ok(()));
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                Err(e) => return Poll::Ready(Err(e)),
            }
        }
    }
}

impl AsyncWrite for SharedTcp {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, data: &[u8]) -> Poll<io::Result<usize>> {
        loop {
            ready!(self.stream.poll_write_ready(cx))?;
            match self.stream.try_write(data) {
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                written => return Poll::Ready(written),
            }
        }
    }

    fn poll_write_vectored(self: Pin<&mut Self>, cx: &mut Context<'_>, bufs: &[IoSlice<'_>]) -> Poll<io::Result<usize>> {
        loop {
            ready!(self.stream.poll_write_ready(cx))?;
            match self.stream.try_write_vectored(bufs) {
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                written => return Poll::Ready(written),
            }
        }
    }

    fn is_write_vectored(&self) -> bool {
        true
    }

    fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(socket2::SockRef::from(&*self.stream).shutdown(std::net::Shutdown::Write))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::TcpListener;

    #[tokio::test]
    async fn it_waits_for_the_first_bytes_then_reads_and_writes_like_a_tcp_stream() {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let mut client = TcpStream::connect(listener.local_addr().unwrap()).await.unwrap();
        let mut server = SharedTcp::new(listener.accept().await.unwrap().0, Bytes::new());
        let watch = server.watch().expect("nothing read ahead");
        let mut waiting = std::pin::pin!(std::future::poll_fn(|cx| watch.poll_readable(cx)));
        assert!(futures_util::poll!(&mut waiting).is_pending(), "nothing sent yet");
        client.write_all(b"hi").await.unwrap();
        waiting.await;
        let mut got = [0u8; 2];
        server.read_exact(&mut got).await.unwrap();
        assert_eq!(&got, b"hi");
        let n = server.write_vectored(&[IoSlice::new(b"a"), IoSlice::new(b"bc")]).await.unwrap();
        assert_eq!(n, 3);
        server.shutdown().await.unwrap();
        let mut back = Vec::new();
        client.read_to_end(&mut back).await.unwrap();
        assert_eq!(back, b"abc", "written, then the write side shut");
    }

    #[tokio::test]
    async fn bytes_read_ahead_come_first_and_leave_nothing_to_watch() {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let mut client = TcpStream::connect(listener.local_addr().unwrap()).await.unwrap();
        let mut server = SharedTcp::new(listener.accept().await.unwrap().0, Bytes::from_static(b"ahead "));
        assert!(server.watch().is_none());
        client.write_all(b"then").await.unwrap();
        drop(client);
        let mut got = Vec::new();
        server.read_to_end(&mut got).await.unwrap();
        assert_eq!(got, b"ahead then");
    }
}
