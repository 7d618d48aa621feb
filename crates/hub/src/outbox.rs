//! A session's bounded outbound queue.
//!
//! Publishers push without waiting; the session's writer takes everything
//! queued at once and sends it in one write. The queue is bounded in bytes:
//! a push that would pass the bound closes the session as a slow consumer
//! and frees what was queued, so a client that stops reading cannot grow the
//! server's memory, and the publisher is never slowed by it.

use std::borrow::Cow;
use std::collections::VecDeque;
use std::future::poll_fn;
use std::pin::pin;
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

/// A session's bounded outbound queue; see the module docs.
#[derive(Debug)]
pub struct Outbox {
    state: Mutex<State>,
    /// Wakes everyone waiting in [`Outbox::closed`].
    closing: Notify,
    limit: usize,
}

#[derive(Debug, Default)]
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
}

impl Outbox {
    /// A queue that holds at most `limit_bytes` of messages (text length plus
    /// a small fixed cost each). A single message larger than the bound is
    /// still accepted into an empty queue, so every message can be sent.
    pub fn new(limit_bytes: usize) -> Outbox {
        Outbox {
            state: Mutex::new(State::default()),
            closing: Notify::new(),
            limit: limit_bytes,
        }
    }

    /// Queues a message for the writer. Never waits.
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
            state.close = Some(Box::new(Close::SLOW_CONSUMER));
            let writer = state.writer.take();
            drop(state);
            self.wake_closed(writer);
            return Err(PushError::Full);
        }
        let writer = if state.queue.is_empty() { state.writer.take() } else { None };
        state.queue.push_back(payload);
        state.cost += cost;
        drop(state);
        if let Some(writer) = writer {
            writer.wake();
        }
        Ok(())
    }

    /// Closes the session: later pushes are refused, and the writer gets
    /// what was queued before, then the close. The first close wins.
    pub fn close(&self, close: Close) {
        let mut state = self.state.lock();
        if state.close.is_none() {
            state.close = Some(Box::new(close));
            let writer = state.writer.take();
            drop(state);
            self.wake_closed(writer);
        }
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
        let mut state = self.state.lock();
        match Self::take(&mut state, out) {
            Some(drained) => Poll::Ready(drained),
            None => {
                Self::keep(&mut state, cx.waker());
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
        loop {
            let mut notified = pin!(self.closing.notified());
            notified.as_mut().enable();
            if let Some(close) = self.close_reason() {
                return close;
            }
            notified.await;
        }
    }

    fn wake_closed(&self, writer: Option<Waker>) {
        if let Some(writer) = writer {
            writer.wake();
        }
        self.closing.notify_waiters();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
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
