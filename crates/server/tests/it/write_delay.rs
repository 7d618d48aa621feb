//! `--write-delay`: a WebSocket or IRC client's writer lets what is queued
//! for it gather, then writes it all at once (`switchboard_batches_out_total`
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

/// A server with the server API on and the longest write delay allowed:
/// the three calls of [`publish_three`] come well within it.
async fn delayed() -> TestServer {
    let mut config = server::Config::default();
    config.api.keys = Some(server::ApiKeys(vec![KEY.to_owned()]));
    config.server.write_delay = Duration::from_secs(1);
    TestServer::with(config).await
}

/// "one", "two" and "three" published to room `r`, one after another.
async fn publish_three(server: &TestServer) {
    for text in ["one", "two", "three"] {
        publish(server, text).await;
    }
}

/// The batches counted for `app` over `transport`, once messages_out has
/// reached `messages`.
async fn batches_of(server: &TestServer, app: &str, transport: &str, messages: f64) -> f64 {
    let series = |name| format!(r#"switchboard_{name}_total{{app="{app}",transport="{transport}"}}"#);
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
    let server = delayed().await;
    let mut alice = server.chat_member("alice", "r").await;
    let greeted = batches_of(&server, "chat", "websocket", 2.0).await;
    publish_three(&server).await;
    for text in ["one", "two", "three"] {
        assert_eq!(alice.recv_json().await["message"], text);
    }
    assert_eq!(batches_of(&server, "chat", "websocket", 5.0).await, greeted + 1.0, "one write for the three");
}

/// The same for an IRC client in the room's channel: the three messages
/// come in one write, as three lines in order.
#[tokio::test]
async fn an_irc_clients_messages_queued_within_the_delay_go_out_in_one_write() {
    let server = delayed().await;
    let mut ivy = crate::irc::Irc::register(server.irc, "ivy").await;
    ivy.join("#r").await;
    let before = server.metric(r#"switchboard_messages_out_total{app="irc",transport="tcp"}"#).await.expect("counted");
    let greeted = batches_of(&server, "irc", "tcp", before).await;
    publish_three(&server).await;
    for text in ["one", "two", "three"] {
        let line = ivy.until(" NOTICE #r ").await;
        assert!(line.ends_with(&format!(" :{text}\r\n")), "{line:?}");
    }
    assert_eq!(batches_of(&server, "irc", "tcp", before + 3.0).await, greeted + 1.0, "one write for the three");
}
