//! XMPP over SockJS at the `/xmpp` mount: each SockJS message one RFC 7395
//! framing element, here over SockJS's WebSocket transport, meeting a
//! chat-app client in a room.

use std::collections::VecDeque;

use serde_json::json;
use wire::xmpp::Element;

use crate::support::{TestServer, Ws, session_id};

/// A SockJS client of the xmpp mount, taking the elements of `a[...]` frames one by one.
struct SockjsXmpp {
    ws: Ws,
    pending: VecDeque<String>,
}

impl SockjsXmpp {
    async fn connect(server: &TestServer) -> SockjsXmpp {
        let mut ws = server.ws(&format!("/xmpp/000/{}/websocket", session_id())).await;
        assert_eq!(ws.recv().await, "o");
        SockjsXmpp { ws, pending: VecDeque::new() }
    }

    async fn send(&mut self, xml: &str) {
        self.ws.send(&json!([xml]).to_string()).await;
    }

    /// The next message's text, whole.
    async fn text(&mut self) -> String {
        loop {
            if let Some(text) = self.pending.pop_front() {
                return text;
            }
            let frame = self.ws.recv().await;
            match frame.strip_prefix('a') {
                Some(array) => self.pending.extend(serde_json::from_str::<Vec<String>>(array).unwrap()),
                None => assert_eq!(frame, "h", "a heartbeat or messages, not {frame}"),
            }
        }
    }

    /// The next message, parsed as the one element standing alone it must be.
    async fn element(&mut self) -> Element {
        crate::xmpp::standalone(&self.text().await)
    }
}

#[tokio::test]
async fn xmpp_runs_over_sockjs_and_meets_the_chat_app() {
    let server = TestServer::with_xmpp(server::Config::default()).await;
    let open = "<open xmlns='urn:ietf:params:xml:ns:xmpp-framing' to='localhost' version='1.0'/>";
    let mut c = SockjsXmpp::connect(&server).await;
    c.send(open).await;
    assert_eq!(c.element().await.name, "open");
    let features = c.element().await;
    assert!(features.find("sm", "urn:xmpp:sm:3").is_none(), "no stream management before authentication");
    c.send("<auth xmlns='urn:ietf:params:xml:ns:xmpp-sasl' mechanism='ANONYMOUS'/>").await;
    assert_eq!(c.element().await.name, "success");
    c.send(open).await;
    assert_eq!(c.element().await.name, "open");
    assert!(c.element().await.find("bind", "urn:ietf:params:xml:ns:xmpp-bind").is_some());
    c.send("<iq xmlns='jabber:client' type='set' id='b'><bind xmlns='urn:ietf:params:xml:ns:xmpp-bind'/></iq>").await;
    assert_eq!(c.element().await.get("type"), Some("result"));
    c.send("<iq xmlns='jabber:client' type='get' id='p'><ping xmlns='urn:xmpp:ping'/></iq>").await;
    assert_eq!(c.element().await.get("id"), Some("p"));
    // Resumption is not offered over SockJS.
    c.send("<enable xmlns='urn:xmpp:sm:3' resume='true'/>").await;
    assert_eq!(c.element().await.get("id"), None, "enabled, but with no id to resume by");

    let mut alice = server.chat_member("alice", "lobby").await;
    c.send("<presence xmlns='jabber:client' to='lobby@conference.localhost/sam'/>").await;
    for _ in 0..3 {
        assert_eq!(c.element().await.ns, "jabber:client"); // alice, itself, the subject
    }
    assert_eq!(alice.recv_json().await["name"], "sam");
    c.send("<message xmlns='jabber:client' to='lobby@conference.localhost' type='groupchat'><body>over sockjs</body></message>").await;
    assert_eq!(alice.recv_json().await, json!({"name": "sam", "room": "lobby", "message": "over sockjs"}));
    assert_eq!(c.element().await.find("body", "jabber:client").unwrap().text_content(), "over sockjs");
    alice.send(&json!({"message": "hi sam"}).to_string()).await;
    assert_eq!(c.element().await.find("body", "jabber:client").unwrap().text_content(), "hi sam");

    // <close/> ends the XMPP stream, then the SockJS session (c[1000,...]).
    c.send("<close xmlns='urn:ietf:params:xml:ns:xmpp-framing'/>").await;
    assert_eq!(c.element().await.name, "close");
    assert_eq!(c.ws.recv().await, r#"c[1000,"the XMPP stream ended"]"#);
    assert_eq!(alice.recv_json().await["message"], "hi sam");
    assert_eq!(alice.recv_json().await, json!({"event": "leave", "name": "sam", "room": "lobby"}));
}

#[tokio::test]
async fn the_xmpp_mount_closes_its_clients_when_xmpp_is_off() {
    let server = TestServer::start().await;
    let mut c = SockjsXmpp::connect(&server).await;
    assert_eq!(c.ws.recv().await, r#"c[1011,"XMPP is off on this server (--xmpp-listen)"]"#);
}

#[tokio::test]
async fn a_client_sending_faster_than_its_xmpp_session_takes_stanzas_is_closed() {
    let mut config = server::Config::default();
    config.server.queue_limit = 1024;
    let server = TestServer::with_xmpp(config).await;
    let mut c = SockjsXmpp::connect(&server).await;
    // One SockJS frame of three messages, handed over at once: the first
    // waits for the session within the bound (--queue-limit), the second
    // would pass it.
    let big = format!("<message xmlns='jabber:client'><body>{}</body></message>", "x".repeat(600));
    c.ws.send(&json!([big, big, big]).to_string()).await;
    assert_eq!(c.ws.recv().await, r#"c[1008,"sending faster than the XMPP session takes stanzas"]"#);
}
