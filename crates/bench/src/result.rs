//! The result file: what `--out` writes and `switchboard report` reads.
//!
//! One file holds an array of runs, each tagged with a target name, so several servers
//! can share a file. Every run carries its scenario's settings and results; the file
//! carries the exact command, versions, machine and start time. The JSON schema is
//! `crates/bench/schema.json`, checked by the tests.

use serde::{Deserialize, Serialize};

use crate::flags::{ApiSettings, BroadcastSettings, ChatSettings, CountdownSettings, FederatedSettings, IdleSettings, LoginSettings, LoginStyle, PingpongSettings, XmppSettings};
use crate::latency::LatencySummary;
pub use crate::linked::{BytesRow, DelayRow, FailedRow, LinkRecord, LinkSettings, LinkTables, SizeRow, ThroughputRow};
use crate::resources::Resources;
use crate::transport::TransportKind;

/// Identifies the file format; bumped when a field changes meaning.
pub const FORMAT: &str = "switchboard-bench/1";

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ResultFile {
    /// Always `switchboard-bench/1` for this layout.
    pub format: String,
    /// The exact command line, argv[0] included.
    pub command: Vec<String>,
    /// RFC 3339, UTC.
    pub started_at: String,
    pub versions: Versions,
    pub machine: Machine,
    pub runs: Vec<Run>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Versions {
    pub switchboard: String,
    pub format: String,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Machine {
    pub cpu_model: String,
    /// Logical CPUs the bench may use.
    pub cores: usize,
    pub os: String,
    pub kernel: Option<String>,
    pub memory_bytes: Option<u64>,
    /// The CPUs the bench may run on (`taskset`), as Linux lists them: "1", "0-3".
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bench_cpus: Option<String>,
}

/// One scenario against one target.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Run {
    /// `name` from `--target name=url`, else `default`.
    pub target_name: String,
    pub target: String,
    pub started_at: String,
    pub duration_s: f64,
    /// True when the run stopped early (Ctrl-C or an error): figures cover what was measured.
    pub partial: bool,
    /// Why the run stopped early, if it did because of an error.
    pub error: Option<String>,
    /// True when any measurement window of this run had the bench CPU-bound.
    pub bench_cpu_bound: bool,
    /// The sampled server process, if known.
    pub server_pid: Option<u32>,
    /// The CPUs that process may run on, as Linux lists them ("0", "1-3").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_cpus: Option<String>,
    /// The transports requested (`all` or a list) and those that ran.
    pub transports: Vec<TransportKind>,
    /// The emulated link every connection crossed (`--link`); absent without one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub link: Option<LinkRecord>,
    /// Who the XMPP clients were (domain, MUC service, SASL mechanism and account
    /// pattern, never the password); absent when no XMPP transport ran.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub xmpp: Option<XmppSettings>,
    #[serde(flatten)]
    pub outcome: Outcome,
}

/// Settings and figures of one scenario, tagged by `scenario`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "scenario", rename_all = "lowercase")]
pub enum Outcome {
    Pingpong { settings: PingpongSettings, results: Vec<PingpongResult> },
    Countdown { settings: CountdownSettings, results: Vec<CountdownResult> },
    Chat { settings: ChatSettings, results: Vec<ChatResult> },
    Broadcast { settings: BroadcastSettings, levels: Vec<BroadcastLevel>, summary: Vec<LevelSummary> },
    Selftest { settings: BroadcastSettings, levels: Vec<BroadcastLevel>, summary: Vec<LevelSummary> },
    /// `bench link`: four tables of rows (see `crate::linked`).
    Link {
        // Boxed: the settings are large beside the other scenarios'.
        settings: Box<LinkSettings>,
        #[serde(flatten)]
        tables: LinkTables,
    },
    /// The broadcast sweep through XMPP MUC rooms: broadcast's settings and figures.
    Muc { settings: BroadcastSettings, levels: Vec<BroadcastLevel>, summary: Vec<LevelSummary> },
    Idle { settings: IdleSettings, results: Vec<IdleResult> },
    /// `bench federated`: round trips between users of two federated servers.
    Federated { settings: FederatedSettings, results: Vec<FederatedResult> },
    /// `bench login`: XMPP logins by style.
    Login { settings: LoginSettings, results: Vec<LoginResult> },
    /// `bench api`: the server API's publishes (one result).
    Api { settings: ApiSettings, results: Vec<ApiResult> },
}

/// `bench api`'s figures.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ApiResult {
    pub publish: ApiPublish,
    /// Absent with `--members 0`.
    pub fanout: Option<ApiFanout>,
}

/// Publishes back to back on keep-alive connections, into a room with no member.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ApiPublish {
    pub connections: u32,
    /// Publishes answered 200.
    pub ok: u64,
    /// Publishes answered otherwise (the first status and body is in `first_refusal`).
    pub refused: u64,
    pub first_refusal: Option<String>,
    pub duration_s: f64,
    /// Publishes answered 200 a second.
    pub per_s: f64,
    /// From a request's send to its whole answer.
    pub latency: LatencySummary,
    pub resources: Resources,
}

/// A room of chat members over WebSocket: messages alternately published through the
/// API and sent by a member, each timed at every member from its scheduled send.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ApiFanout {
    pub members: u32,
    /// Messages sent each way.
    pub through_api: u64,
    pub from_member: u64,
    /// (through_api + from_member) × members.
    pub expected: u64,
    pub received: u64,
    pub api: LatencySummary,
    pub member: LatencySummary,
    /// The API's p50 less the member's.
    pub p50_extra_us: f64,
    pub resources: Resources,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PingpongResult {
    pub transport: TransportKind,
    /// TCP connect plus handshake (WebSocket upgrade, SockJS open frame); for XMPP, the
    /// whole login, until the session can send stanzas.
    pub connect_us: u64,
    /// XMPP only: how long each phase of the login took.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub login: Option<crate::transport::xmpp::Login>,
    /// Round trips completed.
    pub count: u64,
    /// From the first send to the last reply.
    pub total_us: u64,
    pub round_trip: LatencySummary,
    pub resources: Resources,
}

/// `bench federated`'s figures over one transport.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct FederatedResult {
    pub transport: TransportKind,
    /// The target's user's login, until its session could send stanzas.
    pub connect_us: u64,
    /// The other server's user's login.
    pub peer_connect_us: u64,
    /// Over IRC: from both clients registered until each saw the other in the channel.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub met_us: Option<u64>,
    /// The run's first round trip (the first size, no typing): from cold when neither
    /// server had a stream to the other yet, as after a fresh start.
    pub first_us: u64,
    /// The steady round trips, by payload size and typing delay (taken off).
    pub rows: Vec<FederatedRow>,
    /// Messages sent one way back to back, by payload size.
    #[serde(default)]
    pub throughput: Vec<FederatedThroughput>,
    pub resources: Resources,
}

/// `bench login`'s figures for one style.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct LoginResult {
    pub style: LoginStyle,
    /// From the TCP connect to the login's own first message coming back.
    pub first_message: LatencySummary,
    /// What the client waited for the server, TCP's handshake counted as one (of the last login).
    pub round_trips: u64,
    /// Bytes on the socket each way, TLS's included (of the last login).
    pub bytes_sent: u64,
    pub bytes_received: u64,
    pub resources: Resources,
}

/// `bench federated`'s throughput at one payload size.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct FederatedThroughput {
    /// Bytes of each message's body.
    pub size: usize,
    pub messages: u64,
    /// From the first send to the last message's arrival at the other user.
    pub duration_us: u64,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct FederatedRow {
    /// Bytes of each message's body.
    pub size: usize,
    /// How long the other user waited before answering; not in the round trips.
    pub typing_us: u64,
    pub round_trip: LatencySummary,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct IdleResult {
    pub transport: TransportKind,
    /// Connections asked for (--connections).
    pub connections: u32,
    /// Connections open (XMPP: logged in, initial presence handled) when the hold began.
    pub opened: u32,
    pub connect: LatencySummary,
    /// Connections the server ended during the hold, and the first one's reason.
    pub dropped: u32,
    pub first_drop: Option<String>,
    pub held_s: f64,
    /// The server's RSS before the first connection opened and at the end of the hold.
    pub server_rss_before_bytes: Option<u64>,
    pub server_rss_after_bytes: Option<u64>,
    /// (after − before) / connections.
    pub server_rss_per_connection_bytes: Option<f64>,
    pub resources: Resources,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CountdownResult {
    pub transport: TransportKind,
    pub connect_us: u64,
    /// The count started from; `iterations` reached 0 when equal to it.
    pub from: u64,
    pub iterations: u64,
    pub total_us: u64,
    pub per_iteration_us: f64,
    /// total_us of this transport / total_us of websocket in the same run (null without websocket).
    pub ratio_to_websocket: Option<f64>,
    pub resources: Resources,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ChatResult {
    pub transport: TransportKind,
    pub rooms: u32,
    pub users: u32,
    pub messages: u64,
    /// Clients that joined their room.
    pub joined: u64,
    pub connect: LatencySummary,
    /// Messages sent by all users.
    pub sent: u64,
    /// rooms × users² × messages: every message reaches every member, the sender included.
    pub expected: u64,
    pub received: u64,
    /// Sends that left more than 2 ms after their scheduled time.
    pub late_sends: u64,
    /// Latency from the scheduled send time (coordinated omission corrected).
    pub latency: LatencySummary,
    /// Latency from the actual send time (what a closed-loop tool would report).
    pub latency_uncorrected: LatencySummary,
    pub duration_s: f64,
    pub resources: Resources,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct BroadcastLevel {
    pub transport: TransportKind,
    pub connections: u32,
    pub connect: LatencySummary,
    pub steps: Vec<BroadcastStep>,
    /// Why the level ended early; null when it reached --max-rate.
    pub saturation: Option<Saturation>,
    /// Highest received msgs/s of a step whose mean round trip stayed under --good-mean.
    pub max_received_per_s_good_mean: Option<f64>,
    /// Highest received msgs/s of a step that lost nothing and was not saturated.
    pub max_sustainable_received_per_s: Option<f64>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct BroadcastStep {
    /// The total send rate this step aimed for.
    pub rate: f64,
    pub duration_s: f64,
    pub sent: u64,
    pub sent_per_s: f64,
    /// Deliveries counted by all clients for messages sent in this step.
    pub received: u64,
    pub received_per_s: f64,
    /// sent × connections.
    pub expected: u64,
    /// Own messages that never came back to their sender within --loss-timeout.
    pub lost: u64,
    /// expected − received: deliveries that did not arrive at some client.
    pub missing: u64,
    /// Sends that left more than 2 ms after their scheduled time.
    pub late_sends: u64,
    /// Round trip at the sender, from the scheduled send time (coordinated omission corrected).
    pub round_trip: LatencySummary,
    /// Round trip from the actual send time.
    pub round_trip_uncorrected: LatencySummary,
    pub resources: Resources,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Saturation {
    /// `timeout`, `dropped`, `mean`, `connect` (not every client could connect) or
    /// `join` (not every client could enter the MUC room).
    pub reason: String,
    /// The total send rate of the step where it happened.
    pub rate: f64,
    pub detail: String,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct LevelSummary {
    pub transport: TransportKind,
    pub connections: u32,
    pub max_sustainable_received_per_s: Option<f64>,
    pub max_received_per_s_good_mean: Option<f64>,
    pub saturated: bool,
    /// The level's figures were limited by the bench's own CPU.
    pub bench_cpu_bound: bool,
}

impl Machine {
    /// Reads the CPU model, core count, kernel and memory of this machine.
    pub fn this() -> Machine {
        let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
        let cpu_model = cpuinfo
            .lines()
            .find(|l| l.starts_with("model name") || l.starts_with("Model"))
            .and_then(|l| l.split_once(':'))
            .map(|(_, v)| v.trim().to_string())
            .unwrap_or_else(|| "unknown".to_string());
        let memory_bytes = std::fs::read_to_string("/proc/meminfo").ok().and_then(|m| {
            let line = m.lines().find(|l| l.starts_with("MemTotal:"))?.to_string();
            Some(line.split_whitespace().nth(1)?.parse::<u64>().ok()? * 1024)
        });
        // The machine's cores, not the bench's: under `taskset` the bench's
        // own parallelism is smaller than the machine it runs on.
        let online = cpuinfo.lines().filter(|l| l.starts_with("processor")).count();
        let cores = if online > 0 {
            online
        } else {
            std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1)
        };
        Machine {
            cpu_model,
            cores,
            os: std::env::consts::OS.to_string(),
            kernel: std::fs::read_to_string("/proc/sys/kernel/osrelease").ok().map(|s| s.trim().to_string()),
            memory_bytes,
            bench_cpus: crate::resources::cpus_allowed("self"),
        }
    }
}

/// A figure as the result file keeps it: rounded to `places` decimals, which is all the
/// precision the measurement has and keeps files free of float noise.
pub(crate) fn round(x: f64, places: i32) -> f64 {
    // 10^places is an exact integer for the few places used, so this is the usual
    // `(x * 10.0).round() / 10.0`.
    let scale = 10f64.powi(places);
    (x * scale).round() / scale
}

/// Now as RFC 3339 UTC with millisecond precision.
pub fn now_rfc3339() -> String {
    let since = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
    rfc3339(since.as_secs() as i64, since.subsec_millis())
}

fn rfc3339(secs: i64, millis: u32) -> String {
    let days = secs.div_euclid(86_400);
    let rem = secs.rem_euclid(86_400);
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{millis:03}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc3339_dates() {
        assert_eq!(rfc3339(0, 0), "1970-01-01T00:00:00.000Z");
        assert_eq!(rfc3339(951_782_400 + 3_723, 5), "2000-02-29T01:02:03.005Z");
        assert_eq!(rfc3339(1_767_225_599, 999), "2025-12-31T23:59:59.999Z");
    }
}
