//! Hostile clients at a scale that fits the suite: each attack meets its
//! bound, and the assertions are about counts and bounds, never timings.

use std::time::Duration;

use futures_util::{SinkExt, StreamExt};
use server::Config;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio_tungstenite::tungstenite::Message;

use crate::support::{read_to_close, PATIENCE, TestServer, session_id};

fn config(tune: impl FnOnce(&mut Config)) -> Config {
    let mut config = Config::default();
    tune(&mut config);
    config
}

/// Every mount capped at `n` SockJS sessions.
fn max_sessions(n: usize) -> Config {
    config(|c| {
        for m in &mut c.mounts {
            m.limits.max_sessions = n;
        }
    })
}

#[tokio::test]
async fn a_session_flood_meets_the_cap_and_each_refusal_says_why() {
    let server = TestServer::with(max_sessions(20)).await;
    let mut statuses = Vec::new();
    for _ in 0..30 {
        let reply = server.http("POST", &format!("/broadcast/000/{}/xhr", session_id()), &[], b"").await;
        if reply.status() == 503 {
            assert!(reply.text().contains("Too many sessions"), "{}", reply.text());
            assert_eq!(reply.header("retry-after"), Some("5"));
        }
        statuses.push(reply.status());
    }
    assert_eq!(statuses.iter().filter(|&&s| s == 200).count(), 20, "{statuses:?}");
    assert_eq!(statuses.iter().filter(|&&s| s == 503).count(), 10, "{statuses:?}");
    let refused = server.metric(r#"switchboard_refused_total{app="broadcast",reason="max_sessions"}"#).await;
    assert_eq!(refused, Some(10.0));
    // Another mount has its own cap.
    assert_eq!(server.http("POST", &format!("/echo/000/{}/xhr", session_id()), &[], b"").await.status(), 200);
}

#[tokio::test]
async fn sessions_opened_at_once_past_the_cap_are_each_answered_503() {
    let server = TestServer::with(max_sessions(20)).await;
    let opens = (0..60).map(|_| {
        let path = format!("/broadcast/000/{}/xhr", session_id());
        let server = &server;
        async move { server.http("POST", &path, &[], b"").await }
    });
    let replies = futures_util::future::join_all(opens).await;
    let opened = replies.iter().filter(|r| r.status() == 200 && r.text() == "o\n").count();
    let refused = replies.iter().filter(|r| r.status() == 503 && r.text().contains("Too many sessions")).count();
    let others: Vec<_> = replies.iter().filter(|r| r.status() != 503 && r.text() != "o\n").map(|r| r.text()).collect();
    assert_eq!((opened, refused), (20, 40), "answered otherwise: {others:?}");
}

#[tokio::test]
async fn new_sessions_from_one_address_are_rate_limited() {
    // 2 a second with bursts of 20.
    let server = TestServer::with(config(|c| c.server.session_rate = 2)).await;
    let mut ok = 0;
    let mut limited = 0;
    for _ in 0..25 {
        let reply = server.http("POST", &format!("/echo/000/{}/xhr", session_id()), &[], b"").await;
        match reply.status() {
            200 => ok += 1,
            429 => {
                assert!(reply.text().contains("slow down"), "{}", reply.text());
                limited += 1;
            }
            other => panic!("unexpected status {other}"),
        }
    }
    // The burst, plus what the rate refilled while the requests ran.
    assert!((20..25).contains(&ok), "{ok} allowed");
    assert_eq!(ok + limited, 25);
}

#[tokio::test]
async fn long_session_ids_are_refused() {
    let server = TestServer::start().await;
    let long = "x".repeat(65);
    let reply = server.http("POST", &format!("/echo/000/{long}/xhr"), &[], b"").await;
    assert_eq!(reply.status(), 400);
    assert!(reply.text().contains("at most 64 bytes"), "{}", reply.text());
    let fine = "x".repeat(64);
    assert_eq!(server.http("POST", &format!("/echo/000/{fine}/xhr"), &[], b"").await.status(), 200);
}

#[tokio::test]
async fn slowloris_connections_are_closed_by_the_header_timeout() {
    let server = TestServer::with(config(|c| {
        c.server.header_timeout = Duration::from_millis(500);
        c.server.idle_timeout = Duration::from_secs(60);
    }))
    .await;
    let mut clients = Vec::new();
    for _ in 0..20 {
        let mut stream = TcpStream::connect(server.addr).await.unwrap();
        stream.write_all(b"GET / HTTP/1.1\r\nHost: x\r\nX-Slow: ").await.unwrap();
        clients.push(stream);
    }
    // Each keeps dripping a byte; each is closed anyway.
    for mut stream in clients {
        let drip = async {
            loop {
                if stream.write_all(b"a").await.is_err() {
                    return;
                }
                let mut byte = [0u8; 1];
                match tokio::time::timeout(Duration::from_millis(100), stream.read(&mut byte)).await {
                    Ok(Ok(0) | Err(_)) => return,
                    Ok(Ok(_)) => {}
                    Err(_) => {}
                }
            }
        };
        tokio::time::timeout(PATIENCE, drip).await.expect("a slowloris client was never closed");
    }
    assert_eq!(server.get("/healthz").await.0, 200);
}

#[tokio::test]
async fn a_huge_request_head_gets_431() {
    let server = TestServer::start().await;
    let big = "v".repeat(20 * 1024);
    let mut stream = TcpStream::connect(server.addr).await.unwrap();
    let _ = stream.write_all(format!("GET / HTTP/1.1\r\nHost: x\r\nX-Big: {big}\r\n\r\n").as_bytes()).await;
    let answer = String::from_utf8_lossy(&read_to_close(&mut stream).await).into_owned();
    assert!(answer.starts_with("HTTP/1.1 431"), "{answer:?}");
}

#[tokio::test]
async fn idle_sockets_are_closed_and_past_the_cap_new_clients_are_answered_503() {
    let server = TestServer::with(config(|c| {
        c.server.max_connections = 5;
        c.server.idle_timeout = Duration::from_millis(500);
    }))
    .await;
    let mut idle = Vec::new();
    for _ in 0..5 {
        idle.push(TcpStream::connect(server.addr).await.unwrap());
    }
    // Every slot is held by a silent socket: the next client is told at once.
    let mut extra = TcpStream::connect(server.addr).await.unwrap();
    let _ = extra.write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n").await;
    let answer = String::from_utf8_lossy(&read_to_close(&mut extra).await).into_owned();
    assert!(answer.starts_with("HTTP/1.1 503"), "{answer:?}");
    assert!(answer.ends_with("server busy: too many connections"), "{answer:?}");
    // The silent ones are closed by the idle timeout, freeing the slots.
    for mut stream in idle {
        assert!(read_to_close(&mut stream).await.is_empty());
    }
    assert_eq!(server.get("/healthz").await, (200, "ok\n".to_owned()));
    let shed = server.metric(r#"switchboard_connections_shed_total{reason="max_connections"}"#).await;
    assert_eq!(shed, Some(1.0));
}

#[tokio::test]
async fn a_client_that_never_answers_pings_is_closed() {
    let server = TestServer::with(config(|c| c.server.ping_interval = Duration::from_millis(200))).await;
    let mut silent = server.raw_ws("/echo/websocket").await;
    let bytes = read_to_close(&mut silent).await;
    // One empty ping (0x89 0x00), then the close: 0x88, length, 1008, reason.
    assert!(bytes.starts_with(&[0x89, 0x00]), "{bytes:02x?}");
    let close = &bytes[2..];
    assert_eq!(close[0], 0x88, "{bytes:02x?}");
    assert_eq!(&close[2..4], &1008u16.to_be_bytes());
    assert_eq!(&close[4..], b"ping timeout: no answer to the server's ping");

    // A client that answers (tungstenite does) stays, ping after ping.
    let (mut ws, _) = tokio_tungstenite::connect_async(server.url("/echo/websocket")).await.unwrap();
    let mut pings = 0;
    while pings < 3 {
        match tokio::time::timeout(PATIENCE, ws.next()).await.unwrap().unwrap().unwrap() {
            Message::Ping(_) => pings += 1,
            other => panic!("unexpected {other:?}"),
        }
    }
    ws.send(Message::text("still here")).await.unwrap();
    loop {
        match tokio::time::timeout(PATIENCE, ws.next()).await.unwrap().unwrap().unwrap() {
            Message::Text(t) => break assert_eq!(t.as_str(), "still here"),
            Message::Ping(_) => {}
            other => panic!("unexpected {other:?}"),
        }
    }
}

#[tokio::test]
async fn the_server_answers_a_close_with_its_own_and_then_closes() {
    let server = TestServer::start().await;
    let mut stream = server.raw_ws("/echo/websocket").await;
    // A masked close frame with code 1000 (mask 0; masking with zeros is still masking).
    stream.write_all(&[0x88, 0x82, 0, 0, 0, 0, 0x03, 0xe8]).await.unwrap();
    let bytes = read_to_close(&mut stream).await;
    assert_eq!(bytes, [0x88, 0x02, 0x03, 0xe8]);
}

#[tokio::test]
async fn a_flooding_publisher_is_held_to_its_rate_and_the_readers_keep_every_message() {
    const RATE: u32 = 200;
    const SENT: usize = 600;
    let server = TestServer::with(config(|c| {
        for m in &mut c.mounts {
            m.limits.max_message_rate = RATE;
        }
    }))
    .await;
    let mut readers = Vec::new();
    for _ in 0..3 {
        readers.push(server.ws("/broadcast/websocket").await);
    }
    let (publisher, _) = tokio_tungstenite::connect_async(server.url("/broadcast/websocket")).await.unwrap();
    let (mut sink, mut publisher_in) = publisher.split();
    // The publisher also receives its own messages; drain them so it is not a slow consumer.
    let drain = tokio::spawn(async move { while let Some(Ok(_)) = publisher_in.next().await {} });
    let start = tokio::time::Instant::now();
    let flood = tokio::spawn(async move {
        for i in 0..SENT {
            sink.feed(Message::text(format!("m{i}"))).await.unwrap();
        }
        sink.flush().await.unwrap();
        sink
    });
    for reader in &mut readers {
        for i in 0..SENT {
            assert_eq!(reader.recv().await, format!("m{i}"));
        }
    }
    let took = start.elapsed();
    // The first second's worth passes at once; the rest at the rate.
    let floor = Duration::from_secs_f64((SENT as f64 - f64::from(RATE)) / f64::from(RATE) * 0.9);
    assert!(took >= floor, "{SENT} messages at {RATE}/s took only {took:?}");
    let _sink = flood.await.unwrap();
    drain.abort();
    let slow = server.metric(r#"switchboard_slow_consumer_disconnects_total{app="broadcast",transport="websocket"}"#).await;
    assert_eq!(slow.unwrap_or(0.0), 0.0, "nobody was evicted");
}

#[tokio::test]
async fn a_join_storm_meets_the_room_cap_and_the_join_rate() {
    let server = TestServer::with(config(|c| {
        c.rooms.max_members = 30;
        c.rooms.join_rate = 20;
    }))
    .await;
    let mut joined = Vec::new();
    let mut refused = Vec::new();
    for i in 0..60 {
        let mut ws = server.ws("/chat/websocket").await;
        ws.send(&format!(r#"{{"name":"user{i}","room":"storm"}}"#)).await;
        let first = ws.recv_json().await;
        match first.get("error") {
            Some(error) => refused.push(error.as_str().unwrap().to_owned()),
            None => {
                assert_eq!(first["event"], "members");
                joined.push(ws);
            }
        }
    }
    assert!(joined.len() <= 30, "{} joined", joined.len());
    assert!(joined.len() >= 20, "the burst of 20 is allowed: {} joined", joined.len());
    assert_eq!(joined.len() + refused.len(), 60);
    for error in &refused {
        assert!(
            error == "room \"storm\" is full (30 members)" || error == "room \"storm\" is taking too many joins; try again in a moment",
            "{error}"
        );
    }
}

#[tokio::test]
async fn the_member_list_is_cut_at_100_names_and_says_how_many() {
    let server = TestServer::with(config(|c| c.rooms.join_rate = 1000)).await;
    let mut members = Vec::new();
    for i in 0..101 {
        let mut ws = server.ws("/chat/websocket").await;
        ws.send(&format!(r#"{{"name":"m{i}","room":"big"}}"#)).await;
        let list = ws.recv_json().await;
        assert_eq!(list["members"].as_array().unwrap().len(), (i + 1).min(100));
        assert_eq!(list.get("total").and_then(|t| t.as_u64()), (i >= 100).then_some(101));
        members.push(ws);
    }
}

#[tokio::test]
async fn names_that_impersonate_are_refused_and_lookalikes_are_the_same_name() {
    let server = TestServer::start().await;
    let mut alice = server.ws("/chat/websocket").await;
    alice.send(r#"{"name":"alice","room":"lobby"}"#).await;
    assert_eq!(alice.recv_json().await["event"], "members");
    for lookalike in ["ａｌｉｃｅ", "Alice", " alice "] {
        let mut ws = server.ws("/chat/websocket").await;
        ws.send(&serde_json::json!({"name": lookalike, "room": "lobby"}).to_string()).await;
        let error = ws.recv_json().await;
        assert!(error["error"].as_str().unwrap().contains("is already taken"), "{lookalike:?}: {error}");
    }
    for fake in ["bob\nmallory: hi", "nul\u{0}", "\u{1b}[31mred", "evil\u{202e}gnp.exe", "zero\u{200b}width", "bell\u{7}"] {
        let mut ws = server.ws("/chat/websocket").await;
        ws.send(&serde_json::json!({"name": fake, "room": "lobby"}).to_string()).await;
        let error = ws.recv_json().await;
        assert!(error["error"].as_str().unwrap().starts_with("invalid name: "), "{fake:?}: {error}");
        // The client stays connected and can join under a fair name.
        ws.send(&serde_json::json!({"name": format!("fair{}", fake.len()), "room": "lobby"}).to_string()).await;
        assert_eq!(ws.recv_json().await["event"], "members");
    }
}
