//! Flags of `switchboard bench`, and the plain values they are parsed into.
//!
//! clap structs stay here; everything after `Plan::from_args` works on plain,
//! serialisable settings, which are also written verbatim into the result file.
//! Every default is stated once, on its flag.

use std::path::PathBuf;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::Error;
use crate::transport::TransportKind;

/// Flags of `switchboard bench`.
#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(subcommand)]
    pub scenario: ScenarioArgs,
}

/// The workloads.
#[derive(Debug, clap::Subcommand)]
pub enum ScenarioArgs {
    /// Sequential round trips to an echo app: connect time, total time, per-round-trip percentiles.
    Pingpong(PingpongArgs),
    /// Count down from N to 0 against a count app, one request or message at a time.
    Countdown(CountdownArgs),
    /// Chat rooms: every user sends M messages at a fixed interval; every receiver measures latency.
    Chat(ChatArgs),
    /// Broadcast sweep: per connection level, ramp the send rate until the server saturates.
    Broadcast(BroadcastArgs),
    /// Measure the bench's own maximum receive rate against `switchboard serve` (started as a
    /// child process on a free local port unless --target is given).
    Selftest(SelftestArgs),
    /// Constrained links against an echo app: round trip vs payload size and vs delay, link
    /// utilisation, bytes on the wire per set-up and per message (links started in-process).
    Link(crate::linked::LinkArgs),
    /// Broadcast sweep through an XMPP MUC room (XEP-0045): per level, every client joins one
    /// room, then the send rate ramps until the server saturates.
    Muc(MucArgs),
    /// Opens N connections (XMPP: logged-in sessions with initial presence), holds them idle,
    /// and reports the server's RSS per connection.
    Idle(IdleArgs),
    /// Round trips between a user of the target and a user of another XMPP server that it
    /// federates with (`--peer-domain`): the first of the run (streams between the servers set
    /// up on the way, when they had none) and the steady ones, by payload size and by how
    /// long the other user waits before answering.
    Federated(FederatedArgs),
    /// XMPP logins from cold, by style (standard: STARTTLS, SCRAM, restart, bind; sasl2: direct
    /// TLS, SASL2 with Bind 2; fast: resumed TLS, a FAST token, all in one flight): the time
    /// to a first message, the round trips and the bytes each way of each.
    Login(LoginArgs),
    /// The server API: publishes per second through `POST /api/publish` on keep-alive
    /// connections, then how much later a publish through the API reaches every member of a
    /// room than one from a member (target: the chat app, http://host:port/chat).
    Api(ApiArgs),
}

/// Flags every scenario takes.
#[derive(Debug, Clone, clap::Args)]
pub struct CommonArgs {
    /// App base URL (http://host:port/<app>), optionally `name=url`; a ws:// URL is used
    /// exactly as given. Repeatable: several servers, each with its own name, are measured
    /// one after another into one result file. Several URLs joined by commas are the nodes of
    /// one server: client i connects to node i mod N (see docs/nodes.md)
    /// [default: http://127.0.0.1:8080/<the scenario's app>]
    #[arg(long, value_name = "[NAME=]URL[,URL...]")]
    pub target: Vec<String>,
    /// Transports, comma-separated, or `all` for every one the target supports
    /// [default: websocket; countdown: http,websocket]
    #[arg(long, value_delimiter = ',', value_name = "LIST")]
    pub transport: Vec<String>,
    /// Write the result JSON (schema: crates/bench/schema.json) to this file.
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
    /// Pid of the server, for its CPU% and RSS (with every process below it); only with one --target [default: the
    /// process listening on each target's port, when the target is on this machine]
    #[arg(long, value_name = "PID")]
    pub server_pid: Option<u32>,
    /// Longest wait for a connection or an expected reply.
    #[arg(long, default_value = "10s", value_parser = parse_duration, value_name = "DURATION")]
    pub timeout: Duration,
    /// No progress bar on stderr.
    #[arg(long)]
    pub quiet: bool,
    /// Put an emulated link between the bench and the target, e.g.
    /// rate=2400bit,delay=500ms[,jitter=20ms,loss=0.5%,overhead=40,mss=1460,seed=0,shared]
    /// (as `switchboard link`; one link per connection unless `shared`) [default: none]
    #[arg(long, value_name = "LIST", allow_hyphen_values = true)]
    pub link: Option<crate::linked::LinkFlag>,
}

#[derive(Debug, clap::Args)]
pub struct PingpongArgs {
    #[command(flatten)]
    pub common: CommonArgs,
    /// Round trips per transport.
    #[arg(long, default_value_t = 100)]
    pub count: u64,
    #[command(flatten)]
    pub xmpp: XmppArgs,
}

#[derive(Debug, clap::Args)]
pub struct CountdownArgs {
    #[command(flatten)]
    pub common: CommonArgs,
    /// Count down from this number to 0.
    #[arg(long, default_value_t = 1000)]
    pub count: u64,
}

#[derive(Debug, clap::Args)]
pub struct ChatArgs {
    #[command(flatten)]
    pub common: CommonArgs,
    /// Room counts to run, comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "1,2,4")]
    pub rooms: Vec<u32>,
    /// Users per room to run, comma-separated; every rooms × users pair is one run.
    #[arg(long, value_delimiter = ',', default_value = "10,20,30,40,50,60")]
    pub users: Vec<u32>,
    /// Messages each user sends.
    #[arg(long, default_value_t = 500)]
    pub messages: u64,
    /// Time between two messages of one user (e.g. 10ms, 1s).
    #[arg(long, default_value = "10ms", value_parser = parse_duration)]
    pub interval: Duration,
    /// How long to wait for missing messages after the last send before counting them lost.
    #[arg(long, default_value = "5s", value_parser = parse_duration)]
    pub drain: Duration,
}

#[derive(Debug, Clone, clap::Args)]
pub struct RampArgs {
    /// Total send rate of the first step, messages per second over all clients.
    #[arg(long, default_value_t = 20.0)]
    pub start_rate: f64,
    /// Rate increase per step: `N` adds N msgs/s, `N%` multiplies by 1+N/100.
    #[arg(long, default_value = "50%", value_parser = parse_step)]
    pub step: RateStep,
    /// Length of one rate step (e.g. 3s; a bare number is seconds).
    #[arg(long, default_value = "3s", value_parser = parse_seconds)]
    pub step_seconds: Duration,
    /// Highest total send rate tried.
    #[arg(long, default_value_t = 100_000.0)]
    pub max_rate: f64,
    /// Saturation: a message not back at its sender within this time is lost.
    #[arg(long, default_value = "5s", value_parser = parse_duration)]
    pub loss_timeout: Duration,
    /// Saturation: more dropped connections than this ends the level.
    #[arg(long, default_value_t = 0)]
    pub max_dropped: u64,
    /// Saturation: a step whose mean round trip exceeds this ends the level.
    #[arg(long, default_value = "1500ms", value_parser = parse_duration)]
    pub max_mean: Duration,
    /// Report the highest received rate whose mean round trip stays under this.
    #[arg(long, default_value = "200ms", value_parser = parse_duration)]
    pub good_mean: Duration,
}

#[derive(Debug, clap::Args)]
pub struct BroadcastArgs {
    #[command(flatten)]
    pub common: CommonArgs,
    /// Connection levels, comma-separated; all clients connect before a level's ramp starts.
    #[arg(long, value_delimiter = ',', default_value = "25,50,100,200,500,1000,2000")]
    pub levels: Vec<u32>,
    #[command(flatten)]
    pub ramp: RampArgs,
}

#[derive(Debug, clap::Args)]
pub struct MucArgs {
    #[command(flatten)]
    pub common: CommonArgs,
    /// Occupants per room, comma-separated; each level joins a fresh room before its ramp.
    #[arg(long, value_delimiter = ',', default_value = "25,50,100,200,500,1000")]
    pub levels: Vec<u32>,
    #[command(flatten)]
    pub ramp: RampArgs,
    #[command(flatten)]
    pub xmpp: XmppArgs,
}

#[derive(Debug, clap::Args)]
pub struct FederatedArgs {
    #[command(flatten)]
    pub common: CommonArgs,
    #[command(flatten)]
    pub xmpp: XmppArgs,
    /// The domain of the other server, whose user answers each message (e.g. b.test);
    /// not with --peer-irc.
    #[arg(long, value_name = "DOMAIN", required_unless_present = "peer_irc", conflicts_with = "peer_irc")]
    pub peer_domain: Option<String>,
    /// Where the other server takes XMPP clients (xmpp-tcp) [default: the target's host, port 5222]
    #[arg(long, value_name = "HOST:PORT")]
    pub peer_xmpp: Option<String>,
    /// The account of the other server's user, who logs in with --xmpp-password
    /// [default: --xmpp-user, with {i} as 0]
    #[arg(long, value_name = "NAME")]
    pub peer_user: Option<String>,
    /// Over IRC instead (`--transport irc`, the target `irc://HOST:PORT`): where the other
    /// server of the same IRC network takes clients. A client on each server joins one
    /// channel, each waits until it sees the other there (the servers are linked), and
    /// their messages are the channel's.
    #[arg(long, value_name = "HOST:PORT")]
    pub peer_irc: Option<String>,
    /// Payload sizes in bytes, comma-separated: each message's body is that many random
    /// letters and digits, which no compression shrinks much.
    #[arg(long, value_delimiter = ',', default_value = "2,100,200,500", value_name = "LIST")]
    pub sizes: Vec<usize>,
    /// How long the other user waits before answering ("typing"), comma-separated; each
    /// round trip is reported without the wait.
    #[arg(long, value_delimiter = ',', default_value = "0s", value_parser = parse_duration, value_name = "LIST")]
    pub typing: Vec<Duration>,
    /// Round trips per payload size and typing delay, after the run's first.
    #[arg(long, default_value_t = 5)]
    pub round_trips: u64,
    /// The emulated link the run's traffic crosses outside the bench, as a --link value
    /// (rate=2400bit,delay=500ms,overhead=40): `switchboard link` started by the run's
    /// script between the two servers (federated) or in front of the server (login).
    /// Recorded in the result file for reports, not made by the bench.
    #[arg(long, value_name = "LIST", allow_hyphen_values = true)]
    pub via_link: Option<crate::linked::LinkFlag>,
    /// Then throughput: for each of these payload sizes (comma-separated), messages sent one
    /// way back to back, about --throughput-bytes of bodies in all (at least 2 messages),
    /// timed from the first send to the last arrival [default: none]
    #[arg(long, value_delimiter = ',', value_name = "LIST")]
    pub throughput: Vec<usize>,
    /// Bytes of bodies each throughput size sends in all.
    #[arg(long, default_value_t = 2048, value_name = "BYTES")]
    pub throughput_bytes: usize,
}

#[derive(Debug, clap::Args)]
pub struct LoginArgs {
    #[command(flatten)]
    pub common: CommonArgs,
    #[command(flatten)]
    pub xmpp: XmppArgs,
    /// Login styles, comma-separated: standard, sasl2, fast.
    #[arg(long, value_delimiter = ',', default_value = "standard,sasl2,fast", value_name = "LIST")]
    pub styles: Vec<LoginStyle>,
    /// Timed logins per style.
    #[arg(long, default_value_t = 5)]
    pub logins: u64,
    /// The port on the target's host where the server takes XMPP clients with TLS from the
    /// first byte (XEP-0368; `switchboard serve --xmpp-tls-listen`).
    #[arg(long, default_value_t = 5223, value_name = "PORT")]
    pub xmpp_tls_port: u16,
    /// PEM file of the certificate (or its authority) the server's is checked against; the
    /// name checked is --xmpp-domain.
    #[arg(long, value_name = "FILE")]
    pub tls_trust: PathBuf,
    /// The emulated link the run's traffic crosses outside the bench, as a --link value
    /// (rate=2400bit,delay=500ms,overhead=40): `switchboard link` started by the run's
    /// script between the two servers (federated) or in front of the server (login).
    /// Recorded in the result file for reports, not made by the bench.
    #[arg(long, value_name = "LIST", allow_hyphen_values = true)]
    pub via_link: Option<crate::linked::LinkFlag>,
}

/// How an XMPP client logs in (`bench login`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum LoginStyle {
    Standard,
    Sasl2,
    Fast,
}

impl std::fmt::Display for LoginStyle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            LoginStyle::Standard => "standard",
            LoginStyle::Sasl2 => "sasl2",
            LoginStyle::Fast => "fast",
        })
    }
}

#[derive(Debug, clap::Args)]
pub struct IdleArgs {
    #[command(flatten)]
    pub common: CommonArgs,
    /// Connections (sessions) to open and hold, per transport.
    #[arg(long, default_value_t = 1000)]
    pub connections: u32,
    /// How long the connections are held idle once all are open; the server's RSS is read at
    /// the end of it (e.g. 2s, 10m; a bare number is seconds).
    #[arg(long, default_value = "2s", value_parser = parse_seconds)]
    pub hold: Duration,
    #[command(flatten)]
    pub xmpp: XmppArgs,
}

#[derive(Debug, clap::Args)]
pub struct ApiArgs {
    #[command(flatten)]
    pub common: CommonArgs,
    /// The server API's key, sent as X-API-Key (never written to the result file).
    #[arg(long, env = "SWITCHBOARD_API_KEY", hide_env_values = true)]
    pub key: String,
    /// The server API's base URL [default: the target's host and port, /api]
    #[arg(long, value_name = "URL")]
    pub api_url: Option<String>,
    /// Keep-alive connections that publish back to back in the throughput part.
    #[arg(long, default_value_t = 4)]
    pub connections: u32,
    /// Publishes in the throughput part, into a room with no member.
    #[arg(long, default_value_t = 100_000)]
    pub requests: u64,
    /// Members of the room of the fan-out part (chat clients over WebSocket); 0 skips it.
    #[arg(long, default_value_t = 1000)]
    pub members: u32,
    /// Messages in the fan-out part, one through the API, the next from a member, and so on.
    #[arg(long, default_value_t = 200)]
    pub messages: u64,
    /// Time between two messages of the fan-out part.
    #[arg(long, default_value = "20ms", value_parser = parse_duration)]
    pub interval: Duration,
}

/// Who the XMPP clients are and where they connect. The TCP port and the HTTP paths are on
/// the target's host: `--target http://HOST:PORT` is the server's HTTP side, and its path
/// (an app's, such as /echo) does not apply to XMPP.
#[derive(Debug, Clone, clap::Args)]
pub struct XmppArgs {
    /// The XMPP domain the clients log in to.
    #[arg(long, default_value = "localhost", value_name = "DOMAIN")]
    pub xmpp_domain: String,
    /// The MUC service rooms are on [default: conference.<--xmpp-domain>]
    #[arg(long, value_name = "DOMAIN")]
    pub xmpp_muc: Option<String>,
    /// Log in with SASL PLAIN as this account, `{i}` standing for the client's index from 0
    /// (`bench{i}`: bench0, bench1 …) [default: SASL ANONYMOUS]
    #[arg(long, value_name = "PATTERN")]
    pub xmpp_user: Option<String>,
    /// The password of every --xmpp-user account.
    #[arg(long, value_name = "PASSWORD")]
    pub xmpp_password: Option<String>,
    /// The XMPP client port (xmpp-tcp) on the target's host; with several nodes, one port for
    /// all or one per node, comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "5222", value_name = "PORT[,PORT...]")]
    pub xmpp_port: Vec<u16>,
    /// Path of XMPP over WebSocket (RFC 7395, subprotocol `xmpp`) on the target.
    #[arg(long, default_value = "/xmpp-websocket", value_name = "PATH")]
    pub xmpp_websocket_path: String,
    /// Path of the SockJS mount that carries XMPP (the xmpp-sockjs-* transports) on the target.
    #[arg(long, default_value = "/xmpp", value_name = "PATH")]
    pub xmpp_sockjs_path: String,
    /// Path of BOSH (XEP-0124/0206) on the target.
    #[arg(long, default_value = "/http-bind", value_name = "PATH")]
    pub bosh_path: String,
    /// Longest a BOSH request may be held by the server (`wait`, which the server may
    /// lower), e.g. 60s; a bare number is seconds.
    #[arg(long, default_value = "60s", value_parser = parse_seconds, value_name = "DURATION")]
    pub bosh_wait: Duration,
}

#[derive(Debug, clap::Args)]
pub struct SelftestArgs {
    #[command(flatten)]
    pub common: CommonArgs,
    /// Connections that receive every broadcast message.
    #[arg(long, default_value_t = 200)]
    pub connections: u32,
    #[command(flatten)]
    pub ramp: RampArgs,
}

/// How the send rate grows from one step to the next.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RateStep {
    /// Add this many msgs/s.
    Add(f64),
    /// Grow by this many percent.
    Percent(f64),
}

impl RateStep {
    pub fn next(self, rate: f64) -> f64 {
        match self {
            RateStep::Add(n) => rate + n,
            RateStep::Percent(p) => rate * (1.0 + p / 100.0),
        }
    }
}

fn parse_step(s: &str) -> Result<RateStep, String> {
    let bad = || format!("{s:?}: expected a number (msgs/s added) or a percentage like 50%");
    let step = match s.strip_suffix('%') {
        Some(p) => RateStep::Percent(p.trim().parse().map_err(|_| bad())?),
        None => RateStep::Add(s.trim().parse().map_err(|_| bad())?),
    };
    match step {
        RateStep::Add(n) | RateStep::Percent(n) if n > 0.0 && n.is_finite() => Ok(step),
        _ => Err(format!("{s:?}: the step must be positive")),
    }
}

/// `250ms`, `1.5s`, `1m 30s`, `800us`: humantime's syntax, as `serve`
/// and `link` read durations.
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    humantime::parse_duration(s.trim()).map_err(|e| format!("{s:?} is not a duration ({e}); try 10ms, 3s or 1m 30s"))
}

/// Like `parse_duration`, and a bare number is seconds, for the flags
/// counted in seconds (`--step-seconds 3`, `--hold`, `--bosh-wait`).
fn parse_seconds(s: &str) -> Result<Duration, String> {
    let s = s.trim();
    if s.parse::<f64>().is_ok() {
        return parse_duration(&format!("{s}s"));
    }
    parse_duration(s)
}

/// Which transports to run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TransportChoice {
    /// Every transport the target supports (probed).
    All,
    /// Exactly these, in this order.
    List(Vec<TransportKind>),
}

/// One `--target`: the name its runs are tagged with in the result file, and its URL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NamedTarget {
    pub name: String,
    pub url: String,
}

/// Plain values for one bench invocation.
#[derive(Debug, Clone)]
pub struct Plan {
    /// The servers to measure, one after another, in flag order (at least one, unless
    /// `spawn_server`).
    pub targets: Vec<NamedTarget>,
    pub transports: TransportChoice,
    pub out: Option<PathBuf>,
    pub server_pid: Option<u32>,
    pub timeout: Duration,
    pub progress: bool,
    /// selftest without --target: start `switchboard serve` as a child process.
    pub spawn_server: bool,
    /// `--link`: every connection to the target goes through this emulated link. Always
    /// none for `bench link`, whose settings hold `--link` as the base of the links it builds.
    pub link: Option<crate::linked::LinkFlag>,
    /// The XMPP flags, for the scenarios that take them.
    pub xmpp: Option<XmppPlan>,
    pub settings: Settings,
}

/// The XMPP flags as plain values.
#[derive(Debug, Clone, PartialEq)]
pub struct XmppPlan {
    pub settings: XmppSettings,
    /// The client port of each node (one for all, or one per node).
    pub ports: Vec<u16>,
    pub websocket_path: String,
    pub sockjs_path: String,
    pub bosh_path: String,
}

/// Who the bench's XMPP clients are; the result file records it with the run (never the
/// password).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct XmppSettings {
    pub domain: String,
    pub muc_service: String,
    pub auth: XmppAuth,
    /// The `wait` BOSH sessions ask for, in whole seconds.
    pub bosh_wait_s: u64,
}

/// How XMPP clients authenticate.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "mechanism", rename_all = "lowercase")]
pub enum XmppAuth {
    /// SASL ANONYMOUS: the server makes up each client's JID.
    Anonymous,
    /// SASL PLAIN as `user` with `{i}` replaced by the client's index.
    Plain {
        user: String,
        #[serde(skip)]
        password: String,
    },
}

impl XmppAuth {
    /// The account client `n` logs in as, if any.
    pub fn user(&self, n: u32) -> Option<String> {
        match self {
            XmppAuth::Anonymous => None,
            XmppAuth::Plain { user, .. } => Some(user.replace("{i}", &n.to_string())),
        }
    }
}

/// Per-scenario plain values; each is written into the result file as `settings`.
#[derive(Debug, Clone, PartialEq)]
pub enum Settings {
    Pingpong(PingpongSettings),
    Countdown(CountdownSettings),
    Chat(ChatSettings),
    Broadcast(BroadcastSettings),
    Link(crate::linked::LinkSettings),
    Muc(BroadcastSettings),
    Idle(IdleSettings),
    Federated(FederatedSettings),
    Login(LoginSettings),
    /// The API key rides beside the settings, outside the result file.
    Api(ApiSettings, String),
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ApiSettings {
    /// Where the API is, `…/api`.
    pub api_url: String,
    pub connections: u32,
    pub requests: u64,
    pub members: u32,
    pub messages: u64,
    pub interval_us: u64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PingpongSettings {
    pub count: u64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FederatedSettings {
    /// Empty over IRC.
    pub peer_domain: String,
    /// Where the other server takes clients, `host:port`.
    pub peer_xmpp: String,
    /// The account of the other server's user.
    pub peer_user: String,
    /// Over IRC: where the other server takes clients, `host:port` (then the XMPP
    /// fields are empty).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub peer_irc: Option<String>,
    pub sizes: Vec<usize>,
    pub typing_us: Vec<u64>,
    pub round_trips: u64,
    /// Throughput's payload sizes, and the body bytes each sends in all.
    #[serde(default)]
    pub throughput: Vec<usize>,
    #[serde(default)]
    pub throughput_bytes: usize,
    /// The link between the servers, as the script made it (`--via-link`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub via_link: Option<crate::linked::LinkRecord>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LoginSettings {
    pub styles: Vec<LoginStyle>,
    pub logins: u64,
    /// The client port (STARTTLS) and the direct TLS one, on the target's host.
    pub port: u16,
    pub tls_port: u16,
    pub trust: PathBuf,
    /// The link in front of the server, as the script made it (`--via-link`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub via_link: Option<crate::linked::LinkRecord>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct IdleSettings {
    pub connections: u32,
    pub hold_us: u64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CountdownSettings {
    pub count: u64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChatSettings {
    pub rooms: Vec<u32>,
    pub users: Vec<u32>,
    pub messages: u64,
    pub interval_us: u64,
    pub drain_us: u64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BroadcastSettings {
    pub levels: Vec<u32>,
    pub start_rate: f64,
    pub step: RateStep,
    pub step_us: u64,
    pub max_rate: f64,
    pub loss_timeout_us: u64,
    pub max_dropped: u64,
    pub max_mean_us: u64,
    pub good_mean_us: u64,
    /// True for `selftest`: the figure of interest is the bench's own receive rate.
    pub selftest: bool,
}

impl Plan {
    /// Turns parsed flags into plain values, checking what clap cannot.
    pub fn from_args(args: Args) -> Result<Plan, Error> {
        let mut spawn_server = false;
        let mut xmpp = None;
        let (common, app, settings, default_transports) = match args.scenario {
            ScenarioArgs::Pingpong(a) => {
                positive(a.count, "--count")?;
                xmpp = Some(xmpp_plan(a.xmpp)?);
                (a.common, "echo", Settings::Pingpong(PingpongSettings { count: a.count }), vec![TransportKind::Websocket])
            }
            ScenarioArgs::Countdown(a) => {
                positive(a.count, "--count")?;
                let t = vec![TransportKind::Http, TransportKind::Websocket];
                (a.common, "count", Settings::Countdown(CountdownSettings { count: a.count }), t)
            }
            ScenarioArgs::Chat(a) => {
                positive(a.messages, "--messages")?;
                if a.rooms.contains(&0) || a.users.contains(&0) || a.rooms.is_empty() || a.users.is_empty() {
                    return Err(Error::usage("--rooms and --users need positive numbers"));
                }
                let s = ChatSettings {
                    rooms: a.rooms,
                    users: a.users,
                    messages: a.messages,
                    interval_us: a.interval.as_micros() as u64,
                    drain_us: a.drain.as_micros() as u64,
                };
                (a.common, "chat", Settings::Chat(s), vec![TransportKind::Websocket])
            }
            ScenarioArgs::Broadcast(a) => {
                if a.levels.is_empty() || a.levels.contains(&0) {
                    return Err(Error::usage("--levels needs positive connection counts"));
                }
                let s = broadcast_settings(a.levels, &a.ramp, false)?;
                (a.common, "broadcast", Settings::Broadcast(s), vec![TransportKind::Websocket])
            }
            ScenarioArgs::Selftest(a) => {
                positive(a.connections as u64, "--connections")?;
                spawn_server = a.common.target.is_empty();
                let s = broadcast_settings(vec![a.connections], &a.ramp, true)?;
                (a.common, "broadcast", Settings::Broadcast(s), vec![TransportKind::Websocket])
            }
            ScenarioArgs::Link(a) => {
                let s = a.settings(a.common.link.as_ref())?;
                (a.common, "echo", Settings::Link(s), vec![TransportKind::Websocket])
            }
            ScenarioArgs::Muc(a) => {
                if a.levels.is_empty() || a.levels.contains(&0) {
                    return Err(Error::usage("--levels needs positive occupant counts"));
                }
                xmpp = Some(xmpp_plan(a.xmpp)?);
                let s = broadcast_settings(a.levels, &a.ramp, false)?;
                // An XMPP server's HTTP side, not an app: XMPP transports use only its host and port.
                (a.common, "", Settings::Muc(s), vec![TransportKind::XmppTcp])
            }
            ScenarioArgs::Idle(a) => {
                positive(a.connections as u64, "--connections")?;
                xmpp = Some(xmpp_plan(a.xmpp)?);
                let s = IdleSettings { connections: a.connections, hold_us: a.hold.as_micros() as u64 };
                (a.common, "echo", Settings::Idle(s), vec![TransportKind::Websocket])
            }
            ScenarioArgs::Federated(a) => {
                positive(a.round_trips, "--round-trips")?;
                if a.sizes.is_empty() || a.sizes.contains(&0) || a.typing.is_empty() || a.throughput.contains(&0) {
                    return Err(Error::usage("--sizes needs positive byte counts and --typing durations"));
                }
                let mut s = FederatedSettings {
                    peer_domain: String::new(),
                    peer_xmpp: String::new(),
                    peer_user: String::new(),
                    peer_irc: None,
                    sizes: a.sizes,
                    typing_us: a.typing.iter().map(|t| t.as_micros() as u64).collect(),
                    round_trips: a.round_trips,
                    throughput: a.throughput,
                    throughput_bytes: a.throughput_bytes,
                    via_link: a.via_link.map(|f| crate::linked::LinkRecord::new(&f.text, &f.config)),
                };
                let host_port = |address: &str| address.rsplit_once(':').is_some_and(|(host, port)| !host.is_empty() && port.parse::<u16>().is_ok_and(|p| p > 0));
                if let Some(peer_irc) = a.peer_irc {
                    if !host_port(&peer_irc) {
                        return Err(Error::usage("--peer-irc needs a host:port"));
                    }
                    if a.common.transport.iter().any(|t| t != "irc") {
                        return Err(Error::usage("--peer-irc goes with --transport irc"));
                    }
                    s.peer_irc = Some(peer_irc);
                    (a.common, "", Settings::Federated(s), vec![TransportKind::Irc])
                } else {
                    let plan = xmpp_plan(a.xmpp)?;
                    let XmppAuth::Plain { user, .. } = &plan.settings.auth else {
                        return Err(Error::usage("federated needs --xmpp-user and --xmpp-password: the other user answers a known account"));
                    };
                    s.peer_user = a.peer_user.unwrap_or_else(|| user.replace("{i}", "0"));
                    s.peer_xmpp = match a.peer_xmpp {
                        Some(address) => address,
                        None => {
                            let first = a.common.target.first().map_or("http://127.0.0.1:8080", String::as_str);
                            format!("{}:5222", crate::Target::parse(first)?.host())
                        }
                    };
                    s.peer_domain = a.peer_domain.unwrap_or_default();
                    if s.peer_domain.is_empty() || !host_port(&s.peer_xmpp) {
                        return Err(Error::usage("--peer-domain needs a domain and --peer-xmpp a host:port"));
                    }
                    xmpp = Some(plan);
                    (a.common, "", Settings::Federated(s), vec![TransportKind::XmppTcp])
                }
            }
            ScenarioArgs::Login(a) => {
                positive(a.logins, "--logins")?;
                if a.styles.is_empty() || a.xmpp_tls_port == 0 {
                    return Err(Error::usage("--styles needs at least one style and --xmpp-tls-port a port above 0"));
                }
                let plan = xmpp_plan(a.xmpp)?;
                if !matches!(plan.settings.auth, XmppAuth::Plain { .. }) {
                    return Err(Error::usage("login needs --xmpp-user and --xmpp-password"));
                }
                let via_link = a.via_link.map(|f| crate::linked::LinkRecord::new(&f.text, &f.config));
                let s = LoginSettings { styles: a.styles, logins: a.logins, port: plan.ports[0], tls_port: a.xmpp_tls_port, trust: a.tls_trust, via_link };
                xmpp = Some(plan);
                (a.common, "", Settings::Login(s), vec![TransportKind::XmppTcp])
            }
            ScenarioArgs::Api(a) => {
                positive(a.connections as u64, "--connections")?;
                positive(a.requests, "--requests")?;
                if a.members > 0 {
                    positive(a.messages, "--messages")?;
                }
                let api_url = match a.api_url {
                    Some(url) => url.trim_end_matches('/').to_owned(),
                    None => {
                        let first = a.common.target.first().map_or("http://127.0.0.1:8080", String::as_str);
                        let url = first.rsplit_once('=').filter(|(name, _)| !name.contains('/')).map_or(first, |(_, url)| url);
                        format!("http://{}/api", crate::Target::parse(url.split(',').next().unwrap_or(url))?.authority())
                    }
                };
                let s = ApiSettings {
                    api_url,
                    connections: a.connections,
                    requests: a.requests,
                    members: a.members,
                    messages: a.messages,
                    interval_us: a.interval.as_micros() as u64,
                };
                (a.common, "chat", Settings::Api(s, a.key), vec![TransportKind::Websocket])
            }
        };
        let mut raw_targets = common.target;
        if raw_targets.is_empty() {
            raw_targets.push(format!("http://127.0.0.1:8080/{app}").trim_end_matches('/').to_string());
        }
        let targets = named_targets(&raw_targets)?;
        if targets.len() > 1 && common.server_pid.is_some() {
            return Err(Error::usage(
                "--server-pid names one server; with several --target each server's pid is found from its port",
            ));
        }
        let mut transports = parse_transports(&common.transport, default_transports)?;
        let mut link = common.link;
        if let Settings::Link(_) = settings {
            // Already taken into the settings: `bench link` builds its own links.
            link = None;
            if transports == TransportChoice::All {
                transports = TransportChoice::List(crate::linked::ALL_TRANSPORTS.to_vec());
            }
        }
        Ok(Plan {
            targets,
            transports,
            out: common.out,
            server_pid: common.server_pid,
            timeout: common.timeout,
            progress: !common.quiet,
            spawn_server,
            link,
            xmpp,
            settings,
        })
    }
}

/// The XMPP flags as plain values, checking what clap cannot.
fn xmpp_plan(a: XmppArgs) -> Result<XmppPlan, Error> {
    let auth = match (a.xmpp_user, a.xmpp_password) {
        (None, None) => XmppAuth::Anonymous,
        (Some(user), Some(password)) if !user.is_empty() => XmppAuth::Plain { user, password },
        (Some(_), Some(_)) => return Err(Error::usage("--xmpp-user needs a name (e.g. bench{i})")),
        (Some(_), None) => return Err(Error::usage("--xmpp-user needs --xmpp-password")),
        (None, Some(_)) => return Err(Error::usage("--xmpp-password needs --xmpp-user (without both, SASL ANONYMOUS is used)")),
    };
    if a.xmpp_domain.is_empty() || a.xmpp_port.is_empty() || a.xmpp_port.contains(&0) {
        return Err(Error::usage("--xmpp-domain needs a domain and --xmpp-port a port above 0"));
    }
    let path = |flag: &str, p: String| {
        if p.starts_with('/') { Ok(p.trim_end_matches('/').to_string()) } else { Err(Error::usage(format!("{flag} {p:?} must start with /"))) }
    };
    Ok(XmppPlan {
        settings: XmppSettings {
            muc_service: a.xmpp_muc.unwrap_or_else(|| format!("conference.{}", a.xmpp_domain)),
            domain: a.xmpp_domain,
            auth,
            bosh_wait_s: a.bosh_wait.as_secs().max(1),
        },
        ports: a.xmpp_port,
        websocket_path: path("--xmpp-websocket-path", a.xmpp_websocket_path)?,
        sockjs_path: path("--xmpp-sockjs-path", a.xmpp_sockjs_path)?,
        bosh_path: path("--bosh-path", a.bosh_path)?,
    })
}

fn positive(n: u64, flag: &str) -> Result<(), Error> {
    if n == 0 { Err(Error::usage(format!("{flag} must be at least 1"))) } else { Ok(()) }
}

fn broadcast_settings(levels: Vec<u32>, r: &RampArgs, selftest: bool) -> Result<BroadcastSettings, Error> {
    if !(r.start_rate > 0.0 && r.start_rate.is_finite()) || r.max_rate < r.start_rate {
        return Err(Error::usage("--start-rate must be positive and not above --max-rate"));
    }
    if r.step_seconds.is_zero() {
        return Err(Error::usage("--step-seconds must be positive"));
    }
    Ok(BroadcastSettings {
        levels,
        start_rate: r.start_rate,
        step: r.step,
        step_us: r.step_seconds.as_micros() as u64,
        max_rate: r.max_rate,
        loss_timeout_us: r.loss_timeout.as_micros() as u64,
        max_dropped: r.max_dropped,
        max_mean_us: r.max_mean.as_micros() as u64,
        good_mean_us: r.good_mean.as_micros() as u64,
        selftest,
    })
}

/// The `--target` values as named targets; names must tell the servers apart.
fn named_targets(raw: &[String]) -> Result<Vec<NamedTarget>, Error> {
    let mut targets: Vec<NamedTarget> = Vec::with_capacity(raw.len());
    for r in raw {
        let (name, url) = split_name(r);
        if name.is_empty() {
            return Err(Error::usage(format!("--target {r:?}: the name before '=' is empty")));
        }
        if targets.iter().any(|t| t.name == name) {
            return Err(Error::usage(format!(
                "two --target values are named {name:?}; with several targets give each its own name (name=url)"
            )));
        }
        // A bad URL is a usage error before any server is measured.
        for node in url.split(',') {
            crate::Target::parse(node)?;
        }
        targets.push(NamedTarget { name, url });
    }
    Ok(targets)
}

/// `name=url` → (name, url); a bare URL is named `default`.
fn split_name(raw: &str) -> (String, String) {
    match raw.split_once('=') {
        Some((name, url)) if !name.contains("://") && !name.contains('/') => (name.to_string(), url.to_string()),
        _ => ("default".to_string(), raw.to_string()),
    }
}

fn parse_transports(names: &[String], default: Vec<TransportKind>) -> Result<TransportChoice, Error> {
    if names.is_empty() {
        return Ok(TransportChoice::List(default));
    }
    if names.iter().any(|n| n == "all") {
        return Ok(TransportChoice::All);
    }
    let mut kinds = Vec::new();
    for name in names {
        let kind = TransportKind::from_name(name.trim()).ok_or_else(|| {
            let known: Vec<&str> = TransportKind::ALL.iter().map(|k| k.name()).collect();
            Error::usage(format!("unknown transport {name:?}; known: {}, all", known.join(", ")))
        })?;
        if !kinds.contains(&kind) {
            kinds.push(kind);
        }
    }
    Ok(TransportChoice::List(kinds))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!(parse_duration("10ms"), Ok(Duration::from_millis(10)));
        assert_eq!(parse_duration("1s 500ms"), Ok(Duration::from_millis(1500)));
        assert_eq!(parse_duration("2m"), Ok(Duration::from_secs(120)));
        assert_eq!(parse_seconds("3"), Ok(Duration::from_secs(3)));
        assert_eq!(parse_seconds("0.5"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_seconds("300ms"), Ok(Duration::from_millis(300)));
        assert!(parse_seconds("-1").is_err() && parse_seconds("NaN").is_err());
        assert!(parse_duration("10").is_err(), "a bare number is a duration only where the flag says seconds");
        assert_eq!(parse_duration("1.5s"), Ok(Duration::from_millis(1500)));
        assert!(parse_duration("ten").is_err());
    }

    #[test]
    fn steps() {
        assert_eq!(parse_step("50%"), Ok(RateStep::Percent(50.0)));
        assert_eq!(parse_step("25"), Ok(RateStep::Add(25.0)));
        assert!(parse_step("-5").is_err());
        assert_eq!(RateStep::Percent(50.0).next(20.0), 30.0);
    }

    #[test]
    fn names_and_transports() {
        assert_eq!(split_name("ours=http://h/echo"), ("ours".into(), "http://h/echo".into()));
        assert_eq!(split_name("ws://h/x?a=b"), ("default".into(), "ws://h/x?a=b".into()));
        let two = named_targets(&["a=http://h/echo".into(), "b=http://g/echo".into()]).expect("distinct");
        assert_eq!(two.iter().map(|t| t.name.as_str()).collect::<Vec<_>>(), ["a", "b"]);
        assert!(named_targets(&["http://h/echo".into(), "http://g/echo".into()]).expect_err("both default").is_usage());
        assert!(named_targets(&["=http://h/echo".into()]).expect_err("empty name").is_usage());
        let nodes = named_targets(&["two=http://h:1/chat,http://h:2/chat".into()]).expect("two nodes");
        assert_eq!((nodes[0].name.as_str(), nodes[0].url.as_str()), ("two", "http://h:1/chat,http://h:2/chat"));
        assert!(named_targets(&["two=http://h:1/chat,h:2".into()]).is_err(), "every node is a URL");
        assert_eq!(
            parse_transports(&["xhr-polling".into(), "websocket".into()], vec![]).expect("known"),
            TransportChoice::List(vec![TransportKind::XhrPolling, TransportKind::Websocket])
        );
        assert_eq!(parse_transports(&["all".into()], vec![]).expect("all"), TransportChoice::All);
        assert!(parse_transports(&["carrier-pigeon".into()], vec![]).expect_err("unknown").is_usage());
    }
}
