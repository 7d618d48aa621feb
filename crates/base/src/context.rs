//! What every protocol's connections share on one server: the shutdown
//! signal, the tasks serving clients, the metrics, the rates per client
//! address, the token verifier, and the bounds every connection keeps. The
//! server makes one and hands it to each protocol; a protocol needs nothing
//! else of the server's.

use std::net::IpAddr;
use std::sync::Arc;
use std::time::Duration;

use hyper::header::{self, HeaderValue};
use hyper::{Request, Response, StatusCode};
use tokio::sync::OwnedSemaphorePermit;
use tokio_util::task::TaskTracker;

use crate::http::{Body, text_response};
use crate::limits::AddressRates;
use crate::metrics::Metrics;
use crate::shutdown::Shutdown;
use crate::token::{Identity, TokenError, Verifier};

/// See the module docs.
#[derive(Debug)]
pub struct Context {
    /// Fires once when the server stops.
    pub shutdown: Shutdown,
    /// Every task serving a client, so shutdown can wait for them.
    pub tracker: TaskTracker,
    pub metrics: Metrics,
    /// New sessions (SockJS and BOSH) per client address, across mounts.
    pub session_rates: AddressRates,
    /// Checks connection tokens, when clients must present one.
    pub tokens: Option<Verifier>,
    /// What every connection is held to.
    pub bounds: Bounds,
    /// Whether a connection accepted here sends each write at once
    /// (`TCP_NODELAY`, `--tcp-nodelay`) rather than under Nagle's algorithm.
    pub nodelay: bool,
}

impl Context {
    /// A context held to `bounds`, with nothing else set: no tokens, new
    /// sessions per address bounded only by `u32::MAX` a second, metrics of
    /// one node (tests and tools; the server sets each part).
    pub fn new(bounds: Bounds) -> Context {
        Context {
            shutdown: Shutdown::default(),
            tracker: TaskTracker::new(),
            metrics: Metrics::new(false),
            session_rates: AddressRates::new(u32::MAX, u32::MAX),
            tokens: None,
            bounds,
            nodelay: true,
        }
    }

    /// A context for tests, with small bounds.
    #[cfg(test)]
    pub(crate) fn for_tests() -> Arc<Context> {
        let second = Duration::from_secs(1);
        let bounds = Bounds { queue_limit: 1 << 16, max_message_size: 1 << 16, header_timeout: second, idle_timeout: second, ping_interval: second };
        Arc::new(Context::new(bounds))
    }

    /// The identity of a client of `app` when the server requires tokens
    /// (`Ok(None)` when it does not), or the 401 that refuses it.
    // The error is the response to send; its size on the stack does not matter.
    #[allow(clippy::result_large_err)]
    pub fn authenticate<B>(&self, req: &Request<B>, app: &str) -> Result<Option<Arc<Identity>>, Response<Body>> {
        let Some(verifier) = &self.tokens else { return Ok(None) };
        verifier.verify_request(req).map(Some).map_err(|e| {
            self.metrics.refused(app, "token");
            unauthorized(&e)
        })
    }
}

impl Context {
    /// Sets what every accepted connection gets: no Nagle's delay, unless
    /// `nodelay` is off. Every accept loop calls it.
    pub fn tune(&self, stream: &tokio::net::TcpStream) {
        if self.nodelay {
            let _ = stream.set_nodelay(true);
        }
    }

    /// Hands each connection `listener` accepts to `take`, [tuned](Self::tune),
    /// until shutdown; `protocol` names the listener in the logs.
    pub async fn accept(&self, listener: tokio::net::TcpListener, protocol: &str, mut take: impl FnMut(tokio::net::TcpStream, std::net::SocketAddr)) {
        loop {
            let accepted = tokio::select! {
                accepted = listener.accept() => accepted,
                () = self.shutdown.wait() => return,
            };
            match accepted {
                Ok((stream, peer)) => {
                    self.tune(&stream);
                    take(stream, peer);
                }
                Err(e) => {
                    tracing::warn!("{protocol}: accept failed: {e}");
                    // Out of descriptors, most likely: let some close.
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
            }
        }
    }
}

/// 401 with the reason in the body and in `WWW-Authenticate` (RFC 6750).
fn unauthorized(error: &TokenError) -> Response<Body> {
    let reason = error.to_string();
    let mut res = text_response(StatusCode::UNAUTHORIZED, format!("{reason}\n"));
    let code = if *error == TokenError::Missing { "invalid_request" } else { "invalid_token" };
    let challenge = format!("Bearer error=\"{code}\", error_description=\"{}\"", reason.replace('"', "'"));
    if let Ok(value) = HeaderValue::from_str(&challenge) {
        res.headers_mut().insert(header::WWW_AUTHENTICATE, value);
    }
    res
}

/// What every connection is held to, whatever its protocol.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bounds {
    /// Bytes a client's outbox may hold (`--queue-limit`).
    pub queue_limit: usize,
    /// Longest message a client may send (`--max-message-size`).
    pub max_message_size: usize,
    /// How long a request head may take (`--header-timeout`).
    pub header_timeout: Duration,
    /// How long a connection may wait between requests, and a body take
    /// to arrive (`--idle-timeout`).
    pub idle_timeout: Duration,
    /// How long a client may be silent before it is pinged (`--ping-interval`).
    pub ping_interval: Duration,
}

/// One accepted TCP connection, for as long as anything serves it: its
/// slot under `--max-connections` is held until the last holder lets go.
#[derive(Debug)]
pub struct Connection {
    /// Where it connects from, for per-address limits.
    pub address: IpAddr,
    _slot: OwnedSemaphorePermit,
}

impl Connection {
    /// The connection from `address`, holding `slot`.
    pub fn new(address: IpAddr, slot: OwnedSemaphorePermit) -> Connection {
        Connection { address, _slot: slot }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Whether the connection `context` accepts has `TCP_NODELAY` set.
    async fn accepted_nodelay(context: Context) -> bool {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("a port");
        let address = listener.local_addr().expect("its address");
        let context = Arc::new(context);
        let (taken, mut accepted) = tokio::sync::mpsc::unbounded_channel();
        let serving = tokio::spawn({
            let context = context.clone();
            async move { context.accept(listener, "test", move |stream, _| drop(taken.send(stream.nodelay()))).await }
        });
        let _client = tokio::net::TcpStream::connect(address).await.expect("connects");
        let nodelay = accepted.recv().await.expect("one connection accepted").expect("its option read");
        context.shutdown.trigger();
        serving.await.expect("the accept loop ends at shutdown");
        nodelay
    }

    #[tokio::test]
    async fn accepted_connections_skip_nagle_unless_told_not_to() {
        let bounds = Context::for_tests().bounds;
        assert!(accepted_nodelay(Context::new(bounds)).await, "TCP_NODELAY by default");
        let nagle = Context { nodelay: false, ..Context::new(bounds) };
        assert!(!accepted_nodelay(nagle).await, "Nagle's algorithm left on with nodelay off");
    }
}
