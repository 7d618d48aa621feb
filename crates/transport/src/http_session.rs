//! HTTP sessions, which outlive the HTTP requests that carry them: SockJS's
//! polling and streaming transports, and BOSH.
//!
//! A session is an app client, its bounded outbox, which request (if any)
//! is receiving its messages, and what its transport keeps about it (`X`:
//! nothing for SockJS, the request window for BOSH). Receiving requests
//! come and go: one attaches, takes messages, and detaches; between
//! requests the outbox keeps the app's messages in order (bounded, so a
//! client that stops polling is closed as a slow consumer and told so). A
//! session with no receiving request for its idle delay (SockJS's
//! disconnect delay, BOSH's inactivity) expires: its reaper task removes it
//! from its [`Registry`] and drops the app client, which leaves its rooms.
//!
//! One request receives at a time. SockJS answers a second with "another
//! connection still open"; BOSH's `hold` has the newer one take over, and
//! the older is answered at once ([`Step::Displaced`]).
//!
//! Locks: a registry shard's lock may be taken before a session's state
//! lock, never the other way round, and neither is held across an await.

use std::collections::HashMap;
use std::net::IpAddr;
use std::pin::pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use hub::{Close, Drained, Outbox, Payload, Shards};
use parking_lot::Mutex;
use tokio::sync::Notify;
use tokio::time::Instant;
use tokio_tungstenite::tungstenite::Utf8Bytes;

use crate::Client;
use base::limits::Inflow;
use base::metrics::ClientMetrics;
use base::shutdown::Shutdown;
use base::time::sleep_until_some;
use base::token;

/// The close a session gets when its receiving request vanishes mid-way
/// (the client went away, or a proxy cut the request): what was in flight
/// may be lost, so the session cannot simply carry on.
pub fn interrupted() -> Close {
    Close::new(1002, "Connection interrupted")
}

/// The sessions of one mount (or of BOSH), by session id, sharded so that
/// requests for different sessions rarely meet on a lock.
#[derive(Debug)]
pub struct Registry<X = ()> {
    sessions: Shards<HashMap<Arc<str>, Arc<HttpSession<X>>>>,
    /// Sessions held, and the most it may hold.
    count: AtomicUsize,
    max: usize,
    /// Sessions each client address holds, and the most one may hold
    /// (at least `max`: no share of its own).
    by_address: Mutex<HashMap<IpAddr, usize>>,
    per_address: usize,
}

/// Why a registry opens no new session.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// It holds as many as it may.
    Full,
    /// The client's address holds its share.
    AddressFull,
}

impl<X> Registry<X> {
    /// An empty registry with `shards` independently locked shards (at least
    /// one), holding at most `max` sessions.
    pub fn new(shards: usize, max: usize) -> Registry<X> {
        Registry { sessions: Shards::new(shards), count: AtomicUsize::new(0), max, by_address: Mutex::default(), per_address: max }
    }

    /// The same, with each client address holding at most `per_address`.
    pub fn shared(self, per_address: usize) -> Registry<X> {
        Registry { per_address, ..self }
    }

    /// Counts one more session for `address`, if its share allows it.
    fn reserve_for(&self, address: IpAddr) -> bool {
        if self.per_address >= self.max {
            return true;
        }
        let mut held = self.by_address.lock();
        let n = held.entry(address).or_default();
        if *n >= self.per_address {
            return false;
        }
        *n += 1;
        true
    }

    fn release_for(&self, address: IpAddr) {
        if self.per_address >= self.max {
            return;
        }
        let mut held = self.by_address.lock();
        if let Some(n) = held.get_mut(&address) {
            *n -= 1;
            if *n == 0 {
                held.remove(&address);
                hub::shrink_when_sparse(&mut held);
            }
        }
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
    pub fn get(&self, id: &str) -> Option<Arc<HttpSession<X>>> {
        self.sessions.get(id).lock().get(id).cloned()
    }

    /// The session `id`, or a new one for a client at `address` built by
    /// `open` if there is none; the flag says whether it is new. A new one
    /// is refused when the registry is full or the address holds its share.
    /// `open` runs under the shard's lock, so it must only build (joining an
    /// app's rooms is fine: the hub never calls back).
    pub fn get_or_open(&self, id: &str, address: IpAddr, open: impl FnOnce(Arc<str>) -> HttpSession<X>) -> Result<(Arc<HttpSession<X>>, bool), Refusal> {
        let mut shard = self.sessions.get(id).lock();
        if let Some(session) = shard.get(id) {
            return Ok((session.clone(), false));
        }
        // Reserved before building, so that racing opens cannot pass the bound.
        if self.count.fetch_update(Ordering::AcqRel, Ordering::Relaxed, |n| (n < self.max).then_some(n + 1)).is_err() {
            return Err(Refusal::Full);
        }
        if !self.reserve_for(address) {
            self.count.fetch_sub(1, Ordering::AcqRel);
            return Err(Refusal::AddressFull);
        }
        let id: Arc<str> = Arc::from(id);
        let mut session = open(id.clone());
        session.address = address;
        let session = Arc::new(session);
        shard.insert(id, session.clone());
        Ok((session, true))
    }

    /// Removes `session` if it has had no receiving request for `delay`.
    /// Done under the shard's lock, so a lookup never returns a session that
    /// has already expired.
    fn expire_if_idle(&self, session: &Arc<HttpSession<X>>, delay: Duration) -> bool {
        self.forget(session, |state| state.receiver.is_none() && state.idle_since + delay <= Instant::now())
    }

    /// Removes `session` at once (a BOSH client ended it).
    pub fn remove(&self, session: &Arc<HttpSession<X>>) {
        self.forget(session, |_| true);
    }

    /// Marks `session` expired and drops it from its shard if `expire`
    /// agrees, deciding under both locks (shard first, as everywhere).
    fn forget(&self, session: &Arc<HttpSession<X>>, expire: impl FnOnce(&State) -> bool) -> bool {
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
            self.release_for(session.address);
        }
        true
    }

    /// Number of live sessions.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        let held = self.sessions.iter().map(|s| s.lock().len()).sum();
        assert_eq!(held, self.count.load(Ordering::Relaxed), "the count follows the map");
        held
    }
}

/// One HTTP session; see the module docs.
#[derive(Debug)]
pub struct HttpSession<X = ()> {
    id: Arc<str>,
    outbox: Arc<Outbox>,
    /// The protocol's client; `None` once the session is closed or expired:
    /// the protocol is done with it.
    app: Mutex<Option<Box<dyn Client>>>,
    state: Mutex<State>,
    /// Signalled whenever a receiver attaches or detaches, for the reaper.
    changed: Notify,
    /// Counted as one connection for as long as the session lives.
    metrics: ClientMetrics,
    /// What the client may send a second, over all its send requests.
    inflow: Mutex<Inflow>,
    /// When the client's token expires, if it has one.
    expires: Option<Instant>,
    /// What the transport keeps about the session.
    pub transport: X,
    /// Where the client connects from, once its registry holds it.
    address: IpAddr,
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
pub enum Attach<X = ()> {
    /// It receives the session's messages.
    Receiver(Receiver<X>),
    /// Another request is receiving: answer `c[2010,...]` and end.
    Busy,
    /// The session expired since it was looked up: look again.
    Expired,
}

impl<X> HttpSession<X> {
    /// A session for `app`, whose outbox the session's messages come from,
    /// held to `inflow`, with what its transport keeps about it.
    pub fn new(id: Arc<str>, app: impl Client, metrics: ClientMetrics, inflow: Inflow, transport: X) -> HttpSession<X> {
        HttpSession {
            id,
            outbox: app.outbox().clone(),
            expires: app.expires(),
            inflow: Mutex::new(inflow),
            app: Mutex::new(Some(Box::new(app))),
            state: Mutex::new(State {
                receiver: None,
                next_token: 0,
                opened: false,
                idle_since: Instant::now(),
                expired: false,
            }),
            changed: Notify::new(),
            metrics,
            transport,
            address: std::net::Ipv4Addr::UNSPECIFIED.into(),
        }
    }

    /// The session's id.
    pub fn id(&self) -> &Arc<str> {
        &self.id
    }

    /// The session's outbox.
    pub fn outbox(&self) -> &Arc<Outbox> {
        &self.outbox
    }

    /// Makes a receiving request this session's receiver; if another one
    /// is receiving, it is `Busy`, or with `take_over` the older one is
    /// displaced. A closed session answers every request with its close
    /// (after anything still queued) and never counts as busy, so a client
    /// asking again learns why the session ended rather than "another
    /// connection still open".
    pub fn attach(self: &Arc<HttpSession<X>>, take_over: bool) -> Attach<X> {
        let mut state = self.state.lock();
        if state.expired {
            return Attach::Expired;
        }
        let closed = self.outbox.is_closed();
        if !closed && state.receiver.is_some() && !take_over {
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
pub async fn reap<X>(registry: Arc<Registry<X>>, session: Arc<HttpSession<X>>, delay: Duration, shutdown: Shutdown) {
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
#[derive(Debug)]
pub enum Step<'a> {
    /// Every message queued, in order.
    Messages(&'a [Payload]),
    /// Nothing happened for the idle interval (SockJS's heartbeat, BOSH's
    /// `wait`).
    Idle,
    /// The session is closed: end the response.
    Close(Close),
    /// A newer request took over as the receiver: answer at once.
    Displaced,
}

/// A request receiving a session's messages. Dropping it without
/// [`Receiver::finish`] means the request was cut off mid-way: the session
/// is then closed with 1002 "Connection interrupted".
#[derive(Debug)]
pub struct Receiver<X = ()> {
    session: Arc<HttpSession<X>>,
    /// `None` for a request on a closed session, which holds no slot.
    token: Option<u64>,
    opening: bool,
    batch: Vec<Payload>,
    /// A close to report after the messages just taken.
    close: Option<Close>,
    finished: bool,
}

impl<X> Receiver<X> {
    /// Whether the session is new and this request is its first (SockJS
    /// sends the open frame `o` then).
    pub fn opening(&self) -> bool {
        self.opening
    }

    /// Waits for the session's next step: every message queued, else the
    /// close, else `Idle` once `idle` has passed with nothing to send, or
    /// `Displaced` as soon as a newer request takes over. Cancel-safe until
    /// it returns: nothing is taken from the outbox before then.
    pub async fn next(&mut self, idle: Duration) -> Step<'_> {
        self.batch.clear();
        if let Some(close) = self.close.take() {
            return Step::Close(close);
        }
        let outbox = self.session.outbox.clone();
        let sleep = tokio::time::sleep(idle);
        let mut sleep = pin!(sleep);
        loop {
            let mut changed = pin!(self.session.changed.notified());
            changed.as_mut().enable();
            if self.token.is_some() && self.session.state.lock().receiver != self.token {
                return Step::Displaced;
            }
            let drained = tokio::select! {
                // What is queued goes first, even when the time is up.
                biased;
                drained = outbox.drain(&mut self.batch) => drained,
                () = &mut changed => continue,
                () = sleep.as_mut() => return Step::Idle,
            };
            let close = match drained {
                Drained::Messages => None,
                Drained::Closed(close) => Some(close),
            };
            if !self.batch.is_empty() {
                let bytes = self.batch.iter().map(Payload::len).sum();
                self.session.metrics.sent(self.batch.len(), bytes);
                self.close = close;
                return Step::Messages(&self.batch);
            }
            if let Some(close) = close {
                return Step::Close(close);
            }
        }
    }

    /// The close that came with the messages [`Receiver::next`] just
    /// returned, if the session closed meanwhile (else the next call
    /// returns it).
    pub fn take_close(&mut self) -> Option<Close> {
        self.close.take()
    }

    /// Ends the request normally: the session's idle delay starts.
    pub fn finish(mut self) {
        self.finished = true;
    }
}

impl<X> Drop for Receiver<X> {
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
    use crate::Protocol;
    use crate::testing::Echo;
    use base::metrics::Metrics;

    fn session() -> Arc<HttpSession> {
        let app = Arc::new(Echo);
        let metrics = Metrics::default();
        let outbox = Arc::new(Outbox::new(1 << 20));
        Arc::new(HttpSession::new(Arc::from("s"), app.open(outbox, None, std::net::Ipv4Addr::LOCALHOST.into()), metrics.client("echo", "xhr"), Inflow::new(100, 1 << 20), ()))
    }

    fn receiver(session: &Arc<HttpSession>, take_over: bool) -> Receiver {
        match session.attach(take_over) {
            Attach::Receiver(r) => r,
            other => panic!("expected a receiver, got {other:?}"),
        }
    }

    fn texts(step: Step<'_>) -> Vec<String> {
        match step {
            Step::Messages(batch) => batch.iter().map(|p| p.as_text().unwrap().to_owned()).collect(),
            other => panic!("expected messages, got {other:?}"),
        }
    }

    #[tokio::test]
    async fn one_receiver_at_a_time_and_open_only_once() {
        let s = session();
        let first = receiver(&s, false);
        assert!(first.opening());
        assert!(matches!(s.attach(false), Attach::Busy));
        first.finish();
        let second = receiver(&s, false);
        assert!(!second.opening());
        second.finish();
    }

    #[tokio::test(start_paused = true)]
    async fn a_newer_receiver_takes_over_and_the_older_is_answered_at_once() {
        let s = session();
        let mut held = receiver(&s, true);
        let mut newer = receiver(&s, true);
        assert!(matches!(held.next(Duration::from_secs(60)).await, Step::Displaced));
        held.finish();
        assert_eq!(s.outbox().close_reason(), None, "a displaced request does not end the session");
        s.deliver(vec!["a".into()], 100);
        assert_eq!(texts(newer.next(Duration::from_secs(60)).await), ["a"]);
        newer.finish();
    }

    #[tokio::test]
    async fn messages_then_close_then_close_again() {
        let s = session();
        s.deliver(vec!["a".into(), "b".into()], 100);
        s.outbox().close(Close::new(3000, "Go away!"));
        let mut r = receiver(&s, false);
        assert_eq!(texts(r.next(Duration::from_secs(60)).await), ["a", "b"]);
        assert!(matches!(r.next(Duration::from_secs(60)).await, Step::Close(c) if c == Close::new(3000, "Go away!")));
        r.finish();
        // A closed session never answers busy, and repeats its close.
        let mut again = receiver(&s, false);
        let _other = receiver(&s, false);
        assert!(matches!(again.next(Duration::from_secs(60)).await, Step::Close(c) if c == Close::new(3000, "Go away!")));
    }

    #[tokio::test]
    async fn the_close_that_came_with_the_messages_can_be_taken_with_them() {
        let s = session();
        s.deliver(vec!["a".into()], 100);
        s.outbox().close(Close::new(1000, "done"));
        let mut r = receiver(&s, false);
        assert_eq!(texts(r.next(Duration::from_secs(60)).await), ["a"]);
        assert_eq!(r.take_close(), Some(Close::new(1000, "done")));
        r.finish();
    }

    #[tokio::test(start_paused = true)]
    async fn idle_when_nothing_happens() {
        let s = session();
        let mut r = receiver(&s, false);
        assert!(matches!(r.next(Duration::from_secs(25)).await, Step::Idle));
        r.finish();
    }

    #[tokio::test]
    async fn what_is_queued_goes_even_when_no_wait_is_allowed() {
        let s = session();
        s.deliver(vec!["a".into()], 100);
        let mut r = receiver(&s, false);
        assert_eq!(texts(r.next(Duration::ZERO).await), ["a"]);
        assert!(matches!(r.next(Duration::ZERO).await, Step::Idle));
        r.finish();
    }

    #[tokio::test]
    async fn a_dropped_receiver_interrupts_the_session() {
        let s = session();
        drop(receiver(&s, false));
        assert_eq!(s.outbox().close_reason(), Some(interrupted()));
    }

    #[tokio::test]
    async fn oversized_messages_close_with_1009() {
        let s = session();
        s.deliver(vec!["ok".into(), "x".repeat(11), "never".into()], 10);
        assert_eq!(s.outbox().close_reason().map(|c| c.code), Some(1009));
        assert_eq!(s.outbox().len(), 1);
    }

    #[tokio::test(start_paused = true)]
    async fn each_address_holds_at_most_its_share_and_gets_it_back() {
        let registry = Registry::new(4, 10).shared(2);
        let app = Arc::new(Echo);
        let metrics = Metrics::default();
        let (a, b) = ([127, 0, 0, 1].into(), [127, 0, 0, 2].into());
        let open = |id| HttpSession::new(id, app.open(Arc::new(Outbox::new(1 << 20)), None, a), metrics.client("echo", "xhr"), Inflow::new(100, 1 << 20), ());
        let (first, _) = registry.get_or_open("a1", a, open).unwrap();
        registry.get_or_open("a2", a, open).unwrap();
        assert_eq!(registry.get_or_open("a3", a, open).err(), Some(Refusal::AddressFull));
        assert!(registry.get_or_open("b1", b, open).is_ok(), "another address has its own share");
        assert_eq!(registry.len(), 3, "a refused session is not counted");
        registry.remove(&first);
        assert!(registry.get_or_open("a3", a, open).is_ok(), "a session that ends gives its place back");
        assert_eq!(registry.by_address.lock().get(&a), Some(&2));
    }

    #[tokio::test(start_paused = true)]
    async fn the_reaper_expires_an_idle_session_and_keeps_a_busy_one() {
        let registry = Arc::new(Registry::new(4, 2));
        let app = Arc::new(Echo);
        let metrics = Metrics::default();
        let open = |id| HttpSession::new(id, app.open(Arc::new(Outbox::new(1 << 20)), None, std::net::Ipv4Addr::LOCALHOST.into()), metrics.client("echo", "xhr"), Inflow::new(100, 1 << 20), ());
        let here = std::net::Ipv4Addr::LOCALHOST.into();
        let (s, created) = registry.get_or_open("abc", here, open).unwrap();
        assert!(created);
        assert!(!registry.get_or_open("abc", here, open).unwrap().1);
        // The registry holds two at most.
        assert!(registry.get_or_open("def", here, open).is_ok());
        assert!(registry.is_full());
        assert_eq!(registry.get_or_open("ghi", here, open).err(), Some(Refusal::Full));
        let delay = Duration::from_secs(5);
        let reaper = tokio::spawn(reap(registry.clone(), s.clone(), delay, Shutdown::default()));
        let r = receiver(&s, false);
        tokio::time::sleep(delay * 3).await;
        assert_eq!(registry.len(), 2, "a session with a receiver never expires");
        r.finish();
        tokio::time::sleep(delay / 2).await;
        assert!(registry.get("abc").is_some());
        reaper.await.unwrap();
        assert!(registry.get("abc").is_none());
        assert_eq!(registry.len(), 1);
        assert!(!registry.is_full());
        assert!(matches!(s.attach(false), Attach::Expired));
        assert!(s.app.lock().is_none());
    }
}
