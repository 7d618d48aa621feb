//! IRC for clients (RFC 1459 and 2812 as the "Modern IRC" documents
//! describe them today, with IRCv3 capability negotiation): a transport
//! into the chat app's rooms, so that `#lobby` is the chat room `lobby` and
//! the MUC room `lobby@conference.<domain>`.
//!
//! `connection` runs one client's socket (TCP, TLS, or a WebSocket through
//! `websocket`): reading lines under the rates, writing its outbox, pings
//! and timeouts; `client` is its protocol state
//! and commands; `render` turns room events into lines, once per form for
//! every recipient; `channels` holds what IRC keeps of a room beyond the
//! hub (topic, modes, operators); `nicks` is the node's registry of IRC
//! nicknames; `multiline` gathers a message a client sends in a batch;
//! `labeled` answers a labeled command under its label; `monitor` holds
//! who watches which nicknames (`MONITOR`).
//! Names and text cross through `wire::irc`.

mod cap;
mod elist;
mod channels;
mod chathistory;
mod client;
mod connection;
mod help;
mod labeled;
mod monitor;
mod multiline;
mod nicks;
mod numeric;
mod private;
mod render;
mod whox;
pub mod websocket;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, SystemTime};

use base::Context;
use base::accounts::Accounts;
use base::limits::{AddressRates, Inflow};
use hub::{Broker, Outbox};
use tokio::net::TcpListener;
use tokio::sync::Semaphore;
use tokio_rustls::TlsAcceptor;

use channels::Channels;
use nicks::Nicks;
pub use private::PrivateArchive;

/// What the server's configuration sets for IRC.
#[derive(Debug, Clone)]
pub struct Settings {
    /// How the server names itself: the source of its own lines (`--irc-server-name`).
    pub server_name: String,
    /// How it describes itself: WHOIS's and LINKS's server info
    /// (`--irc-server-description`).
    pub description: String,
    /// The network's name in `ISUPPORT` (`NETWORK=`).
    pub network: String,
    /// Most IRC clients at once.
    pub max_connections: usize,
    /// Most channels one client is in at once (`--irc-max-channels`).
    pub max_channels: usize,
    /// How long a client has from connecting to being registered (`--irc-registration-timeout`).
    pub registration_timeout: Duration,
    /// The server's password, which a client gives with `PASS` (`--irc-password`).
    pub password: Option<String>,
    /// The operators' names and passwords, for `OPER` (`--irc-operators`).
    pub operators: Vec<(String, String)>,
    /// What one client may send.
    pub inflow: Inflow,
    /// SASL PLAIN offered without TLS (`--xmpp-plain-unencrypted`).
    pub plain_unencrypted: bool,
    /// The HTTP listener has TLS: IRC over WebSocket is encrypted.
    pub https: bool,
    /// How long a client's writer lets messages gather once one is queued
    /// (`--write-delay`): fewer writes for up to this much more latency.
    pub write_delay: Duration,
}

/// The IRC service of one server: its settings, the rooms, and the clients'
/// nicknames and channels on this node.
pub struct Irc {
    pub context: Arc<Context>,
    settings: Settings,
    /// The chat app's rooms, which channels are; `None` without a chat app
    /// (every JOIN is then refused).
    rooms: Option<Arc<dyn Broker>>,
    /// The accounts clients log in as (SASL), XMPP's.
    accounts: Accounts,
    /// Failed logins each client address may make (`--xmpp-auth-failures`).
    auth_failures: AddressRates,
    tls: Option<TlsAcceptor>,
    slots: Arc<Semaphore>,
    nicks: Nicks,
    monitors: monitor::Monitors,
    channels: Channels,
    users: Users,
    /// Who had which nickname lately, newest first (`WHOWAS`).
    gone: parking_lot::Mutex<std::collections::VecDeque<Gone>>,
    /// When the service started (`003`).
    created: SystemTime,
    /// Who keeps a room's topic with the room, if anyone does.
    topics: Option<Arc<dyn base::rooms::TopicKeeper>>,
    /// The rooms' archive and the chat mount's prefix that names a room's
    /// archive in it (`base::rooms::ArchivedRooms::archive_of`), if rooms
    /// are archived: `CHATHISTORY` reads it.
    archive: Option<(Arc<base::archive::Archive>, String)>,
    /// Where private messages are kept, if they are: `CHATHISTORY` of a
    /// nickname reads it (`private`).
    private: Option<PrivateArchive>,
}

impl Irc {
    /// The service for `settings` over `rooms`, its clients logging in as
    /// `accounts` (failures bounded by `auth_failures`), with TLS from `tls`
    /// for the TLS listener; each topic a client sets is told to `topics`.
    pub fn new(context: Arc<Context>, settings: Settings, rooms: Option<Arc<dyn Broker>>, logins: Logins, tls: Option<TlsAcceptor>, topics: Option<Arc<dyn base::rooms::TopicKeeper>>) -> Irc {
        Irc {
            topics,
            accounts: logins.accounts,
            auth_failures: logins.failures,
            slots: Arc::new(Semaphore::new(settings.max_connections)),
            nicks: Nicks::default(),
            monitors: Default::default(),
            channels: Channels::default(),
            users: Users::default(),
            gone: Default::default(),
            created: SystemTime::now(),
            archive: None,
            private: None,
            context,
            settings,
            rooms,
            tls,
        }
    }

    /// The service with the rooms' archive, `archive`, where the chat
    /// mount at `prefix` keeps its rooms' messages.
    pub fn with_archive(mut self, archive: Option<(Arc<base::archive::Archive>, String)>) -> Irc {
        self.archive = archive;
        self
    }

    /// Keeps private messages between clients in their accounts' archives.
    pub fn with_private_archive(mut self, private: Option<PrivateArchive>) -> Irc {
        self.private = private;
        self
    }

    /// The name of the server in its lines.
    pub fn server_name(&self) -> &str {
        &self.settings.server_name
    }

    /// Seconds since the service started: when a client registered and
    /// last spoke (`nicks::Shown`), in 4 bytes each.
    fn clock(&self) -> u32 {
        let secs = self.created.elapsed().map_or(0, |d| d.as_secs());
        u32::try_from(secs).unwrap_or(u32::MAX)
    }

    /// The Unix time of `clock`'s `at`.
    fn unix_time(&self, at: u32) -> u64 {
        let created = self.created.duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs());
        created + u64::from(at)
    }

    /// Where the lines of the client whose nickname stands for `name` go:
    /// the server API closes it to disconnect it.
    pub fn client_named(&self, name: &str) -> Option<Arc<Outbox>> {
        let key = wire::nickname::Nickname::parse(name).ok()?.key;
        Some(self.nicks.find(&key)?.outbox.clone())
    }

}

/// Nicknames `WHOWAS` remembers, newest first; the oldest goes.
const GONE_KEPT: usize = 1000;

/// A nickname a client had (`WHOWAS`).
#[derive(Debug, Clone)]
struct Gone {
    nick: Arc<str>,
    names: nicks::Names,
    at: SystemTime,
}

impl Irc {
    /// Remembers that a client had `nick` until now.
    fn remember(&self, nick: Arc<str>, names: nicks::Names) {
        let mut gone = self.gone.lock();
        if gone.len() == GONE_KEPT {
            gone.pop_back();
        }
        gone.push_front(Gone { nick, names, at: SystemTime::now() });
    }
}

/// Who may log in (SASL), and how often a client address may fail to.
#[derive(Debug)]
pub struct Logins {
    pub accounts: Accounts,
    pub failures: AddressRates,
}

/// Registered clients now, and the most there have been (`LUSERS`).
#[derive(Debug, Default)]
struct Users {
    now: AtomicUsize,
    most: AtomicUsize,
}

impl Users {
    fn arrive(&self) {
        let now = self.now.fetch_add(1, Ordering::Relaxed) + 1;
        self.most.fetch_max(now, Ordering::Relaxed);
    }

    fn leave(&self) {
        self.now.fetch_sub(1, Ordering::Relaxed);
    }

    fn counts(&self) -> (usize, usize) {
        (self.now.load(Ordering::Relaxed), self.most.load(Ordering::Relaxed))
    }
}

impl std::fmt::Debug for Irc {
    // rustls's acceptor has no Debug; say whether there is one.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Irc").field("server_name", &self.settings.server_name).field("tls", &self.tls.is_some()).finish_non_exhaustive()
    }
}

/// Serves IRC clients on `listener` until shutdown, with TLS from the
/// first byte when `tls` is set.
pub async fn serve(listener: TcpListener, irc: Arc<Irc>, tls: bool) {
    let context = irc.context.clone();
    context
        .accept(listener, "irc", |stream, peer| {
            let Ok(slot) = irc.slots.clone().try_acquire_owned() else {
                context.metrics.shed("irc_max_connections");
                context.tracker.spawn(connection::refuse(stream, irc.server_name().to_owned()));
                return;
            };
            context.tracker.spawn(connection::run(stream, peer.ip(), irc.clone(), slot, tls));
        })
        .await;
}

/// The size of one IRC client's connection future over plain TCP, as
/// spawned. An idle client's memory is mostly its task, so the server's
/// tests hold it under a bound with the real service.
#[doc(hidden)]
pub async fn connection_future_size(irc: Arc<Irc>) -> usize {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("a loopback listener");
    let _client = tokio::net::TcpStream::connect(listener.local_addr().expect("its address")).await.expect("a loopback connection");
    let (tcp, peer) = listener.accept().await.expect("the connection");
    let slot = irc.slots.clone().try_acquire_owned().expect("a free slot");
    std::mem::size_of_val(&connection::run(tcp, peer.ip(), irc, slot, false))
}
