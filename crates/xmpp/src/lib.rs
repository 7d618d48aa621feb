//! XMPP for clients (RFC 6120, 6121) over TCP and over WebSocket (RFC
//! 7395), with Multi-User Chat (XEP-0045) on the chat app's rooms, so that
//! XMPP occupants and chat-app members meet in one room.
//!
//! What is here: stream negotiation, STARTTLS and direct TLS, SASL
//! (SCRAM-SHA-256, SCRAM-SHA-1, PLAIN, ANONYMOUS) against the configured
//! accounts and those in the store (`accounts`), resource binding, rosters
//! and presence subscriptions kept in the store (`roster`),
//! routing between users (`router`), MUC (`muc` for its stanzas, `room`
//! for what XMPP keeps of a room), ping, service discovery, and stream
//! management with resumption; every other iq is answered
//! `service-unavailable`. One client's protocol is `session`; `stream` runs
//! it over a carrier, `tcp` and `websocket`, and `bridge` hands it the
//! messages of SockJS and BOSH sessions. `s2s` federates with other
//! servers.

mod archive;
pub mod bosh;
mod claims;
pub mod bridge;
mod muc;
pub mod nodes;
mod offline;
mod prefs;
mod room;
mod roster;
mod router;
pub mod s2s;
mod session;
mod stream;
mod tcp;
pub mod websocket;

use std::collections::HashMap;
use std::sync::Arc;

use hub::{Broker, Outbox};
use parking_lot::Mutex;
use tokio::net::TcpListener;
use tokio::sync::Semaphore;


pub use base::accounts::{self, AccountEntry, Accounts, account_name, new_account};
#[doc(hidden)]
pub use tcp::stream_future_size;
pub use websocket::stream_future_size as websocket_stream_future_size;
pub use wire::xmpp::Jid;
pub use room::Config as RoomConfig;
pub use session::{FRAMING_CLOSE, FRAMING_NS, Framing};

/// The namespaces the server speaks: the shared codec's, which the bench's
/// client names too.
pub use wire::xmpp::ns;

pub(crate) use router::Target;

/// What every XMPP session of the server shares.
pub struct Xmpp {
    /// What every protocol of the server shares.
    pub context: Arc<base::Context>,
    /// How long a client over TCP has to bind (`--xmpp-login-timeout`).
    pub login_timeout: std::time::Duration,
    /// What one client may send (`--max-message-rate`, `--max-byte-rate`).
    pub inflow: base::limits::Inflow,
    /// The domain the server serves, e.g. `localhost`.
    pub domain: String,
    /// The MUC service's domain: `conference.<domain>`.
    pub muc_domain: String,
    /// The chat app's rooms, which MUC rooms are; `None` without a chat
    /// mount (then there is no MUC service).
    pub rooms: Option<Arc<dyn Broker>>,
    /// Where stanzas go: to this server's bound resources.
    router: router::Router,
    /// One per open XMPP connection, at most `--max-connections`.
    slots: Arc<Semaphore>,
    /// Who may log in, and how.
    pub auth: Auth,
    /// STARTTLS and direct TLS, when the server has a certificate
    /// (`--tls-cert`); a client resuming its TLS session may send its first
    /// stanzas as early data.
    pub tls: Option<base::tls::EarlyAcceptor>,
    /// How long a broken session waits to be resumed (XEP-0198).
    pub resume_timeout: std::time::Duration,
    /// Sessions whose connection broke, waiting to be resumed, by id, each
    /// with the order it was parked in; at most `max_parked`.
    parked: Mutex<HashMap<String, (u64, session::Session)>>,
    /// Most sessions parked at once (`--xmpp-max-parked`): past it the
    /// one parked longest ends, as if its time had run out.
    max_parked: usize,
    /// How many sessions have been parked, for their order.
    parked_count: std::sync::atomic::AtomicU64,
    /// Resumable sessions, by id: their account, framing, and how to ask
    /// their connection for them.
    #[allow(clippy::type_complexity)]
    live: Mutex<HashMap<String, (Jid, session::Framing, tokio::sync::mpsc::Sender<session::Takeover>)>>,
    /// What XMPP keeps of the rooms its occupants are in.
    muc: room::MucRooms,
    /// Users' contacts and presence subscriptions.
    rosters: roster::Rosters,
    /// Messages kept for accounts that are offline.
    offline: offline::Offline,
    /// Where persistent rooms are kept.
    store: Arc<dyn store::Store>,
    /// The archive of messages between users (XEP-0313), unless that
    /// archiving is off.
    archive: Option<Arc<base::archive::Archive>>,
    /// What each user's archive keeps (XEP-0441).
    prefs: prefs::Preferences,
    /// The rooms' archive, and the prefix its names start with, when the
    /// rooms are archived.
    room_archive: Option<(Arc<base::archive::Archive>, String)>,
    /// Longest list a user can make the server keep (`--xmpp-list-limit`).
    list_limit: usize,
    /// Most rooms one session is in at once (`--xmpp-max-rooms`).
    max_rooms: usize,
    /// The router's remote arm: streams to and from other servers, when
    /// the server federates.
    federation: Option<Arc<s2s::Federation>>,
    /// Users of other servers in the rooms here.
    guests: s2s::Guests,
    /// The other nodes, which may hold this domain's users, when this
    /// node is one of several.
    nodes: Option<Arc<dyn nodes::OtherNodes>>,
    /// Rooms whose state this node asked the other nodes for, each woken
    /// when it comes (`nodes`).
    fetching: Mutex<HashMap<Arc<str>, Arc<tokio::sync::Notify>>>,
    /// Full JIDs sessions here are binding while the other nodes are
    /// asked whether they hold them.
    claims: Arc<claims::Claims>,
}

impl std::fmt::Debug for Xmpp {
    // rustls's acceptor has no Debug; say whether there is one.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Xmpp").field("domain", &self.domain).field("tls", &self.tls.is_some()).finish_non_exhaustive()
    }
}

/// How long and how many broken sessions wait to be resumed (XEP-0198).
#[derive(Debug, Clone, Copy)]
pub struct Resumption {
    /// `--xmpp-resume-timeout`.
    pub timeout: std::time::Duration,
    /// `--xmpp-max-parked`.
    pub max_parked: usize,
}

/// How clients log in.
#[derive(Debug)]
pub struct Auth {
    pub accounts: Accounts,
    /// SASL ANONYMOUS offered.
    pub anonymous: bool,
    /// SASL PLAIN offered on a stream without TLS.
    pub plain_unencrypted: bool,
    /// Failed attempts before the stream is closed.
    pub tries: u32,
    /// Failed attempts each client address may make (`--xmpp-auth-failures`).
    pub failures: base::limits::AddressRates,
    /// FAST tokens (XEP-0484), unless off (`--xmpp-fast-tokens 0`).
    pub fast: Option<base::fast::Fast>,
}

/// How the XMPP service is set up: the parts of the configuration that
/// are XMPP's.
#[derive(Debug, Clone)]
pub struct Settings {
    /// The domain served (`--xmpp-domain`).
    pub domain: String,
    /// Most XMPP connections at once (`--max-connections`).
    pub max_connections: usize,
    pub resumption: Resumption,
    pub quotas: Quotas,
    /// `--xmpp-login-timeout`.
    pub login_timeout: std::time::Duration,
    /// What one client may send.
    pub inflow: base::limits::Inflow,
    /// What is archived (XEP-0313).
    pub archiving: Archiving,
    /// How the server federates, if it does.
    pub federation: Option<Arc<s2s::Federation>>,
    /// How a MUC room is configured until its owner changes it.
    pub room_defaults: room::Config,
    /// The other nodes, when this node is one of several (`--broker`).
    pub nodes: Option<Arc<dyn nodes::OtherNodes>>,
}

/// What is archived, and where (XEP-0313).
#[derive(Debug, Clone, Default)]
pub struct Archiving {
    /// Where messages between users are archived (`--xmpp-archive`);
    /// `None`: they are not.
    pub chats: Option<Arc<base::archive::Archive>>,
    /// Where the MUC rooms' messages are, and the prefix of their
    /// archives' names (`base::rooms::ArchivedRooms::archive_of`), when the
    /// rooms are archived (`--room-archive`).
    pub rooms: Option<(Arc<base::archive::Archive>, String)>,
}

/// What one user may make XMPP keep.
#[derive(Debug, Clone, Copy)]
pub struct Quotas {
    /// `--xmpp-list-limit`: contacts, waiting requests, directed presences,
    /// affiliations.
    pub list: usize,
    /// `--xmpp-max-rooms`: rooms one session is in.
    pub rooms: usize,
    /// `--xmpp-offline-limit`: messages kept for an account that is offline.
    pub offline: usize,
}

/// Whether the archive of `user` keeps a message with `peer`: see
/// [`Xmpp::archive_keeps`].
async fn keeps(prefs: &prefs::Preferences, rosters: &roster::Rosters, context: &base::Context, user: &str, peer: &Jid) -> bool {
    let prefs = match prefs.of(user).await {
        Ok(prefs) => prefs,
        Err(e) => {
            tracing::warn!("xmpp: archiving preferences of {user} not read: {e}");
            context.metrics.store_failed("archive");
            return false;
        }
    };
    match prefs.keeps(peer) {
        Some(kept) => kept,
        None => rosters.contact(user, &peer.bare().to_string()).await.is_some(),
    }
}

/// The accounts' archiving preferences (XEP-0441) as another protocol's
/// messages between users (IRC's private messages) go by them: the XMPP
/// service's, which knows each user's a minute and forgets it at another
/// node's word; or, with no XMPP service here, read from the store the
/// same way.
#[derive(Debug)]
pub struct ArchivePolicy(Policy);

#[derive(Debug)]
enum Policy {
    Service(Arc<Xmpp>),
    Stored { prefs: prefs::Preferences, rosters: roster::Rosters, context: Arc<base::Context> },
}

impl ArchivePolicy {
    /// The XMPP service's.
    pub fn of(xmpp: Arc<Xmpp>) -> ArchivePolicy {
        ArchivePolicy(Policy::Service(xmpp))
    }

    /// With no XMPP service: the preferences and rosters of `store`.
    pub fn stored(store: Arc<dyn store::Store>, context: Arc<base::Context>) -> ArchivePolicy {
        let rosters = roster::Rosters::new(store.clone(), context.clone(), 0);
        ArchivePolicy(Policy::Stored { prefs: prefs::Preferences::new(store), rosters, context })
    }
}

impl base::archive::Keeps for ArchivePolicy {
    fn keeps<'a>(&'a self, owner: &'a str, peer: &'a str) -> std::pin::Pin<Box<dyn std::future::Future<Output = bool> + Send + 'a>> {
        Box::pin(async move {
            let Some(peer) = Jid::parse(peer) else { return false };
            match &self.0 {
                Policy::Service(xmpp) => xmpp.archive_keeps(owner, &peer).await,
                Policy::Stored { prefs, rosters, context } => keeps(prefs, rosters, context, owner, &peer).await,
            }
        })
    }
}

/// XMPP's persistent MUC rooms keeping, as their subject, the topic set
/// in another protocol (IRC's `TOPIC`), as an occupant's subject is kept.
#[derive(Debug)]
pub struct KeptSubjects(pub Arc<Xmpp>);

impl base::rooms::TopicKeeper for KeptSubjects {
    fn topic_set(&self, room: &str, by: &Arc<str>, text: &str) {
        let subject = (!text.is_empty()).then(|| (by.clone(), text.to_owned()));
        // Set at once where the room is known: in the order topics are set.
        let known = self.0.muc.with(room, |r| r.subject = subject.clone()).is_some();
        let (xmpp, room) = (self.0.clone(), room.to_owned());
        // Tracked: a server stopping waits for it.
        self.0.context.tracker.spawn(async move {
            if !known {
                // A persistent room another node made since this one
                // started is known only to the store.
                if !xmpp.store.persistent() {
                    return;
                }
                match xmpp.store.room(&room).await {
                    Ok(Some(state)) if xmpp.muc.restore_if_absent(&room, &state).is_ok() => {
                        xmpp.muc.with(&room, |r| r.subject = subject);
                    }
                    Ok(_) => return,
                    Err(e) => {
                        tracing::warn!("xmpp: room {room:?} not read from the store: {e}");
                        return xmpp.context.metrics.store_failed("rooms");
                    }
                }
            }
            if xmpp.muc.with(&room, |r| r.config.persistent) == Some(true) {
                let _ = xmpp.keep_room(&room, false).await;
            }
        });
    }
}

impl Xmpp {
    /// The service for `settings`, whose MUC rooms are `rooms` and whose
    /// rosters are kept in `store`.
    pub fn new(
        context: Arc<base::Context>,
        settings: Settings,
        auth: Auth,
        tls: Option<base::tls::EarlyAcceptor>,
        rooms: Option<Arc<dyn Broker>>,
        store: Arc<dyn store::Store>,
    ) -> Xmpp {
        let Settings { domain, max_connections, resumption, quotas, login_timeout, inflow, archiving, federation, room_defaults, nodes } = settings;
        let Resumption { timeout: resume_timeout, max_parked } = resumption;
        let Quotas { list: list_limit, rooms: max_rooms, offline } = quotas;
        Xmpp {
            rosters: roster::Rosters::new(store.clone(), context.clone(), list_limit),
            context,
            login_timeout,
            inflow,
            list_limit,
            max_rooms,
            max_parked,
            parked_count: std::sync::atomic::AtomicU64::new(0),
            auth,
            tls,
            resume_timeout,
            parked: Mutex::new(HashMap::new()),
            live: Mutex::new(HashMap::new()),
            muc: if nodes.is_some() { room::MucRooms::shared_with_nodes(room_defaults) } else { room::MucRooms::new(room_defaults) },
            offline: offline::Offline::new(store.clone(), offline),
            archive: archiving.chats,
            prefs: prefs::Preferences::new(store.clone()),
            room_archive: archiving.rooms,
            store: store.clone(),
            domain: domain.clone(),
            muc_domain: format!("conference.{domain}"),
            rooms,
            router: router::Router::new(domain.clone()),
            slots: Arc::new(Semaphore::new(max_connections)),
            federation,
            guests: s2s::Guests::default(),
            nodes,
            fetching: Mutex::new(HashMap::new()),
            claims: Arc::default(),
        }
    }

    /// Keeps a session whose connection broke for `resume_timeout`, still
    /// in its rooms (its outbox gathers what happens meanwhile, within its
    /// bound); then it ends like any other. With `max_parked` already
    /// waiting, the one parked longest ends first.
    pub(crate) async fn park(self: &Arc<Self>, session: session::Session) {
        let mut session = session;
        let Some(id) = session.resumable() else {
            session.leave_all().await;
            return;
        };
        // A room it made and has not configured is of use to nobody else:
        // no session without a connection holds one's name.
        session.leave_locked_rooms();
        let order = self.parked_count.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let evicted = {
            let mut parked = self.parked.lock();
            let mut evicted = None;
            if parked.len() >= self.max_parked
                && let Some(oldest) = parked.iter().min_by_key(|(_, (order, _))| *order).map(|(id, _)| id.clone())
            {
                evicted = parked.remove(&oldest);
            }
            parked.insert(id.clone(), (order, session));
            evicted
        };
        // Leaving rooms publishes: not under the lock.
        if let Some((_, mut session)) = evicted {
            session.leave_all().await;
        }
        let xmpp = self.clone();
        tokio::spawn(async move {
            tokio::time::sleep(xmpp.resume_timeout).await;
            let expired = {
                let mut parked = xmpp.parked.lock();
                // The same id parked again since is another wait.
                match parked.get(&id) {
                    Some((kept, _)) if *kept == order => parked.remove(&id),
                    _ => None,
                }
            };
            if let Some((_, mut session)) = expired {
                session.leave_all().await;
            }
        });
    }

    /// Takes back the persistent rooms the store keeps; how many. A room
    /// whose state cannot be read is skipped, and logged.
    pub async fn load_rooms(&self) -> Result<usize, store::Error> {
        let mut loaded = 0;
        for (name, state) in self.store.rooms().await? {
            match self.muc.restore(&name, &state) {
                Ok(()) => loaded += 1,
                Err(e) => tracing::warn!("xmpp: room {name:?} in the store cannot be read: {e}"),
            }
        }
        Ok(loaded)
    }

    /// Takes up room `name` if this node holds no state of it: a
    /// persistent room from the store (another node on the same database
    /// made it since this one started), another from a node that holds it
    /// (`fetch_room`); a store that fails is logged and counted, and the
    /// join goes on as for a new room.
    async fn take_up_room(&self, name: &str) {
        if self.muc.with(name, |_| ()).is_some() {
            return;
        }
        if !self.store.persistent() {
            return self.fetch_room(name).await;
        }
        match self.store.room(name).await {
            Ok(Some(state)) => {
                if let Err(e) = self.muc.restore_if_absent(name, &state) {
                    tracing::warn!("xmpp: room {name:?} in the store cannot be read: {e}");
                }
            }
            // Not persistent: another node may hold it.
            Ok(None) => self.fetch_room(name).await,
            Err(e) => {
                tracing::warn!("xmpp: room {name:?} not read from the store: {e}");
                self.context.metrics.store_failed("rooms");
            }
        }
    }

    /// Keeps room `name` in the store if it is persistent, or forgets it
    /// there if it was (`was`) and no longer is (or is gone).
    pub(crate) async fn keep_room(&self, name: &str, was: bool) -> Result<(), store::Error> {
        let kept = match self.muc.kept(name) {
            Some((state, version)) => self.store.save_room(name, &state, &version).await,
            None if was => self.store.remove_room(name).await,
            None => Ok(()),
        };
        kept.inspect_err(|e| {
            tracing::warn!("xmpp: room {name:?} not kept: {e}");
            self.context.metrics.store_failed("rooms");
        })
    }

    /// Gives the user `bare`, if it is available here to messages to its
    /// bare JID, what is kept offline for it: a message kept while it came
    /// online, after it took what was kept before. Whether it is available
    /// here.
    pub(crate) async fn deliver_kept(&self, bare: &Jid) -> bool {
        let router::MessageRoute::To(targets) = self.router.route_message(bare, "chat") else { return false };
        if let Ok(kept) = self.offline.take(&bare.to_string()).await {
            for message in &kept {
                for (outbox, framing) in &targets {
                    let _ = outbox.push(framing.payload(message));
                }
            }
        }
        true
    }

    /// Forgets what was kept for `user`, whose account is gone: its
    /// archive (what the writer was given for it first, which would
    /// otherwise be written after) and the messages waiting for it, which
    /// whoever registers the name next must not be given.
    pub(crate) async fn forget_kept(&self, user: &str) {
        self.prefs.forget(user);
        match &self.archive {
            Some(archive) => archive.forget(user, &self.context).await,
            None => {
                if let Err(e) = self.store.forget_archive(user).await {
                    tracing::warn!("xmpp: archive of {user} not forgotten: {e}");
                    self.context.metrics.store_failed("archive");
                }
            }
        }
        if let Err(e) = self.store.take(user).await {
            tracing::warn!("xmpp: offline messages of {user} not forgotten: {e}");
            self.context.metrics.store_failed("offline");
        }
    }

    /// Whether the archive of `user` (a bare JID) keeps a message with
    /// `peer`, as its preferences say (`prefs::keeps`): with a default of
    /// `roster`, whether `peer`'s bare JID is on the user's roster. Not
    /// when the store cannot say (logged, and counted as the archive's or
    /// the rosters' failure): a user who asked for none is never archived
    /// against its word.
    pub(crate) async fn archive_keeps(&self, user: &str, peer: &Jid) -> bool {
        keeps(&self.prefs, &self.rosters, &self.context, user, peer).await
    }

    /// What XMPP holds for clients that are not connected: sessions
    /// waiting to be resumed, and subscription requests waiting for an
    /// answer.
    pub async fn held(&self) -> (usize, usize) {
        let parked = self.parked.lock().len();
        // A scrape of the metrics does not wait long for a store in trouble.
        let waiting = tokio::time::timeout(std::time::Duration::from_secs(1), self.rosters.waiting()).await.unwrap_or(0);
        (parked, waiting)
    }

    /// The account `name` (its local part) being disconnected by the server
    /// API: its sessions waiting to be resumed end now (they leave their
    /// rooms), so that it is neither shown in a room nor able to resume;
    /// returns where the stanzas of each of its connected resources go,
    /// which the caller closes.
    pub fn disconnecting(&self, name: &str) -> Vec<Arc<Outbox>> {
        let Some(local) = wire::xmpp::jid::localpart(name) else { return Vec::new() };
        let bare = format!("{local}@{}", self.domain);
        let ended: Vec<session::Session> = {
            let mut parked = self.parked.lock();
            let ids: Vec<String> = parked.iter().filter(|(_, (_, s))| s.bare_jid().is_some_and(|j| j.to_string() == bare)).map(|(id, _)| id.clone()).collect();
            ids.iter().filter_map(|id| parked.remove(id)).map(|(_, s)| s).collect()
        };
        if !ended.is_empty() {
            // Leaving rooms publishes: not under the lock, nor in the caller.
            tokio::spawn(async move {
                for mut session in ended {
                    session.leave_all().await;
                }
            });
        }
        self.router.resources(&bare).into_iter().map(|(_, (outbox, _))| outbox).collect()
    }

    /// What federation holds: stanzas waiting for streams to other
    /// servers, and users of other servers in the rooms here.
    pub fn federated(&self) -> (usize, usize) {
        (self.federation.as_ref().map_or(0, |f| f.waiting()), self.guests.count())
    }

    /// The parked session `id` of the account `bare`, taken for resumption.
    fn take_parked(&self, id: &str, bare: &Jid, framing: session::Framing) -> Option<session::Session> {
        let mut parked = self.parked.lock();
        let (_, session) = parked.get(id)?;
        // Its kept stanzas are framed for its transport: it resumes on the same kind.
        if session.bare_jid().as_ref() != Some(bare) || session.framing() != framing {
            return None;
        }
        parked.remove(id).map(|(_, session)| session)
    }

    /// Notes that the session resumable by `id` (of the account `bare`) is
    /// on an open connection, which gives it up when `takeover` asks.
    fn live(&self, id: &str, bare: &Jid, framing: session::Framing, takeover: tokio::sync::mpsc::Sender<session::Takeover>) {
        self.live.lock().insert(id.to_owned(), (bare.clone(), framing, takeover));
    }

    fn forget_live(&self, id: &str) {
        self.live.lock().remove(id);
    }

    /// The session resumable by `id` of the account `bare` whose old
    /// connection is still open (the client saw it break before the
    /// server did): that connection ends and hands the session over.
    async fn take_live(&self, id: &str, bare: &Jid, framing: session::Framing) -> Option<session::Session> {
        let takeover = {
            let live = self.live.lock();
            let (owner, kept, takeover) = live.get(id)?;
            (owner == bare && *kept == framing).then(|| takeover.clone())?
        };
        let (reply, session) = tokio::sync::oneshot::channel();
        takeover.send(reply).await.ok()?;
        // The old connection answers at once unless it is itself ending.
        tokio::time::timeout(std::time::Duration::from_secs(10), session).await.ok()?.ok()
    }

    /// Whether `bare` is a user of this server: an account, or a user
    /// logged in anonymously, who exists while bound.
    async fn exists(&self, bare: &Jid) -> bool {
        (bare.domain == self.domain && self.router.is_bound(bare)) || self.has_account(bare).await
    }

    /// Whether `bare` has an account here: what messages are kept offline
    /// for (a user logged in anonymously never comes back for them).
    async fn has_account(&self, bare: &Jid) -> bool {
        let Some(local) = bare.local.as_deref() else { return false };
        if bare.domain != self.domain {
            return false;
        }
        // A store that cannot say is taken to have the account: nothing is
        // refused in a user's name for a failure of the server's.
        self.auth.accounts.exists(local).await.inspect_err(|_| self.context.metrics.store_failed("accounts")).unwrap_or(true)
    }
}

/// `stanza` from `from` to `to`, whatever it said.
pub(crate) fn stamped(mut stanza: wire::xmpp::Element, from: &str, to: String) -> wire::xmpp::Element {
    stanza.attrs.retain(|(n, _)| n != "from" && n != "to");
    stanza.attrs.push(("from".into(), from.to_owned()));
    stanza.attrs.push(("to".into(), to));
    stanza
}

/// Accepts XMPP client connections on `listener` until shutdown; with
/// `direct_tls`, each starts with a TLS handshake (XEP-0368).
pub async fn serve(listener: TcpListener, xmpp: Arc<Xmpp>, direct_tls: bool) {
    let context = xmpp.context.clone();
    context.accept(listener, "xmpp", |stream, peer| {
        // Over the limit the connection is closed at once, unread.
        let Ok(slot) = xmpp.slots.clone().try_acquire_owned() else {
            context.metrics.shed("xmpp_max_connections");
            return;
        };
        context.tracker.spawn(tcp::run(stream, peer.ip(), xmpp.clone(), slot, direct_tls));
    })
    .await;
}

