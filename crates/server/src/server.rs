//! The accept loop and the state every connection shares.
//!
//! Like mini-redis, [`serve`] takes an already-bound listener and a shutdown
//! future, so tests run it on port 0 and stop it when they like. A semaphore
//! caps simultaneous connections; past the cap, new clients wait in the
//! listen backlog instead of exhausting file descriptors.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use tokio::net::TcpListener;
use tokio::sync::Semaphore;
use tokio_util::task::TaskTracker;

use crate::apps::App;
use crate::config::{Config, Mount};
use crate::metrics::Metrics;
use crate::shutdown::Shutdown;
use crate::transport::{sockjs, websocket};
use crate::{Error, http};

/// What every connection of one server shares.
#[derive(Debug)]
pub struct ServerState {
    pub config: Config,
    pub mounts: Vec<Arc<MountState>>,
    pub metrics: Metrics,
    pub shutdown: Shutdown,
    /// Every task serving a client, so shutdown can wait for them.
    pub tracker: TaskTracker,
}

/// One mounted app.
#[derive(Debug)]
pub struct MountState {
    pub config: Mount,
    pub app: Arc<App>,
    /// The mount's SockJS sessions over HTTP, by session id.
    pub sessions: Arc<sockjs::Registry>,
}

impl ServerState {
    fn new(config: Config) -> ServerState {
        let mounts = config
            .mounts
            .iter()
            .map(|m| {
                Arc::new(MountState {
                    config: m.clone(),
                    app: Arc::new(App::new(m.app)),
                    sessions: Arc::new(sockjs::Registry::new(16)),
                })
            })
            .collect();
        ServerState {
            config,
            mounts,
            metrics: Metrics::default(),
            shutdown: Shutdown::default(),
            tracker: TaskTracker::new(),
        }
    }

    /// The mount at `prefix` (e.g. `/echo`).
    pub fn mount(&self, prefix: &str) -> Option<&Arc<MountState>> {
        self.mounts.iter().find(|m| m.config.prefix == prefix)
    }

    /// The limits of a WebSocket connection.
    pub fn websocket_limits(&self) -> websocket::Limits {
        websocket::Limits {
            max_message_size: self.config.max_message_size,
            close_grace: self.config.shutdown_grace,
        }
    }
}

/// Serves clients on `listener` until `shutdown` resolves; then stops
/// accepting, closes every client with 1001, and returns once they are gone
/// or the configured grace has passed.
pub async fn serve(
    listener: TcpListener,
    config: Config,
    shutdown: impl Future<Output = ()> + Send,
) -> Result<(), Error> {
    let state = Arc::new(ServerState::new(config));
    let limit = Arc::new(Semaphore::new(state.config.max_connections));
    let mut shutdown = std::pin::pin!(shutdown);
    loop {
        let permit = tokio::select! {
            permit = limit.clone().acquire_owned() => permit.map_err(|_| Error::io("connection limit closed"))?,
            _ = &mut shutdown => break,
        };
        let (stream, _peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(e) => {
                    // Out of file descriptors or a connection reset before
                    // accept: log, pause briefly so a persistent error does
                    // not spin, and carry on serving.
                    tracing::warn!("accept failed: {e}");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            _ = &mut shutdown => break,
        };
        // Small frames are the norm here; do not hold them back for Nagle.
        let _ = stream.set_nodelay(true);
        let state2 = state.clone();
        state.tracker.spawn(async move {
            let permit: Arc<dyn Send + Sync> = Arc::new(permit);
            let service = {
                let state = state2.clone();
                service_fn(move |req| http::route(req, state.clone(), permit.clone()))
            };
            let conn = http1::Builder::new()
                .keep_alive(true)
                .serve_connection(TokioIo::new(stream), service)
                .with_upgrades();
            let mut conn = std::pin::pin!(conn);
            tokio::select! {
                _ = conn.as_mut() => {}
                _ = state2.shutdown.wait() => {
                    conn.as_mut().graceful_shutdown();
                    let _ = conn.await;
                }
            }
        });
    }
    drop(listener);
    state.shutdown.trigger();
    state.tracker.close();
    let grace = state.config.shutdown_grace + Duration::from_millis(500);
    if tokio::time::timeout(grace, state.tracker.wait()).await.is_err() {
        tracing::warn!("{} connections still open after the shutdown grace; exiting anyway", state.tracker.len());
    }
    Ok(())
}
