//! Small servers the bench is tested against: echo (optionally delaying every reply),
//! count (WebSocket and `GET /count/xhr`), broadcast (optionally slow or lossy) and chat,
//! mounted like `switchboard serve` mounts its apps, speaking its formats (`wire::app`). They exist to make the bench's
//! failure paths happen on purpose; the happy paths also run against the real server.
//! `/echo` also speaks SockJS (every transport), for the bench's SockJS client adapters.
//! `Serve` is the real `switchboard serve`, for exact-count runs.

mod sockjs;

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use bytes::Bytes;
use futures_util::{SinkExt, StreamExt};
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use tokio::net::TcpListener;
use tokio::sync::{Mutex, broadcast, mpsc, oneshot, watch};
use tokio_tungstenite::WebSocketStream;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::handshake::derive_accept_key;
use tokio_tungstenite::tungstenite::protocol::Role;
use tokio_util::sync::CancellationToken;
use wire::app::{ChatEvent, Count, Join, MembersTag, Presence, Say, chat_message_json};

/// How the test server misbehaves.
#[derive(Debug, Clone, Default)]
pub struct Behaviour {
    /// Every echo reply waits this long.
    pub echo_delay: Duration,
    /// The broadcast app handles messages one at a time, each taking this long.
    pub broadcast_cost: Duration,
    /// The broadcast app silently drops the n-th message it receives (1-based).
    pub broadcast_drop_nth: Option<u64>,
    /// `/count/xhr` ends the keep-alive connection (`Connection: close`) after
    /// every n-th answer, as Tomcat does after 100 requests.
    pub count_close_every: Option<u64>,
}

pub struct TestServer {
    pub addr: SocketAddr,
    stop: CancellationToken,
    state: Arc<State>,
}

impl Drop for TestServer {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

impl TestServer {
    pub async fn start(behaviour: Behaviour) -> TestServer {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("addr");
        let stop = CancellationToken::new();
        let state = Arc::new(State::new(behaviour));
        let stopped = stop.clone();
        let serving = state.clone();
        tokio::spawn(async move {
            loop {
                let (stream, _) = tokio::select! {
                    _ = stopped.cancelled() => return,
                    a = listener.accept() => match a { Ok(a) => a, Err(_) => continue },
                };
                let _ = stream.set_nodelay(true);
                let state = serving.clone();
                let stopped = stopped.clone();
                tokio::spawn(async move {
                    let service = hyper::service::service_fn(move |req| handle(req, state.clone(), stopped.clone()));
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(TokioIo::new(stream), service)
                        .with_upgrades()
                        .await;
                });
            }
        });
        TestServer { addr, stop, state }
    }

    /// Waits until the echo app has received `n` messages in all.
    pub async fn echoes_received(&self, n: u64) {
        let mut seen = self.state.echoes.subscribe();
        seen.wait_for(|&count| count >= n).await.expect("the server holds the sender");
    }

    /// The base URL of one app, e.g. `http://127.0.0.1:PORT/echo`.
    pub fn url(&self, app: &str) -> String {
        format!("http://{}/{app}", self.addr)
    }
}

/// The real `switchboard serve` on a free port, stopped when dropped.
pub struct Serve {
    pub addr: SocketAddr,
    /// Its XMPP client port, when started with `with_xmpp`.
    pub xmpp: Option<SocketAddr>,
    /// Its IRC client port, when started with `with_irc`.
    pub irc: Option<SocketAddr>,
    _stop: oneshot::Sender<()>,
}

impl Serve {
    pub async fn start() -> Serve {
        Serve::serving(server::Config::default(), server::Listeners::default()).await
    }

    /// A server with settings of its own.
    pub async fn with(config: server::Config) -> Serve {
        Serve::serving(config, server::Listeners::default()).await
    }

    /// A server that also takes XMPP clients, on a free port of its own.
    pub async fn with_xmpp(config: server::Config) -> Serve {
        let xmpp = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        Serve::serving(config, server::Listeners { xmpp: Some(xmpp), ..server::Listeners::default() }).await
    }

    /// A server that takes XMPP clients on a free port, and with TLS from the first
    /// byte on another (`config` names a certificate): that port too.
    pub async fn with_xmpp_tls(config: server::Config) -> (Serve, SocketAddr) {
        let xmpp = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        // As `switchboard serve` binds it: with --tcp-fast-open, taking data in SYNs.
        let tls = server::listen("127.0.0.1:0".parse().expect("address"), config.server.tcp_fast_open).await.expect("bind");
        let at = tls.local_addr().expect("addr");
        (Serve::serving(config, server::Listeners { xmpp: Some(xmpp), xmpp_tls: Some(tls), ..server::Listeners::default() }).await, at)
    }

    /// A server that takes XMPP clients and other servers (federation) on `s2s`.
    pub async fn federated(config: server::Config, s2s: TcpListener) -> Serve {
        let xmpp = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        Serve::serving(config, server::Listeners { xmpp: Some(xmpp), s2s: Some(s2s), ..server::Listeners::default() }).await
    }

    /// A server that also takes IRC clients, on a free port of its own.
    pub async fn with_irc(config: server::Config) -> Serve {
        let irc = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        Serve::serving(config, server::Listeners { irc: Some(irc), ..server::Listeners::default() }).await
    }

    /// Serves with `config`, keeping nothing beyond itself (`--store memory`).
    async fn serving(mut config: server::Config, listeners: server::Listeners) -> Serve {
        config.store.kind = server::StoreKind::Memory;
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("addr");
        let xmpp = listeners.xmpp.as_ref().map(|l| l.local_addr().expect("addr"));
        let irc = listeners.irc.as_ref().map(|l| l.local_addr().expect("addr"));
        let (stop, stopped) = oneshot::channel::<()>();
        tokio::spawn(server::serve_with(listener, listeners, config, async {
            let _ = stopped.await;
        }));
        Serve { addr, xmpp, irc, _stop: stop }
    }

    /// The `irc://` target of its IRC port.
    pub fn irc_target(&self) -> String {
        format!("irc://{}", self.irc.expect("started with_irc"))
    }

    /// The flags that point XMPP transports at this server: `--target` (its HTTP side)
    /// and `--xmpp-port`.
    pub fn xmpp_target(&self) -> [String; 4] {
        let port = self.xmpp.expect("started with_xmpp").port();
        ["--target".into(), format!("http://{}", self.addr), "--xmpp-port".into(), port.to_string()]
    }

    /// The base URL of one app, e.g. `http://127.0.0.1:PORT/echo`.
    pub fn url(&self, app: &str) -> String {
        format!("http://{}/{app}", self.addr)
    }
}

struct State {
    behaviour: Behaviour,
    broadcast: broadcast::Sender<String>,
    /// Serialises broadcast handling so `broadcast_cost` is a server-wide capacity.
    broadcast_lock: Mutex<()>,
    broadcast_seen: AtomicU64,
    counts_answered: AtomicU64,
    /// Echo messages received so far, for tests that act after the n-th.
    echoes: watch::Sender<u64>,
    chat: Mutex<Vec<ChatMember>>,
    sockjs: sockjs::Sessions,
}

struct ChatMember {
    name: String,
    room: String,
    tx: mpsc::UnboundedSender<String>,
}

impl State {
    fn new(behaviour: Behaviour) -> State {
        State {
            behaviour,
            broadcast: broadcast::channel(1 << 16).0,
            broadcast_lock: Mutex::new(()),
            broadcast_seen: AtomicU64::new(0),
            counts_answered: AtomicU64::new(0),
            echoes: watch::Sender::new(0),
            chat: Mutex::new(Vec::new()),
            sockjs: sockjs::Sessions::default(),
        }
    }
}

type Body = BoxBody<Bytes, Infallible>;

fn respond(status: StatusCode, body: &str) -> Response<Body> {
    let mut r = Response::new(Full::new(Bytes::from(body.to_string())).boxed());
    *r.status_mut() = status;
    r
}

async fn handle(req: Request<Incoming>, state: Arc<State>, stop: CancellationToken) -> Result<Response<Body>, Infallible> {
    let path = req.uri().path().to_string();
    if path == "/count/xhr" {
        let n: Option<i64> = req.uri().query().and_then(|q| q.strip_prefix("count=")).and_then(|n| n.parse().ok());
        let mut res = match n.map(|count| Count { count }.answer()) {
            Some(Ok(answer)) => respond(StatusCode::OK, &answer.to_json()),
            Some(Err(e)) => respond(StatusCode::BAD_REQUEST, &e.to_json()),
            None => respond(StatusCode::BAD_REQUEST, "{\"error\":\"count missing\"}"),
        };
        let answered = state.counts_answered.fetch_add(1, Ordering::SeqCst) + 1;
        if state.behaviour.count_close_every.is_some_and(|every| answered.is_multiple_of(every)) {
            res.headers_mut().insert(hyper::header::CONNECTION, hyper::header::HeaderValue::from_static("close"));
        }
        return Ok(res);
    }
    if path == "/echo/info" {
        return Ok(respond(StatusCode::OK, r#"{"websocket":true,"cookie_needed":false,"origins":["*:*"],"entropy":1}"#));
    }
    let parts: Vec<&str> = path.split('/').collect();
    if let ["", "echo", _server, session, transport] = parts[..] {
        return Ok(sockjs::handle(req, &state.sockjs, session.to_string(), transport.to_string(), stop).await);
    }
    let app = match path.as_str() {
        "/echo/websocket" => App::Echo,
        "/count/websocket" => App::Count,
        "/broadcast/websocket" => App::Broadcast,
        "/chat/websocket" => App::Chat,
        _ => return Ok(respond(StatusCode::NOT_FOUND, "not found")),
    };
    let Some(key) = req.headers().get("sec-websocket-key") else {
        return Ok(respond(StatusCode::BAD_REQUEST, "websocket only"));
    };
    let accept = derive_accept_key(key.as_bytes());
    tokio::spawn(async move {
        let Ok(upgraded) = hyper::upgrade::on(req).await else { return };
        let ws = WebSocketStream::from_raw_socket(TokioIo::new(upgraded), Role::Server, None).await;
        tokio::select! {
            _ = stop.cancelled() => {}
            _ = serve_app(app, ws, state) => {}
        }
    });
    let resp = Response::builder()
        .status(StatusCode::SWITCHING_PROTOCOLS)
        .header("upgrade", "websocket")
        .header("connection", "Upgrade")
        .header("sec-websocket-accept", accept)
        .body(Full::new(Bytes::new()).boxed())
        .expect("static response");
    Ok(resp)
}

#[derive(Clone, Copy)]
enum App {
    Echo,
    Count,
    Broadcast,
    Chat,
}

type Ws = WebSocketStream<TokioIo<hyper::upgrade::Upgraded>>;

async fn serve_app(app: App, ws: Ws, state: Arc<State>) {
    match app {
        App::Echo => echo(ws, &state).await,
        App::Count => count(ws).await,
        App::Broadcast => broadcast_app(ws, state).await,
        App::Chat => chat(ws, state).await,
    }
}

async fn echo(mut ws: Ws, state: &State) {
    let delay = state.behaviour.echo_delay;
    while let Some(Ok(msg)) = ws.next().await {
        if let Message::Text(t) = msg {
            state.echoes.send_modify(|count| *count += 1);
            if !delay.is_zero() {
                tokio::time::sleep(delay).await;
            }
            if ws.send(Message::Text(t)).await.is_err() {
                return;
            }
        }
    }
}

async fn count(mut ws: Ws) {
    while let Some(Ok(msg)) = ws.next().await {
        if let Message::Text(t) = msg {
            let reply = match Count::parse(&t).and_then(Count::answer) {
                Ok(answer) => answer.to_json(),
                Err(e) => e.to_json(),
            };
            if ws.send(Message::text(reply)).await.is_err() {
                return;
            }
        }
    }
}

async fn broadcast_app(ws: Ws, state: Arc<State>) {
    let (mut sink, mut stream) = ws.split();
    let mut rx = state.broadcast.subscribe();
    let writer = tokio::spawn(async move {
        while let Ok(text) = rx.recv().await {
            if sink.send(Message::text(text)).await.is_err() {
                return;
            }
        }
    });
    while let Some(Ok(msg)) = stream.next().await {
        if let Message::Text(t) = msg {
            let _guard = state.broadcast_lock.lock().await;
            let nth = state.broadcast_seen.fetch_add(1, Ordering::SeqCst) + 1;
            if !state.behaviour.broadcast_cost.is_zero() {
                tokio::time::sleep(state.behaviour.broadcast_cost).await;
            }
            if state.behaviour.broadcast_drop_nth == Some(nth) {
                continue;
            }
            let _ = state.broadcast.send(t.to_string());
        }
    }
    writer.abort();
}

async fn chat(ws: Ws, state: Arc<State>) {
    let (mut sink, mut stream) = ws.split();
    let (tx, mut rx) = mpsc::unbounded_channel::<String>();
    let writer = tokio::spawn(async move {
        while let Some(text) = rx.recv().await {
            if sink.send(Message::text(text)).await.is_err() {
                return;
            }
        }
    });
    let mut me: Option<(String, String)> = None;
    while let Some(Ok(msg)) = stream.next().await {
        let Message::Text(t) = msg else { continue };
        match &me {
            None => {
                let Join { name, room, .. } = match Join::parse(&t) {
                    Ok((join, _)) => join,
                    Err(e) => {
                        let _ = tx.send(e.to_json());
                        continue;
                    }
                };
                let mut members = state.chat.lock().await;
                let names = members.iter().filter(|m| m.room == room).map(|m| m.name.clone()).collect();
                let list = ChatEvent::Members { event: MembersTag::Members, room: room.clone(), members: names, total: None, offset: None, epoch: None };
                let _ = tx.send(list.to_json());
                members.push(ChatMember { name: name.clone(), room: room.clone(), tx: tx.clone() });
                let join = ChatEvent::Presence { event: Presence::Join, name: name.clone(), room: room.clone(), old_name: None, new_name: None }.to_json();
                for m in members.iter().filter(|m| m.room == room) {
                    let _ = m.tx.send(join.clone());
                }
                me = Some((name, room));
            }
            Some((name, room)) => {
                let Ok(say) = Say::parse(&t) else { continue };
                let out = chat_message_json(name, room, &say.message);
                let members = state.chat.lock().await;
                for m in members.iter().filter(|m| &m.room == room) {
                    let _ = m.tx.send(out.clone());
                }
            }
        }
    }
    if let Some((name, room)) = me {
        let mut members = state.chat.lock().await;
        members.retain(|m| !(m.name == name && m.room == room));
    }
    writer.abort();
}
