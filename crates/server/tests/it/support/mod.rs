//! A server on port 0 and the clients the tests drive it with.

#![allow(dead_code)] // each test module uses a different part of this

use std::net::SocketAddr;
use std::time::Duration;

use futures_util::{SinkExt, StreamExt};
use server::Config;
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
    stop: Option<oneshot::Sender<()>>,
    task: JoinHandle<Result<(), server::Error>>,
}

impl TestServer {
    pub async fn start() -> TestServer {
        TestServer::with(Config::default()).await
    }

    pub async fn with(config: Config) -> TestServer {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let (stop, stopped) = oneshot::channel::<()>();
        let task = tokio::spawn(server::serve(listener, config, async move {
            let _ = stopped.await;
        }));
        TestServer { addr, stop: Some(stop), task }
    }

    pub fn url(&self, path: &str) -> String {
        format!("ws://{}{path}", self.addr)
    }

    pub async fn ws(&self, path: &str) -> Ws {
        Ws::connect(&self.url(path)).await
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

    pub async fn recv_json(&mut self) -> serde_json::Value {
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

pub fn json(text: &str) -> serde_json::Value {
    serde_json::from_str(text).unwrap()
}
