//! Several `switchboard serve` nodes sharing rooms through one nats-server
//! (Debian's, which `make test` installs), or over the link to a node that
//! hosts them: order, names, history, a node killed, the broker (or the
//! host) going away and coming back, and XMPP users on different nodes.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream as StdTcpStream;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use futures_util::{SinkExt, StreamExt};
use serde_json::{Value, json};
use tokio::net::TcpStream;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::{MaybeTlsStream, WebSocketStream};

#[path = "support/xmpp.rs"]
mod xmpp_client;

const BIN: &str = env!("CARGO_BIN_EXE_switchboard");
/// Names outlive a lost node this long in these tests.
const TTL: &str = "2s";
/// The server API's key on the nodes that serve it.
const API_KEY: &str = "0123456789abcdef-nodes";
/// Longest any one wait may take before the test fails.
const PATIENCE: Duration = Duration::from_secs(30);

/// A nats-server with JetStream on a free loopback port, its store in a
/// folder of its own.
struct Nats {
    port: u16,
    store: PathBuf,
    child: Option<Child>,
}

impl Nats {
    fn start() -> Nats {
        let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let store = std::env::temp_dir().join(format!("switchboard-nats-{}-{port}", std::process::id()));
        let mut nats = Nats { port, store, child: None };
        nats.resume();
        nats
    }

    /// Starts the server (again), on the same port and store.
    fn resume(&mut self) {
        let mut child = Command::new("nats-server")
            .args(["-js", "-a", "127.0.0.1", "-p", &self.port.to_string(), "-sd"])
            .arg(&self.store)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot run nats-server ({e}); `make test` installs it (apt-get install nats-server)"));
        let stderr = child.stderr.take().unwrap();
        let mut lines = BufReader::new(stderr).lines();
        loop {
            let line = lines.next().expect("nats-server exited before it was ready").unwrap();
            if line.contains("Server is ready") {
                break;
            }
        }
        // Keep reading its log so that it never blocks on a full pipe.
        std::thread::spawn(move || lines.for_each(drop));
        self.child = Some(child);
    }

    /// Stops the server and waits until it has exited.
    fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            signal(&child, "TERM");
            child.wait().unwrap();
        }
    }

    fn url(&self) -> String {
        format!("nats://127.0.0.1:{}", self.port)
    }
}

impl Drop for Nats {
    fn drop(&mut self) {
        if let Some(child) = &mut self.child {
            let _ = child.kill();
            let _ = child.wait();
        }
        let _ = std::fs::remove_dir_all(&self.store);
    }
}

fn signal(child: &Child, name: &str) {
    assert!(Command::new("kill").args([&format!("-{name}"), &child.id().to_string()]).status().unwrap().success());
}

/// How nodes share their rooms: the flags of the next node started.
trait Sharing {
    fn args(&self) -> Vec<String>;
}

impl Sharing for Nats {
    fn args(&self) -> Vec<String> {
        ["--broker", &self.url(), "--broker-ttl", TTL].map(String::from).to_vec()
    }
}

/// The first node started hosts the rooms (`--broker-listen` on a free
/// port), every later one links to it.
struct Linked {
    port: u16,
    hosted: std::sync::atomic::AtomicBool,
}

impl Linked {
    fn new() -> Linked {
        let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        Linked { port, hosted: Default::default() }
    }

    /// The next node started hosts the rooms again.
    fn host_again(&self) {
        self.hosted.store(false, std::sync::atomic::Ordering::Relaxed);
    }
}

impl Sharing for Linked {
    fn args(&self) -> Vec<String> {
        let at = format!("127.0.0.1:{}", self.port);
        if self.hosted.swap(true, std::sync::atomic::Ordering::Relaxed) { vec!["--broker".into(), format!("node://{at}")] } else { vec!["--broker-listen".into(), at] }
    }
}

/// A `switchboard serve` node on a free port, its rooms shared as `sharing` says.
struct Node {
    addr: String,
    /// Its XMPP listener, when it has one.
    xmpp: Option<String>,
    /// Its IRC listener, when it has one.
    irc: Option<String>,
    child: Child,
}

impl Node {
    fn start(sharing: &impl Sharing) -> Node {
        Node::with_args(sharing, &[])
    }

    fn with_args(sharing: &impl Sharing, extra: &[&str]) -> Node {
        let shares = sharing.args();
        let mut child = Command::new(BIN)
            .args(["serve", "--listen", "127.0.0.1:0", "--room-history", "5"])
            .args(if extra.contains(&"--store") { &[][..] } else { &["--store", "memory"][..] })
            .args(&shares)
            .args(if extra.contains(&"--xmpp-listen") { &[][..] } else { &["--xmpp-listen", "off"][..] })
            .args(if extra.contains(&"--irc-listen") { &[][..] } else { &["--irc-listen", "off"][..] })
            .args(extra)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut out = BufReader::new(child.stdout.take().unwrap());
        let mut line = String::new();
        out.read_line(&mut line).unwrap();
        let addr = line.split("http://").nth(1).expect("the listening line").split('/').next().unwrap().to_owned();
        // Then a line for each protocol it serves, XMPP's before IRC's, and
        // last, where it hosts rooms for other nodes.
        let (mut xmpp, mut irc) = (None, None);
        let mut hosting = shares.iter().any(|arg| arg == "--broker-listen");
        while (extra.contains(&"--xmpp-listen") && xmpp.is_none()) || (extra.contains(&"--irc-listen") && irc.is_none()) || hosting {
            let mut line = String::new();
            out.read_line(&mut line).unwrap();
            assert!(!line.is_empty(), "the node ended before it said where it listens");
            let at = line.split(" on ").nth(1).map(|at| at.trim().to_owned());
            if line.contains("serves XMPP") {
                xmpp = at;
            } else if line.contains("serves IRC") {
                irc = at;
            } else if line.contains("hosts its rooms") {
                hosting = false;
            }
        }
        Node { addr, xmpp, irc, child }
    }

    /// The node's `/metrics` text.
    fn metrics(&self) -> String {
        let mut stream = StdTcpStream::connect(&self.addr).unwrap();
        write!(stream, "GET /metrics HTTP/1.0\r\nHost: x\r\n\r\n").unwrap();
        let mut text = String::new();
        stream.read_to_string(&mut text).unwrap();
        text
    }

    /// Calls the server API's `method` with `params` (the node was started
    /// with `--api-key` [`API_KEY`]): its result.
    fn api(&self, method: &str, params: Value) -> Value {
        let mut stream = StdTcpStream::connect(&self.addr).unwrap();
        let body = params.to_string();
        write!(stream, "POST /api/{method} HTTP/1.0\r\nHost: x\r\nX-API-Key: {API_KEY}\r\nContent-Length: {}\r\n\r\n{body}", body.len()).unwrap();
        let mut text = String::new();
        stream.read_to_string(&mut text).unwrap();
        let (head, body) = text.split_once("\r\n\r\n").expect("a whole response");
        assert!(head.starts_with("HTTP/1.0 200 "), "{method} {params}: {text}");
        serde_json::from_str(body).unwrap()
    }

    /// Waits until the server API's info lists `n` nodes (this one, and
    /// those whose heartbeat it has heard), checking every 100 ms.
    async fn await_nodes(&self, n: usize) {
        self.eventually(&format!("heard {n} nodes"), || self.api("info", json!({}))["nodes"].as_array().map(Vec::len) == Some(n)).await;
    }

    /// Waits until `ready`, asking every 100 ms (what it waits for has no
    /// event to await), within the patience; `what` names it if it never is.
    async fn eventually(&self, what: &str, ready: impl Fn() -> bool) {
        let waited = tokio::time::timeout(PATIENCE, async {
            while !ready() {
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        });
        waited.await.unwrap_or_else(|_| panic!("{} never {what}", self.addr));
    }

    /// Waits until `/metrics` has `line`, checking every 100 ms.
    async fn await_metric(&self, line: &str) {
        self.eventually(&format!("showed {line:?}"), || self.metrics().lines().any(|l| l == line)).await;
    }

    /// A native WebSocket chat client.
    async fn websocket(&self) -> Client {
        let (ws, _) = tokio_tungstenite::connect_async(format!("ws://{}/chat/websocket", self.addr)).await.unwrap();
        Client { ws, sockjs: false, pending: Default::default() }
    }

    /// A SockJS chat client (over its WebSocket transport).
    async fn sockjs(&self) -> Client {
        let url = format!("ws://{}/chat/000/{:08x}/websocket", self.addr, rand_id());
        let (mut ws, _) = tokio_tungstenite::connect_async(url).await.unwrap();
        assert_eq!(ws.next().await.unwrap().unwrap(), Message::text("o"));
        Client { ws, sockjs: true, pending: Default::default() }
    }
}

impl Drop for Node {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn rand_id() -> u32 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().subsec_nanos()
}

/// Two nodes, and a WebSocket client in `lobby` on each: alice on the first, bob on the second.
async fn alice_and_bob(sharing: &impl Sharing) -> (Node, Node, Client, Client) {
    let (a, b) = (Node::start(sharing), Node::start(sharing));
    let mut alice = a.websocket().await;
    alice.join("alice", "lobby").await;
    let mut bob = b.websocket().await;
    bob.join("bob", "lobby").await;
    (a, b, alice, bob)
}

/// A chat client: JSON in and out, framed for its transport.
struct Client {
    ws: WebSocketStream<MaybeTlsStream<TcpStream>>,
    sockjs: bool,
    /// Events of a SockJS batch not yet taken.
    pending: std::collections::VecDeque<Value>,
}

impl Client {
    async fn send(&mut self, value: Value) {
        let text = value.to_string();
        let frame = if self.sockjs { json!([text]).to_string() } else { text };
        self.ws.send(Message::text(frame)).await.unwrap();
    }

    /// The next chat event, whatever it is.
    async fn next(&mut self) -> Value {
        loop {
            if let Some(event) = self.pending.pop_front() {
                return event;
            }
            let message = tokio::time::timeout(PATIENCE, self.ws.next()).await.expect("an event in time").unwrap().unwrap();
            let Message::Text(text) = message else { continue };
            if !self.sockjs {
                return serde_json::from_str(&text).unwrap();
            }
            // SockJS: `a[...]` carries messages; `h` is a heartbeat.
            if let Some(array) = text.strip_prefix('a') {
                let batch: Vec<String> = serde_json::from_str(array).unwrap();
                self.pending.extend(batch.iter().map(|event| serde_json::from_str::<Value>(event).unwrap()));
            }
        }
    }

    /// Skips events until one has `field` equal to `value`.
    async fn until(&mut self, field: &str, value: &str) -> Value {
        loop {
            let event = self.next().await;
            if event[field] == value {
                return event;
            }
        }
    }

    async fn join(&mut self, name: &str, room: &str) -> Value {
        self.send(json!({"name": name, "room": room})).await;
        let members = self.next().await;
        assert_eq!(members["event"], "members", "{members}");
        members
    }
}

/// A scenario run twice, as two tests: with the nodes sharing rooms
/// through NATS, and linked to a host node (the uplink).
macro_rules! through_each_broker {
    ($scenario:ident: $nats:ident, $linked:ident) => {
        #[tokio::test]
        async fn $nats() {
            $scenario(&Nats::start()).await;
        }

        #[tokio::test]
        async fn $linked() {
            $scenario(&Linked::new()).await;
        }
    };
}

through_each_broker!(
    clients_on_two_nodes_see_one_room_in_one_order_through:
    clients_on_two_nodes_see_one_room_in_one_order,
    clients_on_two_nodes_see_one_room_in_one_order_over_the_link
);

async fn clients_on_two_nodes_see_one_room_in_one_order_through(sharing: &impl Sharing) {
    let (a, b) = (Node::start(sharing), Node::start(sharing));
    let mut alice = a.websocket().await;
    let mut bob = b.sockjs().await;
    alice.join("alice", "lobby").await;
    let members = bob.join("bob", "lobby").await;
    assert_eq!(members["members"], json!(["bob", "alice"]), "the list covers both nodes");
    alice.until("event", "join").await;
    // Both send at once; each sees all 40 messages, in the same order.
    for i in 0..20 {
        alice.send(json!({"message": format!("a{i}")})).await;
        bob.send(json!({"message": format!("b{i}")})).await;
    }
    let mut seen = [Vec::new(), Vec::new()];
    for (client, seen) in [&mut alice, &mut bob].into_iter().zip(&mut seen) {
        while seen.len() < 40 {
            let event = client.next().await;
            if let Some(text) = event["message"].as_str() {
                seen.push(text.to_owned());
            }
        }
    }
    assert_eq!(seen[0], seen[1]);
    for who in ["a", "b"] {
        let own: Vec<_> = seen[0].iter().filter(|m| m.starts_with(who)).cloned().collect();
        assert_eq!(own, (0..20).map(|i| format!("{who}{i}")).collect::<Vec<_>>(), "each sender's order is kept");
    }
}

through_each_broker!(
    a_name_is_unique_across_nodes_and_history_is_served_by_any_through:
    a_name_is_unique_across_nodes_and_history_is_served_by_any,
    a_name_is_unique_across_nodes_and_history_is_served_by_any_over_the_link
);

async fn a_name_is_unique_across_nodes_and_history_is_served_by_any_through(sharing: &impl Sharing) {
    let (a, b) = (Node::start(sharing), Node::start(sharing));
    let mut alice = a.websocket().await;
    alice.join("alice", "lobby").await;
    let mut other = b.sockjs().await;
    other.send(json!({"name": "ALICE", "room": "lobby"})).await;
    let refused = other.next().await;
    assert!(refused["error"].as_str().unwrap().contains("already taken"), "{refused}");
    // The same name in another room is fine.
    other.join("alice", "kitchen").await;

    for i in 0..7 {
        alice.send(json!({"message": format!("m{i}")})).await;
        alice.until("message", &format!("m{i}")).await;
    }
    let mut bob = b.websocket().await;
    bob.join("bob", "lobby").await;
    let history = bob.next().await;
    assert_eq!(history["event"], "history", "{history}");
    let kept: Vec<_> = history["messages"].as_array().unwrap().iter().map(|m| m["message"].as_str().unwrap().to_owned()).collect();
    assert_eq!(kept, ["m2", "m3", "m4", "m5", "m6"], "the last 5 (--room-history 5), oldest first");
}

#[tokio::test]
async fn a_killed_node_frees_its_names_and_its_members_leave() {
    let nats = Nats::start();
    let (a, b, _alice, mut bob) = alice_and_bob(&nats).await;
    signal(&a.child, "KILL");
    let left = bob.until("event", "leave").await;
    assert_eq!(left["name"], "alice", "{left}");
    // The name is free once it expires (the TTL, 2 s): ask until it is.
    let mut again = b.websocket().await;
    let joined = tokio::time::timeout(PATIENCE, async {
        loop {
            again.send(json!({"name": "alice", "room": "lobby"})).await;
            let answer = again.next().await;
            if answer["event"] == "members" {
                return answer;
            }
            assert!(answer["error"].as_str().unwrap().contains("already taken"), "{answer}");
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
    });
    let members = joined.await.expect("alice's name freed within the TTL");
    assert_eq!(members["members"], json!(["bob", "alice"]));
}

#[tokio::test]
async fn a_linked_node_killed_frees_its_names_at_once_and_its_members_leave() {
    let linked = Linked::new();
    let (host, node, mut alice, _bob) = alice_and_bob(&linked).await;
    alice.until("event", "join").await;
    signal(&node.child, "KILL");
    assert_eq!(alice.until("event", "leave").await["name"], "bob");
    // The host freed the name when the link broke.
    let mut again = host.websocket().await;
    let members = again.join("bob", "lobby").await;
    assert_eq!(members["members"], json!(["alice", "bob"]));
}

#[tokio::test]
async fn a_node_whose_host_went_away_links_again_to_the_next() {
    let linked = Linked::new();
    let (host, node, _alice, mut bob) = alice_and_bob(&linked).await;
    node.await_metric("switchboard_broker_connected 1").await;
    let mut host = host;
    signal(&host.child, "KILL");
    let _ = host.child.wait();
    assert_eq!(bob.until("event", "leave").await["name"], "alice", "those on the host are gone with it");
    node.await_metric("switchboard_broker_connected 0").await;
    bob.send(json!({"message": "into the void"})).await;
    bob.until("error", "the message broker is unreachable; try again later").await;

    linked.host_again();
    let next = Node::start(&linked);
    node.await_metric("switchboard_broker_reconnects_total 1").await;
    // bob's name was claimed again at the new host, and its members hear him.
    let mut carol = next.websocket().await;
    let members = carol.join("carol", "lobby").await;
    if members["members"] != json!(["carol", "bob"]) {
        // bob's node told the new host of him after carol joined.
        assert_eq!(members["members"], json!(["carol"]));
        assert_eq!(carol.until("event", "join").await["name"], "bob");
    }
    bob.send(json!({"message": "back"})).await;
    assert_eq!(carol.until("name", "bob").await["message"], "back");
    let mut mallory = next.websocket().await;
    mallory.send(json!({"name": "bob", "room": "lobby"})).await;
    assert!(mallory.next().await["error"].as_str().unwrap().contains("already taken"));
}

#[tokio::test]
async fn the_nodes_tell_of_a_broker_outage_and_resume_after_it() {
    let mut nats = Nats::start();
    let (a, b) = (Node::start(&nats), Node::start(&nats));
    let mut alice = a.websocket().await;
    alice.join("alice", "lobby").await;
    let mut bob = b.sockjs().await;
    bob.join("bob", "lobby").await;
    a.await_metric("switchboard_broker_connected 1").await;

    nats.stop();
    a.await_metric("switchboard_broker_connected 0").await;
    b.await_metric("switchboard_broker_connected 0").await;
    alice.send(json!({"message": "into the void"})).await;
    let refused = alice.until("error", "the message broker is unreachable; try again later").await;
    assert!(refused.get("message").is_none());

    nats.resume();
    for node in [&a, &b] {
        node.await_metric("switchboard_broker_connected 1").await;
        node.await_metric("switchboard_broker_reconnects_total 1").await;
    }
    alice.send(json!({"message": "back"})).await;
    let heard = bob.until("name", "alice").await;
    assert_eq!(heard["message"], "back", "nothing refused was delivered: {heard}");
    bob.send(json!({"message": "welcome back"})).await;
    assert_eq!(alice.until("name", "bob").await["message"], "welcome back");
}

through_each_broker!(
    the_bench_spreads_a_room_over_the_nodes_through:
    the_bench_spreads_a_room_over_the_nodes,
    the_bench_spreads_a_room_over_the_nodes_over_the_link
);

async fn the_bench_spreads_a_room_over_the_nodes_through(sharing: &impl Sharing) {
    let (a, b) = (Node::start(sharing), Node::start(sharing));
    let out = std::env::temp_dir().join(format!("switchboard-nodes-bench-{}.json", std::process::id()));
    let target = format!("two=http://{}/chat,http://{}/chat", a.addr, b.addr);
    let run = Command::new(BIN)
        .args(["bench", "chat", "--quiet", "--target", &target, "--rooms", "2", "--users", "2", "--messages", "5", "--interval", "20ms"])
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap();
    assert!(run.status.success(), "{}", String::from_utf8_lossy(&run.stderr));
    let result: Value = serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    let _ = std::fs::remove_file(&out);
    let chat = &result["runs"][0]["results"][0];
    // 2 rooms × 2 users² × 5 messages, each user on its own node.
    assert_eq!((chat["expected"].as_u64(), chat["received"].as_u64()), (Some(40), Some(40)), "{chat}");
    // Both nodes served clients: each counted its chat connections.
    for node in [&a, &b] {
        let opened = node.metrics().lines().any(|l| l.starts_with("switchboard_connections_accepted_total{app=\"chat\"") && !l.ends_with(" 0"));
        assert!(opened, "{} had no chat client", node.addr);
    }
}

/// Reads the XMPP stream until it has `needle`; what came up to it.
async fn read_until(xmpp: &mut TcpStream, seen: &mut String, needle: &str) -> String {
    use tokio::io::AsyncReadExt;
    tokio::time::timeout(PATIENCE, async {
        while !seen.contains(needle) {
            let mut buf = [0u8; 4096];
            let n = xmpp.read(&mut buf).await.unwrap();
            assert!(n > 0, "the stream ended before {needle:?}: {seen}");
            seen.push_str(&String::from_utf8_lossy(&buf[..n]));
        }
    })
    .await
    .unwrap_or_else(|_| panic!("no {needle:?} in {seen}"));
    let at = seen.find(needle).unwrap() + needle.len();
    seen.drain(..at).collect()
}

through_each_broker!(
    a_nick_change_on_one_node_claims_the_name_on_every_node_through:
    a_nick_change_on_one_node_claims_the_name_on_every_node,
    a_nick_change_on_one_node_claims_the_name_on_every_node_over_the_link
);

async fn a_nick_change_on_one_node_claims_the_name_on_every_node_through(sharing: &impl Sharing) {
    use tokio::io::AsyncWriteExt;
    let a = Node::with_args(sharing, &["--xmpp-listen", "127.0.0.1:0"]);
    let b = Node::start(sharing);
    let mut alice = b.websocket().await;
    alice.join("alice", "lobby").await;

    // An XMPP client on node A, anonymous, in the same room as "xan".
    let header = "<stream:stream to='localhost' version='1.0' xmlns='jabber:client' xmlns:stream='http://etherx.jabber.org/streams'>";
    let mut xmpp = TcpStream::connect(a.xmpp.as_deref().unwrap()).await.unwrap();
    let mut seen = String::new();
    xmpp.write_all(header.as_bytes()).await.unwrap();
    read_until(&mut xmpp, &mut seen, "</stream:features>").await;
    xmpp.write_all(b"<auth xmlns='urn:ietf:params:xml:ns:xmpp-sasl' mechanism='ANONYMOUS'/>").await.unwrap();
    read_until(&mut xmpp, &mut seen, "<success").await;
    xmpp.write_all(header.as_bytes()).await.unwrap();
    read_until(&mut xmpp, &mut seen, "</stream:features>").await;
    xmpp.write_all(b"<iq type='set' id='b'><bind xmlns='urn:ietf:params:xml:ns:xmpp-bind'/></iq>").await.unwrap();
    read_until(&mut xmpp, &mut seen, "</iq>").await;
    xmpp.write_all(b"<presence to='lobby@conference.localhost/xan'/>").await.unwrap();
    read_until(&mut xmpp, &mut seen, "<subject").await;
    alice.until("name", "xan").await;

    // alice is taken on node B: a conflict.
    xmpp.write_all(b"<presence id='n1' to='lobby@conference.localhost/Alice'/>").await.unwrap();
    let refused = read_until(&mut xmpp, &mut seen, "</presence>").await;
    assert!(refused.contains("type=\"error\"") && refused.contains("<conflict"), "{refused}");
    // xena is free: node B's member sees xan leave for xena and xena come in
    // in xan's place.
    xmpp.write_all(b"<presence to='lobby@conference.localhost/xena'/>").await.unwrap();
    let left = read_until(&mut xmpp, &mut seen, "</presence>").await;
    assert!(left.contains("/xan\"") && left.contains("code=\"303\"") && left.contains("nick=\"xena\""), "{left}");
    assert_eq!(alice.next().await, json!({"event": "leave", "name": "xan", "room": "lobby", "new_name": "xena"}));
    assert_eq!(alice.next().await, json!({"event": "join", "name": "xena", "room": "lobby", "old_name": "xan"}));
    // The new name is claimed everywhere, the old one freed.
    let mut other = b.sockjs().await;
    other.send(json!({"name": "xena", "room": "lobby"})).await;
    let taken = other.next().await;
    assert!(taken["error"].as_str().unwrap().contains("already taken"), "{taken}");
    other.join("xan", "lobby").await;
    alice.until("name", "xan").await;

    // A typing notification (an XMPP chat state alone) crosses nodes as the
    // room's tags event.
    xmpp.write_all(b"<message to='lobby@conference.localhost' type='groupchat'><composing xmlns='http://jabber.org/protocol/chatstates'/></message>").await.unwrap();
    assert_eq!(alice.next().await, json!({"event": "tags", "name": "xena", "room": "lobby", "tags": {"+typing": "active"}}));
}

through_each_broker!(
    the_server_api_publishes_to_every_node_and_lists_members_of_every_node_through:
    the_server_api_publishes_to_every_node_and_lists_members_of_every_node,
    the_server_api_publishes_to_every_node_and_lists_members_of_every_node_over_the_link
);

async fn the_server_api_publishes_to_every_node_and_lists_members_of_every_node_through(sharing: &impl Sharing) {
    let api = ["--api-key", API_KEY];
    let (a, b) = (Node::with_args(sharing, &api), Node::with_args(sharing, &api));
    let mut alice = a.websocket().await;
    alice.join("alice", "lobby").await;
    let mut bob = b.sockjs().await;
    bob.join("bob", "lobby").await;
    alice.until("event", "join").await;

    let published = a.api("publish", json!({"room": "lobby", "name": "shop", "text": "shipped"}));
    assert_eq!(published["room"], "lobby");
    for client in [&mut alice, &mut bob] {
        let got = client.until("name", "shop").await;
        assert_eq!((&got["message"], &got["offset"], &got["epoch"]), (&json!("shipped"), &published["offset"], &published["epoch"]), "at the position the API said, on both nodes");
    }

    // Each node lists both members, with the node each is on.
    let (node_a, node_b) = (a.api("info", json!({}))["node"].clone(), b.api("info", json!({}))["node"].clone());
    assert_ne!(node_a, node_b);
    for node in [&a, &b] {
        let presence = node.api("presence", json!({"room": "lobby"}));
        let mut members: Vec<(Value, Value, Value)> =
            presence["members"].as_array().unwrap().iter().map(|m| (m["name"].clone(), m["protocol"].clone(), m["node"].clone())).collect();
        members.sort_by_key(|m| m.0.to_string());
        assert_eq!(members, [(json!("alice"), json!("app"), node_a.clone()), (json!("bob"), json!("app"), node_b.clone())]);
        assert_eq!(node.api("rooms", json!({})), json!({"rooms": [{"room": "lobby", "members": 2}], "next": null}));
    }
    // This node, then the others it has heard beat.
    a.await_nodes(2).await;
    assert_eq!(a.api("info", json!({}))["nodes"], json!([node_a, node_b]));
}

through_each_broker!(
    a_client_recovers_what_it_missed_on_another_node_from_the_streams_positions_through:
    a_client_recovers_what_it_missed_on_another_node_from_the_streams_positions,
    a_client_recovers_what_it_missed_on_another_node_from_the_streams_positions_over_the_link
);

async fn a_client_recovers_what_it_missed_on_another_node_from_the_streams_positions_through(sharing: &impl Sharing) {
    let (a, b, mut alice, mut bob) = alice_and_bob(sharing).await;
    alice.send(json!({"message": "one"})).await;
    let seen = bob.until("message", "one").await;
    let (offset, epoch) = (seen["offset"].as_u64().expect("a position"), seen["epoch"].clone());
    drop(bob);
    alice.until("event", "leave").await;
    alice.send(json!({"message": "two"})).await;
    alice.send(json!({"message": "three"})).await;
    let three = alice.until("message", "three").await;
    assert_eq!(three["epoch"], epoch, "one history on every node");

    // Back on the other node: exactly what it missed, at the stream's positions.
    let mut back = a.websocket().await;
    back.send(json!({"name": "bob", "room": "lobby", "since": {"offset": offset, "epoch": epoch}})).await;
    let members = back.next().await;
    assert_eq!((&members["event"], &members["offset"]), (&json!("members"), &three["offset"]));
    let history = back.next().await;
    assert_eq!(history["recovered"], true, "{history}");
    let missed: Vec<&Value> = history["messages"].as_array().unwrap().iter().map(|m| &m["message"]).collect();
    assert_eq!(missed, [&json!("two"), &json!("three")]);
    assert!(history["messages"][0]["offset"].as_u64().unwrap() > offset);

    // A position of another history is not recovered.
    let mut stale = b.websocket().await;
    stale.send(json!({"name": "carol", "room": "lobby", "since": {"offset": offset, "epoch": "elsewhere"}})).await;
    stale.next().await;
    assert_eq!(stale.next().await["recovered"], false);
}

through_each_broker!(
    a_disconnect_through_the_api_of_one_node_closes_the_user_on_every_node_through:
    a_disconnect_through_the_api_of_one_node_closes_the_user_on_every_node,
    a_disconnect_through_the_api_of_one_node_closes_the_user_on_every_node_over_the_link
);

async fn a_disconnect_through_the_api_of_one_node_closes_the_user_on_every_node_through(sharing: &impl Sharing) {
    let api = ["--api-key", API_KEY];
    let (a, b) = (Node::with_args(sharing, &api), Node::with_args(sharing, &api));
    // A waits for the answers of the nodes it has heard beat: B, once it has.
    a.await_nodes(2).await;
    let mut here = a.websocket().await;
    here.join("mallory", "lobby").await;
    let mut there = b.sockjs().await;
    there.join("mallory", "den").await;
    let mut bystander = b.websocket().await;
    bystander.join("bob", "den").await;

    let reply = a.api("disconnect", json!({"name": "mallory", "reason": "banned"}));
    assert_eq!(reply, json!({"name": "mallory", "disconnected": 2}), "one on each node");
    let close = loop {
        let message = tokio::time::timeout(PATIENCE, here.ws.next()).await.unwrap().unwrap().unwrap();
        if let Message::Close(frame) = message {
            break frame;
        }
    };
    assert!(matches!(&close, Some(f) if u16::from(f.code) == 1008 && f.reason == "banned"), "{close:?}");
    // SockJS says it in its close frame.
    loop {
        let message = tokio::time::timeout(PATIENCE, there.ws.next()).await.unwrap().unwrap().unwrap();
        if let Message::Text(text) = &message
            && text.starts_with('c')
        {
            assert_eq!(text.as_str(), r#"c[1008,"banned"]"#);
            break;
        }
    }
    assert_eq!(bystander.until("event", "leave").await, json!({"event": "leave", "name": "mallory", "room": "den"}));
}

/// An IRC client on a raw socket, reading whole lines.
struct Irc {
    lines: tokio::io::Lines<tokio::io::BufReader<tokio::net::tcp::OwnedReadHalf>>,
    write: tokio::net::tcp::OwnedWriteHalf,
}

impl Irc {
    /// Registers `nick` on `node`, asking for `caps`.
    async fn register(node: &Node, nick: &str, caps: &str) -> Irc {
        use tokio::io::AsyncBufReadExt;
        let (read, write) = TcpStream::connect(node.irc.as_deref().unwrap()).await.unwrap().into_split();
        let mut irc = Irc { lines: tokio::io::BufReader::new(read).lines(), write };
        irc.send(&format!("CAP REQ :{caps}\r\nNICK {nick}\r\nUSER u 0 * :U\r\nCAP END")).await;
        irc.until(" 422 ").await;
        irc
    }

    async fn send(&mut self, line: &str) {
        use tokio::io::AsyncWriteExt;
        self.write.write_all(format!("{line}\r\n").as_bytes()).await.unwrap();
    }

    async fn line(&mut self) -> String {
        tokio::time::timeout(PATIENCE, self.lines.next_line()).await.expect("a line in time").unwrap().expect("the server closed the connection")
    }

    /// Reads past lines until one holding `needle`, which it returns.
    async fn until(&mut self, needle: &str) -> String {
        loop {
            let line = self.line().await;
            if line.contains(needle) {
                return line;
            }
        }
    }
}

through_each_broker!(
    a_tagmsg_reaches_the_irc_users_of_a_channel_on_another_node_through:
    a_tagmsg_reaches_the_irc_users_of_a_channel_on_another_node,
    a_tagmsg_reaches_the_irc_users_of_a_channel_on_another_node_over_the_link
);

async fn a_tagmsg_reaches_the_irc_users_of_a_channel_on_another_node_through(sharing: &impl Sharing) {
    let a = Node::with_args(sharing, &["--irc-listen", "127.0.0.1:0"]);
    let b = Node::with_args(sharing, &["--irc-listen", "127.0.0.1:0"]);
    let mut ann = Irc::register(&a, "ann", "message-tags").await;
    ann.send("JOIN #lobby").await;
    ann.until(" 366 ").await;
    let mut bob = Irc::register(&b, "bob", "message-tags").await;
    let mut cy = Irc::register(&b, "cy", "").await;
    for irc in [&mut bob, &mut cy] {
        irc.send("JOIN #lobby").await;
        irc.until(" 366 ").await;
    }
    ann.until(":cy!cy@localhost JOIN #lobby").await;
    // ann was in bob's NAMES: her join, even one the broker delivers to
    // node B after B read the names, is not told again.
    loop {
        let line = bob.line().await;
        assert!(!line.contains(":ann!ann@localhost JOIN"), "{line}");
        if line.contains(":cy!cy@localhost JOIN #lobby") {
            break;
        }
    }

    ann.send("@+typing=active TAGMSG #lobby").await;
    ann.send("PRIVMSG #lobby :hi").await;
    let typing = bob.line().await;
    let (tags, rest) = typing.split_once(' ').unwrap();
    assert!(tags.starts_with("@msgid=") && tags.ends_with(";+typing=active"), "{typing}");
    assert_eq!(rest, ":ann!ann@localhost TAGMSG #lobby");
    assert!(bob.line().await.ends_with(" :ann!ann@localhost PRIVMSG #lobby :hi"));
    // cy reads no tags: no TAGMSG before the message.
    loop {
        let line = cy.line().await;
        assert!(!line.contains("TAGMSG") && !line.contains(":ann!ann@localhost JOIN"), "{line}");
        if line.contains("PRIVMSG") {
            assert_eq!(line, ":ann!ann@localhost PRIVMSG #lobby :hi");
            break;
        }
    }
    // The channel's topic, set on node A by its operator, is the room's on
    // node B too.
    ann.send("TOPIC #lobby :from A").await;
    assert_eq!(cy.line().await, ":ann!ann@localhost TOPIC #lobby :from A");
    cy.send("TOPIC #lobby").await;
    assert_eq!(cy.until(" 332 ").await, ":localhost 332 cy #lobby :from A");
    // A channel node B follows only once cy joins it: its topic, set
    // before, comes with what B reads of the room.
    ann.send("JOIN #quiet").await;
    ann.until(" 366 ").await;
    ann.send("TOPIC #quiet :set before").await;
    ann.until("TOPIC #quiet").await;
    cy.send("JOIN #quiet").await;
    assert_eq!(cy.until(" 332 ").await, ":localhost 332 cy #quiet :set before");
}

/// Two nodes serving XMPP on one PostgreSQL, which holds the accounts
/// alice and bob (password `pw`); each has heard the other.
async fn two_xmpp_nodes(sharing: &impl Sharing) -> (store::PostgresServer, Node, Node) {
    two_xmpp_nodes_with(sharing, &[]).await
}

/// As `two_xmpp_nodes`, each node also given `extra` arguments.
async fn two_xmpp_nodes_with(sharing: &impl Sharing, extra: &[&str]) -> (store::PostgresServer, Node, Node) {
    let postgres = store::PostgresServer::start().unwrap_or_else(|e| panic!("{e}"));
    for name in ["alice", "bob"] {
        let mut add = Command::new(BIN).args(["account", "--store", "postgres", "--database", &postgres.url, "add", name]).stdin(Stdio::piped()).spawn().unwrap();
        writeln!(add.stdin.take().unwrap(), "pw").unwrap();
        assert!(add.wait().unwrap().success(), "{name} added");
    }
    let mut args = vec!["--xmpp-listen", "127.0.0.1:0", "--xmpp-plain-unencrypted", "true", "--store", "postgres", "--database", &postgres.url, "--api-key", API_KEY];
    args.extend(extra);
    let (a, b) = (Node::with_args(sharing, &args), Node::with_args(sharing, &args));
    a.await_nodes(2).await;
    b.await_nodes(2).await;
    (postgres, a, b)
}

through_each_broker!(
    a_room_owner_on_one_node_bans_an_occupant_on_another_through:
    a_room_owner_on_one_node_bans_an_occupant_on_another,
    a_room_owner_on_one_node_bans_an_occupant_on_another_over_the_link
);

/// A MUC room's owner on the first node; an occupant on the second
/// exchanges private messages with her, is kicked and comes back, sees
/// the subject the owner sets, is taken out when the owner bans him (301),
/// and cannot come back, nor enter another room of hers that bans him
/// where his node held nothing of it; the room's destruction reaches the
/// second node.
async fn a_room_owner_on_one_node_bans_an_occupant_on_another_through(sharing: &impl Sharing) {
    use xmpp_client::Client;
    let (_postgres, a, b) = two_xmpp_nodes(sharing).await;
    let at = |node: &Node| node.xmpp.as_deref().unwrap().parse().unwrap();
    let mut alice = Client::login(at(&a), "alice").await;
    let mut bob = Client::login(at(&b), "bob").await;
    let join = |nick: &str| format!("<presence to='den@conference.localhost/{nick}'><x xmlns='http://jabber.org/protocol/muc'/></presence>");
    let from = |nick: &str| format!("den@conference.localhost/{nick}");
    // alice makes the room, and owns it once she has configured it.
    alice.send(&join("alice")).await;
    alice.until(|e| e.name == "presence" && e.get("from") == Some(from("alice").as_str())).await;
    let configure = "<iq type='set' id='cfg' to='den@conference.localhost'><query xmlns='http://jabber.org/protocol/muc#owner'><x xmlns='jabber:x:data' type='submit'/></query></iq>";
    assert_eq!(alice.ask(configure, "cfg").await.get("type"), Some("result"));
    let mut carol = b.websocket().await;
    carol.join("carol", "den").await;
    bob.send(&join("bob")).await;
    bob.until(|e| e.name == "presence" && e.get("from") == Some(from("bob").as_str())).await;
    alice.until(|e| e.name == "presence" && e.get("from") == Some(from("bob").as_str())).await;

    // Private messages between occupants on the two nodes.
    alice.send("<message to='den@conference.localhost/bob' type='chat'><body>psst</body></message>").await;
    let private = bob.until(|e| e.name == "message" && e.find("body", "jabber:client").is_some()).await;
    assert_eq!((private.get("from"), private.get("to")), (Some(from("alice").as_str()), Some(bob.jid.as_str())), "{private:?}");
    bob.send("<message to='den@conference.localhost/alice' type='chat'><body>yes?</body></message>").await;
    let back = alice.until(|e| e.name == "message" && e.find("body", "jabber:client").is_some()).await;
    assert_eq!((back.get("from"), back.get("to")), (Some(from("bob").as_str()), Some(alice.jid.as_str())), "{back:?}");
    alice.send("<message to='den@conference.localhost/nobody' type='chat' id='pm'><body>?</body></message>").await;
    let nobody = alice.until(|e| e.get("id") == Some("pm")).await;
    assert_eq!(nobody.get("type"), Some("error"));

    // A kick from the owner's node takes bob out on his; he may come back.
    let codes = |presence: &wire::xmpp::Element| -> Vec<String> {
        presence.find("x", "http://jabber.org/protocol/muc#user").map(|x| x.elements().filter_map(|s| s.get("code").map(str::to_owned)).collect()).unwrap_or_default()
    };
    let kick = "<iq type='set' id='kick' to='den@conference.localhost'><query xmlns='http://jabber.org/protocol/muc#admin'><item nick='bob' role='none'/></query></iq>";
    let kicked = alice.ask(kick, "kick").await;
    assert_eq!(kicked.get("type"), Some("result"), "{kicked:?}");
    let out = bob.until(|e| e.name == "presence" && e.get("from") == Some(from("bob").as_str())).await;
    assert_eq!((out.get("type"), codes(&out)), (Some("unavailable"), vec!["110".to_owned(), "307".to_owned()]), "{out:?}");
    assert_eq!(carol.until("event", "leave").await["name"], "bob");
    bob.send(&join("bob")).await;
    let back = bob.until(|e| e.name == "presence" && e.get("from") == Some(from("bob").as_str())).await;
    assert_eq!(back.get("type"), None, "{back:?}");
    alice.until(|e| e.name == "presence" && e.get("from") == Some(from("bob").as_str()) && e.get("type").is_none()).await;
    let nobody = alice.ask(&kick.replace("'bob'", "'nobody'"), "kick").await;
    assert_eq!(nobody.get("type"), Some("error"));

    alice.send("<message to='den@conference.localhost' type='groupchat'><subject>plans</subject></message>").await;
    // (Past the empty subject of his entry.)
    let subject = bob.until(|e| e.name == "message" && e.find("subject", "jabber:client").is_some_and(|s| !s.text_content().is_empty())).await;
    assert_eq!((subject.get("from"), subject.find("subject", "jabber:client").map(|s| s.text_content()).as_deref()), (Some(from("alice").as_str()), Some("plans")));

    let ban = "<iq type='set' id='ban' to='den@conference.localhost'><query xmlns='http://jabber.org/protocol/muc#admin'><item affiliation='outcast' jid='bob@localhost'/></query></iq>";
    let banned = alice.ask(ban, "ban").await;
    assert_eq!(banned.get("type"), Some("result"), "{banned:?}");
    let out = bob.until(|e| e.name == "presence" && e.get("from") == Some(from("bob").as_str())).await;
    assert_eq!((out.get("type"), codes(&out)), (Some("unavailable"), vec!["110".to_owned(), "301".to_owned()]), "{out:?}");
    assert_eq!(carol.until("event", "leave").await["name"], "bob");
    bob.send(&join("bob")).await;
    let refused = bob.until(|e| e.name == "presence" && e.get("from") == Some(from("bob").as_str())).await;
    assert_eq!(refused.get("type"), Some("error"), "banned on every node: {refused:?}");
    assert!(refused.find("error", "jabber:client").and_then(|e| e.find("forbidden", "urn:ietf:params:xml:ns:xmpp-stanzas")).is_some(), "{refused:?}");

    // A room of alice's nobody on bob's node is in, where she bans him
    // first: his node asks hers for it as he comes, and keeps him out.
    alice.send("<presence to='vault@conference.localhost/alice'><x xmlns='http://jabber.org/protocol/muc'/></presence>").await;
    alice.until(|e| e.name == "presence" && e.get("from") == Some("vault@conference.localhost/alice")).await;
    assert_eq!(alice.ask(&configure.replace("den@", "vault@"), "cfg").await.get("type"), Some("result"));
    assert_eq!(alice.ask(&ban.replace("den@", "vault@"), "ban").await.get("type"), Some("result"));
    bob.send("<presence to='vault@conference.localhost/bob'><x xmlns='http://jabber.org/protocol/muc'/></presence>").await;
    let kept_out = bob.until(|e| e.name == "presence" && e.get("from") == Some("vault@conference.localhost/bob")).await;
    assert_eq!(kept_out.get("type"), Some("error"), "{kept_out:?}");

    // Another room of alice's, bob in it from his node; she destroys it.
    alice.send("<presence to='lab@conference.localhost/alice'><x xmlns='http://jabber.org/protocol/muc'/></presence>").await;
    alice.until(|e| e.name == "presence" && e.get("from") == Some("lab@conference.localhost/alice")).await;
    assert_eq!(alice.ask(&configure.replace("den@", "lab@"), "cfg").await.get("type"), Some("result"));
    bob.send("<presence to='lab@conference.localhost/bob'><x xmlns='http://jabber.org/protocol/muc'/></presence>").await;
    bob.until(|e| e.name == "presence" && e.get("from") == Some("lab@conference.localhost/bob")).await;
    alice.until(|e| e.name == "presence" && e.get("from") == Some("lab@conference.localhost/bob")).await;
    let destroy = "<iq type='set' id='d' to='lab@conference.localhost'><query xmlns='http://jabber.org/protocol/muc#owner'><destroy><reason>done</reason></destroy></query></iq>";
    assert_eq!(alice.ask(destroy, "d").await.get("type"), Some("result"));
    let ended = bob.until(|e| e.name == "presence" && e.get("from") == Some("lab@conference.localhost/bob")).await;
    let told = ended.find("x", "http://jabber.org/protocol/muc#user").and_then(|x| x.find("destroy", "http://jabber.org/protocol/muc#user"));
    assert_eq!((ended.get("type"), told.and_then(|d| d.find("reason", "http://jabber.org/protocol/muc#user")).map(|r| r.text_content()).as_deref()), (Some("unavailable"), Some("done")), "{ended:?}");
}

through_each_broker!(
    xmpp_users_on_two_nodes_reach_each_other_through:
    xmpp_users_on_two_nodes_reach_each_other,
    xmpp_users_on_two_nodes_reach_each_other_over_the_link
);

/// Two nodes on one PostgreSQL (accounts and rosters shared), alice on the
/// first and bob on the second: messages, iqs, subscriptions and presence
/// cross between them, a probe finds bob's presence from a new session on
/// the first node, a message to bob once he has gone is kept for him, and
/// a subscription ended takes the presence of his resources on both nodes.
async fn xmpp_users_on_two_nodes_reach_each_other_through(sharing: &impl Sharing) {
    use xmpp_client::Client;
    let (_postgres, a, b) = two_xmpp_nodes(sharing).await;
    let at = |node: &Node| node.xmpp.as_deref().unwrap().parse().unwrap();
    let mut alice = Client::login(at(&a), "alice").await;
    let mut bob = Client::login(at(&b), "bob").await;
    alice.send("<presence/>").await;
    bob.send("<presence/>").await;
    let body = |e: &wire::xmpp::Element| e.find("body", "jabber:client").map(|b| b.text_content());

    // A message to a bare JID that only another node holds.
    alice.send("<message to='bob@localhost' type='chat' id='m1'><body>hello from A</body></message>").await;
    let got = bob.until(|e| e.name == "message").await;
    assert_eq!((got.get("from"), body(&got).as_deref()), (Some(alice.jid.as_str()), Some("hello from A")), "{got:?}");
    // An iq to a full JID there, and its answer back.
    alice.send(&format!("<iq type='get' id='v1' to='{}'><query xmlns='jabber:iq:version'/></iq>", bob.jid)).await;
    let asked = bob.until(|e| e.name == "iq").await;
    assert_eq!((asked.get("id"), asked.get("from")), (Some("v1"), Some(alice.jid.as_str())));
    bob.send(&format!("<iq type='result' id='v1' to='{}'><query xmlns='jabber:iq:version'><name>b</name></query></iq>", alice.jid)).await;
    let answered = alice.until(|e| e.get("id") == Some("v1")).await;
    assert_eq!((answered.get("type"), answered.get("from")), (Some("result"), Some(bob.jid.as_str())));

    // alice asks to see bob's presence; bob approves on his node.
    alice.send("<presence to='bob@localhost' type='subscribe'/>").await;
    let request = bob.until(|e| e.name == "presence").await;
    assert_eq!((request.get("type"), request.get("from")), (Some("subscribe"), Some("alice@localhost")));
    bob.send("<presence to='alice@localhost' type='subscribed'/>").await;
    let approved = alice.until(|e| e.name == "presence" && e.get("type") == Some("subscribed")).await;
    assert_eq!(approved.get("from"), Some("bob@localhost"));
    let current = alice.until(|e| e.name == "presence" && e.get("type").is_none()).await;
    assert_eq!(current.get("from"), Some(bob.jid.as_str()), "bob's presence once approved");
    // A change of bob's presence reaches alice on the other node.
    bob.send("<presence><show>away</show></presence>").await;
    let away = alice.until(|e| e.name == "presence" && e.get("from") == Some(bob.jid.as_str())).await;
    assert_eq!(away.find("show", "jabber:client").map(|s| s.text_content()).as_deref(), Some("away"));
    // alice's second resource, on the first node, learns bob's presence
    // from the second node by its probe.
    let mut desk = Client::login(at(&a), "alice").await;
    desk.send("<presence/>").await;
    let probed = desk.until(|e| e.name == "presence" && e.get("from") == Some(bob.jid.as_str())).await;
    assert_eq!(probed.find("show", "jabber:client").map(|s| s.text_content()).as_deref(), Some("away"));

    // bob goes; alice's next message is kept for him, and his next login,
    // on alice's node, gets it.
    bob.send("</stream:stream>").await;
    let gone = alice.until(|e| e.name == "presence" && e.get("from") == Some(bob.jid.as_str())).await;
    assert_eq!(gone.get("type"), Some("unavailable"));
    alice.send("<message to='bob@localhost' type='chat' id='m2'><body>while you were out</body></message>").await;
    let mut again = Client::login(at(&a), "bob").await;
    again.send("<presence/>").await;
    let kept = again.until(|e| e.name == "message").await;
    assert_eq!(body(&kept).as_deref(), Some("while you were out"));
    assert!(kept.find("delay", "urn:xmpp:delay").is_some(), "{kept:?}");

    // bob on both nodes; alice stops seeing him: each of his resources,
    // on either node, goes unavailable for her.
    let mut there = Client::login(at(&b), "bob").await;
    there.send("<presence/>").await;
    alice.until(|e| e.name == "presence" && e.get("from") == Some(there.jid.as_str())).await;
    alice.send("<presence to='bob@localhost' type='unsubscribe'/>").await;
    let mut gone = Vec::new();
    while gone.len() < 2 {
        let presence = alice.until(|e| e.name == "presence" && e.get("type") == Some("unavailable")).await;
        gone.push(presence.get("from").unwrap_or_default().to_owned());
    }
    gone.sort();
    let mut both = vec![again.jid.clone(), there.jid.clone()];
    both.sort();
    assert_eq!(gone, both);
}

/// A message kept offline for bob while he came online on another node
/// (the node that kept it asked while he was not yet there) is given to
/// him when that node says it kept one. The word is sent here as a node
/// sends it, on NATS's `sb.ctl.deliver`, and the message put in the store
/// as the node that kept it would have.
#[tokio::test]
async fn a_message_kept_while_the_user_came_online_on_another_node_reaches_him_there() {
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt};
    use xmpp_client::Client;
    let nats = Nats::start();
    let (postgres, _a, b) = two_xmpp_nodes(&nats).await;
    let mut bob = Client::login(b.xmpp.as_deref().unwrap().parse().unwrap(), "bob").await;
    bob.send("<presence/>").await;
    // Available once the presence before it was taken.
    assert_eq!(bob.ask("<iq type='get' id='r'><query xmlns='jabber:iq:roster'/></iq>", "r").await.get("type"), Some("result"));
    let kept = r#"<message xmlns="jabber:client" from="alice@localhost/desk" to="bob@localhost" type="chat"><body>kept for you</body></message>"#;
    let insert = format!("INSERT INTO offline_message (owner, message) VALUES ('bob@localhost', '{kept}')");
    let psql = Command::new("psql").args([postgres.url.as_str(), "-q", "-c", &insert]).status().expect("psql, from Debian's postgresql");
    assert!(psql.success());
    let body = json!({"node": "elsewhere", "to": ["bob@localhost"], "body": "<kept xmlns='urn:switchboard:offline-kept'/>"}).to_string();
    let (read, mut write) = TcpStream::connect(("127.0.0.1", nats.port)).await.unwrap().into_split();
    let mut read = tokio::io::BufReader::new(read);
    let mut info = String::new();
    read.read_line(&mut info).await.unwrap();
    assert!(info.starts_with("INFO "), "{info}");
    write.write_all(format!("CONNECT {{\"verbose\":false}}\r\nPUB sb.ctl.deliver {}\r\n{body}\r\nPING\r\n", body.len()).as_bytes()).await.unwrap();
    let mut pong = String::new();
    while !pong.starts_with("PONG") {
        pong.clear();
        read.read_line(&mut pong).await.unwrap();
    }
    let got = bob.until(|e| e.name == "message").await;
    assert_eq!(got.find("body", "jabber:client").map(|b| b.text_content()).as_deref(), Some("kept for you"));
}

through_each_broker!(
    the_account_of_a_member_on_one_node_is_shown_on_another_through:
    the_account_of_a_member_on_one_node_is_shown_on_another,
    the_account_of_a_member_on_one_node_is_shown_on_another_over_the_link
);

/// IRCv3 across nodes: what an IRC user logged in to an account (SASL)
/// does on one node carries the account to the IRC clients of another
/// that asked for account-tag; a multiline message keeps its lines as the
/// sender cut them there, and its labeled echo comes back through the
/// broker with the label.
async fn the_account_of_a_member_on_one_node_is_shown_on_another_through(sharing: &impl Sharing) {
    let (_postgres, a, b) = two_xmpp_nodes_with(sharing, &["--irc-listen", "127.0.0.1:0"]).await;
    let mut bob = Irc::register(&b, "bob", "account-tag batch draft/multiline").await;
    bob.send("JOIN #lobby").await;
    bob.until(" 366 ").await;
    let mut ann = Irc::register(&a, "ann", "labeled-response batch echo-message draft/multiline").await;
    // SASL PLAIN after registration, as alice (password `pw`): base64 of "\0alice\0pw".
    ann.send("AUTHENTICATE PLAIN").await;
    ann.until("AUTHENTICATE +").await;
    ann.send("AUTHENTICATE AGFsaWNlAHB3").await;
    ann.until(" 903 ").await;
    ann.send("JOIN #lobby").await;
    ann.until(" 366 ").await;
    assert_eq!(bob.line().await, "@account=alice :ann!ann@localhost JOIN #lobby");
    ann.send("PRIVMSG #lobby :hi").await;
    assert_eq!(bob.line().await, "@account=alice :ann!ann@localhost PRIVMSG #lobby :hi");
    ann.until("PRIVMSG #lobby :hi").await;
    // A multiline message, labeled: its lines as ann cut them on the other
    // node too, and the label on ann's echo, which came back through the
    // broker.
    ann.send("@label=ml BATCH +1 draft/multiline #lobby").await;
    ann.send("@batch=1 PRIVMSG #lobby :how are ").await;
    ann.send("@batch=1;draft/multiline-concat PRIVMSG #lobby :you?").await;
    ann.send("BATCH -1").await;
    let start = bob.line().await;
    let reference = start.split(' ').nth(3).unwrap().strip_prefix('+').unwrap().to_owned();
    assert_eq!(start, format!("@account=alice :ann!ann@localhost BATCH +{reference} draft/multiline #lobby"));
    assert_eq!(bob.line().await, format!("@batch={reference} :ann!ann@localhost PRIVMSG #lobby :how are "));
    assert_eq!(bob.line().await, format!("@batch={reference};draft/multiline-concat :ann!ann@localhost PRIVMSG #lobby :you?"));
    assert_eq!(bob.line().await, format!(":ann!ann@localhost BATCH -{reference}"));
    assert_eq!(ann.line().await, format!("@label=ml :ann!ann@localhost BATCH +{reference} draft/multiline #lobby"));
}
