//! Federation between two servers of this project, each its own domain on
//! its own loopback address, with certificates from a private authority
//! the test makes: messages, presence subscriptions and iqs both ways,
//! the certificate checks, a domain that cannot be reached, and the
//! stream errors of RFC 6120 to the byte.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use futures_util::{SinkExt, StreamExt};
use tokio_tungstenite::tungstenite::Message;
use wire::xmpp::Element;

use crate::support::{PATIENCE, TestServer};
use crate::xmpp::{Client, bound_account_at};

const STANZAS: &str = "urn:ietf:params:xml:ns:xmpp-stanzas";

/// A private authority and the certificates it signs.
struct Authority {
    dir: tempfile::TempDir,
    issuer: rcgen::CertifiedIssuer<'static, rcgen::KeyPair>,
}

impl Authority {
    fn new() -> Authority {
        let dir = tempfile::tempdir().unwrap();
        let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
        params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        params.distinguished_name.push(rcgen::DnType::CommonName, "Switchboard test authority");
        let issuer = rcgen::CertifiedIssuer::self_signed(params, rcgen::KeyPair::generate().unwrap()).unwrap();
        std::fs::write(dir.path().join("ca.pem"), issuer.pem()).unwrap();
        Authority { dir, issuer }
    }

    /// A TLS connection to `server`'s listener, trusting the authority, for `domain`.
    async fn connect(&self, server: &TestServer, domain: &str) -> tokio_rustls::client::TlsStream<TcpStream> {
        let ca = rustls::pki_types::CertificateDer::from(self.issuer.der().to_vec());
        let tcp = TcpStream::connect(server.addr).await.unwrap();
        let name = rustls::pki_types::ServerName::try_from(domain.to_owned()).unwrap();
        crate::support::tls_connector(&ca).connect(name, tcp).await.unwrap()
    }

    fn trust(&self) -> PathBuf {
        self.dir.path().join("ca.pem")
    }

    /// A certificate naming `names`, signed by the authority: its files.
    fn certificate(&self, file: &str, names: &[&str]) -> server::TlsFiles {
        let key = rcgen::KeyPair::generate().unwrap();
        let params = rcgen::CertificateParams::new(names.iter().map(|n| n.to_string()).collect::<Vec<_>>()).unwrap();
        let cert = params.signed_by(&key, &self.issuer).unwrap();
        write_pair(self.dir.path(), file, &cert.pem(), &key.serialize_pem())
    }
}

fn write_pair(dir: &Path, file: &str, cert: &str, key: &str) -> server::TlsFiles {
    let (cert_path, key_path) = (dir.join(format!("{file}.pem")), dir.join(format!("{file}.key")));
    std::fs::write(&cert_path, cert).unwrap();
    std::fs::write(&key_path, key).unwrap();
    server::TlsFiles { cert: cert_path, key: key_path }
}

/// The configuration of the server of `domain`, with one account `user`
/// (password `pw`), showing `tls`, trusting `trust`, with `routes`.
fn config(domain: &str, user: &str, tls: server::TlsFiles, trust: &Path, routes: &[(&str, SocketAddr)]) -> server::Config {
    let mut config = server::Config { xmpp_accounts: vec![server::AccountEntry::new(user, "pw")], tls: Some(tls), ..server::Config::default() };
    config.xmpp.domain = domain.to_owned();
    config.xmpp.plain_unencrypted = true;
    config.federation.trust = Some(trust.to_owned());
    config.federation.routes = server::Routes(routes.iter().map(|(d, a)| (d.to_string(), (*a).into())).collect());
    config
}

/// Two federated servers: a.test (account alice) on 127.0.0.2 and b.test
/// (account bob) on 127.0.0.3, each with a certificate for its domain and
/// its MUC service's.
async fn two_domains(authority: &Authority) -> (TestServer, TestServer) {
    let ((a, _), (b, _)) = two_domains_at(authority).await;
    (a, b)
}

/// As `two_domains`, with where each listens for the other.
async fn two_domains_at(authority: &Authority) -> ((TestServer, SocketAddr), (TestServer, SocketAddr)) {
    let (a_s2s, b_s2s) = (TcpListener::bind("127.0.0.2:0").await.unwrap(), TcpListener::bind("127.0.0.3:0").await.unwrap());
    let (a_at, b_at) = (a_s2s.local_addr().unwrap(), b_s2s.local_addr().unwrap());
    let a_cert = authority.certificate("a", &["a.test", "conference.a.test"]);
    let b_cert = authority.certificate("b", &["b.test", "conference.b.test"]);
    let a = config("a.test", "alice", a_cert, &authority.trust(), &[("b.test", b_at), ("conference.b.test", b_at)]);
    let b = config("b.test", "bob", b_cert, &authority.trust(), &[("a.test", a_at), ("conference.a.test", a_at)]);
    ((TestServer::federated(a, a_s2s).await, a_at), (TestServer::federated(b, b_s2s).await, b_at))
}

/// A user bound as `desk`, its initial presence sent.
async fn online(server: &TestServer, domain: &str, user: &str) -> Client {
    let mut c = bound_account_at(server.xmpp.unwrap(), domain, user, "desk").await;
    c.send("<presence/>").await;
    c
}

fn body(stanza: &Element) -> String {
    stanza.find("body", "jabber:client").map(Element::text_content).unwrap_or_default()
}

/// The next stanza named `name`, past others (roster pushes, presence …).
#[tokio::test]
async fn users_of_two_domains_exchange_messages_presence_and_iqs() {
    let authority = Authority::new();
    let (a, b) = two_domains(&authority).await;
    let mut alice = online(&a, "a.test", "alice").await;
    let mut bob = online(&b, "b.test", "bob").await;

    alice.send("<message to='bob@b.test' type='chat' id='m1'><body>hello from a</body></message>").await;
    let got = bob.next_named("message").await;
    assert_eq!((got.get("from"), got.get("to"), got.get("id"), body(&got).as_str()), (Some("alice@a.test/desk"), Some("bob@b.test"), Some("m1"), "hello from a"));
    bob.send("<message to='alice@a.test/desk' type='chat' id='m2'><body>and back from b</body></message>").await;
    let got = alice.next_named("message").await;
    assert_eq!((got.get("from"), body(&got).as_str()), (Some("bob@b.test/desk"), "and back from b"));

    // A subscription across domains (RFC 6121 §3.1): asked, approved, and
    // then the contact's presence comes.
    alice.send("<presence to='bob@b.test' type='subscribe'/>").await;
    let asked = bob.next_named("presence").await;
    assert_eq!((asked.get("type"), asked.get("from")), (Some("subscribe"), Some("alice@a.test")));
    bob.send("<presence to='alice@a.test' type='subscribed'/>").await;
    let approved = alice.next_named("presence").await;
    assert_eq!((approved.get("type"), approved.get("from")), (Some("subscribed"), Some("bob@b.test")));
    let current = alice.next_named("presence").await;
    assert_eq!((current.get("type"), current.get("from")), (None, Some("bob@b.test/desk")));
    alice.send("<iq type='get' id='r1'><query xmlns='jabber:iq:roster'/></iq>").await;
    let roster = alice.answer("r1").await;
    let item = roster.find("query", "jabber:iq:roster").and_then(|q| q.elements().next()).cloned().unwrap();
    assert_eq!((item.get("jid"), item.get("subscription")), (Some("bob@b.test"), Some("to")));
    // Bob's next presence reaches his new subscriber on the other server.
    bob.send("<presence><show>away</show></presence>").await;
    let away = alice.next_named("presence").await;
    assert_eq!((away.get("from"), away.find("show", "jabber:client").map(Element::text_content)), (Some("bob@b.test/desk"), Some("away".into())));

    // An iq to a resource on the other server, answered by it; a ping to the
    // other server, answered by the server.
    alice.send("<iq type='get' id='p1' to='bob@b.test/desk'><ping xmlns='urn:xmpp:ping'/></iq>").await;
    let ping = bob.answer("p1").await;
    assert_eq!((ping.get("from"), ping.get("id")), (Some("alice@a.test/desk"), Some("p1")));
    bob.send("<iq type='result' id='p1' to='alice@a.test/desk'/>").await;
    let pong = alice.answer("p1").await;
    assert_eq!((pong.get("type"), pong.get("from")), (Some("result"), Some("bob@b.test/desk")));
    alice.send("<iq type='get' id='p2' to='b.test'><ping xmlns='urn:xmpp:ping'/></iq>").await;
    let pong = alice.answer("p2").await;
    assert_eq!((pong.get("type"), pong.get("from")), (Some("result"), Some("b.test")));
    // Nobody there: the other server says so.
    alice.send("<iq type='get' id='p3' to='bob@b.test/phone'><ping xmlns='urn:xmpp:ping'/></iq>").await;
    let refused = alice.answer("p3").await;
    assert_eq!(error_condition(&refused), "service-unavailable");

    // One connection between the two, both ways (XEP-0288): a.test opened
    // it, and b.test sends back over it.
    for (server, domain, opened, taken) in [(&a, "a.test", 1.0, 0.0), (&b, "b.test", 0.0, 1.0)] {
        let streams = |direction: &str| format!("switchboard_s2s_streams{{direction=\"{direction}\",state=\"authenticated\",auth=\"external\"}}");
        assert_eq!(metric(server, &authority, domain, &streams("out")).await.unwrap_or(0.0), opened, "{domain} opened");
        assert_eq!(metric(server, &authority, domain, &streams("in")).await.unwrap_or(0.0), taken, "{domain} took");
    }
    // Alice's message, her request, and her three iqs.
    assert_eq!(metric(&a, &authority, "a.test", "switchboard_s2s_stanzas_total{direction=\"out\"}").await, Some(5.0));
}

/// The next stanza named `name` from `from`, past others.
async fn next_from(c: &mut Client, name: &str, from: &str) -> Element {
    loop {
        let stanza = c.next_named(name).await;
        if stanza.get("from") == Some(from) {
            return stanza;
        }
    }
}

/// a.test on two nodes over the link, each federating on its own (the
/// first, which hosts the link, on 127.0.0.2; the second on 127.0.0.4),
/// and b.test, which reaches a.test through the first: what b.test sends
/// to alice, online on the second node only, reaches her there, and her
/// answers reach b.test from her node; a probe that reaches the first
/// node is answered by the second for her resource there.
#[tokio::test]
async fn another_servers_stanzas_reach_a_user_on_another_node_of_the_domain() {
    let authority = Authority::new();
    let (a1_s2s, a2_s2s, b_s2s) = (TcpListener::bind("127.0.0.2:0").await.unwrap(), TcpListener::bind("127.0.0.4:0").await.unwrap(), TcpListener::bind("127.0.0.3:0").await.unwrap());
    let (a1_at, b_at) = (a1_s2s.local_addr().unwrap(), b_s2s.local_addr().unwrap());
    let broker = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let link = format!("node://{}", broker.local_addr().unwrap());
    let to_b = [("b.test", b_at), ("conference.b.test", b_at)];
    let a1 = config("a.test", "alice", authority.certificate("a1", &["a.test", "conference.a.test"]), &authority.trust(), &to_b);
    let mut a2 = config("a.test", "alice", authority.certificate("a2", &["a.test", "conference.a.test"]), &authority.trust(), &to_b);
    a2.broker.url = Some(link);
    let b = config("b.test", "bob", authority.certificate("b", &["b.test", "conference.b.test"]), &authority.trust(), &[("a.test", a1_at), ("conference.a.test", a1_at)]);
    let a1 = TestServer::federated_host(a1, a1_s2s, broker).await;
    let a2 = TestServer::federated(a2, a2_s2s).await;
    let b = TestServer::federated(b, b_s2s).await;
    let mut alice = online(&a2, "a.test", "alice").await;
    // Her node has taken her presence once it answers what she sent after it.
    alice.send("<iq type='get' id='s0'><ping xmlns='urn:xmpp:ping'/></iq>").await;
    assert_eq!(alice.answer("s0").await.get("type"), Some("result"));
    let mut bob = online(&b, "b.test", "bob").await;

    // To her bare JID, to her resource, and as a chat message to a
    // resource nobody holds (which goes on as to the bare JID).
    for (to, id) in [("alice@a.test", "f1"), ("alice@a.test/desk", "f2"), ("alice@a.test/phone", "f3")] {
        bob.send(&format!("<message to='{to}' type='chat' id='{id}'><body>to {to}</body></message>")).await;
        let got = alice.next_named("message").await;
        assert_eq!((got.get("from"), got.get("id"), body(&got)), (Some("bob@b.test/desk"), Some(id), format!("to {to}")));
    }
    // Directed presence.
    bob.send("<presence to='alice@a.test'><status>here</status></presence>").await;
    let seen = next_from(&mut alice, "presence", "bob@b.test/desk").await;
    assert_eq!(seen.find("status", "jabber:client").map(Element::text_content).as_deref(), Some("here"));
    // An iq to her resource, and her answer back over her node's stream.
    bob.send("<iq type='get' id='p1' to='alice@a.test/desk'><ping xmlns='urn:xmpp:ping'/></iq>").await;
    let ping = alice.answer("p1").await;
    assert_eq!(ping.get("from"), Some("bob@b.test/desk"));
    alice.send("<iq type='result' id='p1' to='bob@b.test/desk'/>").await;
    let pong = bob.answer("p1").await;
    assert_eq!((pong.get("type"), pong.get("from")), (Some("result"), Some("alice@a.test/desk")));
    // No node holds that resource.
    bob.send("<iq type='get' id='p2' to='alice@a.test/phone'><ping xmlns='urn:xmpp:ping'/></iq>").await;
    assert_eq!(error_condition(&bob.answer("p2").await), "service-unavailable");

    // bob subscribes to alice, who approves from a resource on the first
    // node; her resource on the second shows she is away.
    let mut laptop = crate::xmpp::bound_account_at(a1.xmpp.unwrap(), "a.test", "alice", "laptop").await;
    laptop.send("<presence/>").await;
    bob.send("<presence to='alice@a.test' type='subscribe'/>").await;
    let asked = next_from(&mut laptop, "presence", "bob@b.test").await;
    assert_eq!(asked.get("type"), Some("subscribe"));
    laptop.send("<presence to='bob@b.test' type='subscribed'/>").await;
    let approved = next_from(&mut bob, "presence", "alice@a.test").await;
    assert_eq!(approved.get("type"), Some("subscribed"));
    // Her presence follows from both nodes, each over its own stream.
    let mut seen = std::collections::BTreeSet::new();
    while seen.len() < 2 {
        let presence = bob.next_named("presence").await;
        if presence.get("type").is_none() {
            seen.insert(presence.get("from").unwrap_or_default().to_owned());
        }
    }
    assert_eq!(seen.into_iter().collect::<Vec<_>>(), ["alice@a.test/desk", "alice@a.test/laptop"]);
    alice.send("<presence><show>away</show></presence>").await;
    // Her node has taken it once it answers what she sent after it.
    alice.send("<iq type='get' id='s1'><ping xmlns='urn:xmpp:ping'/></iq>").await;
    assert_eq!(alice.answer("s1").await.get("type"), Some("result"));
    // bob's second resource probes her presence through the first node:
    // the second answers for her resource there.
    let mut phone = crate::xmpp::bound_account_at(b.xmpp.unwrap(), "b.test", "bob", "phone").await;
    phone.send("<presence/>").await;
    let probed = next_from(&mut phone, "presence", "alice@a.test/desk").await;
    assert_eq!(probed.find("show", "jabber:client").map(Element::text_content).as_deref(), Some("away"));
}

#[tokio::test]
async fn a_message_from_another_server_to_an_anonymous_user_not_available_is_refused_not_kept() {
    let authority = Authority::new();
    let (a, b) = two_domains(&authority).await;
    let mut alice = online(&a, "a.test", "alice").await;
    // Bound on b.test with no account, and no presence sent yet.
    let (mut guest, _, _) = Client::authenticate_at(b.xmpp.unwrap(), "b.test", "<auth xmlns='urn:ietf:params:xml:ns:xmpp-sasl' mechanism='ANONYMOUS'/>").await;
    guest.send("<iq type='set' id='g'><bind xmlns='urn:ietf:params:xml:ns:xmpp-bind'/></iq>").await;
    let bound = guest.answer("g").await;
    let jid = bound.find("bind", "urn:ietf:params:xml:ns:xmpp-bind").unwrap().find("jid", "urn:ietf:params:xml:ns:xmpp-bind").unwrap().text_content();
    let bare = jid.split('/').next().unwrap();
    alice.send(&format!("<message to='{bare}' type='chat' id='x1'><body>for nobody</body></message>")).await;
    let refused = alice.next_named("message").await;
    assert_eq!((refused.get("type"), refused.get("id"), error_condition(&refused).as_str()), (Some("error"), Some("x1"), "service-unavailable"), "{refused:?}");
    // Once available, it gets messages, and nothing was kept for it.
    guest.send("<presence/>").await;
    alice.send(&format!("<message to='{bare}' type='chat' id='x2'><body>now</body></message>")).await;
    let got = guest.next_named("message").await;
    assert_eq!((got.get("id"), body(&got).as_str()), (Some("x2"), "now"));
}

/// The value of one metric of a server whose listener has TLS with a
/// certificate of `authority` for `domain`.
async fn metric(server: &TestServer, authority: &Authority, domain: &str, series: &str) -> Option<f64> {
    let mut tls = authority.connect(server, domain).await;
    tls.write_all(b"GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").await.unwrap();
    let mut out = Vec::new();
    tokio::time::timeout(PATIENCE, tls.read_to_end(&mut out)).await.expect("the metrics").unwrap();
    let text = String::from_utf8_lossy(&out);
    text.lines().find_map(|l| l.strip_prefix(series).and_then(|v| v.trim().parse().ok()))
}

/// A chat-app member over WebSocket with TLS, in `room` as `name`, past
/// its `members` and `join` events.
async fn chat_member(server: &TestServer, authority: &Authority, domain: &str, name: &str, room: &str) -> Wss {
    let tls = authority.connect(server, domain).await;
    let url = format!("wss://{domain}/chat/websocket");
    let (socket, _) = tokio_tungstenite::client_async(url, tls).await.unwrap();
    let mut ws = Wss(socket);
    ws.send(&serde_json::json!({"name": name, "room": room}).to_string()).await;
    assert_eq!(ws.recv_json().await["event"], "members");
    assert_eq!(ws.recv_json().await["event"], "join");
    ws
}

/// A chat-app client over WebSocket with TLS.
struct Wss(tokio_tungstenite::WebSocketStream<tokio_rustls::client::TlsStream<TcpStream>>);

impl Wss {
    async fn send(&mut self, text: &str) {
        self.0.send(Message::text(text)).await.unwrap();
    }

    /// The next text message, as JSON.
    async fn recv_json(&mut self) -> serde_json::Value {
        loop {
            match tokio::time::timeout(PATIENCE, self.0.next()).await.expect("a message in time") {
                Some(Ok(Message::Text(text))) => return crate::support::json(&text),
                Some(Ok(_)) => continue,
                other => panic!("expected a message, got {other:?}"),
            }
        }
    }
}

/// The condition of an error stanza.
fn error_condition(stanza: &Element) -> String {
    assert_eq!(stanza.get("type"), Some("error"), "{stanza:?}");
    let error = stanza.find("error", "jabber:client").expect("an error");
    error.elements().find(|e| e.ns == STANZAS).map(|e| e.name.clone()).unwrap_or_default()
}

#[tokio::test]
async fn a_certificate_that_does_not_name_its_domain_is_refused_and_the_sender_told() {
    let authority = Authority::new();
    let b_s2s = TcpListener::bind("127.0.0.3:0").await.unwrap();
    let b_at = b_s2s.local_addr().unwrap();
    let b = TestServer::federated(config("b.test", "bob", authority.certificate("b", &["b.test"]), &authority.trust(), &[]), b_s2s).await;
    // a.test shows a certificate for another name, from the same authority.
    let wrong = authority.certificate("wrong", &["elsewhere.test"]);
    let a = TestServer::federated(config("a.test", "alice", wrong, &authority.trust(), &[("b.test", b_at)]), TcpListener::bind("127.0.0.2:0").await.unwrap()).await;
    let mut alice = online(&a, "a.test", "alice").await;
    let _bob = online(&b, "b.test", "bob").await;
    alice.send("<message to='bob@b.test' type='chat' id='m1'><body>let me in</body></message>").await;
    let refused = alice.next_named("message").await;
    assert_eq!((refused.get("id"), refused.get("from"), error_condition(&refused).as_str()), (Some("m1"), Some("bob@b.test"), "remote-server-not-found"));
    assert_eq!(body(&refused), "let me in", "the error carries what failed");
    assert_eq!(metric(&b, &authority, "b.test", "switchboard_s2s_failures_total{reason=\"certificate\"}").await, Some(1.0));
    assert_eq!(metric(&b, &authority, "b.test", "switchboard_s2s_streams{direction=\"in\",state=\"authenticated\",auth=\"external\"}").await.unwrap_or(0.0), 0.0);
}

#[tokio::test]
async fn a_domain_that_cannot_be_reached_answers_its_senders_and_nothing_waits_for_ever() {
    let authority = Authority::new();
    // An address nobody listens on: bound, then closed.
    let gone = TcpListener::bind("127.0.0.4:0").await.unwrap().local_addr().unwrap();
    let a_cert = authority.certificate("a", &["a.test"]);
    let a = TestServer::federated(config("a.test", "alice", a_cert, &authority.trust(), &[("c.test", gone)]), TcpListener::bind("127.0.0.2:0").await.unwrap()).await;
    let mut alice = online(&a, "a.test", "alice").await;
    for id in ["m1", "m2"] {
        alice.send(&format!("<message to='carol@c.test' id='{id}'><body>anyone?</body></message>")).await;
    }
    alice.send("<iq type='get' id='q1' to='carol@c.test/x'><ping xmlns='urn:xmpp:ping'/></iq>").await;
    for id in ["m1", "m2", "q1"] {
        let refused = loop {
            let stanza = alice.stanza().await;
            if stanza.get("id") == Some(id) {
                break stanza;
            }
        };
        assert_eq!(error_condition(&refused), "remote-server-not-found", "{id}");
    }
    assert_eq!(metric(&a, &authority, "a.test", "switchboard_s2s_waiting").await, Some(0.0));
}

/// Sends `bytes` to `at` and reads what comes back until the socket closes.
async fn exchange(at: SocketAddr, bytes: &str) -> String {
    let mut tcp = TcpStream::connect(at).await.unwrap();
    tcp.write_all(bytes.as_bytes()).await.unwrap();
    let mut out = Vec::new();
    tokio::time::timeout(PATIENCE, tcp.read_to_end(&mut out)).await.expect("the server closes").unwrap();
    String::from_utf8(out).unwrap()
}

/// What the server says after its header (whose id is random).
fn after_header(text: &str) -> &str {
    &text[text.find("'>").expect("a header") + 2..]
}

#[tokio::test]
async fn a_stream_from_another_server_gets_the_stream_errors_rfc_6120_names() {
    let authority = Authority::new();
    let (_b, at) = lone_b(&authority).await;
    let header = |to: &str, ns: &str| {
        format!("<?xml version='1.0'?><stream:stream xmlns='{ns}' xmlns:stream='http://etherx.jabber.org/streams' from='a.test' to='{to}' version='1.0'>")
    };
    let error = |condition: &str, text: &str| {
        format!("<stream:error><{condition} xmlns=\"urn:ietf:params:xml:ns:xmpp-streams\"/><text xmlns=\"urn:ietf:params:xml:ns:xmpp-streams\">{text}</text></stream:error></stream:stream>")
    };
    // A domain not served here.
    let said = exchange(at, &header("nowhere.test", "jabber:server")).await;
    assert!(said.starts_with("<?xml version='1.0'?><stream:stream xmlns='jabber:server' xmlns:db='jabber:server:dialback' xmlns:stream='http://etherx.jabber.org/streams' id='"), "{said}");
    assert!(said.contains(" from='b.test' to='a.test' version='1.0' xml:lang='en'>"), "{said}");
    assert_eq!(after_header(&said), error("host-unknown", "nowhere.test is not served here"));
    // A client's stream on the servers' port.
    let said = exchange(at, &header("b.test", "jabber:client")).await;
    assert_eq!(after_header(&said), error("invalid-namespace", "stanzas between servers are in jabber:server"));
    // A stanza before TLS: TLS is required.
    let said = exchange(at, &format!("{}<message from='x@a.test' to='bob@b.test'/>", header("b.test", "jabber:server"))).await;
    let features = "<stream:features><starttls xmlns=\"urn:ietf:params:xml:ns:xmpp-tls\"><required/></starttls></stream:features>";
    assert_eq!(after_header(&said), format!("{features}{}", error("policy-violation", "TLS is required between servers")));
}

/// Joins `room` as `nick` and reads up to the room's subject: the
/// presences of those already there, in the order they came.
async fn join(c: &mut Client, room: &str, nick: &str) -> Vec<Element> {
    c.send(&format!("<presence to='{room}/{nick}'><x xmlns='http://jabber.org/protocol/muc'/></presence>")).await;
    let mut presences = Vec::new();
    loop {
        let stanza = c.stanza().await;
        if stanza.name == "message" && stanza.find("subject", "jabber:client").is_some() {
            return presences;
        }
        if stanza.name == "presence" {
            presences.push(stanza);
        }
    }
}

/// The bodies of the next `n` groupchat messages `c` is sent, with who sent each.
async fn groupchat(c: &mut Client, n: usize) -> Vec<(String, String)> {
    let mut got = Vec::new();
    while got.len() < n {
        let stanza = c.stanza().await;
        if stanza.name == "message" && stanza.get("type") == Some("groupchat") {
            got.push((stanza.get("from").unwrap_or_default().to_owned(), body(&stanza)));
        }
    }
    got
}

#[tokio::test]
async fn a_user_of_each_domain_joins_a_room_of_the_other_with_a_chat_app_member_there() {
    let authority = Authority::new();
    let (a, b) = two_domains(&authority).await;
    let mut alice = online(&a, "a.test", "alice").await;
    let mut carol = chat_member(&b, &authority, "b.test", "carol", "lobby").await;

    // alice@a.test in lobby@conference.b.test, where carol (WebSocket) is.
    let there = join(&mut alice, "lobby@conference.b.test", "alice").await;
    let froms: Vec<_> = there.iter().map(|p| p.get("from").unwrap_or_default()).collect();
    assert_eq!(froms, ["lobby@conference.b.test/carol", "lobby@conference.b.test/alice"]);
    assert_eq!(carol.recv_json().await, serde_json::json!({"event": "join", "name": "alice", "room": "lobby"}));

    // One order for everyone: carol, alice and carol again.
    carol.send(&serde_json::json!({"message": "one"}).to_string()).await;
    alice.send("<message to='lobby@conference.b.test' type='groupchat'><body>two</body></message>").await;
    carol.send(&serde_json::json!({"message": "three"}).to_string()).await;
    let seen_by_alice = groupchat(&mut alice, 3).await;
    let mut seen_by_carol = Vec::new();
    for _ in 0..3 {
        let event = carol.recv_json().await;
        seen_by_carol.push((format!("lobby@conference.b.test/{}", event["name"].as_str().unwrap()), event["message"].as_str().unwrap().to_owned()));
    }
    assert_eq!(seen_by_alice, seen_by_carol);
    let mut bodies: Vec<_> = seen_by_alice.iter().map(|(_, b)| b.as_str()).collect();
    bodies.sort_unstable();
    assert_eq!(bodies, ["one", "three", "two"]);
    assert!(seen_by_alice.contains(&("lobby@conference.b.test/alice".into(), "two".into())));

    // alice leaves: carol sees her go, and b.test holds no guest.
    alice.send("<presence to='lobby@conference.b.test/alice' type='unavailable'/>").await;
    assert_eq!(carol.recv_json().await, serde_json::json!({"event": "leave", "name": "alice", "room": "lobby"}));
    let gone = alice.next_named("presence").await;
    assert_eq!((gone.get("type"), gone.get("from")), (Some("unavailable"), Some("lobby@conference.b.test/alice")));
    crate::support::until(|| async { (metric(&b, &authority, "b.test", "switchboard_s2s_guests").await == Some(0.0)).then_some(()) }).await;

    // And the other way: bob@b.test in lobby@conference.a.test with dave.
    let mut bob = online(&b, "b.test", "bob").await;
    let mut dave = chat_member(&a, &authority, "a.test", "dave", "lobby").await;
    join(&mut bob, "lobby@conference.a.test", "bob").await;
    assert_eq!(dave.recv_json().await["name"], "bob");
    bob.send("<message to='lobby@conference.a.test' type='groupchat'><body>from b</body></message>").await;
    assert_eq!(dave.recv_json().await, serde_json::json!({"name": "bob", "room": "lobby", "message": "from b"}));
    dave.send(&serde_json::json!({"message": "from a"}).to_string()).await;
    let got = groupchat(&mut bob, 2).await;
    assert_eq!(got, [("lobby@conference.a.test/bob".into(), "from b".into()), ("lobby@conference.a.test/dave".into(), "from a".into())]);
}

#[tokio::test]
async fn a_peer_that_goes_away_gets_its_senders_told_and_takes_stanzas_again_once_back() {
    let authority = Authority::new();
    let ((a, a_at), (b, b_at)) = two_domains_at(&authority).await;
    let mut alice = online(&a, "a.test", "alice").await;
    let mut bob = online(&b, "b.test", "bob").await;
    alice.send("<message to='bob@b.test' id='m1'><body>one</body></message>").await;
    assert_eq!(body(&bob.next_named("message").await), "one");

    // b.test stops: a.test's stream to it ends, and a message finds nobody.
    drop(bob);
    b.shutdown().await.unwrap().unwrap();
    alice.send("<message to='bob@b.test' id='m2'><body>two</body></message>").await;
    let refused = alice.next_named("message").await;
    assert_eq!((refused.get("id"), error_condition(&refused).as_str()), (Some("m2"), "remote-server-not-found"));

    // Back on the same address: the next message goes.
    let b_cert = authority.certificate("b2", &["b.test", "conference.b.test"]);
    let b = TestServer::federated(config("b.test", "bob", b_cert, &authority.trust(), &[("a.test", a_at)]), TcpListener::bind(b_at).await.unwrap()).await;
    let mut bob = online(&b, "b.test", "bob").await;
    alice.send("<message to='bob@b.test' id='m3'><body>three</body></message>").await;
    let got = bob.next_named("message").await;
    assert_eq!((got.get("id"), body(&got).as_str()), (Some("m3"), "three"));
}

/// Reads from `tls` until `want` has come, and returns all it read.
async fn read_until<S: tokio::io::AsyncRead + Unpin>(tls: &mut S, want: &str) -> String {
    let mut got = Vec::new();
    while !String::from_utf8_lossy(&got).contains(want) {
        let mut buf = [0u8; 4096];
        let n = tokio::time::timeout(PATIENCE, tls.read(&mut buf)).await.expect("more in time").unwrap();
        assert!(n > 0, "closed before {want:?}: {}", String::from_utf8_lossy(&got));
        got.extend_from_slice(&buf[..n]);
    }
    String::from_utf8(got).unwrap()
}

/// b.test (account bob, no routes) on 127.0.0.3, and where it listens
/// for other servers.
async fn lone_b(authority: &Authority) -> (TestServer, SocketAddr) {
    let s2s = TcpListener::bind("127.0.0.3:0").await.unwrap();
    let at = s2s.local_addr().unwrap();
    (TestServer::federated(config("b.test", "bob", authority.certificate("b", &["b.test"]), &authority.trust(), &[]), s2s).await, at)
}

/// Turns stream management (XEP-0198) on, as the other server, on a
/// stream `raw_peer` opened.
async fn enable_sm<S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin>(tls: &mut S) {
    tls.write_all(b"<enable xmlns='urn:xmpp:sm:3'/>").await.unwrap();
    assert_eq!(read_until(tls, "/>").await, "<enabled xmlns=\"urn:xmpp:sm:3\"/>");
}

/// An initiating server for a.test, written out by hand: a stream to the
/// server at `at` (b.test) authenticated with SASL EXTERNAL and a
/// certificate of `authority`, each step checked to the byte; with what
/// came after the last features in the same read.
async fn raw_peer(at: SocketAddr, authority: &Authority) -> (tokio_rustls::client::TlsStream<TcpStream>, String) {
    raw_peer_over(TcpStream::connect(at).await.unwrap(), authority).await
}

/// As `raw_peer`, over `tcp`.
async fn raw_peer_over<S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin>(mut tcp: S, authority: &Authority) -> (tokio_rustls::client::TlsStream<S>, String) {
    let header = "<?xml version='1.0'?><stream:stream xmlns='jabber:server' xmlns:stream='http://etherx.jabber.org/streams' from='a.test' to='b.test' version='1.0'>";
    tcp.write_all(header.as_bytes()).await.unwrap();
    read_until(&mut tcp, "</stream:features>").await;
    tcp.write_all(b"<starttls xmlns='urn:ietf:params:xml:ns:xmpp-tls'/>").await.unwrap();
    assert!(read_until(&mut tcp, "/>").await.ends_with("<proceed xmlns=\"urn:ietf:params:xml:ns:xmpp-tls\"/>"));
    let key = rcgen::KeyPair::generate().unwrap();
    let cert = rcgen::CertificateParams::new(vec!["a.test".to_owned()]).unwrap().signed_by(&key, &authority.issuer).unwrap();
    let mut roots = rustls::RootCertStore::empty();
    roots.add(rustls::pki_types::CertificateDer::from(authority.issuer.der().to_vec())).unwrap();
    let client = rustls::ClientConfig::builder_with_provider(std::sync::Arc::new(rustls::crypto::ring::default_provider()))
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots)
        .with_client_auth_cert(vec![cert.der().clone()], rustls::pki_types::PrivateKeyDer::try_from(key.serialize_der()).unwrap())
        .unwrap();
    let name = rustls::pki_types::ServerName::try_from("b.test").unwrap();
    let mut tls = tokio_rustls::TlsConnector::from(std::sync::Arc::new(client)).connect(name, tcp).await.unwrap();
    tls.write_all(header.as_bytes()).await.unwrap();
    let offered = read_until(&mut tls, "</stream:features>").await;
    let features = "<stream:features><mechanisms xmlns=\"urn:ietf:params:xml:ns:xmpp-sasl\"><mechanism>EXTERNAL</mechanism></mechanisms>\
                    <dialback xmlns=\"urn:xmpp:features:dialback\"><errors/></dialback><bidi xmlns=\"urn:xmpp:features:bidi\"/></stream:features>";
    assert!(offered.ends_with(features), "{offered}");
    // Both ways (XEP-0288), then the authorization identity, base64 of a.test.
    tls.write_all(b"<bidi xmlns='urn:xmpp:bidi'/><auth xmlns='urn:ietf:params:xml:ns:xmpp-sasl' mechanism='EXTERNAL'>YS50ZXN0</auth>").await.unwrap();
    assert_eq!(read_until(&mut tls, "/>").await, "<success xmlns=\"urn:ietf:params:xml:ns:xmpp-sasl\"/>");
    tls.write_all(header.as_bytes()).await.unwrap();
    let features = "<stream:features><sm xmlns=\"urn:xmpp:sm:3\"/></stream:features>";
    let said = read_until(&mut tls, features).await;
    let after = said.split_once(features).map(|(_, after)| after.to_owned()).unwrap_or_default();
    (tls, after)
}

#[tokio::test]
async fn a_stanza_from_a_domain_the_stream_is_not_authenticated_for_ends_it_with_invalid_from() {
    let authority = Authority::new();
    let (_b, at) = lone_b(&authority).await;
    let (mut tls, _) = raw_peer(at, &authority).await;
    // Authenticated for a.test, it claims to speak for c.test.
    tls.write_all(b"<message from='mallory@c.test' to='bob@b.test'><body>hi</body></message>").await.unwrap();
    let said = read_until(&mut tls, "</stream:stream>").await;
    assert_eq!(
        said,
        "<stream:error><invalid-from xmlns=\"urn:ietf:params:xml:ns:xmpp-streams\"/><text xmlns=\"urn:ietf:params:xml:ns:xmpp-streams\">this stream is authenticated for a.test, not c.test</text></stream:error></stream:stream>"
    );
}

#[tokio::test]
async fn dialback_lets_in_a_domain_whose_certificate_does_not_name_it_where_allowed_and_refuses_a_forged_key() {
    let authority = Authority::new();
    let (a_s2s, b_s2s) = (TcpListener::bind("127.0.0.2:0").await.unwrap(), TcpListener::bind("127.0.0.3:0").await.unwrap());
    let (a_at, b_at) = (a_s2s.local_addr().unwrap(), b_s2s.local_addr().unwrap());
    // a.test's certificate names another domain; b.test lets a.test in with dialback.
    let a_config = config("a.test", "alice", authority.certificate("a", &["elsewhere.test"]), &authority.trust(), &[("b.test", b_at)]);
    let mut b_config = config("b.test", "bob", authority.certificate("b", &["b.test"]), &authority.trust(), &[("a.test", a_at)]);
    b_config.federation.dialback = "a.test".parse().unwrap();
    let (a, b) = (TestServer::federated(a_config, a_s2s).await, TestServer::federated(b_config, b_s2s).await);
    let mut alice = online(&a, "a.test", "alice").await;
    let mut bob = online(&b, "b.test", "bob").await;
    alice.send("<message to='bob@b.test' id='m1'><body>by dialback</body></message>").await;
    let got = bob.next_named("message").await;
    assert_eq!((got.get("from"), body(&got).as_str()), (Some("alice@a.test/desk"), "by dialback"));
    // The other way b.test's certificate is enough; a.test's is taken for want of better, as dialback allows.
    bob.send("<message to='alice@a.test/desk' id='m2'><body>and back</body></message>").await;
    assert_eq!(body(&alice.next_named("message").await), "and back");
    let by_dialback = "switchboard_s2s_streams{direction=\"in\",state=\"authenticated\",auth=\"dialback\"}";
    assert_eq!(metric(&b, &authority, "b.test", by_dialback).await, Some(1.0));

    // A server claiming a.test with a key a.test never gave is refused.
    let header = "<?xml version='1.0'?><stream:stream xmlns='jabber:server' xmlns:db='jabber:server:dialback' xmlns:stream='http://etherx.jabber.org/streams' from='a.test' to='b.test' version='1.0'>";
    let mut tcp = TcpStream::connect(b_at).await.unwrap();
    tcp.write_all(header.as_bytes()).await.unwrap();
    read_until(&mut tcp, "</stream:features>").await;
    tcp.write_all(b"<starttls xmlns='urn:ietf:params:xml:ns:xmpp-tls'/>").await.unwrap();
    read_until(&mut tcp, "/>").await;
    let ca = rustls::pki_types::CertificateDer::from(authority.issuer.der().to_vec());
    let name = rustls::pki_types::ServerName::try_from("b.test").unwrap();
    let mut tls = crate::support::tls_connector(&ca).connect(name, tcp).await.unwrap();
    tls.write_all(header.as_bytes()).await.unwrap();
    let offered = read_until(&mut tls, "</stream:features>").await;
    assert!(
        offered.ends_with("<stream:features><dialback xmlns=\"urn:xmpp:features:dialback\"><errors/></dialback><bidi xmlns=\"urn:xmpp:features:bidi\"/></stream:features>"),
        "no certificate, so no EXTERNAL: {offered}"
    );
    tls.write_all(b"<db:result from='a.test' to='b.test'>0123456789abcdef</db:result>").await.unwrap();
    let said = read_until(&mut tls, "</stream:stream>").await;
    assert_eq!(
        said,
        "<result xmlns=\"jabber:server:dialback\" from=\"b.test\" to=\"a.test\" type=\"invalid\"/><stream:error><not-authorized xmlns=\"urn:ietf:params:xml:ns:xmpp-streams\"/><text xmlns=\"urn:ietf:params:xml:ns:xmpp-streams\">a.test&apos;s server did not vouch for the key</text></stream:error></stream:stream>"
    );
    assert_eq!(metric(&b, &authority, "b.test", "switchboard_s2s_failures_total{reason=\"dialback\"}").await, Some(1.0));
}

/// A name server on 127.0.0.5 answering from `records` (NXDOMAIN for
/// anything else), as a zone's server would: where it listens.
async fn name_server(records: Vec<hickory_proto::rr::Record>) -> SocketAddr {
    use hickory_proto::op::{Message, MessageType, ResponseCode};
    let socket = tokio::net::UdpSocket::bind("127.0.0.5:0").await.unwrap();
    let at = socket.local_addr().unwrap();
    tokio::spawn(async move {
        let mut buf = [0u8; 1500];
        while let Ok((n, from)) = socket.recv_from(&mut buf).await {
            let Ok(query) = Message::from_vec(&buf[..n]) else { continue };
            let mut reply = Message::new();
            reply.set_id(query.id()).set_message_type(MessageType::Response).set_op_code(query.op_code()).set_recursion_available(true);
            reply.add_queries(query.queries().to_vec());
            for question in query.queries() {
                reply.add_answers(records.iter().filter(|r| r.name() == question.name() && r.record_type() == question.query_type()).cloned());
            }
            if reply.answers().is_empty() {
                reply.set_response_code(ResponseCode::NXDomain);
            }
            let _ = socket.send_to(&reply.to_vec().unwrap(), from).await;
        }
    });
    at
}

#[tokio::test]
async fn another_domains_server_is_found_by_its_srv_record() {
    use hickory_proto::rr::{Name, RData, Record, rdata};
    let authority = Authority::new();
    let (a_s2s, b_s2s) = (TcpListener::bind("127.0.0.2:0").await.unwrap(), TcpListener::bind("127.0.0.3:0").await.unwrap());
    let (a_at, b_at) = (a_s2s.local_addr().unwrap(), b_s2s.local_addr().unwrap());
    // b.test's server is xmpp.b.test, on the port its SRV record gives.
    let name = |n: &str| Name::from_ascii(n).unwrap();
    let dns = name_server(vec![
        Record::from_rdata(name("_xmpp-server._tcp.b.test."), 60, RData::SRV(rdata::SRV::new(0, 5, b_at.port(), name("xmpp.b.test.")))),
        Record::from_rdata(name("xmpp.b.test."), 60, RData::A(rdata::A::new(127, 0, 0, 3))),
    ])
    .await;
    let mut a_config = config("a.test", "alice", authority.certificate("a", &["a.test"]), &authority.trust(), &[]);
    a_config.federation.dns = Some(dns);
    let b_config = config("b.test", "bob", authority.certificate("b", &["b.test"]), &authority.trust(), &[("a.test", a_at)]);
    let (a, b) = (TestServer::federated(a_config, a_s2s).await, TestServer::federated(b_config, b_s2s).await);
    let mut alice = online(&a, "a.test", "alice").await;
    let mut bob = online(&b, "b.test", "bob").await;
    alice.send("<message to='bob@b.test' id='m1'><body>found you</body></message>").await;
    assert_eq!(body(&bob.next_named("message").await), "found you");
    // A domain the name server does not know is not found.
    alice.send("<message to='carol@c.test' id='m2'><body>anyone?</body></message>").await;
    let refused = alice.next_named("message").await;
    assert_eq!((refused.get("id"), error_condition(&refused).as_str()), (Some("m2"), "remote-server-not-found"));
}

#[tokio::test]
async fn a_server_published_for_direct_tls_is_reached_with_tls_from_the_first_byte() {
    use hickory_proto::rr::{Name, RData, Record, rdata};
    let authority = Authority::new();
    let a_s2s = TcpListener::bind("127.0.0.2:0").await.unwrap();
    let a_at = a_s2s.local_addr().unwrap();
    // b.test takes servers with direct TLS only (XEP-0368), as its SRV record says.
    let b_tls = TcpListener::bind("127.0.0.3:0").await.unwrap();
    let name = |n: &str| Name::from_ascii(n).unwrap();
    let dns = name_server(vec![
        Record::from_rdata(name("_xmpps-server._tcp.b.test."), 60, RData::SRV(rdata::SRV::new(0, 5, b_tls.local_addr().unwrap().port(), name("xmpp.b.test.")))),
        Record::from_rdata(name("xmpp.b.test."), 60, RData::A(rdata::A::new(127, 0, 0, 3))),
    ])
    .await;
    let mut a_config = config("a.test", "alice", authority.certificate("a", &["a.test"]), &authority.trust(), &[]);
    a_config.federation.dns = Some(dns);
    let b_config = config("b.test", "bob", authority.certificate("b", &["b.test"]), &authority.trust(), &[("a.test", a_at)]);
    let a = TestServer::federated(a_config, a_s2s).await;
    let b = TestServer::federated_on(b_config, None, Some(b_tls)).await;
    let mut alice = online(&a, "a.test", "alice").await;
    let mut bob = online(&b, "b.test", "bob").await;
    alice.send("<message to='bob@b.test' id='m1'><body>straight to TLS</body></message>").await;
    assert_eq!(body(&bob.next_named("message").await), "straight to TLS");
    bob.send("<message to='alice@a.test/desk' id='m2'><body>back the same way</body></message>").await;
    assert_eq!(body(&alice.next_named("message").await), "back the same way");
    assert_eq!(metric(&b, &authority, "b.test", "switchboard_s2s_streams{direction=\"in\",state=\"authenticated\",auth=\"external\"}").await, Some(1.0));
}

/// A route given as `tls:ADDRESS` is reached with TLS from the first byte,
/// as an `_xmpps-server` record would say (no stream header nor STARTTLS
/// before it: two exchanges fewer on a slow link).
#[tokio::test]
async fn a_route_that_says_tls_is_reached_with_tls_from_the_first_byte() {
    let authority = Authority::new();
    let a_s2s = TcpListener::bind("127.0.0.2:0").await.unwrap();
    let a_at = a_s2s.local_addr().unwrap();
    let b_tls = TcpListener::bind("127.0.0.3:0").await.unwrap();
    let route: server::Route = format!("tls:{}", b_tls.local_addr().unwrap()).parse().unwrap();
    let mut a_config = config("a.test", "alice", authority.certificate("a", &["a.test"]), &authority.trust(), &[]);
    a_config.federation.routes = server::Routes(vec![("b.test".to_owned(), route)]);
    let b_config = config("b.test", "bob", authority.certificate("b", &["b.test"]), &authority.trust(), &[("a.test", a_at)]);
    let a = TestServer::federated(a_config, a_s2s).await;
    let b = TestServer::federated_on(b_config, None, Some(b_tls)).await;
    let mut alice = online(&a, "a.test", "alice").await;
    let mut bob = online(&b, "b.test", "bob").await;
    alice.send("<message to='bob@b.test' id='m1'><body>by the route, in TLS</body></message>").await;
    assert_eq!(body(&bob.next_named("message").await), "by the route, in TLS");
    assert_eq!(metric(&b, &authority, "b.test", "switchboard_s2s_streams{direction=\"in\",state=\"authenticated\",auth=\"external\"}").await, Some(1.0));
}

#[tokio::test]
async fn a_certificate_naming_its_domain_as_an_xmpp_addr_or_srv_id_vouches_for_it() {
    use rcgen::{CertificateParams, KeyPair, SanType};
    let authority = Authority::new();
    // Neither names a.test as a DNS name: one as an XmppAddr, one as an SRV-ID.
    let xmpp_addr = SanType::OtherName((vec![1, 3, 6, 1, 5, 5, 7, 8, 5], "a.test".into()));
    let srv_id = SanType::OtherName((vec![1, 3, 6, 1, 5, 5, 7, 8, 7], rcgen::OtherNameValue::Utf8String("_xmpp-server.a.test".into())));
    for (file, san) in [("xmppaddr", xmpp_addr), ("srvid", srv_id)] {
        let key = KeyPair::generate().unwrap();
        let mut params = CertificateParams::new(vec!["elsewhere.test".to_owned()]).unwrap();
        params.subject_alt_names.push(san);
        let cert = params.signed_by(&key, &authority.issuer).unwrap();
        let a_cert = write_pair(authority.dir.path(), file, &cert.pem(), &key.serialize_pem());
        let (a_s2s, b_s2s) = (TcpListener::bind("127.0.0.2:0").await.unwrap(), TcpListener::bind("127.0.0.3:0").await.unwrap());
        let (a_at, b_at) = (a_s2s.local_addr().unwrap(), b_s2s.local_addr().unwrap());
        let a = TestServer::federated(config("a.test", "alice", a_cert, &authority.trust(), &[("b.test", b_at)]), a_s2s).await;
        let b_cert = authority.certificate("b", &["b.test"]);
        let b = TestServer::federated(config("b.test", "bob", b_cert, &authority.trust(), &[("a.test", a_at)]), b_s2s).await;
        let mut alice = online(&a, "a.test", "alice").await;
        let mut bob = online(&b, "b.test", "bob").await;
        alice.send("<message to='bob@b.test' id='m1'><body>it is me</body></message>").await;
        assert_eq!(body(&bob.next_named("message").await), "it is me", "{file}");
    }
}

#[tokio::test]
async fn a_domain_past_its_bound_of_streams_is_refused_with_policy_violation() {
    let authority = Authority::new();
    let s2s = TcpListener::bind("127.0.0.3:0").await.unwrap();
    let at = s2s.local_addr().unwrap();
    let mut b_config = config("b.test", "bob", authority.certificate("b", &["b.test"]), &authority.trust(), &[]);
    b_config.federation.max_streams_per_domain = 1;
    let _b = TestServer::federated(b_config, s2s).await;
    let first = raw_peer(at, &authority).await;
    let (mut second, said) = raw_peer(at, &authority).await;
    let said = if said.contains("</stream:stream>") { said } else { said + &read_until(&mut second, "</stream:stream>").await };
    assert_eq!(
        said,
        "<stream:error><policy-violation xmlns=\"urn:ietf:params:xml:ns:xmpp-streams\"/><text xmlns=\"urn:ietf:params:xml:ns:xmpp-streams\">a.test is at its bound of 1 streams here</text></stream:error></stream:stream>"
    );
    // Once the first has gone, another may come.
    drop(first);
    crate::support::until(|| async {
        let (mut again, said) = raw_peer(at, &authority).await;
        if said.contains("policy-violation") {
            return None;
        }
        // Both ways: the server answers its ping on this stream.
        again.write_all(b"<iq type='get' id='p' from='a.test' to='b.test'><ping xmlns='urn:xmpp:ping'/></iq>").await.unwrap();
        let mut got = Vec::new();
        while !String::from_utf8_lossy(&got).contains("</stream:stream>") {
            let mut buf = [0u8; 512];
            match tokio::time::timeout(PATIENCE, again.read(&mut buf)).await {
                Ok(Ok(n)) if n > 0 => got.extend_from_slice(&buf[..n]),
                _ => break,
            }
            if String::from_utf8_lossy(&got).contains("type=\"result\"") {
                return Some(());
            }
        }
        None
    })
    .await;
}

#[tokio::test]
async fn stream_management_counts_what_another_server_sent_and_says_so_when_asked() {
    let authority = Authority::new();
    let (_b, at) = lone_b(&authority).await;
    let (mut tls, _) = raw_peer(at, &authority).await;
    enable_sm(&mut tls).await;
    // Two stanzas that ask for no answer, then the question.
    for _ in 0..2 {
        tls.write_all(b"<presence from='alice@a.test/r' to='bob@b.test/away'/>").await.unwrap();
    }
    tls.write_all(b"<r xmlns='urn:xmpp:sm:3'/>").await.unwrap();
    assert_eq!(read_until(&mut tls, "/>").await, "<a xmlns=\"urn:xmpp:sm:3\" h=\"2\"/>");
    // More acknowledged than it was sent ends the stream.
    tls.write_all(b"<a xmlns='urn:xmpp:sm:3' h='5'/>").await.unwrap();
    let said = read_until(&mut tls, "</stream:stream>").await;
    assert!(said.starts_with("<stream:error><undefined-condition "), "{said}");
}

/// A TCP stream that keeps every byte it reads, to count the TLS records
/// the other side wrote.
struct Tapped {
    tcp: TcpStream,
    read: std::sync::Arc<std::sync::Mutex<Vec<u8>>>,
}

impl tokio::io::AsyncRead for Tapped {
    fn poll_read(mut self: std::pin::Pin<&mut Self>, cx: &mut std::task::Context<'_>, buf: &mut tokio::io::ReadBuf<'_>) -> std::task::Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        let polled = std::pin::Pin::new(&mut self.tcp).poll_read(cx, buf);
        let new = buf.filled()[before..].to_vec();
        self.read.lock().unwrap().extend_from_slice(&new);
        polled
    }
}

impl tokio::io::AsyncWrite for Tapped {
    fn poll_write(mut self: std::pin::Pin<&mut Self>, cx: &mut std::task::Context<'_>, buf: &[u8]) -> std::task::Poll<std::io::Result<usize>> {
        std::pin::Pin::new(&mut self.tcp).poll_write(cx, buf)
    }
    fn poll_flush(mut self: std::pin::Pin<&mut Self>, cx: &mut std::task::Context<'_>) -> std::task::Poll<std::io::Result<()>> {
        std::pin::Pin::new(&mut self.tcp).poll_flush(cx)
    }
    fn poll_shutdown(mut self: std::pin::Pin<&mut Self>, cx: &mut std::task::Context<'_>) -> std::task::Poll<std::io::Result<()>> {
        std::pin::Pin::new(&mut self.tcp).poll_shutdown(cx)
    }
}

/// How many whole TLS records `bytes` holds (each a 5-byte header with its
/// length, then that many bytes).
fn records(bytes: &[u8]) -> usize {
    let (mut at, mut count) = (0, 0);
    while at + 5 <= bytes.len() {
        at += 5 + usize::from(u16::from_be_bytes([bytes[at + 3], bytes[at + 4]]));
        count += 1;
    }
    count
}

/// On a stream that carries stanzas both ways, the answer to the other
/// server's `<r/>` rides at the head of the next batch going its way (the
/// answer to a ping, here), in one TLS record, one packet, instead of
/// taking a packet of its own ahead of it.
#[tokio::test]
async fn the_answer_to_an_ack_request_rides_on_the_next_stanza_out() {
    let authority = Authority::new();
    let (_b, at) = lone_b(&authority).await;
    let read = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let (mut tls, _) = raw_peer_over(Tapped { tcp: TcpStream::connect(at).await.unwrap(), read: read.clone() }, &authority).await;
    enable_sm(&mut tls).await;
    let before = read.lock().unwrap().len();
    // The question first: its answer waits for the ping's, and counts it.
    tls.write_all(b"<r xmlns='urn:xmpp:sm:3'/><iq type='get' id='p1' from='alice@a.test/r' to='b.test'><ping xmlns='urn:xmpp:ping'/></iq>").await.unwrap();
    let said = read_until(&mut tls, "<r xmlns=\"urn:xmpp:sm:3\"/>").await;
    assert_eq!(said, "<a xmlns=\"urn:xmpp:sm:3\" h=\"1\"/><iq type=\"result\" from=\"b.test\" to=\"alice@a.test/r\" id=\"p1\"/><r xmlns=\"urn:xmpp:sm:3\"/>");
    assert_eq!(records(&read.lock().unwrap()[before..]), 1, "the answer and the stanza in one record");
}

/// This side asks how much the other handled (`<r/>`) with its first
/// batch, then not with every one: after 64 stanzas sent without asking
/// (or a few seconds), each request and its answer being bytes on the line.
#[tokio::test]
async fn requests_for_acknowledgement_go_with_the_first_batch_then_sparingly() {
    let authority = Authority::new();
    let (_b, at) = lone_b(&authority).await;
    let (mut tls, _) = raw_peer(at, &authority).await;
    enable_sm(&mut tls).await;
    let ping = |id: usize| format!("<iq type='get' id='p{id}' from='alice@a.test/r' to='b.test'><ping xmlns='urn:xmpp:ping'/></iq>");
    let pong = |id: usize| format!("<iq type=\"result\" from=\"b.test\" to=\"alice@a.test/r\" id=\"p{id}\"/>");
    tls.write_all(ping(1).as_bytes()).await.unwrap();
    assert_eq!(read_until(&mut tls, "<r xmlns=\"urn:xmpp:sm:3\"/>").await, format!("{}<r xmlns=\"urn:xmpp:sm:3\"/>", pong(1)));
    tls.write_all(ping(2).as_bytes()).await.unwrap();
    assert_eq!(read_until(&mut tls, &pong(2)).await, pong(2), "no request with the second");
    // 63 more: the 64th sent without asking is asked about.
    let pings: String = (3..=65).map(ping).collect();
    tls.write_all(pings.as_bytes()).await.unwrap();
    let said = read_until(&mut tls, "<r xmlns=\"urn:xmpp:sm:3\"/>").await;
    let expected: String = (3..=65).map(pong).collect();
    assert_eq!(said, format!("{expected}<r xmlns=\"urn:xmpp:sm:3\"/>"));
}

/// The bodies of the messages in `c`'s archive (XEP-0313), oldest first,
/// each with who it was from.
async fn archived(c: &mut Client) -> Vec<(String, String)> {
    c.archived_messages().await.iter().map(|m| (m.get("from").unwrap_or_default().to_owned(), body(m))).collect()
}

/// Messages between users of two servers are in both users' archives, as
/// each user's preferences say.
#[tokio::test]
async fn messages_between_users_of_two_domains_are_in_both_users_archives() {
    let authority = Authority::new();
    let (a, b) = two_domains(&authority).await;
    let mut alice = online(&a, "a.test", "alice").await;
    let mut bob = online(&b, "b.test", "bob").await;
    alice.send("<message to='bob@b.test' type='chat' id='m1'><body>keep this</body></message>").await;
    let got = bob.next_named("message").await;
    // The copy bob gets carries its id in his archive, given by his server.
    let sid = got.find("stanza-id", "urn:xmpp:sid:0").expect("a stanza-id");
    assert_eq!(sid.get("by"), Some("bob@b.test"));
    let kept = [("alice@a.test/desk".to_owned(), "keep this".to_owned())];
    assert_eq!(archived(&mut bob).await, kept);
    assert_eq!(archived(&mut alice).await, kept);
    // Each server keeps what its user's preferences say (XEP-0441): bob
    // never keeps alice's messages, alice keeps none of hers.
    bob.send("<iq type='set' id='p'><prefs xmlns='urn:xmpp:mam:2' default='always'><never><jid>alice@a.test</jid></never></prefs></iq>").await;
    alice.send("<iq type='set' id='p'><prefs xmlns='urn:xmpp:mam:2' default='never'/></iq>").await;
    for c in [&mut alice, &mut bob] {
        assert_eq!(c.answer("p").await.get("type"), Some("result"));
    }
    alice.send("<message to='bob@b.test' type='chat' id='m2'><body>forget this</body></message>").await;
    let got = bob.next_named("message").await;
    assert_eq!((body(&got).as_str(), got.find("stanza-id", "urn:xmpp:sid:0")), ("forget this", None));
    assert_eq!(archived(&mut bob).await, kept);
    assert_eq!(archived(&mut alice).await, kept);
}

/// How a zero-handshake pair's connections go: bare, each write deflated,
/// or TLS with each side's certificate pinned by the other.
#[derive(Debug, Clone, Copy, PartialEq)]
enum ZeroLink {
    Bare,
    Compressed,
    Pinned,
}

/// The SHA-256 of the certificate in `files`.
fn certificate_sha256(files: &server::TlsFiles) -> [u8; 32] {
    use base64::Engine;
    use sha2::Digest;
    let pem = std::fs::read_to_string(&files.cert).unwrap();
    let body: String = pem.lines().filter(|line| !line.starts_with("-----")).collect();
    let der = base64::engine::general_purpose::STANDARD.decode(body).unwrap();
    sha2::Sha256::digest(der).into()
}

/// Two servers federated with no handshake (XEP-0361), each naming the
/// other in `[[xmpp_s2s_peer]]`: a.test on 127.0.0.2 and b.test on
/// 127.0.0.3, each taking the other's connections from 127.0.0.1 (where
/// every loopback connection comes from), over `link`. `a_pins`, if given,
/// is what a.test pins for b.test instead of b.test's certificate; a.test
/// reaches b.test through `relay`, if given.
async fn zero_pair(authority: &Authority, link: ZeroLink, a_pins: Option<[u8; 32]>, relay: Option<&Relay>) -> ((TestServer, SocketAddr), (TestServer, SocketAddr)) {
    let (a_zero, b_zero) = (TcpListener::bind("127.0.0.2:0").await.unwrap(), TcpListener::bind("127.0.0.3:0").await.unwrap());
    let (a_at, b_at) = (a_zero.local_addr().unwrap(), b_zero.local_addr().unwrap());
    let (a_cert, b_cert) = (authority.certificate("a", &["a.test"]), authority.certificate("b", &["b.test"]));
    let peer = |domain: &str, address, pin| server::ZeroPeer {
        domains: vec![domain.to_owned(), format!("conference.{domain}")],
        address,
        from: vec!["127.0.0.1".parse().unwrap()],
        compress: link == ZeroLink::Compressed,
        pin: (link == ZeroLink::Pinned).then_some(pin),
    };
    let (a_pin, b_pin) = (certificate_sha256(&a_cert), certificate_sha256(&b_cert));
    let mut a = config("a.test", "alice", a_cert, &authority.trust(), &[]);
    let b_for_a = relay.map_or(b_at, |relay| relay.forward_to(b_at));
    a.zero_peers = vec![peer("b.test", b_for_a, a_pins.unwrap_or(b_pin))];
    let mut b = config("b.test", "bob", b_cert, &authority.trust(), &[]);
    b.zero_peers = vec![peer("a.test", a_at, a_pin)];
    ((TestServer::zero_federated(a, a_zero).await, a_at), (TestServer::zero_federated(b, b_zero).await, b_at))
}

/// A link between two servers that can be cut: it relays each connection
/// made to it to a target, until cut.
struct Relay {
    listener: std::sync::Mutex<Option<TcpListener>>,
    addr: SocketAddr,
    links: std::sync::Arc<std::sync::Mutex<Vec<tokio::task::JoinHandle<()>>>>,
    /// While set, what comes either way is read and dropped, as a link
    /// going down drops it.
    swallow: std::sync::Arc<std::sync::atomic::AtomicBool>,
    /// Notified when something was dropped.
    swallowed: std::sync::Arc<tokio::sync::Notify>,
}

impl Relay {
    async fn new() -> Relay {
        let listener = TcpListener::bind("127.0.0.4:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        Relay { listener: std::sync::Mutex::new(Some(listener)), addr, links: Default::default(), swallow: Default::default(), swallowed: Default::default() }
    }

    /// Starts relaying to `target`; where to connect to be relayed.
    fn forward_to(&self, target: SocketAddr) -> SocketAddr {
        let listener = self.listener.lock().unwrap().take().expect("one target");
        let (links, swallow, swallowed) = (self.links.clone(), self.swallow.clone(), self.swallowed.clone());
        tokio::spawn(async move {
            while let Ok((near, _)) = listener.accept().await {
                let (swallow, swallowed) = (swallow.clone(), swallowed.clone());
                let link = tokio::spawn(async move {
                    let far = TcpStream::connect(target).await.unwrap();
                    let ((near_in, near_out), (far_in, far_out)) = (near.into_split(), far.into_split());
                    let pipe = |mut from: tokio::net::tcp::OwnedReadHalf, mut to: tokio::net::tcp::OwnedWriteHalf| {
                        let (swallow, swallowed) = (swallow.clone(), swallowed.clone());
                        async move {
                            let mut buf = [0u8; 4096];
                            while let Ok(n @ 1..) = from.read(&mut buf).await {
                                if swallow.load(std::sync::atomic::Ordering::SeqCst) {
                                    swallowed.notify_one();
                                } else if to.write_all(&buf[..n]).await.is_err() {
                                    break;
                                }
                            }
                        }
                    };
                    tokio::join!(pipe(near_in, far_out), pipe(far_in, near_out));
                });
                links.lock().unwrap().push(link);
            }
        });
        self.addr
    }

    /// From now on drops what comes, until cut.
    fn go_down(&self) {
        self.swallow.store(true, std::sync::atomic::Ordering::SeqCst);
    }

    /// Cuts every connection relayed so far, both ways at once; the next
    /// are relayed again.
    fn cut(&self) {
        self.links.lock().unwrap().drain(..).for_each(|link| link.abort());
        self.swallow.store(false, std::sync::atomic::Ordering::SeqCst);
    }
}

#[tokio::test]
async fn a_link_that_drops_between_two_zero_handshake_peers_delivers_everything_once() {
    let authority = Authority::new();
    let relay = Relay::new().await;
    let ((a, _), (b, _)) = zero_pair(&authority, ZeroLink::Bare, None, Some(&relay)).await;
    let mut alice = online(&a, "a.test", "alice").await;
    let mut bob = online(&b, "b.test", "bob").await;
    alice.send("<message to='bob@b.test' type='chat' id='m1'><body>one</body></message>").await;
    assert_eq!(body(&bob.next_named("message").await), "one");
    bob.send("<message to='alice@a.test/desk' type='chat' id='m2'><body>two</body></message>").await;
    assert_eq!(body(&alice.next_named("message").await), "two");
    // The link goes down with "three" on it, then is cut (before a.test has
    // acknowledged "two": its answer waits for a stanza to ride on). a.test
    // sends "three" again on a new connection; b.test comes back for "two",
    // hears a.test has it, and does not send it again.
    relay.go_down();
    alice.send("<message to='bob@b.test' type='chat' id='m3'><body>three</body></message>").await;
    relay.swallowed.notified().await;
    relay.cut();
    assert_eq!(body(&bob.next_named("message").await), "three");
    alice.send("<message to='bob@b.test' type='chat' id='m4'><body>four</body></message>").await;
    assert_eq!(body(&bob.next_named("message").await), "four", "three once");
    bob.send("<message to='alice@a.test/desk' type='chat' id='m5'><body>five</body></message>").await;
    assert_eq!(body(&alice.next_named("message").await), "five", "two once");
}

#[tokio::test]
async fn peers_configured_in_advance_talk_over_one_connection_with_no_handshake_compressed_or_not() {
    for link in [ZeroLink::Bare, ZeroLink::Compressed, ZeroLink::Pinned] {
        let authority = Authority::new();
        let ((a, _), (b, _)) = zero_pair(&authority, link, None, None).await;
        let mut alice = online(&a, "a.test", "alice").await;
        let mut bob = online(&b, "b.test", "bob").await;
        for round in 0..3 {
            alice.send(&format!("<message to='bob@b.test' type='chat' id='a{round}'><body>ping {round}</body></message>")).await;
            let got = bob.next_named("message").await;
            assert_eq!((got.get("from"), body(&got)), (Some("alice@a.test/desk"), format!("ping {round}")), "{link:?}");
            bob.send(&format!("<message to='alice@a.test/desk' type='chat' id='b{round}'><body>pong {round}</body></message>")).await;
            let got = alice.next_named("message").await;
            assert_eq!((got.get("from"), body(&got)), (Some("bob@b.test/desk"), format!("pong {round}")));
        }
        // One connection: a.test opened it, b.test answers over it.
        for (server, domain, opened, taken) in [(&a, "a.test", 1.0, 0.0), (&b, "b.test", 0.0, 1.0)] {
            let streams = |direction: &str| format!("switchboard_s2s_streams{{direction=\"{direction}\",state=\"authenticated\",auth=\"zero\"}}");
            assert_eq!(metric(server, &authority, domain, &streams("out")).await.unwrap_or(0.0), opened, "{domain} opened ({link:?})");
            assert_eq!(metric(server, &authority, domain, &streams("in")).await.unwrap_or(0.0), taken, "{domain} took ({link:?})");
        }
    }
}

#[tokio::test]
async fn a_pinned_peer_must_show_its_certificate_over_tls() {
    let authority = Authority::new();
    // a.test pins a certificate b.test does not have (the authority's own).
    let wrong = {
        use sha2::Digest;
        sha2::Sha256::digest(authority.issuer.der()).into()
    };
    let ((a, _), (b, b_at)) = zero_pair(&authority, ZeroLink::Pinned, Some(wrong), None).await;
    // Stanzas in the clear from the peer's address, to a listener that
    // expects TLS from it: no TLS, nothing delivered, closed.
    let mut bob = online(&b, "b.test", "bob").await;
    let mut tcp = TcpStream::connect(b_at).await.unwrap();
    tcp.write_all(b"<message from='alice@a.test/x' to='bob@b.test' type='chat'><body>in the clear</body></message>").await.unwrap();
    let mut out = Vec::new();
    let _ = tokio::time::timeout(PATIENCE, tcp.read_to_end(&mut out)).await.unwrap();
    assert_eq!(metric(&b, &authority, "b.test", "switchboard_s2s_failures_total{reason=\"tls\"}").await, Some(1.0));
    // Closed, and nothing reached bob: the next thing he gets is his own ping's answer.
    bob.send("<iq type='get' id='p1'><ping xmlns='urn:xmpp:ping'/></iq>").await;
    let next = bob.stanza().await;
    assert_eq!((next.name.as_str(), next.get("id")), ("iq", Some("p1")), "{next:?}");
    // a.test's connection to b.test: b.test's certificate is not the one pinned.
    let mut alice = online(&a, "a.test", "alice").await;
    alice.send("<message to='bob@b.test' type='chat' id='m1'><body>who are you?</body></message>").await;
    let refused = alice.next_named("message").await;
    assert_eq!((refused.get("id"), error_condition(&refused).as_str()), (Some("m1"), "remote-server-not-found"));
    assert_eq!(metric(&a, &authority, "a.test", "switchboard_s2s_failures_total{reason=\"zero_pin\"}").await, Some(1.0));
}

/// What comes on a socket, read as far as asked and no further.
struct Wire {
    tcp: TcpStream,
    held: String,
}

impl Wire {
    /// The next connection b.test makes to `listener` (a.test, this test).
    async fn accepted(listener: &TcpListener) -> Wire {
        Wire { tcp: listener.accept().await.unwrap().0, held: String::new() }
    }

    /// a.test's opening of the connection: stream management enabled, resumable.
    async fn enable(&mut self) {
        self.tcp.write_all(b"<enabled xmlns='urn:xmpp:sm:3' id='a1' resume='true'/>").await.unwrap();
    }

    /// What came up to the end of `want`, which must come.
    async fn until(&mut self, want: &str) -> String {
        loop {
            if let Some(at) = self.held.find(want) {
                return self.held.drain(..at + want.len()).collect();
            }
            let mut buf = [0u8; 4096];
            let n = tokio::time::timeout(PATIENCE, self.tcp.read(&mut buf)).await.expect("more in time").unwrap();
            assert!(n > 0, "closed before {want:?}: {}", self.held);
            self.held.push_str(std::str::from_utf8(&buf[..n]).unwrap());
        }
    }
}

/// b.test, taking zero-handshake connections from a.test and reaching
/// a.test where the test listens (the test plays a.test), configured as
/// `tweak` says: b.test, its address, and the test's listener.
async fn zero_b_for_a_test(authority: &Authority, tweak: impl FnOnce(&mut server::Config)) -> (TestServer, SocketAddr, TcpListener) {
    let (a_zero, b_zero) = (TcpListener::bind("127.0.0.2:0").await.unwrap(), TcpListener::bind("127.0.0.3:0").await.unwrap());
    let b_at = b_zero.local_addr().unwrap();
    let peer = server::ZeroPeer { domains: vec!["a.test".into()], address: a_zero.local_addr().unwrap(), from: vec!["127.0.0.1".parse().unwrap()], compress: false, pin: None };
    let mut config = config("b.test", "bob", authority.certificate("b", &["b.test"]), &authority.trust(), &[]);
    config.zero_peers = vec![peer];
    tweak(&mut config);
    (TestServer::zero_federated(config, b_zero).await, b_at, a_zero)
}

#[tokio::test]
async fn a_zero_handshake_peers_connection_past_its_bound_ends_its_oldest() {
    let authority = Authority::new();
    let (b, b_at, _a_zero) = zero_b_for_a_test(&authority, |c| c.federation.max_streams_per_domain = 2).await;
    let mut bob = online(&b, "b.test", "bob").await;
    let message = |id: &str| format!("<enabled xmlns='urn:xmpp:sm:3' id='a1' resume='true'/><message from='alice@a.test/x' to='bob@b.test' type='chat' id='{id}'><body>{id}</body></message>");
    // Three connections from a.test, as after two drops that left b.test's
    // side of each open: the third ends the first, the second stays.
    let mut wires = Vec::new();
    for _ in 0..3 {
        let mut wire = Wire { tcp: TcpStream::connect(b_at).await.unwrap(), held: String::new() };
        wire.until("resume='true'/>").await;
        wires.push(wire);
    }
    assert_eq!(wires[0].until("</stream:stream>").await, "</stream:stream>");
    // The newest carries a.test's stanzas; the one kept still answers.
    wires[2].tcp.write_all(message("m1").as_bytes()).await.unwrap();
    assert_eq!(body(&bob.next_named("message").await), "m1");
    wires[1].tcp.write_all(b"<r xmlns='urn:xmpp:sm:3'/>").await.unwrap();
    let answer = wires[1].until("/>").await;
    assert!(answer.starts_with("<a xmlns=\"urn:xmpp:sm:3\" h="), "{answer}");
}

#[tokio::test]
async fn what_a_peer_has_not_acknowledged_is_bounded_and_the_rest_waits_for_its_answer() {
    let authority = Authority::new();
    let (b, _, a_zero) = zero_b_for_a_test(&authority, |c| c.federation.queue = 1000).await;
    let mut bob = online(&b, "b.test", "bob").await;
    // Messages of about 230 bytes to a.test, whose server (this test) takes
    // them all and acknowledges none, one at a time (each followed by a ping
    // of bob's own server: once it is answered, the message went out, waits,
    // or was refused), until one is refused: the queue filled, which a
    // stream that kept sending would never let happen.
    let body = "x".repeat(100);
    let (mut refused, mut tried) = (0, 0);
    while refused == 0 && tried < 40 {
        bob.send(&format!("<message to='alice@a.test/x' type='chat' id='r{tried}'><body>{body}</body></message><iq type='get' id='p{tried}'><ping xmlns='urn:xmpp:ping'/></iq>")).await;
        loop {
            let stanza = bob.stanza().await;
            if stanza.get("id") == Some(&format!("p{tried}")) {
                break;
            }
            if stanza.name == "message" {
                assert_eq!(error_condition(&stanza), "resource-constraint", "{stanza:?}");
                refused += 1;
            }
        }
        tried += 1;
    }
    let waiting = metric(&b, &authority, "b.test", "switchboard_s2s_waiting").await.unwrap_or(0.0) as usize;
    let sent = tried - refused - waiting;
    // Sending stopped once 1000 bytes were unacknowledged (6 messages of
    // about 190 bytes: it is checked before each batch); the queue's 1000
    // bytes filled behind it, and the next was refused.
    assert_eq!(refused, 1, "{sent} sent, {waiting} waiting");
    assert!((5..=7).contains(&sent) && waiting >= 4, "{sent} sent, {waiting} waiting");
    let mut wire = Wire::accepted(&a_zero).await;
    for _ in 0..sent {
        wire.until("</message>").await;
    }
    // The answer frees it: what waited goes out.
    wire.tcp.write_all(format!("<enabled xmlns='urn:xmpp:sm:3' id='a1' resume='true'/><a xmlns='urn:xmpp:sm:3' h='{sent}'/>").as_bytes()).await.unwrap();
    for _ in 0..waiting {
        wire.until("</message>").await;
    }
}

#[tokio::test]
async fn a_stanza_a_zero_handshake_peer_keeps_ending_the_connection_on_is_given_up_after_three_tries() {
    let authority = Authority::new();
    let (b, _, a_zero) = zero_b_for_a_test(&authority, |_| ()).await;
    let mut bob = online(&b, "b.test", "bob").await;
    bob.send("<message to='alice@a.test/x' type='chat' id='bad'><body>refused</body></message>").await;
    // a.test (this test) answers each connection, reads the stanza and
    // ends the connection on it, acknowledging nothing, as a peer that
    // refuses a stanza with a stream error does.
    for attempt in 1..=3 {
        let mut wire = Wire::accepted(&a_zero).await;
        wire.enable().await;
        let sent = wire.until("</message>").await;
        assert!(sent.contains(">refused</body>"), "attempt {attempt}: {sent}");
    }
    // Then its sender is told, and what comes next goes without it.
    let bounced = bob.next_named("message").await;
    assert_eq!((bounced.get("id"), error_condition(&bounced).as_str()), (Some("bad"), "remote-server-timeout"));
    bob.send("<message to='alice@a.test/x' type='chat' id='next'><body>accepted</body></message>").await;
    let mut wire = Wire::accepted(&a_zero).await;
    wire.enable().await;
    let sent = wire.until("</message>").await;
    assert!(sent.contains(">accepted</body>") && !sent.contains("refused"), "{sent}");
}

#[tokio::test]
async fn a_zero_handshake_connection_that_breaks_before_the_peer_answers_is_tried_again_then_given_up() {
    let authority = Authority::new();
    let (b, _, a_zero) = zero_b_for_a_test(&authority, |_| ()).await;
    let mut bob = online(&b, "b.test", "bob").await;
    bob.send("<message to='alice@a.test/x' type='chat' id='m1'><body>one</body></message>").await;
    // The first connection breaks before a.test (this test) says anything:
    // what it carried is neither bounced nor lost, but sent again on the
    // next, once a.test has said what it has (none of it).
    let mut one = Wire::accepted(&a_zero).await;
    assert!(one.until("</message>").await.contains(">one</body>"));
    drop(one);
    let mut two = Wire::accepted(&a_zero).await;
    two.until("resume='true'/>").await;
    two.enable().await;
    assert!(two.until("</message>").await.contains(">one</body>"));
    two.tcp.write_all(b"<a xmlns='urn:xmpp:sm:3' h='1'/>").await.unwrap();
    bob.send("<iq type='get' id='p1'><ping xmlns='urn:xmpp:ping'/></iq>").await;
    let next = bob.stanza().await;
    assert_eq!((next.name.as_str(), next.get("id")), ("iq", Some("p1")), "no bounce: {next:?}");
    drop(two);

    // A peer that never answers: three connections, then the sender is told.
    bob.send("<message to='alice@a.test/x' type='chat' id='m2'><body>two</body></message>").await;
    for _ in 0..3 {
        let (tcp, _) = a_zero.accept().await.unwrap();
        drop(tcp);
    }
    let bounced = bob.next_named("message").await;
    assert_eq!((bounced.get("id"), error_condition(&bounced).as_str()), (Some("m2"), "remote-server-timeout"));
}

#[tokio::test]
async fn a_zero_handshake_connection_that_goes_quiet_leaves_what_waited_to_the_next_numbered() {
    let authority = Authority::new();
    let (b, _, a_zero) = zero_b_for_a_test(&authority, |c| {
        c.federation.queue = 1000;
        c.federation.idle_timeout = Duration::from_millis(500);
    })
    .await;
    let mut bob = online(&b, "b.test", "bob").await;
    // Eight messages of about 190 bytes to a.test (this test), which
    // acknowledges none: six go out, the rest wait behind the bound on what
    // is unacknowledged. Each after the one before is in (bob's own server
    // answers a ping after it), so that none finds the queue full.
    let body = "x".repeat(100);
    let mut one = None;
    for n in 0..8 {
        bob.send(&format!("<message to='alice@a.test/x' type='chat' id='r{n}'><body>{n}{body}</body></message><iq type='get' id='p{n}'><ping xmlns='urn:xmpp:ping'/></iq>")).await;
        let pong = bob.next_named("iq").await;
        assert_eq!(pong.get("id"), Some(format!("p{n}").as_str()));
        if one.is_none() {
            one = Some(Wire::accepted(&a_zero).await);
        }
    }
    let mut one = one.unwrap();
    let opening = one.until("resume='true'/>").await;
    let b_id = opening.strip_prefix("<enabled xmlns='urn:xmpp:sm:3' id='").and_then(|rest| rest.strip_suffix("' resume='true'/>")).expect(&opening).to_owned();
    one.enable().await;
    // The connection goes quiet and ends with the six it sent (about 1150
    // bytes, past the bound of 1000): the two that waited are not written
    // at its close, where nothing would number them.
    let first = one.until("</stream:stream>").await;
    assert_eq!(first.matches("</message>").count(), 6, "{first}");
    // The next connection: a.test handled two; the rest come, each once, in order.
    let mut two = Wire::accepted(&a_zero).await;
    two.until(&format!("id='{b_id}' resume='true'/>")).await;
    two.tcp.write_all(format!("<resume xmlns='urn:xmpp:sm:3' previd='{b_id}' h='2'/><enabled xmlns='urn:xmpp:sm:3' id='a1' resume='true'/>").as_bytes()).await.unwrap();
    let mut ids = Vec::new();
    while ids.len() < 6 {
        let stanza = two.until("</message>").await;
        let at = stanza.find(" id='").or_else(|| stanza.find(" id=\"")).expect(&stanza) + 5;
        ids.push(stanza[at..].split(['\'', '"']).next().unwrap().to_owned());
        // Acknowledged as it comes, so that the bound lets the rest out.
        two.tcp.write_all(format!("<a xmlns='urn:xmpp:sm:3' h='{}'/>", 2 + ids.len()).as_bytes()).await.unwrap();
    }
    assert_eq!(ids, ["r2", "r3", "r4", "r5", "r6", "r7"]);
}

#[tokio::test]
async fn stream_management_with_a_zero_handshake_peer_outlives_its_connections() {
    let authority = Authority::new();
    let (b, b_at, a_zero) = zero_b_for_a_test(&authority, |_| ()).await;
    let mut bob = online(&b, "b.test", "bob").await;
    let message = |id: &str| format!("<message from='alice@a.test/x' to='bob@b.test' type='chat' id='{id}'><body>{id}</body></message>");

    // A first connection: a.test numbers its stanzas under `a1`; two arrive.
    let mut one = Wire { tcp: TcpStream::connect(b_at).await.unwrap(), held: String::new() };
    let opening = one.until("'/>").await;
    let b_id = opening.strip_prefix("<enabled xmlns='urn:xmpp:sm:3' id='").and_then(|rest| rest.strip_suffix("' resume='true'/>")).expect(&opening).to_owned();
    one.tcp.write_all(format!("<enabled xmlns='urn:xmpp:sm:3' id='a1' resume='true'/>{}{}<r xmlns='urn:xmpp:sm:3'/>", message("m1"), message("m2")).as_bytes()).await.unwrap();
    for id in ["m1", "m2"] {
        assert_eq!(body(&bob.next_named("message").await), id);
    }
    assert_eq!(one.until("/>").await, "<a xmlns=\"urn:xmpp:sm:3\" h=\"2\"/>");
    // b.test answers over it, asking for an acknowledgement that never comes: the link drops.
    bob.send("<message to='alice@a.test/x' type='chat' id='r1'><body>lost?</body></message>").await;
    let sent = one.until("<r xmlns=\"urn:xmpp:sm:3\"/>").await;
    assert!(sent.starts_with("<message") && sent.contains(">lost?</body>"), "{sent}");
    drop(one);

    // b.test comes back on its own for what a.test never acknowledged: it
    // says what it has of a.test's (2 under a1), and waits to hear what
    // a.test has of its own before sending.
    let mut two = Wire::accepted(&a_zero).await;
    let opening = two.until(&format!("<enabled xmlns='urn:xmpp:sm:3' id='{b_id}' resume='true'/>")).await;
    assert_eq!(opening, format!("<resume xmlns='urn:xmpp:sm:3' previd='a1' h='2'/><enabled xmlns='urn:xmpp:sm:3' id='{b_id}' resume='true'/>"));
    // a.test handled none of it: it comes again, once, with a request.
    two.tcp.write_all(format!("<resume xmlns='urn:xmpp:sm:3' previd='{b_id}' h='0'/><enabled xmlns='urn:xmpp:sm:3' id='a1' resume='true'/>").as_bytes()).await.unwrap();
    let again = two.until("<r xmlns=\"urn:xmpp:sm:3\"/>").await;
    assert_eq!(again, sent, "the same bytes again");
    // a.test's third stanza goes on from 2.
    two.tcp.write_all(format!("<a xmlns='urn:xmpp:sm:3' h='1'/>{}<r xmlns='urn:xmpp:sm:3'/>", message("m3")).as_bytes()).await.unwrap();
    assert_eq!(body(&bob.next_named("message").await), "m3");
    assert_eq!(two.until("/>").await, "<a xmlns=\"urn:xmpp:sm:3\" h=\"3\"/>");

    // A connection opened while that one still seems alive starts from 3
    // too; a stanza the old one brought meanwhile (4) that comes on the new
    // one as well is known by its number and dropped.
    let mut three = Wire { tcp: TcpStream::connect(b_at).await.unwrap(), held: String::new() };
    assert_eq!(three.until(&format!("id='{b_id}' resume='true'/>")).await, format!("<resume xmlns='urn:xmpp:sm:3' previd='a1' h='3'/><enabled xmlns='urn:xmpp:sm:3' id='{b_id}' resume='true'/>"));
    two.tcp.write_all(message("m4").as_bytes()).await.unwrap();
    assert_eq!(body(&bob.next_named("message").await), "m4");
    three.tcp.write_all(format!("<resume xmlns='urn:xmpp:sm:3' previd='{b_id}' h='1'/><enabled xmlns='urn:xmpp:sm:3' id='a1' resume='true'/>{}{}<r xmlns='urn:xmpp:sm:3'/>", message("m4"), message("m5")).as_bytes()).await.unwrap();
    assert_eq!(body(&bob.next_named("message").await), "m5", "m4 once");
    assert_eq!(three.until("/>").await, "<a xmlns=\"urn:xmpp:sm:3\" h=\"5\"/>");

    // a.test restarted: a new id, counted from nothing.
    let mut four = Wire { tcp: TcpStream::connect(b_at).await.unwrap(), held: String::new() };
    four.tcp.write_all(format!("<enabled xmlns='urn:xmpp:sm:3' id='a2' resume='true'/>{}<r xmlns='urn:xmpp:sm:3'/>", message("m6")).as_bytes()).await.unwrap();
    assert_eq!(body(&bob.next_named("message").await), "m6");
    four.until("resume='true'/>").await;
    assert_eq!(four.until("/>").await, "<a xmlns=\"urn:xmpp:sm:3\" h=\"1\"/>");
}

#[tokio::test]
async fn a_zero_handshake_connection_carries_stanzas_from_its_first_byte_and_only_from_its_peers() {
    let authority = Authority::new();
    let ((_, _), (b, b_at)) = zero_pair(&authority, ZeroLink::Bare, None, None).await;
    let mut bob = online(&b, "b.test", "bob").await;
    // As a.test: no header, no features; a stanza, then a request for acknowledgement,
    // which stream management (on from the start) answers.
    let mut tcp = TcpStream::connect(b_at).await.unwrap();
    tcp.write_all(b"<message from='alice@a.test/x' to='bob@b.test' type='chat'><body>first byte</body></message><r xmlns='urn:xmpp:sm:3'/>").await.unwrap();
    assert_eq!(body(&bob.next_named("message").await), "first byte");
    // b.test opens with the id it numbers its stanzas under (it has counted none of a.test's yet).
    let opening = read_until(&mut tcp, "'/>").await;
    assert!(opening.starts_with("<enabled xmlns='urn:xmpp:sm:3' id='") && opening.ends_with("' resume='true'/>") && opening.len() == 68, "{opening}");
    assert_eq!(read_until(&mut tcp, "/>").await, "<a xmlns=\"urn:xmpp:sm:3\" h=\"1\"/>");
    // A stanza from a domain the peer is not: the stream error, and the end.
    tcp.write_all(b"<message from='eve@c.test' to='bob@b.test' type='chat'><body>forged</body></message>").await.unwrap();
    let end = read_until(&mut tcp, "</stream:stream>").await;
    assert!(end.contains("<invalid-from xmlns=\"urn:ietf:params:xml:ns:xmpp-streams\"/>"), "{end}");
    // A connection from an address no peer names is closed unread.
    let socket = tokio::net::TcpSocket::new_v4().unwrap();
    socket.bind("127.0.0.9:0".parse().unwrap()).unwrap();
    let mut stranger = socket.connect(b_at).await.unwrap();
    let _ = stranger.write_all(b"<message from='alice@a.test/x' to='bob@b.test' type='chat'><body>stranger</body></message>").await;
    let mut buf = [0u8; 64];
    assert_eq!(tokio::time::timeout(PATIENCE, stranger.read(&mut buf)).await.unwrap().unwrap_or(0), 0, "closed");
    assert_eq!(metric(&b, &authority, "b.test", "switchboard_s2s_failures_total{reason=\"zero_unknown_address\"}").await, Some(1.0));
}
