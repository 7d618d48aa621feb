//! Configuration of `switchboard serve`: flags, environment and a TOML file,
//! resolved into one plain [`Config`]. Flags win over the environment, the
//! environment over the file, the file over the defaults.
//!
//! Each setting is declared once, in a [`settings!`] group: its help (with
//! its default, as people read it), its type and default, its flag and its
//! environment variable. The file's keys are the flags' names in snake_case
//! and go through the same parsers, so a value means the same wherever it
//! is given. The help texts are checked against the real defaults, and the
//! table in docs/configuration.md against the help texts, by tests.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use apps::AppKind;
use clap::{CommandFactory, FromArgMatches};
use serde::Deserialize;
use toml::{Table, Value};

use crate::error::Error;

pub use base::tls::TlsFiles;
pub use base::token::TokenKey;
pub use transport::{MountLimits, SockjsOptions};
pub use xmpp::AccountEntry;
pub use xmpp::s2s::{DialbackPolicy, Route};

/// Declares a group of settings: the plain struct the server reads, with
/// its `Default`, and the flags that set it (each an `Option`, unset unless
/// given), whose `resolve` gives the struct. A setting without a default
/// (`name: T, …`) is an `Option<T>` in the struct, `None` unless given.
macro_rules! settings {
    (
        $(#[doc = $sdoc:literal])*
        pub struct $name:ident, flags $flags:ident {
            $(
                $(#[doc = $doc:literal])*
                $field:ident : $ty:ty $(= $default:expr)?, $long:literal, $env:literal $(, arg($($arg:tt)*))?;
            )*
        }
    ) => {
        $(#[doc = $sdoc])*
        #[derive(Debug, Clone, PartialEq)]
        pub struct $name {
            $( $(#[doc = $doc])* pub $field: settings!(@type $ty $(, $default)?), )*
        }

        impl Default for $name {
            fn default() -> $name {
                $name { $( $field: settings!(@default $($default)?), )* }
            }
        }

        #[doc = concat!("The flags of [`", stringify!($name), "`].")]
        #[derive(Debug, Default, Clone, clap::Args)]
        pub struct $flags {
            $(
                $(#[doc = $doc])*
                #[arg(id = $long, long = $long, env = $env $(, $($arg)*)?)]
                pub $field: Option<$ty>,
            )*
        }

        impl $flags {
            /// These flags where given, `under`'s where not.
            pub fn or(self, under: $flags) -> $flags {
                $flags { $( $field: self.$field.or(under.$field), )* }
            }

            /// The settings: each as given, or its default.
            pub fn resolve(self) -> $name {
                $name { $( $field: settings!(@pick self.$field $(, $default)?), )* }
            }
        }
    };
    (@type $ty:ty) => { Option<$ty> };
    (@type $ty:ty, $default:expr) => { $ty };
    (@default) => { None };
    (@default $default:expr) => { $default };
    (@pick $given:expr) => { $given };
    (@pick $given:expr, $default:expr) => { $given.unwrap_or_else(|| $default) };
}

settings! {
    /// How the server listens, and what every connection may do.
    pub struct ServerConfig, flags ServerFlags {
        /// Address to listen on [default: 127.0.0.1:8080]
        listen: SocketAddr = SocketAddr::from(([127, 0, 0, 1], 8080)), "listen", "SWITCHBOARD_LISTEN";
        /// Largest message a client may send, in bytes; larger ones close the connection with 1009 [default: 65536]
        max_message_size: usize = 64 * 1024, "max-message-size", "SWITCHBOARD_MAX_MESSAGE_SIZE";
        /// Whether the native WebSocket endpoints accept permessage-deflate (RFC 7692) when a client offers it; the server compresses each message of 64 bytes or more on its own (server_no_context_takeover), once for all recipients [default: true]
        permessage_deflate: bool = true, "permessage-deflate", "SWITCHBOARD_PERMESSAGE_DEFLATE";
        /// Bytes a client's outbound queue may hold before it is closed as a slow consumer (1008) [default: 1048576]
        queue_limit: usize = 1024 * 1024, "queue-limit", "SWITCHBOARD_QUEUE_LIMIT";
        /// How long a client's writer (WebSocket, SockJS or IRC) lets messages gather once one is queued, to send them all in one write: fewer system calls and less server CPU per message at a busy client, for up to this much more latency. At most 1s; 0s writes each batch at once [default: 0s]
        write_delay: Duration = Duration::ZERO, "write-delay", "SWITCHBOARD_WRITE_DELAY", arg(value_parser = duration);
        /// Whether WebSocket clients (native or SockJS, plain TCP) whose own writer has nothing in hand have their messages written by a shared writer, a task per thread of the server, after the round of tasks that published them, each client's in one write, instead of waking each client's task: less CPU per delivery. Not with --write-delay [default: true]
        shared_writer: bool = true, "shared-writer", "SWITCHBOARD_SHARED_WRITER";
        /// Whether every TCP listener of the server (HTTP, XMPP, IRC, federation) takes the first bytes of a client that holds its cookie in the client's SYN (TCP Fast Open, RFC 7413), saving the round trip of TCP's handshake; at most 1024 such connections wait to be accepted per listener. The host must allow it (net.ipv4.tcp_fastopen=3) [default: false]
        tcp_fast_open: bool = false, "tcp-fast-open", "SWITCHBOARD_TCP_FAST_OPEN";
        /// Whether every connection the server accepts (HTTP, XMPP, IRC, federation) sends each write at once (TCP_NODELAY). false leaves Nagle's algorithm on: while a client has not yet acknowledged what it was sent, the kernel holds further small writes and sends them together once it does; fewer, fuller packets and less CPU per message at a busy client, for up to the client's delayed acknowledgement (40 ms on Linux) more latency. ngircd and InspIRCd leave Nagle's algorithm on; docs/shootout.md has the figures beside them [default: true]
        tcp_nodelay: bool = true, "tcp-nodelay", "SWITCHBOARD_TCP_NODELAY";
        /// Most simultaneous TCP connections; a client beyond them is answered 503 and closed [default: 100000]
        max_connections: usize = 100_000, "max-connections", "SWITCHBOARD_MAX_CONNECTIONS";
        /// How long shutdown waits for clients to take their close before exiting [default: 4s]
        // Under the 5 s a supervisor usually allows before it kills.
        shutdown_grace: Duration = Duration::from_secs(4), "shutdown-grace", "SWITCHBOARD_SHUTDOWN_GRACE", arg(value_parser = duration);
        /// How long a client may take to send a request's headers once it has started; then the connection is closed [default: 10s]
        // Far above what a browser needs even on a slow link, far below what
        // a slowloris client would like to hold.
        header_timeout: Duration = Duration::from_secs(10), "header-timeout", "SWITCHBOARD_HEADER_TIMEOUT", arg(value_parser = duration);
        /// How long a connection may stay open with no request in progress (before its first request and between keep-alive requests); then it is closed [default: 30s]
        idle_timeout: Duration = Duration::from_secs(30), "idle-timeout", "SWITCHBOARD_IDLE_TIMEOUT", arg(value_parser = duration);
        /// Largest request head (request line and headers) in bytes, at least 8192; larger ones get 431 [default: 16384]
        // Browsers' heads are a few KiB; hyper's own default is ~400 KiB.
        max_header_size: usize = 16 * 1024, "max-header-size", "SWITCHBOARD_MAX_HEADER_SIZE";
        /// How often a silent WebSocket or XMPP client is pinged; one that answers no ping for a whole interval is closed (WebSocket 1008, XMPP connection-timeout), and so is one whose socket takes no bytes for as long [default: 25s]
        // Under the 30-60 s after which proxies drop a silent connection.
        ping_interval: Duration = Duration::from_secs(25), "ping-interval", "SWITCHBOARD_PING_INTERVAL", arg(value_parser = duration);
        /// New SockJS and BOSH sessions per second one client address may open, with bursts of ten seconds' worth; past it 429 [default: 100]
        session_rate: u32 = 100, "session-rate", "SWITCHBOARD_SESSION_RATE";
    }
}

/// The flags of every mount's [`MountLimits`], whose defaults are
/// `MountLimits::default()`; a `[[mount]]` in the file may set its own.
#[derive(Debug, Default, Clone, clap::Args)]
pub struct LimitFlags {
    /// Messages per second one client may send; past it the server reads it more slowly (back-pressure) [default: 10000]
    #[arg(long, env = "SWITCHBOARD_MAX_MESSAGE_RATE")]
    pub max_message_rate: Option<u32>,
    /// Message bytes per second one client may send; past it the server reads it more slowly (back-pressure) [default: 8388608]
    #[arg(long, env = "SWITCHBOARD_MAX_BYTE_RATE")]
    pub max_byte_rate: Option<u32>,
    /// Most SockJS sessions over HTTP per mount; a request that would open one more gets 503 [default: 10000]
    #[arg(long, env = "SWITCHBOARD_MAX_SESSIONS")]
    pub max_sessions: Option<usize>,
}

impl LimitFlags {
    /// These flags where given, `under`'s where not.
    pub fn or(self, under: LimitFlags) -> LimitFlags {
        LimitFlags {
            max_message_rate: self.max_message_rate.or(under.max_message_rate),
            max_byte_rate: self.max_byte_rate.or(under.max_byte_rate),
            max_sessions: self.max_sessions.or(under.max_sessions),
        }
    }

    /// `limits` with what these flags set.
    pub fn over(&self, limits: MountLimits) -> MountLimits {
        MountLimits {
            max_message_rate: self.max_message_rate.unwrap_or(limits.max_message_rate),
            max_byte_rate: self.max_byte_rate.unwrap_or(limits.max_byte_rate),
            max_sessions: self.max_sessions.unwrap_or(limits.max_sessions),
        }
    }
}

settings! {
    /// The chat rooms' bounds (which MUC rooms share).
    pub struct RoomConfig, flags RoomFlags {
        /// Most members of one chat room; a join past it is refused [default: 1000]
        max_members: usize = 1000, "max-room-members", "SWITCHBOARD_MAX_ROOM_MEMBERS";
        /// Joins per second one chat room accepts, with bursts of one second's worth; a join past it is refused [default: 100]
        join_rate: u32 = 100, "join-rate", "SWITCHBOARD_JOIN_RATE";
        /// Messages a chat room keeps for members who join later, sent to each as its history event; 0 keeps none [default: 20]
        history: usize = 20, "room-history", "SWITCHBOARD_ROOM_HISTORY";
        /// Bytes of messages a chat room keeps at most, the oldest going first [default: 65536]
        history_bytes: usize = 64 * 1024, "room-history-bytes", "SWITCHBOARD_ROOM_HISTORY_BYTES";
        /// Whether each chat room's messages are kept in its archive in the store (--store): a room opened again (after a restart, or once its last member left) greets its members with the newest of them, and XMPP clients page through it (XEP-0313) [default: true]
        archive: bool = true, "room-archive", "SWITCHBOARD_ROOM_ARCHIVE";
    }
}

impl RoomConfig {
    /// The bounds of a chat room.
    pub fn limits(&self) -> hub::RoomLimits {
        hub::RoomLimits {
            max_members: self.max_members,
            join_rate: Some(self.join_rate),
            history: hub::HistoryLimits { messages: self.history, bytes: self.history_bytes },
        }
    }
}

settings! {
    /// Rooms across several nodes.
    pub struct BrokerConfig, flags BrokerFlags {
        /// How this node shares its rooms with other nodes: a NATS server, e.g. nats://127.0.0.1:4222 (nats-server with -js), or the node that hosts them, node://HOST:PORT (its --broker-listen); see docs/nodes.md [default: none, one node with its rooms in memory]
        url: String, "broker", "SWITCHBOARD_BROKER";
        /// Where this node hosts its rooms for other nodes (their --broker node://…), on a network they all trust: the link has no authentication; `off` for none [default: off]
        listen: Listen = Listen::Off, "broker-listen", "SWITCHBOARD_BROKER_LISTEN";
        /// How long a node's chat names outlive it, and how long a silent node is taken for alive, with the broker [default: 15s]
        ttl: Duration = Duration::from_secs(15), "broker-ttl", "SWITCHBOARD_BROKER_TTL", arg(value_parser = duration);
    }
}

settings! {
    /// XMPP for clients: its listeners, logins, sessions and quotas.
    pub struct XmppConfig, flags XmppFlags {
        /// Where XMPP clients connect (RFC 6120 over TCP); `off` for none [default: 127.0.0.1:5222]
        listen: Listen = Listen::At(SocketAddr::from(([127, 0, 0, 1], 5222))), "xmpp-listen", "SWITCHBOARD_XMPP_LISTEN";
        /// Where XMPP clients connect with TLS from the first byte (XEP-0368, e.g. 127.0.0.1:5223), with --tls-cert's certificate; `off` for none [default: off]
        tls_listen: Listen = Listen::Off, "xmpp-tls-listen", "SWITCHBOARD_XMPP_TLS_LISTEN";
        /// The XMPP domain served; MUC rooms are at conference.<domain> [default: localhost]
        domain: String = "localhost".to_owned(), "xmpp-domain", "SWITCHBOARD_XMPP_DOMAIN";
        /// Whether XMPP clients may log in anonymously (SASL ANONYMOUS) [default: true]
        anonymous: bool = true, "xmpp-anonymous", "SWITCHBOARD_XMPP_ANONYMOUS";
        /// Whether SASL PLAIN is offered without TLS, on an XMPP stream or an IRC connection, which sends the password in the clear [default: false]
        plain_unencrypted: bool = false, "xmpp-plain-unencrypted", "SWITCHBOARD_XMPP_PLAIN_UNENCRYPTED";
        /// How long an XMPP session whose connection broke waits to be resumed (XEP-0198), still in its rooms [default: 5m]
        resume_timeout: Duration = Duration::from_secs(300), "xmpp-resume-timeout", "SWITCHBOARD_XMPP_RESUME_TIMEOUT", arg(value_parser = duration);
        /// How long an XMPP client over TCP or WebSocket has from connecting to binding a resource (stream headers, TLS, SASL); then the stream ends with connection-timeout. Once bound, a client silent for --ping-interval is pinged (XEP-0199) and one silent for another interval is closed the same way [default: 1m]
        // A login over a slow link takes a few round trips; an idle socket gets no more.
        login_timeout: Duration = Duration::from_secs(60), "xmpp-login-timeout", "SWITCHBOARD_XMPP_LOGIN_TIMEOUT", arg(value_parser = duration);
        /// Most XMPP sessions kept waiting to be resumed at once, each holding at most two --queue-limit's worth of stanzas; past it the one waiting longest ends. Anonymous sessions are never kept: they cannot be resumed [default: 1000]
        // 1,000 sessions of 2 MiB at worst: 2 GiB, the most resumption can hold.
        max_parked: usize = 1000, "xmpp-max-parked", "SWITCHBOARD_XMPP_MAX_PARKED";
        /// Failed SASL attempts after which the XMPP stream is closed with not-authorized [default: 3]
        auth_tries: u32 = 3, "xmpp-auth-tries", "SWITCHBOARD_XMPP_AUTH_TRIES";
        /// Failed XMPP logins (SASL failures and refused in-band registrations) one client address may make a minute, all of them at once if it likes; past it the address's streams end with policy-violation before any password is checked, until it has one again [default: 30]
        // A person who mistypes a password a few times is far from it; a
        // guesser gets one try every two seconds.
        auth_failures: u32 = 30, "xmpp-auth-failures", "SWITCHBOARD_XMPP_AUTH_FAILURES";
        /// FAST tokens (XEP-0484) one account may hold at once, at most two for each of its clients (the one it logs in with, and the newer one it was given); past it those expiring first go. A token logs its client in in one round trip without its password (SASL2's HT-SHA-256-NONE, offered where PLAIN is). 0 turns FAST off [default: 10]
        fast_tokens: usize = 10, "xmpp-fast-tokens", "SWITCHBOARD_XMPP_FAST_TOKENS";
        /// How long a FAST token works; a client that logs in with one past half its life is given a new one [default: 14days]
        fast_token_lifetime: Duration = Duration::from_secs(14 * 86_400), "xmpp-fast-token-lifetime", "SWITCHBOARD_XMPP_FAST_TOKEN_LIFETIME", arg(value_parser = duration);
        /// Most MUC rooms one XMPP session may be in at once (so also the most it can create); a join past it is refused with resource-constraint [default: 100]
        max_rooms: usize = 100, "xmpp-max-rooms", "SWITCHBOARD_XMPP_MAX_ROOMS";
        /// Whether a MUC room starts non-anonymous (muc#roomconfig_whois `anyone`: every occupant sees the others' real JIDs and may read the room's owner and admin lists) rather than semi-anonymous (only moderators see real JIDs); its owner may change it [default: false]
        muc_non_anonymous: bool = false, "xmpp-muc-non-anonymous", "SWITCHBOARD_XMPP_MUC_NON_ANONYMOUS";
        /// Accounts that XMPP and IRC clients may make themselves (XMPP's in-band registration, XEP-0077; IRC's REGISTER), kept in the store (--store); 0 turns it off [default: 0]
        registration: usize = 0, "xmpp-registration", "SWITCHBOARD_XMPP_REGISTRATION";
        /// Longest list an XMPP user can make the server keep: contacts in a roster, subscription requests waiting for one user, JIDs a session's directed presence is remembered for, affiliations in one room, JIDs in each list of archiving preferences [default: 1000]
        list_limit: usize = 1000, "xmpp-list-limit", "SWITCHBOARD_XMPP_LIST_LIMIT";
        /// Whether messages between users (XMPP chat and normal messages with a body, IRC private messages) are kept in each account's archive in the store, as its archiving preferences say, for clients to page through (XEP-0313, IRC CHATHISTORY) [default: true]
        archive: bool = true, "xmpp-archive", "SWITCHBOARD_XMPP_ARCHIVE";
        /// Messages kept in the store for one account while it has no available resource (XEP-0160), each at most a stanza's size, given to it with their delay stamp when it next sends available presence; past it the sender is answered service-unavailable; 0 keeps none [default: 100]
        offline_limit: usize = 100, "xmpp-offline-limit", "SWITCHBOARD_XMPP_OFFLINE_LIMIT";
    }
}

settings! {
    /// XMPP between servers: federation (docs/federation.md).
    pub struct FederationConfig, flags FederationFlags {
        /// Where other XMPP servers connect (RFC 6120 server-to-server); federation needs --tls-cert (its certificate names the XMPP domain and conference.<domain>); `off` for none, and with --xmpp-s2s-tls-listen off too, no federation either way [default: 127.0.0.1:5269]
        listen: Listen = Listen::At(SocketAddr::from(([127, 0, 0, 1], 5269))), "xmpp-s2s-listen", "SWITCHBOARD_XMPP_S2S_LISTEN";
        /// Where other domains' servers are, as domain=address pairs separated by commas (e.g. b.test=127.0.0.3:5269; tls:127.0.0.3:5270 for a server that takes TLS from the first byte, XEP-0368), for labs and private networks; other domains are found through DNS [default: none]
        routes: Routes = Routes::default(), "xmpp-s2s-routes", "SWITCHBOARD_XMPP_S2S_ROUTES";
        /// Where other XMPP servers connect with TLS from the first byte (XEP-0368, e.g. 127.0.0.1:5270; publish it as an _xmpps-server._tcp SRV record), with the xmpp-server ALPN; `off` for none [default: off]
        tls_listen: Listen = Listen::Off, "xmpp-s2s-tls-listen", "SWITCHBOARD_XMPP_S2S_TLS_LISTEN";
        /// Where peers configured in advance ([[xmpp_s2s_peer]] in the file) connect for zero-handshake streams (XEP-0361: no stream header or authentication; a peer is known by the address its connections come from, and by its certificate over TLS where its entry pins one), e.g. 127.0.0.1:5271; `off` for none [default: off]
        zero_listen: Listen = Listen::Off, "xmpp-s2s-zero-listen", "SWITCHBOARD_XMPP_S2S_ZERO_LISTEN";
        /// Name server asked for other domains' SRV (_xmpp-server._tcp) and address records, e.g. 127.0.0.10:53 [default: none, the system's (/etc/resolv.conf)]
        dns: SocketAddr, "xmpp-s2s-dns", "SWITCHBOARD_XMPP_S2S_DNS";
        /// PEM file of the authorities trusted to vouch for other servers' certificates [default: none, the authorities browsers trust (Mozilla's list)]
        trust: PathBuf, "xmpp-s2s-trust", "SWITCHBOARD_XMPP_S2S_TRUST";
        /// How long a stream to another server may take to be ready (connected, encrypted, authenticated); then what waits for it is answered remote-server-timeout [default: 30s]
        connect_timeout: Duration = Duration::from_secs(30), "xmpp-s2s-connect-timeout", "SWITCHBOARD_XMPP_S2S_CONNECT_TIMEOUT", arg(value_parser = duration);
        /// How long a stream between servers that carries nothing stays open, and how long a write to one may wait for the other side to take a byte [default: 10m]
        idle_timeout: Duration = Duration::from_secs(600), "xmpp-s2s-idle-timeout", "SWITCHBOARD_XMPP_S2S_IDLE_TIMEOUT", arg(value_parser = duration);
        /// Bytes of stanzas waiting for one domain's stream at most; a stanza past it is answered resource-constraint. A stream also holds at most this many bytes sent and not yet acknowledged (XEP-0198), then waits for the other server's answer before sending more [default: 262144]
        queue: usize = 256 * 1024, "xmpp-s2s-queue", "SWITCHBOARD_XMPP_S2S_QUEUE";
        /// Most streams between servers open at once, both ways; past it, new ones are refused [default: 1000]
        max_streams: usize = 1000, "xmpp-s2s-max-streams", "SWITCHBOARD_XMPP_S2S_MAX_STREAMS";
        /// Most authenticated streams one other domain may have open to this server at once; past it, a new one ends with policy-violation, except a zero-handshake peer's, which ends its oldest instead [default: 4]
        max_streams_per_domain: usize = 4, "xmpp-s2s-max-streams-per-domain", "SWITCHBOARD_XMPP_S2S_MAX_STREAMS_PER_DOMAIN";
        /// Most users of other servers in this server's MUC rooms at once; past it, a new one is answered resource-constraint [default: 10000]
        max_guests: usize = 10_000, "xmpp-s2s-max-guests", "SWITCHBOARD_XMPP_S2S_MAX_GUESTS";
        /// Which domains may authenticate with Server Dialback (XEP-0220) when their certificate does not vouch for them: `off`, domains separated by commas, or `*` for any [default: off]
        dialback: DialbackPolicy = DialbackPolicy::Off, "xmpp-s2s-dialback", "SWITCHBOARD_XMPP_S2S_DIALBACK";
        /// Secret this server's dialback keys are derived from (XEP-0185); nodes serving one domain must share it [default: none, a random one at each start]
        secret: String, "xmpp-s2s-secret", "SWITCHBOARD_XMPP_S2S_SECRET", arg(hide_env_values = true);
    }
}

/// Where other domains' servers are: `--xmpp-s2s-routes`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Routes(pub Vec<(String, Route)>);

impl FromStr for Routes {
    type Err = String;

    fn from_str(text: &str) -> Result<Routes, String> {
        let routes = text.split(',').map(str::trim).filter(|pair| !pair.is_empty()).map(|pair| {
            let (domain, route) = pair.split_once('=').ok_or_else(|| format!("{pair:?} is not domain=address"))?;
            let route = route.parse::<Route>().map_err(|e| format!("{e} in {pair:?}"))?;
            Ok((domain.trim().to_ascii_lowercase(), route))
        });
        routes.collect::<Result<_, String>>().map(Routes)
    }
}

settings! {
    /// IRC for clients (docs/irc.md).
    pub struct IrcConfig, flags IrcFlags {
        /// Where IRC clients connect (RFC 1459/2812 over TCP); `off` for none [default: 127.0.0.1:6667]
        listen: Listen = Listen::At(SocketAddr::from(([127, 0, 0, 1], 6667))), "irc-listen", "SWITCHBOARD_IRC_LISTEN";
        /// Where IRC clients connect with TLS, with --tls-cert's certificate; listens only when a certificate is configured; `off` for none [default: 127.0.0.1:6697]
        tls_listen: Listen = Listen::At(SocketAddr::from(([127, 0, 0, 1], 6697))), "irc-tls-listen", "SWITCHBOARD_IRC_TLS_LISTEN";
        /// How the server names itself to IRC clients: the source of its replies, and the host every member is shown at (nick!nick@<name>) [default: localhost]
        server_name: String = "localhost".to_owned(), "irc-server-name", "SWITCHBOARD_IRC_SERVER_NAME";
        /// How the server describes itself to IRC clients: the server info of WHOIS (312) and LINKS (364) [default: Switchboard]
        description: String = "Switchboard".to_owned(), "irc-server-description", "SWITCHBOARD_IRC_SERVER_DESCRIPTION";
        /// Most channels one IRC client is in at once; a JOIN past it is answered 405 [default: 50]
        max_channels: usize = 50, "irc-max-channels", "SWITCHBOARD_IRC_MAX_CHANNELS";
        /// How long an IRC client has from connecting to being registered (NICK, USER, and CAP END if it began CAP); then it is closed with ERROR [default: 1m]
        registration_timeout: Duration = Duration::from_secs(60), "irc-registration-timeout", "SWITCHBOARD_IRC_REGISTRATION_TIMEOUT", arg(value_parser = duration);
        /// A password every IRC client must give with PASS before it registers; one that gives none or another is answered 464 and closed [default: none]
        password: String, "irc-password", "SWITCHBOARD_IRC_PASSWORD", arg(hide_env_values = true);
        /// IRC operators, as name:password pairs separated by commas: `OPER <name> <password>` makes a client of this server one (user mode +o: KILL, WALLOPS). A wrong password counts against --xmpp-auth-failures [default: none]
        operators: String, "irc-operators", "SWITCHBOARD_IRC_OPERATORS", arg(hide_env_values = true);
    }
}

impl IrcConfig {
    /// The operators' names and passwords (`--irc-operators`).
    pub fn operator_list(&self) -> Result<Vec<(String, String)>, String> {
        let Some(list) = &self.operators else { return Ok(Vec::new()) };
        list.split(',')
            .map(|pair| match pair.split_once(':') {
                Some((name, password)) if !name.is_empty() && !password.is_empty() && !name.contains(' ') => Ok((name.to_owned(), password.to_owned())),
                _ => Err("--irc-operators must be name:password pairs separated by commas, each with a name (no spaces) and a password".to_owned()),
            })
            .collect()
    }
}

impl IrcConfig {
    fn validate(&self) -> Result<(), String> {
        let name = &self.server_name;
        if name.is_empty() || name.len() > 63 || !name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'.' || b == b'-') {
            return Err(format!("--irc-server-name {name:?} must be a host name: letters, digits, dots and dashes, at most 63"));
        }
        if self.max_channels == 0 {
            return Err("--irc-max-channels must be at least 1".into());
        }
        self.operator_list()?;
        let description = &self.description;
        if description.is_empty() || description.len() > 100 || description.chars().any(char::is_control) {
            return Err(format!("--irc-server-description {description:?} must be 1 to 100 bytes with no control character"));
        }
        Ok(())
    }
}

settings! {
    /// The server API for application backends (README, "Server API").
    pub struct ApiConfig, flags ApiFlags {
        /// Keys an application's backend presents in X-API-Key to call the server API at /api/, comma-separated, each at least 16 bytes; the API is off without one [default: none, no API]
        keys: ApiKeys, "api-key", "SWITCHBOARD_API_KEY", arg(hide_env_values = true);
        /// Where the server API listens on its own, only it; `off` for the main listener's /api/ [default: off]
        listen: Listen = Listen::Off, "api-listen", "SWITCHBOARD_API_LISTEN";
        /// Largest body of a call to the server API, in bytes; a larger one is answered 413 [default: 65536]
        max_body: usize = 64 * 1024, "api-max-body", "SWITCHBOARD_API_MAX_BODY";
        /// Most commands in one batch call, and rooms in one broadcast; more is answered 422 [default: 100]
        max_batch: usize = 100, "api-max-batch", "SWITCHBOARD_API_MAX_BATCH";
        /// Most items in one page of presence, history or rooms; a larger limit is answered 422 [default: 1000]
        max_page: usize = 1000, "api-max-page", "SWITCHBOARD_API_MAX_PAGE";
        /// Calls a second one API key may make (every admin token shares one rate), with bursts of a second's worth; past it 429 with Retry-After [default: 50000]
        rate: u32 = 50_000, "api-rate", "SWITCHBOARD_API_RATE";
        /// How long a publish's idempotency key is remembered: the same key within it publishes once [default: 5m]
        idempotency_window: Duration = Duration::from_secs(300), "api-idempotency-window", "SWITCHBOARD_API_IDEMPOTENCY_WINDOW", arg(value_parser = duration);
        /// Most idempotency keys remembered at once; past it the oldest is forgotten first [default: 100000]
        idempotency_keys: usize = 100_000, "api-idempotency-keys", "SWITCHBOARD_API_IDEMPOTENCY_KEYS";
    }
}

impl ApiConfig {
    fn validate(&self) -> Result<(), String> {
        if self.max_body == 0 || self.max_batch == 0 || self.max_page == 0 || self.rate == 0 || self.idempotency_keys == 0 {
            return Err("--api-max-body, --api-max-batch, --api-max-page, --api-rate and --api-idempotency-keys must be at least 1".into());
        }
        if self.keys.is_none() && self.listen != Listen::Off {
            return Err("--api-listen needs --api-key: the server API is off without a key".into());
        }
        Ok(())
    }

    /// The API's own settings, if it is on.
    pub fn settings(&self) -> Option<api::Settings> {
        let keys = self.keys.as_ref()?;
        Some(api::Settings {
            keys: keys.0.clone(),
            max_body: self.max_body,
            max_batch: self.max_batch,
            max_page: self.max_page,
            rate: self.rate,
            idempotency_window: self.idempotency_window,
            idempotency_keys: self.idempotency_keys,
        })
    }
}

/// The server API's keys, as `--api-key` gives them: comma-separated.
#[derive(Clone, PartialEq, Eq)]
pub struct ApiKeys(pub Vec<String>);

impl std::fmt::Debug for ApiKeys {
    // Keys are secrets: the configuration's debug output names how many.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "ApiKeys({} keys)", self.0.len())
    }
}

impl FromStr for ApiKeys {
    type Err = String;

    fn from_str(text: &str) -> Result<ApiKeys, String> {
        let keys: Vec<String> = text.split(',').map(|k| k.trim().to_owned()).filter(|k| !k.is_empty()).collect();
        if keys.is_empty() {
            return Err("give at least one key".into());
        }
        if let Some(short) = keys.iter().find(|k| k.len() < 16 || !k.bytes().all(|b| b.is_ascii_graphic())) {
            return Err(format!("an API key must be at least 16 visible ASCII characters; one is {} long", short.len()));
        }
        Ok(ApiKeys(keys))
    }
}

settings! {
    /// XMPP over BOSH (XEP-0124, XEP-0206) at /http-bind.
    pub struct BoshConfig, flags BoshFlags {
        /// Longest a BOSH request (XMPP over HTTP at /http-bind) is held waiting for something to send; a client asking for longer gets this [default: 60s]
        wait: Duration = Duration::from_secs(60), "bosh-wait", "SWITCHBOARD_BOSH_WAIT", arg(value_parser = duration);
        /// How long a BOSH session lives without a request from its client before it ends [default: 60s]
        inactivity: Duration = Duration::from_secs(60), "bosh-inactivity", "SWITCHBOARD_BOSH_INACTIVITY", arg(value_parser = duration);
        /// Most BOSH sessions held at once; past it, new ones are refused with 503 [default: 10000]
        max_sessions: usize = 10_000, "bosh-max-sessions", "SWITCHBOARD_BOSH_MAX_SESSIONS";
        /// Most BOSH sessions one client address holds at once, so that a few addresses cannot take every session; past it, new ones from it are refused with 429 [default: 100]
        // A hundred addresses to fill the server, rather than one.
        max_sessions_per_address: usize = 100, "bosh-max-sessions-per-address", "SWITCHBOARD_BOSH_MAX_SESSIONS_PER_ADDRESS";
    }
}

settings! {
    /// What outlives a restart: accounts, rosters and waiting subscription requests (docs/storage.md).
    pub struct StoreConfig, flags StoreFlags {
        /// Where accounts, rosters, offline messages and persistent rooms are kept: `sqlite`, a file in --data-dir; `postgres`, the database at --database, which several nodes may share; or `memory`, nothing outlives the process [default: sqlite]
        kind: StoreKind = StoreKind::Sqlite, "store", "SWITCHBOARD_STORE";
        /// Folder of the SQLite store (switchboard.db), made at start if missing; a relative path is from where the server starts [default: data]
        data_dir: PathBuf = PathBuf::from("data"), "data-dir", "SWITCHBOARD_DATA_DIR";
        /// The PostgreSQL database of --store postgres, e.g. postgres://switchboard:secret@127.0.0.1/switchboard [default: none]
        database: String, "database", "SWITCHBOARD_DATABASE", arg(hide_env_values = true);
        /// When a SQLite commit is durable: `normal`, it outlives the server being killed but the last ones may be lost to a power cut or a crash of the operating system; `full`, it outlives those too, for an fsync at every commit (docs/storage.md) [default: normal]
        sqlite_synchronous: store::Synchronous = store::Synchronous::Normal, "sqlite-synchronous", "SWITCHBOARD_SQLITE_SYNCHRONOUS";
        /// Batches of archive entries (XMPP's, rooms') waiting for the archive's writer at most; past it, senders wait for room (their next message is read once theirs is queued) [default: 10000]
        archive_queue: usize = 10_000, "archive-queue", "SWITCHBOARD_ARCHIVE_QUEUE";
        /// How long archived messages are kept (checked every hour), e.g. 365d [default: none, for good]
        archive_retention: Duration, "archive-retention", "SWITCHBOARD_ARCHIVE_RETENTION", arg(value_parser = duration);
        /// Messages each archive (an account's, a room's) keeps at most, the newest; checked every hour, so an archive may pass it by what an hour brings; 0 for no limit [default: 100000]
        archive_limit: u64 = 100_000, "archive-limit", "SWITCHBOARD_ARCHIVE_LIMIT";
    }
}

/// Which store keeps what outlives a restart.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StoreKind {
    Sqlite,
    Postgres,
    Memory,
}

impl FromStr for StoreKind {
    type Err = String;

    fn from_str(text: &str) -> Result<StoreKind, String> {
        match text {
            "sqlite" => Ok(StoreKind::Sqlite),
            "postgres" => Ok(StoreKind::Postgres),
            "memory" => Ok(StoreKind::Memory),
            _ => Err(format!("{text:?} is not a store: sqlite, postgres or memory")),
        }
    }
}

impl StoreConfig {
    /// The store these settings name.
    pub fn choice(&self) -> store::Choice {
        match self.kind {
            StoreKind::Sqlite => store::Choice::Sqlite(self.data_dir.clone()),
            StoreKind::Postgres => store::Choice::Postgres(self.database.clone().unwrap_or_default()),
            StoreKind::Memory => store::Choice::Memory,
        }
    }

    fn validate(&self) -> Result<(), String> {
        match (self.kind, &self.database) {
            (StoreKind::Postgres, None) => Err("--store postgres needs --database postgres://…".into()),
            (StoreKind::Postgres, Some(url)) if !url.starts_with("postgres://") && !url.starts_with("postgresql://") => {
                Err("--database must be a postgres:// URL".into())
            }
            (StoreKind::Sqlite | StoreKind::Memory, Some(_)) => Err("--database is for --store postgres".into()),
            _ => Ok(()),
        }
    }
}

settings! {
    /// TLS on the listener.
    pub struct TlsConfig, flags TlsFlags {
        /// PEM certificate chain for TLS on the listener (https:// and wss://); needs --tls-key [default: none, plain TCP]
        cert: PathBuf, "tls-cert", "SWITCHBOARD_TLS_CERT";
        /// PEM private key for --tls-cert [default: none]
        key: PathBuf, "tls-key", "SWITCHBOARD_TLS_KEY";
    }
}

settings! {
    /// The tokens clients must present.
    pub struct TokenConfig, flags TokenFlags {
        /// Shared secret: every client must present a JWT signed with it (HS256) [default: none, no token needed]
        secret: String, "token-secret", "SWITCHBOARD_TOKEN_SECRET", arg(hide_env_values = true);
        /// PEM public key (RSA for RS256, EC P-256 for ES256): every client must present a JWT signed with its private key [default: none]
        public_key: PathBuf, "token-public-key", "SWITCHBOARD_TOKEN_PUBLIC_KEY";
    }
}

/// A duration as people write one: `4s`, `1m`, `250ms`, `1h 30m`.
fn duration(text: &str) -> Result<Duration, humantime::DurationError> {
    humantime::parse_duration(text)
}

/// Flags of `switchboard serve`. Unset flags fall back to the environment,
/// then the `--config` file, then the default shown.
#[derive(Debug, Default, Clone, clap::Args)]
pub struct Args {
    /// TOML file with settings and app mounts (see conformance/sockjs-protocol.toml)
    #[arg(long, env = "SWITCHBOARD_CONFIG")]
    pub config: Option<PathBuf>,
    #[command(flatten)]
    pub server: ServerFlags,
    #[command(flatten)]
    pub limits: LimitFlags,
    #[command(flatten)]
    pub rooms: RoomFlags,
    #[command(flatten)]
    pub broker: BrokerFlags,
    #[command(flatten)]
    pub xmpp: XmppFlags,
    #[command(flatten)]
    pub federation: FederationFlags,
    #[command(flatten)]
    pub irc: IrcFlags,
    #[command(flatten)]
    pub api: ApiFlags,
    #[command(flatten)]
    pub bosh: BoshFlags,
    #[command(flatten)]
    pub store: StoreFlags,
    #[command(flatten)]
    pub tls: TlsFlags,
    #[command(flatten)]
    pub tokens: TokenFlags,
}

impl Args {
    /// These flags where given, `under`'s where not.
    fn or(self, under: Args) -> Args {
        Args {
            server: self.server.or(under.server),
            config: self.config.or(under.config),
            limits: self.limits.or(under.limits),
            rooms: self.rooms.or(under.rooms),
            broker: self.broker.or(under.broker),
            xmpp: self.xmpp.or(under.xmpp),
            federation: self.federation.or(under.federation),
            irc: self.irc.or(under.irc),
            api: self.api.or(under.api),
            bosh: self.bosh.or(under.bosh),
            store: self.store.or(under.store),
            tls: self.tls.or(under.tls),
            tokens: self.tokens.or(under.tokens),
        }
    }
}

/// `switchboard serve`'s command line, for parsing [`Args`] on their own.
#[derive(clap::Parser)]
struct Serve {
    #[command(flatten)]
    args: Args,
}

/// Where a listener listens: an address, or `off`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Listen {
    At(SocketAddr),
    Off,
}

impl Listen {
    /// The address, if it listens.
    pub fn address(self) -> Option<SocketAddr> {
        match self {
            Listen::At(address) => Some(address),
            Listen::Off => None,
        }
    }
}

impl FromStr for Listen {
    type Err = String;

    fn from_str(text: &str) -> Result<Listen, String> {
        if text == "off" {
            return Ok(Listen::Off);
        }
        text.parse().map(Listen::At).map_err(|_| format!("{text:?} is not an address like 127.0.0.1:5222, nor off"))
    }
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

/// The resolved configuration the server runs with: each group's settings,
/// and what only the file can say (the mounts, the XMPP accounts).
#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    pub server: ServerConfig,
    /// The limits of a mount that sets none of its own.
    pub limits: MountLimits,
    pub rooms: RoomConfig,
    pub broker: BrokerConfig,
    pub xmpp: XmppConfig,
    /// XMPP accounts (`[[xmpp_account]]` in the file; see `switchboard xmpp-account`).
    pub xmpp_accounts: Vec<AccountEntry>,
    pub federation: FederationConfig,
    /// Servers federated with by zero-handshake streams (`[[xmpp_s2s_peer]]` in the file).
    pub zero_peers: Vec<xmpp::s2s::ZeroPeer>,
    pub irc: IrcConfig,
    pub api: ApiConfig,
    pub bosh: BoshConfig,
    pub store: StoreConfig,
    /// TLS on the listener, if configured.
    pub tls: Option<TlsFiles>,
    /// How clients' tokens are checked, if they must present one.
    pub token_key: Option<TokenKey>,
    /// The apps and where they are mounted.
    pub mounts: Vec<Mount>,
}

impl Default for Config {
    fn default() -> Config {
        Config {
            server: ServerConfig::default(),
            limits: MountLimits::default(),
            rooms: RoomConfig::default(),
            broker: BrokerConfig::default(),
            xmpp: XmppConfig::default(),
            xmpp_accounts: Vec::new(),
            federation: FederationConfig::default(),
            zero_peers: Vec::new(),
            irc: IrcConfig::default(),
            api: ApiConfig::default(),
            bosh: BoshConfig::default(),
            store: StoreConfig::default(),
            tls: None,
            token_key: None,
            mounts: MountKind::DEFAULT.iter().map(|&app| Mount::new(app)).collect(),
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

impl Config {
    /// Resolves flags (already merged with the environment by clap) over the
    /// `--config` file, if any, over the defaults.
    pub fn resolve(args: &Args) -> Result<Config, Error> {
        let file = match &args.config {
            Some(path) => read_file(path)?,
            None => File::default(),
        };
        let flags = args.clone().or(file.flags);
        let limits = flags.limits.over(MountLimits::default());
        let tls = match flags.tls.resolve() {
            TlsConfig { cert: Some(cert), key: Some(key) } => Some(TlsFiles { cert, key }),
            TlsConfig { cert: None, key: None } => None,
            _ => return Err(Error::config("--tls-cert and --tls-key go together: give both or neither")),
        };
        let token_key = match flags.tokens.resolve() {
            TokenConfig { secret: Some(_), public_key: Some(_) } => {
                return Err(Error::config("give --token-secret or --token-public-key, not both"));
            }
            TokenConfig { secret: Some(secret), public_key: None } => Some(TokenKey::Secret(secret)),
            TokenConfig { secret: None, public_key: Some(path) } => Some(TokenKey::PublicKey(path)),
            TokenConfig { secret: None, public_key: None } => None,
        };
        let in_file = |e: String| Error::config(format!("{}: {e}", args.config.as_deref().unwrap_or(Path::new("--config")).display()));
        let mounts = match file.mounts {
            None => {
                let sockjs = sockjs_options(file.sockjs).map_err(in_file)?;
                MountKind::DEFAULT.iter().map(|&app| Mount { sockjs: sockjs.clone(), limits, ..Mount::new(app) }).collect()
            }
            Some(tables) => tables.into_iter().map(|table| mount(table, &file.sockjs, limits)).collect::<Result<_, _>>().map_err(in_file)?,
        };
        let config = Config {
            server: flags.server.resolve(),
            limits,
            rooms: flags.rooms.resolve(),
            broker: flags.broker.resolve(),
            xmpp: flags.xmpp.resolve(),
            xmpp_accounts: file.accounts,
            federation: {
                // The file's tables, then the flag's list, which wins for a domain both name.
                let mut federation = flags.federation.resolve();
                let mut routes: Vec<(String, Route)> = file.routes.into_iter().map(|r| (r.domain.to_ascii_lowercase(), Route { address: r.address, direct_tls: r.tls })).collect();
                routes.append(&mut federation.routes.0);
                federation.routes = Routes(routes);
                federation
            },
            zero_peers: file
                .peers
                .into_iter()
                .map(|p| xmpp::s2s::ZeroPeer {
                    domains: p.domains.iter().map(|d| d.to_ascii_lowercase()).collect(),
                    address: p.address,
                    from: p.from.iter().map(std::net::IpAddr::to_canonical).collect(),
                    compress: p.compress,
                    // Checked as the file was read.
                    pin: p.pin.as_deref().and_then(|pin| xmpp::s2s::parse_pin(pin).ok()),
                })
                .collect(),
            irc: flags.irc.resolve(),
            api: flags.api.resolve(),
            bosh: flags.bosh.resolve(),
            store: flags.store.resolve(),
            tls,
            token_key,
            mounts,
        };
        config.validate()?;
        Ok(config)
    }

    fn validate(&self) -> Result<(), Error> {
        self.server.validate().map_err(Error::config)?;
        self.rooms.validate().map_err(Error::config)?;
        self.broker.validate().map_err(Error::config)?;
        self.xmpp.validate().map_err(Error::config)?;
        self.federation.validate().map_err(Error::config)?;
        self.irc.validate().map_err(Error::config)?;
        self.api.validate().map_err(Error::config)?;
        self.bosh.validate().map_err(Error::config)?;
        self.store.validate().map_err(Error::config)?;
        if self.xmpp.tls_listen != Listen::Off && self.tls.is_none() {
            return Err(Error::config("xmpp_tls_listen needs a certificate: give --tls-cert and --tls-key"));
        }
        xmpp::Accounts::new(&self.xmpp_accounts, Arc::new(store::MemoryStore::default())).map_err(Error::config)?;
        for (i, m) in self.mounts.iter().enumerate() {
            if m.prefix.is_empty() || m.prefix.matches('/').count() != 1 {
                return Err(Error::config(format!("mount prefix {:?} must be one path segment like \"/echo\"", m.prefix)));
            }
            if self.mounts[..i].iter().any(|o| o.prefix == m.prefix) {
                return Err(Error::config(format!("mount prefix {:?} is used twice", m.prefix)));
            }
            if m.sockjs.heartbeat.is_zero() {
                return Err(Error::config(format!("{}: heartbeat must be above zero", m.prefix)));
            }
            if m.limits.max_message_rate == 0 || m.limits.max_byte_rate == 0 {
                return Err(Error::config(format!("{}: max_message_rate and max_byte_rate must be at least 1", m.prefix)));
            }
        }
        Ok(())
    }

    /// The mount whose prefix is `prefix`.
    pub fn mount(&self, prefix: &str) -> Option<&Mount> {
        self.mounts.iter().find(|m| m.prefix == prefix)
    }

    /// What one XMPP client may send, over TCP and BOSH: the `xmpp` mount's
    /// limits, or the top-level ones where there is no such mount.
    pub fn xmpp_limits(&self) -> MountLimits {
        self.mounts.iter().find(|m| m.app == MountKind::Xmpp).map_or(self.limits, |m| m.limits)
    }
}

/// `Err` naming the first of `checks` that fails.
fn check(checks: &[(bool, &str)]) -> Result<(), String> {
    match checks.iter().find(|(ok, _)| !ok) {
        Some((_, problem)) => Err((*problem).to_owned()),
        None => Ok(()),
    }
}

/// A write delay is for gathering a busy client's messages, not for
/// holding them: past a second it is a mistake.
const MAX_WRITE_DELAY: Duration = Duration::from_secs(1);

/// hyper cannot read a request with a smaller buffer.
const MIN_HEADER_SIZE: usize = 8192;

impl ServerConfig {
    fn validate(&self) -> Result<(), String> {
        let header_size = format!("max_header_size must be at least {MIN_HEADER_SIZE}");
        check(&[
            (self.max_message_size > 0, "max_message_size must be at least 1"),
            (self.max_connections > 0, "max_connections must be at least 1"),
            (self.max_header_size >= MIN_HEADER_SIZE, &header_size),
            (!self.header_timeout.is_zero(), "header_timeout must be above zero"),
            (!self.idle_timeout.is_zero(), "idle_timeout must be above zero"),
            (!self.ping_interval.is_zero(), "ping_interval must be above zero"),
            (self.write_delay <= MAX_WRITE_DELAY, "write_delay must be at most 1s"),
            (self.session_rate > 0, "session_rate must be at least 1"),
        ])
    }
}

impl RoomConfig {
    fn validate(&self) -> Result<(), String> {
        check(&[(self.max_members > 0, "max_room_members must be at least 1"), (self.join_rate > 0, "join_rate must be at least 1")])
    }
}

impl BrokerConfig {
    fn validate(&self) -> Result<(), String> {
        if let Some(url) = &self.url
            && !url.starts_with("nats://")
            && !url.strip_prefix("node://").is_some_and(|at| at.contains(':'))
        {
            return Err(format!("broker {url:?} must be a nats:// URL, such as nats://127.0.0.1:4222, or node://HOST:PORT"));
        }
        if self.url.is_some() && self.listen.address().is_some() {
            return Err("a node either hosts its rooms (broker_listen) or shares them through a broker, not both".to_owned());
        }
        check(&[(self.ttl >= Duration::from_secs(1), "broker_ttl must be at least 1s")])
    }
}

impl XmppConfig {
    fn validate(&self) -> Result<(), String> {
        // A domain the server can route to: a JID that is a domain alone.
        if !xmpp::Jid::parse(&self.domain).is_some_and(|jid| jid.local.is_none() && jid.resource.is_none()) {
            return Err(format!("xmpp_domain {:?} must be a domain name such as localhost", self.domain));
        }
        check(&[
            (!self.login_timeout.is_zero(), "xmpp_login_timeout must be above zero"),
            (self.list_limit > 0, "xmpp_list_limit must be at least 1"),
            (self.max_parked > 0, "xmpp_max_parked must be at least 1"),
            (self.auth_failures > 0, "xmpp_auth_failures must be at least 1"),
            (self.max_rooms > 0, "xmpp_max_rooms must be at least 1"),
            (self.auth_tries > 0, "xmpp_auth_tries must be at least 1"),
            (self.fast_tokens == 0 || !self.fast_token_lifetime.is_zero(), "xmpp_fast_token_lifetime must be above zero"),
            (self.fast_token_lifetime <= base::fast::MAX_LIFETIME, "xmpp_fast_token_lifetime is at most 10 years"),
        ])
    }
}

impl FederationConfig {
    /// Whether the server federates: it listens for other servers, and
    /// has a certificate to show them.
    pub fn on(&self, tls: Option<&TlsFiles>) -> bool {
        (self.listen != Listen::Off || self.tls_listen != Listen::Off || self.zero_listen != Listen::Off) && tls.is_some()
    }

    fn validate(&self) -> Result<(), String> {
        check(&[
            (!self.connect_timeout.is_zero(), "xmpp_s2s_connect_timeout must be above zero"),
            (!self.idle_timeout.is_zero(), "xmpp_s2s_idle_timeout must be above zero"),
            (self.max_streams > 0, "xmpp_s2s_max_streams must be at least 1"),
            (self.queue > 0, "xmpp_s2s_queue must be at least 1"),
            (self.max_guests > 0, "xmpp_s2s_max_guests must be at least 1"),
            (self.max_streams_per_domain > 0, "xmpp_s2s_max_streams_per_domain must be at least 1"),
        ])
    }
}

impl BoshConfig {
    fn validate(&self) -> Result<(), String> {
        // BOSH speaks in whole seconds.
        check(&[
            (self.wait >= Duration::from_secs(1), "bosh_wait must be at least 1s"),
            (self.inactivity >= Duration::from_secs(1), "bosh_inactivity must be at least 1s"),
            (self.max_sessions > 0, "bosh_max_sessions must be at least 1"),
            (self.max_sessions_per_address > 0, "bosh_max_sessions_per_address must be at least 1"),
        ])
    }
}

/// What the file says: settings as the flags name them, and what only the
/// file can say (`[sockjs]`, `[[mount]]`, `[[xmpp_account]]`,
/// `[[xmpp_s2s_route]]`).
#[derive(Debug, Default)]
struct File {
    flags: Args,
    sockjs: Table,
    mounts: Option<Vec<Table>>,
    accounts: Vec<AccountEntry>,
    routes: Vec<RouteEntry>,
    peers: Vec<PeerEntry>,
}

/// One `[[xmpp_s2s_peer]]`: a server federated with by zero-handshake
/// streams (XEP-0361), configured alike on both sides.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct PeerEntry {
    /// Its domains (users' and MUC service's), whose stanzas its connections carry.
    domains: Vec<String>,
    /// Where its zero-handshake listener (`--xmpp-s2s-zero-listen`) is.
    address: SocketAddr,
    /// The addresses its connections come from.
    #[serde(default)]
    from: Vec<std::net::IpAddr>,
    /// Whether each write is deflated both ways (the peer's entry must say so too).
    #[serde(default)]
    compress: bool,
    /// The SHA-256 of its certificate: connections are TLS both ways.
    #[serde(default)]
    pin: Option<String>,
}

/// One `[[xmpp_s2s_route]]`: where a domain's server is, as
/// `--xmpp-s2s-routes` says it.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RouteEntry {
    domain: String,
    address: SocketAddr,
    /// TLS from the first byte (XEP-0368) there, not STARTTLS.
    #[serde(default)]
    tls: bool,
}

fn read_file(path: &Path) -> Result<File, Error> {
    let in_file = |e: String| Error::config(format!("{}: {e}", path.display()));
    let text = std::fs::read_to_string(path).map_err(|e| Error::config(format!("cannot read {}: {e}", path.display())))?;
    let mut table: Table = toml::from_str(&text).map_err(|e| in_file(e.to_string()))?;
    let sockjs = match table.remove("sockjs") {
        None => Table::new(),
        Some(Value::Table(sockjs)) => sockjs,
        Some(_) => return Err(in_file("sockjs must be a table, [sockjs]".into())),
    };
    if let Some(key) = sockjs.keys().find(|key| setting_names::<LimitFlags>().contains(key)) {
        return Err(in_file(format!("{key}: max_message_rate, max_byte_rate and max_sessions go at the top level or in a [[mount]], not in [sockjs]")));
    }
    let mounts = match table.remove("mount") {
        None => None,
        Some(Value::Array(items)) => Some(
            items
                .into_iter()
                .map(|item| match item {
                    Value::Table(mount) => Ok(mount),
                    _ => Err(in_file("each mount must be a table, [[mount]]".into())),
                })
                .collect::<Result<_, _>>()?,
        ),
        Some(_) => return Err(in_file("mounts are tables, [[mount]]".into())),
    };
    let accounts = match table.remove("xmpp_account") {
        None => Vec::new(),
        Some(accounts) => accounts.try_into().map_err(|e| in_file(format!("[[xmpp_account]]: {e}")))?,
    };
    let routes = match table.remove("xmpp_s2s_route") {
        None => Vec::new(),
        Some(routes) => routes.try_into().map_err(|e| in_file(format!("[[xmpp_s2s_route]]: {e}")))?,
    };
    let peers: Vec<PeerEntry> = match table.remove("xmpp_s2s_peer") {
        None => Vec::new(),
        Some(peers) => peers.try_into().map_err(|e| in_file(format!("[[xmpp_s2s_peer]]: {e}")))?,
    };
    if let Some(peer) = peers.iter().find(|p| p.domains.is_empty()) {
        return Err(in_file(format!("[[xmpp_s2s_peer]] at {} names no domains", peer.address)));
    }
    for peer in &peers {
        if let Some(pin) = &peer.pin {
            xmpp::s2s::parse_pin(pin).map_err(|e| in_file(format!("[[xmpp_s2s_peer]] at {}: pin: {e}", peer.address)))?;
            if peer.compress {
                // Compressed beside secrets inside TLS, text leaks by its size (CRIME).
                return Err(in_file(format!("[[xmpp_s2s_peer]] at {}: compress is for links declared trusted, not with a pinned certificate (inside TLS, compression lets whoever sees sizes read what it hides)", peer.address)));
            }
        }
    }
    // A connection is taken as the peer its address names: two may not share one.
    for (i, peer) in peers.iter().enumerate() {
        if let Some(ip) = peer.from.iter().find(|ip| peers[..i].iter().any(|other| other.from.iter().any(|o| o.to_canonical() == ip.to_canonical()))) {
            return Err(in_file(format!("[[xmpp_s2s_peer]]: {} is the address of two peers", ip.to_canonical())));
        }
        // A stanza for a domain goes to the one peer that names it.
        if let Some(domain) = peer.domains.iter().find(|d| peers[..i].iter().any(|other| other.domains.iter().any(|o| o.eq_ignore_ascii_case(d)))) {
            return Err(in_file(format!("[[xmpp_s2s_peer]]: {domain} is a domain of two peers")));
        }
    }
    Ok(File { flags: flags_from(table).map_err(in_file)?, sockjs, mounts, accounts, routes, peers })
}

/// The settings of `table`, each key a flag's name in snake_case, parsed by
/// the flag's own parser (the environment plays no part here).
fn flags_from(table: Table) -> Result<Args, String> {
    let command = Serve::command().mut_args(|arg| arg.env(None::<&str>));
    let mut argv = vec!["switchboard".to_owned()];
    for (key, value) in table {
        let long = key.replace('_', "-");
        if long == "config" || !command.get_arguments().any(|arg| arg.get_long() == Some(long.as_str())) {
            return Err(format!("unknown setting {key:?}"));
        }
        let value = match value {
            Value::String(text) => text,
            Value::Integer(n) => n.to_string(),
            Value::Boolean(b) => b.to_string(),
            Value::Float(x) => x.to_string(),
            _ => return Err(format!("{key} takes one value, a string, number or boolean")),
        };
        argv.push(format!("--{long}={value}"));
    }
    let matches = command.try_get_matches_from(argv).map_err(|e| {
        let text = e.to_string();
        text.lines().next().unwrap_or_default().trim_start_matches("error: ").to_owned()
    })?;
    Serve::from_arg_matches(&matches).map(|serve| serve.args).map_err(|e| e.to_string())
}

/// The names, as the file writes them, of the settings `T` declares.
fn setting_names<T: clap::Args>() -> Vec<String> {
    T::augment_args(clap::Command::new("names"))
        .get_arguments()
        .filter_map(|arg| arg.get_long())
        .map(|long| long.replace('-', "_"))
        .collect()
}

/// One `[[mount]]`: its app and prefix, its SockJS options over
/// `[sockjs]`'s, and its own limits over `limits`.
fn mount(mut table: Table, sockjs: &Table, limits: MountLimits) -> Result<Mount, String> {
    let app: MountKind = table
        .remove("app")
        .ok_or("each [[mount]] needs an app, such as app = \"echo\"")?
        .try_into()
        .map_err(|e| format!("[[mount]] app: {e}"))?;
    let prefix = match table.remove("prefix") {
        None => format!("/{}", app.name()),
        Some(Value::String(prefix)) => format!("/{}", prefix.trim_matches('/')),
        Some(other) => return Err(format!("[[mount]] prefix must be a string, not {other}")),
    };
    let names = setting_names::<LimitFlags>();
    let own: Table = names.iter().filter_map(|name| table.remove_entry(name)).collect();
    let own = flags_from(own)?.limits;
    let mut options = sockjs.clone();
    options.extend(table);
    Ok(Mount { prefix, app, sockjs: sockjs_options(options)?, limits: own.over(limits) })
}

/// SockJS options from a table of them (`[sockjs]`, with a mount's own over
/// it), each one not given at its default.
fn sockjs_options(table: Table) -> Result<SockjsOptions, String> {
    Value::Table(table).try_into().map_err(|e: toml::de::Error| e.to_string())
}

/// The table of flags in docs/configuration.md, generated from the flags' definitions.
pub fn markdown_table() -> String {
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

    fn resolve_file(text: &str, args: Args) -> Result<Config, Error> {
        let path = write_toml(text);
        let config = Config::resolve(&Args { config: Some(path.clone()), ..args });
        std::fs::remove_file(path).ok();
        config
    }

    #[test]
    fn defaults_apply_when_nothing_is_set() {
        let config = Config::resolve(&Args::default()).unwrap();
        assert_eq!(config, Config::default());
        assert_eq!(config.xmpp.listen, Listen::At("127.0.0.1:5222".parse().unwrap()));
        let prefixes: Vec<_> = config.mounts.iter().map(|m| m.prefix.as_str()).collect();
        assert_eq!(prefixes, ["/echo", "/broadcast", "/chat", "/count", "/xmpp"]);
    }

    #[test]
    fn flags_win_over_the_file_and_the_file_over_defaults() {
        let text = r#"
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
"#;
        let args = Args { server: ServerFlags { listen: Some("127.0.0.1:1234".parse().unwrap()), ..ServerFlags::default() }, ..Args::default() };
        let config = resolve_file(text, args).unwrap();
        assert_eq!(config.server.listen.port(), 1234);
        assert_eq!(config.server.queue_limit, 2048);
        assert_eq!(config.server.shutdown_grace, Duration::from_secs(2));
        assert_eq!(config.server.max_message_size, 65536);
        assert_eq!(config.mounts.len(), 2);
        let echo = config.mount("/echo").unwrap();
        assert_eq!(echo.sockjs.response_limit, 4096);
        assert_eq!(echo.sockjs.heartbeat, Duration::from_secs(10));
        assert!(echo.sockjs.websocket);
        let disabled = config.mount("/disabled_websocket_echo").unwrap();
        assert!(!disabled.sockjs.websocket);
        assert_eq!(disabled.sockjs.response_limit, 128 * 1024);
    }

    /// The file's keys are the flags' names, read by the flags' parsers.
    /// What reading `text` as the configuration file is refused with.
    fn file_error(text: &str) -> String {
        resolve_file(text, Args::default()).unwrap_err().to_string()
    }

    #[test]
    fn the_file_speaks_as_the_flags_do() {
        let text = "xmpp_resume_timeout = \"1m 30s\"\nxmpp_listen = \"off\"\nbosh_max_sessions = 7\nxmpp_anonymous = false\n";
        let config = resolve_file(text, Args::default()).unwrap();
        assert_eq!(config.xmpp.resume_timeout, Duration::from_secs(90));
        assert_eq!((config.xmpp.listen, config.bosh.max_sessions, config.xmpp.anonymous), (Listen::Off, 7, false));
        let err = file_error("xmpp_listen = \"nowhere\"\n");
        assert!(err.contains("nowhere") && err.contains("xmpp-listen"), "{err}");
        let err = file_error("config = \"other.toml\"\n");
        assert!(err.contains("unknown setting \"config\""), "{err}");
        let err = file_error("[sockjs]\nmax_sessions = 3\n");
        assert!(err.contains("not in [sockjs]"), "{err}");
    }

    #[test]
    fn a_mounts_own_limits_win_over_every_other() {
        let text = "max_message_rate = 7\nmax_sessions = 5\n[[mount]]\napp = \"chat\"\nmax_sessions = 3\n[[mount]]\napp = \"echo\"\n";
        let args = Args { limits: LimitFlags { max_sessions: Some(4), ..LimitFlags::default() }, ..Args::default() };
        let config = resolve_file(text, args).unwrap();
        let chat = config.mount("/chat").unwrap().limits;
        let echo = config.mount("/echo").unwrap().limits;
        assert_eq!((chat.max_message_rate, chat.max_sessions), (7, 3));
        assert_eq!((echo.max_message_rate, echo.max_sessions), (7, 4));
    }

    #[test]
    fn peers_configured_in_advance_come_from_tables() {
        let text = "xmpp_s2s_zero_listen = \"127.0.0.2:5271\"\n[[xmpp_s2s_peer]]\ndomains = [\"B.test\", \"conference.b.test\"]\naddress = \"127.0.0.3:5271\"\nfrom = [\"127.0.0.3\"]\ncompress = true\n";
        let config = resolve_file(text, Args::default()).unwrap();
        assert_eq!(config.federation.zero_listen, Listen::At("127.0.0.2:5271".parse().unwrap()));
        let peer = xmpp::s2s::ZeroPeer { domains: vec!["b.test".into(), "conference.b.test".into()], address: "127.0.0.3:5271".parse().unwrap(), from: vec!["127.0.0.3".parse().unwrap()], compress: true, pin: None };
        assert_eq!(config.zero_peers, [peer]);
        // A pin as openssl prints it, or without colons; never with compression.
        let pinned = |pin: &str, extra: &str| format!("[[xmpp_s2s_peer]]\ndomains = [\"b.test\"]\naddress = \"127.0.0.3:5271\"\npin = \"{pin}\"\n{extra}");
        let hex = "0a".repeat(32);
        let config = resolve_file(&pinned(&["0A"; 32].join(":"), ""), Args::default()).unwrap();
        assert_eq!(config.zero_peers[0].pin, Some([10; 32]));
        assert_eq!(resolve_file(&pinned(&hex, ""), Args::default()).unwrap().zero_peers[0].pin, Some([10; 32]));
        assert!(file_error(&pinned(&hex[2..], "")).contains("not a SHA-256 fingerprint"), "{}", file_error(&pinned(&hex[2..], "")));
        assert!(file_error(&pinned(&hex, "compress = true\n")).contains("not with a pinned certificate"));
        let error = file_error("[[xmpp_s2s_peer]]\ndomains = []\naddress = \"127.0.0.3:5271\"\n");
        assert!(error.contains("names no domains"), "{error}");
        let error = file_error("[[xmpp_s2s_peer]]\ndomains = [\"b.test\"]\naddress = \"127.0.0.3:5271\"\ntrust = \"none\"\n");
        assert!(error.contains("trust"), "{error}");
        let twice = "[[xmpp_s2s_peer]]\ndomains = [\"b.test\"]\naddress = \"127.0.0.3:5271\"\nfrom = [\"127.0.0.9\"]\n[[xmpp_s2s_peer]]\ndomains = [\"c.test\"]\naddress = \"127.0.0.4:5271\"\nfrom = [\"::ffff:127.0.0.9\"]\n";
        assert!(file_error(twice).contains("127.0.0.9 is the address of two peers"), "{}", file_error(twice));
        let shared = "[[xmpp_s2s_peer]]\ndomains = [\"b.test\"]\naddress = \"127.0.0.3:5271\"\n[[xmpp_s2s_peer]]\ndomains = [\"c.test\", \"B.test\"]\naddress = \"127.0.0.4:5271\"\n";
        assert!(file_error(shared).contains("B.test is a domain of two peers"), "{}", file_error(shared));
    }

    #[test]
    fn routes_to_other_servers_come_from_tables_and_the_flag() {
        let text = "xmpp_s2s_routes = \"c.test=127.0.0.4:5269,d.test=tls:127.0.0.5:5270\"\n[[xmpp_s2s_route]]\ndomain = \"B.test\"\naddress = \"127.0.0.3:5269\"\n[[xmpp_s2s_route]]\ndomain = \"e.test\"\naddress = \"127.0.0.6:5270\"\ntls = true\n";
        let config = resolve_file(text, Args::default()).unwrap();
        let routes: Vec<(String, String)> = config.federation.routes.0.iter().map(|(d, a)| (d.clone(), a.to_string())).collect();
        let expected = [("b.test", "127.0.0.3:5269"), ("e.test", "tls:127.0.0.6:5270"), ("c.test", "127.0.0.4:5269"), ("d.test", "tls:127.0.0.5:5270")];
        assert_eq!(routes, expected.map(|(d, a)| (d.to_owned(), a.to_owned())));
        assert!("b.test=tls:nowhere".parse::<Routes>().unwrap_err().contains("tls:127.0.0.3:5270"));
        let err = file_error("[[xmpp_s2s_route]]\ndomain = \"b.test\"\naddress = \"nowhere\"\n");
        assert!(err.contains("xmpp_s2s_route"), "{err}");
    }

    #[test]
    fn xmpp_takes_the_xmpp_mounts_rates_or_the_top_level_ones() {
        let config = resolve_file("max_message_rate = 7\n[[mount]]\napp = \"chat\"\n", Args::default()).unwrap();
        assert_eq!(config.xmpp_limits().max_message_rate, 7, "no xmpp mount: the top level's");
        let config = resolve_file("max_message_rate = 7\n[[mount]]\napp = \"xmpp\"\nmax_message_rate = 9\n", Args::default()).unwrap();
        assert_eq!(config.xmpp_limits().max_message_rate, 9, "the xmpp mount's own");
    }

    #[test]
    fn bad_files_name_the_problem() {
        let err = file_error("listen = 5\nunknown_knob = 1\n");
        assert!(err.contains("switchboard-config") && err.contains("unknown_knob"), "{err}");
        let err = file_error("[[mount]]\napp = \"echo\"\n[[mount]]\napp = \"echo\"\n");
        assert!(err.contains("used twice"), "{err}");
        let err = file_error("[[mount]]\napp = \"chess\"\n");
        assert!(err.contains("unknown app \"chess\""), "{err}");
        let err = file_error("[[mount]]\napp = \"echo\"\nheartbeet = \"1s\"\n");
        assert!(err.contains("heartbeet"), "{err}");
        let missing = Args { config: Some("/nonexistent/x.toml".into()), ..Args::default() };
        assert!(Config::resolve(&missing).unwrap_err().to_string().contains("cannot read"));
    }

    #[test]
    fn the_broker_is_a_nats_url_from_a_flag_or_the_file() {
        let config = resolve_file("broker = \"nats://127.0.0.1:4222\"\nbroker_ttl = \"5s\"\n", Args::default()).unwrap();
        assert_eq!((config.broker.url.as_deref(), config.broker.ttl), (Some("nats://127.0.0.1:4222"), Duration::from_secs(5)));
        let linked = resolve_file("broker = \"node://127.0.0.1:5270\"\n", Args::default()).unwrap();
        assert_eq!(linked.broker.url.as_deref(), Some("node://127.0.0.1:5270"));
        let host = resolve_file("broker_listen = \"127.0.0.1:5270\"\n", Args::default()).unwrap();
        assert_eq!(host.broker.listen.address(), Some(SocketAddr::from(([127, 0, 0, 1], 5270))));
        assert!(resolve_file("broker = \"node://127.0.0.1:5270\"\nbroker_listen = \"127.0.0.1:5270\"\n", Args::default()).unwrap_err().to_string().contains("not both"));
        assert!(resolve_file("broker = \"node://nowhere\"\n", Args::default()).is_err(), "a port is needed");
        let wrong = Args { broker: BrokerFlags { url: Some("redis://127.0.0.1:6379".into()), ..BrokerFlags::default() }, ..Args::default() };
        let err = Config::resolve(&wrong).unwrap_err().to_string();
        assert!(err.contains("must be a nats:// URL"), "{err}");
        let short = Args { broker: BrokerFlags { ttl: Some(Duration::from_millis(10)), ..BrokerFlags::default() }, ..Args::default() };
        assert!(Config::resolve(&short).unwrap_err().to_string().contains("broker_ttl"));
    }

    #[test]
    fn the_store_is_named_by_a_flag_or_the_file_and_postgres_needs_its_database() {
        let config = resolve_file("store = \"postgres\"\ndatabase = \"postgres://s@127.0.0.1/s\"\n", Args::default()).unwrap();
        assert_eq!(config.store.choice(), store::Choice::Postgres("postgres://s@127.0.0.1/s".into()));
        let memory = Args { store: StoreFlags { kind: Some(StoreKind::Memory), ..StoreFlags::default() }, ..Args::default() };
        assert_eq!(Config::resolve(&memory).unwrap().store.choice(), store::Choice::Memory);
        assert_eq!(Config::resolve(&Args::default()).unwrap().store.choice(), store::Choice::Sqlite(PathBuf::from("data")));
        assert_eq!(Config::resolve(&Args::default()).unwrap().store.sqlite_synchronous, store::Synchronous::Normal);
        assert_eq!(resolve_file("sqlite_synchronous = \"full\"\n", Args::default()).unwrap().store.sqlite_synchronous, store::Synchronous::Full);
        let full = Args { store: StoreFlags { sqlite_synchronous: Some(store::Synchronous::Full), ..StoreFlags::default() }, ..Args::default() };
        assert_eq!(Config::resolve(&full).unwrap().store.sqlite_synchronous, store::Synchronous::Full);
        for (text, expected) in [
            ("store = \"postgres\"\n", "needs --database"),
            ("store = \"postgres\"\ndatabase = \"mysql://x\"\n", "postgres:// URL"),
            ("database = \"postgres://x\"\n", "is for --store postgres"),
            ("store = \"redis\"\n", "sqlite, postgres or memory"),
            ("sqlite_synchronous = \"off\"\n", "normal or full"),
        ] {
            let err = resolve_file(text, Args::default()).unwrap_err().to_string();
            assert!(err.contains(expected), "{text}: {err}");
        }
    }

    /// Every flag whose help states a default: giving that value makes the
    /// same configuration as giving nothing, so the stated default is the
    /// real one.
    #[test]
    fn every_flag_documents_the_real_default() {
        use clap::Parser;
        let unset = Config::resolve(&Args::default()).unwrap();
        let mut checked = Vec::new();
        for arg in Serve::command().get_arguments() {
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
            let cli = Serve::try_parse_from(["switchboard", flag.as_str(), stated]).unwrap_or_else(|e| panic!("{flag} {stated}: {e}"));
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
