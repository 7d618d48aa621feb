//! XMPP over TCP: one XML stream each way on the socket, which STARTTLS
//! (RFC 6120 §5) can turn into TLS.

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, ready};

use tokio::io::{AsyncRead, AsyncWriteExt, ReadBuf};
use tokio::net::TcpStream;
use tokio::sync::OwnedSemaphorePermit;
use base::tls::EarlyTlsStream;
use wire::xmpp::StreamParser;

use super::Xmpp;
use super::session::Framing;
use super::stream::{Carrier, Ending, StreamTask, Unread};

/// Serves one client connection from `address` until either side ends the
/// stream, holding its `slot`; with `direct_tls` the connection starts with
/// a TLS handshake (XEP-0368). Not an `async fn`, which keeps its arguments
/// twice in its future (as passed, and as moved into its body): an idle
/// stream's task is what an idle client costs.
pub fn run(mut tcp: TcpStream, address: std::net::IpAddr, xmpp: Arc<Xmpp>, slot: OwnedSemaphorePermit, direct_tls: bool) -> impl Future<Output = ()> + Send + 'static {
    let mut task = StreamTask::new(xmpp, Framing::Stream, "tcp", address);
    async move {
        let first = if direct_tls { Ending::StartTls } else { task.drive(&mut tcp).await };
        // What follows is made by a function, which takes `first`: held
        // across an await here, it took room in every idle stream's task
        // beside the drive.
        then(task, tcp, first, slot).await;
    }
}

/// The rest of a stream after its first carrier: TLS, or the end. Boxed:
/// a TLS stream's state is large and most streams never have one, and an
/// end runs once. The slot is held to the end.
fn then(task: StreamTask, mut tcp: TcpStream, first: Ending, slot: OwnedSemaphorePermit) -> std::pin::Pin<Box<dyn Future<Output = ()> + Send>> {
    Box::pin(async move {
        match first {
            Ending::StartTls => over_tls(task, tcp).await,
            ending => task.end(&mut tcp, ending).await,
        }
        drop(slot);
    })
}

/// Goes on over TLS, after `<proceed/>` or from the first byte.
async fn over_tls(mut task: StreamTask, mut tcp: TcpStream) {
    let (tls, handshake_timeout) = task.tls();
    let Some(acceptor) = tls else { return Box::pin(task.end(&mut tcp, Ending::Done(None))).await };
    let handshake = tokio::time::timeout(handshake_timeout, acceptor.accept(tcp)).await;
    let Ok(Ok(mut stream)) = handshake else {
        // Nothing more can be said on a failed handshake.
        task.session.leave_all().await;
        return;
    };
    task.session.encrypted = true;
    task.session.zero_rtt = true;
    // STARTTLS is refused once encrypted: the stream cannot turn twice.
    let ending = task.drive(&mut stream).await;
    Box::pin(task.end(&mut stream, ending)).await;
}

/// Bytes read from a client at a time; a bigger stanza takes several reads.
const READ_CHUNK: usize = 4 * 1024;

/// Plain TCP.
impl Carrier for TcpStream {
    /// Reads only once the socket is readable, into a buffer on the stack.
    fn poll_read_into(&mut self, cx: &mut Context<'_>, parser: &mut StreamParser) -> Poll<Result<usize, Unread>> {
        loop {
            if ready!(self.poll_read_ready(cx)).is_err() {
                return Poll::Ready(Err(Unread::Gone));
            }
            let mut chunk = [0u8; READ_CHUNK];
            match self.try_read(&mut chunk) {
                Ok(0) => return Poll::Ready(Err(Unread::Gone)),
                Ok(n) => {
                    parser.feed(&chunk[..n]);
                    return Poll::Ready(Ok(n));
                }
                // Not readable after all: the readiness is cleared, and the
                // next poll waits for it again.
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
                Err(_) => return Poll::Ready(Err(Unread::Gone)),
            }
        }
    }

    async fn send(&mut self, texts: &[String]) -> std::io::Result<()> {
        write_joined(self, texts).await
    }

    async fn close(&mut self, last_words: &[String]) {
        let _ = write_joined(self, last_words).await;
        let _ = self.shutdown().await;
    }
}

/// TLS over TCP; a resumed session's early data is read first.
impl Carrier for EarlyTlsStream<TcpStream> {
    /// TLS decrypts into a buffer on the stack, while the poll lasts: an
    /// idle stream holds none.
    fn poll_read_into(&mut self, cx: &mut Context<'_>, parser: &mut StreamParser) -> Poll<Result<usize, Unread>> {
        let mut chunk = [0u8; READ_CHUNK];
        let mut buf = ReadBuf::new(&mut chunk);
        match ready!(Pin::new(self).poll_read(cx, &mut buf)) {
            Ok(()) if !buf.filled().is_empty() => {
                parser.feed(buf.filled());
                Poll::Ready(Ok(buf.filled().len()))
            }
            Ok(()) | Err(_) => Poll::Ready(Err(Unread::Gone)),
        }
    }

    async fn send(&mut self, texts: &[String]) -> std::io::Result<()> {
        write_joined(self, texts).await
    }

    async fn close(&mut self, last_words: &[String]) {
        let _ = write_joined(self, last_words).await;
        let _ = self.shutdown().await;
    }

    fn read_early_data(&self) -> bool {
        EarlyTlsStream::read_early_data(self)
    }
}

/// Writes `texts` as one piece: on a byte stream they are one stream.
async fn write_joined<S: tokio::io::AsyncWrite + Unpin>(socket: &mut S, texts: &[String]) -> std::io::Result<()> {
    match texts {
        [] => Ok(()),
        [one] => socket.write_all(one.as_bytes()).await,
        many => socket.write_all(many.concat().as_bytes()).await,
    }
}

/// The size of one client stream's future over plain TCP, as spawned. An
/// idle session's memory is mostly its task, so the server's tests hold it
/// under a bound with the real service.
#[doc(hidden)]
pub async fn stream_future_size(xmpp: Arc<Xmpp>) -> usize {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("a loopback listener");
    let _client = TcpStream::connect(listener.local_addr().expect("its address")).await.expect("a loopback connection");
    let (tcp, peer) = listener.accept().await.expect("the connection");
    let slot = xmpp.slots.clone().try_acquire_owned().expect("a free slot");
    std::mem::size_of_val(&run(tcp, peer.ip(), xmpp, slot, false))
}
