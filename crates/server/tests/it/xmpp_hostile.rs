//! XMPP against hostile clients: each attack a client can make over XMPP
//! meets a bound or a clear error, and harms no other client. Assertions
//! are about counts, bounds and bytes, never timings.

use std::time::Duration;

use serde_json::json;
use server::Config;
use tokio::io::AsyncWriteExt;

use crate::support::{TestServer, Ws, until};
use crate::xmpp::{Client, HEADER, OPEN, WsClient};

const MUC: &str = "http://jabber.org/protocol/muc";

/// Joins `room` as `nick` and reads up to the room's subject, which ends
/// the join (XEP-0045 §7.2.16).
async fn join(c: &mut Client, room: &str, nick: &str) {
    c.send(&format!("<presence to='{room}@conference.localhost/{nick}'><x xmlns='{MUC}'/></presence>")).await;
    while c.stanza().await.find("subject", "jabber:client").is_none() {}
}

/// `alice`, a chat member of `lobby`, and an XMPP occupant `nick` of the
/// same room, whose join alice has seen.
async fn lobby(server: &TestServer, nick: &str) -> (Ws, Client) {
    let mut alice = server.chat_member("alice", "lobby").await;
    let (mut c, _) = Client::login(server.xmpp.unwrap()).await;
    join(&mut c, "lobby", nick).await;
    assert_eq!(alice.recv_json().await["event"], "join");
    (alice, c)
}

/// Logs in anonymously on a server that may offer more, and binds: the
/// client and its JID.
async fn anonymous(addr: std::net::SocketAddr) -> (Client, String) {
    let (mut c, _, _) = Client::authenticate(addr, "<auth xmlns='urn:ietf:params:xml:ns:xmpp-sasl' mechanism='ANONYMOUS'/>").await;
    c.send("<iq type='set' id='b'><bind xmlns='urn:ietf:params:xml:ns:xmpp-bind'/></iq>").await;
    let bound = c.stanza().await;
    let jid = bound.find("bind", "urn:ietf:params:xml:ns:xmpp-bind").unwrap().find("jid", "urn:ietf:params:xml:ns:xmpp-bind").unwrap().text_content();
    (c, jid)
}

/// Bytes the server has read from XMPP clients over TCP.
async fn bytes_in(server: &TestServer) -> f64 {
    server.metric(r#"switchboard_bytes_in_total{app="xmpp",transport="tcp"}"#).await.unwrap_or(0.0)
}

#[tokio::test]
async fn a_character_split_across_two_reads_arrives_whole() {
    let server = TestServer::with_xmpp(Config::default()).await;
    let (mut alice, mut bob) = lobby(&server, "bob").await;
    let body = "Привет, мир ☺ 𝄞";
    let stanza = format!("<message to='lobby@conference.localhost' type='groupchat'><body>{body}</body></message>");
    // Cut inside each kind of character: two, three and four bytes long.
    for wanted in ['и', '☺', '𝄞'] {
        let at = stanza.find(wanted).unwrap() + 1;
        let before = bytes_in(&server).await;
        bob.send_bytes(&stanza.as_bytes()[..at]).await;
        // The first part has been read before the rest is sent.
        until(|| async { (bytes_in(&server).await >= before + at as f64).then_some(()) }).await;
        bob.send_bytes(&stanza.as_bytes()[at..]).await;
        assert_eq!(alice.recv_json().await, json!({"name": "bob", "room": "lobby", "message": body}), "cut inside {wanted}");
        assert_eq!(bob.stanza().await.find("body", "jabber:client").unwrap().text_content(), body);
    }
}

#[tokio::test]
async fn characters_xml_forbids_never_reach_an_xmpp_stream() {
    let server = TestServer::with_xmpp(Config::default()).await;
    let (mut alice, mut bob) = lobby(&server, "bob").await;
    // From a chat member: replaced, so the occupant's stream stays well-formed
    // (`Client` reads it with the server's own strict parser).
    alice.send(&json!({"message": "a\u{1}b\u{0}c\u{fffe}"}).to_string()).await;
    assert_eq!(alice.recv_json().await["message"], "a\u{1}b\u{0}c\u{fffe}");
    let heard = bob.stanza().await;
    assert_eq!(heard.find("body", "jabber:client").unwrap().text_content(), "a\u{fffd}b\u{fffd}c\u{fffd}");
    // A later occupant gets the room's history safe too.
    let (mut carol, _) = Client::login(server.xmpp.unwrap()).await;
    carol.send(&format!("<presence to='lobby@conference.localhost/carol'><x xmlns='{MUC}'/></presence>")).await;
    let history = loop {
        let stanza = carol.stanza().await;
        if stanza.find("delay", "urn:xmpp:delay").is_some() {
            break stanza;
        }
    };
    assert_eq!(history.find("body", "jabber:client").unwrap().text_content(), "a\u{fffd}b\u{fffd}c\u{fffd}");
    // From an occupant: refused as not well-formed, raw or as a reference,
    // and nobody else hears it.
    for bad in ["c&#1;d", "c\u{1}d", "c&#xFFFF;d"] {
        let (mut mallory, _) = Client::login(server.xmpp.unwrap()).await;
        join(&mut mallory, "lobby", "mallory").await;
        mallory.send(&format!("<message to='lobby@conference.localhost' type='groupchat'><body>{bad}</body></message>")).await;
        assert_eq!(mallory.stream_error().await, "not-well-formed", "{bad:?}");
    }
    bob.send("<message to='lobby@conference.localhost' type='groupchat'><body>still here</body></message>").await;
    loop {
        let stanza = bob.stanza().await;
        let body = stanza.find("body", "jabber:client").map(wire::xmpp::Element::text_content);
        assert_ne!(body.as_deref().map(|b| b.contains('d')), Some(true), "a refused message was passed on: {stanza:?}");
        if body.as_deref() == Some("still here") {
            break;
        }
    }
}

/// Sends a subscription request to a user who does not exist, then a ping,
/// and reads what comes back up to the ping's answer: roster pushes only,
/// no presence (RFC 6121 §8.5.1: the request is ignored).
async fn refused_subscription(c: &mut Client, to: &str, status: &str) {
    c.send(&format!("<presence to='{to}' type='subscribe'><status>{status}</status></presence>")).await;
    c.send("<iq type='get' id='after'><ping xmlns='urn:xmpp:ping'/></iq>").await;
    loop {
        let stanza = c.stanza().await;
        if stanza.get("id") == Some("after") {
            return;
        }
        assert_eq!(stanza.name, "iq", "only roster pushes come before the ping's answer: {stanza:?}");
        c.send(&format!("<iq type='result' id='{}'/>", stanza.get("id").unwrap())).await;
    }
}

#[tokio::test]
async fn subscription_requests_to_nobody_are_ignored_and_not_kept() {
    let mut config = Config { xmpp_accounts: vec![server::AccountEntry::new("ann", "pw")], ..Config::default() };
    config.xmpp.plain_unencrypted = true;
    let server = TestServer::with_xmpp(config).await;
    let addr = server.xmpp.unwrap();
    let waiting = r#"switchboard_xmpp_subscription_requests_waiting "#;
    let big = "x".repeat(30_000);
    for _ in 0..3 {
        let (mut c, _) = anonymous(addr).await;
        for i in 0..20 {
            refused_subscription(&mut c, &format!("ghost{i}@localhost"), &big).await;
        }
    }
    assert_eq!(server.metric(waiting).await, Some(0.0), "nothing kept for users that do not exist");
    // A request to an account that is offline waits for it, within its byte bound.
    let (mut c, jid) = anonymous(addr).await;
    c.send(&format!("<presence to='ann@localhost' type='subscribe'><status>{big}</status></presence>")).await;
    c.send("<iq type='get' id='p'><ping xmlns='urn:xmpp:ping'/></iq>").await;
    while c.stanza().await.get("id") != Some("p") {}
    assert_eq!(server.metric(waiting).await, Some(1.0));
    let mut ann = crate::xmpp::bound_account(addr, "ann", "desk").await;
    ann.send("<presence/>").await;
    let request = loop {
        let stanza = ann.stanza().await;
        if stanza.name == "presence" && stanza.get("type") == Some("subscribe") {
            break stanza;
        }
    };
    assert_eq!(request.get("from"), Some(jid.split('/').next().unwrap()));
    assert!(request.find("status", "jabber:client").is_none(), "a request over 1 KiB is kept without its status");
}

#[tokio::test]
async fn parked_sessions_are_bounded_and_anonymous_ones_are_never_parked() {
    let mut config = Config { xmpp_accounts: vec![server::AccountEntry::new("fay", "pw")], ..Config::default() };
    config.xmpp.plain_unencrypted = true;
    config.xmpp.max_parked = 2;
    let server = TestServer::with_xmpp(config).await;
    let addr = server.xmpp.unwrap();
    let mut alice = server.chat_member("alice", "lobby").await;
    let parked = r#"switchboard_xmpp_parked_sessions "#;
    // Anonymous: resumption is not offered, and a broken connection leaves the room at once.
    let (mut anon, _) = anonymous(addr).await;
    anon.send("<enable xmlns='urn:xmpp:sm:3' resume='true'/>").await;
    let enabled = anon.stanza().await;
    assert_eq!((enabled.name.as_str(), enabled.get("resume"), enabled.get("id")), ("enabled", None, None));
    join(&mut anon, "lobby", "ghost").await;
    assert_eq!(alice.recv_json().await, json!({"event": "join", "name": "ghost", "room": "lobby"}));
    drop(anon);
    assert_eq!(alice.recv_json().await, json!({"event": "leave", "name": "ghost", "room": "lobby"}));
    // An account's sessions are parked, three of them past a bound of two:
    // the first parked leaves its room when the third is parked.
    let mut ids = Vec::new();
    for n in 0..3 {
        let mut c = crate::xmpp::bound_account(addr, "fay", &format!("r{n}")).await;
        c.send("<enable xmlns='urn:xmpp:sm:3' resume='true'/>").await;
        let enabled = c.stanza().await;
        ids.push(enabled.get("id").unwrap().to_owned());
        join(&mut c, "lobby", &format!("fay{n}")).await;
        assert_eq!(alice.recv_json().await["name"], format!("fay{n}"));
        drop(c);
        until(|| async { (server.metric(parked).await == Some((n + 1).min(2) as f64)).then_some(()) }).await;
    }
    assert_eq!(alice.recv_json().await, json!({"event": "leave", "name": "fay0", "room": "lobby"}));
    // The first can no longer be resumed; the last can.
    let mut clients = Vec::new();
    for (id, resumed) in [(&ids[0], false), (&ids[2], true)] {
        let mut c = crate::xmpp::login_account(addr, "fay", "pw").await;
        c.send(&format!("<resume xmlns='urn:xmpp:sm:3' previd='{id}' h='0'/>")).await;
        assert_eq!(c.stanza().await.name, if resumed { "resumed" } else { "failed" });
        clients.push(c);
    }
    assert_eq!(server.metric(parked).await, Some(1.0), "fay1 waits; fay2 is connected again");
}

/// A server whose XMPP clients have `login` to bind and are pinged after
/// `ping` of silence.
async fn impatient(login: Duration, ping: Duration) -> TestServer {
    let mut config = Config::default();
    config.xmpp.login_timeout = login;
    config.server.ping_interval = ping;
    TestServer::with_xmpp(config).await
}

#[tokio::test]
async fn a_socket_that_does_not_log_in_in_time_is_closed_with_connection_timeout() {
    let server = impatient(Duration::from_millis(300), Duration::from_secs(25)).await;
    let addr = server.xmpp.unwrap();
    for sent in ["", "<?xml version='1.0'?><stream:stream to='local", HEADER, &format!("{HEADER}<auth xmlns='urn:ietf:params:xml:ns:xmpp-sasl' mechanism='PLAIN'>")] {
        let mut c = Client::connect(addr).await;
        c.send(sent).await;
        assert_eq!(c.stream_error().await, "connection-timeout", "after {sent:?}");
        assert!(c.event().await.is_none(), "and the socket is closed");
    }
    assert_eq!(server.metric(r#"switchboard_refused_total{app="xmpp",reason="login_timeout"} "#).await, Some(4.0));
}

#[tokio::test]
async fn a_websocket_stream_that_does_not_log_in_in_time_is_closed_as_a_sockets_is() {
    let server = impatient(Duration::from_millis(300), Duration::from_secs(25)).await;
    let mut c = WsClient::connect(&server).await;
    c.send(OPEN).await;
    assert_eq!(c.element().await.name, "open");
    assert_eq!(c.element().await.name, "features");
    let error = c.element().await;
    assert_eq!((error.name.as_str(), error.ns.as_str()), ("error", wire::xmpp::STREAMS_NS));
    assert_eq!(error.elements().next().map(|e| e.name.as_str()), Some("connection-timeout"));
    assert_eq!(c.element().await.name, "close");
    assert!(c.closed().await);
    assert_eq!(server.metric(r#"switchboard_refused_total{app="xmpp",reason="login_timeout"} "#).await, Some(1.0));
}

#[tokio::test]
async fn a_silent_client_is_pinged_and_closed_if_it_never_answers() {
    let server = impatient(Duration::from_secs(60), Duration::from_millis(200)).await;
    let addr = server.xmpp.unwrap();
    let (mut quiet, jid) = Client::login(addr).await;
    let (mut lively, _) = Client::login(addr).await;
    // The lively one answers its ping, and is pinged again: still connected.
    for _ in 0..2 {
        let ping = lively.stanza().await;
        assert_eq!((ping.name.as_str(), ping.get("type"), ping.find("ping", "urn:xmpp:ping").is_some()), ("iq", Some("get"), true));
        lively.send(&format!("<iq type='result' id='{}' to='localhost'/>", ping.get("id").unwrap())).await;
    }
    let ping = quiet.stanza().await;
    assert_eq!((ping.get("to"), ping.get("from")), (Some(jid.as_str()), Some("localhost")));
    assert_eq!(quiet.stream_error().await, "connection-timeout");
    assert_eq!(server.metric(r#"switchboard_refused_total{app="xmpp",reason="ping_timeout"} "#).await, Some(1.0));
    lively.send("<iq type='get' id='still'><ping xmlns='urn:xmpp:ping'/></iq>").await;
    loop {
        let stanza = lively.stanza().await;
        if stanza.get("id") == Some("still") {
            assert_eq!(stanza.get("type"), Some("result"));
            break;
        }
    }
}

#[tokio::test]
async fn a_client_that_stops_reading_is_closed_as_a_slow_consumer_and_counted() {
    let mut config = Config::default();
    config.server.queue_limit = 64 * 1024;
    let server = TestServer::with_xmpp(config).await;
    let (mut alice, _stuck) = lobby(&server, "stuck").await;
    // Far more than the socket's buffers and the queue hold; the stuck
    // client reads none of it.
    let text = "y".repeat(16 * 1024);
    let slow = r#"switchboard_slow_consumer_disconnects_total{app="xmpp",transport="tcp"} "#;
    let mut sent = 0;
    let mut left = false;
    while !left || server.metric(slow).await != Some(1.0) {
        assert!(sent < 2000, "the stuck client was never closed");
        alice.send(&json!({"message": text}).to_string()).await;
        sent += 1;
        // The sender hears its own message, and the stuck client leave.
        loop {
            let event = alice.recv_json().await;
            if event["event"] == "leave" {
                assert_eq!(event["name"], "stuck");
                left = true;
                continue;
            }
            assert_eq!(event["message"].as_str().map(str::len), Some(text.len()));
            break;
        }
    }
}

#[tokio::test]
async fn an_xmpp_flood_is_held_to_the_rate_and_no_reader_loses_a_message() {
    let mut config = Config::default();
    config.rooms.max_members = 10;
    for mount in &mut config.mounts {
        mount.limits.max_message_rate = 20;
    }
    let server = TestServer::with_xmpp(config).await;
    let addr = server.xmpp.unwrap();
    let mut alice = server.chat_member("alice", "lobby").await;
    let (mut reader, _) = Client::login(addr).await;
    join(&mut reader, "lobby", "reader").await;
    let (mut flooder, _) = Client::login(addr).await;
    join(&mut flooder, "lobby", "flooder").await;
    let handled = r#"switchboard_messages_in_total{app="xmpp",transport="tcp"} "#;
    let before = server.metric(handled).await.unwrap();
    let pad = "z".repeat(1000);
    let flood: String = (0..60).map(|i| format!("<message to='lobby@conference.localhost' type='groupchat'><body>{i} {pad}</body></message>")).collect();
    flooder.send(&flood).await;
    let mut heard = Vec::new();
    while heard.len() < 60 {
        let stanza = reader.stanza().await;
        let Some(body) = stanza.find("body", "jabber:client") else { continue };
        heard.push(body.text_content().split(' ').next().unwrap().parse::<u32>().unwrap());
        if heard.len() == 12 {
            // Twenty a second, with a second's burst: far from all sixty yet.
            let now = server.metric(handled).await.unwrap() - before;
            assert!(now < 60.0, "{now} stanzas handled already: the flood is not held back");
        }
    }
    assert_eq!(heard, (0..60).collect::<Vec<_>>(), "every message, in order");
    let mut got = 0;
    while got < 60 {
        let event = alice.recv_json().await;
        if event["name"] == "flooder" && event.get("message").is_some() {
            got += 1;
        }
    }
}

/// A request whose `Content-Length` promises more than it sends: answered
/// 408 after the idle timeout, and the connection closed.
async fn stalled_body(server: &TestServer, path: &str) -> String {
    let mut tcp = tokio::net::TcpStream::connect(server.addr).await.unwrap();
    let head = format!("POST {path} HTTP/1.1\r\nHost: x\r\nContent-Type: text/xml\r\nContent-Length: 100000\r\n\r\n<body");
    tcp.write_all(head.as_bytes()).await.unwrap();
    String::from_utf8_lossy(&crate::support::read_to_close(&mut tcp).await).into_owned()
}

#[tokio::test]
async fn a_request_body_that_never_arrives_is_timed_out() {
    let mut config = Config::default();
    config.server.idle_timeout = Duration::from_millis(300);
    let server = TestServer::with_xmpp(config).await;
    let bosh = stalled_body(&server, "/http-bind").await;
    assert!(bosh.starts_with("HTTP/1.1 408"), "{bosh}");
    assert!(bosh.contains("policy-violation"), "{bosh}");
    let id = crate::support::session_id();
    assert_eq!(server.http("POST", &format!("/echo/000/{id}/xhr"), &[], b"").await.status(), 200);
    let send = stalled_body(&server, &format!("/echo/000/{id}/xhr_send")).await;
    assert!(send.starts_with("HTTP/1.1 408"), "{send}");
    for app in ["xmpp", "echo"] {
        assert_eq!(server.metric(&format!(r#"switchboard_refused_total{{app="{app}",reason="body_timeout"}} "#)).await, Some(1.0), "{app}");
    }
}

#[tokio::test]
async fn registrations_of_a_taken_name_are_refused_within_the_tries_and_stall_no_one() {
    let mut config = Config::default();
    config.xmpp.registration = 10;
    config.xmpp.plain_unencrypted = true;
    let server = TestServer::with_xmpp(config).await;
    let addr = server.xmpp.unwrap();
    let (mut canary, _) = anonymous(addr).await;
    let register = |id: usize| format!("<iq type='set' id='r{id}'><query xmlns='jabber:iq:register'><username>zoe</username><password>pw</password></query></iq>");
    let mut first = Client::connect(addr).await;
    first.send(HEADER).await;
    first.event().await;
    first.stanza().await;
    first.send(&register(0)).await;
    assert_eq!(first.stanza().await.get("type"), Some("result"));
    // Pipelined: three refusals (the default tries), then the stream ends.
    let mut flood = Client::connect(addr).await;
    flood.send(&format!("{HEADER}{}", (1..=500).map(register).collect::<String>())).await;
    flood.event().await;
    flood.stanza().await;
    for id in 1..=3 {
        let refused = flood.stanza().await;
        assert_eq!(refused.get("id"), Some(format!("r{id}").as_str()));
        assert!(refused.find("error", "jabber:client").unwrap().find("conflict", "urn:ietf:params:xml:ns:xmpp-stanzas").is_some(), "{refused:?}");
    }
    assert_eq!(flood.stream_error().await, "policy-violation");
    assert_eq!(server.metric(r#"switchboard_refused_total{app="xmpp",reason="registration"} "#).await, Some(3.0));
    canary.send("<iq type='get' id='c'><ping xmlns='urn:xmpp:ping'/></iq>").await;
    assert_eq!(canary.stanza().await.get("id"), Some("c"));
}

#[tokio::test]
async fn a_clients_stream_error_ends_the_stream() {
    let server = TestServer::with_xmpp(Config::default()).await;
    let (mut c, _) = Client::login(server.xmpp.unwrap()).await;
    c.send("<stream:error><undefined-condition xmlns='urn:ietf:params:xml:ns:xmpp-streams'/></stream:error>").await;
    assert_eq!(c.event().await, Some(wire::xmpp::StreamEvent::Close), "the server's side ends, with no error of its own");
    assert!(c.event().await.is_none());
}

/// PLAIN's `<auth/>` for `name` with `password`.
fn plain(name: &str, password: &str) -> String {
    use base64::Engine;
    let text = base64::engine::general_purpose::STANDARD.encode(format!("\0{name}\0{password}"));
    format!("<auth xmlns='urn:ietf:params:xml:ns:xmpp-sasl' mechanism='PLAIN'>{text}</auth>")
}

/// A client from `from` whose stream is open, past the features.
async fn opened(addr: std::net::SocketAddr, from: [u8; 4]) -> Client {
    let mut c = Client::connect_from(addr, from.into()).await;
    c.send(HEADER).await;
    c.event().await;
    c.stanza().await;
    c
}

#[tokio::test]
async fn failed_logins_are_bounded_per_address_across_connections() {
    let mut config = Config { xmpp_accounts: vec![server::AccountEntry::new("kim", "pw")], ..Config::default() };
    config.xmpp.plain_unencrypted = true;
    config.xmpp.auth_failures = 4;
    let server = TestServer::with_xmpp(config).await;
    let addr = server.xmpp.unwrap();
    // Two connections, two wrong guesses each: within the stream's three tries.
    for _ in 0..2 {
        let mut c = opened(addr, [127, 0, 0, 1]).await;
        for _ in 0..2 {
            c.send(&plain("kim", "guess")).await;
            let failure = c.stanza().await;
            assert_eq!((failure.name.as_str(), failure.elements().next().map(|e| e.name.as_str())), ("failure", Some("not-authorized")));
        }
    }
    // The address has used its four: a third connection is refused before
    // its password is looked at, even the right one.
    let mut c = opened(addr, [127, 0, 0, 1]).await;
    c.send(&plain("kim", "pw")).await;
    assert_eq!(c.stream_error().await, "policy-violation");
    assert_eq!(server.metric(r#"switchboard_refused_total{app="xmpp",reason="auth_failures"} "#).await, Some(1.0));
    assert_eq!(server.metric(r#"switchboard_refused_total{app="xmpp",reason="sasl"} "#).await, Some(4.0));
    // Another address is not held to the first one's failures.
    let mut other = opened(addr, [127, 0, 0, 2]).await;
    other.send(&plain("kim", "pw")).await;
    assert_eq!(other.stanza().await.name, "success");
}

#[tokio::test]
async fn a_session_is_in_at_most_its_share_of_rooms() {
    let mut config = Config::default();
    config.xmpp.max_rooms = 2;
    let server = TestServer::with_xmpp(config).await;
    let (mut c, _) = Client::login(server.xmpp.unwrap()).await;
    join(&mut c, "one", "ann").await;
    join(&mut c, "two", "ann").await;
    c.send(&format!("<presence to='three@conference.localhost/ann' id='j3'><x xmlns='{MUC}'/></presence>")).await;
    let refused = c.stanza().await;
    let error = refused.find("error", "jabber:client").expect("an error");
    assert_eq!((refused.get("type"), error.get("type")), (Some("error"), Some("wait")));
    assert!(error.find("resource-constraint", "urn:ietf:params:xml:ns:xmpp-stanzas").is_some(), "{refused:?}");
    assert_eq!(server.metric(r#"switchboard_refused_total{app="xmpp",reason="max_rooms"} "#).await, Some(1.0));
    // Out of one room, it may go into another.
    c.send("<presence to='one@conference.localhost/ann' type='unavailable'/>").await;
    assert_eq!(c.stanza().await.get("type"), Some("unavailable"));
    join(&mut c, "three", "ann").await;
    // Taken out of one by another (here, its owner destroys it): the same.
    let (mut owner, _) = Client::login(server.xmpp.unwrap()).await;
    join(&mut owner, "four", "olga").await;
    owner.send("<iq type='set' id='i' to='four@conference.localhost'><query xmlns='http://jabber.org/protocol/muc#owner'><x xmlns='jabber:x:data' type='submit'/></query></iq>").await;
    assert_eq!(owner.stanza().await.get("id"), Some("i"));
    c.send("<presence to='three@conference.localhost/ann' type='unavailable'/>").await;
    assert_eq!(c.stanza().await.get("type"), Some("unavailable"));
    join(&mut c, "four", "ann").await;
    owner.send("<iq type='set' id='d' to='four@conference.localhost'><query xmlns='http://jabber.org/protocol/muc#owner'><destroy/></query></iq>").await;
    loop {
        let stanza = c.stanza().await;
        if stanza.get("type") == Some("unavailable") {
            break;
        }
    }
    join(&mut c, "five", "ann").await;
}

#[tokio::test]
async fn a_session_waiting_to_be_resumed_holds_no_room_it_left_locked() {
    let mut config = Config { xmpp_accounts: vec![server::AccountEntry::new("ned", "pw")], ..Config::default() };
    config.xmpp.plain_unencrypted = true;
    let server = TestServer::with_xmpp(config).await;
    let addr = server.xmpp.unwrap();
    let mut ned = crate::xmpp::bound_account(addr, "ned", "desk").await;
    ned.send("<enable xmlns='urn:xmpp:sm:3' resume='true'/>").await;
    assert!(ned.stanza().await.get("id").is_some(), "resumable");
    // Made, so locked until configured: nobody else may enter it.
    join(&mut ned, "taken", "ned").await;
    let (mut other, _) = anonymous(addr).await;
    other.send(&format!("<presence to='taken@conference.localhost/eve' id='e1'><x xmlns='{MUC}'/></presence>")).await;
    assert!(other.stanza().await.find("error", "jabber:client").unwrap().find("item-not-found", "urn:ietf:params:xml:ns:xmpp-stanzas").is_some());
    // Its connection breaks: the session waits, but the room goes.
    drop(ned);
    until(|| async { (server.metric("switchboard_xmpp_parked_sessions ").await == Some(1.0)).then_some(()) }).await;
    other.send(&format!("<presence to='taken@conference.localhost/eve' id='e2'><x xmlns='{MUC}'/></presence>")).await;
    // Alone in it, the first presence eve gets is her own.
    let own = other.stanza().await;
    let codes: Vec<_> = own.find("x", "http://jabber.org/protocol/muc#user").unwrap().elements().filter(|e| e.name == "status").filter_map(|e| e.get("code").map(str::to_owned)).collect();
    assert!(codes.contains(&"201".to_owned()), "eve made the room anew: {codes:?}");
}
