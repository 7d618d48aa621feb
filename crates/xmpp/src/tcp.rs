//! XMPP over TCP: one XML stream each way on the socket, which STARTTLS
//! (RFC 6120 §5) can turn into TLS.

use std::pin::Pin;
use std::sync::Arc;

use hub::{Drained, Outbox, Payload};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::OwnedSemaphorePermit;
use tokio::time::{Instant, Sleep};
use tokio_rustls::TlsAcceptor;
use wire::xmpp::{Limits, StreamParser};

use super::Xmpp;
use super::session::{Flow, Framing, Phase, STREAM_CLOSE, Session, StreamEnd, header, stream_end_for};
use base::limits::Inflow;
use base::metrics::ConnectionMetrics;

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
    /// The service: its context, and its settings.
    xmpp: Arc<Xmpp>,
    session: Session,
    outbox: Arc<Outbox>,
    parser: StreamParser,
    metrics: ConnectionMetrics,
    batch: Vec<Payload>,
    out: String,
    /// What the client may send (`--max-message-rate`, `--max-byte-rate`).
    inflow: Inflow,
    /// Until when the client is not read, for being over its rate.
    paused: Option<Instant>,
    /// When the client must have bound a resource (`--xmpp-login-timeout`).
    login_deadline: Instant,
    /// When the client was last heard from, or last pinged.
    quiet_since: Instant,
    /// Whether the client has been pinged since it was last heard from.
    pinged: bool,
    /// Wakes the connection for the earliest of the deadlines above; it is
    /// set lazily: a read only notes the time, and a wake that comes early
    /// sets the timer again.
    timer: Pin<Box<Sleep>>,
}

/// Serves one client connection from `address` until either side ends the
/// stream; with `direct_tls` the connection starts with a TLS handshake
/// (XEP-0368).
pub async fn run(mut tcp: TcpStream, address: std::net::IpAddr, xmpp: Arc<Xmpp>, _slot: OwnedSemaphorePermit, direct_tls: bool) {
    let context = &xmpp.context;
    let outbox = Arc::new(Outbox::new(context.bounds.queue_limit));
    let limits = Limits { max_stanza_bytes: context.bounds.max_message_size, ..Limits::default() };
    let tls = xmpp.tls.clone();
    let service = xmpp.clone();
    let now = Instant::now();
    let login_deadline = now + xmpp.login_timeout;
    let mut conn = Conn {
        inflow: xmpp.inflow.clone(),
        paused: None,
        login_deadline,
        quiet_since: now,
        pinged: false,
        timer: Box::pin(tokio::time::sleep_until(login_deadline)),
        metrics: context.metrics.connection("xmpp", "tcp"),
        session: Session::new(Framing::Stream, xmpp.clone(), outbox.clone(), address),
        xmpp,
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
        let handshake = tokio::time::timeout(self.xmpp.context.bounds.header_timeout, acceptor.accept(tcp)).await;
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

/// How long the stream's last words (its error and end) may take to write.
const LAST_WORDS: std::time::Duration = std::time::Duration::from_secs(1);

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
                n = stream.read_into(&mut self.parser), if self.paused.is_none() => {
                    let n = match n {
                        Ok(0) | Err(_) => return Ending::Broken,
                        Ok(n) => n,
                    };
                    self.quiet_since = Instant::now();
                    self.pinged = false;
                    let mut n_left = n;
                    let before = self.session.stanzas_in;
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
                    // Once bound, silence is watched instead of the login
                    // deadline, which may be later.
                    let silence = self.quiet_since + self.xmpp.context.bounds.ping_interval;
                    if self.session.phase == Phase::Ready && self.timer.deadline() > silence {
                        self.timer.as_mut().reset(silence);
                    }
                    // Over its rate, the client is read again only once under it:
                    // TCP holds it back meanwhile, and nothing it sent is lost.
                    if let Some(until) = self.inflow.charge(self.session.stanzas_in - before, n) {
                        self.paused = Some(until);
                        let next = until.min(self.timer.deadline());
                        self.timer.as_mut().reset(next);
                    }
                }
                drained = self.outbox.drain(&mut self.batch) => {
                    if !self.write(stream).await {
                        // A write abandoned because the queue overflowed behind it
                        // ends the session; any other failure may be resumed.
                        return match self.outbox.close_reason() {
                            Some(close) => self.closed_by(&close),
                            None => Ending::Broken,
                        };
                    }
                    if let Drained::Closed(close) = drained {
                        return self.closed_by(&close);
                    }
                }
                () = self.timer.as_mut() => {
                    if let Err(end) = self.on_timer() {
                        return Ending::Done(Some(end));
                    }
                }
                reply = self.session.taken_over() => {
                    // Refused (the reply dropped) once it can no longer be resumed.
                    if self.session.resumable().is_some() {
                        return Ending::TakenOver(reply);
                    }
                }
                () = self.xmpp.context.shutdown.wait() => return Ending::Done(Some(StreamEnd("system-shutdown", "the server is shutting down".into()))),
            }
        }
    }

    /// The session's outbox was closed (a slow consumer, shutdown …): the
    /// stream ends with the error that says why.
    fn closed_by(&self, close: &hub::Close) -> Ending {
        if close.is_slow_consumer() {
            self.metrics.slow_consumer();
        }
        Ending::Done(Some(stream_end_for(close)))
    }

    /// The timer went off: the client may be read again, or has taken too
    /// long to log in, or is pinged for being silent, or is closed for not
    /// answering; then the timer is set for what comes next.
    fn on_timer(&mut self) -> Result<(), StreamEnd> {
        let now = Instant::now();
        if self.paused.is_some_and(|until| until <= now) {
            self.paused = None;
        }
        let interval = self.xmpp.context.bounds.ping_interval;
        let watch = if self.session.phase != Phase::Ready {
            if self.login_deadline <= now {
                let limit = humantime::format_duration(self.xmpp.login_timeout);
                self.xmpp.context.metrics.refused("xmpp", "login_timeout");
                return Err(StreamEnd("connection-timeout", format!("no resource bound within {limit}")));
            }
            self.login_deadline
        } else if self.quiet_since + interval <= now {
            if self.pinged {
                self.xmpp.context.metrics.refused("xmpp", "ping_timeout");
                return Err(StreamEnd("connection-timeout", "no answer to the server's ping".into()));
            }
            self.session.ping();
            self.pinged = true;
            self.quiet_since = now;
            now + interval
        } else {
            self.quiet_since + interval
        };
        self.timer.as_mut().reset(self.paused.map_or(watch, |until| until.min(watch)));
        Ok(())
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
        // A client that takes no bytes for a ping interval is gone, or
        // hostile: it must not hold its connection and queue forever; nor
        // once its queue has overflowed behind the write.
        let write = tokio::time::timeout(self.xmpp.context.bounds.ping_interval, stream.write_all(self.out.as_bytes()));
        let ok = tokio::select! {
            biased;
            written = write => matches!(written, Ok(Ok(()))),
            _ = self.outbox.closed() => false,
        };
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
            // A client that is not reading gets no longer than this to take it.
            let _ = tokio::time::timeout(LAST_WORDS, stream.write_all(out.as_bytes())).await;
        }
        let _ = tokio::time::timeout(LAST_WORDS, stream.shutdown()).await;
    }
}
