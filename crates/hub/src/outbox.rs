//! A session's bounded outbound queue.
//!
//! Publishers push without waiting; the session's writer takes everything
//! queued at once and sends it in one write. The queue is bounded in bytes:
//! a push that would pass the bound closes the session as a slow consumer
//! and frees what was queued, so a client that stops reading cannot grow the
//! server's memory, and the publisher is never slowed by it.
//!
//! A writer with nothing in hand may leave what is pushed to another
//! writer that serves many clients ([`Outbox::poll_drain_direct`]): a push
//! into its empty queue then schedules the client's [`Direct`] instead of
//! waking the writer's task, and that writer sends what was queued
//! ([`Outbox::flush_direct`]) if the socket takes it then. Only what the
//! socket does not take is left to the client's own writer, woken for it.

use std::borrow::Cow;
use std::collections::VecDeque;
use std::future::poll_fn;
use std::pin::pin;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};

use parking_lot::Mutex;
use tokio::sync::Notify;

use crate::Payload;

/// What each queued message costs beyond its text, so that a flood of empty
/// messages is bounded too (roughly the queue slot plus the shared header).
const PER_MESSAGE_COST: usize = 64;

/// Why a session is being closed, as a WebSocket-style code and reason.
/// Transports map it to their own framing (close frame, SockJS `c[...]`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Close {
    pub code: u16,
    pub reason: Cow<'static, str>,
}

impl Close {
    /// The client fell behind: its queue passed the bound (1008, policy violation).
    pub const SLOW_CONSUMER: Close =
        Close { code: 1008, reason: Cow::Borrowed("slow consumer: outbound queue limit exceeded") };
    /// The server is shutting down (1001, going away).
    pub const GOING_AWAY: Close =
        Close { code: 1001, reason: Cow::Borrowed("server shutting down") };
    /// The peer closed or vanished; nothing more can be sent.
    pub const PEER_GONE: Close = Close { code: 1006, reason: Cow::Borrowed("peer gone") };

    /// A close with any code and reason.
    pub fn new(code: u16, reason: impl Into<Cow<'static, str>>) -> Close {
        Close { code, reason: reason.into() }
    }

    /// Whether this close was caused by the queue bound.
    pub fn is_slow_consumer(&self) -> bool {
        *self == Close::SLOW_CONSUMER
    }
}

/// Why a push was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum PushError {
    /// The session is already closed; the message is dropped.
    #[error("session closed")]
    Closed,
    /// This push passed the bound: the session is now closed as a slow consumer.
    #[error("outbound queue full")]
    Full,
}

/// What [`Outbox::drain`] found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Drained {
    /// Messages were moved into the caller's buffer.
    Messages,
    /// The session is closed; any messages queued before the close were
    /// moved into the buffer and should be sent before the close.
    Closed(Close),
}

/// A client's socket as a writer that serves many clients writes to it,
/// for a client's writer that has nothing in hand
/// ([`Outbox::poll_drain_direct`]).
pub trait Direct: Send + Sync {
    /// Something was queued for the client: call [`Outbox::flush_direct`]
    /// soon. Called without the outbox's lock.
    fn schedule(self: Arc<Self>);
}

/// What a [`Outbox::flush_direct`]'s send did with the messages it was given.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sent {
    /// All of them are on the socket.
    Whole,
    /// Part of them is; the rest is queued under the client's writer, to
    /// send before anything else, and the writer is woken for it.
    Part,
    /// Nothing: they stay queued, and the client's writer is woken for them.
    Nothing,
}

/// A session's bounded outbound queue; see the module docs.
pub struct Outbox {
    state: Mutex<State>,
    limit: usize,
}

impl std::fmt::Debug for Outbox {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let state = self.state.lock();
        f.debug_struct("Outbox").field("queued", &state.queue.len()).field("close", &state.close).field("limit", &self.limit).finish()
    }
}

#[derive(Default)]
struct State {
    queue: VecDeque<Payload>,
    cost: usize,
    /// Boxed: most outboxes never close before they are dropped, and an
    /// idle connection's memory counts (an outbox fits 128 bytes so).
    close: Option<Box<Close>>,
    /// The writer's, woken when the queue goes from empty to not empty and
    /// on close. It is stored under the same lock as the queue is checked,
    /// so a push between the check and the wait is not lost.
    writer: Option<Waker>,
    /// Wakes everyone waiting in [`Outbox::closed`]; made for the first.
    closing: Option<Arc<Notify>>,
    /// The writer's socket, once it has offered it.
    direct: Option<Arc<dyn Direct>>,
    /// The writer waits with nothing in hand: pushes schedule `direct`.
    idle: bool,
}

impl Outbox {
    /// A queue that holds at most `limit_bytes` of messages (text length plus
    /// a small fixed cost each). A single message larger than the bound is
    /// still accepted into an empty queue, so every message can be sent.
    pub fn new(limit_bytes: usize) -> Outbox {
        Outbox { state: Mutex::new(State::default()), limit: limit_bytes }
    }

    /// Queues a message for the writer, and wakes it if the queue was
    /// empty; or, if the writer leaves its messages to a [`Direct`] while it
    /// has nothing in hand, schedules that instead. Never waits.
    pub fn push(&self, payload: Payload) -> Result<(), PushError> {
        let mut state = self.state.lock();
        if state.close.is_some() {
            return Err(PushError::Closed);
        }
        let cost = payload.len() + PER_MESSAGE_COST;
        if state.cost + cost > self.limit && !state.queue.is_empty() {
            // Free the backlog now: the client will never get it anyway.
            state.queue = VecDeque::new();
            state.cost = 0;
            self.set_close(state, Close::SLOW_CONSUMER);
            return Err(PushError::Full);
        }
        let (mut writer, mut direct) = (None, None);
        if state.queue.is_empty() {
            match &state.direct {
                Some(d) if state.idle => direct = Some(d.clone()),
                _ => writer = state.writer.take(),
            }
        }
        state.queue.push_back(payload);
        state.cost += cost;
        drop(state);
        if let Some(writer) = writer {
            writer.wake();
        }
        if let Some(direct) = direct {
            direct.schedule();
        }
        Ok(())
    }

    /// For the writer a [`Direct`] schedules: if the client's own writer
    /// still waits with nothing in hand, hands what is queued to `send`,
    /// under the outbox's lock (so nothing pushed meanwhile overtakes it),
    /// and takes what it sent off the queue. What `send` could not send
    /// whole is left to the client's writer, which is woken.
    pub fn flush_direct(&self, send: impl FnOnce(&[Payload]) -> Sent) {
        let mut state = self.state.lock();
        if !state.idle || state.queue.is_empty() || state.close.is_some() {
            return;
        }
        let sent = send(state.queue.make_contiguous());
        if sent != Sent::Nothing {
            state.queue.clear();
            state.cost = 0;
        }
        if sent != Sent::Whole {
            state.idle = false;
            let writer = state.writer.take();
            drop(state);
            if let Some(writer) = writer {
                writer.wake();
            }
        }
    }

    /// Closes the session: later pushes are refused, and the writer gets
    /// what was queued before, then the close. The first close wins.
    pub fn close(&self, close: Close) {
        let state = self.state.lock();
        if state.close.is_none() {
            self.set_close(state, close);
        }
    }

    /// Closes, lets go of the writer's socket, and wakes the writer and
    /// everyone waiting for the close.
    fn set_close(&self, mut state: parking_lot::MutexGuard<'_, State>, close: Close) {
        state.close = Some(Box::new(close));
        state.idle = false;
        let direct = state.direct.take();
        let writer = state.writer.take();
        let closing = state.closing.clone();
        drop(state);
        drop(direct);
        if let Some(writer) = writer {
            writer.wake();
        }
        if let Some(closing) = closing {
            closing.notify_waiters();
        }
    }

    /// Lets go of the writer's socket: pushes wake the writer from now on. A
    /// writer that ends calls this, so that the socket is not held by an
    /// outbox that outlives it.
    pub fn forget_direct(&self) {
        let mut state = self.state.lock();
        state.idle = false;
        let direct = state.direct.take();
        drop(state);
        drop(direct);
    }

    /// The close, if the session is closed.
    pub fn close_reason(&self) -> Option<Close> {
        self.state.lock().close.as_deref().cloned()
    }

    /// Whether the session is closed.
    pub fn is_closed(&self) -> bool {
        self.state.lock().close.is_some()
    }

    /// Number of queued messages.
    pub fn len(&self) -> usize {
        self.state.lock().queue.len()
    }

    /// Whether nothing is queued.
    pub fn is_empty(&self) -> bool {
        self.state.lock().queue.is_empty()
    }

    /// Waits until there is something to send or the session is closed, then
    /// moves every queued message into `out`. Cancel-safe: messages are taken
    /// only in the step that returns, so a dropped call loses nothing.
    pub async fn drain(&self, out: &mut Vec<Payload>) -> Drained {
        poll_fn(|cx| self.poll_drain(cx, out)).await
    }

    /// [`Outbox::drain`] as a poll: when there is nothing to take, the task
    /// is woken once there is. One task drains an outbox: the last to poll
    /// is the one woken.
    pub fn poll_drain(&self, cx: &mut Context<'_>, out: &mut Vec<Payload>) -> Poll<Drained> {
        self.drain_or_wait(cx, out, |_| {})
    }

    /// [`Outbox::poll_drain`] for a writer that, when it has nothing to
    /// take, also has nothing of its own waiting for the socket: until it
    /// next takes, pushes schedule `direct` (made the first time, and kept)
    /// instead of waking it. See the module docs.
    pub fn poll_drain_direct(&self, cx: &mut Context<'_>, out: &mut Vec<Payload>, direct: impl FnOnce() -> Option<Arc<dyn Direct>>) -> Poll<Drained> {
        self.drain_or_wait(cx, out, |state| {
            if state.direct.is_none() {
                state.direct = direct();
            }
            state.idle = state.direct.is_some();
        })
    }

    /// Takes what is queued into `out`; if there is nothing, keeps the
    /// task's waker and lets `waiting` say how the writer waits, under the
    /// same lock.
    fn drain_or_wait(&self, cx: &mut Context<'_>, out: &mut Vec<Payload>, waiting: impl FnOnce(&mut State)) -> Poll<Drained> {
        let mut state = self.state.lock();
        match Self::take(&mut state, out) {
            Some(drained) => Poll::Ready(drained),
            None => {
                Self::keep(&mut state, cx.waker());
                waiting(&mut state);
                Poll::Pending
            }
        }
    }

    /// Ready once something is queued or the session is closed, taking
    /// nothing; until then the task is woken as [`Outbox::poll_drain`]'s is.
    /// A writer that gathers messages before it writes (`--write-delay`)
    /// waits so, then lets pushes gather without waking it.
    pub fn poll_queued(&self, cx: &mut Context<'_>) -> Poll<()> {
        let mut state = self.state.lock();
        if !state.queue.is_empty() || state.close.is_some() {
            return Poll::Ready(());
        }
        Self::keep(&mut state, cx.waker());
        Poll::Pending
    }

    /// Has the writer's task woken on the close, whatever is queued; a
    /// writer that is busy sending what it took registers so.
    pub fn wake_on_close(&self, waker: &Waker) {
        let mut state = self.state.lock();
        if state.close.is_none() {
            Self::keep(&mut state, waker);
        }
    }

    fn keep(state: &mut State, waker: &Waker) {
        match &mut state.writer {
            Some(kept) if kept.will_wake(waker) => {}
            slot => *slot = Some(waker.clone()),
        }
    }

    /// Like [`Outbox::drain`] but never waits: `None` when there is nothing
    /// to send and the session is open.
    pub fn try_drain(&self, out: &mut Vec<Payload>) -> Option<Drained> {
        Self::take(&mut self.state.lock(), out)
    }

    fn take(state: &mut State, out: &mut Vec<Payload>) -> Option<Drained> {
        // The writer has what it takes in hand until it is sent.
        state.idle = false;
        let had_messages = !state.queue.is_empty();
        if out.capacity() == 0 {
            // A writer that keeps no batch between writes takes the queue's
            // room with its messages (no copy, no allocation): then an idle
            // connection's outbox holds no room, and neither does its writer.
            *out = Vec::from(std::mem::take(&mut state.queue));
        } else {
            out.extend(state.queue.drain(..));
        }
        state.cost = 0;
        match &state.close {
            Some(close) => Some(Drained::Closed(Close::clone(close))),
            None if had_messages => Some(Drained::Messages),
            None => None,
        }
    }

    /// Resolves once the session is closed (at once if it already is).
    pub async fn closed(&self) -> Close {
        let closing = {
            let mut state = self.state.lock();
            if let Some(close) = &state.close {
                return Close::clone(close);
            }
            state.closing.get_or_insert_with(Arc::default).clone()
        };
        loop {
            let mut notified = pin!(closing.notified());
            notified.as_mut().enable();
            if let Some(close) = self.close_reason() {
                return close;
            }
            notified.await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    fn msg(s: &'static str) -> Payload {
        Payload::from(s)
    }

    #[tokio::test]
    async fn poll_queued_takes_nothing_and_wakes_on_the_first_push_only() {
        let outbox = Arc::new(Outbox::new(1 << 20));
        let woken = Arc::new(Woken::default());
        let waker = Waker::from(woken.clone());
        let mut cx = Context::from_waker(&waker);
        assert!(outbox.poll_queued(&mut cx).is_pending());
        outbox.push(msg("a")).unwrap();
        outbox.push(msg("b")).unwrap();
        assert_eq!(woken.0.load(Ordering::SeqCst), 1, "woken by the first push, not the second");
        assert!(outbox.poll_queued(&mut cx).is_ready());
        // Ready again: nothing was taken, and pushes while it gathers wake nothing.
        assert!(outbox.poll_queued(&mut cx).is_ready());
        outbox.push(msg("c")).unwrap();
        assert_eq!(woken.0.load(Ordering::SeqCst), 1);
        let mut out = Vec::new();
        assert_eq!(outbox.try_drain(&mut out), Some(Drained::Messages));
        assert_eq!(out.len(), 3);
        assert!(outbox.poll_queued(&mut cx).is_pending());
        outbox.close(Close::GOING_AWAY);
        assert_eq!(woken.0.load(Ordering::SeqCst), 2, "a close wakes it");
        assert!(outbox.poll_queued(&mut cx).is_ready());
    }

    #[derive(Default)]
    struct Woken(AtomicUsize);

    impl std::task::Wake for Woken {
        fn wake(self: Arc<Self>) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    #[tokio::test]
    async fn drain_takes_everything_queued_in_order() {
        let outbox = Outbox::new(1 << 20);
        for s in ["a", "b", "c"] {
            outbox.push(msg(s)).unwrap();
        }
        let mut out = Vec::new();
        assert_eq!(outbox.drain(&mut out).await, Drained::Messages);
        let texts: Vec<_> = out.iter().map(|p| p.as_text().expect("text")).collect();
        assert_eq!(texts, ["a", "b", "c"]);
        assert!(outbox.try_drain(&mut out).is_none());
    }

    #[tokio::test]
    async fn a_push_wakes_a_waiting_writer() {
        let outbox = std::sync::Arc::new(Outbox::new(1 << 20));
        let writer = tokio::spawn({
            let outbox = outbox.clone();
            async move {
                let mut out = Vec::new();
                outbox.drain(&mut out).await;
                out.len()
            }
        });
        tokio::task::yield_now().await;
        outbox.push(msg("x")).unwrap();
        assert_eq!(writer.await.unwrap(), 1);
    }

    struct Wakes(std::sync::atomic::AtomicUsize);

    impl std::task::Wake for Wakes {
        fn wake(self: std::sync::Arc<Self>) {
            self.0.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        }
    }

    #[test]
    fn a_writer_busy_sending_is_woken_by_the_close_and_not_by_pushes() {
        let outbox = Outbox::new(1 << 20);
        let wakes = std::sync::Arc::new(Wakes(0.into()));
        let waker = Waker::from(wakes.clone());
        outbox.push(msg("a")).unwrap();
        outbox.wake_on_close(&waker);
        outbox.push(msg("b")).unwrap();
        assert_eq!(wakes.0.load(std::sync::atomic::Ordering::Relaxed), 0, "the queue was not empty: no wake");
        outbox.close(Close::GOING_AWAY);
        assert_eq!(wakes.0.load(std::sync::atomic::Ordering::Relaxed), 1);
        let mut out = Vec::new();
        let mut cx = Context::from_waker(&waker);
        assert_eq!(outbox.poll_drain(&mut cx, &mut out), Poll::Ready(Drained::Closed(Close::GOING_AWAY)));
        assert_eq!(out.len(), 2, "what was queued before the close is still sent");
    }

    /// A client's socket as the shared writer sees it: counts its
    /// schedules; what it takes is up to the test.
    #[derive(Default)]
    struct Socket {
        scheduled: AtomicUsize,
        took: Mutex<Vec<String>>,
    }

    impl Direct for Socket {
        fn schedule(self: Arc<Self>) {
            self.scheduled.fetch_add(1, Ordering::Relaxed);
        }
    }

    impl Socket {
        /// Flushes `outbox` as the shared writer would, answering `sent`.
        fn flush(&self, outbox: &Outbox, sent: Sent) {
            outbox.flush_direct(|queued| {
                if sent != Sent::Nothing {
                    self.took.lock().extend(queued.iter().map(|p| p.as_text().unwrap().to_owned()));
                }
                sent
            });
        }
    }

    #[test]
    fn an_idle_writers_messages_go_to_the_shared_writer_until_the_socket_refuses_them() {
        let outbox = Outbox::new(1 << 20);
        let socket = Arc::new(Socket::default());
        let wakes = Arc::new(Wakes(0.into()));
        let waker = Waker::from(wakes.clone());
        let mut cx = Context::from_waker(&waker);
        let mut out = Vec::new();
        let offer = || Some(socket.clone() as Arc<dyn Direct>);
        let woken = || wakes.0.load(Ordering::Relaxed);
        let scheduled = || socket.scheduled.load(Ordering::Relaxed);
        let texts = |out: &mut Vec<Payload>| out.drain(..).map(|p| p.as_text().unwrap().to_owned()).collect::<Vec<_>>();

        assert!(outbox.poll_drain_direct(&mut cx, &mut out, offer).is_pending());
        outbox.push(msg("a")).unwrap();
        outbox.push(msg("b")).unwrap();
        assert_eq!((scheduled(), woken(), outbox.len()), (1, 0, 2), "scheduled once, the writer not woken");
        socket.flush(&outbox, Sent::Whole);
        assert_eq!(*socket.took.lock(), ["a", "b"]);
        assert_eq!((woken(), outbox.len()), (0, 0), "sent by the shared writer, in order");

        outbox.push(msg("c")).unwrap();
        assert_eq!(scheduled(), 2);
        socket.flush(&outbox, Sent::Nothing);
        outbox.push(msg("d")).unwrap();
        assert_eq!((scheduled(), woken(), outbox.len()), (2, 1, 2), "refused: left queued, the writer woken, and what follows queued behind");
        socket.flush(&outbox, Sent::Whole);
        assert_eq!(socket.took.lock().len(), 2, "a writer woken for its messages has them in hand: the shared writer sends none");
        assert_eq!(outbox.poll_drain_direct(&mut cx, &mut out, offer), Poll::Ready(Drained::Messages));
        assert_eq!(texts(&mut out), ["c", "d"]);

        assert!(outbox.poll_drain_direct(&mut cx, &mut out, offer).is_pending());
        outbox.push(msg("e")).unwrap();
        socket.flush(&outbox, Sent::Part);
        outbox.push(msg("f")).unwrap();
        assert_eq!(*socket.took.lock(), ["a", "b", "e"]);
        assert_eq!((scheduled(), woken(), outbox.len()), (3, 2, 1), "partly sent: the writer woken for the rest, and what follows queued for it");
        assert!(outbox.poll_drain(&mut cx, &mut out).is_ready());

        // A plain poll_drain leaves nothing to the shared writer.
        assert!(outbox.poll_drain(&mut cx, &mut out).is_pending());
        outbox.push(msg("g")).unwrap();
        assert_eq!((scheduled(), woken()), (3, 3));
    }

    #[test]
    fn a_close_or_a_writer_that_ends_lets_go_of_the_socket() {
        let waker = Waker::from(Arc::new(Wakes(0.into())));
        let mut cx = Context::from_waker(&waker);
        for end in [|o: &Outbox| o.close(Close::GOING_AWAY), |o: &Outbox| o.forget_direct()] {
            let outbox = Outbox::new(1 << 20);
            let socket = Arc::new(Socket::default());
            let mut out = Vec::new();
            assert!(outbox.poll_drain_direct(&mut cx, &mut out, || Some(socket.clone() as Arc<dyn Direct>)).is_pending());
            assert_eq!(Arc::strong_count(&socket), 2);
            end(&outbox);
            assert_eq!(Arc::strong_count(&socket), 1);
            let _ = outbox.push(msg("x"));
            socket.flush(&outbox, Sent::Whole);
            assert_eq!((socket.scheduled.load(Ordering::Relaxed), socket.took.lock().len()), (0, 0));
        }
    }

    #[tokio::test]
    async fn passing_the_bound_closes_as_slow_consumer_and_frees_the_queue() {
        let outbox = Outbox::new(3 * (PER_MESSAGE_COST + 1));
        for _ in 0..3 {
            outbox.push(msg("x")).unwrap();
        }
        assert_eq!(outbox.push(msg("x")), Err(PushError::Full));
        assert_eq!(outbox.len(), 0);
        assert_eq!(outbox.push(msg("x")), Err(PushError::Closed));
        let mut out = Vec::new();
        assert_eq!(outbox.drain(&mut out).await, Drained::Closed(Close::SLOW_CONSUMER));
        assert!(out.is_empty());
        assert!(outbox.closed().await.is_slow_consumer());
    }

    #[tokio::test]
    async fn a_message_larger_than_the_bound_still_fits_an_empty_queue() {
        let outbox = Outbox::new(10);
        outbox.push(Payload::new("x".repeat(100))).unwrap();
        assert_eq!(outbox.push(msg("y")), Err(PushError::Full));
    }

    #[tokio::test]
    async fn close_delivers_what_was_queued_first() {
        let outbox = Outbox::new(1 << 20);
        outbox.push(msg("last words")).unwrap();
        outbox.close(Close::GOING_AWAY);
        outbox.close(Close::new(4000, "second close loses"));
        let mut out = Vec::new();
        assert_eq!(outbox.drain(&mut out).await, Drained::Closed(Close::GOING_AWAY));
        assert_eq!(out.len(), 1);
    }

    #[tokio::test]
    async fn closed_wakes_every_waiter() {
        let outbox = std::sync::Arc::new(Outbox::new(1 << 20));
        let waiters: Vec<_> = (0..3)
            .map(|_| {
                let outbox = outbox.clone();
                tokio::spawn(async move { outbox.closed().await })
            })
            .collect();
        tokio::task::yield_now().await;
        outbox.close(Close::GOING_AWAY);
        for w in waiters {
            assert_eq!(w.await.unwrap(), Close::GOING_AWAY);
        }
    }

    #[test]
    fn a_writer_without_a_batch_takes_the_queues_room_and_order() {
        let outbox = Outbox::new(1 << 20);
        for text in ["a", "b", "c", "d", "e"] {
            outbox.push(msg(text)).unwrap();
        }
        // The queue's room wraps: its front was taken once.
        let mut kept = Vec::with_capacity(8);
        assert_eq!(outbox.try_drain(&mut kept), Some(Drained::Messages));
        for text in ["f", "g", "h", "i", "j", "k"] {
            outbox.push(msg(text)).unwrap();
        }
        let mut out = Vec::new();
        assert_eq!(outbox.try_drain(&mut out), Some(Drained::Messages));
        let texts: Vec<&str> = out.iter().filter_map(Payload::as_text).collect();
        assert_eq!(texts, ["f", "g", "h", "i", "j", "k"]);
        assert_eq!(outbox.state.lock().queue.capacity(), 0, "the queue holds no room once taken");
        // A writer that keeps its batch keeps its own room and leaves the queue its.
        outbox.push(msg("l")).unwrap();
        kept.clear();
        assert_eq!(outbox.try_drain(&mut kept), Some(Drained::Messages));
        assert_eq!(kept.iter().filter_map(Payload::as_text).collect::<Vec<_>>(), ["l"]);
        assert!(outbox.state.lock().queue.capacity() > 0);
    }
}

#[cfg(test)]
mod size {
    /// Every connection has an outbox, idle or not: with the reference
    /// counts of its `Arc`, it fits the allocator's 128-byte class (it was 152 bytes with the close unboxed).
    #[test]
    fn an_outbox_in_its_arc_fits_128_bytes() {
        let size = std::mem::size_of::<super::Outbox>() + 16;
        assert!(size <= 128, "an outbox in its Arc is {size} bytes");
    }
}
