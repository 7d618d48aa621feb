//! Configuration of `switchboard serve`: flags, environment and a TOML file,
//! resolved into one plain [`Config`]. Flags win over the environment, the
//! environment over the file, the file over the defaults.
//!
//! Every knob's default lives in [`Config::default`] and [`SockjsOptions::default`];
//! the flags' help texts and the table in docs/configuration.md are checked against them by
//! tests, so the three cannot drift apart.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use hub::HistoryLimits;
use serde::Deserialize;

use apps::AppKind;

use crate::error::Error;

/// Flags of `switchboard serve`. Unset flags fall back to the environment,
/// then the `--config` file, then the default shown.
#[derive(Debug, Default, Clone, clap::Args)]
pub struct Args {
    /// Address to listen on [default: 127.0.0.1:8080]
    #[arg(long, env = "SWITCHBOARD_LISTEN")]
    pub listen: Option<SocketAddr>,

    /// TOML file with settings and app mounts (see conformance/sockjs-protocol.toml)
    #[arg(long, env = "SWITCHBOARD_CONFIG")]
    pub config: Option<PathBuf>,

    /// Largest message a client may send, in bytes; larger ones close the connection with 1009 [default: 65536]
    #[arg(long, env = "SWITCHBOARD_MAX_MESSAGE_SIZE")]
    pub max_message_size: Option<usize>,

    /// Whether the native WebSocket endpoints accept permessage-deflate (RFC 7692) when a client offers it; the server compresses each message of 64 bytes or more on its own (server_no_context_takeover), once for all recipients [default: true]
    #[arg(long, env = "SWITCHBOARD_PERMESSAGE_DEFLATE")]
    pub permessage_deflate: Option<bool>,

    /// Bytes a client's outbound queue may hold before it is closed as a slow consumer (1008) [default: 1048576]
    #[arg(long, env = "SWITCHBOARD_QUEUE_LIMIT")]
    pub queue_limit: Option<usize>,

    /// Most simultaneous TCP connections; a client beyond them is answered 503 and closed [default: 100000]
    #[arg(long, env = "SWITCHBOARD_MAX_CONNECTIONS")]
    pub max_connections: Option<usize>,

    /// How long shutdown waits for clients to take their close before exiting [default: 4s]
    #[arg(long, env = "SWITCHBOARD_SHUTDOWN_GRACE", value_parser = humantime::parse_duration)]
    pub shutdown_grace: Option<Duration>,

    /// How long a client may take to send a request's headers once it has started; then the connection is closed [default: 10s]
    #[arg(long, env = "SWITCHBOARD_HEADER_TIMEOUT", value_parser = humantime::parse_duration)]
    pub header_timeout: Option<Duration>,

    /// How long a connection may stay open with no request in progress (before its first request and between keep-alive requests); then it is closed [default: 30s]
    #[arg(long, env = "SWITCHBOARD_IDLE_TIMEOUT", value_parser = humantime::parse_duration)]
    pub idle_timeout: Option<Duration>,

    /// Largest request head (request line and headers) in bytes, at least 8192; larger ones get 431 [default: 16384]
    #[arg(long, env = "SWITCHBOARD_MAX_HEADER_SIZE")]
    pub max_header_size: Option<usize>,

    /// How often a silent WebSocket or XMPP client is pinged; one that answers no ping for a whole interval is closed (WebSocket 1008, XMPP connection-timeout), and so is one whose socket takes no bytes for as long [default: 25s]
    #[arg(long, env = "SWITCHBOARD_PING_INTERVAL", value_parser = humantime::parse_duration)]
    pub ping_interval: Option<Duration>,

    /// Messages per second one client may send; past it the server reads it more slowly (back-pressure) [default: 10000]
    #[arg(long, env = "SWITCHBOARD_MAX_MESSAGE_RATE")]
    pub max_message_rate: Option<u32>,

    /// Message bytes per second one client may send; past it the server reads it more slowly (back-pressure) [default: 8388608]
    #[arg(long, env = "SWITCHBOARD_MAX_BYTE_RATE")]
    pub max_byte_rate: Option<u32>,

    /// Most SockJS sessions over HTTP per mount; a request that would open one more gets 503 [default: 10000]
    #[arg(long, env = "SWITCHBOARD_MAX_SESSIONS")]
    pub max_sessions: Option<usize>,

    /// New SockJS and BOSH sessions per second one client address may open, with bursts of ten seconds' worth; past it 429 [default: 100]
    #[arg(long, env = "SWITCHBOARD_SESSION_RATE")]
    pub session_rate: Option<u32>,

    /// Most members of one chat room; a join past it is refused [default: 1000]
    #[arg(long, env = "SWITCHBOARD_MAX_ROOM_MEMBERS")]
    pub max_room_members: Option<usize>,

    /// Joins per second one chat room accepts, with bursts of one second's worth; a join past it is refused [default: 100]
    #[arg(long, env = "SWITCHBOARD_JOIN_RATE")]
    pub join_rate: Option<u32>,

    /// Messages a chat room keeps for members who join later, sent to each as its history event; 0 keeps none [default: 20]
    #[arg(long, env = "SWITCHBOARD_ROOM_HISTORY")]
    pub room_history: Option<usize>,

    /// Bytes of messages a chat room keeps at most, the oldest going first [default: 65536]
    #[arg(long, env = "SWITCHBOARD_ROOM_HISTORY_BYTES")]
    pub room_history_bytes: Option<usize>,

    /// NATS server through which several nodes share their rooms, e.g. nats://127.0.0.1:4222 (nats-server with -js); see docs/nodes.md [default: none, one node with its rooms in memory]
    #[arg(long, env = "SWITCHBOARD_BROKER")]
    pub broker: Option<String>,

    /// How long a node's chat names outlive it, and how long a silent node is taken for alive, with the broker [default: 15s]
    #[arg(long, env = "SWITCHBOARD_BROKER_TTL", value_parser = humantime::parse_duration)]
    pub broker_ttl: Option<Duration>,

    /// Where XMPP clients connect (RFC 6120 over TCP); `off` for none [default: 127.0.0.1:5222]
    #[arg(long, env = "SWITCHBOARD_XMPP_LISTEN", value_parser = parse_xmpp_listen)]
    pub xmpp_listen: Option<XmppListen>,

    /// Where XMPP clients connect with TLS from the first byte (XEP-0368, e.g. 127.0.0.1:5223), with --tls-cert's certificate; `off` for none [default: off]
    #[arg(long, env = "SWITCHBOARD_XMPP_TLS_LISTEN", value_parser = parse_xmpp_listen)]
    pub xmpp_tls_listen: Option<XmppListen>,

    /// The XMPP domain served; MUC rooms are at conference.<domain> [default: localhost]
    #[arg(long, env = "SWITCHBOARD_XMPP_DOMAIN")]
    pub xmpp_domain: Option<String>,

    /// Whether XMPP clients may log in anonymously (SASL ANONYMOUS) [default: true]
    #[arg(long, env = "SWITCHBOARD_XMPP_ANONYMOUS")]
    pub xmpp_anonymous: Option<bool>,

    /// Whether SASL PLAIN is offered on an XMPP stream without TLS, which sends the password in the clear [default: false]
    #[arg(long, env = "SWITCHBOARD_XMPP_PLAIN_UNENCRYPTED")]
    pub xmpp_plain_unencrypted: Option<bool>,

    /// How long an XMPP session whose connection broke waits to be resumed (XEP-0198), still in its rooms [default: 5m]
    #[arg(long, env = "SWITCHBOARD_XMPP_RESUME_TIMEOUT", value_parser = humantime::parse_duration)]
    pub xmpp_resume_timeout: Option<Duration>,

    /// How long an XMPP client over TCP has from connecting to binding a resource (stream headers, TLS, SASL); then the stream ends with connection-timeout. Once bound, a client silent for --ping-interval is pinged (XEP-0199) and one silent for another interval is closed the same way [default: 1m]
    #[arg(long, env = "SWITCHBOARD_XMPP_LOGIN_TIMEOUT", value_parser = humantime::parse_duration)]
    pub xmpp_login_timeout: Option<Duration>,

    /// Most XMPP sessions kept waiting to be resumed at once, each holding at most two --queue-limit's worth of stanzas; past it the one waiting longest ends. Anonymous sessions are never kept: they cannot be resumed [default: 1000]
    #[arg(long, env = "SWITCHBOARD_XMPP_MAX_PARKED")]
    pub xmpp_max_parked: Option<usize>,

    /// Failed SASL attempts after which the XMPP stream is closed with not-authorized [default: 3]
    #[arg(long, env = "SWITCHBOARD_XMPP_AUTH_TRIES")]
    pub xmpp_auth_tries: Option<u32>,

    /// Failed XMPP logins (SASL failures and refused in-band registrations) one client address may make a minute, all of them at once if it likes; past it the address's streams end with policy-violation before any password is checked, until it has one again [default: 30]
    #[arg(long, env = "SWITCHBOARD_XMPP_AUTH_FAILURES")]
    pub xmpp_auth_failures: Option<u32>,

    /// Most MUC rooms one XMPP session may be in at once (so also the most it can create); a join past it is refused with resource-constraint [default: 100]
    #[arg(long, env = "SWITCHBOARD_XMPP_MAX_ROOMS")]
    pub xmpp_max_rooms: Option<usize>,

    /// Accounts that XMPP clients may make themselves by in-band registration (XEP-0077), kept in memory until the server stops; 0 turns it off [default: 0]
    #[arg(long, env = "SWITCHBOARD_XMPP_REGISTRATION")]
    pub xmpp_registration: Option<usize>,

    /// Longest list an XMPP user can make the server keep: contacts in a roster, subscription requests waiting for one user, JIDs a session's directed presence is remembered for, affiliations in one room [default: 1000]
    #[arg(long, env = "SWITCHBOARD_XMPP_LIST_LIMIT")]
    pub xmpp_list_limit: Option<usize>,

    /// Longest a BOSH request (XMPP over HTTP at /http-bind) is held waiting for something to send; a client asking for longer gets this [default: 60s]
    #[arg(long, env = "SWITCHBOARD_BOSH_WAIT", value_parser = humantime::parse_duration)]
    pub bosh_wait: Option<Duration>,

    /// How long a BOSH session lives without a request from its client before it ends [default: 60s]
    #[arg(long, env = "SWITCHBOARD_BOSH_INACTIVITY", value_parser = humantime::parse_duration)]
    pub bosh_inactivity: Option<Duration>,

    /// Most BOSH sessions held at once; past it, new ones are refused with 503 [default: 10000]
    #[arg(long, env = "SWITCHBOARD_BOSH_MAX_SESSIONS")]
    pub bosh_max_sessions: Option<usize>,

    /// Most BOSH sessions one client address holds at once, so that a few addresses cannot take every session; past it, new ones from it are refused with 429 [default: 100]
    #[arg(long, env = "SWITCHBOARD_BOSH_MAX_SESSIONS_PER_ADDRESS")]
    pub bosh_max_sessions_per_address: Option<usize>,

    /// PEM certificate chain for TLS on the listener (https:// and wss://); needs --tls-key [default: none, plain TCP]
    #[arg(long, env = "SWITCHBOARD_TLS_CERT")]
    pub tls_cert: Option<PathBuf>,

    /// PEM private key for --tls-cert [default: none]
    #[arg(long, env = "SWITCHBOARD_TLS_KEY")]
    pub tls_key: Option<PathBuf>,

    /// Shared secret: every client must present a JWT signed with it (HS256) [default: none, no token needed]
    #[arg(long, env = "SWITCHBOARD_TOKEN_SECRET", hide_env_values = true)]
    pub token_secret: Option<String>,

    /// PEM public key (RSA for RS256, EC P-256 for ES256): every client must present a JWT signed with its private key [default: none]
    #[arg(long, env = "SWITCHBOARD_TOKEN_PUBLIC_KEY")]
    pub token_public_key: Option<PathBuf>,
}

/// Whether a domain cannot be an XMPP domain part.
fn wire_jid_domain_bad(domain: &str) -> bool {
    domain.len() > 1023 || domain.contains(['@', '/', ' ', '"', '\'', '<', '>', '&'])
}

/// Where XMPP clients connect unless `--xmpp-listen` says otherwise. (A
/// [`Config`] made in code, as tests make them, serves no XMPP unless it
/// says so.)
const DEFAULT_XMPP_LISTEN: SocketAddr = SocketAddr::V4(std::net::SocketAddrV4::new(std::net::Ipv4Addr::LOCALHOST, 5222));

/// `--xmpp-listen`: an address, or `off`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(try_from = "String")]
pub enum XmppListen {
    At(SocketAddr),
    Off,
}

impl XmppListen {
    /// The address a setting names, `default` when it is not given.
    fn resolve(setting: Option<XmppListen>, default: Option<SocketAddr>) -> Option<SocketAddr> {
        match setting {
            Some(XmppListen::At(addr)) => Some(addr),
            Some(XmppListen::Off) => None,
            None => default,
        }
    }
}

impl TryFrom<String> for XmppListen {
    type Error = String;

    fn try_from(text: String) -> Result<XmppListen, String> {
        parse_xmpp_listen(&text)
    }
}

fn parse_xmpp_listen(text: &str) -> Result<XmppListen, String> {
    if text == "off" {
        return Ok(XmppListen::Off);
    }
    text.parse().map(XmppListen::At).map_err(|_| format!("{text:?} is not an address like 127.0.0.1:5222, nor off"))
}

/// What a mount serves: one of the apps, or XMPP over SockJS (`xmpp`), each
/// message one element as RFC 7395 frames them over WebSocket.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Deserialize)]
#[serde(try_from = "String")]
pub enum MountKind {
    App(AppKind),
    Xmpp,
}

impl MountKind {
    /// What is mounted when the configuration names no mounts.
    pub const DEFAULT: [MountKind; 5] = [
        MountKind::App(AppKind::Echo),
        MountKind::App(AppKind::Broadcast),
        MountKind::App(AppKind::Chat),
        MountKind::App(AppKind::Count),
        MountKind::Xmpp,
    ];

    /// Its name in the file, also its default prefix.
    pub fn name(self) -> &'static str {
        match self {
            MountKind::App(app) => app.name(),
            MountKind::Xmpp => "xmpp",
        }
    }
}

impl TryFrom<String> for MountKind {
    type Error = String;

    fn try_from(name: String) -> Result<MountKind, String> {
        match name.as_str() {
            "xmpp" => Ok(MountKind::Xmpp),
            _ => AppKind::from_name(&name).map(MountKind::App).ok_or_else(|| {
                let known: Vec<_> = AppKind::ALL.iter().map(|a| a.name()).chain(["xmpp"]).collect();
                format!("unknown app {name:?}: one of {}", known.join(", "))
            }),
        }
    }
}

/// The resolved configuration the server runs with.
#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    /// Where to listen.
    pub listen: SocketAddr,
    /// Largest accepted client message, in bytes.
    pub max_message_size: usize,
    /// Whether native WebSocket connections may use permessage-deflate.
    pub permessage_deflate: bool,
    /// Outbound queue bound per client, in bytes.
    pub queue_limit: usize,
    /// Most simultaneous TCP connections.
    pub max_connections: usize,
    /// How long shutdown waits for clients.
    pub shutdown_grace: Duration,
    /// Deadline for a request's headers, from their first byte.
    pub header_timeout: Duration,
    /// How long a connection may stay without a request in progress.
    pub idle_timeout: Duration,
    /// Largest request head, in bytes.
    pub max_header_size: usize,
    /// Interval of pings to a silent WebSocket client.
    pub ping_interval: Duration,
    /// Most members of one chat room (on each node).
    pub max_room_members: usize,
    /// Joins per second one chat room accepts.
    pub join_rate: u32,
    /// What a chat room keeps of its recent messages.
    pub room_history: HistoryLimits,
    /// New SockJS sessions per second per client address.
    pub session_rate: u32,
    /// The NATS server the rooms span nodes through; `None` for one node.
    pub broker: Option<String>,
    /// How long names outlive a lost node, with the broker.
    pub broker_ttl: Duration,
    /// Where XMPP clients connect; `None` for no XMPP.
    pub xmpp_listen: Option<SocketAddr>,
    /// Where XMPP clients connect with direct TLS; `None` for none.
    pub xmpp_tls_listen: Option<SocketAddr>,
    /// The XMPP domain.
    pub xmpp_domain: String,
    /// XMPP accounts (`[[xmpp_account]]` in the file; see `switchboard xmpp-account`).
    pub xmpp_accounts: Vec<xmpp::AccountEntry>,
    /// Whether SASL ANONYMOUS is offered.
    pub xmpp_anonymous: bool,
    /// Whether SASL PLAIN is offered without TLS.
    pub xmpp_plain_unencrypted: bool,
    /// Failed SASL attempts before the stream is closed.
    pub xmpp_auth_tries: u32,
    /// Failed logins per client address a minute.
    pub xmpp_auth_failures: u32,
    /// Most rooms one session is in.
    pub xmpp_max_rooms: usize,
    /// Accounts in-band registration may make; 0: off.
    pub xmpp_registration: usize,
    /// Longest roster, waiting-request, directed-presence or affiliation list.
    pub xmpp_list_limit: usize,
    /// How long a broken XMPP session waits to be resumed.
    pub xmpp_resume_timeout: Duration,
    /// Most broken XMPP sessions waiting to be resumed.
    pub xmpp_max_parked: usize,
    /// How long an XMPP client over TCP may take to log in and bind.
    pub xmpp_login_timeout: Duration,
    /// Longest a BOSH request is held.
    pub bosh_wait: Duration,
    /// How long a BOSH session lives without a request.
    pub bosh_inactivity: Duration,
    /// Most BOSH sessions at once.
    pub bosh_max_sessions: usize,
    /// Most BOSH sessions of one client address.
    pub bosh_max_sessions_per_address: usize,
    /// TLS on the listener, if configured.
    pub tls: Option<TlsFiles>,
    /// How clients' tokens are checked, if they must present one.
    pub token_key: Option<TokenKey>,
    /// The apps and where they are mounted.
    pub mounts: Vec<Mount>,
    /// The limits of a mount that sets none of its own (the top-level
    /// settings).
    pub limits: MountLimits,
}

impl Config {
    /// What one XMPP client may send, over TCP and BOSH: the `xmpp` mount's
    /// limits, or the top-level ones where there is no such mount.
    pub fn xmpp_limits(&self) -> MountLimits {
        self.mounts.iter().find(|m| m.app == MountKind::Xmpp).map_or(self.limits, |m| m.limits)
    }
}

pub use transport::{MountLimits, SockjsOptions};
pub use base::tls::TlsFiles;
pub use base::token::TokenKey;

impl Default for Config {
    fn default() -> Config {
        Config {
            listen: SocketAddr::from(([127, 0, 0, 1], 8080)),
            max_message_size: 64 * 1024,
            permessage_deflate: true,
            queue_limit: 1024 * 1024,
            max_connections: 100_000,
            // Under the 5 s a supervisor usually allows before it kills.
            shutdown_grace: Duration::from_secs(4),
            // Far above what a browser needs even on a slow link, far below
            // what a slowloris client would like to hold.
            header_timeout: Duration::from_secs(10),
            idle_timeout: Duration::from_secs(30),
            // Browsers' heads are a few KiB; hyper's own default is ~400 KiB.
            max_header_size: 16 * 1024,
            // Under the 30-60 s after which proxies drop a silent connection.
            ping_interval: Duration::from_secs(25),
            max_room_members: 1000,
            join_rate: 100,
            room_history: HistoryLimits { messages: 20, bytes: 64 * 1024 },
            session_rate: 100,
            broker: None,
            broker_ttl: Duration::from_secs(15),
            xmpp_listen: None,
            xmpp_tls_listen: None,
            xmpp_domain: "localhost".to_owned(),
            xmpp_accounts: Vec::new(),
            xmpp_anonymous: true,
            xmpp_plain_unencrypted: false,
            xmpp_auth_tries: 3,
            // A person who mistypes a password a few times is far from it; a
            // guesser gets one try every two seconds.
            xmpp_auth_failures: 30,
            xmpp_max_rooms: 100,
            xmpp_registration: 0,
            xmpp_list_limit: 1000,
            xmpp_resume_timeout: Duration::from_secs(300),
            // 1,000 sessions of 2 MiB at worst: 2 GiB, the most resumption can hold.
            xmpp_max_parked: 1000,
            // A login over a slow link takes a few round trips; an idle socket gets no more.
            xmpp_login_timeout: Duration::from_secs(60),
            bosh_wait: Duration::from_secs(60),
            bosh_inactivity: Duration::from_secs(60),
            bosh_max_sessions: 10_000,
            // A hundred addresses to fill the server, rather than one.
            bosh_max_sessions_per_address: 100,
            tls: None,
            token_key: None,
            mounts: MountKind::DEFAULT.iter().map(|&app| Mount::new(app)).collect(),
            limits: MountLimits::default(),
        }
    }
}

/// One app mounted at a path prefix, with its SockJS options.
#[derive(Debug, Clone, PartialEq)]
pub struct Mount {
    /// Path prefix without a trailing slash, e.g. `/echo`.
    pub prefix: String,
    /// What it serves.
    pub app: MountKind,
    /// SockJS settings of this mount.
    pub sockjs: SockjsOptions,
    /// What one client may send to this mount, and how many SockJS sessions it holds.
    pub limits: MountLimits,
}

impl Mount {
    /// The app at its default prefix (`/<app>`) with default options.
    pub fn new(app: MountKind) -> Mount {
        Mount { prefix: format!("/{}", app.name()), app, sockjs: SockjsOptions::default(), limits: MountLimits::default() }
    }

    /// The mount's name for logs and metrics: its prefix without the slash.
    pub fn name(&self) -> &str {
        self.prefix.trim_start_matches('/')
    }
}

/// The TOML file's shape: every field optional.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    listen: Option<SocketAddr>,
    max_message_size: Option<usize>,
    permessage_deflate: Option<bool>,
    queue_limit: Option<usize>,
    max_connections: Option<usize>,
    #[serde(default, with = "humantime_serde")]
    shutdown_grace: Option<Duration>,
    #[serde(default, with = "humantime_serde")]
    header_timeout: Option<Duration>,
    #[serde(default, with = "humantime_serde")]
    idle_timeout: Option<Duration>,
    max_header_size: Option<usize>,
    #[serde(default, with = "humantime_serde")]
    ping_interval: Option<Duration>,
    max_room_members: Option<usize>,
    join_rate: Option<u32>,
    room_history: Option<usize>,
    room_history_bytes: Option<usize>,
    broker: Option<String>,
    #[serde(default, with = "humantime_serde")]
    broker_ttl: Option<Duration>,
    xmpp_listen: Option<XmppListen>,
    xmpp_tls_listen: Option<XmppListen>,
    xmpp_domain: Option<String>,
    #[serde(default)]
    xmpp_account: Vec<xmpp::AccountEntry>,
    xmpp_anonymous: Option<bool>,
    xmpp_plain_unencrypted: Option<bool>,
    xmpp_auth_tries: Option<u32>,
    xmpp_auth_failures: Option<u32>,
    xmpp_max_rooms: Option<usize>,
    xmpp_registration: Option<usize>,
    xmpp_list_limit: Option<usize>,
    #[serde(default, with = "humantime_serde")]
    xmpp_resume_timeout: Option<Duration>,
    xmpp_max_parked: Option<usize>,
    #[serde(default, with = "humantime_serde")]
    xmpp_login_timeout: Option<Duration>,
    #[serde(default, with = "humantime_serde")]
    bosh_wait: Option<Duration>,
    #[serde(default, with = "humantime_serde")]
    bosh_inactivity: Option<Duration>,
    bosh_max_sessions: Option<usize>,
    bosh_max_sessions_per_address: Option<usize>,
    session_rate: Option<u32>,
    tls_cert: Option<PathBuf>,
    tls_key: Option<PathBuf>,
    token_secret: Option<String>,
    token_public_key: Option<PathBuf>,
    /// Defaults for every mount's limits.
    max_message_rate: Option<u32>,
    max_byte_rate: Option<u32>,
    max_sessions: Option<usize>,
    /// Defaults for every mount's SockJS options.
    #[serde(default)]
    sockjs: FileSockjs,
    /// Replaces the default mounts when present.
    #[serde(default, rename = "mount")]
    mounts: Option<Vec<FileMount>>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileSockjs {
    websocket: Option<bool>,
    cookie_needed: Option<bool>,
    #[serde(default, with = "humantime_serde")]
    heartbeat: Option<Duration>,
    #[serde(default, with = "humantime_serde")]
    disconnect_delay: Option<Duration>,
    response_limit: Option<usize>,
    origins: Option<Vec<String>>,
    // Per-mount limits share this flattened table in a `[[mount]]`; in `[sockjs]` they are refused.
    max_message_rate: Option<u32>,
    max_byte_rate: Option<u32>,
    max_sessions: Option<usize>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileMount {
    app: MountKind,
    prefix: Option<String>,
    #[serde(flatten)]
    sockjs: FileSockjs,
}

/// The per-mount limits, from wherever they were given.
#[derive(Debug, Default)]
struct FileLimits {
    max_message_rate: Option<u32>,
    max_byte_rate: Option<u32>,
    max_sessions: Option<usize>,
}

impl FileLimits {
    fn apply(&self, to: &mut MountLimits) {
        to.max_message_rate = self.max_message_rate.unwrap_or(to.max_message_rate);
        to.max_byte_rate = self.max_byte_rate.unwrap_or(to.max_byte_rate);
        to.max_sessions = self.max_sessions.unwrap_or(to.max_sessions);
    }
}

impl FileSockjs {
    fn apply(&self, to: &mut SockjsOptions) {
        to.websocket = self.websocket.unwrap_or(to.websocket);
        to.cookie_needed = self.cookie_needed.unwrap_or(to.cookie_needed);
        to.heartbeat = self.heartbeat.unwrap_or(to.heartbeat);
        to.disconnect_delay = self.disconnect_delay.unwrap_or(to.disconnect_delay);
        to.response_limit = self.response_limit.unwrap_or(to.response_limit);
        if let Some(origins) = &self.origins {
            to.origins.clone_from(origins);
        }
    }
}

impl Config {
    /// Resolves flags (already merged with the environment by clap) over the
    /// `--config` file, if any, over the defaults.
    pub fn resolve(args: &Args) -> Result<Config, Error> {
        let file = match &args.config {
            Some(path) => read_file(path)?,
            None => File::default(),
        };
        let d = Config::default();
        let mut sockjs = SockjsOptions::default();
        file.sockjs.apply(&mut sockjs);
        // Flags over the file's top level: the defaults of every mount.
        if file.sockjs.max_message_rate.is_some() || file.sockjs.max_byte_rate.is_some() || file.sockjs.max_sessions.is_some() {
            return Err(Error::config("max_message_rate, max_byte_rate and max_sessions go at the top level or in a [[mount]], not in [sockjs]"));
        }
        let mut limits = MountLimits::default();
        FileLimits { max_message_rate: file.max_message_rate, max_byte_rate: file.max_byte_rate, max_sessions: file.max_sessions }
            .apply(&mut limits);
        FileLimits { max_message_rate: args.max_message_rate, max_byte_rate: args.max_byte_rate, max_sessions: args.max_sessions }
            .apply(&mut limits);
        let mounts = match file.mounts {
            None => d.mounts.iter().map(|m| Mount { sockjs: sockjs.clone(), limits, ..m.clone() }).collect(),
            Some(mounts) => mounts
                .into_iter()
                .map(|m| {
                    let mut options = sockjs.clone();
                    m.sockjs.apply(&mut options);
                    let mut mount_limits = limits;
                    let s = &m.sockjs;
                    FileLimits { max_message_rate: s.max_message_rate, max_byte_rate: s.max_byte_rate, max_sessions: s.max_sessions }
                        .apply(&mut mount_limits);
                    let prefix = m.prefix.unwrap_or_else(|| format!("/{}", m.app.name()));
                    Mount { prefix: normalise_prefix(&prefix), app: m.app, sockjs: options, limits: mount_limits }
                })
                .collect(),
        };
        let tls = match (args.tls_cert.clone().or(file.tls_cert), args.tls_key.clone().or(file.tls_key)) {
            (Some(cert), Some(key)) => Some(TlsFiles { cert, key }),
            (None, None) => None,
            _ => return Err(Error::config("--tls-cert and --tls-key go together: give both or neither")),
        };
        let token_key = match (args.token_secret.clone().or(file.token_secret), args.token_public_key.clone().or(file.token_public_key)) {
            (Some(_), Some(_)) => {
                return Err(Error::config("give --token-secret or --token-public-key, not both"));
            }
            (Some(secret), None) => Some(TokenKey::Secret(secret)),
            (None, Some(path)) => Some(TokenKey::PublicKey(path)),
            (None, None) => None,
        };
        let config = Config {
            listen: args.listen.or(file.listen).unwrap_or(d.listen),
            max_message_size: args.max_message_size.or(file.max_message_size).unwrap_or(d.max_message_size),
            permessage_deflate: args.permessage_deflate.or(file.permessage_deflate).unwrap_or(d.permessage_deflate),
            queue_limit: args.queue_limit.or(file.queue_limit).unwrap_or(d.queue_limit),
            max_connections: args.max_connections.or(file.max_connections).unwrap_or(d.max_connections),
            shutdown_grace: args.shutdown_grace.or(file.shutdown_grace).unwrap_or(d.shutdown_grace),
            header_timeout: args.header_timeout.or(file.header_timeout).unwrap_or(d.header_timeout),
            idle_timeout: args.idle_timeout.or(file.idle_timeout).unwrap_or(d.idle_timeout),
            max_header_size: args.max_header_size.or(file.max_header_size).unwrap_or(d.max_header_size),
            ping_interval: args.ping_interval.or(file.ping_interval).unwrap_or(d.ping_interval),
            max_room_members: args.max_room_members.or(file.max_room_members).unwrap_or(d.max_room_members),
            join_rate: args.join_rate.or(file.join_rate).unwrap_or(d.join_rate),
            room_history: HistoryLimits {
                messages: args.room_history.or(file.room_history).unwrap_or(d.room_history.messages),
                bytes: args.room_history_bytes.or(file.room_history_bytes).unwrap_or(d.room_history.bytes),
            },
            session_rate: args.session_rate.or(file.session_rate).unwrap_or(d.session_rate),
            broker: args.broker.clone().or(file.broker),
            broker_ttl: args.broker_ttl.or(file.broker_ttl).unwrap_or(d.broker_ttl),
            xmpp_listen: XmppListen::resolve(args.xmpp_listen.clone().or(file.xmpp_listen), Some(DEFAULT_XMPP_LISTEN)),
            xmpp_tls_listen: XmppListen::resolve(args.xmpp_tls_listen.clone().or(file.xmpp_tls_listen), d.xmpp_tls_listen),
            xmpp_domain: args.xmpp_domain.clone().or(file.xmpp_domain).unwrap_or(d.xmpp_domain),
            xmpp_accounts: file.xmpp_account,
            xmpp_anonymous: args.xmpp_anonymous.or(file.xmpp_anonymous).unwrap_or(d.xmpp_anonymous),
            xmpp_plain_unencrypted: args.xmpp_plain_unencrypted.or(file.xmpp_plain_unencrypted).unwrap_or(d.xmpp_plain_unencrypted),
            xmpp_auth_tries: args.xmpp_auth_tries.or(file.xmpp_auth_tries).unwrap_or(d.xmpp_auth_tries),
            xmpp_auth_failures: args.xmpp_auth_failures.or(file.xmpp_auth_failures).unwrap_or(d.xmpp_auth_failures),
            xmpp_max_rooms: args.xmpp_max_rooms.or(file.xmpp_max_rooms).unwrap_or(d.xmpp_max_rooms),
            xmpp_registration: args.xmpp_registration.or(file.xmpp_registration).unwrap_or(d.xmpp_registration),
            xmpp_list_limit: args.xmpp_list_limit.or(file.xmpp_list_limit).unwrap_or(d.xmpp_list_limit),
            xmpp_resume_timeout: args.xmpp_resume_timeout.or(file.xmpp_resume_timeout).unwrap_or(d.xmpp_resume_timeout),
            xmpp_max_parked: args.xmpp_max_parked.or(file.xmpp_max_parked).unwrap_or(d.xmpp_max_parked),
            xmpp_login_timeout: args.xmpp_login_timeout.or(file.xmpp_login_timeout).unwrap_or(d.xmpp_login_timeout),
            bosh_wait: args.bosh_wait.or(file.bosh_wait).unwrap_or(d.bosh_wait),
            bosh_inactivity: args.bosh_inactivity.or(file.bosh_inactivity).unwrap_or(d.bosh_inactivity),
            bosh_max_sessions: args.bosh_max_sessions.or(file.bosh_max_sessions).unwrap_or(d.bosh_max_sessions),
            bosh_max_sessions_per_address: args.bosh_max_sessions_per_address.or(file.bosh_max_sessions_per_address).unwrap_or(d.bosh_max_sessions_per_address),
            tls,
            token_key,
            mounts,
            limits,
        };
        config.validate()?;
        Ok(config)
    }

    fn validate(&self) -> Result<(), Error> {
        let bad = |msg: String| Err(Error::config(msg));
        if self.max_message_size == 0 {
            return bad("max_message_size must be at least 1".into());
        }
        if self.max_connections == 0 {
            return bad("max_connections must be at least 1".into());
        }
        if self.max_header_size < MIN_HEADER_SIZE {
            return bad(format!("max_header_size must be at least {MIN_HEADER_SIZE}"));
        }
        for (name, value) in [
            ("header_timeout", self.header_timeout),
            ("idle_timeout", self.idle_timeout),
            ("ping_interval", self.ping_interval),
            ("xmpp_login_timeout", self.xmpp_login_timeout),
        ] {
            if value.is_zero() {
                return bad(format!("{name} must be above zero"));
            }
        }
        for (name, value) in [("join_rate", self.join_rate), ("session_rate", self.session_rate)] {
            if value == 0 {
                return bad(format!("{name} must be at least 1"));
            }
        }
        if self.xmpp_domain.is_empty() || wire_jid_domain_bad(&self.xmpp_domain) {
            return bad(format!("xmpp_domain {:?} must be a domain name such as localhost", self.xmpp_domain));
        }
        if self.xmpp_tls_listen.is_some() && self.tls.is_none() {
            return bad("xmpp_tls_listen needs a certificate: give --tls-cert and --tls-key".into());
        }
        if self.xmpp_list_limit == 0 {
            return bad("xmpp_list_limit must be at least 1".into());
        }
        if self.xmpp_max_parked == 0 {
            return bad("xmpp_max_parked must be at least 1".into());
        }
        if self.xmpp_auth_failures == 0 {
            return bad("xmpp_auth_failures must be at least 1".into());
        }
        if self.xmpp_max_rooms == 0 {
            return bad("xmpp_max_rooms must be at least 1".into());
        }
        if self.xmpp_auth_tries == 0 {
            return bad("xmpp_auth_tries must be at least 1".into());
        }
        // BOSH speaks in whole seconds.
        for (name, value) in [("bosh_wait", self.bosh_wait), ("bosh_inactivity", self.bosh_inactivity)] {
            if value < Duration::from_secs(1) {
                return bad(format!("{name} must be at least 1s"));
            }
        }
        if self.bosh_max_sessions == 0 {
            return bad("bosh_max_sessions must be at least 1".into());
        }
        if self.bosh_max_sessions_per_address == 0 {
            return bad("bosh_max_sessions_per_address must be at least 1".into());
        }
        xmpp::Accounts::new(&self.xmpp_accounts).map_err(Error::config)?;
        if self.broker_ttl < Duration::from_secs(1) {
            return bad("broker_ttl must be at least 1s".into());
        }
        if let Some(url) = &self.broker
            && !url.starts_with("nats://")
        {
            return bad(format!("broker {url:?} must be a nats:// URL, such as nats://127.0.0.1:4222"));
        }
        if self.max_room_members == 0 {
            return bad("max_room_members must be at least 1".into());
        }
        for (i, m) in self.mounts.iter().enumerate() {
            if m.prefix.is_empty() || m.prefix.matches('/').count() != 1 {
                return bad(format!("mount prefix {:?} must be one path segment like \"/echo\"", m.prefix));
            }
            if self.mounts[..i].iter().any(|o| o.prefix == m.prefix) {
                return bad(format!("mount prefix {:?} is used twice", m.prefix));
            }
            if m.sockjs.heartbeat.is_zero() {
                return bad(format!("{}: heartbeat must be above zero", m.prefix));
            }
            if m.limits.max_message_rate == 0 || m.limits.max_byte_rate == 0 {
                return bad(format!("{}: max_message_rate and max_byte_rate must be at least 1", m.prefix));
            }
        }
        Ok(())
    }

    /// The mount whose prefix is `prefix`.
    pub fn mount(&self, prefix: &str) -> Option<&Mount> {
        self.mounts.iter().find(|m| m.prefix == prefix)
    }
}

/// hyper cannot read a request with a smaller buffer.
const MIN_HEADER_SIZE: usize = 8192;

fn normalise_prefix(prefix: &str) -> String {
    format!("/{}", prefix.trim_matches('/'))
}

fn read_file(path: &Path) -> Result<File, Error> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| Error::config(format!("cannot read {}: {e}", path.display())))?;
    toml::from_str(&text).map_err(|e| Error::config(format!("{}: {e}", path.display())))
}

/// The configuration table of docs/configuration.md, generated from the flags' definitions.
pub fn markdown_table() -> String {
    use clap::CommandFactory;
    #[derive(clap::Parser)]
    struct Serve {
        #[command(flatten)]
        args: Args,
    }
    let mut out = String::from("| flag | environment | meaning |\n|---|---|---|\n");
    for arg in Serve::command().get_arguments() {
        let Some(long) = arg.get_long() else { continue };
        let env = arg.get_env().map(|e| e.to_string_lossy().into_owned()).unwrap_or_default();
        let help = arg.get_help().map(|h| h.to_string()).unwrap_or_default();
        out.push_str(&format!("| `--{long}` | `{env}` | {help} |\n"));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write_toml(text: &str) -> PathBuf {
        let path = std::env::temp_dir()
            .join(format!("switchboard-config-{}-{}.toml", std::process::id(), text.len()));
        std::fs::write(&path, text).unwrap();
        path
    }

    #[test]
    fn defaults_apply_when_nothing_is_set() {
        let config = Config::resolve(&Args::default()).unwrap();
        // XMPP listens on 5222 when nothing says otherwise; a Config made in code does not.
        assert_eq!(config.xmpp_listen, Some("127.0.0.1:5222".parse().unwrap()));
        assert_eq!(Config { xmpp_listen: None, ..config.clone() }, Config::default());
        let prefixes: Vec<_> = config.mounts.iter().map(|m| m.prefix.as_str()).collect();
        assert_eq!(prefixes, ["/echo", "/broadcast", "/chat", "/count", "/xmpp"]);
    }

    #[test]
    fn flags_win_over_the_file_and_the_file_over_defaults() {
        let path = write_toml(
            r#"
listen = "127.0.0.1:9999"
queue_limit = 2048
shutdown_grace = "2s"
[sockjs]
heartbeat = "10s"
[[mount]]
app = "echo"
response_limit = 4096
[[mount]]
app = "echo"
prefix = "disabled_websocket_echo"
websocket = false
"#,
        );
        let args = Args {
            config: Some(path.clone()),
            listen: Some("127.0.0.1:1234".parse().unwrap()),
            ..Args::default()
        };
        let config = Config::resolve(&args).unwrap();
        std::fs::remove_file(path).ok();
        assert_eq!(config.listen.port(), 1234);
        assert_eq!(config.queue_limit, 2048);
        assert_eq!(config.shutdown_grace, Duration::from_secs(2));
        assert_eq!(config.max_message_size, 65536);
        assert_eq!(config.mounts.len(), 2);
        let echo = config.mount("/echo").unwrap();
        assert_eq!(echo.sockjs.response_limit, 4096);
        assert_eq!(echo.sockjs.heartbeat, Duration::from_secs(10));
        assert!(echo.sockjs.websocket);
        let disabled = config.mount("/disabled_websocket_echo").unwrap();
        assert!(!disabled.sockjs.websocket);
        assert_eq!(disabled.sockjs.response_limit, 128 * 1024);
    }

    #[test]
    fn xmpp_takes_the_xmpp_mounts_rates_or_the_top_level_ones() {
        let path = write_toml("max_message_rate = 7\n[[mount]]\napp = \"chat\"\n");
        let config = Config::resolve(&Args { config: Some(path.clone()), ..Args::default() }).unwrap();
        std::fs::remove_file(path).ok();
        assert_eq!(config.xmpp_limits().max_message_rate, 7, "no xmpp mount: the top level's");
        let path = write_toml("max_message_rate = 7\n[[mount]]\napp = \"xmpp\"\nmax_message_rate = 9\n");
        let config = Config::resolve(&Args { config: Some(path.clone()), ..Args::default() }).unwrap();
        std::fs::remove_file(path).ok();
        assert_eq!(config.xmpp_limits().max_message_rate, 9, "the xmpp mount's own");
    }

    #[test]
    fn bad_files_name_the_problem() {
        let path = write_toml("listen = 5\nunknown_knob = 1\n");
        let err = Config::resolve(&Args { config: Some(path.clone()), ..Args::default() })
            .unwrap_err()
            .to_string();
        std::fs::remove_file(path).ok();
        assert!(err.contains("switchboard-config"), "{err}");

        let path = write_toml("[[mount]]\napp = \"echo\"\n[[mount]]\napp = \"echo\"\n");
        let err = Config::resolve(&Args { config: Some(path.clone()), ..Args::default() })
            .unwrap_err()
            .to_string();
        std::fs::remove_file(path).ok();
        assert!(err.contains("used twice"), "{err}");

        let missing = Args { config: Some("/nonexistent/x.toml".into()), ..Args::default() };
        assert!(Config::resolve(&missing).unwrap_err().to_string().contains("cannot read"));
    }

    #[test]
    fn the_broker_is_a_nats_url_from_a_flag_or_the_file() {
        let path = write_toml("broker = \"nats://127.0.0.1:4222\"\nbroker_ttl = \"5s\"\n");
        let config = Config::resolve(&Args { config: Some(path.clone()), ..Args::default() }).unwrap();
        std::fs::remove_file(path).ok();
        assert_eq!((config.broker.as_deref(), config.broker_ttl), (Some("nats://127.0.0.1:4222"), Duration::from_secs(5)));
        let wrong = Args { broker: Some("redis://127.0.0.1:6379".into()), ..Args::default() };
        let err = Config::resolve(&wrong).unwrap_err().to_string();
        assert!(err.contains("must be a nats:// URL"), "{err}");
        let short = Args { broker_ttl: Some(Duration::from_millis(10)), ..Args::default() };
        assert!(Config::resolve(&short).unwrap_err().to_string().contains("broker_ttl"));
    }

    /// Every flag whose help states a default: giving that value makes the
    /// same configuration as giving nothing, so the stated default is the
    /// real one.
    #[test]
    fn every_flag_documents_the_real_default() {
        use clap::{CommandFactory, Parser};
        #[derive(Parser)]
        struct Cli {
            #[command(flatten)]
            args: Args,
        }
        let unset = Config::resolve(&Args::default()).unwrap();
        let mut checked = Vec::new();
        for arg in Cli::command().get_arguments() {
            let flag = format!("--{}", arg.get_long().expect("every flag is long"));
            let help = arg.get_help().map(|h| h.to_string()).unwrap_or_default();
            let Some(stated) = help.split("[default: ").nth(1).and_then(|rest| rest.split(']').next()) else {
                assert_eq!(flag, "--config", "{flag} states no default");
                continue;
            };
            // "none, …": nothing to give.
            if stated.starts_with("none") {
                continue;
            }
            let cli = Cli::try_parse_from(["switchboard", flag.as_str(), stated]).unwrap_or_else(|e| panic!("{flag} {stated}: {e}"));
            let given = Config::resolve(&cli.args).unwrap_or_else(|e| panic!("{flag} {stated}: {e}"));
            assert_eq!(given, unset, "{flag}: the stated default {stated} is not the default");
            checked.push(flag);
        }
        assert!(checked.len() >= 36, "only {} flags were given their default: {checked:?}", checked.len());
    }

    #[test]
    fn the_configuration_page_table_matches_the_flags() {
        let page = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/configuration.md"))
            .expect("docs/configuration.md in the repository");
        let table = markdown_table();
        assert!(
            page.contains(&table),
            "docs/configuration.md's table of flags is stale; replace it with:\n{table}"
        );
    }
}
