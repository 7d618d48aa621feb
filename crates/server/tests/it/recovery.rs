//! Recovery on reconnect for chat-app clients: every kept message carries
//! its position in its room's history (`offset`, `epoch`), and a client
//! that joins again with `since` gets exactly what it missed with
//! `"recovered":true`, or the newest messages with `"recovered":false`
//! when they are no longer all kept; never part of them (issue 33).

use serde_json::{Value, json};

use crate::support::{TestServer, Ws};

/// Joins `room` as `name`, `since` a position if given: the members event,
/// whole.
async fn join(server: &TestServer, name: &str, room: &str, since: Option<Value>) -> (Ws, Value) {
    let mut ws = server.ws("/chat/websocket").await;
    let mut join = json!({"name": name, "room": room});
    if let Some(since) = since {
        join["since"] = since;
    }
    ws.send(&join.to_string()).await;
    let members = ws.recv_whole().await;
    assert_eq!(members["event"], "members", "{members}");
    (ws, members)
}

async fn say(ws: &mut Ws, text: &str) -> Value {
    ws.send(&json!({"message": text}).to_string()).await;
    loop {
        let event = ws.recv_whole().await;
        if event["message"] == text {
            return event;
        }
    }
}

#[tokio::test]
async fn a_client_that_comes_back_gets_exactly_what_it_missed_in_order() {
    let server = TestServer::start().await;
    let (mut alice, members) = join(&server, "alice", "lobby", None).await;
    assert_eq!(members["offset"], 0, "an empty room's position");
    let epoch = members["epoch"].as_str().unwrap().to_owned();
    alice.recv_whole().await; // her own join
    let (mut bob, _) = join(&server, "bob", "lobby", None).await;
    let first = say(&mut alice, "one").await;
    assert_eq!((&first["offset"], first["epoch"].as_str()), (&json!(1), Some(epoch.as_str())));
    // Bob saw "one", then his connection blinks.
    let seen = loop {
        let event = bob.recv_whole().await;
        if event["message"] == "one" {
            break event;
        }
    };
    drop(bob);
    for text in ["two", "three"] {
        say(&mut alice, text).await;
    }
    let since = json!({"offset": seen["offset"], "epoch": seen["epoch"]});
    let (mut bob, members) = join(&server, "bob", "lobby", Some(since)).await;
    assert_eq!((&members["offset"], members["epoch"].as_str()), (&json!(3), Some(epoch.as_str())));
    assert_eq!(
        bob.recv().await,
        format!(
            r#"{{"event":"history","room":"lobby","messages":[{{"name":"alice","room":"lobby","message":"two","offset":2,"epoch":"{epoch}"}},{{"name":"alice","room":"lobby","message":"three","offset":3,"epoch":"{epoch}"}}],"recovered":true}}"#
        ),
        "exactly what it missed, once each, in order"
    );
    assert_eq!(bob.recv_json().await, json!({"event": "join", "name": "bob", "room": "lobby"}));
    // Having missed nothing is a recovery too, with nothing in it.
    drop(bob);
    let since = json!({"offset": 3, "epoch": epoch});
    let (mut bob, _) = join(&server, "bob", "lobby", Some(since)).await;
    assert_eq!(bob.recv().await, r#"{"event":"history","room":"lobby","messages":[],"recovered":true}"#);
}

#[tokio::test]
async fn a_position_no_longer_kept_or_of_another_history_is_not_recovered() {
    let mut config = server::Config::default();
    config.rooms.history = 2;
    let server = TestServer::with(config).await;
    let (mut alice, members) = join(&server, "alice", "lobby", None).await;
    let epoch = members["epoch"].as_str().unwrap().to_owned();
    for text in ["one", "two", "three", "four"] {
        say(&mut alice, text).await;
    }
    let newest = |history: &Value| history["messages"].as_array().unwrap().iter().map(|m| m["message"].clone()).collect::<Vec<_>>();
    for (since, why) in [
        (json!({"offset": 1, "epoch": epoch}), "two and three are no longer kept"),
        (json!({"offset": 2, "epoch": "0123456789abcdef"}), "another history"),
        (json!({"offset": 9, "epoch": epoch}), "an offset the room never had"),
    ] {
        let (mut bob, _) = join(&server, "bob", "lobby", Some(since)).await;
        let history = bob.recv_whole().await;
        assert_eq!((&history["event"], &history["recovered"]), (&json!("history"), &json!(false)), "{why}");
        assert_eq!(newest(&history), [json!("three"), json!("four")], "{why}: the newest kept, to reload from");
    }
    // From the oldest position still kept whole: recovered.
    let (mut bob, _) = join(&server, "bob", "lobby", Some(json!({"offset": 2, "epoch": epoch}))).await;
    let history = bob.recv_whole().await;
    assert_eq!((&history["recovered"], newest(&history)), (&json!(true), vec![json!("three"), json!("four")]));
}
