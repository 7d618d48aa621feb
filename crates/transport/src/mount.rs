//! A protocol served at a URL prefix: what its transports keep for it (its
//! SockJS options, its limits, its HTTP sessions, its WebSocket
//! connections' limits), and the protocol that opens a client for each
//! connection or session.

use std::net::IpAddr;
use std::sync::Arc;
use std::time::Duration;

use base::token::Identity;
use hub::Outbox;

use super::Client;
use super::http_session::Registry;
use super::websocket;

/// What a mount serves: it opens a client for each WebSocket connection
/// and each SockJS session.
pub trait Protocol: Send + Sync + std::fmt::Debug + 'static {
    type Client: Client;
    /// A new client at `address`, whose messages go to `outbox`, and who
    /// is `identity` if it presented a token.
    fn open(self: &Arc<Self>, outbox: Arc<Outbox>, identity: Option<Arc<Identity>>, address: IpAddr) -> Self::Client;
}

/// See the module docs.
#[derive(Debug)]
pub struct Mount<P> {
    /// Path prefix without a trailing slash, e.g. `/echo`.
    pub prefix: String,
    pub sockjs: SockjsOptions,
    pub limits: MountLimits,
    pub protocol: Arc<P>,
    /// The mount's SockJS sessions over HTTP, by session id.
    pub sessions: Arc<Registry>,
    /// The limits of each WebSocket connection to the mount, which they share.
    pub websocket_limits: Arc<websocket::Limits>,
}

impl<P> Mount<P> {
    /// The mount's name for logs and metrics: its prefix without the slash.
    pub fn name(&self) -> &str {
        self.prefix.trim_start_matches('/')
    }
}

/// Per-mount bounds, set for all mounts by flags or the file's top level,
/// and per `[[mount]]` in the file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MountLimits {
    /// Messages per second one client may send (default 10,000).
    pub max_message_rate: u32,
    /// Message bytes per second one client may send (default 8 MiB).
    pub max_byte_rate: u32,
    /// Most SockJS sessions over HTTP at once (default 10,000).
    pub max_sessions: usize,
}

impl Default for MountLimits {
    fn default() -> MountLimits {
        // A client pinging as fast as loopback allows stays under the message
        // rate; the byte rate lets through 128 full-size messages a second.
        MountLimits { max_message_rate: 10_000, max_byte_rate: 8 * 1024 * 1024, max_sessions: 10_000 }
    }
}

/// SockJS settings of one mount; in the configuration file, `[sockjs]` and
/// each `[[mount]]`, with durations as `25s`.
#[derive(Debug, Clone, PartialEq, serde::Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SockjsOptions {
    /// Whether the websocket transports are offered (default true).
    pub websocket: bool,
    /// Whether `/info` asks clients for a JSESSIONID cookie (default false).
    pub cookie_needed: bool,
    /// Interval between heartbeat frames (default 25 s).
    #[serde(with = "humantime_serde")]
    pub heartbeat: Duration,
    /// How long a session outlives its last receiving request (default 5 s).
    #[serde(with = "humantime_serde")]
    pub disconnect_delay: Duration,
    /// Bytes a streaming response carries before it ends (default 128 KiB).
    pub response_limit: usize,
    /// Origins allowed, as `host:port` patterns with `*` (default `*:*`).
    pub origins: Vec<String>,
}

impl Default for SockjsOptions {
    fn default() -> SockjsOptions {
        SockjsOptions {
            websocket: true,
            cookie_needed: false,
            heartbeat: Duration::from_secs(25),
            disconnect_delay: Duration::from_secs(5),
            response_limit: 128 * 1024,
            origins: vec!["*:*".to_owned()],
        }
    }
}

