//! A server on port 0 and the clients the tests drive it with.

#![allow(dead_code)] // each test module uses a different part of this

mod raw;

pub use raw::{Raw, Reply, request};

use std::net::SocketAddr;
use std::time::Duration;

use futures_util::{SinkExt, StreamExt};
use server::{Args, Config, SockjsOptions};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::oneshot;
use tokio::task::JoinHandle;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::protocol::CloseFrame;
use tokio_tungstenite::{MaybeTlsStream, WebSocketStream};

/// Longest any single await in a test may take before the test fails, so a
/// bug shows as a clear failure instead of a hung suite.
pub const PATIENCE: Duration = Duration::from_secs(20);

/// A running server.
pub struct TestServer {
    pub addr: SocketAddr,
    /// Where XMPP clients connect, when started with [`TestServer::with_xmpp`].
    pub xmpp: Option<SocketAddr>,
    /// Where they connect with direct TLS, when the config has a certificate.
    pub xmpp_tls: Option<SocketAddr>,
    /// Where IRC clients connect.
    pub irc: SocketAddr,
    /// Where they connect with TLS, when `with`'s config has a certificate.
    pub irc_tls: Option<SocketAddr>,
    stop: Option<oneshot::Sender<()>>,
    task: JoinHandle<Result<(), server::Error>>,
}

impl TestServer {
    pub async fn start() -> TestServer {
        TestServer::with(Config::default()).await
    }

    /// A server with `config`, serving no XMPP (a config resolved as the
    /// command line resolves it would listen on 5222; see `with_xmpp`) and
    /// IRC on a port of its own,
    /// keeping nothing beyond itself (`--store memory`).
    pub async fn with(config: Config) -> TestServer {
        TestServer::with_own(config, None).await
    }

    /// As `with`, with the server API on `api` (`--api-listen`).
    pub async fn with_api(config: Config, api: TcpListener) -> TestServer {
        TestServer::with_own(config, Some(api)).await
    }

    async fn with_own(config: Config, api: Option<TcpListener>) -> TestServer {
        let mut config = config;
        config.store.kind = server::StoreKind::Memory;
        config.xmpp.listen = server::Listen::Off;
        config.xmpp.tls_listen = server::Listen::Off;
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let irc = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let (addr, irc_addr) = (listener.local_addr().unwrap(), irc.local_addr().unwrap());
        let irc_tls = match config.tls {
            Some(_) => Some(TcpListener::bind("127.0.0.1:0").await.unwrap()),
            None => None,
        };
        let irc_tls_addr = irc_tls.as_ref().map(|l| l.local_addr().unwrap());
        let (stop, stopped) = oneshot::channel::<()>();
        let listeners = server::Listeners { irc: Some(irc), irc_tls, api, ..server::Listeners::default() };
        let task = tokio::spawn(server::serve_with(listener, listeners, config, async move {
            let _ = stopped.await;
        }));
        TestServer { addr, xmpp: None, xmpp_tls: None, irc: irc_addr, irc_tls: irc_tls_addr, stop: Some(stop), task }
    }

    /// A server that also serves XMPP on a port of its own, keeping
    /// nothing beyond itself (`--store memory`).
    pub async fn with_xmpp(mut config: Config) -> TestServer {
        config.store.kind = server::StoreKind::Memory;
        TestServer::with_xmpp_kept(config).await
    }

    /// A server that serves XMPP and keeps what `config.store` says.
    pub async fn with_xmpp_kept(config: Config) -> TestServer {
        TestServer::with_listeners(config, None, None, None).await
    }

    /// As `with_xmpp_kept`, hosting its rooms and users for other nodes
    /// (theirs `config.broker.url` = `node://` this listener's address) on
    /// `broker`.
    pub async fn host_kept(config: Config, broker: TcpListener) -> TestServer {
        TestServer::with_broker(config, None, None, None, Some(broker)).await
    }

    /// A server that serves XMPP, keeping nothing beyond itself, and
    /// federates with other servers on `s2s` (it needs `config.tls`).
    pub async fn federated(config: Config, s2s: TcpListener) -> TestServer {
        TestServer::federated_on(config, Some(s2s), None).await
    }

    /// As `federated`, with other servers on `s2s` (STARTTLS) and `s2s_tls`
    /// (TLS from the first byte), either or both.
    pub async fn federated_on(mut config: Config, s2s: Option<TcpListener>, s2s_tls: Option<TcpListener>) -> TestServer {
        config.store.kind = server::StoreKind::Memory;
        TestServer::with_listeners(config, s2s, s2s_tls, None).await
    }

    /// As `federated`, hosting its rooms and users for other nodes (theirs
    /// `config.broker.url` = `node://` this listener's address) on `broker`.
    pub async fn federated_host(mut config: Config, s2s: TcpListener, broker: TcpListener) -> TestServer {
        config.store.kind = server::StoreKind::Memory;
        TestServer::with_broker(config, Some(s2s), None, None, Some(broker)).await
    }

    /// A server that federates only with the peers `config.zero_peers`
    /// names, whose zero-handshake connections it takes on `zero`.
    pub async fn zero_federated(mut config: Config, zero: TcpListener) -> TestServer {
        config.store.kind = server::StoreKind::Memory;
        TestServer::with_listeners(config, None, None, Some(zero)).await
    }

    async fn with_listeners(config: Config, s2s: Option<TcpListener>, s2s_tls: Option<TcpListener>, s2s_zero: Option<TcpListener>) -> TestServer {
        TestServer::with_broker(config, s2s, s2s_tls, s2s_zero, None).await
    }

    async fn with_broker(config: Config, s2s: Option<TcpListener>, s2s_tls: Option<TcpListener>, s2s_zero: Option<TcpListener>, broker: Option<TcpListener>) -> TestServer {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let xmpp = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let direct_tls = match config.tls {
            Some(_) => Some(TcpListener::bind("127.0.0.1:0").await.unwrap()),
            None => None,
        };
        let irc = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let (addr, xmpp_addr, irc_addr) = (listener.local_addr().unwrap(), xmpp.local_addr().unwrap(), irc.local_addr().unwrap());
        let xmpp_tls = direct_tls.as_ref().map(|l| l.local_addr().unwrap());
        let (stop, stopped) = oneshot::channel::<()>();
        let listeners = server::Listeners { xmpp: Some(xmpp), xmpp_tls: direct_tls, s2s, s2s_tls, s2s_zero, irc: Some(irc), irc_tls: None, api: None, broker };
        let task = tokio::spawn(server::serve_with(listener, listeners, config, async move {
            let _ = stopped.await;
        }));
        TestServer { addr, xmpp: Some(xmpp_addr), xmpp_tls, irc: irc_addr, irc_tls: None, stop: Some(stop), task }
    }

    pub fn url(&self, path: &str) -> String {
        format!("ws://{}{path}", self.addr)
    }

    pub async fn ws(&self, path: &str) -> Ws {
        Ws::connect(&self.url(path)).await
    }

    /// A chat-app client over WebSocket, in `room` as `name`, past its
    /// `members` and `join` events.
    pub async fn chat_member(&self, name: &str, room: &str) -> Ws {
        let mut ws = self.ws("/chat/websocket").await;
        ws.send(&serde_json::json!({"name": name, "room": room}).to_string()).await;
        assert_eq!(ws.recv_json().await["event"], "members");
        assert_eq!(ws.recv_json().await["event"], "join");
        ws
    }

    /// Starts the shutdown and returns the server's task.
    pub fn shutdown(mut self) -> JoinHandle<Result<(), server::Error>> {
        let _ = self.stop.take().unwrap().send(());
        self.task
    }

    /// GET over a fresh HTTP/1.1 connection: (status, body).
    pub async fn get(&self, path: &str) -> (u16, String) {
        let mut client = HttpClient::connect(self.addr).await;
        client.get(path).await
    }

    /// One HTTP/1.1 request on a fresh connection, read whole.
    pub async fn http(&self, method: &str, path: &str, headers: &[(&str, &str)], body: &[u8]) -> Reply {
        raw::request(self.addr, method, path, headers, body).await
    }

    /// A WebSocket handshake on a raw socket, for exact bytes and clients
    /// that misbehave.
    pub async fn raw_ws(&self, path: &str) -> TcpStream {
        self.raw_ws_with(path, "").await.0
    }

    /// A raw WebSocket connection whose handshake adds `headers` (each line
    /// ending in CRLF), with the 101 response's head.
    pub async fn raw_ws_with(&self, path: &str, headers: &str) -> (TcpStream, String) {
        let mut stream = TcpStream::connect(self.addr).await.unwrap();
        let req = format!(
            "GET {path} HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
             Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n{headers}\r\n"
        );
        stream.write_all(req.as_bytes()).await.unwrap();
        let mut head = Vec::new();
        while !head.ends_with(b"\r\n\r\n") {
            let mut byte = [0u8; 1];
            stream.read_exact(&mut byte).await.unwrap();
            head.push(byte[0]);
        }
        assert!(head.starts_with(b"HTTP/1.1 101"), "{}", String::from_utf8_lossy(&head));
        (stream, String::from_utf8_lossy(&head).into_owned())
    }

    /// A fresh raw connection, for exact bytes and HTTP/1.0.
    pub async fn raw(&self) -> Raw {
        Raw::connect(self.addr).await
    }

    /// The value of one metric line, e.g.
    /// `switchboard_slow_consumer_disconnects_total{app="broadcast",transport="websocket"}`.
    pub async fn metric(&self, series: &str) -> Option<f64> {
        let (_, text) = self.get("/metrics").await;
        text.lines()
            .find_map(|l| l.strip_prefix(series).and_then(|v| v.trim().parse().ok()))
    }
}

/// A keep-alive HTTP/1.1 client on one connection.
pub struct HttpClient {
    sender: hyper::client::conn::http1::SendRequest<http_body_util::Empty<bytes::Bytes>>,
}

impl HttpClient {
    pub async fn connect(addr: SocketAddr) -> HttpClient {
        let stream = TcpStream::connect(addr).await.unwrap();
        let (sender, conn) =
            hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(stream)).await.unwrap();
        tokio::spawn(conn);
        HttpClient { sender }
    }

    pub async fn get(&mut self, path: &str) -> (u16, String) {
        use http_body_util::BodyExt;
        let req = hyper::Request::get(path)
            .header("host", "localhost")
            .body(http_body_util::Empty::new())
            .unwrap();
        let res = self.sender.send_request(req).await.unwrap();
        let status = res.status().as_u16();
        let body = res.into_body().collect().await.unwrap().to_bytes();
        (status, String::from_utf8(body.to_vec()).unwrap())
    }
}

/// A WebSocket client with timeouts on every receive.
pub struct Ws(pub WebSocketStream<MaybeTlsStream<TcpStream>>);

impl Ws {
    pub async fn connect(url: &str) -> Ws {
        let (ws, _) = tokio_tungstenite::connect_async(url).await.unwrap();
        Ws(ws)
    }

    pub async fn send(&mut self, text: &str) {
        self.0.send(Message::text(text)).await.unwrap();
    }

    pub async fn send_raw(&mut self, message: Message) {
        self.0.send(message).await.unwrap();
    }

    /// The next text message; panics on anything else.
    pub async fn recv(&mut self) -> String {
        match self.next().await {
            Message::Text(t) => t.to_string(),
            other => panic!("expected a text message, got {other:?}"),
        }
    }

    /// The next message that is not a ping or pong.
    pub async fn next(&mut self) -> Message {
        loop {
            let message = tokio::time::timeout(PATIENCE, self.0.next())
                .await
                .expect("timed out waiting for a message")
                .expect("connection ended")
                .expect("websocket error");
            if !matches!(message, Message::Ping(_) | Message::Pong(_)) {
                return message;
            }
        }
    }

    /// The next chat event, without the positions messages and the
    /// members list carry (tests of other things need not know them).
    pub async fn recv_json(&mut self) -> serde_json::Value {
        json(&self.recv().await)
    }

    /// The next chat event whole, positions included (`recovery.rs`).
    pub async fn recv_whole(&mut self) -> serde_json::Value {
        serde_json::from_str(&self.recv().await).unwrap()
    }

    /// Reads until the server's close frame, skipping text, and returns it.
    pub async fn closed(&mut self) -> CloseFrame {
        loop {
            match self.next().await {
                Message::Close(Some(frame)) => return frame,
                Message::Close(None) => panic!("close without a code"),
                _ => {}
            }
        }
    }
}

/// A chat event, or any JSON, without the `offset` and `epoch` of the
/// positions in a room's history that chat messages (also inside a
/// history event) and the members list carry; `recovery.rs` tests them.
pub fn json(text: &str) -> serde_json::Value {
    let mut value: serde_json::Value = serde_json::from_str(text).unwrap();
    without_positions(&mut value);
    value
}

fn without_positions(value: &mut serde_json::Value) {
    let Some(object) = value.as_object_mut() else { return };
    if object.contains_key("room") {
        object.remove("offset");
        object.remove("epoch");
    }
    if let Some(serde_json::Value::Array(messages)) = object.get_mut("messages") {
        messages.iter_mut().for_each(without_positions);
    }
}

/// The configuration the SockJS protocol suite runs against
/// (conformance/sockjs-protocol.toml: `/echo` with a 4 KiB response limit,
/// `/close`, `/disabled_websocket_echo`, `/cookie_needed_echo`), plus the
/// default `/broadcast` and `/chat`, with `tune` applied to every mount's
/// SockJS options.
pub fn sockjs_config(tune: impl Fn(&mut SockjsOptions)) -> Config {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../conformance/sockjs-protocol.toml");
    let mut config = Config::resolve(&Args { config: Some(path.into()), ..Args::default() }).unwrap();
    config.mounts.extend(
        Config::default().mounts.into_iter().filter(|m| ["/broadcast", "/chat"].contains(&m.prefix.as_str())),
    );
    for mount in &mut config.mounts {
        tune(&mut mount.sockjs);
    }
    config
}

/// A session id no other test uses.
pub fn session_id() -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(0);
    format!("s{}-{}", std::process::id(), NEXT.fetch_add(1, Ordering::Relaxed))
}

/// Retries `attempt` until it gives `Some`, for conditions a test can only
/// observe by asking (a session's expiry); each attempt is a round trip to
/// the server, and the whole wait is bounded by [`PATIENCE`].
pub async fn until<T, F: std::future::Future<Output = Option<T>>>(mut attempt: impl FnMut() -> F) -> T {
    let deadline = tokio::time::Instant::now() + PATIENCE;
    loop {
        if let Some(value) = attempt().await {
            return value;
        }
        assert!(tokio::time::Instant::now() < deadline, "condition not met within {PATIENCE:?}");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// Reads until the server closes the connection; what it sent on the way.
pub async fn read_to_close(stream: &mut TcpStream) -> Vec<u8> {
    let mut all = Vec::new();
    tokio::time::timeout(PATIENCE, async {
        let mut buf = [0u8; 4096];
        loop {
            match stream.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => all.extend_from_slice(&buf[..n]),
            }
        }
    })
    .await
    .expect("the server never closed the connection");
    all
}

/// A TLS client that trusts only `cert` (a test's self-signed certificate).
pub fn tls_connector(cert: &rustls::pki_types::CertificateDer<'static>) -> tokio_rustls::TlsConnector {
    let mut roots = rustls::RootCertStore::empty();
    roots.add(cert.clone()).unwrap();
    let client = rustls::ClientConfig::builder_with_provider(std::sync::Arc::new(rustls::crypto::ring::default_provider()))
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    tokio_rustls::TlsConnector::from(std::sync::Arc::new(client))
}
