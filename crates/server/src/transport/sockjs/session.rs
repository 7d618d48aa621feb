//! SockJS sessions: what outlives the HTTP requests that carry them.
//!
//! A session is an app client, its bounded outbox, and which request (if
//! any) is receiving its frames. Receiving requests come and go: one
//! attaches, takes frames, and detaches; between requests the outbox keeps
//! the app's messages in order (bounded, so a client that stops polling is
//! closed as a slow consumer and told so by a `c[1008,...]` frame). A
//! session with no receiving request for the mount's disconnect delay
//! expires: its reaper task removes it from the mount's [`Registry`] and
//! drops the app client, which leaves its rooms.
//!
//! Locks: a registry shard's lock may be taken before a session's state
//! lock, never the other way round, and neither is held across an await.

use std::collections::HashMap;
use std::pin::pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use hub::{Close, Drained, Outbox, Payload, Shards};
use parking_lot::Mutex;
use tokio::sync::Notify;
use tokio::time::Instant;
use tokio_tungstenite::tungstenite::Utf8Bytes;
use wire::sockjs::{HEARTBEAT, encode_close, encode_messages, quote};

use crate::apps::AppClient;
use crate::limits::Inflow;
use crate::metrics::ConnectionMetrics;
use crate::shutdown::Shutdown;
use crate::time::sleep_until_some;
use crate::token;

/// The close a session gets when its receiving request vanishes mid-way
/// (the client went away, or a proxy cut the request): what was in flight
/// may be lost, so the session cannot simply carry on.
pub fn interrupted() -> Close {
    Close::new(1002, "Connection interrupted")
}

/// The sessions of one mount, by session id, sharded so that requests for
/// different sessions rarely meet on a lock.
#[derive(Debug)]
pub struct Registry {
    sessions: Shards<HashMap<Arc<str>, Arc<Session>>>,
    /// Sessions held, and the most it may hold.
    count: AtomicUsize,
    max: usize,
}

impl Registry {
    /// An empty registry with `shards` independently locked shards (at least
    /// one), holding at most `max` sessions.
    pub fn new(shards: usize, max: usize) -> Registry {
        Registry { sessions: Shards::new(shards), count: AtomicUsize::new(0), max }
    }

    /// Whether the registry holds as many sessions as it may.
    pub fn is_full(&self) -> bool {
        self.count.load(Ordering::Relaxed) >= self.max
    }

    /// The most sessions it may hold.
    pub fn max(&self) -> usize {
        self.max
    }

    /// The live session `id`, if there is one.
    pub fn get(&self, id: &str) -> Option<Arc<Session>> {
        self.sessions.get(id).lock().get(id).cloned()
    }

    /// The session `id`, or a new one built by `open` if there is none; the
    /// flag says whether it is new. `None` when a new one is needed and the
    /// registry is full. `open` runs under the shard's lock, so it must only
    /// build (joining an app's rooms is fine: the hub never calls back).
    pub fn get_or_open(&self, id: &str, open: impl FnOnce(Arc<str>) -> Session) -> Option<(Arc<Session>, bool)> {
        let mut shard = self.sessions.get(id).lock();
        if let Some(session) = shard.get(id) {
            return Some((session.clone(), false));
        }
        // Reserved before building, so that racing opens cannot pass the bound.
        if self.count.fetch_update(Ordering::AcqRel, Ordering::Relaxed, |n| (n < self.max).then_some(n + 1)).is_err() {
            return None;
        }
        let id: Arc<str> = Arc::from(id);
        let session = Arc::new(open(id.clone()));
        shard.insert(id, session.clone());
        Some((session, true))
    }

    /// Removes `session` if it has had no receiving request for `delay`.
    /// Done under the shard's lock, so a lookup never returns a session that
    /// has already expired.
    fn expire_if_idle(&self, session: &Arc<Session>, delay: Duration) -> bool {
        self.forget(session, |state| state.receiver.is_none() && state.idle_since + delay <= Instant::now())
    }

    fn remove(&self, session: &Arc<Session>) {
        self.forget(session, |_| true);
    }

    /// Marks `session` expired and drops it from its shard if `expire`
    /// agrees, deciding under both locks (shard first, as everywhere).
    fn forget(&self, session: &Arc<Session>, expire: impl FnOnce(&State) -> bool) -> bool {
        let mut shard = self.sessions.get(&*session.id).lock();
        let mut state = session.state.lock();
        if !expire(&state) {
            return false;
        }
        state.expired = true;
        if shard.get(&session.id).is_some_and(|s| Arc::ptr_eq(s, session)) {
            shard.remove(&session.id);
            hub::shrink_when_sparse(&mut shard);
            self.count.fetch_sub(1, Ordering::AcqRel);
        }
        true
    }

    /// Number of live sessions.
    #[cfg(test)]
    pub fn len(&self) -> usize {
        let held = self.sessions.iter().map(|s| s.lock().len()).sum();
        assert_eq!(held, self.count.load(Ordering::Relaxed), "the count follows the map");
        held
    }
}

/// One SockJS session; see the module docs.
#[derive(Debug)]
pub struct Session {
    id: Arc<str>,
    outbox: Arc<Outbox>,
    /// `None` once the session is closed or expired: the app is done with it.
    app: Mutex<Option<AppClient>>,
    state: Mutex<State>,
    /// Signalled whenever a receiver attaches or detaches, for the reaper.
    changed: Notify,
    /// Counted as one connection for as long as the session lives.
    metrics: ConnectionMetrics,
    /// What the client may send a second, over all its send requests.
    inflow: Mutex<Inflow>,
    /// When the client's token expires, if it has one.
    expires: Option<Instant>,
}

#[derive(Debug)]
struct State {
    /// The token of the attached receiving request.
    receiver: Option<u64>,
    next_token: u64,
    /// Whether the open frame has been sent.
    opened: bool,
    /// When the last receiving request ended (or the session began).
    idle_since: Instant,
    /// Set once the session has left the registry.
    expired: bool,
}

/// What a receiving request gets when it asks for a session.
#[derive(Debug)]
pub enum Attach {
    /// It receives the session's frames.
    Receiver(Receiver),
    /// Another request is receiving: answer `c[2010,...]` and end.
    Busy,
    /// The session expired since it was looked up: look again.
    Expired,
}

impl Session {
    /// A session for `app`, whose outbox the session's frames come from.
    pub fn new(id: Arc<str>, app: AppClient, metrics: ConnectionMetrics, message_rate: u32, byte_rate: u32) -> Session {
        Session {
            id,
            outbox: app.outbox().clone(),
            expires: app.expires(),
            inflow: Mutex::new(Inflow::new(message_rate, byte_rate)),
            app: Mutex::new(Some(app)),
            state: Mutex::new(State {
                receiver: None,
                next_token: 0,
                opened: false,
                idle_since: Instant::now(),
                expired: false,
            }),
            changed: Notify::new(),
            metrics,
        }
    }

    /// The session's outbox.
    pub fn outbox(&self) -> &Arc<Outbox> {
        &self.outbox
    }

    /// Makes a receiving request this session's receiver. A closed session
    /// answers every request with its close frame (after anything still
    /// queued) and never counts as busy, so a client asking again learns
    /// why the session ended rather than "another connection still open".
    pub fn attach(self: &Arc<Session>) -> Attach {
        let mut state = self.state.lock();
        if state.expired {
            return Attach::Expired;
        }
        let closed = self.outbox.is_closed();
        if !closed && state.receiver.is_some() {
            return Attach::Busy;
        }
        let opening = !std::mem::replace(&mut state.opened, true);
        let token = if closed {
            None
        } else {
            let token = state.next_token;
            state.next_token += 1;
            state.receiver = Some(token);
            Some(token)
        };
        drop(state);
        self.changed.notify_waiters();
        Attach::Receiver(Receiver {
            session: self.clone(),
            token,
            opening,
            batch: Vec::new(),
            close: None,
            finished: false,
        })
    }

    /// Hands messages a client sent to the app, in order. A message over
    /// `max_message_size` closes the session with 1009, as over WebSocket.
    /// Messages to a closed session are dropped: nobody is listening.
    /// Returns when the client is back under its rate, if it is over: the
    /// send request is answered then, which holds the next one back.
    pub fn deliver(&self, messages: Vec<String>, max_message_size: usize) -> Option<Instant> {
        let count = messages.len();
        let bytes = messages.iter().map(String::len).sum();
        let mut app = self.app.lock();
        let app = app.as_mut()?;
        for message in messages {
            if message.len() > max_message_size {
                self.outbox.close(Close::new(1009, "message too big"));
                return None;
            }
            self.metrics.received(message.len());
            app.on_message(Utf8Bytes::from(message));
        }
        self.inflow.lock().charge(count, bytes)
    }

    /// When the session will expire if no request attaches; `None` while
    /// one is attached.
    fn idle_deadline(&self, delay: Duration) -> Option<Instant> {
        let state = self.state.lock();
        state.receiver.is_none().then_some(state.idle_since + delay)
    }
}

/// Runs for the life of a session: drops the app client as soon as the
/// session is closed (so a chat member leaves its room at once), expires
/// the session after `delay` without a receiving request, and closes it
/// with 1001 when the server shuts down.
pub async fn reap(registry: Arc<Registry>, session: Arc<Session>, delay: Duration, shutdown: Shutdown) {
    let mut app_open = true;
    loop {
        let mut changed = pin!(session.changed.notified());
        changed.as_mut().enable();
        let deadline = session.idle_deadline(delay);
        let expires = session.expires.filter(|_| app_open);
        tokio::select! {
            () = sleep_until_some(expires) => {
                session.outbox.close(token::EXPIRED);
            }
            () = changed => {}
            () = sleep_until_some(deadline) => {
                if registry.expire_if_idle(&session, delay) {
                    break;
                }
            }
            close = session.outbox.closed(), if app_open => {
                app_open = false;
                if close.is_slow_consumer() {
                    session.metrics.slow_consumer();
                }
                session.app.lock().take();
            }
            () = shutdown.wait() => {
                session.outbox.close(Close::GOING_AWAY);
                registry.remove(&session);
                break;
            }
        }
    }
    session.app.lock().take();
}

/// What [`Receiver::next`] produced.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// An `a[...]` frame.
    Messages,
    /// An `h` frame: nothing happened for a heartbeat interval.
    Heartbeat,
    /// A `c[code,"reason"]` frame: the session is closed; end the response.
    Close,
}

/// A request receiving a session's frames. Dropping it without
/// [`Receiver::finish`] means the request was cut off mid-way: the session
/// is then closed with 1002 "Connection interrupted".
#[derive(Debug)]
pub struct Receiver {
    session: Arc<Session>,
    /// `None` for a request on a closed session, which holds no slot.
    token: Option<u64>,
    opening: bool,
    batch: Vec<Payload>,
    /// A close to send after the messages just sent.
    close: Option<Close>,
    finished: bool,
}

impl Receiver {
    /// Whether the session is new and this request must send the open frame
    /// (`o`) first.
    pub fn opening(&self) -> bool {
        self.opening
    }

    /// Waits for the session's next frame and appends it, unwrapped, to
    /// `out`: every message queued (one `a[...]`), else the close, else a
    /// heartbeat once `heartbeat` has passed with nothing to send. Cancel-safe
    /// until it returns: nothing is taken from the outbox before then.
    pub async fn next(&mut self, heartbeat: Duration, out: &mut Vec<u8>) -> Step {
        if let Some(close) = self.close.take() {
            encode_close(close.code, &close.reason, out);
            return Step::Close;
        }
        let outbox = self.session.outbox.clone();
        let sleep = tokio::time::sleep(heartbeat);
        let mut sleep = pin!(sleep);
        loop {
            let drained = tokio::select! {
                drained = outbox.drain(&mut self.batch) => drained,
                () = sleep.as_mut() => {
                    out.extend_from_slice(HEARTBEAT);
                    return Step::Heartbeat;
                }
            };
            let close = match drained {
                Drained::Messages => None,
                Drained::Closed(close) => Some(close),
            };
            if !self.batch.is_empty() {
                encode_messages(self.batch.iter().map(|p| p.sockjs_json(quote)), out);
                let bytes = self.batch.iter().map(Payload::len).sum();
                self.session.metrics.sent(self.batch.len(), bytes);
                self.batch.clear();
                self.close = close;
                return Step::Messages;
            }
            if let Some(close) = close {
                encode_close(close.code, &close.reason, out);
                return Step::Close;
            }
        }
    }

    /// Ends the request normally: the session's disconnect delay starts.
    pub fn finish(mut self) {
        self.finished = true;
    }
}

impl Drop for Receiver {
    fn drop(&mut self) {
        if !self.finished {
            self.session.outbox.close(interrupted());
        }
        let mut state = self.session.state.lock();
        if self.token.is_some() && state.receiver == self.token {
            state.receiver = None;
        }
        if state.receiver.is_none() {
            state.idle_since = Instant::now();
        }
        drop(state);
        self.session.changed.notify_waiters();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::apps::{App, AppKind};
    use crate::metrics::Metrics;

    fn session(kind: AppKind) -> Arc<Session> {
        let app = Arc::new(App::in_memory(kind, hub::RoomLimits::NONE));
        let metrics = Metrics::default();
        let outbox = Arc::new(Outbox::new(1 << 20));
        Arc::new(Session::new(Arc::from("s"), app.open(outbox, None), metrics.connection("echo", "xhr"), 100, 1 << 20))
    }

    fn receiver(session: &Arc<Session>) -> Receiver {
        match session.attach() {
            Attach::Receiver(r) => r,
            other => panic!("expected a receiver, got {other:?}"),
        }
    }

    #[tokio::test]
    async fn one_receiver_at_a_time_and_open_only_once() {
        let s = session(AppKind::Echo);
        let first = receiver(&s);
        assert!(first.opening());
        assert!(matches!(s.attach(), Attach::Busy));
        first.finish();
        let second = receiver(&s);
        assert!(!second.opening());
        second.finish();
    }

    #[tokio::test]
    async fn messages_then_close_then_close_again() {
        let s = session(AppKind::Echo);
        s.deliver(vec!["a".into(), "b\u{2028}".into()], 100);
        s.outbox().close(Close::new(3000, "Go away!"));
        let mut r = receiver(&s);
        let mut out = Vec::new();
        assert_eq!(r.next(Duration::from_secs(60), &mut out).await, Step::Messages);
        assert_eq!(out, br#"a["a","b\u2028"]"#);
        out.clear();
        assert_eq!(r.next(Duration::from_secs(60), &mut out).await, Step::Close);
        assert_eq!(out, br#"c[3000,"Go away!"]"#);
        r.finish();
        // A closed session never answers busy, and repeats its close.
        let mut again = receiver(&s);
        let _other = receiver(&s);
        out.clear();
        assert_eq!(again.next(Duration::from_secs(60), &mut out).await, Step::Close);
        assert_eq!(out, br#"c[3000,"Go away!"]"#);
    }

    #[tokio::test(start_paused = true)]
    async fn heartbeat_when_idle() {
        let s = session(AppKind::Echo);
        let mut r = receiver(&s);
        let mut out = Vec::new();
        assert_eq!(r.next(Duration::from_secs(25), &mut out).await, Step::Heartbeat);
        assert_eq!(out, b"h");
        r.finish();
    }

    #[tokio::test]
    async fn a_dropped_receiver_interrupts_the_session() {
        let s = session(AppKind::Echo);
        drop(receiver(&s));
        assert_eq!(s.outbox().close_reason(), Some(interrupted()));
    }

    #[tokio::test]
    async fn oversized_messages_close_with_1009() {
        let s = session(AppKind::Echo);
        s.deliver(vec!["ok".into(), "x".repeat(11), "never".into()], 10);
        assert_eq!(s.outbox().close_reason().map(|c| c.code), Some(1009));
        assert_eq!(s.outbox().len(), 1);
    }

    #[tokio::test(start_paused = true)]
    async fn the_reaper_expires_an_idle_session_and_keeps_a_busy_one() {
        let registry = Arc::new(Registry::new(4, 2));
        let app = Arc::new(App::in_memory(AppKind::Echo, hub::RoomLimits::NONE));
        let metrics = Metrics::default();
        let open = |id| Session::new(id, app.open(Arc::new(Outbox::new(1 << 20)), None), metrics.connection("echo", "xhr"), 100, 1 << 20);
        let (s, created) = registry.get_or_open("abc", open).unwrap();
        assert!(created);
        assert!(!registry.get_or_open("abc", open).unwrap().1);
        // The registry holds two at most.
        assert!(registry.get_or_open("def", open).is_some());
        assert!(registry.is_full());
        assert!(registry.get_or_open("ghi", open).is_none());
        let delay = Duration::from_secs(5);
        let reaper = tokio::spawn(reap(registry.clone(), s.clone(), delay, Shutdown::default()));
        let r = receiver(&s);
        tokio::time::sleep(delay * 3).await;
        assert_eq!(registry.len(), 2, "a session with a receiver never expires");
        r.finish();
        tokio::time::sleep(delay / 2).await;
        assert!(registry.get("abc").is_some());
        reaper.await.unwrap();
        assert!(registry.get("abc").is_none());
        assert_eq!(registry.len(), 1);
        assert!(!registry.is_full());
        assert!(matches!(s.attach(), Attach::Expired));
        assert!(s.app.lock().is_none());
    }
}
