//! A WebSocket connection's task: its reader and its writer as one future,
//! written by hand.
//!
//! An idle connection's memory is mostly this future (docs/shootout.md,
//! "Idle memory, beside Bun"). Written as two async blocks joined, it held each side's
//! pinned futures (the waits on shutdown and on the outbox's close, a timer
//! each, the select's branches) and the join's wakers; written by hand it
//! holds one timer ([`base::alarm::Timer`]: an idle connection's deadlines
//! are seconds away, so 8 bytes on the alarms' wheel rather than a tokio
//! `Sleep`'s 112), a slot on shutdown's list of wakers
//! ([`base::shutdown::Waiter`]), and the state each side keeps between its
//! steps.
//!
//! Each poll runs both sides until neither can go on. The reader takes the
//! client's messages to the app; the writer takes what the app queued for the
//! client, frames it, and writes it out ([`SendQueue`]), with a ping when the
//! client has been silent for a whole interval. The one timer wakes the task
//! for whichever side's deadline comes first. A broadcast wakes the whole
//! task, so the reader is polled too: until the client sends something it
//! only looks at the socket's readiness ([`LazyWs`]), and after that a read
//! that would block is answered from tokio's readiness flags, not by a
//! system call.
//!
//! Closing is as RFC 6455 §5.5.1 has it: whichever side closes the client's
//! outbox, the writer sends what was queued before the close, then the
//! close frame, and the reader reads on (discarding) until the client
//! answers it, or the close grace runs out.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, ready};

use bytes::Bytes;
use futures_util::{Sink, Stream};
use hub::{Close, Drained, Outbox, Payload};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpStream;
use tokio::time::Instant;
use tokio_tungstenite::tungstenite::protocol::CloseFrame;
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
use tokio_tungstenite::tungstenite::Message;

use crate::Client;
use base::alarm::Timer;
use base::limits::Inflow;
use base::metrics::ClientMetrics;
use base::shutdown::{Shutdown, Waiter};
use base::time::Ms;
use base::token;
use wire::websocket::frame_header;
use crate::lazy_ws::LazyWs;
use crate::send_queue::{Refused, SendQueue, Sending};
use crate::shared_tcp::Watch;
use crate::shared_writer::DirectFrames;
use crate::utf8_watch::Utf8Watch;
use crate::websocket::{Inbound, Limits, Outbound, close_for, ping_timeout};

/// Messages the reader takes in one poll before it lets other tasks run.
const READ_BUDGET: usize = 32;

/// Rounds of both sides in one poll before the task yields (and wakes
/// itself): each side stops when it cannot go on, so more are rare.
const ROUNDS: usize = 4;

/// A running WebSocket connection; see the module docs.
pub struct WsTask<S, C, I, O> {
    /// The one timer: the earliest deadline of the two sides, seconds away
    /// on the alarms' wheel while the connection is idle.
    timer: Timer,
    parts: Parts<S, C, I, O>,
}

// Nothing of the connection is pinned: its parts are moved about freely.
impl<S, C, I, O> Unpin for WsTask<S, C, I, O> {}

/// Everything of the connection but its timer.
struct Parts<S, C, I, O> {
    ws: LazyWs<Sending<Utf8Watch<S>>>,
    queue: SendQueue,
    outbox: Arc<Outbox>,
    /// The protocol's client, until the reader is done: dropping it leaves its rooms.
    client: Option<C>,
    inbound: I,
    outbound: O,
    limits: Arc<Limits>,
    metrics: ClientMetrics,
    shutdown: Waiter,
    reader: Reader,
    writer: Writer,
}

struct Reader {
    state: Reading,
    /// Made on the first message: a client that never speaks holds none.
    inflow: Option<Box<Inflow>>,
}

#[derive(Clone, Copy)]
enum Reading {
    Open,
    /// The client is over its rate: nothing is read until then, so its own
    /// TCP window holds it back.
    Throttled(Ms),
    /// We are closing: read on, discarding, until the client answers our
    /// close frame, but only until then.
    Draining(Ms),
    /// The client broke the protocol: tungstenite reads no more, so its
    /// bytes are read and dropped until it ends its side, but only until then.
    Discarding(Ms),
    Done,
}

struct Writer {
    state: Writing,
    /// Taken from the outbox, being framed.
    batch: Vec<Payload>,
    /// Framed, not yet on the send queue.
    frames: Vec<Bytes>,
    /// Frames were queued and the flush has not finished.
    sending: bool,
    /// What the frames being sent carry, for the metrics.
    count: u32,
    bytes: u32,
    /// When the writer last finished sending, for the heartbeat.
    silent_since: Ms,
    next_ping: Ms,
    /// A ping went out (when `next_ping` was set) and is not yet answered.
    pinged: bool,
    /// The writer has taken a message: only then does it offer the shared
    /// writer the socket, so an idle connection holds nothing for that.
    took: bool,
    /// The shared writer may write to this client's socket: the send
    /// queue's to say, kept here to spare taking its lock on every write.
    shares: bool,
    /// Until when what the outbox holds is left to gather (`--write-delay`).
    gather: Option<Ms>,
    /// When the client last sent anything (a message, a pong, a close);
    /// the reader sets it.
    heard: Ms,
}

enum Writing {
    /// `last` is set once the outbox is closed: the frames being sent are
    /// the last. (Closes are boxed: every connection holds this state.)
    Open { last: Option<Box<Close>> },
    /// Sending the last frames and the close frame, until the deadline.
    Closing { close: Box<Close>, until: Ms, step: CloseStep },
    Done,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum CloseStep {
    /// The framing's last frames.
    Frames,
    /// The close frame, through tungstenite.
    Close,
    /// Its flush.
    Flush,
    /// The end of our side of the stream, after a client broke the
    /// protocol: its close frame is not read, so our FIN tells it we are done.
    Shutdown,
}

/// Why a send stopped.
enum Abandoned {
    /// The client was closed as a slow consumer while the write waited.
    Closed,
    /// The connection failed, or its closing handshake is under way.
    Io,
}

impl<S, C, I, O> WsTask<S, C, I, O>
where
    S: AsyncRead + AsyncWrite + Unpin,
    C: Client,
    I: Inbound,
    O: Outbound,
{
    /// The connection over `io` (`watch`, if any, tells when the client has
    /// first sent something) for the protocol's client `client`.
    // Each argument is a different piece of the connection.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        io: S,
        watch: Option<Watch>,
        socket: Option<Arc<TcpStream>>,
        client: C,
        inbound: I,
        mut outbound: O,
        limits: Arc<Limits>,
        metrics: ClientMetrics,
        shutdown: &Shutdown,
    ) -> WsTask<S, C, I, O> {
        // The shared writer writes to the socket only when each message
        // goes out as it comes (no write delay).
        let queue = SendQueue::with_socket(socket.filter(|_| limits.shared_writer.is_some() && limits.write_delay.is_zero()));
        let ws = LazyWs::new(Sending::new(Utf8Watch::new(io), queue.clone()), watch, limits.max_message_size);
        let now = Instant::now();
        let mut frames = Vec::new();
        outbound.opening(&mut frames);
        let reader = Reader { state: Reading::Open, inflow: None };
        let writer = Writer {
            state: Writing::Open { last: None },
            batch: Vec::new(),
            sending: !frames.is_empty(),
            frames,
            count: 0,
            bytes: 0,
            silent_since: Ms::at(now),
            next_ping: Ms::at(now) + limits.ping_interval,
            pinged: false,
            took: false,
            shares: queue.has_socket(),
            gather: None,
            heard: Ms::at(now),
        };
        WsTask {
            timer: Timer::new(),
            parts: Parts {
                ws,
                queue,
                outbox: client.outbox().clone(),
                client: Some(client),
                inbound,
                outbound,
                limits,
                metrics,
                shutdown: shutdown.waiter(),
                reader,
                writer,
            },
        }
    }
}

impl<S, C, I, O> Future for WsTask<S, C, I, O>
where
    S: AsyncRead + AsyncWrite + Unpin,
    C: Client,
    I: Inbound,
    O: Outbound,
{
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let WsTask { timer, parts } = self.get_mut();
        // The waiter holds the task's waker from the first poll on.
        if parts.shutdown.poll(cx).is_ready() {
            parts.outbox.close(Close::GOING_AWAY);
        }
        // The deadline the timer last fired for: the sides see it as passed.
        let mut fired: Option<Instant> = None;
        for _ in 0..ROUNDS {
            let now = fired.map_or_else(Instant::now, |at| at.max(Instant::now()));
            let read = parts.poll_read(cx, now);
            let wrote = parts.poll_write(cx, now);
            if matches!(parts.reader.state, Reading::Done) && matches!(parts.writer.state, Writing::Done) {
                return Poll::Ready(());
            }
            if let Some(at) = parts.deadline()
                && timer.poll_at(cx, at).is_ready()
            {
                fired = Some(at);
                continue;
            }
            if !(read || wrote) {
                return Poll::Pending;
            }
        }
        cx.waker().wake_by_ref();
        Poll::Pending
    }
}

impl<S, C, I, O> Parts<S, C, I, O>
where
    S: AsyncRead + AsyncWrite + Unpin,
    C: Client,
    I: Inbound,
    O: Outbound,
{
    /// When the client's token expires, if it does.
    fn expires(&self) -> Option<Instant> {
        self.client.as_ref().and_then(C::expires)
    }

    /// The earliest deadline either side waits for.
    fn deadline(&self) -> Option<Instant> {
        let read = match self.reader.state {
            Reading::Open => self.expires(),
            Reading::Throttled(until) => Some(self.expires().map_or(until.instant(), |e| e.min(until.instant()))),
            Reading::Draining(until) | Reading::Discarding(until) => Some(until.instant()),
            Reading::Done => None,
        };
        let write = match &self.writer.state {
            Writing::Open { .. } if self.writer.sending => None,
            Writing::Open { .. } => {
                let at = self.writer.wake_at(&self.outbound);
                Some(self.writer.gather.map_or(at, |until| until.min(at)).instant())
            }
            Writing::Closing { until, .. } => Some(until.instant()),
            Writing::Done => None,
        };
        match (read, write) {
            (Some(r), Some(w)) => Some(r.min(w)),
            (r, w) => r.or(w),
        }
    }

    /// The reader's steps; whether it did anything.
    fn poll_read(&mut self, cx: &mut Context<'_>, now: Instant) -> bool {
        match self.reader.state {
            Reading::Done => false,
            Reading::Draining(until) => self.drain(cx, now, until, false),
            Reading::Discarding(until) => self.drain(cx, now, until, true),
            Reading::Open | Reading::Throttled(_) => {
                // Closed by the writer, a publisher (slow consumer) or shutdown.
                if self.outbox.is_closed() {
                    self.start_draining(now);
                    return true;
                }
                if self.expires().is_some_and(|at| at <= now) {
                    self.outbox.close(token::EXPIRED);
                    self.start_draining(now);
                    return true;
                }
                match self.reader.state {
                    Reading::Throttled(until) if until > Ms::at(now) => return false,
                    _ => self.reader.state = Reading::Open,
                }
                self.read_messages(cx, now)
            }
        }
    }

    fn read_messages(&mut self, cx: &mut Context<'_>, now: Instant) -> bool {
        let Some(client) = self.client.as_mut() else {
            self.reader.state = Reading::Done;
            return true;
        };
        let mut progressed = false;
        for _ in 0..READ_BUDGET {
            let Poll::Ready(message) = Pin::new(&mut &self.ws).poll_next(cx) else {
                return progressed;
            };
            progressed = true;
            self.writer.heard = Ms::now();
            // What the message was to the app: how many messages and bytes it
            // carried, or the close it calls for.
            let received = match message {
                Some(Ok(Message::Text(text))) => {
                    let len = text.len();
                    self.metrics.received(len);
                    self.inbound.on_text(client, text).map(|messages| (messages, len))
                }
                Some(Ok(Message::Binary(data))) => {
                    let len = data.len();
                    self.metrics.received(len);
                    self.inbound.on_binary(client, data).map(|messages| (messages, len))
                }
                Some(Ok(Message::Ping(_) | Message::Pong(_) | Message::Frame(_))) => continue,
                // tungstenite queues the answer to the peer's close; reading on
                // (draining) sends it, and then the stream ends and the socket closes.
                Some(Ok(Message::Close(_))) => {
                    self.outbox.close(Close::PEER_GONE);
                    self.start_draining(now);
                    return true;
                }
                None => {
                    self.outbox.close(Close::PEER_GONE);
                    self.finish_reading();
                    return true;
                }
                Some(Err(e)) => Err(close_for(&e)),
            };
            match received {
                Ok((messages, len)) => {
                    let limits = &self.limits;
                    let inflow = self.reader.inflow.get_or_insert_with(|| {
                        Box::new(Inflow::new(limits.max_message_rate, limits.max_byte_rate))
                    });
                    if let Some(until) = inflow.charge(messages, len) {
                        self.reader.state = Reading::Throttled(Ms::at(until));
                        return true;
                    }
                }
                Err(close) => {
                    self.outbox.close(close);
                    // Nothing can be sent to a peer that is gone.
                    if self.outbox.close_reason().is_some_and(|c| c == Close::PEER_GONE) {
                        self.finish_reading();
                    } else {
                        self.reader.state = Reading::Discarding(Ms::at(now) + self.limits.close_grace);
                    }
                    return true;
                }
            }
        }
        // Over budget: the next poll reads on, after other tasks have run.
        cx.waker().wake_by_ref();
        progressed
    }

    fn start_draining(&mut self, now: Instant) {
        self.reader.state = Reading::Draining(Ms::at(now) + self.limits.close_grace);
    }

    /// Reads on, dropping what comes, until the client's side ends or
    /// `until`: through tungstenite while draining (it answers the client's
    /// close frame), under it once the client broke the protocol (`raw`).
    fn drain(&mut self, cx: &mut Context<'_>, now: Instant, until: Ms, raw: bool) -> bool {
        if until <= Ms::at(now) {
            self.finish_reading();
            return true;
        }
        for _ in 0..READ_BUDGET {
            let ended = if raw {
                self.ws.poll_discard(cx)
            } else {
                Pin::new(&mut &self.ws).poll_next(cx).map(|next| !matches!(next, Some(Ok(_))))
            };
            match ended {
                Poll::Ready(false) => {}
                Poll::Ready(true) => {
                    self.finish_reading();
                    return true;
                }
                Poll::Pending => return false,
            }
        }
        cx.waker().wake_by_ref();
        false
    }

    /// The client stopped talking: it leaves its rooms now.
    fn finish_reading(&mut self) {
        self.client = None;
        self.reader.state = Reading::Done;
    }

    /// The writer's steps; whether it did anything.
    fn poll_write(&mut self, cx: &mut Context<'_>, now: Instant) -> bool {
        match self.writer.state {
            Writing::Done => false,
            Writing::Open { .. } => self.write(cx, now),
            Writing::Closing { .. } => self.write_close(cx, now),
        }
    }

    fn write(&mut self, cx: &mut Context<'_>, now: Instant) -> bool {
        let mut progressed = false;
        loop {
            if self.writer.sending {
                match self.poll_send(cx, true) {
                    Poll::Pending => return progressed,
                    Poll::Ready(Ok(())) => {
                        self.metrics.sent(self.writer.count as usize, self.writer.bytes as usize);
                        self.writer.silent_since = Ms::now();
                        self.writer.sending = false;
                        if self.writer.count == 0 {
                            // A ping or a heartbeat, no message: an idle
                            // connection keeps none of the room it took.
                            self.writer.frames = Vec::new();
                            self.queue.release();
                        }
                        progressed = true;
                    }
                    Poll::Ready(Err(Abandoned::Closed)) => {
                        let close = self.outbox.close_reason().unwrap_or(Close::PEER_GONE);
                        self.start_closing(close, now);
                        return true;
                    }
                    Poll::Ready(Err(Abandoned::Io)) => {
                        self.outbox.close(Close::PEER_GONE);
                        self.writer.state = Writing::Done;
                        return true;
                    }
                }
            }
            if let Writing::Open { last } = &mut self.writer.state
                && let Some(close) = last.take()
            {
                self.start_closing(*close, now);
                return true;
            }
            if self.writer.wake_at(&self.outbound) <= Ms::at(now) {
                self.on_timer(now);
                progressed = true;
                continue;
            }
            // What the shared writer left partly written, or tungstenite
            // queued, goes before anything more is taken.
            if self.writer.shares && !self.queue.is_empty() {
                (self.writer.count, self.writer.bytes) = (0, 0);
                self.writer.sending = true;
                continue;
            }
            if !self.limits.write_delay.is_zero() && !self.gathered(cx, now) {
                return progressed;
            }
            let drained = if self.writer.took && self.writer.shares {
                let (queue, metrics, outbound, outbox) = (&self.queue, &self.metrics, &self.outbound, &self.outbox);
                let shared = self.limits.shared_writer.as_ref();
                let direct = || Some(DirectFrames::offer(shared?, outbox, queue, metrics.sends(), outbound.framing()?));
                self.outbox.poll_drain_direct(cx, &mut self.writer.batch, direct)
            } else {
                self.outbox.poll_drain(cx, &mut self.writer.batch)
            };
            let drained = match drained {
                Poll::Pending => return progressed,
                Poll::Ready(drained) => drained,
            };
            progressed = true;
            self.writer.took = true;
            if let Drained::Closed(close) = &drained
                && (*close == Close::PEER_GONE || close.is_slow_consumer())
            {
                // Nothing queued is wanted any more.
                let close = close.clone();
                self.writer.batch.clear();
                self.start_closing(close, now);
                return true;
            }
            let w = &mut self.writer;
            self.outbound.frame(&w.batch, &mut w.frames);
            // Saturating: a batch is bounded by the outbox, a few MiB at most.
            w.bytes = u32::try_from(w.batch.iter().map(Payload::len).sum::<usize>()).unwrap_or(u32::MAX);
            w.count = u32::try_from(w.batch.len()).unwrap_or(u32::MAX);
            w.batch.clear();
            if let Drained::Closed(close) = drained {
                w.state = Writing::Open { last: Some(Box::new(close)) };
            }
            w.sending = !w.frames.is_empty();
        }
    }

    /// With a write delay: whether the writer takes what the outbox holds
    /// now. The first message queued starts the delay, and what is pushed
    /// until it ends wakes nothing; then it all goes in one write. A close
    /// is not held back.
    fn gathered(&mut self, cx: &mut Context<'_>, now: Instant) -> bool {
        match self.writer.gather {
            Some(until) if until > Ms::at(now) => false,
            Some(_) => {
                self.writer.gather = None;
                true
            }
            None if self.outbox.poll_queued(cx).is_pending() => false,
            None if self.outbox.is_closed() => true,
            None => {
                self.writer.gather = Some(Ms::at(now) + self.limits.write_delay);
                false
            }
        }
    }

    /// The heartbeat and the ping, when either is due.
    fn on_timer(&mut self, now: Instant) {
        let w = &mut self.writer;
        (w.count, w.bytes) = (0, 0);
        let now = Ms::at(now);
        if self.outbound.heartbeat_interval().is_some_and(|every| w.silent_since + every <= now) {
            self.outbound.heartbeat(&mut w.frames);
            // Until it is sent, the writer is not silent (and the sending
            // sets this again).
            w.silent_since = now;
        }
        if w.next_ping <= now {
            let every = self.limits.ping_interval;
            // The ping went out when `next_ping` was last set.
            let sent = w.next_ping.checked_sub(every);
            if w.pinged && sent.is_some_and(|sent| w.heard < sent) {
                self.outbox.close(ping_timeout());
            } else {
                w.pinged = now.since(w.heard) >= every;
                if w.pinged {
                    w.frames.push(frame_header::ping());
                }
            }
            w.next_ping = now + every;
        }
        w.sending = !w.frames.is_empty();
    }

    /// Begins the closing handshake for `close`, or ends the writer if the
    /// peer is gone.
    fn start_closing(&mut self, close: Close, now: Instant) {
        if close == Close::PEER_GONE {
            self.writer.state = Writing::Done;
            return;
        }
        if close.is_slow_consumer() {
            self.metrics.slow_consumer();
        }
        self.outbound.closing(&close, &mut self.writer.frames);
        let until = Ms::at(now) + self.limits.close_grace;
        self.writer.state = Writing::Closing { close: Box::new(close), until, step: CloseStep::Frames };
    }

    fn write_close(&mut self, cx: &mut Context<'_>, now: Instant) -> bool {
        let mut progressed = false;
        loop {
            let Writing::Closing { close, until, step } = &self.writer.state else {
                return progressed;
            };
            if *until <= Ms::at(now) {
                self.writer.state = Writing::Done;
                return true;
            }
            let next = match *step {
                CloseStep::Frames => match self.poll_send(cx, false) {
                    Poll::Pending => return progressed,
                    Poll::Ready(sent) => sent.is_ok().then_some(CloseStep::Close),
                },
                CloseStep::Close => {
                    let frame = CloseFrame { code: CloseCode::from(close.code), reason: close.reason.to_string().into() };
                    let mut sink = &self.ws;
                    match Pin::new(&mut sink).poll_ready(cx) {
                        Poll::Pending => return progressed,
                        Poll::Ready(Ok(())) => {
                            let sent = Pin::new(&mut sink).start_send(Message::Close(Some(frame)));
                            sent.is_ok().then_some(CloseStep::Flush)
                        }
                        Poll::Ready(Err(_)) => None,
                    }
                }
                CloseStep::Flush => {
                    let mut sink = &self.ws;
                    match Pin::new(&mut sink).poll_flush(cx) {
                        Poll::Pending => return progressed,
                        Poll::Ready(_) => matches!(self.reader.state, Reading::Discarding(_)).then_some(CloseStep::Shutdown),
                    }
                }
                CloseStep::Shutdown => match self.ws.poll_shutdown_write(cx) {
                    Poll::Pending => return progressed,
                    Poll::Ready(()) => None,
                },
            };
            progressed = true;
            match (next, &mut self.writer.state) {
                (Some(next), Writing::Closing { step, .. }) => *step = next,
                _ => {
                    self.writer.state = Writing::Done;
                    return true;
                }
            }
        }
    }

    /// Queues the framed frames in order on the send queue, then flushes:
    /// one write for the whole batch when the socket takes it. With
    /// `abandon`, a write the client does not take is abandoned once the
    /// client is closed as a slow consumer.
    fn poll_send(&mut self, cx: &mut Context<'_>, abandon: bool) -> Poll<Result<(), Abandoned>> {
        loop {
            if !self.writer.frames.is_empty() {
                match self.queue.push(&mut self.writer.frames) {
                    Ok(()) => {}
                    // tungstenite's own frame is waiting for room: it goes first.
                    Err(Refused::Behind) => {
                        ready!(self.poll_flush(cx, abandon))?;
                        continue;
                    }
                    Err(Refused::Closed) => return Poll::Ready(Err(Abandoned::Io)),
                }
            }
            return self.poll_flush(cx, abandon);
        }
    }

    /// Writes out what is queued. A client that stops reading blocks this
    /// write; its outbox then overflows, and with `abandon` the write is
    /// abandoned. Any other close waits for the write to finish.
    fn poll_flush(&mut self, cx: &mut Context<'_>, abandon: bool) -> Poll<Result<(), Abandoned>> {
        let mut sink = &self.ws;
        match Pin::new(&mut sink).poll_flush(cx) {
            Poll::Ready(result) => Poll::Ready(result.map_err(|_| Abandoned::Io)),
            Poll::Pending if abandon => {
                self.outbox.wake_on_close(cx.waker());
                match self.outbox.close_reason() {
                    Some(close) if close.is_slow_consumer() => Poll::Ready(Err(Abandoned::Closed)),
                    _ => Poll::Pending,
                }
            }
            Poll::Pending => Poll::Pending,
        }
    }
}

impl<S, C, I, O> Drop for Parts<S, C, I, O> {
    /// The outbox may outlive the connection (a room still holds it): it
    /// must not keep the socket.
    fn drop(&mut self) {
        self.outbox.forget_direct();
    }
}

impl Writer {
    /// When the writer's timer is due: the next ping, or the heartbeat if
    /// that comes first.
    fn wake_at(&self, outbound: &impl Outbound) -> Ms {
        match outbound.heartbeat_interval() {
            Some(every) => (self.silent_since + every).min(self.next_ping),
            None => self.next_ping,
        }
    }
}
