//! The accept loop and the state every connection shares.
//!
//! Like mini-redis, [`serve`] takes an already-bound listener and a shutdown
//! future, so tests run it on port 0 and stop it when they like. A semaphore
//! caps simultaneous connections. Past the cap, and when the process is out
//! of file descriptors, new clients are shed (`shed`) rather than left to
//! wait in the backlog. A connection that holds a slot without using it is
//! closed: hyper's header timeout bounds a request's head, and an idle
//! watchdog bounds the time between requests.

use std::future::Future;
use std::net::SocketAddr;
use std::pin::pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;

use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{Notify, Semaphore};
use tokio::time::Instant;
use tokio_rustls::TlsAcceptor;
use tokio_util::task::TaskTracker;

use base::limits::AddressRates;
use base::metrics::Metrics;
use base::shutdown::Shutdown;
use base::token::Verifier;
use base::{Bounds, Context, tls};

use crate::apps::App;
use crate::config::Config;
use crate::shed::Shedder;
use transport::{sockjs, websocket};
use crate::{Error, http};

/// What every connection of one server shares: the protocols' context,
/// and what the server put together from the configuration.
pub struct ServerState {
    /// What every protocol is handed (shutdown, tasks, metrics, rates,
    /// tokens, bounds).
    pub context: Arc<Context>,
    pub config: Config,
    pub mounts: Vec<Arc<MountState>>,
    /// The connection to the other nodes, when rooms span several.
    pub link: Option<Arc<cluster::Link>>,
    /// The XMPP service, when XMPP is on.
    pub xmpp: Option<Arc<crate::xmpp::Xmpp>>,
    /// XMPP over BOSH, when XMPP is on.
    pub bosh: Option<crate::xmpp::bosh::Service>,
    tls: Option<TlsAcceptor>,
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

/// One mounted app.
pub type MountState = transport::Mount<App>;

/// Most publishes waiting to go to the broker, across the node's clients.
const BROKER_QUEUE: usize = 65_536;

/// Bursts of new sessions an address may open: ten seconds' worth.
const SESSION_BURST_SECONDS: u32 = 10;

impl ServerState {
    fn new(config: Config, link: Option<Arc<cluster::Link>>, xmpp_on: bool) -> Result<ServerState, Error> {
        let chat_rooms = hub::RoomLimits {
            max_members: config.max_room_members,
            join_rate: Some(config.join_rate),
            history: config.room_history,
        };
        let mounts: Vec<Arc<MountState>> = config
            .mounts
            .iter()
            .map(|m| {
                let app = match &link {
                    Some(link) => App::new(m.app, cluster::NatsBroker::new(link.clone(), &m.prefix, App::limits(m.app, chat_rooms))),
                    None => App::in_memory(m.app, chat_rooms),
                };
                Arc::new(MountState {
                    prefix: m.prefix.clone(),
                    sockjs: m.sockjs.clone(),
                    limits: m.limits,
                    protocol: Arc::new(app),
                    sessions: Arc::new(sockjs::Registry::new(16, m.limits.max_sessions)),
                    websocket_limits: Arc::new(websocket::Limits {
                        max_message_size: config.max_message_size,
                        close_grace: config.shutdown_grace,
                        ping_interval: config.ping_interval,
                        max_message_rate: m.limits.max_message_rate,
                        max_byte_rate: m.limits.max_byte_rate,
                        permessage_deflate: config.permessage_deflate,
                    }),
                })
            })
            .collect();
        // STARTTLS on XMPP streams uses the listener's certificate.
        let xmpp_tls = match &config.tls {
            Some(files) if xmpp_on => Some(tls::acceptor_for(files, &[])?),
            _ => None,
        };
        let tls = config.tls.as_ref().map(tls::acceptor).transpose()?;
        let tokens = config.token_key.as_ref().map(Verifier::new).transpose()?;
        let session_rates = AddressRates::new(config.session_rate, config.session_rate.saturating_mul(SESSION_BURST_SECONDS));
        let bounds = Bounds {
            queue_limit: config.queue_limit,
            max_message_size: config.max_message_size,
            header_timeout: config.header_timeout,
            idle_timeout: config.idle_timeout,
            ping_interval: config.ping_interval,
        };
        let context = Arc::new(Context {
            metrics: Metrics::new(link.is_some()),
            shutdown: Shutdown::default(),
            tracker: TaskTracker::new(),
            session_rates,
            tokens,
            bounds,
        });
        let xmpp = xmpp_on.then(|| {
            // MUC rooms are the first chat mount's rooms.
            let rooms = mounts.iter().find(|m| m.protocol.kind() == crate::AppKind::Chat).map(|m| m.protocol.broker().clone());
            let auth = crate::xmpp::Auth {
                // Checked by the configuration's validation.
                accounts: {
                    let accounts = crate::xmpp::Accounts::new(&config.xmpp_accounts).unwrap_or_default();
                    if config.xmpp_registration > 0 { accounts.open(config.xmpp_registration) } else { accounts }
                },
                anonymous: config.xmpp_anonymous,
                plain_unencrypted: config.xmpp_plain_unencrypted,
                tries: config.xmpp_auth_tries,
                failures: AddressRates::per(config.xmpp_auth_failures, std::time::Duration::from_secs(60)),
            };
            let rates = config.xmpp_limits();
            let settings = crate::xmpp::Settings {
                domain: config.xmpp_domain.clone(),
                max_connections: config.max_connections,
                resumption: crate::xmpp::Resumption { timeout: config.xmpp_resume_timeout, max_parked: config.xmpp_max_parked },
                quotas: crate::xmpp::Quotas { list: config.xmpp_list_limit, rooms: config.xmpp_max_rooms },
                login_timeout: config.xmpp_login_timeout,
                inflow: base::limits::Inflow::new(rates.max_message_rate, rates.max_byte_rate),
            };
            Arc::new(crate::xmpp::Xmpp::new(context.clone(), settings, auth, xmpp_tls, rooms))
        });
        let bosh = xmpp.as_ref().map(|xmpp| {
            let settings = crate::xmpp::bosh::Settings {
                max_sessions: config.bosh_max_sessions,
                per_address: config.bosh_max_sessions_per_address,
                wait: config.bosh_wait,
                inactivity: config.bosh_inactivity,
            };
            crate::xmpp::bosh::Service::new(xmpp.clone(), settings)
        });
        if let Some(xmpp) = &xmpp {
            for mount in mounts.iter().filter(|m| m.protocol.kind() == crate::AppKind::Xmpp) {
                mount.protocol.serve_xmpp(xmpp);
            }
        }
        Ok(ServerState {
            context,
            config,
            mounts,
            link,
            xmpp,
            bosh,
            tls,
        })
    }

    /// The mount at `prefix` (e.g. `/echo`).
    pub fn mount(&self, prefix: &str) -> Option<&Arc<MountState>> {
        self.mounts.iter().find(|m| m.prefix == prefix)
    }
}

pub use base::Connection;

/// Serves clients on `listener` until `shutdown` resolves; then stops
/// accepting, closes every client with 1001, and returns once they are gone
/// or the configured grace has passed, whichever is first.
pub async fn serve(
    listener: TcpListener,
    config: Config,
    shutdown: impl Future<Output = ()> + Send,
) -> Result<(), Error> {
    let xmpp = XmppListeners::bind(&config).await?;
    serve_with(listener, xmpp, config, shutdown).await
}

/// Where XMPP clients connect: plain TCP (with STARTTLS) and direct TLS.
#[derive(Debug, Default)]
pub struct XmppListeners {
    pub plain: Option<TcpListener>,
    pub direct_tls: Option<TcpListener>,
}

impl XmppListeners {
    /// Binds what `config` asks for.
    pub async fn bind(config: &Config) -> Result<XmppListeners, Error> {
        let bind = |addr: Option<std::net::SocketAddr>| async move {
            match addr {
                Some(addr) => TcpListener::bind(addr).await.map(Some).map_err(|e| Error::io(format!("cannot listen for XMPP on {addr}: {e}"))),
                None => Ok(None),
            }
        };
        Ok(XmppListeners { plain: bind(config.xmpp_listen).await?, direct_tls: bind(config.xmpp_tls_listen).await? })
    }

    fn any(&self) -> bool {
        self.plain.is_some() || self.direct_tls.is_some()
    }
}

/// Serves as [`serve`] does, with XMPP clients on `xmpp` (bound by the
/// caller, whatever `config.xmpp_listen` says).
pub async fn serve_with(
    listener: TcpListener,
    xmpp: XmppListeners,
    config: Config,
    shutdown: impl Future<Output = ()> + Send,
) -> Result<(), Error> {
    let link = match &config.broker {
        Some(url) => {
            let options = cluster::Options {
                url: url.clone(),
                ttl: config.broker_ttl,
                history: config.room_history.messages,
                max_message_size: config.max_message_size,
                queue: BROKER_QUEUE,
            };
            Some(cluster::Link::connect(options).await.map_err(|e| Error::io(format!("broker: {e}")))?)
        }
        None => None,
    };
    let state = Arc::new(ServerState::new(config, link, xmpp.any())?);
    if let Some(service) = state.xmpp.clone() {
        for (listener, direct_tls) in [(xmpp.plain, false), (xmpp.direct_tls, true)] {
            if let Some(listener) = listener {
                state.tracker.spawn(crate::xmpp::serve(listener, service.clone(), direct_tls));
            }
        }
    }
    let slots = Arc::new(Semaphore::new(state.config.max_connections));
    let mut shedder = Shedder::new(state.config.max_connections);
    let mut shutdown = pin!(shutdown);
    loop {
        let accepted = tokio::select! {
            accepted = listener.accept() => accepted,
            _ = &mut shutdown => break,
        };
        let (stream, peer) = match accepted {
            Ok(accepted) => accepted,
            Err(e) => {
                shedder.accept_failed(&listener, &e, &state.metrics).await;
                continue;
            }
        };
        let Ok(slot) = slots.clone().try_acquire_owned() else {
            shedder.at_capacity(stream, &state.metrics, &state.tracker);
            continue;
        };
        shedder.accepted(slots.available_permits());
        // Small frames are the norm here; do not hold them back for Nagle.
        let _ = stream.set_nodelay(true);
        let connection = Arc::new(Connection::new(peer.ip(), slot));
        state.tracker.spawn(handle_connection(stream, peer, connection, state.clone()));
    }
    drop(listener);
    let deadline = Instant::now() + state.config.shutdown_grace;
    state.shutdown.trigger();
    state.tracker.close();
    if tokio::time::timeout_at(deadline, state.tracker.wait()).await.is_err() {
        tracing::warn!("{} connections still open at the end of the shutdown grace; exiting anyway", state.tracker.len());
    }
    Ok(())
}

/// Serves one accepted connection, over TLS if the server has it.
async fn handle_connection(stream: TcpStream, peer: SocketAddr, connection: Arc<Connection>, state: Arc<ServerState>) {
    match &state.tls {
        None => http_connection(stream, connection, state).await,
        Some(acceptor) => {
            // A handshake is a head like any other: it gets the header timeout.
            let handshake = tokio::time::timeout(state.config.header_timeout, acceptor.accept(stream));
            match handshake.await {
                Ok(Ok(tls)) => http_connection(tls, connection, state.clone()).await,
                Ok(Err(e)) => tracing::debug!("TLS handshake with {peer} failed: {e}"),
                Err(_) => tracing::debug!("TLS handshake with {peer} timed out"),
            }
        }
    }
}

/// Runs HTTP/1.1 on a connection until it ends, is idle too long, or the
/// server shuts down.
async fn http_connection<S>(io: S, connection: Arc<Connection>, state: Arc<ServerState>)
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let activity = Arc::new(Activity::new());
    let service = {
        let (state, activity) = (state.clone(), activity.clone());
        service_fn(move |req| {
            let busy = Busy::start(activity.clone());
            let (state, connection) = (state.clone(), connection.clone());
            async move { http::route(req, state, connection).await.map(|res| res.map(|body| http::hold(body, busy))) }
        })
    };
    let mut builder = http1::Builder::new();
    builder
        .keep_alive(true)
        .timer(TokioTimer::new())
        .header_read_timeout(state.config.header_timeout)
        .max_buf_size(state.config.max_header_size);
    let conn = builder.serve_connection(TokioIo::new(io), service).with_upgrades();
    let mut conn = pin!(conn);
    tokio::select! {
        _ = conn.as_mut() => {}
        () = activity.idle_for(state.config.idle_timeout) => {
            // No request is in progress, so closing loses nothing.
        }
        _ = state.shutdown.wait() => {
            conn.as_mut().graceful_shutdown();
            let _ = conn.await;
        }
    }
}

/// Whether a connection has a request in progress, and since when it has not.
#[derive(Debug)]
struct Activity {
    started: Instant,
    in_progress: AtomicUsize,
    /// Milliseconds from `started` to the end of the last request.
    idle_since_ms: AtomicU64,
    /// Signalled when the last request in progress ends.
    ended: Notify,
}

impl Activity {
    fn new() -> Activity {
        Activity {
            started: Instant::now(),
            in_progress: AtomicUsize::new(0),
            idle_since_ms: AtomicU64::new(0),
            ended: Notify::new(),
        }
    }

    /// Resolves once the connection has had no request in progress for `limit`.
    async fn idle_for(&self, limit: Duration) {
        loop {
            if self.in_progress.load(Ordering::Acquire) > 0 {
                // `notify_one` keeps a permit, so an end between the load and
                // this wait is not missed.
                self.ended.notified().await;
                continue;
            }
            let idle_since = self.started + Duration::from_millis(self.idle_since_ms.load(Ordering::Acquire));
            if Instant::now() >= idle_since + limit {
                return;
            }
            // A request may start meanwhile; the check above then waits for it.
            tokio::time::sleep_until(idle_since + limit).await;
        }
    }
}

/// A request in progress: from its head until its response body is done
/// (a streaming response is in progress for as long as it streams).
#[derive(Debug)]
pub struct Busy(Arc<Activity>);

impl Busy {
    fn start(activity: Arc<Activity>) -> Busy {
        activity.in_progress.fetch_add(1, Ordering::AcqRel);
        Busy(activity)
    }
}

impl Drop for Busy {
    fn drop(&mut self) {
        let ms = u64::try_from(self.0.started.elapsed().as_millis()).unwrap_or(u64::MAX);
        self.0.idle_since_ms.store(ms, Ordering::Release);
        if self.0.in_progress.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.0.ended.notify_one();
        }
    }
}
