//! One node's connection to NATS, shared by every app's broker: the room
//! stream and the names bucket, the names this node holds (refreshed before
//! they expire), the heartbeats by which nodes see each other, and a queue
//! of fire-and-forget publishes.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use async_nats::jetstream::{self, kv, stream};
use async_nats::{HeaderMap, Subject};
use bytes::Bytes;
use futures_util::StreamExt;
use hub::BrokerError;
use parking_lot::Mutex;
use tokio::sync::{broadcast, mpsc};
use tokio::time::Instant;

use crate::envelope::{self, Claim};

/// Events the stream keeps of each room (and of each room's messages), so
/// that a node whose consumer runs behind still gets every event: at 2,500
/// events a second, four seconds' worth.
pub const RETAINED: usize = 10_000;

/// How long the stream keeps a room's events at most, so that the rooms of
/// the past do not fill the disk.
pub const RETENTION: Duration = Duration::from_secs(3600);

/// How a node joins the cluster.
#[derive(Debug, Clone)]
pub struct Options {
    /// The NATS server, `nats://host:port`.
    pub url: String,
    /// How long a name outlives the node that holds it, and how long a
    /// silent node is taken for alive; nodes refresh and beat every third
    /// of it.
    pub ttl: Duration,
    /// Messages the stream keeps per room (its history).
    pub history: usize,
    /// Largest message the stream takes.
    pub max_message_size: usize,
    /// Most publishes waiting to go out.
    pub queue: usize,
}

/// Why the node could not join the cluster.
#[derive(Debug, thiserror::Error)]
pub enum ConnectError {
    #[error("cannot reach NATS at {url}: {source}")]
    Connect { url: String, source: async_nats::ConnectError },
    #[error("cannot set up JetStream ({what}) on {url}: is nats-server running with -js? {source}")]
    JetStream { url: String, what: &'static str, source: async_nats::Error },
}

/// The connection and this node's place in the cluster.
#[derive(Debug)]
pub struct Nats {
    pub(crate) client: async_nats::Client,
    pub(crate) js: jetstream::Context,
    pub(crate) rooms: stream::Stream,
    pub(crate) names: kv::Store,
    pub(crate) node: Arc<str>,
    ttl: Duration,
    state: Arc<NatsState>,
    outgoing: mpsc::Sender<(Subject, HeaderMap, Bytes)>,
    /// The names this node holds, by key: the value and its last revision.
    held: Mutex<HashMap<String, (Bytes, u64)>>,
    /// Other nodes, by when each was last heard from.
    heard: Mutex<HashMap<Arc<str>, Instant>>,
    lost: broadcast::Sender<Arc<str>>,
}

/// Whether the connection is up, and how often it came back.
#[derive(Debug, Default)]
pub struct NatsState {
    up: AtomicBool,
    reconnects: AtomicU64,
    /// Set once the first connection is made: a later one is a reconnection.
    connected_once: AtomicBool,
    /// Set on each reconnection, so that silence during the outage does
    /// not make other nodes look lost.
    rejoined: AtomicBool,
}

impl NatsState {
    /// Whether the connection to NATS is up.
    pub fn is_up(&self) -> bool {
        self.up.load(Ordering::Relaxed)
    }

    /// How many times the connection came back after being lost.
    pub fn reconnects(&self) -> u64 {
        self.reconnects.load(Ordering::Relaxed)
    }
}

impl Nats {
    /// Connects, makes sure the stream and bucket exist, and starts the
    /// node's background tasks.
    pub async fn connect(options: Options) -> Result<Arc<Nats>, ConnectError> {
        let node: Arc<str> = Arc::from(format!("{:016x}", rand::random::<u64>()));
        let state = Arc::new(NatsState::default());
        let events = state.clone();
        let url = options.url.clone();
        let client = async_nats::ConnectOptions::new()
            .name(format!("switchboard {node}"))
            .connection_timeout(Duration::from_secs(5))
            .reconnect_delay_callback(|attempts| Duration::from_millis((attempts as u64 * 100).min(1000)))
            .event_callback(move |event| {
                let state = events.clone();
                let url = url.clone();
                async move {
                    match event {
                        async_nats::Event::Connected => {
                            let was_up = state.up.swap(true, Ordering::Relaxed);
                            if !was_up && state.connected_once.swap(true, Ordering::Relaxed) {
                                state.reconnects.fetch_add(1, Ordering::Relaxed);
                                state.rejoined.store(true, Ordering::Relaxed);
                                tracing::warn!(%url, "broker: reconnected to NATS; rooms resume");
                            }
                        }
                        async_nats::Event::Disconnected => {
                            state.up.store(false, Ordering::Relaxed);
                            tracing::warn!(%url, "broker: lost NATS; messages are refused until it is back");
                        }
                        other => tracing::info!(%url, "broker: {other}"),
                    }
                }
            })
            .connect(&options.url)
            .await
            .map_err(|source| ConnectError::Connect { url: options.url.clone(), source })?;
        state.up.store(true, Ordering::Relaxed);
        state.connected_once.store(true, Ordering::Relaxed);
        let js = jetstream::new(client.clone());
        let jet = |what: &'static str| {
            let url = options.url.clone();
            move |source: async_nats::Error| ConnectError::JetStream { url, what, source }
        };
        let rooms = js
            .get_or_create_stream(stream::Config {
                name: envelope::STREAM.to_owned(),
                subjects: vec![envelope::STREAM_SUBJECTS.to_owned()],
                // A node reads a room's events some time after they are
                // stored; the stream keeps enough of each room that a node
                // running behind still finds them (and at least the history).
                max_messages_per_subject: options.history.max(RETAINED) as i64,
                max_age: RETENTION,
                max_message_size: i32::try_from(options.max_message_size + 1024).unwrap_or(i32::MAX),
                discard: stream::DiscardPolicy::Old,
                storage: stream::StorageType::File,
                ..Default::default()
            })
            .await
            .map_err(|e| jet("the room stream")(e.into()))?;
        // The bucket's stream is made here as a key-value bucket's is:
        // the client's own bucket creation first asks for account details
        // in a form nats-server 2.9 does not answer with.
        js.get_or_create_stream(stream::Config {
            name: format!("KV_{}", envelope::NAMES),
            subjects: vec![format!("$KV.{}.>", envelope::NAMES)],
            max_messages_per_subject: 1,
            max_age: options.ttl,
            discard: stream::DiscardPolicy::New,
            deny_delete: true,
            allow_rollup: true,
            allow_direct: true,
            storage: stream::StorageType::File,
            ..Default::default()
        })
        .await
        .map_err(|e| jet("the names bucket")(e.into()))?;
        let names = js.get_key_value(envelope::NAMES).await.map_err(|e| jet("the names bucket")(e.into()))?;
        let (outgoing, queued) = mpsc::channel(options.queue);
        let nats = Arc::new(Nats {
            client,
            js,
            rooms,
            names,
            node,
            ttl: options.ttl,
            state,
            outgoing,
            held: Mutex::new(HashMap::new()),
            heard: Mutex::new(HashMap::new()),
            lost: broadcast::channel(64).0,
        });
        tokio::spawn(send_queued(nats.client.clone(), queued));
        tokio::spawn(keep_alive(Arc::downgrade(&nats)));
        let heartbeats = nats.client.subscribe(envelope::HEARTBEATS).await.map_err(|e| jet("heartbeats")(e.into()))?;
        tokio::spawn(listen(Arc::downgrade(&nats), heartbeats));
        tracing::info!(node = %nats.node, url = %options.url, "broker: joined the cluster through NATS");
        Ok(nats)
    }

    /// The name of the rooms' history on the stream: when the stream was
    /// made, the same on every node, and new if the stream is made again.
    pub(crate) fn epoch(&self) -> Arc<str> {
        Arc::from(format!("{:x}", self.rooms.cached_info().created.unix_timestamp_nanos()))
    }

    /// This node's id.
    pub fn node(&self) -> &Arc<str> {
        &self.node
    }

    /// The connection's state, for metrics.
    pub fn state(&self) -> &Arc<NatsState> {
        &self.state
    }

    /// The other nodes heard from within the TTL.
    pub fn others(&self) -> Vec<Arc<str>> {
        self.heard.lock().keys().cloned().collect()
    }

    /// Nodes found lost (silent for the TTL), as they are found.
    pub fn lost_nodes(&self) -> broadcast::Receiver<Arc<str>> {
        self.lost.subscribe()
    }

    /// Notes that `node` holds members here, so that it is found lost if
    /// it falls silent, even if none of its heartbeats was heard yet.
    pub(crate) fn note_node(&self, node: &Arc<str>) {
        if **node != *self.node {
            self.heard.lock().entry(node.clone()).or_insert_with(Instant::now);
        }
    }

    pub(crate) fn check_up(&self) -> Result<(), BrokerError> {
        if self.state.is_up() { Ok(()) } else { Err(BrokerError::Unavailable) }
    }

    /// Queues a publish without waiting for the broker to store it.
    pub(crate) fn send(&self, subject: String, headers: HeaderMap, body: Bytes) -> Result<(), BrokerError> {
        self.check_up()?;
        self.outgoing.try_send((Subject::from(subject), headers, body)).map_err(|e| match e {
            mpsc::error::TrySendError::Full(_) => BrokerError::Busy,
            mpsc::error::TrySendError::Closed(_) => BrokerError::Unavailable,
        })
    }

    /// Publishes to the stream and waits until it has stored the message:
    /// its sequence number there.
    pub(crate) async fn store(&self, subject: String, headers: HeaderMap, body: Bytes) -> Result<u64, BrokerError> {
        self.check_up()?;
        let ack = self.js.publish_with_headers(subject, headers, body).await.map_err(|e| {
            tracing::warn!("broker: publish failed: {e}");
            BrokerError::Unavailable
        })?;
        ack.await.map(|ack| ack.sequence).map_err(|e| {
            tracing::warn!("broker: the stream did not confirm a message: {e}");
            BrokerError::Unavailable
        })
    }

    /// Claims a name for this node: `Ok(false)` if another node holds it.
    pub(crate) async fn claim(&self, key: String, name: Arc<str>, speaks: hub::Speaks) -> Result<bool, BrokerError> {
        self.check_up()?;
        let value = Claim { node: self.node.clone(), name, speaks: Arc::from(speaks.name()) }.to_bytes();
        match self.names.create(&key, value.clone()).await {
            Ok(revision) => {
                self.held.lock().insert(key, (value, revision));
                Ok(true)
            }
            Err(e) if e.kind() == kv::CreateErrorKind::AlreadyExists => Ok(false),
            Err(e) => {
                tracing::warn!("broker: cannot claim a name: {e}");
                Err(BrokerError::Unavailable)
            }
        }
    }

    /// Frees a name this node holds.
    pub(crate) fn release(self: &Arc<Self>, key: String) {
        if self.held.lock().remove(&key).is_none() {
            return;
        }
        let nats = self.clone();
        tokio::spawn(async move {
            // If this fails the name still expires after the TTL.
            if let Err(e) = nats.names.delete(&key).await {
                tracing::warn!("broker: cannot free a name (it expires in {:?}): {e}", nats.ttl);
            }
        });
    }

    /// Refreshes every name this node holds, taking back any that expired
    /// while NATS was away; a name another node took meanwhile is lost.
    async fn refresh(&self) {
        let held: Vec<_> = self.held.lock().iter().map(|(k, v)| (k.clone(), v.clone())).collect();
        for (key, (value, revision)) in held {
            let renewed = match self.names.update(&key, value.clone(), revision).await {
                Ok(revision) => Renewal::Renewed(revision),
                Err(_) => match self.names.create(&key, value.clone()).await {
                    Ok(revision) => Renewal::Renewed(revision),
                    Err(e) if e.kind() == kv::CreateErrorKind::AlreadyExists => self.whose(&key, &value).await,
                    Err(_) => Renewal::Unknown,
                },
            };
            let mut held = self.held.lock();
            match (renewed, held.get_mut(&key)) {
                (Renewal::Renewed(new), Some(entry)) => entry.1 = new,
                (Renewal::Lost, Some(_)) => {
                    tracing::warn!(%key, "broker: a name this node held was taken elsewhere");
                    held.remove(&key);
                }
                _ => {}
            }
        }
    }

    /// Whose claim the bucket holds for a name this node could neither
    /// update nor create. This node's, at a revision it did not know, when
    /// an update was stored but its answer came too late (a request times
    /// out on a slow or crowded link to NATS): the name is still held.
    async fn whose(&self, key: &str, value: &Bytes) -> Renewal {
        match self.names.entry(key).await {
            Ok(Some(entry)) if entry.operation == kv::Operation::Put && entry.value == *value => Renewal::Renewed(entry.revision),
            Ok(Some(_)) => Renewal::Lost,
            // Expired since: created again at the next refresh.
            Ok(None) | Err(_) => Renewal::Unknown,
        }
    }

    /// Marks as lost every node not heard from for the TTL.
    fn find_lost(&self) {
        let now = Instant::now();
        let mut heard = self.heard.lock();
        if self.state.rejoined.swap(false, Ordering::Relaxed) {
            heard.values_mut().for_each(|at| *at = now);
        }
        if !self.state.is_up() {
            return;
        }
        heard.retain(|node, at| {
            let alive = now.duration_since(*at) < self.ttl;
            if !alive {
                tracing::warn!(%node, "broker: node lost (silent for {:?}); its members leave", self.ttl);
                let _ = self.lost.send(node.clone());
            }
            alive
        });
    }
}

/// What refreshing a name found.
enum Renewal {
    /// Still this node's, at this revision.
    Renewed(u64),
    /// Another node's now.
    Lost,
    /// NATS did not answer: tried again at the next refresh.
    Unknown,
}

/// Sends the queued publishes in order.
async fn send_queued(client: async_nats::Client, mut queued: mpsc::Receiver<(Subject, HeaderMap, Bytes)>) {
    while let Some((subject, headers, body)) = queued.recv().await {
        if let Err(e) = client.publish_with_headers(subject, headers, body).await {
            tracing::warn!("broker: publish failed: {e}");
        }
    }
}

/// Beats, refreshes names and looks for lost nodes, every third of the TTL.
async fn keep_alive(nats: std::sync::Weak<Nats>) {
    let Some(every) = nats.upgrade().map(|l| l.ttl / 3) else { return };
    let mut tick = tokio::time::interval(every);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        let Some(nats) = nats.upgrade() else { return };
        if nats.state.is_up() {
            let _ = nats.client.publish(format!("sb.node.{}", nats.node), Bytes::new()).await;
        }
        nats.refresh().await;
        nats.find_lost();
    }
}

/// Notes each node's heartbeat.
async fn listen(nats: std::sync::Weak<Nats>, mut heartbeats: async_nats::Subscriber) {
    while let Some(beat) = heartbeats.next().await {
        let Some(nats) = nats.upgrade() else { return };
        let Some(node) = beat.subject.strip_prefix("sb.node.") else { continue };
        if node != &*nats.node {
            let mut heard = nats.heard.lock();
            match heard.get_mut(node) {
                Some(at) => *at = Instant::now(),
                None => {
                    tracing::info!(%node, "broker: node seen");
                    heard.insert(Arc::from(node), Instant::now());
                }
            }
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use std::io::{BufRead, BufReader};
    use std::process::{Child, Command, Stdio};

    use super::*;

    /// A nats-server with JetStream on a free loopback port, killed on drop.
    pub(crate) struct Server {
        child: Child,
        pub(crate) port: u16,
        store: std::path::PathBuf,
    }

    impl Server {
        pub(crate) fn start() -> Server {
            let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
            let store = std::env::temp_dir().join(format!("switchboard-cluster-nats-{}-{port}", std::process::id()));
            let mut child = Command::new("nats-server")
                .args(["-js", "-a", "127.0.0.1", "-p", &port.to_string(), "-sd"])
                .arg(&store)
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap_or_else(|e| panic!("cannot run nats-server ({e}); `make test` installs it (apt-get install nats-server)"));
            let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
            while !lines.next().expect("nats-server exited before it was ready").unwrap().contains("Server is ready") {}
            std::thread::spawn(move || lines.for_each(drop));
            Server { child, port, store }
        }
    }

    impl Drop for Server {
        fn drop(&mut self) {
            let _ = self.child.kill();
            let _ = self.child.wait();
            let _ = std::fs::remove_dir_all(&self.store);
        }
    }

    #[tokio::test]
    async fn a_name_whose_refresh_was_stored_unanswered_stays_held_and_one_taken_elsewhere_is_lost() {
        let server = Server::start();
        let options = Options { url: format!("nats://127.0.0.1:{}", server.port), ttl: Duration::from_secs(60), history: 5, max_message_size: 4096, queue: 16 };
        let nats = Nats::connect(options).await.expect("joins");
        let key = "room.alice".to_owned();
        assert!(nats.claim(key.clone(), Arc::from("alice"), hub::Speaks::Irc).await.unwrap());
        // An update of this node's that was stored, its answer lost (as on a
        // slow link, where the request times out): the bucket is a revision
        // ahead of what the node knows, with the node's own claim.
        let (value, revision) = nats.held.lock()[&key].clone();
        let stored = nats.names.update(&key, value, revision).await.unwrap();
        let held = || nats.held.lock().get(&key).map(|(_, revision)| *revision);
        nats.refresh().await;
        assert_eq!(held(), Some(stored), "the name is still held, at the revision stored");
        nats.refresh().await;
        assert!(held().is_some_and(|now| now > stored), "and refreshed from there: {:?}", held());
        // Another node's claim in its place: lost.
        let theirs = Claim { node: Arc::from("another"), name: Arc::from("alice"), speaks: Arc::from("irc") }.to_bytes();
        nats.names.put(&key, theirs).await.unwrap();
        nats.refresh().await;
        assert!(!nats.held.lock().contains_key(&key), "a name another node took is no longer held");
    }
}
