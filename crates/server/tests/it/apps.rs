//! The four apps over native WebSocket and plain HTTP.

use futures_util::future::join_all;
use serde_json::json;

use crate::support::{HttpClient, TestServer, Ws, json};

#[tokio::test]
async fn echo_returns_every_message_in_order() {
    let server = TestServer::start().await;
    let mut ws = server.ws("/echo/websocket").await;
    for text in ["hello", "", "ünïcödé \u{2028} \"quoted\"", &"x".repeat(5000)] {
        ws.send(text).await;
    }
    assert_eq!(ws.recv().await, "hello");
    assert_eq!(ws.recv().await, "");
    assert_eq!(ws.recv().await, "ünïcödé \u{2028} \"quoted\"");
    assert_eq!(ws.recv().await, "x".repeat(5000));
}

/// Connects a broadcast client and waits until it is in the room: its own
/// greeting comes back only once it is a member.
async fn broadcast_client(server: &TestServer, id: usize) -> Ws {
    let mut ws = server.ws("/broadcast/websocket").await;
    let hello = format!("hello {id}");
    ws.send(&hello).await;
    while ws.recv().await != hello {}
    ws
}

#[tokio::test]
async fn broadcast_reaches_fifty_clients_in_one_order() {
    const CLIENTS: usize = 50;
    const SENDERS: usize = 5;
    const PER_SENDER: usize = 40;
    let server = TestServer::start().await;
    let mut clients = Vec::new();
    for id in 0..CLIENTS {
        clients.push(broadcast_client(&server, id).await);
    }
    // Five clients send at once; everyone must see all messages, each
    // sender's in its order, and all clients the same interleaving.
    let (senders, rest) = clients.split_at_mut(SENDERS);
    join_all(senders.iter_mut().enumerate().map(|(s, ws)| async move {
        for i in 0..PER_SENDER {
            ws.send(&format!("m {s} {i}")).await;
        }
    }))
    .await;
    let mut orders = Vec::new();
    for ws in senders.iter_mut().chain(rest.iter_mut()) {
        let mut got = Vec::new();
        while got.len() < SENDERS * PER_SENDER {
            let text = ws.recv().await;
            if text.starts_with("m ") {
                got.push(text);
            }
        }
        orders.push(got);
    }
    for order in &orders {
        assert_eq!(order, &orders[0], "every client sees the same order");
    }
    for s in 0..SENDERS {
        let mine: Vec<_> = orders[0].iter().filter(|m| m.starts_with(&format!("m {s} "))).cloned().collect();
        let expected: Vec<_> = (0..PER_SENDER).map(|i| format!("m {s} {i}")).collect();
        assert_eq!(mine, expected, "sender {s}'s messages arrive in its order");
    }
}

async fn join(server: &TestServer, name: &str, room: &str) -> Ws {
    let mut ws = server.ws("/chat/websocket").await;
    ws.send(&json!({"name": name, "room": room}).to_string()).await;
    let members = ws.recv_json().await;
    assert_eq!(members["event"], "members", "{members}");
    assert_eq!(members["room"], room);
    assert_eq!(ws.recv_json().await, json!({"event":"join","name":name,"room":room}));
    ws
}

#[tokio::test]
async fn chat_rooms_are_isolated_and_names_unique_per_room() {
    let server = TestServer::start().await;
    let mut alice = join(&server, "alice", "lobby").await;
    let mut bob = join(&server, "bob", "lobby").await;
    assert_eq!(alice.recv_json().await, json!({"event":"join","name":"bob","room":"lobby"}));
    let mut carol = join(&server, "alice", "kitchen").await;

    // A second alice in the lobby is refused but stays connected.
    let mut imposter = server.ws("/chat/websocket").await;
    imposter.send(r#"{"name":"alice","room":"lobby"}"#).await;
    let refusal = imposter.recv_json().await;
    assert!(refusal["error"].as_str().unwrap().contains("already taken"), "{refusal}");
    imposter.send(r#"{"name":"alice2","room":"lobby"}"#).await;
    let members = imposter.recv_json().await;
    let mut names: Vec<_> = members["members"].as_array().unwrap().iter().map(|n| n.as_str().unwrap().to_owned()).collect();
    names.sort();
    assert_eq!(names, ["alice", "alice2", "bob"]);
    assert_eq!(imposter.recv_json().await["name"], "alice2");
    assert_eq!(alice.recv_json().await["name"], "alice2");
    assert_eq!(bob.recv_json().await["name"], "alice2");

    alice.send(r#"{"message":"hi \"all\""}"#).await;
    // With its position in the room's history: the first message of this opening of the room.
    let own = alice.recv().await;
    let epoch = serde_json::from_str::<serde_json::Value>(&own).unwrap()["epoch"].as_str().unwrap().to_owned();
    assert!(epoch.len() == 16 && epoch.bytes().all(|b| b.is_ascii_hexdigit()), "{epoch}");
    let expected = format!(r#"{{"name":"alice","room":"lobby","message":"hi \"all\"","offset":1,"epoch":"{epoch}"}}"#);
    assert_eq!(own, expected, "the sender gets its own message");
    assert_eq!(bob.recv().await, expected);
    assert_eq!(imposter.recv().await, expected);

    carol.send(r#"{"message":"kitchen only"}"#).await;
    let kitchen = carol.recv().await;
    assert!(kitchen.starts_with(r#"{"name":"alice","room":"kitchen","message":"kitchen only","offset":1,"epoch":""#), "{kitchen}");
    assert!(!kitchen.contains(&epoch), "each room counts in a history of its own");

    // Malformed chat input gets an error and the connection stays open.
    bob.send("not json").await;
    assert!(bob.recv_json().await["error"].is_string());
    bob.send(r#"{"msg":"wrong field"}"#).await;
    assert!(bob.recv_json().await["error"].is_string());

    drop(bob);
    assert_eq!(alice.recv_json().await, json!({"event":"leave","name":"bob","room":"lobby"}));
    alice.send(r#"{"message":"still here"}"#).await;
    assert_eq!(alice.recv_json().await["message"], "still here");
    // The kitchen heard none of the lobby's traffic.
    carol.send(r#"{"message":"done"}"#).await;
    assert_eq!(carol.recv_json().await["message"], "done");
}

#[tokio::test]
async fn chat_rejects_bad_joins_and_messages_before_joining() {
    let server = TestServer::start().await;
    let mut ws = server.ws("/chat/websocket").await;
    for bad in ["{", r#"{"message":"too early"}"#, r#"{"name":"","room":"x"}"#, r#"[1,2]"#] {
        ws.send(bad).await;
        let reply = ws.recv_json().await;
        assert!(reply["error"].is_string(), "{bad} → {reply}");
    }
    ws.send(r#"{"name":"ok","room":"x"}"#).await;
    assert_eq!(ws.recv_json().await["event"], "members");
}

#[tokio::test]
async fn count_answers_one_less_over_websocket() {
    let server = TestServer::start().await;
    let mut ws = server.ws("/count/websocket").await;
    ws.send(r#"{"count":1000}"#).await;
    assert_eq!(ws.recv().await, r#"{"count":999}"#);
    ws.send(r#"{"count":"many"}"#).await;
    assert!(ws.recv_json().await["error"].is_string());
    ws.send(r#"{"count":1}"#).await;
    assert_eq!(json(&ws.recv().await), json!({"count":0}));
}

#[tokio::test]
async fn count_answers_over_plain_http_with_keep_alive() {
    let server = TestServer::start().await;
    let mut client = HttpClient::connect(server.addr).await;
    for n in [10, 9, 1] {
        assert_eq!(client.get(&format!("/count/xhr?count={n}")).await, (200, format!(r#"{{"count":{}}}"#, n - 1)));
    }
    let (status, body) = client.get("/count/xhr?count=ten").await;
    assert_eq!(status, 400);
    assert!(json(&body)["error"].is_string());
    assert_eq!(client.get("/count/xhr").await.0, 400);
}

#[tokio::test]
async fn a_member_who_joins_later_gets_the_rooms_last_messages_first() {
    let mut config = server::Config::default();
    config.rooms.history = 2;
    let server = TestServer::with(config).await;
    let mut alice = join(&server, "alice", "lobby").await;
    for text in ["one", "two", "three"] {
        alice.send(&json!({"message": text}).to_string()).await;
        assert_eq!(alice.recv_json().await["message"], text);
    }
    // Joining is not kept, nor is another room's talk.
    let mut elsewhere = join(&server, "eve", "kitchen").await;
    elsewhere.send(&json!({"message": "not here"}).to_string()).await;

    let mut bob = server.ws("/chat/websocket").await;
    bob.send(&json!({"name": "bob", "room": "lobby"}).to_string()).await;
    let members = bob.recv_whole().await;
    assert_eq!((&members["event"], &members["offset"]), (&json!("members"), &json!(3)), "the room's position: its newest message");
    let epoch = members["epoch"].as_str().unwrap();
    // Exactly as delivered, oldest first, at most two.
    assert_eq!(
        bob.recv().await,
        format!(r#"{{"event":"history","room":"lobby","messages":[{{"name":"alice","room":"lobby","message":"two","offset":2,"epoch":"{epoch}"}},{{"name":"alice","room":"lobby","message":"three","offset":3,"epoch":"{epoch}"}}]}}"#)
    );
    assert_eq!(bob.recv_json().await, json!({"event":"join","name":"bob","room":"lobby"}));

    // A room with nothing kept sends no history event.
    let mut carol = join(&server, "carol", "attic").await;
    carol.send(&json!({"message": "hi"}).to_string()).await;
    assert_eq!(carol.recv_json().await["message"], "hi");
}
