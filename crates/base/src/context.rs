//! What every protocol's connections share on one server: the shutdown
//! signal, the tasks serving clients, the metrics, the rates per client
//! address, the token verifier, and the bounds every connection keeps. The
//! server makes one and hands it to each protocol; a protocol needs nothing
//! else of the server's.

use std::net::IpAddr;
use std::time::Duration;

use tokio::sync::OwnedSemaphorePermit;
use tokio_util::task::TaskTracker;

use crate::limits::AddressRates;
use crate::metrics::Metrics;
use crate::shutdown::Shutdown;
use crate::token::Verifier;

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
