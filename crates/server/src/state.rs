//! What every connection of one server shares: the protocols' `Context`,
//! the configuration, the mounts, and the XMPP and BOSH services, put
//! together from the configuration.

use std::sync::Arc;

use apps::{App, AppKind};
use base::limits::AddressRates;
use base::metrics::Metrics;
use base::shutdown::Shutdown;
use base::token::Verifier;
use base::rooms::ArchivedRooms;
use base::{Bounds, Context, tls};
use tokio_rustls::TlsAcceptor;
use tokio_util::task::TaskTracker;
use transport::{sockjs, websocket};

use crate::config::{Config, MountKind};
use crate::error::Error;
use crate::served::Served;

/// What every connection of one server shares: the protocols' context,
/// and what the server put together from the configuration.
pub struct ServerState {
    /// What every protocol is handed (shutdown, tasks, metrics, rates,
    /// tokens, bounds).
    pub context: Arc<Context>,
    pub config: Config,
    pub mounts: Vec<Arc<MountState>>,
    /// The connection to the other nodes, when rooms span several.
    pub cluster: Option<cluster::Cluster>,
    /// The XMPP service, when XMPP is on.
    pub xmpp: Option<Arc<xmpp::Xmpp>>,
    /// XMPP over BOSH, when XMPP is on.
    pub bosh: Option<xmpp::bosh::Bosh>,
    /// The IRC service: over TCP where `--irc-listen` says, and over
    /// WebSocket at `/irc-websocket` always.
    pub irc: Arc<irc::Irc>,
    /// TLS on the listener, if configured.
    pub tls: Option<TlsAcceptor>,
    /// The archives' writer, when anything is archived.
    pub archive: Option<Arc<base::archive::Archive>>,
    /// The server API, when a key is configured and there is a chat mount.
    pub api: Option<Arc<api::Api>>,
}

impl std::ops::Deref for ServerState {
    type Target = Context;

    fn deref(&self) -> &Context {
        &self.context
    }
}

impl std::fmt::Debug for ServerState {
    // rustls's acceptor has no Debug; say whether there is one.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServerState")
            .field("config", &self.config)
            .field("mounts", &self.mounts)
            .field("tls", &self.tls.is_some())
            .finish_non_exhaustive()
    }
}

/// One mount: an app, or XMPP over SockJS.
pub type MountState = transport::Mount<Served>;

/// Which protocols the server has listeners for.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Listening {
    pub xmpp: bool,
    /// Other XMPP servers' streams.
    pub federation: bool,
    pub irc: bool,
}

/// How long the server API's disconnect waits for the other nodes' answers.
const DISCONNECT_PATIENCE: std::time::Duration = std::time::Duration::from_secs(2);

/// Bursts of new sessions an address may open: ten seconds' worth.
const SESSION_BURST_SECONDS: u32 = 10;

impl ServerState {
    /// The state of a server with `config`, whose rooms span nodes through
    /// `cluster` if there is one, which keeps what outlives it in `store`,
    /// with the protocols `listening` says on.
    pub fn new(config: Config, cluster: Option<cluster::Cluster>, store: Arc<dyn store::Store>, listening: Listening) -> Result<ServerState, Error> {
        let Listening { xmpp: xmpp_on, federation: federates, irc: irc_on } = listening;
        // STARTTLS and direct TLS on XMPP streams use the listener's certificate.
        let xmpp_tls = match &config.tls {
            Some(files) if xmpp_on => Some(tls::early_acceptor(files, &[])?),
            _ => None,
        };
        let irc_tls = match &config.tls {
            Some(files) if irc_on => Some(tls::acceptor_for(files, &[])?),
            _ => None,
        };
        let tls = config.tls.as_ref().map(tls::acceptor).transpose()?;
        let tokens = config.token_key.as_ref().map(Verifier::new).transpose()?;
        let session_rates = AddressRates::new(config.server.session_rate, config.server.session_rate.saturating_mul(SESSION_BURST_SECONDS));
        let bounds = Bounds {
            queue_limit: config.server.queue_limit,
            max_message_size: config.server.max_message_size,
            header_timeout: config.server.header_timeout,
            idle_timeout: config.server.idle_timeout,
            ping_interval: config.server.ping_interval,
        };
        let context = Arc::new(Context {
            metrics: Metrics::new(cluster.is_some()),
            shutdown: Shutdown::default(),
            tracker: TaskTracker::new(),
            session_rates,
            tokens,
            bounds,
            nodelay: config.server.tcp_nodelay,
        });
        // One writer for every archive: accounts' (XMPP's chats, IRC's
        // private messages) and the rooms'.
        let xmpp_archive = xmpp_on && config.xmpp.archive;
        let irc_archive = irc_on && config.xmpp.archive;
        let archive = (xmpp_archive || irc_archive || config.rooms.archive).then(|| {
            let bounds = base::archive::Bounds { retention: config.store.archive_retention, limit: Some(config.store.archive_limit).filter(|&l| l > 0) };
            Arc::new(base::archive::Archive::start(store.clone(), config.store.archive_queue, bounds, context.clone()))
        });
        let room_archive = archive.clone().filter(|_| config.rooms.archive);
        let chat_rooms = config.rooms.limits();
        // The apps first: XMPP's MUC rooms are the first chat mount's.
        let apps: Vec<Option<Arc<App>>> = config
            .mounts
            .iter()
            .map(|m| {
                let MountKind::App(kind) = m.app else { return None };
                let limits = App::limits(kind, chat_rooms);
                let rooms: Arc<dyn hub::Broker> = match &cluster {
                    Some(cluster) => cluster.broker(&m.prefix, limits),
                    None => Arc::new(hub::MemoryBroker::new(hub::Hub::with_limits(16, limits))),
                };
                let rooms: Arc<dyn hub::Broker> = match &room_archive {
                    Some(archive) if kind == AppKind::Chat => Arc::new(ArchivedRooms::new(rooms, archive.clone(), &m.prefix, context.clone())),
                    _ => rooms,
                };
                Some(Arc::new(App::new(kind, rooms)))
            })
            .collect();
        // MUC rooms and IRC channels are the first chat mount's rooms.
        let chat_rooms = apps.iter().flatten().find(|app| app.kind() == AppKind::Chat).map(|app| app.broker().clone());
        let federation = match &config.tls {
            Some(files) if federates => {
                let f = &config.federation;
                let identity = xmpp::s2s::Identity::new(files, f.trust.as_deref())?;
                let settings = xmpp::s2s::Settings {
                    routes: f.routes.0.iter().cloned().collect(),
                    dns: f.dns,
                    connect_timeout: f.connect_timeout,
                    queue_bytes: f.queue,
                    idle_timeout: f.idle_timeout,
                    max_streams: f.max_streams,
                    max_guests: f.max_guests,
                    max_streams_per_domain: f.max_streams_per_domain,
                    dialback: f.dialback.clone(),
                    secret: f.secret.clone(),
                    zero: config.zero_peers.clone(),
                };
                Some(Arc::new(xmpp::s2s::Federation::new(settings, identity)))
            }
            _ => None,
        };
        let muc_prefix = config.mounts.iter().find(|m| m.app == MountKind::App(AppKind::Chat)).map(|m| m.prefix.clone());
        let xmpp = xmpp_on.then(|| {
            let rooms = chat_rooms.clone();
            let auth = xmpp::Auth {
                // Checked by the configuration's validation.
                accounts: {
                    let accounts = xmpp::Accounts::new(&config.xmpp_accounts, store.clone()).unwrap_or_default();
                    if config.xmpp.registration > 0 { accounts.open(config.xmpp.registration) } else { accounts }
                },
                anonymous: config.xmpp.anonymous,
                plain_unencrypted: config.xmpp.plain_unencrypted,
                tries: config.xmpp.auth_tries,
                failures: AddressRates::per(config.xmpp.auth_failures, std::time::Duration::from_secs(60)),
                fast: (config.xmpp.fast_tokens > 0).then(|| base::fast::Fast::new(store.clone(), config.xmpp.fast_token_lifetime, config.xmpp.fast_tokens)),
            };
            let rates = config.xmpp_limits();
            let settings = xmpp::Settings {
                domain: config.xmpp.domain.clone(),
                max_connections: config.server.max_connections,
                resumption: xmpp::Resumption { timeout: config.xmpp.resume_timeout, max_parked: config.xmpp.max_parked },
                quotas: xmpp::Quotas { list: config.xmpp.list_limit, rooms: config.xmpp.max_rooms, offline: config.xmpp.offline_limit },
                login_timeout: config.xmpp.login_timeout,
                inflow: base::limits::Inflow::new(rates.max_message_rate, rates.max_byte_rate),
                archiving: xmpp::Archiving {
                    chats: archive.clone().filter(|_| xmpp_archive),
                    rooms: room_archive.clone().zip(muc_prefix.clone()),
                },
                federation,
                room_defaults: xmpp::RoomConfig { whois_anyone: config.xmpp.muc_non_anonymous, ..xmpp::RoomConfig::default() },
                nodes: cluster.clone().map(|cluster| Arc::new(OtherNodes(cluster)) as Arc<dyn xmpp::nodes::OtherNodes>),
            };
            Arc::new(xmpp::Xmpp::new(context.clone(), settings, auth, xmpp_tls, rooms, store.clone()))
        });
        let irc = {
            let rooms = chat_rooms.clone();
            let rates = config.limits;
            let settings = irc::Settings {
                server_name: config.irc.server_name.clone(),
                description: config.irc.description.clone(),
                network: "Switchboard".to_owned(),
                max_connections: config.server.max_connections,
                max_channels: config.irc.max_channels,
                registration_timeout: config.irc.registration_timeout,
                password: config.irc.password.clone(),
                // Checked by the configuration's validation.
                operators: config.irc.operator_list().unwrap_or_default(),
                inflow: base::limits::Inflow::new(rates.max_message_rate, rates.max_byte_rate),
                plain_unencrypted: config.xmpp.plain_unencrypted,
                https: config.tls.is_some(),
                write_delay: config.server.write_delay,
            };
            let logins = irc::Logins {
                // Checked by the configuration's validation.
                accounts: {
                    let accounts = xmpp::Accounts::new(&config.xmpp_accounts, store.clone()).unwrap_or_default();
                    // IRC's REGISTER makes accounts as XMPP's in-band registration does, under the same bound.
                    if config.xmpp.registration > 0 { accounts.open(config.xmpp.registration) } else { accounts }
                },
                failures: AddressRates::per(config.xmpp.auth_failures, std::time::Duration::from_secs(60)),
            };
            // A persistent MUC room keeps the topic an IRC client sets as its subject.
            let topics = xmpp.clone().map(|xmpp| Arc::new(xmpp::KeptSubjects(xmpp)) as Arc<dyn base::rooms::TopicKeeper>);
            // Private messages are kept in the accounts' archives, as their
            // owners' preferences say: XMPP's, or the store's with XMPP off.
            let private = archive.clone().filter(|_| irc_archive).map(|archive| {
                let keeps: Arc<dyn base::archive::Keeps> = match &xmpp {
                    Some(xmpp) => Arc::new(xmpp::ArchivePolicy::of(xmpp.clone())),
                    None => Arc::new(xmpp::ArchivePolicy::stored(store.clone(), context.clone())),
                };
                irc::PrivateArchive { archive, domain: config.xmpp.domain.clone(), keeps }
            });
            let service = irc::Irc::new(context.clone(), settings, rooms, logins, irc_tls, topics).with_archive(room_archive.clone().zip(muc_prefix.clone()));
            Arc::new(service.with_private_archive(private))
        };
        let bosh = xmpp.as_ref().map(|xmpp| {
            let settings = xmpp::bosh::Settings {
                max_sessions: config.bosh.max_sessions,
                per_address: config.bosh.max_sessions_per_address,
                wait: config.bosh.wait,
                inactivity: config.bosh.inactivity,
            };
            xmpp::bosh::Bosh::new(xmpp.clone(), settings)
        });
        // Each protocol's clients by name, which the server API and the
        // other nodes' disconnects close.
        let clients = chat_rooms.as_ref().map(|rooms| {
            let mut named: Vec<api::ClientsNamed> = Vec::new();
            if let Some(xmpp) = xmpp.clone() {
                named.push(Box::new(move |name: &str| xmpp.disconnecting(name)));
            }
            let service = irc.clone();
            named.push(Box::new(move |name: &str| service.client_named(name).into_iter().collect()));
            Arc::new(api::Clients::new(rooms.clone(), named))
        });
        // The other nodes' stanzas for this domain's users here.
        if let (Some(cluster), Some(xmpp)) = (&cluster, &xmpp) {
            let xmpp = Arc::downgrade(xmpp);
            cluster.answer_deliveries(move |to, stanza| xmpp.upgrade().map_or(0, |xmpp| xmpp.from_other_node(to, stanza)));
        }
        if let (Some(cluster), Some(clients)) = (&cluster, &clients) {
            let clients = clients.clone();
            cluster.answer_disconnects(move |name, reason| clients.disconnect(name, reason));
        }
        let api = match (config.api.settings(), &chat_rooms, &clients) {
            (Some(settings), Some(rooms), Some(clients)) => {
                let others = cluster.clone();
                let elsewhere: Option<api::Elsewhere> = cluster.clone().map(|cluster| {
                    let ask: api::Elsewhere = Box::new(move |name: String, reason: String| {
                        let cluster = cluster.clone();
                        Box::pin(async move { cluster.disconnect_elsewhere(&name, &reason, DISCONNECT_PATIENCE).await })
                    });
                    ask
                });
                let reach = api::Reach {
                    rooms: rooms.clone(),
                    archive: room_archive.clone().zip(muc_prefix),
                    clients: clients.clone(),
                    elsewhere,
                    node: cluster.as_ref().map_or_else(|| Arc::from(api::SOLE_NODE), cluster::Cluster::node),
                    nodes: Box::new(move || others.as_ref().map_or_else(Vec::new, cluster::Cluster::others)),
                };
                Some(Arc::new(api::Api::new(context.clone(), settings, reach)))
            }
            _ => None,
        };
        // One for every mount's WebSocket clients, a task for each of the
        // runtime's threads.
        let threads = tokio::runtime::Handle::try_current().map_or(1, |r| r.metrics().num_workers());
        let shared_writer = config.server.shared_writer.then(|| transport::shared_writer::SharedWriter::new(threads));
        let mounts = config
            .mounts
            .iter()
            .zip(apps)
            .map(|(m, app)| {
                let served = match (app, &xmpp) {
                    (Some(app), _) => Served::App(app),
                    (None, Some(xmpp)) => Served::Xmpp(xmpp.clone()),
                    (None, None) => Served::XmppOff,
                };
                Arc::new(MountState {
                    prefix: m.prefix.clone(),
                    sockjs: m.sockjs.clone(),
                    limits: m.limits,
                    protocol: Arc::new(served),
                    sessions: Arc::new(sockjs::Registry::new(16, m.limits.max_sessions)),
                    websocket_limits: Arc::new(websocket::Limits {
                        max_message_size: config.server.max_message_size,
                        close_grace: config.server.shutdown_grace,
                        ping_interval: config.server.ping_interval,
                        max_message_rate: m.limits.max_message_rate,
                        max_byte_rate: m.limits.max_byte_rate,
                        permessage_deflate: config.server.permessage_deflate,
                        write_delay: config.server.write_delay,
                        shared_writer: shared_writer.clone(),
                    }),
                })
            })
            .collect();
        Ok(ServerState {
            context,
            config,
            mounts,
            cluster,
            xmpp,
            bosh,
            irc,
            tls,
            archive,
            api,
        })
    }

    /// The mount at `prefix` (e.g. `/echo`).
    pub fn mount(&self, prefix: &str) -> Option<&Arc<MountState>> {
        self.mounts.iter().find(|m| m.prefix == prefix)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An idle XMPP session's memory is mostly its task: the session, the
    /// parser and the timers. What a stream does once (TLS, its end), what
    /// handling a read awaits, a write, a SASL exchange, stream management
    /// and the rate limiter are boxed, so that their state is not held by
    /// every idle stream; the connection's arguments are held once (not an
    /// async fn); the socket, the outbox, the timer, the shutdown and a
    /// takeover are polled by hand, not through a `select!` over futures of
    /// each; the timer is an alarm (`base::alarm::Timer`), the JID boxed,
    /// the rooms a tree, and the service and the outbox read through the
    /// session. At 520 bytes, the task cell (the future, 16 bytes of the
    /// tracker's, 104 of tokio's) is 640 bytes, one of jemalloc's classes; a
    /// byte more and it is 768.
    #[tokio::test]
    async fn an_xmpp_streams_future_stays_small() {
        let state = ServerState::new(Config::default(), None, Arc::new(store::MemoryStore::default()), Listening { xmpp: true, ..Listening::default() }).expect("the default configuration");
        let size = xmpp::stream_future_size(state.xmpp.clone().expect("XMPP is on")).await;
        assert!(size <= 520, "an XMPP stream's future is {size} bytes");
    }

    /// An idle XMPP session over WebSocket holds its task too: the carrier
    /// (tungstenite's stream inline), the session, and the stream's driving,
    /// the stream's making boxed. At 776 bytes, the task cell (the future
    /// and 120 bytes, rounded up to tokio's 128-byte alignment) is 896
    /// bytes, one of jemalloc's classes; a byte more and it is 1,024.
    #[tokio::test]
    async fn an_xmpp_websocket_streams_future_stays_small() {
        let state = ServerState::new(Config::default(), None, Arc::new(store::MemoryStore::default()), Listening { xmpp: true, ..Listening::default() }).expect("the default configuration");
        let size = xmpp::websocket_stream_future_size(state.xmpp.clone().expect("XMPP is on"));
        assert!(size <= 776, "an XMPP stream's future over WebSocket is {size} bytes");
    }

    /// An idle IRC client's memory is mostly its task: the socket, the
    /// client, its read buffer's handle, one timer (`base::alarm::Timer`)
    /// and the select over them (a line's parse and command, a SASL
    /// exchange, a TLS handshake, the rate limiter, a write that waits and
    /// the connection's end are boxed; what is drained, and what woke it,
    /// live only after the select), each held once (the future is an async
    /// block's, not an async fn's, which keeps its arguments twice). In a
    /// release build it is 392 bytes, the most a 512-byte task cell holds
    /// beside tokio's 104 bytes and the tracker's 16 (measured with
    /// `-Zprint-type-sizes`); a byte more and the cell is 640. This test's
    /// build lays it out in 408.
    #[tokio::test]
    async fn an_irc_connections_future_stays_small() {
        let state = ServerState::new(Config::default(), None, Arc::new(store::MemoryStore::default()), Listening::default()).expect("the default configuration");
        let size = irc::connection_future_size(state.irc.clone()).await;
        assert!(size <= 408, "an IRC connection's future is {size} bytes");
    }
}

/// XMPP's way to the other nodes: through the cluster.
#[derive(Debug)]
struct OtherNodes(cluster::Cluster);

impl xmpp::nodes::OtherNodes for OtherNodes {
    fn carry(&self, to: Vec<Arc<str>>, stanza: Arc<str>, patience: Option<std::time::Duration>) -> hub::BoxFuture<'static, usize> {
        let cluster = self.0.clone();
        Box::pin(async move { cluster.deliver_elsewhere(to, stanza, patience).await.unwrap_or(0) })
    }
}
