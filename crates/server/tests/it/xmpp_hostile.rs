//! XMPP against hostile clients: each attack a client can make over XMPP
//! meets a bound or a clear error, and harms no other client. Assertions
//! are about counts, bounds and bytes, never timings.

use serde_json::json;
use server::Config;

use crate::support::{TestServer, until};
use crate::xmpp::Client;

const MUC: &str = "http://jabber.org/protocol/muc";

/// Joins `room` as `nick` and reads up to the room's subject, which ends
/// the join (XEP-0045 §7.2.16).
async fn join(c: &mut Client, room: &str, nick: &str) {
    c.send(&format!("<presence to='{room}@conference.localhost/{nick}'><x xmlns='{MUC}'/></presence>")).await;
    while c.stanza().await.find("subject", "jabber:client").is_none() {}
}

/// Bytes the server has read from XMPP clients over TCP.
async fn bytes_in(server: &TestServer) -> f64 {
    server.metric(r#"switchboard_bytes_in_total{app="xmpp",transport="tcp"}"#).await.unwrap_or(0.0)
}

#[tokio::test]
async fn a_character_split_across_two_reads_arrives_whole() {
    let server = TestServer::with_xmpp(Config::default()).await;
    let mut alice = server.chat_member("alice", "lobby").await;
    let (mut bob, _) = Client::login(server.xmpp.unwrap()).await;
    join(&mut bob, "lobby", "bob").await;
    assert_eq!(alice.recv_json().await["event"], "join");
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
    let mut alice = server.chat_member("alice", "lobby").await;
    let (mut bob, _) = Client::login(server.xmpp.unwrap()).await;
    join(&mut bob, "lobby", "bob").await;
    assert_eq!(alice.recv_json().await["event"], "join");
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
