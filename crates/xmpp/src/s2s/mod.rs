//! Federation: XMPP between servers (RFC 6120 over `jabber:server`), the
//! router's remote arm. A stanza to a domain this server does not serve
//! goes into that domain's queue (`Peer`), bounded in bytes, which one
//! stream drains: one this server opens (`outgoing`: found by `resolve`,
//! secured with TLS, authenticated with SASL EXTERNAL on certificates
//! (`identity`) or dialback (`dialback`)), or one the other server opened
//! both ways (XEP-0288). Streams other servers open here (`incoming`) are
//! authenticated the same way; `carry` drives a stream either way, with
//! stream management's acknowledgements, and what streams bring is
//! delivered here (`inbound`, `guests` for the rooms). A domain that
//! cannot be reached sends its senders `remote-server-not-found` or
//! `remote-server-timeout`: nothing waiting for it is dropped without a
//! word.

mod carry;
mod dialback;
mod guests;
mod identity;
mod inbound;
mod incoming;
mod outgoing;
mod resolve;
mod wire_stream;
mod zero;

use std::collections::{HashMap, VecDeque};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use tokio::sync::{Notify, Semaphore};
use wire::xmpp::Element;

use super::{Jid, Xmpp, ns};

pub use dialback::DialbackPolicy;
pub use identity::Identity;
pub(crate) use guests::Guests;
pub use incoming::serve;
pub use zero::{ZeroPeer, fingerprint, parse_pin, serve as serve_zero};

/// Where a domain's server is, given in the configuration: its address,
/// and whether it takes TLS from the first byte there (XEP-0368, as an
/// `_xmpps-server` SRV record would say) rather than STARTTLS.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Route {
    pub address: SocketAddr,
    pub direct_tls: bool,
}

impl From<SocketAddr> for Route {
    /// STARTTLS at `address`.
    fn from(address: SocketAddr) -> Route {
        Route { address, direct_tls: false }
    }
}

impl std::str::FromStr for Route {
    type Err = String;

    /// `127.0.0.3:5269` (STARTTLS), or `tls:127.0.0.3:5270` (direct TLS).
    fn from_str(text: &str) -> Result<Route, String> {
        let text = text.trim();
        let (direct_tls, address) = match text.strip_prefix("tls:") {
            Some(address) => (true, address),
            None => (false, text),
        };
        let address = address.parse().map_err(|_| format!("{text:?} is not an address like 127.0.0.3:5269 or tls:127.0.0.3:5270"))?;
        Ok(Route { address, direct_tls })
    }
}

impl std::fmt::Display for Route {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.direct_tls { write!(f, "tls:{}", self.address) } else { write!(f, "{}", self.address) }
    }
}

/// How this server federates: the parts of the configuration that are
/// federation's.
#[derive(Clone)]
pub struct Settings {
    /// Where each domain's servers are, when DNS is not to be asked
    /// (`--xmpp-s2s-routes`).
    pub routes: HashMap<String, Route>,
    /// The name server to ask instead of the system's (`--xmpp-s2s-dns`).
    pub dns: Option<SocketAddr>,
    /// How long a stream to another server may take to be ready, from the
    /// first connection attempt to its authentication (`--xmpp-s2s-connect-timeout`).
    pub connect_timeout: Duration,
    /// Bytes of stanzas waiting for one domain at most (`--xmpp-s2s-queue`).
    pub queue_bytes: usize,
    /// How long a stream that carries nothing stays open (`--xmpp-s2s-idle-timeout`).
    pub idle_timeout: Duration,
    /// Most streams between servers at once, both ways (`--xmpp-s2s-max-streams`).
    pub max_streams: usize,
    /// Most users of other servers in the rooms here at once (`--xmpp-s2s-max-guests`).
    pub max_guests: usize,
    /// Most streams one other domain may have open to this server
    /// (`--xmpp-s2s-max-streams-per-domain`).
    pub max_streams_per_domain: usize,
    /// Which domains may authenticate with dialback (`--xmpp-s2s-dialback`).
    pub dialback: DialbackPolicy,
    /// What this server's dialback keys are derived from
    /// (`--xmpp-s2s-secret`); none, a random one.
    pub secret: Option<String>,
    /// Peers configured in advance for zero-handshake streams
    /// (`[[xmpp_s2s_peer]]`, XEP-0361).
    pub zero: Vec<ZeroPeer>,
}

impl std::fmt::Debug for Settings {
    // Without the secret.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Settings").field("routes", &self.routes).field("dialback", &self.dialback).finish_non_exhaustive()
    }
}

/// What the server federates with: its settings, its TLS identity, and
/// the queues of the domains it sends to.
pub struct Federation {
    settings: Settings,
    identity: Identity,
    /// The dialback keys this server gives and checks.
    keys: dialback::Keys,
    /// Which domains may authenticate with dialback.
    dialback: DialbackPolicy,
    /// How other domains' servers are found.
    resolver: resolve::Resolver,
    /// The queue of each (local domain, remote domain) pair a stream goes
    /// between: one outgoing stream each.
    peers: Mutex<HashMap<(String, String), Arc<Peer>>>,
    /// One per stream between servers, either way.
    streams: Arc<Semaphore>,
    /// Streams each other domain has open to this server, authenticated.
    from_domain: Arc<Mutex<HashMap<String, usize>>>,
    /// Domains refused for want of authentication, logged the first time
    /// (at most `REFUSED_LOGGED` of them are remembered).
    refused: Mutex<std::collections::HashSet<String>>,
    /// Stream management across connections with each zero-handshake
    /// peer, in the order of `settings.zero`.
    continuity: Vec<zero::Continuity>,
}

/// Refused domains remembered so as to log each once.
const REFUSED_LOGGED: usize = 1024;

impl std::fmt::Debug for Federation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Federation").field("routes", &self.settings.routes).field("dialback", &self.dialback).finish_non_exhaustive()
    }
}

impl Federation {
    pub fn new(settings: Settings, identity: Identity) -> Federation {
        Federation {
            keys: dialback::Keys::new(&settings.secret.clone().unwrap_or_else(|| format!("{:032x}", rand::random::<u128>()))),
            dialback: settings.dialback.clone(),
            resolver: resolve::Resolver::new(settings.dns),
            streams: Arc::new(Semaphore::new(settings.max_streams)),
            continuity: settings.zero.iter().map(|_| zero::Continuity::default()).collect(),
            settings,
            identity,
            peers: Mutex::new(HashMap::new()),
            refused: Mutex::default(),
            from_domain: Arc::default(),
        }
    }

    /// Counts a stream from `domain` open until the guard is dropped;
    /// `None` if `domain` already has `--xmpp-s2s-max-streams-per-domain`.
    fn stream_from(&self, domain: &str) -> Option<DomainStream> {
        let mut open = self.from_domain.lock();
        let count = open.entry(domain.to_owned()).or_default();
        if *count >= self.settings.max_streams_per_domain {
            return None;
        }
        *count += 1;
        Some(DomainStream { open: self.from_domain.clone(), domain: domain.to_owned() })
    }

    /// Notes that `domain` was refused for `why`, logged the first time.
    fn refused(&self, domain: &str, why: &str) {
        let mut refused = self.refused.lock();
        if refused.len() < REFUSED_LOGGED && refused.insert(domain.to_owned()) {
            tracing::warn!("xmpp: a stream from {domain:?} refused: {why} (logged once per domain)");
        }
    }

    /// The zero-handshake peer serving `domain`, with its continuity.
    fn zero_peer(&self, domain: &str) -> Option<(&ZeroPeer, &zero::Continuity)> {
        let at = self.settings.zero.iter().position(|z| z.domains.iter().any(|d| d == domain))?;
        Some((&self.settings.zero[at], &self.continuity[at]))
    }

    /// Stanzas waiting for a stream to their domain, across domains.
    pub fn waiting(&self) -> usize {
        self.peers.lock().values().map(|peer| peer.queue.lock().stanzas.len()).sum()
    }
}

/// A stream from another domain, counted while held.
struct DomainStream {
    open: Arc<Mutex<HashMap<String, usize>>>,
    domain: String,
}

impl Drop for DomainStream {
    fn drop(&mut self) {
        let mut open = self.open.lock();
        if let Some(count) = open.get_mut(&self.domain) {
            *count -= 1;
            if *count == 0 {
                open.remove(&self.domain);
            }
        }
    }
}

/// Why a stanza cannot go to another server: the stanza error its sender
/// is told (RFC 6120 §8.3.3).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Undelivered {
    /// No server for the domain could be found or reached, or it refused us.
    NotFound,
    /// The domain's server took too long.
    Timeout,
    /// Too much is already waiting for the domain.
    Full,
}

impl Undelivered {
    /// The error's type and condition.
    pub fn error(self) -> (&'static str, &'static str) {
        match self {
            Undelivered::NotFound => ("cancel", "remote-server-not-found"),
            Undelivered::Timeout => ("wait", "remote-server-timeout"),
            Undelivered::Full => ("wait", "resource-constraint"),
        }
    }
}

/// The stanzas waiting for one remote domain, and the stream that takes them.
struct Peer {
    queue: Mutex<Queue>,
    /// Wakes the outgoing stream when a stanza is queued.
    ready: Notify,
}

/// A stanza waiting for another server, as written on the stream
/// (`text`, rendered once, when it is queued).
enum Item {
    /// From a user here: told if it cannot go.
    Stanza { stanza: Element, text: String },
    /// The same, sent again after a stream ended without acknowledging it.
    Again { stanza: Element, text: String },
    /// To a guest in a room here, from the room, as rendered for it: the
    /// guest leaves the room if it cannot go.
    Guest { text: String, to: String },
}

impl Item {
    /// A user's stanza, rendered for the stream.
    fn stanza(stanza: Element) -> Item {
        let text = stanza.to_xml(ns::CLIENT);
        Item::Stanza { stanza, text }
    }

    fn text(&self) -> &str {
        match self {
            Item::Stanza { text, .. } | Item::Again { text, .. } | Item::Guest { text, .. } => text,
        }
    }
}

#[derive(Default)]
struct Queue {
    stanzas: VecDeque<Item>,
    bytes: usize,
    /// The stream is gone: the next stanza for the domain makes a new peer.
    closed: bool,
}

impl Peer {
    /// Queues `item` unless the queue is full; the caller has checked,
    /// under the peers' lock, that it is not closed.
    fn push(&self, item: Item, limit: usize) -> Result<(), Undelivered> {
        let bytes = item.text().len();
        let mut queue = self.queue.lock();
        // One stanza always fits, however big: the bound is on what waits.
        if queue.bytes + bytes > limit && !queue.stanzas.is_empty() {
            return Err(Undelivered::Full);
        }
        queue.bytes += bytes;
        queue.stanzas.push_back(item);
        drop(queue);
        self.ready.notify_one();
        Ok(())
    }

    /// Everything waiting, taken.
    fn take(&self) -> Vec<Item> {
        let mut queue = self.queue.lock();
        queue.bytes = 0;
        queue.stanzas.drain(..).collect()
    }
}

impl Xmpp {
    /// Whether `domain` is served here: the users' domain or the MUC service's.
    pub(crate) fn serves(&self, domain: &str) -> bool {
        domain == self.domain || domain == self.muc_domain
    }

    /// Whether a stanza to `to` goes to another server.
    pub(crate) fn is_remote(&self, to: &Jid) -> bool {
        self.federation.is_some() && !self.serves(&to.domain)
    }

    /// Sends `stanza`, stamped with its `from` (a JID of a domain served
    /// here), to the server of its `to`'s domain, opening a stream there if
    /// none is open; `Err` says why it cannot go.
    pub(crate) fn send_remote(self: &Arc<Self>, stanza: Element) -> Result<(), Undelivered> {
        let (Some(from), Some(to)) = (stanza.get("from").and_then(Jid::parse), stanza.get("to").and_then(Jid::parse)) else {
            return Err(Undelivered::NotFound);
        };
        self.enqueue((from.domain, to.domain), Item::stanza(stanza))
    }

    /// Sends `text`, a stanza from a room here rendered for `to`, a guest
    /// of another server (see `guests`).
    pub(crate) fn send_to_guest(self: &Arc<Self>, text: String, to: &Jid) -> Result<(), Undelivered> {
        self.enqueue((self.muc_domain.clone(), to.domain.clone()), Item::Guest { text, to: to.to_string() })
    }

    fn enqueue(self: &Arc<Self>, key: (String, String), item: Item) -> Result<(), Undelivered> {
        let Some(federation) = &self.federation else { return Err(Undelivered::NotFound) };
        // A zero-handshake peer has one queue for all its domains and
        // ours (one connection, one count of stanzas), named by this
        // server's domain and the peer's first.
        let key = match federation.zero_peer(&key.1) {
            Some((zero, _)) => (self.domain.clone(), zero.domains[0].clone()),
            None => key,
        };
        let limit = federation.settings.queue_bytes;
        let mut peers = federation.peers.lock();
        // A queue is closed only under the lock held here.
        if let Some(peer) = peers.get(&key)
            && !peer.queue.lock().closed
        {
            return peer.push(item, limit);
        }
        let peer = Arc::new(Peer { queue: Mutex::new(Queue::default()), ready: Notify::new() });
        peer.push(item, limit)?;
        peers.insert(key.clone(), peer.clone());
        drop(peers);
        self.context.tracker.spawn(outgoing::run(self.clone(), key, peer));
        Ok(())
    }

    /// Opens a new stream for `key`'s queue, empty, after `wait`, unless
    /// one is open by then: for what a zero-handshake peer has not
    /// acknowledged (see `zero::Continuity`).
    fn reopen(self: &Arc<Self>, key: (String, String), wait: std::time::Duration) {
        if !wait.is_zero() {
            let xmpp = self.clone();
            self.context.tracker.spawn(async move {
                tokio::select! {
                    () = tokio::time::sleep(wait) => xmpp.reopen(key, std::time::Duration::ZERO),
                    () = xmpp.context.shutdown.wait() => {}
                }
            });
            return;
        }
        let Some(federation) = &self.federation else { return };
        let mut peers = federation.peers.lock();
        if peers.get(&key).is_some_and(|peer| !peer.queue.lock().closed) {
            return;
        }
        let peer = Arc::new(Peer { queue: Mutex::new(Queue::default()), ready: Notify::new() });
        peers.insert(key.clone(), peer.clone());
        drop(peers);
        self.context.tracker.spawn(outgoing::run(self.clone(), key, peer));
    }

    /// Closes `peer`'s queue (the next stanza for its domain opens a new
    /// stream) and tells the senders of what still waits in it why it
    /// could not go; guests it was for leave their rooms.
    fn give_up(&self, key: &(String, String), peer: &Peer, why: Undelivered) {
        self.close_peer(key, peer);
        let left = peer.take();
        if !left.is_empty() {
            tracing::info!("xmpp: {} stanzas for {} not delivered: {why:?}", left.len(), key.1);
        }
        self.undelivered(left, why);
    }

    /// What a stream that ended had sent without its acknowledgement (XEP-0198):
    /// a user's stanza is sent again on a new stream, once, and then goes
    /// back to its sender with `why`; a guest's, which is not sent twice,
    /// ends the guest.
    fn send_again(self: &Arc<Self>, items: Vec<Item>, why: Undelivered) {
        tracing::info!("xmpp: {} stanzas not acknowledged before their stream ended", items.len());
        for item in items {
            match item {
                Item::Stanza { stanza, text } => {
                    let (Some(from), Some(to)) = (stanza.get("from").and_then(Jid::parse), stanza.get("to").and_then(Jid::parse)) else { continue };
                    if let Err(refused) = self.enqueue((from.domain, to.domain), Item::Again { stanza: stanza.clone(), text }) {
                        self.bounce(&stanza, refused);
                    }
                }
                Item::Again { stanza, .. } => self.bounce(&stanza, why),
                Item::Guest { to, .. } => self.guests.gone(&to),
            }
        }
    }

    /// What could not go to another server: its senders are told why, its
    /// guests leave.
    fn undelivered(&self, items: Vec<Item>, why: Undelivered) {
        for item in items {
            match item {
                Item::Stanza { stanza, .. } | Item::Again { stanza, .. } => self.bounce(&stanza, why),
                Item::Guest { to, .. } => self.guests.gone(&to),
            }
        }
    }

    /// A queue for the domain pair `key`, to be drained by a stream the
    /// other server opened both ways; none if a queue with a stream of its
    /// own is already there.
    fn claim_peer(&self, key: &(String, String)) -> Option<Arc<Peer>> {
        let federation = self.federation.as_ref()?;
        let mut peers = federation.peers.lock();
        if peers.get(key).is_some_and(|peer| !peer.queue.lock().closed) {
            return None;
        }
        let peer = Arc::new(Peer { queue: Mutex::new(Queue::default()), ready: Notify::new() });
        peers.insert(key.clone(), peer.clone());
        Some(peer)
    }

    /// Closes `peer`'s queue: the next stanza for its domain makes a new one.
    fn close_peer(&self, key: &(String, String), peer: &Peer) {
        let Some(federation) = &self.federation else { return };
        let mut peers = federation.peers.lock();
        if peers.get(key).is_some_and(|kept| std::ptr::eq(&**kept, peer)) {
            peers.remove(key);
        }
        peer.queue.lock().closed = true;
    }

    /// Tells the local sender of `stanza`, which could not go to another
    /// server, why (RFC 6120 §8.3.1): an error stanza from the JID it was
    /// sent to. Errors are not answered with errors.
    fn bounce(&self, stanza: &Element, why: Undelivered) {
        if matches!(stanza.get("type"), Some("error" | "result")) {
            return;
        }
        let Some(from) = stanza.get("from") else { return };
        let Some(sender) = Jid::parse(from) else { return };
        let (kind, condition) = why.error();
        let error = crate::session::error_for(stanza, from, kind, condition);
        for (outbox, framing) in self.router.route(&sender) {
            let _ = outbox.push(framing.payload(&error));
        }
    }
}
