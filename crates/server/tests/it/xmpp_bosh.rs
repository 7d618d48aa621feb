//! XMPP over BOSH at `/http-bind`: sessions, `rid` order, held requests,
//! answers asked for again, and the conditions that end a session.

use std::collections::VecDeque;
use std::net::SocketAddr;

use serde_json::json;
use wire::bosh::Body;
use wire::xmpp::{Element, Limits};

use crate::support::{Reply, TestServer, request};

const XML: (&str, &str) = ("Content-Type", "text/xml; charset=utf-8");

/// One request of `body` to `/http-bind` on a fresh connection.
async fn post(addr: SocketAddr, body: &str) -> Reply {
    request(addr, "POST", "/http-bind", &[XML], body.as_bytes()).await
}

/// [`post`] in a task of its own, for a request that is held.
fn spawn_post(addr: SocketAddr, body: &str) -> tokio::task::JoinHandle<Reply> {
    let body = body.to_owned();
    tokio::spawn(async move { post(addr, &body).await })
}

/// A reply's body, parsed.
fn parsed(reply: &Reply) -> Body {
    assert_eq!(reply.header("content-type"), Some("text/xml; charset=utf-8"));
    Body::parse(reply.text().as_bytes(), Limits::default()).unwrap_or_else(|e| panic!("{e}: {}", reply.text()))
}

/// A BOSH client: its session id, the next `rid`, and stanzas received and
/// not yet taken.
struct Bosh {
    addr: SocketAddr,
    sid: String,
    rid: u64,
    pending: VecDeque<Element>,
}

impl Bosh {
    /// Creates a session; the answer's body is returned too.
    async fn create(server: &TestServer, extra: &str) -> (Bosh, Body) {
        let rid = 1000;
        let reply = post(
            server.addr,
            &format!("<body rid='{rid}' to='localhost' wait='60' hold='1' ver='1.6' xml:lang='en' xmpp:version='1.0' xmlns:xmpp='urn:xmpp:xbosh' xmlns='http://jabber.org/protocol/httpbind'{extra}/>"),
        )
        .await;
        assert_eq!(reply.status(), 200, "{}", reply.text());
        let body = parsed(&reply);
        let sid = body.get("sid").expect("a sid").to_owned();
        let pending = body.stanzas.iter().cloned().collect();
        (Bosh { addr: server.addr, sid, rid: rid + 1, pending }, body)
    }

    /// The next request's body around `stanzas`, with `attrs`.
    fn body(&mut self, attrs: &str, stanzas: &str) -> String {
        let rid = self.rid;
        self.rid += 1;
        format!("<body rid='{rid}' sid='{}'{attrs} xmlns='http://jabber.org/protocol/httpbind'>{stanzas}</body>", self.sid)
    }

    /// Sends `stanzas` in the next request and keeps what the answer brings.
    async fn send(&mut self, stanzas: &str) -> Body {
        let body = self.body("", stanzas);
        self.exchange(&body).await
    }

    async fn exchange(&mut self, body: &str) -> Body {
        let reply = post(self.addr, body).await;
        assert_eq!(reply.status(), 200, "{}", reply.text());
        let body = parsed(&reply);
        self.pending.extend(body.stanzas.iter().cloned());
        body
    }

    /// The next stanza, polling with empty requests until one comes.
    async fn stanza(&mut self) -> Element {
        loop {
            if let Some(stanza) = self.pending.pop_front() {
                return stanza;
            }
            let body = self.send("").await;
            assert_ne!(body.get("type"), Some("terminate"), "the session ended: {body:?}");
        }
    }

    /// Logs in anonymously, restarts and binds: the bound JID.
    async fn login(&mut self) -> String {
        let features = self.stanza().await;
        let mechanisms = features.find("mechanisms", "urn:ietf:params:xml:ns:xmpp-sasl").expect("SASL offered");
        assert!(mechanisms.elements().any(|m| m.text_content() == "ANONYMOUS"));
        self.send("<auth xmlns='urn:ietf:params:xml:ns:xmpp-sasl' mechanism='ANONYMOUS'/>").await;
        assert_eq!(self.stanza().await.name, "success");
        let restart = self.body(" to='localhost' xmpp:restart='true' xmlns:xmpp='urn:xmpp:xbosh'", "");
        self.exchange(&restart).await;
        assert!(self.stanza().await.find("bind", "urn:ietf:params:xml:ns:xmpp-bind").is_some(), "bind offered after the restart");
        self.send("<iq xmlns='jabber:client' type='set' id='b'><bind xmlns='urn:ietf:params:xml:ns:xmpp-bind'/></iq>").await;
        let bound = self.stanza().await;
        assert_eq!(bound.get("type"), Some("result"));
        bound.find("bind", "urn:ietf:params:xml:ns:xmpp-bind").unwrap().find("jid", "urn:ietf:params:xml:ns:xmpp-bind").unwrap().text_content()
    }
}

#[tokio::test]
async fn a_session_is_created_logs_in_pings_and_ends() {
    let server = TestServer::with_xmpp(server::Config::default()).await;
    let (mut c, created) = Bosh::create(&server, " ack='1'").await;
    for (name, value) in [
        ("wait", "60"),
        ("hold", "1"),
        ("requests", "2"),
        ("inactivity", "60"),
        ("ver", "1.6"),
        ("from", "localhost"),
        ("ack", "1000"),
        ("xmpp:version", "1.0"),
        ("xmpp:restartlogic", "true"),
    ] {
        assert_eq!(created.get(name), Some(value), "{name} in {created:?}");
    }
    assert_eq!(c.sid.len(), 32, "128 random bits");
    assert_eq!(created.stanzas.first().map(|f| (f.name.as_str(), f.ns.as_str())), Some(("features", wire::xmpp::STREAMS_NS)), "features come with the session");
    let jid = c.login().await;
    assert!(jid.contains("@localhost/"), "{jid}");
    c.send("<iq xmlns='jabber:client' type='get' id='p1' to='localhost'><ping xmlns='urn:xmpp:ping'/></iq>").await;
    let pong = c.stanza().await;
    assert_eq!((pong.name.as_str(), pong.get("type"), pong.get("id")), ("iq", Some("result"), Some("p1")));
    // The client ends it: answered with an empty terminating body, to the byte.
    let end = c.body(" type='terminate'", "<presence xmlns='jabber:client' type='unavailable'/>");
    let reply = post(server.addr, &end).await;
    assert_eq!((reply.status(), reply.text()), (200, "<body xmlns='http://jabber.org/protocol/httpbind' type='terminate'/>"));
    let after = c.body("", "");
    let reply = post(server.addr, &after).await;
    assert_eq!(reply.text(), "<body xmlns='http://jabber.org/protocol/httpbind' type='terminate' condition='item-not-found'/>");
}

#[tokio::test]
async fn a_held_request_is_answered_when_a_message_arrives_and_a_newer_one_takes_over() {
    let server = TestServer::with_xmpp(server::Config::default()).await;
    let (mut c, _) = Bosh::create(&server, "").await;
    let jid = c.login().await;
    // An empty request is held: nothing to send.
    let first = c.body("", "");
    let held = spawn_post(server.addr, &first);
    // A newer request takes over; the held one is answered at once, empty.
    let second = c.body("", "");
    let newer = spawn_post(server.addr, &second);
    let reply = held.await.unwrap();
    assert_eq!((reply.status(), reply.text()), (200, "<body xmlns='http://jabber.org/protocol/httpbind'/>"));
    // A message for it answers the newer request as soon as it comes.
    let (mut other, _) = crate::xmpp::Client::login(server.xmpp.unwrap()).await;
    other.send(&format!("<message to='{jid}' type='chat'><body>hello over bosh</body></message>")).await;
    let body = parsed(&newer.await.unwrap());
    assert_eq!(body.stanzas.len(), 1, "{body:?}");
    assert_eq!(body.stanzas[0].find("body", "jabber:client").unwrap().text_content(), "hello over bosh");
}

#[tokio::test]
async fn requests_are_handled_in_rid_order_and_an_answer_asked_for_again_is_the_same() {
    let server = TestServer::with_xmpp(server::Config::default()).await;
    let (mut c, _) = Bosh::create(&server, "").await;
    c.login().await;
    let mut alice = server.chat_member("alice", "lobby").await;
    c.send("<presence xmlns='jabber:client' to='lobby@conference.localhost/sam'/>").await;
    for _ in 0..3 {
        c.stanza().await; // alice, itself, the subject
    }
    assert_eq!(alice.recv_json().await["name"], "sam");
    let say = |text: &str| format!("<message xmlns='jabber:client' to='lobby@conference.localhost' type='groupchat'><body>{text}</body></message>");
    // The second request arrives first; it waits for the first.
    let one = c.body("", &say("one"));
    let two = c.body("", &say("two"));
    let later = spawn_post(server.addr, &two);
    let earlier = post(server.addr, &one).await;
    assert_eq!(alice.recv_json().await["message"], "one");
    assert_eq!(alice.recv_json().await["message"], "two");
    // One of the two may be held until there is more to say.
    alice.send(&json!({"message": "three"}).to_string()).await;
    let later = later.await.unwrap();
    // Asking again for an answer gets the same answer.
    for (request, reply) in [(&one, &earlier), (&two, &later)] {
        let again = post(server.addr, request).await;
        assert_eq!(again.text(), reply.text());
    }
    let mut said: Vec<String> = [&earlier, &later]
        .into_iter()
        .flat_map(|r| parsed(r).stanzas)
        .filter_map(|s| s.find("body", "jabber:client").map(Element::text_content))
        .collect();
    while said.len() < 3 {
        said.push(c.stanza().await.find("body", "jabber:client").unwrap().text_content());
    }
    assert_eq!(said, ["one", "two", "three"]);
}

#[tokio::test]
async fn what_is_not_a_request_of_a_session_is_answered_with_its_condition() {
    let server = TestServer::with_xmpp(server::Config::default()).await;
    let terminate = |condition: &str| format!("<body xmlns='http://jabber.org/protocol/httpbind' type='terminate' condition='{condition}'/>");
    for (body, status, condition) in [
        ("not xml", 400, "bad-request"),
        ("<body xmlns='http://jabber.org/protocol/httpbind' to='localhost'/>", 400, "bad-request"),
        ("<body rid='1' xmlns='urn:wrong' to='localhost'/>", 400, "bad-request"),
        ("<body rid='1' sid='nope' xmlns='http://jabber.org/protocol/httpbind'/>", 200, "item-not-found"),
        ("<body rid='1' to='example.org' xmlns='http://jabber.org/protocol/httpbind'/>", 200, "host-unknown"),
        ("<body rid='1' wait='soon' to='localhost' xmlns='http://jabber.org/protocol/httpbind'/>", 200, "bad-request"),
        // XEP-0124 §14: a rid stays below 2^53; one at 2^64-1 would wrap.
        ("<body rid='18446744073709551615' wait='60' hold='1' to='localhost' xmlns='http://jabber.org/protocol/httpbind'/>", 200, "bad-request"),
        ("<body rid='9007199254740992' wait='60' hold='1' to='localhost' xmlns='http://jabber.org/protocol/httpbind'/>", 200, "bad-request"),
    ] {
        let reply = post(server.addr, body).await;
        assert_eq!((reply.status(), reply.text()), (status, terminate(condition).as_str()), "{body}");
        assert_eq!(reply.header("access-control-allow-origin"), Some("*"));
    }
    // A rid past the window ends the session.
    let (mut c, _) = Bosh::create(&server, "").await;
    c.rid += 5;
    let far = c.body("", "");
    assert_eq!(post(server.addr, &far).await.text(), terminate("item-not-found"));
    c.rid -= 6;
    let next = c.body("", "");
    assert_eq!(parsed(&post(server.addr, &next).await).get("type"), Some("terminate"));
    // A body over the bound.
    let big = format!("<body rid='1' to='localhost' xmlns='http://jabber.org/protocol/httpbind'>{}</body>", " ".repeat(64 * 1024 * 8 + 1));
    assert_eq!(post(server.addr, &big).await.status(), 413);
    // Other methods, and a CORS preflight.
    let get = server.http("GET", "/http-bind", &[], b"").await;
    assert_eq!((get.status(), get.header("allow")), (405, Some("POST, OPTIONS")));
    let preflight = server.http("OPTIONS", "/http-bind", &[("Origin", "http://elsewhere.example"), ("Access-Control-Request-Method", "POST")], b"").await;
    assert_eq!(preflight.status(), 200);
    assert_eq!(preflight.header("access-control-allow-methods"), Some("POST, OPTIONS"));
    assert_eq!(preflight.header("access-control-allow-headers"), Some("Content-Type"));
}

#[tokio::test]
async fn a_client_that_predates_ver_is_told_by_http_status() {
    let server = TestServer::with_xmpp(server::Config::default()).await;
    let created = post(server.addr, "<body rid='5' to='localhost' xmlns='http://jabber.org/protocol/httpbind'/>").await;
    let body = parsed(&created);
    assert_eq!(body.get("ver"), None, "the answer names no version either");
    let sid = body.get("sid").unwrap();
    let far = post(server.addr, &format!("<body rid='50' sid='{sid}' xmlns='http://jabber.org/protocol/httpbind'/>")).await;
    assert_eq!(far.status(), 404);
}

#[tokio::test]
async fn sessions_are_bounded_and_expire_without_requests() {
    let mut config = server::Config::default();
    config.bosh.max_sessions = 1;
    config.bosh.inactivity = std::time::Duration::from_secs(1);
    let server = TestServer::with_xmpp(config).await;
    let (mut c, _) = Bosh::create(&server, "").await;
    let full = post(server.addr, "<body rid='1' to='localhost' ver='1.6' xmlns='http://jabber.org/protocol/httpbind'/>").await;
    assert_eq!((full.status(), full.header("retry-after")), (503, Some("5")));
    // Left without a request, it expires, and its slot is free again.
    let series = "switchboard_connections{app=\"xmpp\",transport=\"bosh\"}";
    assert_eq!(server.metric(series).await, Some(1.0));
    crate::support::until(|| async { (server.metric(series).await == Some(0.0)).then_some(()) }).await;
    let gone = c.body("", "");
    assert!(post(server.addr, &gone).await.text().contains("item-not-found"));
    assert_eq!(Bosh::create(&server, "").await.1.get("type"), None);
}

#[tokio::test]
async fn bosh_is_off_with_xmpp() {
    let server = TestServer::start().await;
    let reply = post(server.addr, "<body rid='1' to='localhost' xmlns='http://jabber.org/protocol/httpbind'/>").await;
    assert_eq!(reply.status(), 404);
}

#[tokio::test]
async fn one_address_holds_at_most_its_share_of_sessions() {
    let mut config = server::Config::default();
    config.bosh.max_sessions_per_address = 2;
    let server = TestServer::with_xmpp(config).await;
    let create = "<body rid='1' to='localhost' ver='1.6' wait='1' xmlns='http://jabber.org/protocol/httpbind'/>";
    let from = |last: u8| async move {
        crate::support::Raw::connect_from(server.addr, [127, 0, 0, last].into()).await.exchange("POST", "/http-bind", &[XML], create.as_bytes()).await
    };
    for _ in 0..2 {
        assert!(parsed(&from(1).await).get("sid").is_some());
    }
    let refused = from(1).await;
    assert_eq!((refused.status(), refused.header("retry-after")), (429, Some("5")));
    assert_eq!(parsed(&refused).get("condition"), Some("policy-violation"));
    assert_eq!(server.metric(r#"switchboard_refused_total{app="xmpp",reason="address_sessions"} "#).await, Some(1.0));
    assert!(parsed(&from(2).await).get("sid").is_some(), "another address has its own share");
}
