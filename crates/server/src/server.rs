//! The accept loop: connections are accepted, bounded and handed to
//! hyper with the router (`http`); the state they share is `state`.
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

use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Semaphore;
use tokio::time::Instant;

use crate::activity::{Activity, Busy};
use crate::config::Config;
use crate::error::Error;
use crate::http;
use crate::shed::Shedder;
use crate::state::{Listening, ServerState};

pub use base::Connection;

/// Most publishes waiting to go to the broker, across the node's clients.
const BROKER_QUEUE: usize = 65_536;

/// Serves clients on `listener` until `shutdown` resolves; then stops
/// accepting, closes every client with 1001, and returns once they are gone
/// or the configured grace has passed, whichever is first.
pub async fn serve(
    listener: TcpListener,
    config: Config,
    shutdown: impl Future<Output = ()> + Send,
) -> Result<(), Error> {
    let listeners = Listeners::bind(&config).await?;
    serve_with(listener, listeners, config, shutdown).await
}

/// The listeners beside the HTTP one: where XMPP clients connect (plain
/// TCP with STARTTLS, and direct TLS), where other XMPP servers do
/// (federation), and where IRC clients do (plain and TLS).
#[derive(Debug, Default)]
pub struct Listeners {
    pub xmpp: Option<TcpListener>,
    pub xmpp_tls: Option<TcpListener>,
    pub s2s: Option<TcpListener>,
    /// Other servers with TLS from the first byte (XEP-0368).
    pub s2s_tls: Option<TcpListener>,
    /// Peers configured in advance, with no handshake (XEP-0361).
    pub s2s_zero: Option<TcpListener>,
    pub irc: Option<TcpListener>,
    pub irc_tls: Option<TcpListener>,
    /// The server API on a listener of its own (`--api-listen`).
    pub api: Option<TcpListener>,
    /// Other nodes, which share the rooms this node hosts (`--broker-listen`).
    pub broker: Option<TcpListener>,
}

impl Listeners {
    /// Binds what `config` asks for.
    pub async fn bind(config: &Config) -> Result<Listeners, Error> {
        let fast_open = config.server.tcp_fast_open;
        let bind = |addr: Option<std::net::SocketAddr>, what: &'static str| async move {
            match addr {
                Some(addr) => listen(addr, fast_open).await.map(Some).map_err(|e| Error::io(format!("cannot listen for {what} on {addr}: {e}"))),
                None => Ok(None),
            }
        };
        let federates = config.federation.on(config.tls.as_ref());
        let s2s = config.federation.listen.address().filter(|_| federates);
        let s2s_tls = config.federation.tls_listen.address().filter(|_| federates);
        let s2s_zero = config.federation.zero_listen.address().filter(|_| federates);
        let irc_tls = config.irc.tls_listen.address().filter(|_| config.tls.is_some());
        Ok(Listeners {
            xmpp: bind(config.xmpp.listen.address(), "XMPP").await?,
            xmpp_tls: bind(config.xmpp.tls_listen.address(), "XMPP").await?,
            s2s: bind(s2s, "XMPP servers").await?,
            s2s_tls: bind(s2s_tls, "XMPP servers").await?,
            s2s_zero: bind(s2s_zero, "XMPP servers configured in advance").await?,
            irc: bind(config.irc.listen.address(), "IRC").await?,
            irc_tls: bind(irc_tls, "IRC").await?,
            api: bind(config.api.listen.address().filter(|_| config.api.keys.is_some()), "the server API").await?,
            broker: bind(config.broker.listen.address(), "other nodes").await?,
        })
    }

    fn listening(&self) -> Listening {
        let federation = self.s2s.is_some() || self.s2s_tls.is_some() || self.s2s_zero.is_some();
        Listening {
            xmpp: self.xmpp.is_some() || self.xmpp_tls.is_some() || federation,
            federation,
            irc: self.irc.is_some() || self.irc_tls.is_some(),
        }
    }
}

/// A listener at `addr`; with `fast_open`, one that takes data in a
/// client's SYN (`--tcp-fast-open`).
pub async fn listen(addr: std::net::SocketAddr, fast_open: bool) -> std::io::Result<TcpListener> {
    let listener = TcpListener::bind(addr).await?;
    if fast_open && let Err(why) = tfo::listen(&listener, FAST_OPEN_QUEUE) {
        tracing::warn!("--tcp-fast-open on {addr}: {why}; clients' SYNs will carry no data");
    }
    Ok(listener)
}

/// Connections opened with data in their SYN that may wait to be accepted,
/// per listener (`--tcp-fast-open`).
pub const FAST_OPEN_QUEUE: u16 = 1024;

/// Serves as [`serve`] does, with the other protocols on `listeners`
/// (bound by the caller, whatever the configuration says).
pub async fn serve_with(
    listener: TcpListener,
    listeners: Listeners,
    config: Config,
    shutdown: impl Future<Output = ()> + Send,
) -> Result<(), Error> {
    serve_when_ready(listener, listeners, config, shutdown, || {}).await
}

/// Serves as [`serve_with`] does, and calls `ready` once the server is
/// ready to serve: its store open and its persistent rooms taken back,
/// before it accepts. A server that cannot get there ends without calling it.
pub async fn serve_when_ready(
    listener: TcpListener,
    listeners: Listeners,
    config: Config,
    shutdown: impl Future<Output = ()> + Send,
    ready: impl FnOnce(),
) -> Result<(), Error> {
    let limits = cluster::link::Limits::for_messages(config.server.max_message_size, BROKER_QUEUE);
    let cluster = match (&config.broker.url, &listeners.broker) {
        (Some(url), _) if url.starts_with("node://") => {
            let at = url.trim_start_matches("node://");
            Some(cluster::Cluster::Uplink(cluster::remote::Uplink::connect(at, limits).await.map_err(|e| Error::io(format!("broker: {e}")))?))
        }
        (Some(url), _) => {
            let options = cluster::Options {
                url: url.clone(),
                ttl: config.broker.ttl,
                history: config.rooms.history,
                max_message_size: config.server.max_message_size,
                queue: BROKER_QUEUE,
            };
            Some(cluster::Cluster::Nats(cluster::Nats::connect(options).await.map_err(|e| Error::io(format!("broker: {e}")))?))
        }
        (None, Some(_)) => Some(cluster::Cluster::Host(cluster::host::Host::new(limits))),
        (None, None) => None,
    };
    let store = store::open_with(&config.store.choice(), config.store.sqlite_synchronous).await.map_err(Error::store)?;
    let state = Arc::new(ServerState::new(config, cluster, store, listeners.listening())?);
    if let (Some(cluster::Cluster::Host(host)), Some(listener)) = (&state.cluster, listeners.broker) {
        state.tracker.spawn(host.clone().listen(listener));
    }
    if let Some(service) = &state.xmpp {
        let rooms = service.load_rooms().await.map_err(Error::store)?;
        tracing::debug!("{rooms} persistent rooms taken back from the store");
    }
    if let Some(service) = state.xmpp.clone() {
        for (listener, direct_tls) in [(listeners.xmpp, false), (listeners.xmpp_tls, true)] {
            if let Some(listener) = listener {
                state.tracker.spawn(xmpp::serve(listener, service.clone(), direct_tls));
            }
        }
        for (listener, direct) in [(listeners.s2s, false), (listeners.s2s_tls, true)] {
            if let Some(listener) = listener {
                state.tracker.spawn(xmpp::s2s::serve(listener, service.clone(), direct));
            }
        }
        if let Some(listener) = listeners.s2s_zero {
            state.tracker.spawn(xmpp::s2s::serve_zero(listener, service.clone()));
        }
    }
    for (listener, tls) in [(listeners.irc, false), (listeners.irc_tls, true)] {
        if let Some(listener) = listener {
            state.tracker.spawn(irc::serve(listener, state.irc.clone(), tls));
        }
    }
    ready();
    let slots = Arc::new(Semaphore::new(state.config.server.max_connections));
    if let Some(listener) = listeners.api {
        state.tracker.spawn(serve_api(listener, slots.clone(), state.clone()));
    }
    let mut shedder = Shedder::new(state.config.server.max_connections);
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
        // Small frames are the norm here: not held back for Nagle, unless
        // --tcp-nodelay false asks for it.
        state.tune(&stream);
        let connection = Arc::new(Connection::new(peer.ip(), slot));
        state.tracker.spawn(handle_connection(stream, peer, connection, state.clone(), Routes::All));
    }
    drop(listener);
    let deadline = Instant::now() + state.config.server.shutdown_grace;
    state.shutdown.trigger();
    state.tracker.close();
    if tokio::time::timeout_at(deadline, state.tracker.wait()).await.is_err() {
        tracing::warn!("{} connections still open at the end of the shutdown grace; exiting anyway", state.tracker.len());
    }
    // What the archive's writer was given is kept before the server stops.
    if let Some(archive) = &state.archive
        && tokio::time::timeout(state.config.server.shutdown_grace, archive.flush()).await.is_err()
    {
        tracing::warn!("the archive's writer did not finish within the shutdown grace");
    }
    Ok(())
}

/// Serves the server API alone on `listener`, its connections counted
/// among every connection's `slots`; one past them is closed at once.
async fn serve_api(listener: TcpListener, slots: Arc<Semaphore>, state: Arc<ServerState>) {
    let context = state.context.clone();
    context
        .accept(listener, "the server API", |stream, peer| {
            let Ok(slot) = slots.clone().try_acquire_owned() else { return };
            let connection = Arc::new(Connection::new(peer.ip(), slot));
            state.tracker.spawn(handle_connection(stream, peer, connection, state.clone(), Routes::Api));
        })
        .await;
}

/// What a listener serves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Routes {
    /// Everything (`http::route`).
    All,
    /// The server API only (`--api-listen`).
    Api,
}

/// Serves one accepted connection, over TLS if the server has it.
async fn handle_connection(stream: TcpStream, peer: SocketAddr, connection: Arc<Connection>, state: Arc<ServerState>, routes: Routes) {
    match &state.tls {
        None => http_connection(stream, connection, state, routes).await,
        Some(acceptor) => {
            // A handshake is a head like any other: it gets the header timeout.
            let handshake = tokio::time::timeout(state.config.server.header_timeout, acceptor.accept(stream));
            match handshake.await {
                Ok(Ok(tls)) => http_connection(tls, connection, state.clone(), routes).await,
                Ok(Err(e)) => tracing::debug!("TLS handshake with {peer} failed: {e}"),
                Err(_) => tracing::debug!("TLS handshake with {peer} timed out"),
            }
        }
    }
}

/// Runs HTTP/1.1 on a connection until it ends, is idle too long, or the
/// server shuts down.
async fn http_connection<S>(io: S, connection: Arc<Connection>, state: Arc<ServerState>, routes: Routes)
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let activity = Arc::new(Activity::new());
    let service = {
        let (state, activity) = (state.clone(), activity.clone());
        service_fn(move |req| {
            let busy = Busy::start(activity.clone());
            let (state, connection) = (state.clone(), connection.clone());
            async move {
                let res = match routes {
                    Routes::All => http::route(req, state, connection).await,
                    Routes::Api => http::route_api(req, &state).await,
                };
                res.map(|res| res.map(|body| http::hold(body, busy)))
            }
        })
    };
    let mut builder = http1::Builder::new();
    builder
        .keep_alive(true)
        .timer(TokioTimer::new())
        .header_read_timeout(state.config.server.header_timeout)
        .max_buf_size(state.config.server.max_header_size);
    let conn = builder.serve_connection(TokioIo::new(io), service).with_upgrades();
    let mut conn = pin!(conn);
    tokio::select! {
        _ = conn.as_mut() => {}
        () = activity.idle_for(state.config.server.idle_timeout) => {
            // No request is in progress, so closing loses nothing.
        }
        _ = state.shutdown.wait() => {
            conn.as_mut().graceful_shutdown();
            let _ = conn.await;
        }
    }
}
