//! XMPP over TCP: one XML stream each way on the socket, which STARTTLS
//! (RFC 6120 §5) can turn into TLS.

use std::sync::Arc;

use hub::{Drained, Outbox, Payload};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::OwnedSemaphorePermit;
use tokio_rustls::TlsAcceptor;
use wire::xmpp::{Limits, StreamParser};

use super::Xmpp;
use super::session::{Flow, Framing, Phase, STREAM_CLOSE, Session, StreamEnd, header, stream_end_for};
use crate::metrics::ConnectionMetrics;
use crate::server::ServerState;

/// How a stream on one socket ended.
enum Ending {
    /// The socket is done with: after a stream error or end, or when it failed.
    Done(Option<StreamEnd>),
    /// The client asked for TLS and was told to proceed.
    StartTls,
    /// The socket failed: the session may wait to be resumed.
    Broken,
    /// Another connection resumed the session: it goes there.
    TakenOver(super::session::Takeover),
}

/// What one connection's loop works with, whatever the socket.
struct Conn {
    server: Arc<ServerState>,
    session: Session,
    outbox: Arc<Outbox>,
    parser: StreamParser,
    metrics: ConnectionMetrics,
    batch: Vec<Payload>,
    out: String,
}

/// Serves one client connection until either side ends the stream; with
/// `direct_tls` the connection starts with a TLS handshake (XEP-0368).
pub async fn run(mut tcp: TcpStream, server: Arc<ServerState>, xmpp: Arc<Xmpp>, _slot: OwnedSemaphorePermit, direct_tls: bool) {
    let outbox = Arc::new(Outbox::new(server.config.queue_limit));
    let limits = Limits { max_stanza_bytes: server.config.max_message_size, ..Limits::default() };
    let tls = xmpp.tls.clone();
    let service = xmpp.clone();
    let mut conn = Conn {
        metrics: server.metrics.connection("xmpp", "tcp"),
        session: Session::new(server.clone(), Framing::Stream, xmpp, outbox.clone()),
        server,
        outbox,
        parser: StreamParser::new(limits),
        batch: Vec::new(),
        out: String::new(),
    };
    let first = if direct_tls { Ending::StartTls } else { conn.drive(&mut tcp).await };
    match first {
        Ending::Done(end) => conn.finish(&mut tcp, end).await,
        Ending::Broken => service.park(conn.session),
        Ending::TakenOver(reply) => conn.hand_over(&mut tcp, reply).await,
        // Boxed, for the same reason: a TLS stream's state is large.
        Ending::StartTls => Box::pin(conn.over_tls(tcp, tls, service)).await,
    }
}

impl Conn {
    /// Goes on over TLS, after `<proceed/>` or from the first byte.
    async fn over_tls(mut self, mut tcp: TcpStream, tls: Option<TlsAcceptor>, service: Arc<Xmpp>) {
        let Some(acceptor) = tls else { return self.finish(&mut tcp, None).await };
        let handshake = tokio::time::timeout(self.server.config.header_timeout, acceptor.accept(tcp)).await;
        let Ok(Ok(mut stream)) = handshake else {
            // Nothing more can be said on a failed handshake.
            self.session.leave_all();
            return;
        };
        self.session.encrypted = true;
        match self.drive(&mut stream).await {
            Ending::Done(end) => self.finish(&mut stream, end).await,
            Ending::Broken => service.park(self.session),
            Ending::TakenOver(reply) => self.hand_over(&mut stream, reply).await,
            // Refused by the session once encrypted: cannot happen twice.
            Ending::StartTls => self.finish(&mut stream, None).await,
        }
    }
}

/// Bytes read from a client at a time; a bigger stanza takes several reads.
const READ_CHUNK: usize = 4 * 1024;

/// A client's socket: plain TCP or TLS.
trait Socket: AsyncRead + AsyncWrite + Unpin + Send {
    /// Waits for bytes from the client and hands them to `parser`; how many,
    /// 0 at the end of the stream.
    fn read_into(&mut self, parser: &mut StreamParser) -> impl Future<Output = std::io::Result<usize>> + Send;
}

impl Socket for TcpStream {
    /// Waits for the socket to be readable, and only then reads into a
    /// buffer on the stack: an idle connection holds no read buffer.
    async fn read_into(&mut self, parser: &mut StreamParser) -> std::io::Result<usize> {
        loop {
            self.readable().await?;
            let mut chunk = [0u8; READ_CHUNK];
            match self.try_read(&mut chunk) {
                Ok(n) => {
                    parser.feed(&chunk[..n]);
                    return Ok(n);
                }
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
                Err(e) => return Err(e),
            }
        }
    }
}

impl Socket for tokio_rustls::server::TlsStream<TcpStream> {
    /// TLS decrypts into the buffer it is given, so one is held while waiting.
    async fn read_into(&mut self, parser: &mut StreamParser) -> std::io::Result<usize> {
        let mut chunk = vec![0u8; READ_CHUNK];
        let n = self.read(&mut chunk).await?;
        parser.feed(&chunk[..n]);
        Ok(n)
    }
}

impl Conn {
    /// Reads and writes the stream until it ends or turns to TLS.
    async fn drive<S: Socket>(&mut self, stream: &mut S) -> Ending {
        loop {
            tokio::select! {
                n = stream.read_into(&mut self.parser) => {
                    let n = match n {
                        Ok(0) | Err(_) => return Ending::Broken,
                        Ok(n) => n,
                    };
                    let mut n_left = n;
                    // Events already buffered after a resumption are the
                    // resumed session's: handle them without waiting to read.
                    loop {
                        let before = self.session.stanzas_in;
                        // Boxed: what handling a stanza may await (a room's join
                        // through the broker …) would otherwise make every idle
                        // connection's task as big as its biggest step.
                        let flow = Box::pin(self.session.take_events(&mut self.parser)).await;
                        self.metrics.received_many(self.session.stanzas_in - before, std::mem::take(&mut n_left));
                        match flow {
                            Ok(Flow::Continue) => break,
                            Ok(Flow::Closed) => return Ending::Done(Some(StreamEnd::closed())),
                            Ok(Flow::StartTls) => {
                                // `<proceed/>` must reach the client before the handshake.
                                if self.outbox.try_drain(&mut self.batch).is_some() && !self.write(stream).await {
                                    return Ending::Broken;
                                }
                                return Ending::StartTls;
                            }
                            Ok(Flow::Resume(parked, h)) => {
                                let resumed = match self.session.take_up(*parked, h) {
                                    Ok(texts) => texts,
                                    Err(end) => return Ending::Done(Some(end)),
                                };
                                self.outbox = self.session.outbox().clone();
                                if stream.write_all(resumed.concat().as_bytes()).await.is_err() {
                                    return Ending::Broken;
                                }
                            }
                            Err(end) => return Ending::Done(Some(end)),
                        }
                    }
                }
                drained = self.outbox.drain(&mut self.batch) => {
                    if !self.write(stream).await {
                        return Ending::Broken;
                    }
                    if let Drained::Closed(close) = drained {
                        return Ending::Done(Some(stream_end_for(&close)));
                    }
                }
                reply = self.session.taken_over() => {
                    // Refused (the reply dropped) once it can no longer be resumed.
                    if self.session.resumable().is_some() {
                        return Ending::TakenOver(reply);
                    }
                }
                () = self.server.shutdown.wait() => return Ending::Done(Some(StreamEnd("system-shutdown", "the server is shutting down".into()))),
            }
        }
    }

    /// Hands the session to the connection that resumed it, and ends this
    /// one with `conflict` (XEP-0198 §5).
    async fn hand_over<S: AsyncWrite + Unpin>(self, stream: &mut S, reply: super::session::Takeover) {
        let mut out = self.session.stream_error("conflict", "the session was resumed on another connection");
        out.push_str(STREAM_CLOSE);
        // The session first: this connection is likely dead, and a write to
        // it may wait long.
        if let Err(mut session) = reply.send(self.session) {
            // The new connection gave up waiting: the session ends here.
            session.leave_all();
        }
        let _ = tokio::time::timeout(std::time::Duration::from_secs(1), async {
            let _ = stream.write_all(out.as_bytes()).await;
            let _ = stream.shutdown().await;
        })
        .await;
    }

    /// Writes the drained batch; `false` if the socket failed.
    async fn write<S: AsyncWrite + Unpin>(&mut self, stream: &mut S) -> bool {
        self.out.clear();
        let count = self.batch.len();
        for payload in self.batch.drain(..) {
            if let Some(text) = self.session.render(&payload) {
                self.out.push_str(&text);
            }
        }
        if self.out.is_empty() {
            return true;
        }
        let ok = stream.write_all(self.out.as_bytes()).await.is_ok();
        self.metrics.sent(count, self.out.len());
        ok
    }

    /// Leaves the rooms and ends the stream: what was answered before the
    /// end first (the stream header, when the error came in the same read
    /// as the client's), then the error if any, then `</stream:stream>`.
    async fn finish<S: AsyncWrite + Unpin>(&mut self, stream: &mut S, end: Option<StreamEnd>) {
        self.session.leave_all();
        if let Some(StreamEnd(condition, text)) = end {
            let mut out = String::new();
            if self.outbox.try_drain(&mut self.batch).is_some() {
                self.batch.drain(..).filter_map(|p| self.session.render(&p)).for_each(|t| out.push_str(&t));
            }
            if self.session.phase == Phase::Connected {
                // An error before the client's header still opens a stream (§4.9.1.1).
                out.push_str(&header(self.session.domain(), "error"));
            }
            if !condition.is_empty() {
                out.push_str(&self.session.stream_error(condition, &text));
            }
            out.push_str(STREAM_CLOSE);
            let _ = stream.write_all(out.as_bytes()).await;
        }
        let _ = stream.shutdown().await;
    }
}
