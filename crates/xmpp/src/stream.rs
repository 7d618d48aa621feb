//! One client's XML stream, whatever carries it: the task that reads the
//! client's bytes into the parser and hands its stanzas to the session,
//! writes what the session's outbox holds, watches the login deadline, the
//! client's silence and its rate, hands the session over when another
//! connection resumes it, and ends the stream with the error that says why.
//! A `Carrier` moves the bytes: a socket (`tcp`, plain or TLS) or WebSocket
//! messages (`websocket`).

use std::task::{Context, Poll};
use std::sync::Arc;

use hub::{Drained, Outbox, Payload};
use tokio::time::Instant;
use wire::xmpp::{Limits, StreamParser};

use super::Xmpp;
use super::session::{Flow, Framing, Phase, Session, StreamEnd, Takeover, stream_end_for};
use base::alarm::Timer;
use base::limits::Inflow;
use base::time::Ms;
use base::metrics::ClientMetrics;

/// What moves one stream's bytes between the client and the server.
pub(crate) trait Carrier: Send {
    /// Hands the client's next bytes to `parser` if any have come (how
    /// many), or has the task woken when they do. A poll, not a future: a
    /// future would be held in every idle stream's task, and with it a
    /// buffer for TLS to decrypt into; the bytes are read into one on the
    /// stack, and the parser keeps what it needs.
    fn poll_read_into(&mut self, cx: &mut Context<'_>, parser: &mut StreamParser) -> Poll<Result<usize, Unread>>;

    /// Sends `texts` in order: each is one element, or the stream's header
    /// or end.
    fn send(&mut self, texts: &[String]) -> impl Future<Output = std::io::Result<()>> + Send;

    /// Sends the stream's last words, then closes the carrier.
    fn close(&mut self, last_words: &[String]) -> impl Future<Output = ()> + Send;

    /// Whether the bytes the last read gave came in TLS early data.
    fn read_early_data(&self) -> bool {
        false
    }
}

/// Why nothing more can be read.
pub(crate) enum Unread {
    /// The client went without a word: the session may wait to be resumed.
    Gone,
    /// The client ended its carrier, or broke its framing, and is told why
    /// if anything is to be said.
    Ended(Option<StreamEnd>),
}

/// How a stream ended on one carrier.
pub(crate) enum Ending {
    /// The carrier is done with: after a stream error or end, or when it failed.
    Done(Option<StreamEnd>),
    /// The client asked for TLS and was told to proceed.
    StartTls,
    /// The carrier failed: the session may wait to be resumed.
    Broken,
    /// Another connection resumed the session: it goes there.
    TakenOver(Takeover),
}

/// What a stream's task does on a wake that does not end it there.
enum Next {
    /// Handles the `n` bytes the client sent.
    Read(usize),
    /// Writes the batch drained, then ends if the outbox was `closed`.
    Write { closed: bool },
}

/// How long the stream's last words (its error and end) may take to write.
const LAST_WORDS: std::time::Duration = std::time::Duration::from_secs(1);

/// One stream's state, kept across a change of carrier (STARTTLS).
pub(crate) struct StreamTask {
    /// The session, with the service (its context, and its settings) and
    /// the outbox, which are read through it: kept here too, they would be
    /// twice in every idle stream's task.
    pub session: Session,
    parser: StreamParser,
    metrics: ClientMetrics,
    batch: Vec<Payload>,
    /// What the client may send (`--max-message-rate`, `--max-byte-rate`).
    /// Boxed: inline, its 80 bytes would make every idle stream's task a
    /// size class bigger.
    inflow: Box<Inflow>,
    /// Until when the client is not read, for being over its rate.
    paused: Option<Ms>,
    /// When the client was last heard from, or last pinged; until it has
    /// bound a resource, when the stream began, from which its login's time
    /// (`--xmpp-login-timeout`) runs whatever it sends.
    quiet_since: Ms,
    /// Whether the client has been pinged since it was last heard from.
    pinged: bool,
    /// Whether the client's bytes are looked for before the outbox on the
    /// next wake: each goes first every other time, so that neither a busy
    /// room nor a busy client starves the other.
    read_first: bool,
    /// The earliest of the deadlines above, set lazily: a read only notes
    /// the time, and a wake that comes early sets it again.
    deadline: Ms,
    /// Wakes the task at `deadline`: seconds away while the stream is
    /// idle, so on the alarms' wheel, in 16 bytes and no allocation where a
    /// boxed tokio `Sleep` took 112.
    timer: Timer,
    /// The server's shutdown, registered once (a fresh wait on every turn
    /// of the loop would be a bigger future in every idle stream's task).
    shutdown: base::shutdown::Waiter,
}

impl StreamTask {
    /// The service's TLS, for STARTTLS or direct TLS, and how long a
    /// handshake may take.
    pub fn tls(&self) -> (Option<base::tls::EarlyAcceptor>, std::time::Duration) {
        (self.session.xmpp().tls.clone(), self.session.xmpp().context.bounds.header_timeout)
    }

    /// A new stream of a client at `address`, framed as `framing`;
    /// `carrier` names it in the metrics.
    pub fn new(xmpp: Arc<Xmpp>, framing: Framing, carrier: &'static str, address: std::net::IpAddr) -> StreamTask {
        let context = &xmpp.context;
        let outbox = Arc::new(Outbox::new(context.bounds.queue_limit));
        let limits = Limits { max_stanza_bytes: context.bounds.max_message_size, ..Limits::default() };
        let parser = match framing {
            Framing::Stream => StreamParser::new(limits),
            Framing::Messages | Framing::Bosh => StreamParser::fragments(limits),
        };
        let now = Ms::now();
        StreamTask {
            inflow: Box::new(xmpp.inflow.clone()),
            paused: None,
            quiet_since: now,
            pinged: false,
            read_first: true,
            deadline: now + xmpp.login_timeout,
            timer: Timer::new(),
            shutdown: xmpp.context.shutdown.waiter(),
            metrics: context.metrics.client("xmpp", carrier),
            session: Session::new(framing, xmpp.clone(), outbox, address),
            parser,
            batch: Vec::new(),
        }
    }

    /// Ends the stream on `carrier` as `ending` says: with its last words,
    /// by parking the session for resumption, or by handing it over.
    /// `StartTls` is for a carrier that can turn to TLS to handle first.
    pub async fn end<C: Carrier>(mut self, carrier: &mut C, ending: Ending) {
        match ending {
            Ending::Done(end) => self.finish(carrier, end).await,
            Ending::Broken => self.session.xmpp().clone().park(self.session).await,
            Ending::TakenOver(reply) => self.hand_over(carrier, reply).await,
            Ending::StartTls => self.finish(carrier, None).await,
        }
    }

    /// Reads and writes the stream until it ends or turns to TLS.
    // An async block, not an async fn, which would hold its arguments twice
    // in every idle stream's task.
    #[allow(clippy::manual_async_fn)]
    pub fn drive<'a, C: Carrier>(&'a mut self, carrier: &'a mut C) -> impl Future<Output = Ending> + Send + 'a {
        async move {
            loop {
                // One poll of every source, by hand: a `select!` over their
                // futures held all of them in every idle stream's task. A
                // `let`, so that nothing of the poll's answer is held across
                // the awaits below.
                let next = match std::future::poll_fn(|cx| self.poll_next(cx, carrier)).await {
                    Ok(next) => next,
                    Err(ending) => return ending,
                };
                match next {
                    Next::Read(n) => {
                        self.session.early_data = carrier.read_early_data();
                        // Boxed: what handling a read awaits is bigger than
                        // what waiting for one holds, and inline it would be
                        // in every idle stream's task.
                        if let Some(ending) = Box::pin(self.on_read(carrier, n)).await {
                            return ending;
                        }
                    }
                    Next::Write { closed } => {
                        // Boxed, as handling a read is: what a write holds
                        // while the socket is full is bigger than what
                        // waiting holds.
                        if !Box::pin(self.write(carrier)).await {
                            // A write abandoned because the queue overflowed
                            // behind it ends the session; any other failure
                            // may be resumed.
                            return match self.session.outbox().close_reason() {
                                Some(close) => self.closed_by(&close),
                                None => Ending::Broken,
                            };
                        }
                        // The close itself is read again after the write.
                        if closed && let Some(close) = self.session.outbox().close_reason() {
                            return self.closed_by(&close);
                        }
                    }
                }
            }
        }
    }

    /// What the task does next, once something has woken it, or how the
    /// stream ends: the server's shutdown is looked at first, then a
    /// takeover and the timer (handled here), then the client's bytes and
    /// the outbox, each of those two first every other time. Every source
    /// not ready has the task's waker.
    fn poll_next<C: Carrier>(&mut self, cx: &mut Context<'_>, carrier: &mut C) -> Poll<Result<Next, Ending>> {
        loop {
            if self.shutdown.poll(cx).is_ready() {
                return Poll::Ready(Err(Ending::Done(Some(StreamEnd("system-shutdown", "the server is shutting down".into())))));
            }
            if let Poll::Ready(reply) = self.session.poll_taken_over(cx) {
                // Refused (the reply dropped) once it can no longer be resumed.
                if self.session.resumable().is_some() {
                    return Poll::Ready(Err(Ending::TakenOver(reply)));
                }
                continue;
            }
            if self.timer.poll_at(cx, self.deadline.instant()).is_ready() {
                // It is set again for a later time, or the stream ends.
                if let Err(end) = self.on_timer() {
                    return Poll::Ready(Err(Ending::Done(Some(end))));
                }
                continue;
            }
            self.read_first = !self.read_first;
            for read in [self.read_first, !self.read_first] {
                if read {
                    if self.paused.is_none()
                        && let Poll::Ready(n) = carrier.poll_read_into(cx, &mut self.parser)
                    {
                        return Poll::Ready(match n {
                            Ok(n) => Ok(Next::Read(n)),
                            Err(Unread::Gone) => Err(Ending::Broken),
                            Err(Unread::Ended(end)) => Err(Ending::Done(end)),
                        });
                    }
                } else if let Poll::Ready(drained) = self.session.outbox().poll_drain(cx, &mut self.batch) {
                    return Poll::Ready(Ok(Next::Write { closed: matches!(drained, Drained::Closed(_)) }));
                }
            }
            return Poll::Pending;
        }
    }

    /// Handles the `n` bytes just read: every whole event they complete,
    /// then the client's rate; an ending if the stream ends there.
    async fn on_read<C: Carrier>(&mut self, carrier: &mut C, n: usize) -> Option<Ending> {
        let heard = Ms::now();
        self.pinged = false;
        let mut n_left = n;
        let before = self.session.stanzas_in;
        // Events already buffered after a resumption are the resumed
        // session's: handle them without waiting to read.
        loop {
            let before = self.session.stanzas_in;
            // Boxed: what handling a stanza may await (a room's join through
            // the broker …) would otherwise make every idle stream's task as
            // big as its biggest step.
            let flow = Box::pin(self.session.take_events(&mut self.parser)).await;
            self.metrics.received_many(self.session.stanzas_in - before, std::mem::take(&mut n_left));
            match flow {
                Ok(Flow::Continue) => break,
                Ok(Flow::Closed) => return Some(Ending::Done(Some(StreamEnd::closed()))),
                Ok(Flow::StartTls) => {
                    // `<proceed/>` must reach the client before the handshake.
                    if self.session.outbox().try_drain(&mut self.batch).is_some() && !self.write(carrier).await {
                        return Some(Ending::Broken);
                    }
                    return Some(Ending::StartTls);
                }
                Ok(Flow::Resume(parked, h, sasl2)) => {
                    // What this connection's session queued first (its stream
                    // header and features, when the client sent its header and
                    // its resumption in one flight) goes before the resumption.
                    let mut texts = Vec::new();
                    if self.session.outbox().try_drain(&mut self.batch).is_some() {
                        texts.extend(std::mem::take(&mut self.batch).into_iter().filter_map(|payload| self.session.render(&payload)));
                    }
                    match Box::pin(self.session.take_up(*parked, h, sasl2)).await {
                        Ok(resumed) => texts.extend(resumed),
                        Err(end) => return Some(Ending::Done(Some(end))),
                    };
                    if carrier.send(&texts).await.is_err() {
                        return Some(Ending::Broken);
                    }
                }
                Err(end) => return Some(Ending::Done(Some(end))),
            }
        }
        // Once bound, silence is watched instead of the login deadline,
        // which may be later.
        if self.session.phase == Phase::Ready {
            self.quiet_since = heard;
            let silence = heard + self.session.xmpp().context.bounds.ping_interval;
            self.deadline = self.deadline.min(silence);
        }
        // Over its rate, the client is read again only once under it: the
        // socket holds it back meanwhile, and nothing it sent is lost.
        if let Some(until) = self.inflow.charge(self.session.stanzas_in - before, n) {
            let until = Ms::at(until);
            self.paused = Some(until);
            self.deadline = self.deadline.min(until);
        }
        None
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
        let now = Ms::now();
        if self.paused.is_some_and(|until| until <= now) {
            self.paused = None;
        }
        let interval = self.session.xmpp().context.bounds.ping_interval;
        let watch = if self.session.phase != Phase::Ready {
            let login_deadline = self.quiet_since + self.session.xmpp().login_timeout;
            if login_deadline <= now {
                let limit = humantime::format_duration(self.session.xmpp().login_timeout);
                self.session.xmpp().context.metrics.refused("xmpp", "login_timeout");
                return Err(StreamEnd("connection-timeout", format!("no resource bound within {limit}")));
            }
            login_deadline
        } else if self.quiet_since + interval <= now {
            if self.pinged {
                self.session.xmpp().context.metrics.refused("xmpp", "ping_timeout");
                return Err(StreamEnd("connection-timeout", "no answer to the server's ping".into()));
            }
            self.session.ping();
            self.pinged = true;
            self.quiet_since = now;
            now + interval
        } else {
            self.quiet_since + interval
        };
        self.deadline = self.paused.map_or(watch, |until| until.min(watch));
        Ok(())
    }

    /// Hands the session to the connection that resumed it, and ends this
    /// one with `conflict` (XEP-0198 §5).
    async fn hand_over<C: Carrier>(self, carrier: &mut C, reply: Takeover) {
        let mut words = vec![self.session.stream_error("conflict", "the session was resumed on another connection")];
        words.extend(self.session.framing().close().map(str::to_owned));
        // The session first: this connection is likely dead, and a write to
        // it may wait long.
        if let Err(mut session) = reply.send(self.session) {
            // The new connection gave up waiting: the session ends here.
            session.leave_all().await;
        }
        let _ = tokio::time::timeout(LAST_WORDS, carrier.close(&words)).await;
    }

    /// Writes the drained batch; `false` if the carrier failed.
    async fn write<C: Carrier>(&mut self, carrier: &mut C) -> bool {
        let count = self.batch.len();
        // Made here, not kept in the task: an idle stream holds none. The
        // batch goes too, with the queue's room it took (`Outbox::take`).
        let texts: Vec<String> = std::mem::take(&mut self.batch).into_iter().filter_map(|payload| self.session.render(&payload)).collect();
        if texts.is_empty() {
            return true;
        }
        let bytes = texts.iter().map(String::len).sum();
        // A client that takes no bytes for a ping interval is gone, or
        // hostile: it must not hold its connection and queue forever; nor
        // once its queue has overflowed (or the session was closed) behind
        // the write. A write that the socket takes at once (the rule) costs
        // nothing more; one that waits sets the stream's own timer for its
        // deadline meanwhile (the stream's is set again after), and has the
        // outbox wake the task on a close: a timer and a wait of the
        // write's own would be in every idle stream's task.
        let interval = self.session.xmpp().context.bounds.ping_interval;
        let mut until = None;
        let ok = {
            let (texts, timer, outbox) = (&texts, &mut self.timer, self.session.outbox());
            let mut send = std::pin::pin!(carrier.send(texts));
            std::future::poll_fn(|cx| {
                if let Poll::Ready(written) = send.as_mut().poll(cx) {
                    return Poll::Ready(written.is_ok());
                }
                let until = *until.get_or_insert_with(|| Instant::now() + interval);
                outbox.wake_on_close(cx.waker());
                if outbox.is_closed() || timer.poll_at(cx, until).is_ready() {
                    return Poll::Ready(false);
                }
                Poll::Pending
            })
            .await
        };
        self.metrics.sent(count, bytes);
        ok
    }

    /// Leaves the rooms and ends the stream: what was answered before the
    /// end first, then the error if any, then the stream's end; with no
    /// end to say, the carrier just closes.
    async fn finish<C: Carrier>(&mut self, carrier: &mut C, end: Option<StreamEnd>) {
        self.session.leave_all().await;
        let words = end.map(|end| self.session.last_words(end)).unwrap_or_default();
        // A client that is not reading gets no longer than this to take it.
        let _ = tokio::time::timeout(LAST_WORDS, carrier.close(&words)).await;
    }
}
