//! Slow consumers, shutdown and metrics.

use std::time::Duration;

use server::Config;
use tokio::net::TcpSocket;
use tokio_tungstenite::MaybeTlsStream;

use crate::support::{PATIENCE, TestServer, Ws};

const SLOW_CONSUMERS: &str =
    r#"switchboard_slow_consumer_disconnects_total{app="broadcast",transport="websocket"}"#;

#[tokio::test]
async fn a_client_that_never_reads_is_closed_with_1008_and_others_get_everything() {
    const MESSAGES: usize = 4_000;
    let mut config = Config::default();
    config.server.queue_limit = 64 * 1024;
    config.server.shutdown_grace = PATIENCE;
    let server = TestServer::with(config).await;

    // The slow client shrinks its receive buffer so the server's side fills
    // quickly, then reads nothing until the end of the test.
    let socket = TcpSocket::new_v4().unwrap();
    socket.set_recv_buffer_size(4096).unwrap();
    let stream = MaybeTlsStream::Plain(socket.connect(server.addr).await.unwrap());
    let (slow, _) = tokio_tungstenite::client_async(server.url("/broadcast/websocket"), stream).await.unwrap();
    let mut slow = Ws(slow);
    slow.send("slow is here").await;
    assert_eq!(slow.recv().await, "slow is here");

    let mut reader = server.ws("/broadcast/websocket").await;
    reader.send("reader is here").await;
    while reader.recv().await != "reader is here" {}

    // 4,000 × 1 KiB: far more than the socket buffers plus the 64 KiB bound.
    let payload = "p".repeat(1024);
    for i in 0..MESSAGES {
        reader.send(&format!("{i:05} {payload}")).await;
        // Read as we go so the reader itself never falls behind.
        let got = reader.recv().await;
        assert_eq!(&got[..5], format!("{i:05}"), "the reader gets every message in order");
    }
    assert_eq!(server.metric(SLOW_CONSUMERS).await, Some(1.0));

    let close = slow.closed().await;
    assert_eq!(u16::from(close.code), 1008);
    assert!(close.reason.contains("slow consumer"), "{}", close.reason);
}

#[tokio::test]
async fn shutdown_closes_every_client_with_1001_and_returns() {
    let server = TestServer::start().await;
    let mut clients = Vec::new();
    for path in ["/echo/websocket", "/broadcast/websocket", "/chat/websocket", "/count/websocket"] {
        let mut ws = server.ws(path).await;
        // A round trip proves the session is up before shutdown starts.
        ws.send(r#"{"count":1}"#).await;
        ws.recv().await;
        clients.push(ws);
    }
    let started = tokio::time::Instant::now();
    let task = server.shutdown();
    for ws in &mut clients {
        assert_eq!(u16::from(ws.closed().await.code), 1001);
    }
    // The clients answer the close (tungstenite does so on read), so the
    // server need not wait out its grace.
    tokio::time::timeout(Duration::from_secs(5), task).await.expect("exits within 5 s").unwrap().unwrap();
    assert!(started.elapsed() < Duration::from_secs(5));
}

#[tokio::test]
async fn metrics_count_connections_messages_and_bytes() {
    let server = TestServer::start().await;
    let mut ws = server.ws("/echo/websocket").await;
    ws.send("12345").await;
    assert_eq!(ws.recv().await, "12345");
    let labels = r#"{app="echo",transport="websocket"}"#;
    assert_eq!(server.metric(&format!("switchboard_connections{labels}")).await, Some(1.0));
    assert_eq!(server.metric(&format!("switchboard_messages_in_total{labels}")).await, Some(1.0));
    assert_eq!(server.metric(&format!("switchboard_messages_out_total{labels}")).await, Some(1.0));
    assert_eq!(server.metric(&format!("switchboard_bytes_in_total{labels}")).await, Some(5.0));
    assert_eq!(server.metric(&format!("switchboard_bytes_out_total{labels}")).await, Some(5.0));
}
