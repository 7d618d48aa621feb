//! Prometheus metrics. A connection takes its labelled counters once when it
//! opens and bumps them directly, so the hot path never looks up a label set.
//! The counters of one label set are made once and shared by every
//! connection with those labels: a connection holds one pointer to them.

use std::collections::HashMap;
use std::sync::Arc;

use parking_lot::Mutex;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;

/// The labels of every per-connection metric.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct Labels {
    app: String,
    transport: String,
}

/// Why a new connection was shed.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ShedLabels {
    reason: &'static str,
}

/// Why a client's request was refused by a limit.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RefusedLabels {
    app: String,
    reason: &'static str,
}

/// What the store failed to do, by what it was asked for.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct StoreLabels {
    what: &'static str,
}

/// Which way a stream between servers goes, from this server's side.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct DirectionLabels {
    direction: &'static str,
}

/// A stream between servers: who opened it, how far it has come, and how
/// it was authenticated.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct StreamLabels {
    direction: &'static str,
    state: &'static str,
    auth: &'static str,
}

/// Why a stream between servers failed or was refused.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ReasonLabels {
    reason: &'static str,
}

/// All of the server's metrics.
#[derive(Debug)]
pub struct Metrics {
    registry: Registry,
    connections: Family<Labels, Gauge>,
    connections_total: Family<Labels, Counter>,
    messages_in: Family<Labels, Counter>,
    messages_out: Family<Labels, Counter>,
    batches_out: Family<Labels, Counter>,
    shared_writes: Family<Labels, Counter>,
    bytes_in: Family<Labels, Counter>,
    bytes_out: Family<Labels, Counter>,
    slow_consumers: Family<Labels, Counter>,
    shed: Family<ShedLabels, Counter>,
    refused: Family<RefusedLabels, Counter>,
    store_failures: Family<StoreLabels, Counter>,
    broker_connected: Gauge,
    broker_reconnects: Counter,
    xmpp_resumed: Counter,
    xmpp_parked: Gauge,
    xmpp_requests_waiting: Gauge,
    archive_queue: Gauge,
    archive_lag: Gauge<f64, std::sync::atomic::AtomicU64>,
    s2s_streams: Family<StreamLabels, Gauge>,
    s2s_stanzas: Family<DirectionLabels, Counter>,
    s2s_bytes: Family<DirectionLabels, Counter>,
    s2s_failures: Family<ReasonLabels, Counter>,
    s2s_waiting: Gauge,
    s2s_guests: Gauge,
    /// The counters of each label set, as connections share them.
    shared: Mutex<HashMap<Labels, Arc<Counters>>>,
}

impl Default for Metrics {
    fn default() -> Metrics {
        Metrics::new(false)
    }
}

impl Metrics {
    /// The metrics of a server; `broker` adds those of its connection to
    /// the other nodes.
    pub fn new(broker: bool) -> Metrics {
        let mut registry = Registry::with_prefix("switchboard");
        let m = Metrics {
            connections: Family::default(),
            connections_total: Family::default(),
            messages_in: Family::default(),
            messages_out: Family::default(),
            batches_out: Family::default(),
            shared_writes: Family::default(),
            bytes_in: Family::default(),
            bytes_out: Family::default(),
            slow_consumers: Family::default(),
            shed: Family::default(),
            refused: Family::default(),
            store_failures: Family::default(),
            broker_connected: Gauge::default(),
            broker_reconnects: Counter::default(),
            xmpp_resumed: Counter::default(),
            xmpp_parked: Gauge::default(),
            xmpp_requests_waiting: Gauge::default(),
            archive_queue: Gauge::default(),
            archive_lag: Gauge::default(),
            s2s_streams: Family::default(),
            s2s_stanzas: Family::default(),
            s2s_bytes: Family::default(),
            s2s_failures: Family::default(),
            s2s_waiting: Gauge::default(),
            s2s_guests: Gauge::default(),
            shared: Mutex::default(),
            registry: Registry::default(),
        };
        if broker {
            registry.register("broker_connected", "1 while the connection to the broker (NATS) is up, else 0", m.broker_connected.clone());
            registry.register("broker_reconnects", "Times the connection to the broker came back after it was lost", m.broker_reconnects.clone());
        }
        registry.register("connections", "Open client connections", m.connections.clone());
        registry.register("connections_accepted", "Client connections accepted", m.connections_total.clone());
        registry.register("messages_in", "Application messages received from clients", m.messages_in.clone());
        registry.register("messages_out", "Application messages sent to clients", m.messages_out.clone());
        registry.register(
            "batches_out",
            "Writes of application messages to clients, each of one or more (messages_out / batches_out is the mean; --write-delay raises it)",
            m.batches_out.clone(),
        );
        registry.register(
            "shared_writes",
            "Application messages the shared writer wrote to idle clients' sockets, waking no client's task (--shared-writer); counted in messages_out and batches_out too",
            m.shared_writes.clone(),
        );
        registry.register("bytes_in", "Application payload bytes received from clients", m.bytes_in.clone());
        registry.register("bytes_out", "Application payload bytes sent to clients", m.bytes_out.clone());
        registry.register(
            "slow_consumer_disconnects",
            "Clients closed because their outbound queue passed its bound",
            m.slow_consumers.clone(),
        );
        registry.register(
            "connections_shed",
            "New connections answered 503 and closed: at the connection limit or out of file descriptors",
            m.shed.clone(),
        );
        registry.register(
            "refused",
            "Requests refused, and connections closed, by a limit (sessions per mount, new sessions per address, bad or missing token, timeouts, ...)",
            m.refused.clone(),
        );
        registry.register(
            "store_failures",
            "Operations the store (--store) failed, by what they were for (accounts, rosters, offline, rooms); each failed the request that needed it",
            m.store_failures.clone(),
        );
        registry.register(
            "xmpp_resumptions",
            "XMPP sessions resumed on a new connection (XEP-0198)",
            m.xmpp_resumed.clone(),
        );
        registry.register(
            "xmpp_parked_sessions",
            "XMPP sessions whose connection broke, waiting to be resumed (at most --xmpp-max-parked)",
            m.xmpp_parked.clone(),
        );
        registry.register(
            "xmpp_subscription_requests_waiting",
            "Presence subscription requests kept until their users answer (at most --xmpp-list-limit per user)",
            m.xmpp_requests_waiting.clone(),
        );
        registry.register(
            "archive_queue",
            "Batches of archive entries (XMPP's XEP-0313, rooms') waiting for the archive's writer (at most --archive-queue)",
            m.archive_queue.clone(),
        );
        registry.register(
            "archive_lag_seconds",
            "How long the oldest entries of the archive writer's last batch waited before they were kept",
            m.archive_lag.clone(),
        );
        registry.register(
            "s2s_streams",
            "Open XMPP streams between servers (federation), by direction (in: another server opened it; out: this one), state (negotiating, authenticated) and authentication (external, dialback; none while negotiating)",
            m.s2s_streams.clone(),
        );
        registry.register("s2s_stanzas", "Stanzas carried between servers, by direction", m.s2s_stanzas.clone());
        registry.register("s2s_bytes", "Bytes of stanzas carried between servers, by direction", m.s2s_bytes.clone());
        registry.register(
            "s2s_failures",
            "Streams between servers that failed or were refused, by reason (connect, timeout, certificate, negotiation, max_streams, or the stream error sent)",
            m.s2s_failures.clone(),
        );
        registry.register("s2s_waiting", "Stanzas waiting for a stream to their domain (at most --xmpp-s2s-queue bytes per domain)", m.s2s_waiting.clone());
        registry.register("s2s_guests", "Users of other servers in this server's MUC rooms (at most --xmpp-s2s-max-guests)", m.s2s_guests.clone());
        Metrics { registry, ..m }
    }
}

impl Metrics {
    /// Counts a new client (in `switchboard_connections`: one client is one
    /// connection there, whatever carries it) and hands it its counters.
    pub fn client(&self, app: &str, transport: &str) -> ClientMetrics {
        let labels = Labels { app: app.to_owned(), transport: transport.to_owned() };
        let counters = self.shared.lock().entry(labels).or_insert_with_key(|labels| {
            Arc::new(Counters {
                connections: self.connections.get_or_create(labels).clone(),
                accepted: self.connections_total.get_or_create(labels).clone(),
                messages_in: self.messages_in.get_or_create(labels).clone(),
                messages_out: self.messages_out.get_or_create(labels).clone(),
                batches_out: self.batches_out.get_or_create(labels).clone(),
                shared_writes: self.shared_writes.get_or_create(labels).clone(),
                bytes_in: self.bytes_in.get_or_create(labels).clone(),
                bytes_out: self.bytes_out.get_or_create(labels).clone(),
                slow_consumers: self.slow_consumers.get_or_create(labels).clone(),
            })
        }).clone();
        counters.connections.inc();
        counters.accepted.inc();
        ClientMetrics(counters)
    }

    /// Clients connected now, by app (or protocol: `xmpp`, `irc`) and by
    /// transport, as `switchboard_connections` counts them; none of zero.
    pub fn clients(&self) -> Vec<(String, String, i64)> {
        let shared = self.shared.lock();
        let counts = shared.iter().map(|(l, c)| (l.app.clone(), l.transport.clone(), c.connections.get()));
        counts.filter(|(_, _, n)| *n > 0).collect()
    }

    /// Counts a new connection shed for `reason`.
    pub fn shed(&self, reason: &'static str) {
        self.shed.get_or_create(&ShedLabels { reason }).inc();
    }

    /// Counts a request to `app` refused for `reason`.
    pub fn refused(&self, app: &str, reason: &'static str) {
        self.refused.get_or_create(&RefusedLabels { app: app.to_owned(), reason }).inc();
    }

    /// Counts an operation the store failed, for `what`.
    pub fn store_failed(&self, what: &'static str) {
        self.store_failures.get_or_create(&StoreLabels { what }).inc();
    }

    /// Counts an XMPP session resumed (XEP-0198).
    pub fn xmpp_resumed(&self) {
        self.xmpp_resumed.inc();
    }

    /// Takes the broker connection's state, before an encode.
    pub fn broker(&self, up: bool, reconnects: u64) {
        self.broker_connected.set(i64::from(up));
        self.broker_reconnects.inc_by(reconnects.saturating_sub(self.broker_reconnects.get()));
    }

    /// Takes what XMPP holds, before an encode: sessions waiting to be
    /// resumed, and subscription requests waiting for an answer.
    pub fn xmpp(&self, parked: usize, requests_waiting: usize) {
        self.xmpp_parked.set(i64::try_from(parked).unwrap_or(i64::MAX));
        self.xmpp_requests_waiting.set(i64::try_from(requests_waiting).unwrap_or(i64::MAX));
    }

    /// Takes the archive writer's queue, before an encode.
    pub fn archive_queue(&self, waiting: usize) {
        self.archive_queue.set(i64::try_from(waiting).unwrap_or(i64::MAX));
    }

    /// Takes how long the archive writer's last batch waited.
    pub fn archive_lag(&self, waited: std::time::Duration) {
        self.archive_lag.set(waited.as_secs_f64());
    }

    /// Counts a stream between servers open, opened `direction` (`in`,
    /// `out`), in `state` (`negotiating`, `authenticated`), authenticated
    /// with `auth` (`none` while negotiating), until the guard is dropped.
    pub fn s2s_stream(&self, direction: &'static str, state: &'static str, auth: &'static str) -> StreamOpen {
        let gauge = self.s2s_streams.get_or_create(&StreamLabels { direction, state, auth }).clone();
        gauge.inc();
        StreamOpen(gauge)
    }

    /// Counts stanzas sent to other servers.
    pub fn s2s_sent(&self, stanzas: usize, bytes: usize) {
        self.s2s_count("out", stanzas, bytes);
    }

    /// Counts stanzas received from other servers.
    pub fn s2s_received(&self, stanzas: usize, bytes: usize) {
        self.s2s_count("in", stanzas, bytes);
    }

    fn s2s_count(&self, direction: &'static str, stanzas: usize, bytes: usize) {
        let labels = DirectionLabels { direction };
        self.s2s_stanzas.get_or_create(&labels).inc_by(stanzas as u64);
        self.s2s_bytes.get_or_create(&labels).inc_by(bytes as u64);
    }

    /// Counts a stream between servers that failed or was refused for `reason`.
    pub fn s2s_failed(&self, reason: &'static str) {
        self.s2s_failures.get_or_create(&ReasonLabels { reason }).inc();
    }

    /// Takes the stanzas waiting for other servers, and the guests of
    /// other servers in the rooms, before an encode.
    pub fn s2s(&self, waiting: usize, guests: usize) {
        self.s2s_waiting.set(i64::try_from(waiting).unwrap_or(i64::MAX));
        self.s2s_guests.set(i64::try_from(guests).unwrap_or(i64::MAX));
    }

    /// The metrics in Prometheus text format.
    pub fn encode(&self) -> String {
        let mut out = String::new();
        // Writing into a String cannot fail.
        let _ = prometheus_client::encoding::text::encode(&mut out, &self.registry);
        out
    }
}

/// A stream between servers, counted open while this is held.
#[derive(Debug)]
pub struct StreamOpen(Gauge);

impl Drop for StreamOpen {
    fn drop(&mut self) {
        self.0.dec();
    }
}

/// One client's counters; dropping it counts its connection as closed.
#[derive(Debug)]
pub struct ClientMetrics(Arc<Counters>);

/// What is sent to one client, counted by the shared writer
/// (`transport::shared_writer`); it does not count the client as closed.
#[derive(Debug, Clone)]
pub struct Sends(Arc<Counters>);

impl Sends {
    /// Counts messages the shared writer sent in one write.
    pub fn sent(&self, messages: usize, bytes: usize) {
        self.0.sent(messages, bytes);
        self.0.shared_writes.inc_by(messages as u64);
    }
}

impl Counters {
    /// A batch of messages sent in one write (none: a write of no message).
    fn sent(&self, messages: usize, bytes: usize) {
        self.messages_out.inc_by(messages as u64);
        if messages > 0 {
            self.batches_out.inc();
        }
        self.bytes_out.inc_by(bytes as u64);
    }
}

/// The counters of one label set.
#[derive(Debug)]
struct Counters {
    connections: Gauge,
    accepted: Counter,
    messages_in: Counter,
    messages_out: Counter,
    batches_out: Counter,
    shared_writes: Counter,
    bytes_in: Counter,
    bytes_out: Counter,
    slow_consumers: Counter,
}

impl ClientMetrics {
    /// Counts one message received.
    pub fn received(&self, bytes: usize) {
        self.received_many(1, bytes);
    }

    /// Counts messages received in `bytes` (XMPP: the stanzas of a read).
    pub fn received_many(&self, messages: usize, bytes: usize) {
        self.0.messages_in.inc_by(messages as u64);
        self.0.bytes_in.inc_by(bytes as u64);
    }

    /// Counts a batch of messages sent.
    pub fn sent(&self, messages: usize, bytes: usize) {
        self.0.sent(messages, bytes);
    }

    /// A handle that counts what is sent to this client, and nothing else.
    pub fn sends(&self) -> Sends {
        Sends(self.0.clone())
    }

    /// Counts a slow-consumer disconnect.
    pub fn slow_consumer(&self) {
        self.0.slow_consumers.inc();
    }
}

impl Drop for ClientMetrics {
    fn drop(&mut self) {
        self.0.connections.dec();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counters_appear_with_their_labels() {
        let metrics = Metrics::default();
        let conn = metrics.client("echo", "websocket");
        conn.received(5);
        conn.sent(2, 10);
        conn.slow_consumer();
        let text = metrics.encode();
        for line in [
            r#"switchboard_connections{app="echo",transport="websocket"} 1"#,
            r#"switchboard_messages_in_total{app="echo",transport="websocket"} 1"#,
            r#"switchboard_messages_out_total{app="echo",transport="websocket"} 2"#,
            r#"switchboard_batches_out_total{app="echo",transport="websocket"} 1"#,
            r#"switchboard_bytes_in_total{app="echo",transport="websocket"} 5"#,
            r#"switchboard_bytes_out_total{app="echo",transport="websocket"} 10"#,
            r#"switchboard_slow_consumer_disconnects_total{app="echo",transport="websocket"} 1"#,
        ] {
            assert!(text.contains(line), "missing {line} in\n{text}");
        }
        drop(conn);
        assert!(metrics.encode().contains(r#"switchboard_connections{app="echo",transport="websocket"} 0"#));
    }
}
