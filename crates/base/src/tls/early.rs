//! A server's TLS stream that reads TLS 1.3 early data (0-RTT): a client
//! resuming a session sends its first bytes with its ClientHello, and they
//! are read, and answered, before the client's Finished arrives. Over a link
//! with a second of delay each way that is a second saved per connection.
//!
//! Hand-written over rustls, not tokio-rustls: tokio-rustls takes no early
//! data on a server (its handshake future ends at the client's Finished, and
//! what came before it is never read). This is the same loop as its stream:
//! TLS records in from the socket, plaintext out to the reader, and back.
//!
//! Early data can be replayed by whoever saw it. It is taken only on a
//! session resumed from the server's own cache of sessions (rustls's rule),
//! whose tickets are good for one connection each: the same flight sent
//! again resumes nothing, and its early data is skipped unread.

use std::io::{self, Read, Write};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, ready};

use rustls::{ServerConfig, ServerConnection};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// The most early data a client may send before its handshake ends: it is
/// held until read. A client's first flight (a stream's header, a login and
/// a few stanzas) takes a few hundred bytes.
pub const EARLY_DATA_LIMIT: u32 = 16 * 1024;

/// TLS sessions kept to be resumed, each once: past it the oldest go, and
/// their clients' next connections take a full handshake. About 200 bytes
/// each.
pub const SESSIONS_KEPT: usize = 10_000;

/// Accepts TLS connections whose resumed sessions may carry early data.
#[derive(Clone)]
pub struct EarlyAcceptor {
    config: Arc<ServerConfig>,
}

impl EarlyAcceptor {
    /// An acceptor with `config`, set to take up to [`EARLY_DATA_LIMIT`]
    /// bytes of early data and to answer it before the handshake ends, its
    /// sessions kept in memory ([`SESSIONS_KEPT`]).
    pub fn new(mut config: ServerConfig) -> EarlyAcceptor {
        config.max_early_data_size = EARLY_DATA_LIMIT;
        config.send_half_rtt_data = true;
        // Each connection takes one ticket for its next, and each ticket
        // serves once: a second would be bytes on the link for nothing.
        config.send_tls13_tickets = 1;
        config.session_storage = rustls::server::ServerSessionMemoryCache::new(SESSIONS_KEPT);
        EarlyAcceptor { config: Arc::new(config) }
    }

    /// Runs the handshake on `io` until the connection can be read: to its
    /// end, or, when the client's early data was taken, up to the server's
    /// Finished, which is sent with the first write (or once the early data
    /// is read and nothing was written), the rest going on as the stream is
    /// read.
    pub async fn accept<IO: AsyncRead + AsyncWrite + Unpin>(&self, io: IO) -> io::Result<EarlyTlsStream<IO>> {
        let conn = ServerConnection::new(self.config.clone()).map_err(io::Error::other)?;
        let mut stream = EarlyTlsStream { io, conn, shut: false, last_read_early: false, holding: false };
        std::future::poll_fn(|cx| stream.poll_handshake(cx)).await?;
        Ok(stream)
    }
}

/// TLS over `IO`, the client's early data read first.
pub struct EarlyTlsStream<IO> {
    io: IO,
    conn: ServerConnection,
    /// Whether the server's close_notify is queued.
    shut: bool,
    /// Whether the last read's bytes were early data.
    last_read_early: bool,
    /// Whether the server's handshake flight is held back to go with the
    /// answer to the client's early data: one packet on the link, not two.
    holding: bool,
}

impl<IO> EarlyTlsStream<IO> {
    /// Whether the client's early data was taken.
    pub fn took_early_data(&mut self) -> bool {
        self.conn.early_data().is_some()
    }

    /// Whether the bytes the last read gave came in the client's early
    /// data, which whoever saw it may send again on another connection.
    /// Early data comes before everything else, so a message that ends in
    /// bytes read while this is true came whole in it.
    pub fn read_early_data(&self) -> bool {
        self.last_read_early
    }
}

impl<IO: AsyncRead + AsyncWrite + Unpin> EarlyTlsStream<IO> {
    fn poll_handshake(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        loop {
            if self.took_early_data() {
                // The flight waits in TLS's buffer for the first write, or
                // for the reader to run out of early data (see `poll_read`).
                self.holding = true;
                return Poll::Ready(Ok(()));
            }
            ready!(self.poll_send(cx))?;
            if !self.conn.is_handshaking() {
                return Poll::Ready(Ok(()));
            }
            if ready!(self.poll_receive(cx))? == 0 {
                return Poll::Ready(Err(io::ErrorKind::UnexpectedEof.into()));
            }
        }
    }

    /// Writes what TLS has to send, until it is all on the socket; a held
    /// handshake flight goes with it.
    fn poll_send(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.holding = false;
        while self.conn.wants_write() {
            match self.conn.write_tls(&mut Sync { io: &mut self.io, cx }) {
                Ok(0) => return Poll::Ready(Err(io::ErrorKind::WriteZero.into())),
                Ok(_) => {}
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Poll::Pending,
                Err(e) => return Poll::Ready(Err(e)),
            }
        }
        Poll::Ready(Ok(()))
    }

    /// Reads TLS records from the socket and opens them: the bytes read, 0
    /// at the socket's end. A record that does not open ends the stream,
    /// with the alert saying why sent if the socket takes it.
    fn poll_receive(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<usize>> {
        let n = match self.conn.read_tls(&mut Sync { io: &mut self.io, cx }) {
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Poll::Pending,
            Err(e) => return Poll::Ready(Err(e)),
        };
        if let Err(e) = self.conn.process_new_packets() {
            let _ = self.poll_send(cx);
            return Poll::Ready(Err(io::Error::new(io::ErrorKind::InvalidData, e)));
        }
        Poll::Ready(Ok(n))
    }
}

impl<IO: AsyncRead + AsyncWrite + Unpin> AsyncRead for EarlyTlsStream<IO> {
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        if buf.remaining() == 0 {
            return Poll::Ready(Ok(()));
        }
        loop {
            // Early data came first, so it is read first.
            if let Some(mut early) = this.conn.early_data() {
                let n = early.read(buf.initialize_unfilled())?;
                if n > 0 {
                    this.last_read_early = true;
                    buf.advance(n);
                    return Poll::Ready(Ok(()));
                }
            }
            match this.conn.reader().read(buf.initialize_unfilled()) {
                // 0: the client's close_notify.
                Ok(n) => {
                    this.last_read_early = false;
                    buf.advance(n);
                    return Poll::Ready(Ok(()));
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                Err(e) => return Poll::Ready(Err(e)),
            }
            // The early data is all read and the handshake flight still
            // held: the answer to it may be about to be written, by this
            // task once it has seen this read wait. Wait once; the flight
            // goes on the next read if no write took it meanwhile, since the
            // client can send nothing more before it has it.
            if std::mem::take(&mut this.holding) && this.conn.wants_write() {
                cx.waker().wake_by_ref();
                return Poll::Pending;
            }
            // Handshake messages (the session's ticket once the client's
            // Finished is in) go out as soon as they are made; a socket
            // that cannot take them now is tried again on the next write.
            if let Poll::Ready(Err(e)) = this.poll_send(cx) {
                return Poll::Ready(Err(e));
            }
            // At the socket's end the reader says whether the close was clean.
            ready!(this.poll_receive(cx))?;
        }
    }
}

impl<IO: AsyncRead + AsyncWrite + Unpin> AsyncWrite for EarlyTlsStream<IO> {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, data: &[u8]) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let mut n = this.conn.writer().write(data)?;
        if n == 0 && !data.is_empty() {
            // TLS's buffer is full: wait for the socket to take some.
            ready!(this.poll_send(cx))?;
            n = this.conn.writer().write(data)?;
        }
        // What the socket does not take now waits in TLS's buffer, which is
        // bounded, and goes with the next write or flush.
        if let Poll::Ready(Err(e)) = this.poll_send(cx) {
            return Poll::Ready(Err(e));
        }
        Poll::Ready(Ok(n))
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        ready!(this.poll_send(cx))?;
        Pin::new(&mut this.io).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        if !this.shut {
            this.conn.send_close_notify();
            this.shut = true;
        }
        ready!(this.poll_send(cx))?;
        Pin::new(&mut this.io).poll_shutdown(cx)
    }
}

/// The socket as rustls reads and writes it: blocking calls that say
/// `WouldBlock` where the socket is not ready, its waker registered.
struct Sync<'a, 'b, IO> {
    io: &'a mut IO,
    cx: &'a mut Context<'b>,
}

impl<IO: AsyncRead + Unpin> Read for Sync<'_, '_, IO> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let mut buf = ReadBuf::new(buf);
        match Pin::new(&mut *self.io).poll_read(self.cx, &mut buf) {
            Poll::Ready(Ok(())) => Ok(buf.filled().len()),
            Poll::Ready(Err(e)) => Err(e),
            Poll::Pending => Err(io::ErrorKind::WouldBlock.into()),
        }
    }
}

impl<IO: AsyncWrite + Unpin> Write for Sync<'_, '_, IO> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match Pin::new(&mut *self.io).poll_write(self.cx, buf) {
            Poll::Ready(result) => result,
            Poll::Pending => Err(io::ErrorKind::WouldBlock.into()),
        }
    }

    fn write_vectored(&mut self, bufs: &[io::IoSlice<'_>]) -> io::Result<usize> {
        match Pin::new(&mut *self.io).poll_write_vectored(self.cx, bufs) {
            Poll::Ready(result) => result,
            Poll::Pending => Err(io::ErrorKind::WouldBlock.into()),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        match Pin::new(&mut *self.io).poll_flush(self.cx) {
            Poll::Ready(result) => result,
            Poll::Pending => Err(io::ErrorKind::WouldBlock.into()),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use rustls_pki_types::{CertificateDer, PrivateKeyDer, ServerName};
    use tokio::io::{AsyncReadExt, AsyncWriteExt, DuplexStream};
    use tokio_rustls::TlsConnector;

    use super::*;

    fn pair() -> (EarlyAcceptor, TlsConnector) {
        let cert = rcgen::generate_simple_self_signed(vec!["localhost".to_owned()]).unwrap();
        let key = PrivateKeyDer::Pkcs8(cert.signing_key.serialize_der().into());
        let config = ServerConfig::builder_with_provider(crate::tls::provider())
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_no_client_auth()
            .with_single_cert(vec![cert.cert.der().clone()], key)
            .unwrap();
        let mut roots = rustls::RootCertStore::empty();
        roots.add(CertificateDer::from(cert.cert.der().to_vec())).unwrap();
        let mut client = rustls::ClientConfig::builder_with_provider(crate::tls::provider())
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_root_certificates(roots)
            .with_no_client_auth();
        client.enable_early_data = true;
        (EarlyAcceptor::new(config), TlsConnector::from(Arc::new(client)).early_data(true))
    }

    fn name() -> ServerName<'static> {
        ServerName::try_from("localhost").unwrap()
    }

    /// One side of a socket, keeping a copy of every byte written and the
    /// size of each write (a vectored one is one write, as `writev` is).
    struct Recorded {
        io: DuplexStream,
        sent: Arc<Mutex<Vec<u8>>>,
        writes: Arc<Mutex<Vec<usize>>>,
    }

    impl Recorded {
        fn new(io: DuplexStream) -> Recorded {
            Recorded { io, sent: Arc::default(), writes: Arc::default() }
        }
    }

    impl AsyncRead for Recorded {
        fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
            Pin::new(&mut self.io).poll_read(cx, buf)
        }
    }

    impl AsyncWrite for Recorded {
        fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, data: &[u8]) -> Poll<io::Result<usize>> {
            let n = ready!(Pin::new(&mut self.io).poll_write(cx, data))?;
            self.sent.lock().unwrap().extend_from_slice(&data[..n]);
            self.writes.lock().unwrap().push(n);
            Poll::Ready(Ok(n))
        }
        fn poll_write_vectored(self: Pin<&mut Self>, cx: &mut Context<'_>, bufs: &[io::IoSlice<'_>]) -> Poll<io::Result<usize>> {
            let whole: Vec<u8> = bufs.iter().flat_map(|b| b.iter().copied()).collect();
            self.poll_write(cx, &whole)
        }
        fn is_write_vectored(&self) -> bool {
            true
        }
        fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
            Pin::new(&mut self.io).poll_flush(cx)
        }
        fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
            Pin::new(&mut self.io).poll_shutdown(cx)
        }
    }

    /// A server that answers each read with "ok:" and what it read, once,
    /// saying whether the bytes came as early data (as the handshake and as
    /// the read tell it).
    async fn answer_once<IO: AsyncRead + AsyncWrite + Unpin>(acceptor: EarlyAcceptor, io: IO) -> io::Result<(Vec<u8>, bool)> {
        let mut tls = acceptor.accept(io).await?;
        let took = tls.took_early_data();
        let mut buf = vec![0u8; 64];
        let n = tls.read(&mut buf).await?;
        let early = tls.read_early_data();
        assert_eq!(took, early, "early data taken is what the first read gives");
        tls.write_all(&[b"ok:", &buf[..n]].concat()).await?;
        tls.flush().await?;
        // The rest of the handshake, and the client's close.
        while tls.read(&mut buf).await? > 0 {}
        Ok((buf[..n].to_vec(), early))
    }

    /// A first connection, "cold" answered: a full handshake, which gives
    /// the client a ticket. The client's answer, and what the server read
    /// and whether it came as early data.
    async fn cold(acceptor: &EarlyAcceptor, connector: &TlsConnector) -> ([u8; 7], (Vec<u8>, bool)) {
        let (near, far) = tokio::io::duplex(1 << 16);
        let server = tokio::spawn(answer_once(acceptor.clone(), far));
        let mut client = connector.connect(name(), near).await.unwrap();
        client.write_all(b"cold").await.unwrap();
        client.flush().await.unwrap();
        let mut answer = [0u8; 7];
        client.read_exact(&mut answer).await.unwrap();
        client.shutdown().await.unwrap();
        (answer, server.await.unwrap().unwrap())
    }

    #[tokio::test]
    async fn a_resumed_client_is_read_and_answered_from_its_first_flight_once() {
        let (acceptor, connector) = pair();

        // A first connection: a full handshake, which gives a ticket.
        let (answer, read) = cold(&acceptor, &connector).await;
        assert_eq!(&answer, b"ok:cold");
        assert_eq!(read, (b"cold".to_vec(), false));

        // The second resumes it with early data, answered before the client
        // has sent its Finished, which it cannot before it has the answer's
        // flight: the client's bytes up to reading the answer are one flight.
        // The server's handshake flight and its answer go in one write.
        let (near, far) = tokio::io::duplex(1 << 16);
        let far = Recorded::new(far);
        let server_writes = far.writes.clone();
        let server = tokio::spawn(answer_once(acceptor.clone(), far));
        let near = Recorded::new(near);
        let sent = near.sent.clone();
        let mut client = connector.connect(name(), near).await.unwrap();
        client.write_all(b"warm").await.unwrap();
        client.flush().await.unwrap();
        let first_flight = sent.lock().unwrap().clone();
        let mut answer = [0u8; 7];
        client.read_exact(&mut answer).await.unwrap();
        assert_eq!(&answer, b"ok:warm");
        assert_eq!(server_writes.lock().unwrap().len(), 1, "the handshake's flight and the answer in one write");
        assert!(client.get_ref().1.is_early_data_accepted(), "the client's early data was taken");
        client.shutdown().await.unwrap();
        assert_eq!(server.await.unwrap().unwrap(), (b"warm".to_vec(), true));

        // The same flight sent again resumes nothing: its ticket served once,
        // so its early data is skipped unread and the handshake goes on in
        // full, which a replaying client cannot finish.
        let (mut near, far) = tokio::io::duplex(1 << 16);
        let server = tokio::spawn(async move { acceptor.accept(far).await.map(|_| ()) });
        near.write_all(&first_flight).await.unwrap();
        near.shutdown().await.unwrap();
        let error = server.await.unwrap().expect_err("a replayed flight is not read");
        assert_eq!(error.kind(), io::ErrorKind::UnexpectedEof, "{error}");
    }

    /// Early data that the server reads and does not answer: its handshake
    /// flight, held for an answer, still goes once the server waits to read
    /// more, and the client finishes its handshake and closes.
    #[tokio::test]
    async fn early_data_left_unanswered_does_not_hold_the_handshake_back() {
        let (acceptor, connector) = pair();
        cold(&acceptor, &connector).await;

        let (near, far) = tokio::io::duplex(1 << 16);
        let server = tokio::spawn(async move {
            let mut tls = acceptor.accept(far).await?;
            let mut buf = vec![0u8; 64];
            let n = tls.read(&mut buf).await?;
            assert!(tls.read_early_data());
            let read = buf[..n].to_vec();
            // No answer: the next read waits for the client, who cannot go
            // on without the server's flight.
            while tls.read(&mut buf).await? > 0 {}
            io::Result::Ok(read)
        });
        let mut client = connector.connect(name(), near).await.unwrap();
        client.write_all(b"quiet").await.unwrap();
        client.flush().await.unwrap();
        // Closing needs the handshake finished: the server's flight must come.
        // (The bound only turns a hang into a failure.)
        tokio::time::timeout(std::time::Duration::from_secs(30), client.shutdown())
            .await
            .expect("the server's handshake flight never came")
            .unwrap();
        assert!(client.get_ref().1.is_early_data_accepted());
        assert_eq!(server.await.unwrap().unwrap(), b"quiet".to_vec());
    }
}
