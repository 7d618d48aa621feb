//! `--write-delay`: a WebSocket client's writer lets what is queued for it
//! gather, then writes it all at once (`switchboard_batches_out_total`
//! counts the writes).

use std::time::Duration;

use serde_json::json;

use crate::support::{TestServer, until};

const KEY: &str = "0123456789abcdef-backend";

async fn publish(server: &TestServer, text: &str) {
    let body = json!({"room": "r", "text": text}).to_string();
    let reply = server.http("POST", "/api/publish", &[("X-API-Key", KEY)], body.as_bytes()).await;
    assert_eq!(reply.status(), 200, "{}", reply.text());
}

/// The chat-over-WebSocket counter `name`, once messages_out has reached `messages`.
async fn batches_once(server: &TestServer, messages: f64) -> f64 {
    let series = |name| format!(r#"switchboard_{name}_total{{app="chat",transport="websocket"}}"#);
    until(|| async {
        (server.metric(&series("messages_out")).await == Some(messages)).then_some(())
    })
    .await;
    server.metric(&series("batches_out")).await.expect("the batches are counted")
}

/// Three messages published one after another, each call answered once it
/// is queued for the member, reach it in one write, whole and in order.
#[tokio::test]
async fn messages_queued_within_the_delay_go_out_in_one_write() {
    let mut config = server::Config::default();
    config.api.keys = Some(server::ApiKeys(vec![KEY.to_owned()]));
    // The longest allowed: the three calls come well within it.
    config.server.write_delay = Duration::from_secs(1);
    let server = TestServer::with(config).await;
    let mut alice = server.chat_member("alice", "r").await;
    let greeted = batches_once(&server, 2.0).await;
    for text in ["one", "two", "three"] {
        publish(&server, text).await;
    }
    for text in ["one", "two", "three"] {
        assert_eq!(alice.recv_json().await["message"], text);
    }
    assert_eq!(batches_once(&server, 5.0).await, greeted + 1.0, "one write for the three");
}
