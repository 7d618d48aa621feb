//! `--shared-writer`: one task writes the messages of idle WebSocket
//! clients (native, or SockJS over WebSocket), and no client's task is
//! woken for them (`switchboard_shared_writes_total` counts those
//! messages).

use serde_json::{Value, json};

use crate::support::{TestServer, Ws, session_id, sockjs_config, until};

const KEY: &str = "0123456789abcdef-backend";

async fn server(shared_writer: bool) -> TestServer {
    let mut config = sockjs_config(|_| {});
    config.api.keys = Some(server::ApiKeys(vec![KEY.to_owned()]));
    config.server.shared_writer = shared_writer;
    TestServer::with(config).await
}

fn series(name: &str, transport: &str) -> String {
    format!(r#"switchboard_{name}_total{{app="chat",transport="{transport}"}}"#)
}

/// A chat member in room `r` over `transport`, past its greeting (the
/// `members` and `join` events), and a way to read its next chat message.
async fn member(server: &TestServer, transport: &str) -> Ws {
    if transport == "websocket" {
        return server.chat_member("alice", "r").await;
    }
    let mut ws = server.ws(&format!("/chat/000/{}/websocket", session_id())).await;
    assert_eq!(ws.recv().await, "o");
    ws.send(&json!([json!({"name": "alice", "room": "r"}).to_string()]).to_string()).await;
    for event in ["members", "join"] {
        assert_eq!(sockjs_message(&ws.recv().await)["event"], event);
    }
    ws
}

/// The one message of a SockJS `a[...]` frame.
fn sockjs_message(frame: &str) -> Value {
    let messages: Vec<String> = serde_json::from_str(frame.strip_prefix('a').expect("an a[...] frame")).expect("a JSON array");
    assert_eq!(messages.len(), 1, "one message a frame: {frame}");
    serde_json::from_str(&messages[0]).expect("a chat message")
}

/// Messages published one at a time to a member that has taken each
/// before the next: every one is written by the shared writer, whole and
/// in order, over native WebSocket and SockJS's alike; with the setting
/// off, none is.
#[tokio::test]
async fn an_idle_members_messages_are_written_by_the_shared_writer_unless_turned_off() {
    for on in [true, false] {
        for transport in ["websocket", "sockjs-websocket"] {
            let server = server(on).await;
            let mut alice = member(&server, transport).await;
            let count = |name| {
                let series = series(name, transport);
                let server = &server;
                async move { server.metric(&series).await.expect("counted") }
            };
            let greeted = until(|| async { Some(count("messages_out").await).filter(|&n| n >= 2.0) }).await;
            let before = count("shared_writes").await;
            for i in 0..5 {
                    let text = format!("message {i}");
                let body = json!({"room": "r", "text": text}).to_string();
                let reply = server.http("POST", "/api/publish", &[("X-API-Key", KEY)], body.as_bytes()).await;
                assert_eq!(reply.status(), 200, "{}", reply.text());
                let got = if transport == "websocket" { alice.recv_json().await } else { sockjs_message(&alice.recv().await) };
                assert_eq!(got["message"], text.as_str(), "{transport}");
            }
            assert_eq!(count("messages_out").await, greeted + 5.0, "each message counted once ({transport})");
            let shared = count("shared_writes").await - before;
            assert_eq!(shared, if on { 5.0 } else { 0.0 }, "{transport}, shared writer on: {on}");
        }
    }
}
