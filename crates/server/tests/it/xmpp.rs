//! XMPP over TCP at the byte level: negotiation, MUC in the chat app's
//! rooms (an XMPP occupant and a WebSocket chat client talk in one room),
//! ping, discovery, and the stream errors bad input gets.

use std::net::SocketAddr;

use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use wire::xmpp::{Element, Limits, StreamEvent, StreamParser};

use crate::support::{PATIENCE, TestServer};

pub const HEADER: &str = "<?xml version='1.0'?><stream:stream to='localhost' version='1.0' xmlns='jabber:client' xmlns:stream='http://etherx.jabber.org/streams'>";
const MUC_USER: &str = "http://jabber.org/protocol/muc#user";

/// An XMPP client on a raw socket, reading the server's stream with the
/// same parser the server uses.
pub struct Client {
    stream: TcpStream,
    parser: StreamParser,
}

impl Client {
    pub async fn connect(addr: SocketAddr) -> Client {
        Client { stream: TcpStream::connect(addr).await.unwrap(), parser: StreamParser::new(Limits::default()) }
    }

    /// Connects from the loopback address `from` (any 127.x).
    pub async fn connect_from(addr: SocketAddr, from: std::net::IpAddr) -> Client {
        let socket = tokio::net::TcpSocket::new_v4().unwrap();
        socket.bind(SocketAddr::new(from, 0)).unwrap();
        Client { stream: socket.connect(addr).await.unwrap(), parser: StreamParser::new(Limits::default()) }
    }

    pub async fn send(&mut self, xml: &str) {
        self.stream.write_all(xml.as_bytes()).await.unwrap();
    }

    /// Sends bytes that need not be whole characters.
    pub async fn send_bytes(&mut self, bytes: &[u8]) {
        self.stream.write_all(bytes).await.unwrap();
    }

    /// The next event of the server's stream; `None` once it closed the socket.
    pub async fn event(&mut self) -> Option<StreamEvent> {
        loop {
            if let Some(event) = self.parser.next_event().expect("the server's stream is well-formed") {
                return Some(event);
            }
            let mut buf = [0u8; 4096];
            let n = tokio::time::timeout(PATIENCE, self.stream.read(&mut buf)).await.expect("a reply in time").unwrap();
            if n == 0 {
                return None;
            }
            self.parser.feed(&buf[..n]);
        }
    }

    pub async fn stanza(&mut self) -> Element {
        match self.event().await {
            Some(StreamEvent::Stanza(element)) => element,
            other => panic!("expected a stanza, got {other:?}"),
        }
    }

    /// Opens a stream, authenticates with `auth` (a SASL `<auth/>` that
    /// succeeds at once) and restarts the stream: the client, and the
    /// features offered before and after.
    pub async fn authenticate(addr: SocketAddr, auth: &str) -> (Client, Element, Element) {
        Client::authenticate_at(addr, "localhost", auth).await
    }

    /// As `authenticate`, to the server of `domain`.
    pub async fn authenticate_at(addr: SocketAddr, domain: &str, auth: &str) -> (Client, Element, Element) {
        let header = HEADER.replace("to='localhost'", &format!("to='{domain}'"));
        let mut c = Client::connect(addr).await;
        c.send(&header).await;
        assert!(matches!(c.event().await, Some(StreamEvent::Open { .. })));
        let before = c.stanza().await;
        c.send(auth).await;
        assert_eq!(c.stanza().await.name, "success");
        c.parser.restart();
        c.send(&header).await;
        assert!(matches!(c.event().await, Some(StreamEvent::Open { .. })));
        let after = c.stanza().await;
        (c, before, after)
    }

    /// Negotiates an anonymous session on a server with no accounts (only
    /// ANONYMOUS is offered) and returns the bound JID.
    pub async fn login(addr: SocketAddr) -> (Client, String) {
        let (c, jid, before) = Client::anonymous(addr).await;
        let mechanisms = before.find("mechanisms", "urn:ietf:params:xml:ns:xmpp-sasl").expect("SASL offered");
        assert_eq!(mechanisms.elements().map(Element::text_content).collect::<Vec<_>>(), ["ANONYMOUS"]);
        (c, jid)
    }

    /// Logs in anonymously and binds `desk`: the client, its JID, and the
    /// features offered before authentication.
    pub async fn anonymous(addr: SocketAddr) -> (Client, String, Element) {
        let (mut c, before, after) = Client::authenticate(addr, "<auth xmlns='urn:ietf:params:xml:ns:xmpp-sasl' mechanism='ANONYMOUS'/>").await;
        assert!(after.find("bind", "urn:ietf:params:xml:ns:xmpp-bind").is_some());
        c.send("<iq type='set' id='b1'><bind xmlns='urn:ietf:params:xml:ns:xmpp-bind'><resource>desk</resource></bind></iq>").await;
        let bound = c.stanza().await;
        assert_eq!((bound.get("type"), bound.get("id")), (Some("result"), Some("b1")));
        let jid = bound.find("bind", "urn:ietf:params:xml:ns:xmpp-bind").unwrap().find("jid", "urn:ietf:params:xml:ns:xmpp-bind").unwrap().text_content();
        assert!(jid.ends_with("@localhost/desk"), "{jid}");
        (c, jid, before)
    }

    /// The stanzas up to the answer to the iq `id`, and the answer.
    pub async fn until_answer(&mut self, id: &str) -> (Vec<Element>, Element) {
        let mut before = Vec::new();
        loop {
            let stanza = self.stanza().await;
            if stanza.name == "iq" && stanza.get("id") == Some(id) {
                return (before, stanza);
            }
            before.push(stanza);
        }
    }

    /// The messages of its user's archive (XEP-0313), oldest first, as
    /// the archive forwards them.
    pub async fn archived_messages(&mut self) -> Vec<Element> {
        self.send("<iq type='set' id='mam'><query xmlns='urn:xmpp:mam:2' queryid='mam'/></iq>").await;
        let (results, answer) = self.until_answer("mam").await;
        assert_eq!(answer.get("type"), Some("result"), "{answer:?}");
        results
            .iter()
            .filter_map(|m| m.find("result", "urn:xmpp:mam:2")?.find("forwarded", "urn:xmpp:forward:0")?.find("message", "jabber:client").cloned())
            .collect()
    }

    /// The next stanza named `name` (`message`, `presence`, `iq`), past
    /// the others.
    pub async fn next_named(&mut self, name: &str) -> Element {
        loop {
            let stanza = self.stanza().await;
            if stanza.name == name {
                return stanza;
            }
        }
    }

    /// The answer to the iq `id`, past whatever comes before it.
    pub async fn answer(&mut self, id: &str) -> Element {
        self.until_answer(id).await.1
    }

    /// The stream error condition the server ends the stream with.
    pub async fn stream_error(&mut self) -> String {
        loop {
            match self.event().await {
                Some(StreamEvent::Stanza(e)) if e.name == "error" && e.ns == wire::xmpp::STREAMS_NS => {
                    let condition = e.elements().next().unwrap().name.clone();
                    assert_eq!(self.event().await, Some(StreamEvent::Close), "the stream ends after its error");
                    return condition;
                }
                Some(StreamEvent::Open { .. } | StreamEvent::Stanza(_)) => continue,
                other => panic!("expected a stream error, got {other:?}"),
            }
        }
    }
}

#[tokio::test]
async fn an_xmpp_occupant_and_a_chat_client_share_a_room() {
    let server = TestServer::with_xmpp(server::Config::default()).await;
    let mut alice = server.chat_member("alice", "lobby").await;
    alice.send(&json!({"message": "before bob"}).to_string()).await;
    assert_eq!(alice.recv_json().await["message"], "before bob");

    let (mut bob, jid) = Client::login(server.xmpp.unwrap()).await;
    bob.send("<presence to='lobby@conference.localhost/bob'><x xmlns='http://jabber.org/protocol/muc'/></presence>").await;
    let others = bob.stanza().await;
    assert_eq!((others.name.as_str(), others.get("from")), ("presence", Some("lobby@conference.localhost/alice")));
    let own = bob.stanza().await;
    assert_eq!(own.get("from"), Some("lobby@conference.localhost/bob"));
    assert_eq!(own.find("x", MUC_USER).unwrap().find("status", MUC_USER).unwrap().get("code"), Some("110"));
    let history = bob.stanza().await;
    assert_eq!(history.find("body", "jabber:client").unwrap().text_content(), "before bob");
    assert!(history.find("delay", "urn:xmpp:delay").is_some());
    let subject = bob.stanza().await;
    assert!(subject.find("subject", "jabber:client").is_some(), "{subject:?}");
    assert_eq!(alice.recv_json().await, json!({"event": "join", "name": "bob", "room": "lobby"}));

    bob.send("<message to='lobby@conference.localhost' type='groupchat' id='m1'><body>hi &amp; hello</body></message>").await;
    assert_eq!(alice.recv_json().await, json!({"name": "bob", "room": "lobby", "message": "hi & hello"}));
    let reflected = bob.stanza().await;
    assert_eq!((reflected.get("from"), reflected.get("to"), reflected.get("type")), (Some("lobby@conference.localhost/bob"), Some(jid.as_str()), Some("groupchat")));
    alice.send(&json!({"message": "welcome <bob>"}).to_string()).await;
    let heard = bob.stanza().await;
    assert_eq!(heard.get("from"), Some("lobby@conference.localhost/alice"));
    assert_eq!(heard.find("body", "jabber:client").unwrap().text_content(), "welcome <bob>");
    assert_eq!(alice.recv_json().await["message"], "welcome <bob>");

    // A nick is unique across protocols.
    let (mut carol, _) = Client::login(server.xmpp.unwrap()).await;
    carol.send("<presence to='lobby@conference.localhost/Alice' id='p2'/>").await;
    let refused = carol.stanza().await;
    assert_eq!(refused.get("type"), Some("error"));
    let error = refused.find("error", "jabber:client").unwrap();
    assert!(error.find("conflict", "urn:ietf:params:xml:ns:xmpp-stanzas").is_some(), "{refused:?}");

    bob.send("<presence to='lobby@conference.localhost/bob' type='unavailable'/>").await;
    let gone = bob.stanza().await;
    assert_eq!((gone.get("type"), gone.find("x", MUC_USER).unwrap().find("status", MUC_USER).is_some()), (Some("unavailable"), true));
    assert_eq!(alice.recv_json().await, json!({"event": "leave", "name": "bob", "room": "lobby"}));

    // A refused message comes back with what it carried (RFC 6120 §8.3.1), to the byte.
    bob.send("<message to='nobody@localhost' type='chat' id='x1'><body>anyone?</body></message>").await;
    assert_eq!(
        bob.stanza().await.to_xml("jabber:client"),
        format!("<message type=\"error\" to=\"{jid}\" id=\"x1\" from=\"nobody@localhost\"><body>anyone?</body><error type=\"cancel\"><service-unavailable xmlns=\"urn:ietf:params:xml:ns:xmpp-stanzas\"/></error></message>")
    );
}

#[tokio::test]
async fn ping_discovery_and_iqs_the_server_does_not_handle() {
    let server = TestServer::with_xmpp(server::Config::default()).await;
    let (mut c, _) = Client::login(server.xmpp.unwrap()).await;
    c.send("<iq type='get' id='p1' to='localhost'><ping xmlns='urn:xmpp:ping'/></iq>").await;
    let pong = c.stanza().await;
    assert_eq!((pong.get("type"), pong.get("id"), pong.elements().count()), (Some("result"), Some("p1"), 0));
    c.send("<iq type='get' id='d1' to='conference.localhost'><query xmlns='http://jabber.org/protocol/disco#info'/></iq>").await;
    let info = c.stanza().await;
    let query = info.find("query", "http://jabber.org/protocol/disco#info").unwrap();
    assert_eq!(query.find("identity", "http://jabber.org/protocol/disco#info").unwrap().get("category"), Some("conference"));
    assert!(query.elements().any(|f| f.get("var") == Some("http://jabber.org/protocol/muc")));
    c.send("<iq type='get' id='v1'><query xmlns='jabber:iq:version'/></iq>").await;
    let refused = c.stanza().await;
    assert_eq!((refused.get("type"), refused.get("id")), (Some("error"), Some("v1")));
    let error = refused.find("error", "jabber:client").unwrap();
    assert_eq!(error.get("type"), Some("cancel"));
    assert!(error.find("service-unavailable", "urn:ietf:params:xml:ns:xmpp-stanzas").is_some());
    // A message to a user who is not online.
    c.send("<message to='nobody@localhost' id='x1'><body>hello?</body></message>").await;
    assert_eq!(c.stanza().await.get("type"), Some("error"));
}

#[tokio::test]
async fn bad_input_gets_the_stream_error_rfc_6120_names() {
    let server = TestServer::with_xmpp(server::Config::default()).await;
    let addr = server.xmpp.unwrap();
    let cases: [(&[&str], &str); 5] = [
        (&[HEADER, "<message to='a@localhost'><body>early</body></message>"], "not-authorized"),
        (&[HEADER, "<!DOCTYPE x [<!ENTITY a 'aaaa'>]>"], "restricted-xml"),
        (&[HEADER, "<message><body></message>"], "not-well-formed"),
        (&["<?xml version='1.0'?><stream:stream to='elsewhere.example' version='1.0' xmlns='jabber:client' xmlns:stream='http://etherx.jabber.org/streams'>"], "host-unknown"),
        (&["<stream:stream to='localhost' version='1.0' xmlns='jabber:client' xmlns:stream='urn:wrong'>"], "invalid-namespace"),
    ];
    for (input, condition) in cases {
        let mut c = Client::connect(addr).await;
        for part in input {
            c.send(part).await;
        }
        assert_eq!(c.stream_error().await, condition, "{input:?}");
        assert!(c.event().await.is_none(), "the server closes the socket after the error");
    }
    // Other clients are unharmed.
    let (mut c, _) = Client::login(addr).await;
    c.send("<iq type='get' id='p'><ping xmlns='urn:xmpp:ping'/></iq>").await;
    assert_eq!(c.stanza().await.get("type"), Some("result"));
}

/// An XMPP over WebSocket client (RFC 7395): one element per message.
pub struct WsClient {
    ws: tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<TcpStream>>,
}

impl WsClient {
    pub async fn connect(server: &TestServer) -> WsClient {
        use tokio_tungstenite::tungstenite::client::IntoClientRequest;
        let mut req = server.url("/xmpp-websocket").into_client_request().unwrap();
        req.headers_mut().insert("Sec-WebSocket-Protocol", "xmpp".parse().unwrap());
        let (ws, res) = tokio_tungstenite::connect_async(req).await.unwrap();
        assert_eq!(res.headers().get("Sec-WebSocket-Protocol").map(|v| v.to_str().unwrap()), Some("xmpp"));
        WsClient { ws }
    }

    pub async fn send(&mut self, xml: &str) {
        use futures_util::SinkExt;
        self.ws.send(tokio_tungstenite::tungstenite::Message::text(xml)).await.unwrap();
    }

    /// The next message, parsed as the element it must be on its own.
    pub async fn element(&mut self) -> Element {
        use futures_util::StreamExt;
        let message = tokio::time::timeout(PATIENCE, self.ws.next()).await.expect("a message in time").unwrap().unwrap();
        standalone(&message.into_text().unwrap())
    }

    /// Whether the server closed the WebSocket, with no message before.
    pub async fn closed(&mut self) -> bool {
        use futures_util::StreamExt;
        use tokio_tungstenite::tungstenite::Message;
        match tokio::time::timeout(PATIENCE, self.ws.next()).await.expect("the close in time") {
            Some(Ok(Message::Close(_))) | None => true,
            other => panic!("expected the close, got {other:?}"),
        }
    }
}

/// What opens a stream of single elements (RFC 7395).
pub const OPEN: &str = "<open xmlns='urn:ietf:params:xml:ns:xmpp-framing' to='localhost' version='1.0'/>";

/// A message of a stream of single elements (RFC 7395), parsed as the one
/// element standing alone it must be.
pub fn standalone(text: &str) -> Element {
    wire::xmpp::standalone(text).unwrap_or_else(|| panic!("{text:?} is not one element standing alone"))
}

#[tokio::test]
async fn xmpp_over_websocket_frames_each_element_alone() {
    let server = TestServer::with_xmpp(server::Config::default()).await;
    let open = OPEN;
    let mut c = WsClient::connect(&server).await;
    c.send(open).await;
    let opened = c.element().await;
    assert_eq!((opened.name.as_str(), opened.ns.as_str(), opened.get("from")), ("open", "urn:ietf:params:xml:ns:xmpp-framing", Some("localhost")));
    let features = c.element().await;
    assert_eq!((features.name.as_str(), features.ns.as_str()), ("features", wire::xmpp::STREAMS_NS));
    c.send("<auth xmlns='urn:ietf:params:xml:ns:xmpp-sasl' mechanism='ANONYMOUS'/>").await;
    assert_eq!(c.element().await.name, "success");
    c.send(open).await;
    assert_eq!(c.element().await.name, "open");
    assert!(c.element().await.find("bind", "urn:ietf:params:xml:ns:xmpp-bind").is_some());
    c.send("<iq xmlns='jabber:client' type='set' id='b'><bind xmlns='urn:ietf:params:xml:ns:xmpp-bind'/></iq>").await;
    assert_eq!(c.element().await.get("type"), Some("result"));

    let mut alice = server.chat_member("alice", "lobby").await;
    c.send("<presence xmlns='jabber:client' to='lobby@conference.localhost/dave'/>").await;
    for _ in 0..3 {
        // alice's presence, its own, the subject: each a message of its own, in jabber:client.
        assert_eq!(c.element().await.ns, "jabber:client");
    }
    assert_eq!(alice.recv_json().await["name"], "dave");
    alice.send(&json!({"message": "hi dave"}).to_string()).await;
    let heard = c.element().await;
    assert_eq!(heard.find("body", "jabber:client").unwrap().text_content(), "hi dave");

    c.send("<close xmlns='urn:ietf:params:xml:ns:xmpp-framing'/>").await;
    let closed = c.element().await;
    assert_eq!((closed.name.as_str(), closed.ns.as_str()), ("close", "urn:ietf:params:xml:ns:xmpp-framing"));
    assert_eq!(alice.recv_json().await["message"], "hi dave");
    assert_eq!(alice.recv_json().await, json!({"event": "leave", "name": "dave", "room": "lobby"}));

    // Without the subprotocol the handshake is refused.
    let plain = server.http("GET", "/xmpp-websocket", &[("Upgrade", "websocket"), ("Connection", "Upgrade"), ("Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ=="), ("Sec-WebSocket-Version", "13")], b"").await;
    assert_eq!(plain.status(), 400);
}

#[tokio::test]
async fn host_meta_says_where_the_websocket_and_bosh_endpoints_are() {
    let server = TestServer::with_xmpp(server::Config::default()).await;
    // The request's Host header is the server's address.
    let websocket = format!("ws://{}/xmpp-websocket", server.addr);
    let bosh = format!("http://{}/http-bind", server.addr);
    let xrd = server.http("GET", "/.well-known/host-meta", &[], b"").await;
    assert_eq!(xrd.status(), 200);
    assert_eq!(
        xrd.text(),
        format!(
            "<?xml version='1.0' encoding='utf-8'?>\n<XRD xmlns='http://docs.oasis-open.org/ns/xri/xrd-1.0'>\n  \
             <Link rel=\"urn:xmpp:alt-connections:websocket\" href=\"{websocket}\"/>\n  \
             <Link rel=\"urn:xmpp:alt-connections:xbosh\" href=\"{bosh}\"/>\n</XRD>\n"
        )
    );
    let jrd = server.http("GET", "/.well-known/host-meta.json", &[], b"").await;
    assert_eq!(
        jrd.text(),
        // In XEP-0156's order: rel, then href.
        format!(r#"{{"links":[{{"rel":"urn:xmpp:alt-connections:websocket","href":"{websocket}"}},{{"rel":"urn:xmpp:alt-connections:xbosh","href":"{bosh}"}}]}}"#)
    );
    let off = TestServer::start().await;
    assert_eq!(off.http("GET", "/.well-known/host-meta", &[], b"").await.status(), 404);
}

#[tokio::test]
async fn wrong_passwords_fail_and_the_stream_closes_after_the_tries() {
    let mut config = server::Config { xmpp_accounts: vec![server::AccountEntry::new("dora", "right")], ..server::Config::default() };
    config.xmpp.plain_unencrypted = true;
    config.xmpp.anonymous = false;
    let server = TestServer::with_xmpp(config).await;
    let mut c = Client::connect(server.xmpp.unwrap()).await;
    c.send(HEADER).await;
    assert!(matches!(c.event().await, Some(StreamEvent::Open { .. })));
    let features = c.stanza().await;
    let offered: Vec<String> = features.find("mechanisms", "urn:ietf:params:xml:ns:xmpp-sasl").unwrap().elements().map(Element::text_content).collect();
    assert_eq!(offered, ["SCRAM-SHA-256", "SCRAM-SHA-1", "PLAIN"]);
    use base64::Engine;
    let plain = |password: &str| base64::engine::general_purpose::STANDARD.encode(format!("\0dora\0{password}"));
    c.send("<auth xmlns='urn:ietf:params:xml:ns:xmpp-sasl' mechanism='ANONYMOUS'/>").await;
    assert!(c.stanza().await.find("invalid-mechanism", "urn:ietf:params:xml:ns:xmpp-sasl").is_some());
    c.send(&format!("<auth xmlns='urn:ietf:params:xml:ns:xmpp-sasl' mechanism='PLAIN'>{}</auth>", plain("wrong"))).await;
    assert!(c.stanza().await.find("not-authorized", "urn:ietf:params:xml:ns:xmpp-sasl").is_some());
    c.send(&format!("<auth xmlns='urn:ietf:params:xml:ns:xmpp-sasl' mechanism='PLAIN'>{}</auth>", plain("wrong again"))).await;
    assert_eq!(c.stream_error().await, "not-authorized", "the third failure (--xmpp-auth-tries 3) ends the stream");
    assert_eq!(server.metric(r#"switchboard_refused_total{app="xmpp",reason="sasl"}"#).await, Some(3.0));

    let mut c = Client::connect(server.xmpp.unwrap()).await;
    c.send(HEADER).await;
    c.event().await;
    c.stanza().await;
    c.send(&format!("<auth xmlns='urn:ietf:params:xml:ns:xmpp-sasl' mechanism='PLAIN'>{}</auth>", plain("right"))).await;
    assert_eq!(c.stanza().await.name, "success");
}

/// The next event of a stream read from `socket` with `parser`.
pub async fn next_on<S: tokio::io::AsyncRead + Unpin>(socket: &mut S, parser: &mut StreamParser) -> StreamEvent {
    loop {
        if let Some(event) = parser.next_event().expect("well-formed") {
            return event;
        }
        let mut buf = [0u8; 4096];
        let n = tokio::time::timeout(PATIENCE, socket.read(&mut buf)).await.expect("a reply in time").unwrap();
        assert!(n > 0, "the server closed the connection");
        parser.feed(&buf[..n]);
    }
}

#[tokio::test]
async fn starttls_and_direct_tls_encrypt_the_stream_and_then_plain_is_offered() {
    let cert = rcgen::generate_simple_self_signed(vec!["localhost".to_owned()]).unwrap();
    let dir = std::env::temp_dir().join(format!("switchboard-xmpp-tls-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let files = server::TlsFiles { cert: dir.join("cert.pem"), key: dir.join("key.pem") };
    std::fs::write(&files.cert, cert.cert.pem()).unwrap();
    std::fs::write(&files.key, cert.signing_key.serialize_pem()).unwrap();
    let config = server::Config { tls: Some(files), xmpp_accounts: vec![server::AccountEntry::new("erin", "pw")], ..server::Config::default() };
    let server = TestServer::with_xmpp(config).await;

    let mut tcp = TcpStream::connect(server.xmpp.unwrap()).await.unwrap();
    let mut parser = StreamParser::new(Limits::default());
    tcp.write_all(HEADER.as_bytes()).await.unwrap();
    assert!(matches!(next_on(&mut tcp, &mut parser).await, StreamEvent::Open { .. }));
    let StreamEvent::Stanza(features) = next_on(&mut tcp, &mut parser).await else { panic!() };
    assert!(features.find("starttls", "urn:ietf:params:xml:ns:xmpp-tls").is_some());
    let mechanisms = |features: &Element| -> Vec<String> {
        features.find("mechanisms", "urn:ietf:params:xml:ns:xmpp-sasl").unwrap().elements().map(Element::text_content).collect()
    };
    assert!(!mechanisms(&features).contains(&"PLAIN".to_owned()), "no PLAIN in the clear");
    tcp.write_all(b"<starttls xmlns='urn:ietf:params:xml:ns:xmpp-tls'/>").await.unwrap();
    let StreamEvent::Stanza(proceed) = next_on(&mut tcp, &mut parser).await else { panic!() };
    assert_eq!(proceed.name, "proceed");

    let connector = crate::support::tls_connector(cert.cert.der());
    let name = rustls::pki_types::ServerName::try_from("localhost").unwrap();
    let mut tls = connector.connect(name.clone(), tcp).await.unwrap();
    let mut parser = StreamParser::new(Limits::default());
    tls.write_all(HEADER.as_bytes()).await.unwrap();
    assert!(matches!(next_on(&mut tls, &mut parser).await, StreamEvent::Open { .. }));
    let StreamEvent::Stanza(features) = next_on(&mut tls, &mut parser).await else { panic!() };
    assert!(features.find("starttls", "urn:ietf:params:xml:ns:xmpp-tls").is_none(), "TLS is not offered twice");
    assert_eq!(mechanisms(&features), ["SCRAM-SHA-256", "SCRAM-SHA-1", "PLAIN", "ANONYMOUS"]);
    use base64::Engine;
    let plain = base64::engine::general_purpose::STANDARD.encode("\0erin\0pw");
    tls.write_all(format!("<auth xmlns='urn:ietf:params:xml:ns:xmpp-sasl' mechanism='PLAIN'>{plain}</auth>").as_bytes()).await.unwrap();
    let StreamEvent::Stanza(success) = next_on(&mut tls, &mut parser).await else { panic!() };
    assert_eq!(success.name, "success");

    // Direct TLS (XEP-0368): TLS from the first byte, then the same stream.
    let tcp = TcpStream::connect(server.xmpp_tls.unwrap()).await.unwrap();
    let mut direct = connector.connect(name, tcp).await.unwrap();
    let mut parser = StreamParser::new(Limits::default());
    direct.write_all(HEADER.as_bytes()).await.unwrap();
    assert!(matches!(next_on(&mut direct, &mut parser).await, StreamEvent::Open { .. }));
    let StreamEvent::Stanza(features) = next_on(&mut direct, &mut parser).await else { panic!() };
    assert!(features.find("starttls", "urn:ietf:params:xml:ns:xmpp-tls").is_none());
    assert!(mechanisms(&features).contains(&"PLAIN".to_owned()), "encrypted from the start");
    std::fs::remove_dir_all(dir).ok();
}

#[tokio::test]
async fn stream_management_before_authentication_is_refused_and_the_stream_goes_on() {
    let server = TestServer::with_xmpp(server::Config::default()).await;
    let mut c = Client::connect(server.xmpp.unwrap()).await;
    c.send(HEADER).await;
    assert!(matches!(c.event().await, Some(StreamEvent::Open { .. })));
    assert_eq!(c.stanza().await.name, "features");
    c.send("<enable xmlns='urn:xmpp:sm:3'/>").await;
    let failed = c.stanza().await;
    assert_eq!(failed.to_xml("jabber:client"), r#"<failed xmlns="urn:xmpp:sm:3"><unexpected-request xmlns="urn:ietf:params:xml:ns:xmpp-stanzas"/></failed>"#);
    c.send("<auth xmlns='urn:ietf:params:xml:ns:xmpp-sasl' mechanism='ANONYMOUS'/>").await;
    assert_eq!(c.stanza().await.name, "success");
}

#[tokio::test]
async fn stream_management_counts_stanzas_both_ways() {
    let server = TestServer::with_xmpp(server::Config::default()).await;
    let (mut c, _) = Client::login(server.xmpp.unwrap()).await;
    c.send("<enable xmlns='urn:xmpp:sm:3'/>").await;
    let enabled = c.stanza().await;
    assert_eq!((enabled.name.as_str(), enabled.ns.as_str()), ("enabled", "urn:xmpp:sm:3"));
    c.send("<iq type='get' id='p1'><ping xmlns='urn:xmpp:ping'/></iq><iq type='get' id='p2'><ping xmlns='urn:xmpp:ping'/></iq><r xmlns='urn:xmpp:sm:3'/>").await;
    assert_eq!(c.stanza().await.get("id"), Some("p1"));
    assert_eq!(c.stanza().await.get("id"), Some("p2"));
    let ack = c.stanza().await;
    assert_eq!((ack.name.as_str(), ack.get("h")), ("a", Some("2")), "two stanzas handled");
    // The client acknowledges the two results; then claims more than it got.
    c.send("<a xmlns='urn:xmpp:sm:3' h='2'/>").await;
    c.send("<iq type='get' id='p3'><ping xmlns='urn:xmpp:ping'/></iq>").await;
    assert_eq!(c.stanza().await.get("id"), Some("p3"));
    c.send("<a xmlns='urn:xmpp:sm:3' h='9'/>").await;
    assert_eq!(c.stream_error().await, "undefined-condition");
}

/// Logs in to an account with PLAIN over a plain stream (the test server
/// allows it) and returns the client after the stream restart, before bind.
pub async fn login_account(addr: SocketAddr, name: &str, password: &str) -> Client {
    login_account_at(addr, "localhost", name, password).await
}

/// As `login_account`, to the server of `domain`.
pub async fn login_account_at(addr: SocketAddr, domain: &str, name: &str, password: &str) -> Client {
    use base64::Engine;
    let plain = base64::engine::general_purpose::STANDARD.encode(format!("\0{name}\0{password}"));
    let auth = format!("<auth xmlns='urn:ietf:params:xml:ns:xmpp-sasl' mechanism='PLAIN'>{plain}</auth>");
    let (c, _, features) = Client::authenticate_at(addr, domain, &auth).await;
    assert!(features.find("sm", "urn:xmpp:sm:3").is_some(), "stream management offered");
    c
}

#[tokio::test]
async fn a_broken_connection_resumes_and_nothing_unacknowledged_is_lost() {
    let server = with_accounts(&["fay"]).await;
    let addr = server.xmpp.unwrap();
    let mut alice = server.chat_member("alice", "lobby").await;

    let mut c = login_account(addr, "fay", "pw").await;
    c.send("<iq type='set' id='b'><bind xmlns='urn:ietf:params:xml:ns:xmpp-bind'><resource>r</resource></bind></iq>").await;
    assert_eq!(c.stanza().await.get("type"), Some("result"));
    c.send("<enable xmlns='urn:xmpp:sm:3' resume='true'/>").await;
    let enabled = c.stanza().await;
    assert_eq!(enabled.get("resume"), Some("true"));
    let id = enabled.get("id").unwrap().to_owned();
    c.send("<presence to='lobby@conference.localhost/fay'/>").await;
    for _ in 0..3 {
        c.stanza().await; // alice's presence, its own, the subject
    }
    assert_eq!(alice.recv_json().await["name"], "fay");
    alice.send(&json!({"message": "one"}).to_string()).await;
    assert_eq!(c.stanza().await.find("body", "jabber:client").unwrap().text_content(), "one");
    assert_eq!(alice.recv_json().await["message"], "one");
    // The client acknowledges the first two stanzas only, then its connection breaks.
    c.send("<a xmlns='urn:xmpp:sm:3' h='2'/>").await;
    drop(c);
    alice.send(&json!({"message": "two"}).to_string()).await;
    assert_eq!(alice.recv_json().await["message"], "two");

    let mut c = login_account(addr, "fay", "pw").await;
    // A stanza sent right behind `<resume/>`, in the same write, is the resumed session's.
    c.send(&format!("<resume xmlns='urn:xmpp:sm:3' previd='{id}' h='2'/><message to='lobby@conference.localhost' type='groupchat'><body>back</body></message>")).await;
    let resumed = c.stanza().await;
    assert_eq!((resumed.name.as_str(), resumed.get("previd"), resumed.get("h")), ("resumed", Some(id.as_str()), Some("1")), "the presence was handled");
    // Sent again: the subject and "one" (unacknowledged); then what came while away.
    let subject = c.stanza().await;
    assert!(subject.find("subject", "jabber:client").is_some(), "{subject:?}");
    assert_eq!(c.stanza().await.find("body", "jabber:client").unwrap().text_content(), "one");
    assert_eq!(c.stanza().await.find("body", "jabber:client").unwrap().text_content(), "two");
    // Still in the room: no leave was seen, and it spoke.
    assert_eq!(alice.recv_json().await, json!({"name": "fay", "room": "lobby", "message": "back"}));
    let (_, metrics) = server.get("/metrics").await;
    assert!(metrics.contains("switchboard_xmpp_resumptions_total 1\n"), "{metrics}");

    // A resumption of an unknown id fails and the session can bind instead.
    let mut other = login_account(addr, "fay", "pw").await;
    other.send("<resume xmlns='urn:xmpp:sm:3' previd='nope' h='0'/>").await;
    let failed = other.stanza().await;
    assert_eq!(failed.name, "failed");
}

/// Logs in to an account (password `pw`) and binds `resource`.
/// A server with XMPP and an account for each of `names` (password `pw`),
/// PLAIN allowed without TLS so that `bound_account` can log in.
pub async fn with_accounts(names: &[&str]) -> TestServer {
    let accounts = names.iter().map(|name| server::AccountEntry::new(name, "pw")).collect();
    let mut config = server::Config { xmpp_accounts: accounts, ..server::Config::default() };
    config.xmpp.plain_unencrypted = true;
    TestServer::with_xmpp(config).await
}

pub async fn bound_account(addr: SocketAddr, name: &str, resource: &str) -> Client {
    bound_account_at(addr, "localhost", name, resource).await
}

/// As `bound_account`, to the server of `domain`.
pub async fn bound_account_at(addr: SocketAddr, domain: &str, name: &str, resource: &str) -> Client {
    let mut c = login_account_at(addr, domain, name, "pw").await;
    c.send(&format!("<iq type='set' id='b'><bind xmlns='urn:ietf:params:xml:ns:xmpp-bind'><resource>{resource}</resource></bind></iq>")).await;
    assert_eq!(c.stanza().await.get("type"), Some("result"));
    c
}

#[tokio::test]
async fn in_band_registration_makes_an_account_when_it_is_on() {
    let mut config = server::Config::default();
    config.xmpp.registration = 2;
    config.xmpp.plain_unencrypted = true;
    let server = TestServer::with_xmpp(config).await;
    let addr = server.xmpp.unwrap();
    let mut c = Client::connect(addr).await;
    c.send(HEADER).await;
    assert!(matches!(c.event().await, Some(StreamEvent::Open { .. })));
    let features = c.stanza().await;
    assert!(features.find("register", "http://jabber.org/features/iq-register").is_some(), "{features:?}");
    c.send("<iq type='get' id='g'><query xmlns='jabber:iq:register'/></iq>").await;
    let form = c.stanza().await;
    assert!(form.find("query", "jabber:iq:register").unwrap().find("password", "jabber:iq:register").is_some());
    c.send("<iq type='set' id='s'><query xmlns='jabber:iq:register'><username>Zed</username><password>pw</password></query></iq>").await;
    assert_eq!(c.stanza().await.get("type"), Some("result"));
    c.send("<iq type='set' id='t'><query xmlns='jabber:iq:register'><username>zed</username><password>pw</password></query></iq>").await;
    let taken = c.stanza().await;
    assert!(taken.find("error", "jabber:client").unwrap().find("conflict", "urn:ietf:params:xml:ns:xmpp-stanzas").is_some(), "{taken:?}");
    c.send("<iq type='set' id='u'><query xmlns='jabber:iq:register'><username>wes</username><password>pw</password></query></iq>").await;
    assert_eq!(c.stanza().await.get("type"), Some("result"));
    // The new account logs in, under its case-mapped name, and can remove itself.
    let mut wes = bound_account(addr, "wes", "phone").await;
    wes.send("<iq type='set' id='rm'><query xmlns='jabber:iq:register'><remove/></query></iq>").await;
    assert_eq!(wes.stanza().await.get("id"), Some("rm"));
    assert_eq!(wes.stream_error().await, "not-authorized");
    bound_account(addr, "zed", "phone").await;
    // With wes gone there is room for one more, then the limit (2) is reached.
    c.send("<iq type='set' id='v'><query xmlns='jabber:iq:register'><username>vic</username><password>pw</password></query></iq>").await;
    assert_eq!(c.stanza().await.get("type"), Some("result"));
    let mut d = Client::connect(addr).await;
    d.send(HEADER).await;
    d.event().await;
    d.stanza().await;
    d.send("<iq type='set' id='s'><query xmlns='jabber:iq:register'><username>yan</username><password>pw</password></query></iq>").await;
    let full = d.stanza().await;
    assert!(full.find("error", "jabber:client").unwrap().find("resource-constraint", "urn:ietf:params:xml:ns:xmpp-stanzas").is_some(), "{full:?}");

    // Off (the default): not offered, and asking is asking before authenticating.
    let mut config = server::Config::default();
    config.xmpp.plain_unencrypted = true;
    let server = TestServer::with_xmpp(config).await;
    let mut e = Client::connect(server.xmpp.unwrap()).await;
    e.send(HEADER).await;
    e.event().await;
    assert!(e.stanza().await.find("register", "http://jabber.org/features/iq-register").is_none());
    e.send("<iq type='get' id='g'><query xmlns='jabber:iq:register'/></iq>").await;
    assert_eq!(e.stream_error().await, "not-authorized");
}

/// Logs in over WebSocket to an account (password `pw`) with PLAIN and
/// returns the client after the stream restart, before bind.
async fn ws_login_account(server: &TestServer, name: &str) -> WsClient {
    use base64::Engine;
    let open = OPEN;
    let mut c = WsClient::connect(server).await;
    c.send(open).await;
    c.element().await;
    c.element().await;
    let plain = base64::engine::general_purpose::STANDARD.encode(format!("\0{name}\0pw"));
    c.send(&format!("<auth xmlns='urn:ietf:params:xml:ns:xmpp-sasl' mechanism='PLAIN'>{plain}</auth>")).await;
    assert_eq!(c.element().await.name, "success");
    c.send(open).await;
    assert_eq!(c.element().await.name, "open");
    assert!(c.element().await.find("sm", "urn:xmpp:sm:3").is_some(), "stream management offered");
    c
}

#[tokio::test]
async fn a_websocket_session_resumes_on_a_new_websocket() {
    let server = with_accounts(&["gil"]).await;
    let mut alice = server.chat_member("alice", "lobby").await;

    let mut c = ws_login_account(&server, "gil").await;
    c.send("<iq xmlns='jabber:client' type='set' id='b'><bind xmlns='urn:ietf:params:xml:ns:xmpp-bind'/></iq>").await;
    assert_eq!(c.element().await.get("type"), Some("result"));
    c.send("<enable xmlns='urn:xmpp:sm:3' resume='true'/>").await;
    let enabled = c.element().await;
    let id = enabled.get("id").expect("resumable").to_owned();
    c.send("<presence xmlns='jabber:client' to='lobby@conference.localhost/gil'/>").await;
    for _ in 0..3 {
        c.element().await; // alice's presence, its own, the subject
    }
    assert_eq!(alice.recv_json().await["name"], "gil");
    alice.send(&json!({"message": "one"}).to_string()).await;
    assert_eq!(c.element().await.find("body", "jabber:client").unwrap().text_content(), "one");
    assert_eq!(alice.recv_json().await["message"], "one");
    c.send("<a xmlns='urn:xmpp:sm:3' h='2'/>").await;
    // Gone without a close frame.
    drop(c);
    alice.send(&json!({"message": "two"}).to_string()).await;
    assert_eq!(alice.recv_json().await["message"], "two");

    let mut c = ws_login_account(&server, "gil").await;
    c.send(&format!("<resume xmlns='urn:xmpp:sm:3' previd='{id}' h='2'/>")).await;
    let resumed = c.element().await;
    assert_eq!((resumed.name.as_str(), resumed.get("previd")), ("resumed", Some(id.as_str())));
    // Each its own message: the subject and "one" again, then "two".
    assert!(c.element().await.find("subject", "jabber:client").is_some());
    assert_eq!(c.element().await.find("body", "jabber:client").unwrap().text_content(), "one");
    assert_eq!(c.element().await.find("body", "jabber:client").unwrap().text_content(), "two");
    c.send("<message xmlns='jabber:client' to='lobby@conference.localhost' type='groupchat'><body>back</body></message>").await;
    assert_eq!(alice.recv_json().await, json!({"name": "gil", "room": "lobby", "message": "back"}));
    // A TCP client cannot resume a WebSocket session: its kept stanzas are framed for WebSocket.
    let mut tcp = login_account(server.xmpp.unwrap(), "gil", "pw").await;
    tcp.send(&format!("<resume xmlns='urn:xmpp:sm:3' previd='{id}' h='2'/>")).await;
    assert_eq!(tcp.stanza().await.name, "failed");
}

#[tokio::test]
async fn a_resumption_takes_the_session_from_a_connection_that_is_still_open() {
    let server = with_accounts(&["hal"]).await;
    let addr = server.xmpp.unwrap();
    let mut old = bound_account(addr, "hal", "desk").await;
    old.send("<enable xmlns='urn:xmpp:sm:3' resume='true'/>").await;
    let id = old.stanza().await.get("id").expect("resumable").to_owned();
    old.send("<iq type='get' id='p1'><ping xmlns='urn:xmpp:ping'/></iq>").await;
    assert_eq!(old.stanza().await.get("id"), Some("p1"));

    // The client saw the connection break; the server did not.
    let mut new = login_account(addr, "hal", "pw").await;
    new.send(&format!("<resume xmlns='urn:xmpp:sm:3' previd='{id}' h='0'/>")).await;
    let resumed = new.stanza().await;
    assert_eq!((resumed.name.as_str(), resumed.get("h")), ("resumed", Some("1")));
    let again = new.stanza().await;
    assert_eq!(again.get("id"), Some("p1"), "the unacknowledged answer, sent again");
    assert_eq!(old.stream_error().await, "conflict");
    new.send("<iq type='get' id='p2'><ping xmlns='urn:xmpp:ping'/></iq>").await;
    assert_eq!(new.stanza().await.get("id"), Some("p2"));
    let (_, metrics) = server.get("/metrics").await;
    assert!(metrics.contains("switchboard_xmpp_resumptions_total 1\n"), "{metrics}");
}

#[tokio::test]
async fn a_websocket_message_over_the_size_limit_ends_the_stream_with_1009_and_is_not_kept() {
    use futures_util::StreamExt;
    use tokio_tungstenite::tungstenite::Message;
    let mut config = server::Config { xmpp_accounts: vec![server::AccountEntry::new("ivy", "pw")], ..server::Config::default() };
    config.xmpp.plain_unencrypted = true;
    config.server.max_message_size = 4096;
    let server = TestServer::with_xmpp(config).await;
    let mut c = ws_login_account(&server, "ivy").await;
    c.send("<iq xmlns='jabber:client' type='set' id='b'><bind xmlns='urn:ietf:params:xml:ns:xmpp-bind'/></iq>").await;
    assert_eq!(c.element().await.get("type"), Some("result"));
    c.send("<enable xmlns='urn:xmpp:sm:3' resume='true'/>").await;
    assert!(c.element().await.get("id").is_some(), "resumable");
    c.send(&format!("<message xmlns='jabber:client' to='ivy@localhost'><body>{}</body></message>", "a".repeat(5000))).await;
    let error = c.element().await;
    assert_eq!((error.name.as_str(), error.elements().next().map(|e| e.name.as_str())), ("error", Some("policy-violation")));
    assert_eq!(c.element().await.name, "close");
    match tokio::time::timeout(PATIENCE, c.ws.next()).await.expect("a close in time") {
        Some(Ok(Message::Close(Some(frame)))) => assert_eq!(u16::from(frame.code), 1009),
        other => panic!("expected a close frame with 1009, got {other:?}"),
    }
    assert_eq!(server.metric("switchboard_xmpp_parked_sessions ").await, Some(0.0), "a session that broke the framing is not kept");
}

/// A resource one session holds on one node is refused to a session of
/// the same account on another (RFC 6120 §7.7.2.2), as on one node;
/// another resource binds there. A chat message to a resource nobody
/// holds goes on as to the bare JID, on both nodes; an approval brings
/// the approver's presence from both nodes; a message to a user logged in
/// anonymously on the other node is kept in no archive of its.
#[tokio::test]
async fn a_full_jid_is_held_on_one_node_and_a_chat_to_a_missing_one_reaches_every_node() {
    let (a, b) = two_nodes(&["ann", "ben"]).await;
    let mut desk = bound_account(a.xmpp.unwrap(), "ann", "desk").await;
    let mut held = Vec::new();
    for (addr, other) in [(a.xmpp.unwrap(), "phone-a"), (b.xmpp.unwrap(), "phone-b")] {
        let mut again = login_account(addr, "ann", "pw").await;
        again.send("<iq type='set' id='b'><bind xmlns='urn:ietf:params:xml:ns:xmpp-bind'><resource>desk</resource></bind></iq>").await;
        let refused = again.answer("b").await;
        let error = refused.find("error", "jabber:client").unwrap_or_else(|| panic!("{refused:?}"));
        assert_eq!((error.get("type"), error.find("conflict", "urn:ietf:params:xml:ns:xmpp-stanzas").is_some()), (Some("cancel"), true), "{refused:?}");
        again.send(&format!("<iq type='set' id='b2'><bind xmlns='urn:ietf:params:xml:ns:xmpp-bind'><resource>{other}</resource></bind></iq>")).await;
        assert_eq!(again.answer("b2").await.get("type"), Some("result"));
        held.push(again);
    }
    let mut phone_b = held.pop().unwrap();
    for (c, id) in [(&mut desk, "s1"), (&mut phone_b, "s2")] {
        c.send("<presence/>").await;
        // Its node has taken its presence once it answers what came after.
        c.send(&format!("<iq type='get' id='{id}'><ping xmlns='urn:xmpp:ping'/></iq>")).await;
        c.answer(id).await;
    }
    let mut ben = bound_account(a.xmpp.unwrap(), "ben", "desk").await;
    ben.send("<message to='ann@localhost/gone' type='chat' id='m1'><body>to no one</body></message>").await;
    for c in [&mut desk, &mut phone_b] {
        let got = c.next_named("message").await;
        assert_eq!((got.get("id"), got.get("from")), (Some("m1"), Some("ben@localhost/desk")));
    }
    // Ann approves ben's request from her desk: ben sees the presence of
    // her resources on both nodes.
    ben.send("<presence to='ann@localhost' type='subscribe'/>").await;
    while desk.next_named("presence").await.get("type") != Some("subscribe") {}
    desk.send("<presence to='ben@localhost' type='subscribed'/>").await;
    let mut seen = std::collections::BTreeSet::new();
    while seen.len() < 2 {
        let presence = ben.next_named("presence").await;
        if presence.get("type").is_none() {
            seen.insert(presence.get("from").unwrap_or_default().to_owned());
        }
    }
    assert_eq!(seen.into_iter().collect::<Vec<_>>(), ["ann@localhost/desk", "ann@localhost/phone-b"]);
    // A user logged in anonymously on the other node has no archive: its
    // copy carries no archive id.
    let (mut anon, anon_jid, _) = Client::anonymous(b.xmpp.unwrap()).await;
    anon.send("<presence/><iq type='get' id='s3'><ping xmlns='urn:xmpp:ping'/></iq>").await;
    anon.answer("s3").await;
    let bare = anon_jid.split('/').next().unwrap();
    ben.send(&format!("<message to='{bare}' type='chat' id='m2'><body>to nobody kept</body></message>")).await;
    let got = anon.next_named("message").await;
    assert_eq!((got.get("id"), got.find("stanza-id", "urn:xmpp:sid:0")), (Some("m2"), None), "{got:?}");
}

/// Two sessions of one account on two nodes binding one resource at the
/// same moment: one of them binds it and the other is refused, round
/// after round, whichever node's claim goes first.
#[tokio::test]
async fn of_two_nodes_binding_one_resource_at_once_one_binds_it() {
    let (a, b) = two_nodes(&["ann"]).await;
    for round in 0..20 {
        let (mut on_a, mut on_b) = (login_account(a.xmpp.unwrap(), "ann", "pw").await, login_account(b.xmpp.unwrap(), "ann", "pw").await);
        let bind = format!("<iq type='set' id='b'><bind xmlns='urn:ietf:params:xml:ns:xmpp-bind'><resource>r{round}</resource></bind></iq>");
        tokio::join!(on_a.send(&bind), on_b.send(&bind));
        let (from_a, from_b) = tokio::join!(on_a.answer("b"), on_b.answer("b"));
        let results = [&from_a, &from_b].iter().filter(|answer| answer.get("type") == Some("result")).count();
        assert_eq!(results, 1, "round {round}: r{round} bound by one: {from_a:?} {from_b:?}");
        for answer in [&from_a, &from_b].into_iter().filter(|answer| answer.get("type") == Some("error")) {
            assert!(answer.find("error", "jabber:client").and_then(|e| e.find("conflict", "urn:ietf:params:xml:ns:xmpp-stanzas")).is_some(), "{answer:?}");
        }
    }
}

/// A resource is bound in its canonical form (RFC 7622 §3.4, NFC), so
/// that one written two ways is one resource on every node; one the
/// profile refuses (a control character) is refused with bad-request.
#[tokio::test]
async fn a_resource_is_bound_in_its_canonical_form_and_held_so_on_every_node() {
    let (a, b) = two_nodes(&["ann"]).await;
    let mut on_a = login_account(a.xmpp.unwrap(), "ann", "pw").await;
    on_a.send("<iq type='set' id='b'><bind xmlns='urn:ietf:params:xml:ns:xmpp-bind'><resource>cafe\u{301}</resource></bind></iq>").await;
    let bound = on_a.answer("b").await;
    let jid = bound.find("bind", "urn:ietf:params:xml:ns:xmpp-bind").and_then(|b| b.find("jid", "urn:ietf:params:xml:ns:xmpp-bind")).map(|j| j.text_content());
    assert_eq!(jid.as_deref(), Some("ann@localhost/caf\u{e9}"), "{bound:?}");
    let mut on_b = login_account(b.xmpp.unwrap(), "ann", "pw").await;
    for (resource, condition) in [("caf\u{e9}", "conflict"), ("x\u{85}", "bad-request")] {
        on_b.send(&format!("<iq type='set' id='b'><bind xmlns='urn:ietf:params:xml:ns:xmpp-bind'><resource>{resource}</resource></bind></iq>")).await;
        let refused = on_b.answer("b").await;
        let error = refused.find("error", "jabber:client").unwrap_or_else(|| panic!("{resource:?}: {refused:?}"));
        assert!(error.find(condition, "urn:ietf:params:xml:ns:xmpp-stanzas").is_some(), "{resource:?}: {refused:?}");
    }
}

/// Two nodes linked directly, the second to the first, each with XMPP
/// accounts `users` (password "pw") in memory and PLAIN without TLS.
async fn two_nodes(users: &[&str]) -> (TestServer, TestServer) {
    let config = || {
        let mut config = server::Config { xmpp_accounts: users.iter().map(|user| server::AccountEntry::new(user, "pw")).collect(), ..server::Config::default() };
        config.xmpp.plain_unencrypted = true;
        config.store.kind = server::StoreKind::Memory;
        config
    };
    let broker = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let mut second = config();
    second.broker.url = Some(format!("node://{}", broker.local_addr().unwrap()));
    (TestServer::host_kept(config(), broker).await, TestServer::with_xmpp_kept(second).await)
}
