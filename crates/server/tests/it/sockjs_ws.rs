//! SockJS over WebSocket (issue 3): `o`, `a[...]`, `h` and `c[...]` frames
//! on `/<app>/<server>/<session>/websocket`, handshake errors, and SockJS
//! clients meeting native WebSocket clients in the same rooms.

use std::time::Duration;

use futures_util::StreamExt;
use serde_json::json;
use tokio_tungstenite::tungstenite::Message;

use crate::support::{TestServer, json, session_id, sockjs_config};

fn ws_path(mount: &str) -> String {
    format!("/{mount}/000/{}/websocket", session_id())
}

async fn suite_server() -> TestServer {
    TestServer::with(sockjs_config(|_| {})).await
}

#[tokio::test]
async fn frames_in_and_out() {
    let server = suite_server().await;
    let mut ws = server.ws(&ws_path("echo")).await;
    assert_eq!(ws.recv().await, "o");
    ws.send(r#"["a"]"#).await;
    assert_eq!(ws.recv().await, r#"a["a"]"#);
    // Empty messages and empty arrays are ignored; a lone string is a message.
    ws.send("").await;
    ws.send("[]").await;
    ws.send(r#""b""#).await;
    assert_eq!(ws.recv().await, r#"a["b"]"#);
    // Each message goes back in a frame of its own, built once for every
    // recipient.
    ws.send(r#"["c","d\u2028"]"#).await;
    assert_eq!(ws.recv().await, r#"a["c"]"#);
    assert_eq!(ws.recv().await, r#"a["d\u2028"]"#);
}

#[tokio::test]
async fn the_close_app_sends_3000_then_closes() {
    let server = suite_server().await;
    let mut ws = server.ws(&ws_path("close")).await;
    assert_eq!(ws.recv().await, "o");
    assert_eq!(ws.recv().await, r#"c[3000,"Go away!"]"#);
    let close = ws.closed().await;
    assert_eq!((u16::from(close.code), close.reason.as_str()), (3000, "Go away!"));

    // Native WebSocket on the same app: the close frame alone.
    let mut raw = server.ws("/close/websocket").await;
    let close = raw.closed().await;
    assert_eq!((u16::from(close.code), close.reason.as_str()), (3000, "Go away!"));
}

#[tokio::test]
async fn broken_json_closes_the_session_at_once() {
    let server = suite_server().await;
    let mut ws = server.ws(&ws_path("echo")).await;
    assert_eq!(ws.recv().await, "o");
    ws.send(r#"["a"#).await;
    // No `c[...]` text first: the next message is the close frame.
    match ws.next().await {
        Message::Close(Some(close)) => assert_eq!(u16::from(close.code), 3000),
        other => panic!("expected the close frame, got {other:?}"),
    }
}

#[tokio::test]
async fn heartbeats_when_idle() {
    let server = TestServer::with(sockjs_config(|o| o.heartbeat = Duration::from_millis(50))).await;
    let mut ws = server.ws(&ws_path("echo")).await;
    assert_eq!(ws.recv().await, "o");
    assert_eq!(ws.recv().await, "h");
    assert_eq!(ws.recv().await, "h");
    ws.send(r#"["x"]"#).await;
    loop {
        match ws.recv().await.as_str() {
            "h" => continue,
            frame => break assert_eq!(frame, r#"a["x"]"#),
        }
    }
}

#[tokio::test]
async fn a_session_id_may_be_reused_by_websockets() {
    let server = suite_server().await;
    let path = ws_path("echo");
    let mut one = server.ws(&path).await;
    let mut two = server.ws(&path).await;
    assert_eq!(one.recv().await, "o");
    assert_eq!(two.recv().await, "o");
    one.send(r#"["1"]"#).await;
    two.send(r#"["2"]"#).await;
    assert_eq!(one.recv().await, r#"a["1"]"#);
    assert_eq!(two.recv().await, r#"a["2"]"#);
}

#[tokio::test]
async fn handshake_errors_and_headers() {
    let server = suite_server().await;
    let path = ws_path("echo");
    let plain = server.http("GET", &path, &[], b"").await;
    assert_eq!((plain.status(), plain.text()), (400, "Can \"Upgrade\" only to \"WebSocket\"."));
    let closing = server.http("GET", &path, &[("Upgrade", "WebSocket"), ("Connection", "close")], b"").await;
    assert_eq!(closing.status(), 400);
    for headers in [&[("Upgrade", "WebSocket"), ("Connection", "Upgrade")][..], &[]] {
        let post = server.http("POST", &path, headers, b"").await;
        assert_eq!((post.status(), post.header("allow"), post.header("content-type")), (405, Some("GET"), None));
        assert!(post.body.is_empty());
    }

    let mut raw = server.raw().await;
    let headers = [
        ("Upgrade", "websocket"),
        ("Connection", "Upgrade"),
        ("Sec-WebSocket-Version", "13"),
        ("Sec-WebSocket-Key", "x3JJHMbDL1EzLkh9GBhXDw=="),
    ];
    raw.send("GET", &path, "1.1", &headers, b"").await;
    let head = raw.head().await;
    assert_eq!(head.status, 101);
    assert_eq!(head.header("sec-websocket-accept"), Some("HSmrc0sMlYUkAGmm5OPpG2HaGWk="));
    assert_eq!(head.header("connection").map(str::to_ascii_lowercase).as_deref(), Some("upgrade"));
    assert_eq!(head.header("upgrade").map(str::to_ascii_lowercase).as_deref(), Some("websocket"));
    assert_eq!(head.header("content-length"), None);
    // The open frame, unmasked from the server: FIN + text, length 1, "o".
    assert_eq!(raw.exact(3).await, [0x81, 0x01, b'o']);
}

#[tokio::test]
async fn a_mount_without_websocket_refuses_both_kinds() {
    let server = suite_server().await;
    let headers = [("Upgrade", "websocket"), ("Connection", "Upgrade"), ("Sec-WebSocket-Version", "13"), ("Sec-WebSocket-Key", "x3JJHMbDL1EzLkh9GBhXDw==")];
    for path in ["/disabled_websocket_echo/websocket".to_owned(), ws_path("disabled_websocket_echo")] {
        assert_eq!(server.http("GET", &path, &headers, b"").await.status(), 404, "{path}");
    }
}

#[tokio::test]
async fn shutdown_sends_c1001_then_the_close_frame() {
    let server = suite_server().await;
    let mut ws = server.ws(&ws_path("echo")).await;
    assert_eq!(ws.recv().await, "o");
    let task = server.shutdown();
    assert_eq!(ws.recv().await, r#"c[1001,"server shutting down"]"#);
    assert_eq!(u16::from(ws.closed().await.code), 1001);
    // Read on, as a real client does, so our answer to the close goes out
    // and the server need not wait out its grace.
    tokio::spawn(async move { while let Some(Ok(_)) = ws.0.next().await {} });
    tokio::time::timeout(Duration::from_secs(2), task).await.expect("exits at once").unwrap().unwrap();
}

async fn xhr_poll(server: &TestServer, url: &str) -> String {
    server.http("POST", &format!("{url}/xhr"), &[], b"").await.text().to_owned()
}

async fn xhr_send(server: &TestServer, url: &str, message: &str) {
    let body = serde_json::to_string(&[message]).unwrap();
    assert_eq!(server.http("POST", &format!("{url}/xhr_send"), &[], body.as_bytes()).await.status(), 204);
}

/// A SockJS client (xhr polling) and a native WebSocket client in one chat
/// room: transports only adapt, the room is the same.
#[tokio::test]
async fn sockjs_and_native_clients_meet_in_the_same_room() {
    let server = suite_server().await;
    let mut alice = server.ws("/chat/websocket").await;
    alice.send(r#"{"name":"alice","room":"mixed"}"#).await;
    assert_eq!(alice.recv_json().await["event"], "members");
    assert_eq!(alice.recv_json().await["event"], "join");

    let url = format!("/chat/000/{}", session_id());
    assert_eq!(xhr_poll(&server, &url).await, "o\n");
    xhr_send(&server, &url, r#"{"name":"bob","room":"mixed"}"#).await;
    assert_eq!(alice.recv_json().await, json!({"event":"join","name":"bob","room":"mixed"}));
    xhr_send(&server, &url, r#"{"message":"hi from sockjs"}"#).await;
    assert_eq!(alice.recv_json().await, json!({"name":"bob","room":"mixed","message":"hi from sockjs"}));
    alice.send(r#"{"message":"hi from websocket"}"#).await;

    // Bob's polls see the members list, both joins, both messages, in order.
    let mut seen = Vec::new();
    while seen.len() < 4 {
        let frame = xhr_poll(&server, &url).await;
        let Some(batch) = frame.strip_prefix('a') else { continue };
        let batch: Vec<String> = serde_json::from_str(batch.trim_end()).unwrap();
        seen.extend(batch.iter().map(|m| json(m)));
    }
    assert_eq!(seen[0]["event"], "members");
    assert_eq!(seen[1], json!({"event":"join","name":"bob","room":"mixed"}));
    assert_eq!(seen[2], json!({"name":"bob","room":"mixed","message":"hi from sockjs"}));
    assert_eq!(seen[3], json!({"name":"alice","room":"mixed","message":"hi from websocket"}));
}

#[tokio::test]
async fn sockjs_websocket_sessions_are_counted_in_metrics() {
    let server = suite_server().await;
    let mut ws = server.ws(&ws_path("echo")).await;
    assert_eq!(ws.recv().await, "o");
    ws.send(r#"["abc"]"#).await;
    assert_eq!(ws.recv().await, r#"a["abc"]"#);
    let labels = r#"{app="echo",transport="sockjs-websocket"}"#;
    assert_eq!(server.metric(&format!("switchboard_connections{labels}")).await, Some(1.0));
    assert_eq!(server.metric(&format!("switchboard_messages_out_total{labels}")).await, Some(1.0));
}
