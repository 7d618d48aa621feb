//! Fast logins at the byte level: SASL2 (XEP-0388) with Bind 2 (XEP-0386),
//! stream management inline (XEP-0198), and FAST tokens (XEP-0484) with
//! HT-SHA-256-NONE: authenticated, bound and counting in one exchange,
//! logged in again with a token, resumed inside the success.

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use hmac::{Hmac, Mac};
use wire::xmpp::{Element, StreamEvent};

use crate::support::TestServer;
use crate::xmpp::{Client, HEADER, with_accounts};

const AGENT: &str = "d4565fa7-4d72-4749-b3d3-740edbf87770";

fn hmac(token: &str, data: &[u8]) -> Vec<u8> {
    let mut mac = <Hmac<sha2::Sha256> as Mac>::new_from_slice(token.as_bytes()).unwrap();
    mac.update(data);
    mac.finalize().into_bytes().to_vec()
}

/// A client's `<authenticate/>`: `mechanism` with `initial` (encoded
/// here), its user-agent `agent`, and `inline` after them.
fn authenticate(mechanism: &str, initial: &[u8], agent: &str, inline: &str) -> String {
    let initial = STANDARD.encode(initial);
    format!(
        "<authenticate xmlns='urn:xmpp:sasl:2' mechanism='{mechanism}'><initial-response>{initial}</initial-response>\
         <user-agent id='{agent}'><software>test</software></user-agent>{inline}</authenticate>"
    )
}

const BIND_WITH_SM: &str = "<bind xmlns='urn:xmpp:bind:0'><tag>Test 1!</tag><enable xmlns='urn:xmpp:sm:3' resume='true'/></bind>";
const ASK_TOKEN: &str = "<request-token xmlns='urn:xmpp:fast:0' mechanism='HT-SHA-256-NONE'/>";

/// Opens a stream: the features offered.
async fn open(addr: std::net::SocketAddr) -> (Client, Element) {
    let mut c = Client::connect(addr).await;
    c.send(HEADER).await;
    assert!(matches!(c.event().await, Some(StreamEvent::Open { .. })));
    let features = c.stanza().await;
    (c, features)
}

/// `element` as text, with each of `random` (ids, tokens, times) named.
fn shown(element: &Element, random: &[(&str, &str)]) -> String {
    let mut text = element.to_xml("jabber:client");
    for (value, name) in random {
        text = text.replace(value, name);
    }
    text
}

#[tokio::test]
async fn sasl2_authenticates_binds_and_enables_stream_management_in_one_exchange_and_gives_a_token() {
    let server = with_accounts(&["fay"]).await;
    let (mut c, features) = open(server.xmpp.unwrap()).await;
    let authentication = features.find("authentication", "urn:xmpp:sasl:2").expect("SASL2 offered");
    assert_eq!(
        authentication.to_xml("jabber:client"),
        "<authentication xmlns=\"urn:xmpp:sasl:2\"><mechanism>SCRAM-SHA-256</mechanism><mechanism>SCRAM-SHA-1</mechanism><mechanism>PLAIN</mechanism><mechanism>ANONYMOUS</mechanism>\
         <inline><bind xmlns=\"urn:xmpp:bind:0\"><inline><feature var=\"urn:xmpp:sm:3\"/></inline></bind><sm xmlns=\"urn:xmpp:sm:3\"/>\
         <fast xmlns=\"urn:xmpp:fast:0\"><mechanism>HT-SHA-256-NONE</mechanism></fast></inline></authentication>"
    );
    c.send(&authenticate("PLAIN", b"\0fay\0pw", AGENT, &format!("{BIND_WITH_SM}{ASK_TOKEN}"))).await;
    let success = c.stanza().await;
    let jid = success.find("authorization-identifier", "urn:xmpp:sasl:2").unwrap().text_content();
    let resource = jid.strip_prefix("fay@localhost/Test1/").expect("tag/random, the tag's odd characters left out");
    assert_eq!(resource.len(), 16);
    let enabled = success.find("bound", "urn:xmpp:bind:0").unwrap().find("enabled", "urn:xmpp:sm:3").unwrap();
    let token = success.find("token", "urn:xmpp:fast:0").unwrap();
    let (sm_id, secret, expiry) = (enabled.get("id").unwrap(), token.get("token").unwrap(), token.get("expiry").unwrap());
    assert_eq!(
        shown(&success, &[(sm_id, "SM"), (secret, "TOKEN"), (expiry, "EXPIRY"), (resource, "R")]),
        "<success xmlns=\"urn:xmpp:sasl:2\"><authorization-identifier>fay@localhost/Test1/R</authorization-identifier>\
         <bound xmlns=\"urn:xmpp:bind:0\"><enabled xmlns=\"urn:xmpp:sm:3\" id=\"SM\" resume=\"true\" max=\"300\"/></bound>\
         <token xmlns=\"urn:xmpp:fast:0\" expiry=\"EXPIRY\" token=\"TOKEN\"/></success>"
    );
    let expires = humantime::parse_rfc3339(expiry).unwrap();
    let lifetime = expires.duration_since(std::time::SystemTime::now()).unwrap();
    assert!(lifetime > std::time::Duration::from_secs(13 * 86_400), "--xmpp-fast-token-lifetime 14days: {lifetime:?}");
    // No restart: the features of a bound stream, with nothing left to negotiate.
    assert_eq!(c.stanza().await.to_xml("jabber:client"), "<stream:features/>");
    // Stanzas flow, counted from the success on.
    c.send("<iq type='get' id='p1'><ping xmlns='urn:xmpp:ping'/></iq><r xmlns='urn:xmpp:sm:3'/>").await;
    let pong = c.stanza().await;
    assert_eq!((pong.get("id"), pong.get("to")), (Some("p1"), Some(jid.as_str())));
    assert_eq!(c.stanza().await.get("h"), Some("1"));
    c.send("<a xmlns='urn:xmpp:sm:3' h='1'/><iq type='get' id='p2'><ping xmlns='urn:xmpp:ping'/></iq>").await;
    assert_eq!(c.stanza().await.get("id"), Some("p2"), "h=1 acknowledged the one result sent: nothing else was counted");

    // Logged in again with the token: one round trip, the server's answer
    // proving it knew the token too.
    let proof = [&b"fay\0"[..], &hmac(secret, b"Initiator")].concat();
    let (mut again, _) = open(server.xmpp.unwrap()).await;
    again.send(&authenticate("HT-SHA-256-NONE", &proof, AGENT, "<bind xmlns='urn:xmpp:bind:0'/><fast xmlns='urn:xmpp:fast:0'/>")).await;
    let success = again.stanza().await;
    let answer = success.find("additional-data", "urn:xmpp:sasl:2").unwrap().text_content();
    assert_eq!(STANDARD.decode(answer).unwrap(), hmac(secret, b"Responder"));
    let jid = success.find("authorization-identifier", "urn:xmpp:sasl:2").unwrap().text_content();
    assert!(jid.starts_with("fay@localhost/") && jid.len() == "fay@localhost/".len() + 16, "no tag: the random part alone: {jid}");
    assert!(success.find("token", "urn:xmpp:fast:0").is_none(), "a token in the first half of its life is not renewed unasked");
    assert_eq!(success.find("bound", "urn:xmpp:bind:0").unwrap().to_xml("jabber:client"), "<bound xmlns=\"urn:xmpp:bind:0\"/>");

    // The token is its client's, for its mechanism, and goes when asked.
    for (mechanism, agent, condition) in [("HT-SHA-256-NONE", "another-client", "not-authorized"), ("PLAIN", AGENT, "malformed-request")] {
        let (mut other, _) = open(server.xmpp.unwrap()).await;
        other.send(&authenticate(mechanism, &proof, agent, "<fast xmlns='urn:xmpp:fast:0'/>")).await;
        let failure = other.stanza().await;
        let expected = format!("<failure xmlns=\"urn:xmpp:sasl:2\"><{condition} xmlns=\"urn:ietf:params:xml:ns:xmpp-sasl\"/></failure>");
        assert_eq!(failure.to_xml("jabber:client"), expected, "{mechanism} from {agent}");
    }
    let (mut last, _) = open(server.xmpp.unwrap()).await;
    last.send(&authenticate("HT-SHA-256-NONE", &proof, AGENT, "<fast xmlns='urn:xmpp:fast:0' invalidate='true'/>")).await;
    let success = last.stanza().await;
    assert_eq!(success.name, "success");
    assert_eq!(success.find("authorization-identifier", "urn:xmpp:sasl:2").unwrap().text_content(), "fay@localhost", "bare: nothing bound");
    // Not bound inline: the features say to bind the old way.
    assert!(last.stanza().await.find("bind", "urn:ietf:params:xml:ns:xmpp-bind").is_some());
    let (mut after, _) = open(server.xmpp.unwrap()).await;
    after.send(&authenticate("HT-SHA-256-NONE", &proof, AGENT, "<fast xmlns='urn:xmpp:fast:0'/>")).await;
    assert!(after.stanza().await.find("not-authorized", "urn:ietf:params:xml:ns:xmpp-sasl").is_some(), "invalidated");
}

#[tokio::test]
async fn a_session_resumes_inside_the_sasl2_success_with_what_was_not_acknowledged() {
    let server = with_accounts(&["gus", "hal"]).await;
    let addr = server.xmpp.unwrap();
    let (mut c, _) = open(addr).await;
    c.send(&authenticate("PLAIN", b"\0gus\0pw", AGENT, BIND_WITH_SM)).await;
    let success = c.stanza().await;
    let jid = success.find("authorization-identifier", "urn:xmpp:sasl:2").unwrap().text_content();
    let previd = success.find("bound", "urn:xmpp:bind:0").unwrap().find("enabled", "urn:xmpp:sm:3").unwrap().get("id").unwrap().to_owned();
    c.stanza().await; // the features

    let mut hal = crate::xmpp::bound_account(addr, "hal", "desk").await;
    for body in ["one", "two"] {
        hal.send(&format!("<message to='{jid}' type='chat'><body>{body}</body></message>")).await;
        assert_eq!(c.stanza().await.find("body", "jabber:client").unwrap().text_content(), body);
    }
    // gus acknowledges "one" only; its connection breaks.
    c.send("<a xmlns='urn:xmpp:sm:3' h='1'/>").await;
    drop(c);

    // The header and the login in one flight, as a client that knows the server sends them.
    let mut back = Client::connect(addr).await;
    let resume = format!("<resume xmlns='urn:xmpp:sm:3' previd='{previd}' h='1'/>{BIND_WITH_SM}");
    back.send(&format!("{HEADER}{}", authenticate("PLAIN", b"\0gus\0pw", AGENT, &resume))).await;
    assert!(matches!(back.event().await, Some(StreamEvent::Open { .. })), "the stream's header first");
    assert_eq!(back.stanza().await.name, "features");
    let success = back.stanza().await;
    assert_eq!(
        shown(&success, &[(&previd, "SM")]),
        format!(
            "<success xmlns=\"urn:xmpp:sasl:2\"><authorization-identifier>{jid}</authorization-identifier>\
             <resumed xmlns=\"urn:xmpp:sm:3\" previd=\"SM\" h=\"0\"/></success>"
        ),
        "the same resource, nothing bound"
    );
    // "two" again, then no features: the stream is where it was.
    assert_eq!(back.stanza().await.find("body", "jabber:client").unwrap().text_content(), "two");
    hal.send(&format!("<message to='{jid}' type='chat'><body>three</body></message>")).await;
    assert_eq!(back.stanza().await.find("body", "jabber:client").unwrap().text_content(), "three");
    let (_, metrics) = server.get("/metrics").await;
    assert!(metrics.contains("switchboard_xmpp_resumptions_total 1\n"), "{metrics}");

    // A session that is gone: <failed/>, and the bind goes ahead.
    let (mut late, _) = open(addr).await;
    let resume = format!("<resume xmlns='urn:xmpp:sm:3' previd='gone' h='1'/>{BIND_WITH_SM}");
    late.send(&authenticate("PLAIN", b"\0gus\0pw", AGENT, &resume)).await;
    let success = late.stanza().await;
    let names: Vec<&str> = success.elements().map(|e| e.name.as_str()).collect();
    assert_eq!(names, ["authorization-identifier", "failed", "bound"]);
    assert!(success.find("failed", "urn:xmpp:sm:3").unwrap().find("item-not-found", "urn:ietf:params:xml:ns:xmpp-stanzas").is_some());
}

#[tokio::test]
async fn sasl2_needs_tls_fails_as_sasl_does_and_takes_no_second_authenticate() {
    // Without TLS, and PLAIN not allowed in the clear: not offered, and refused.
    let config = server::Config { xmpp_accounts: vec![server::AccountEntry::new("ida", "pw")], ..server::Config::default() };
    let server = TestServer::with_xmpp(config).await;
    let (mut c, features) = open(server.xmpp.unwrap()).await;
    assert!(features.find("authentication", "urn:xmpp:sasl:2").is_none());
    c.send(&authenticate("SCRAM-SHA-256", b"n,,n=ida,r=abc", AGENT, "")).await;
    assert_eq!(
        c.stanza().await.to_xml("jabber:client"),
        "<failure xmlns=\"urn:xmpp:sasl:2\"><encryption-required xmlns=\"urn:ietf:params:xml:ns:xmpp-sasl\"/></failure>"
    );

    let server = with_accounts(&["ida"]).await;
    let (mut c, _) = open(server.xmpp.unwrap()).await;
    c.send(&authenticate("PLAIN", b"\0ida\0wrong", AGENT, BIND_WITH_SM)).await;
    assert!(c.stanza().await.find("not-authorized", "urn:ietf:params:xml:ns:xmpp-sasl").is_some());
    c.send(&authenticate("DIGEST-MD5", b"", AGENT, "")).await;
    assert!(c.stanza().await.find("invalid-mechanism", "urn:ietf:params:xml:ns:xmpp-sasl").is_some());
    // A SCRAM exchange in progress takes a response or an abort, not another start.
    c.send(&authenticate("SCRAM-SHA-256", b"n,,n=ida,r=abc", AGENT, "")).await;
    let challenge = c.stanza().await;
    assert_eq!(challenge.name, "challenge");
    assert!(String::from_utf8(STANDARD.decode(challenge.text_content()).unwrap()).unwrap().starts_with("r=abc"));
    c.send(&authenticate("PLAIN", b"\0ida\0pw", AGENT, "")).await;
    assert_eq!(c.stream_error().await, "policy-violation");
    let (_, metrics) = server.get("/metrics").await;
    assert!(metrics.contains("switchboard_refused_total{app=\"xmpp\",reason=\"sasl\"} 2\n"), "{metrics}");
}

/// A server keeping its store in `dir` (SQLite), with `account` from the
/// configuration file.
fn kept_with(dir: &std::path::Path, account: &server::AccountEntry) -> server::Config {
    let mut config = server::Config { xmpp_accounts: vec![account.clone()], ..server::Config::default() };
    config.store.data_dir = dir.to_owned();
    config.xmpp.plain_unencrypted = true;
    config
}

#[tokio::test]
async fn a_token_outlives_a_restart_but_not_a_new_password() {
    let dir = tempfile::tempdir().unwrap();
    let fay = server::AccountEntry::new("fay", "pw");
    let first = TestServer::with_xmpp_kept(kept_with(dir.path(), &fay)).await;
    let (mut c, _) = open(first.xmpp.unwrap()).await;
    c.send(&authenticate("PLAIN", b"\0fay\0pw", AGENT, ASK_TOKEN)).await;
    let success = c.stanza().await;
    let secret = success.find("token", "urn:xmpp:fast:0").unwrap().get("token").unwrap().to_owned();
    drop(c);
    first.shutdown().await.unwrap().unwrap();
    let proof = [&b"fay\0"[..], &hmac(&secret, b"Initiator")].concat();

    // Kept in the store: it works after a restart.
    let second = TestServer::with_xmpp_kept(kept_with(dir.path(), &fay)).await;
    let (mut again, _) = open(second.xmpp.unwrap()).await;
    again.send(&authenticate("HT-SHA-256-NONE", &proof, AGENT, "<fast xmlns='urn:xmpp:fast:0'/>")).await;
    assert_eq!(again.stanza().await.name, "success");
    drop(again);
    second.shutdown().await.unwrap().unwrap();

    // The configuration file gives fay a new password (no store call says so):
    // the token was given under the old keys, and works no more.
    let third = TestServer::with_xmpp_kept(kept_with(dir.path(), &server::AccountEntry::new("fay", "new"))).await;
    let (mut after, _) = open(third.xmpp.unwrap()).await;
    after.send(&authenticate("HT-SHA-256-NONE", &proof, AGENT, "<fast xmlns='urn:xmpp:fast:0'/>")).await;
    assert_eq!(
        after.stanza().await.to_xml("jabber:client"),
        "<failure xmlns=\"urn:xmpp:sasl:2\"><credentials-expired xmlns=\"urn:ietf:params:xml:ns:xmpp-sasl\"/></failure>"
    );
}

/// The client's side of a socket, keeping a copy of every byte written.
struct Recorded {
    tcp: tokio::net::TcpStream,
    sent: std::sync::Arc<std::sync::Mutex<Vec<u8>>>,
}

impl tokio::io::AsyncRead for Recorded {
    fn poll_read(mut self: std::pin::Pin<&mut Self>, cx: &mut std::task::Context<'_>, buf: &mut tokio::io::ReadBuf<'_>) -> std::task::Poll<std::io::Result<()>> {
        std::pin::Pin::new(&mut self.tcp).poll_read(cx, buf)
    }
}

impl tokio::io::AsyncWrite for Recorded {
    fn poll_write(mut self: std::pin::Pin<&mut Self>, cx: &mut std::task::Context<'_>, data: &[u8]) -> std::task::Poll<std::io::Result<usize>> {
        let polled = std::pin::Pin::new(&mut self.tcp).poll_write(cx, data);
        if let std::task::Poll::Ready(Ok(n)) = &polled {
            self.sent.lock().unwrap().extend_from_slice(&data[..*n]);
        }
        polled
    }
    fn poll_flush(mut self: std::pin::Pin<&mut Self>, cx: &mut std::task::Context<'_>) -> std::task::Poll<std::io::Result<()>> {
        std::pin::Pin::new(&mut self.tcp).poll_flush(cx)
    }
    fn poll_shutdown(mut self: std::pin::Pin<&mut Self>, cx: &mut std::task::Context<'_>) -> std::task::Poll<std::io::Result<()>> {
        std::pin::Pin::new(&mut self.tcp).poll_shutdown(cx)
    }
}

/// A client's TLS over a socket that records what it sends.
type EarlyTls = tokio_rustls::client::TlsStream<Recorded>;

/// Sends `flight` with a resumed TLS session's ClientHello, as early data:
/// what the server answers after its features (a SASL2 success or
/// failure), the stream to go on with, and every byte the client sent.
async fn early_flight(connector: &tokio_rustls::TlsConnector, direct: std::net::SocketAddr, flight: &str) -> (Element, EarlyTls, Vec<u8>) {
    use tokio::io::AsyncWriteExt;
    let sent = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let tcp = tokio::net::TcpStream::connect(direct).await.unwrap();
    let name = rustls::pki_types::ServerName::try_from("localhost").unwrap();
    let mut tls = connector.connect(name, Recorded { tcp, sent: sent.clone() }).await.unwrap();
    assert!(tls.get_ref().1.is_handshaking(), "the client writes before its handshake ends");
    tls.write_all(flight.as_bytes()).await.unwrap();
    tls.flush().await.unwrap();
    let first_flight = sent.lock().unwrap().clone();
    let mut parser = wire::xmpp::StreamParser::new(wire::xmpp::Limits::default());
    assert!(matches!(crate::xmpp::next_on(&mut tls, &mut parser).await, StreamEvent::Open { .. }));
    let StreamEvent::Stanza(features) = crate::xmpp::next_on(&mut tls, &mut parser).await else { panic!("features") };
    let fast = features.find("authentication", "urn:xmpp:sasl:2").and_then(|a| a.find("inline", "urn:xmpp:sasl:2")).and_then(|i| i.find("fast", "urn:xmpp:fast:0"));
    assert_eq!(fast.and_then(|f| f.get("tls-0rtt")), Some("true"), "over TLS a FAST login may come in early data");
    let StreamEvent::Stanza(answer) = crate::xmpp::next_on(&mut tls, &mut parser).await else { panic!("an answer") };
    assert!(tls.get_ref().1.is_early_data_accepted(), "the login went as early data, and was taken");
    (answer, tls, first_flight)
}

/// Ends the client's stream and reads to the server's close: the TLS ticket
/// for the client's next connection comes before it.
async fn finish<S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin>(tls: &mut S) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    tls.write_all(b"</stream:stream>").await.unwrap();
    let mut rest = Vec::new();
    let _ = tls.read_to_end(&mut rest).await;
}

#[tokio::test]
async fn a_fast_login_in_tls_early_data_is_answered_before_the_handshake_ends_and_its_replay_logs_nobody_in() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use wire::xmpp::{Limits, StreamParser};

    let cert = rcgen::generate_simple_self_signed(vec!["localhost".to_owned()]).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let files = server::TlsFiles { cert: dir.path().join("cert.pem"), key: dir.path().join("key.pem") };
    std::fs::write(&files.cert, cert.cert.pem()).unwrap();
    std::fs::write(&files.key, cert.signing_key.serialize_pem()).unwrap();
    let accounts = vec![server::AccountEntry::new("fay", "pw"), server::AccountEntry::new("gus", "pw")];
    let mut config = server::Config { tls: Some(files), xmpp_accounts: accounts, ..server::Config::default() };
    // gus logs in on the plain port.
    config.xmpp.plain_unencrypted = true;
    let server = TestServer::with_xmpp(config).await;
    let direct = server.xmpp_tls.unwrap();
    let mut gus = crate::xmpp::bound_account(server.xmpp.unwrap(), "gus", "desk").await;

    // One client's TLS settings across its connections: its sessions to resume.
    let mut roots = rustls::RootCertStore::empty();
    roots.add(cert.cert.der().clone()).unwrap();
    let mut config = rustls::ClientConfig::builder_with_provider(std::sync::Arc::new(rustls::crypto::ring::default_provider()))
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    config.enable_early_data = true;
    let connector = tokio_rustls::TlsConnector::from(std::sync::Arc::new(config)).early_data(true);
    let name = rustls::pki_types::ServerName::try_from("localhost").unwrap();

    // A first login, with a password, asks for a token; the client reads to
    // the stream's end, the TLS ticket for its next connection with it.
    let tcp = tokio::net::TcpStream::connect(direct).await.unwrap();
    let mut tls = connector.connect(name.clone(), tcp).await.unwrap();
    let mut parser = StreamParser::new(Limits::default());
    tls.write_all(format!("{HEADER}{}", authenticate("PLAIN", b"\0fay\0pw", AGENT, ASK_TOKEN)).as_bytes()).await.unwrap();
    assert!(matches!(crate::xmpp::next_on(&mut tls, &mut parser).await, StreamEvent::Open { .. }));
    let StreamEvent::Stanza(features) = crate::xmpp::next_on(&mut tls, &mut parser).await else { panic!("features") };
    assert_eq!(features.name, "features");
    let StreamEvent::Stanza(success) = crate::xmpp::next_on(&mut tls, &mut parser).await else { panic!("success") };
    assert_eq!(success.name, "success", "{}", success.to_xml("jabber:client"));
    assert!(!tls.get_ref().1.is_early_data_accepted(), "nothing to resume on a first connection");
    let token = success.find("token", "urn:xmpp:fast:0").unwrap().get("token").unwrap().to_owned();
    finish(&mut tls).await;

    // Early data may be a replay: a password's login in it is refused
    // (XEP-0388 §4), and so is a FAST login without its count (XEP-0484 §4).
    let refused = "<failure xmlns=\"urn:xmpp:sasl:2\"><not-authorized xmlns=\"urn:ietf:params:xml:ns:xmpp-sasl\"/></failure>";
    let proof = [&b"fay\0"[..], &hmac(&token, b"Initiator")].concat();
    let fast = |count: &str| authenticate("HT-SHA-256-NONE", &proof, AGENT, &format!("<bind xmlns='urn:xmpp:bind:0'/><fast xmlns='urn:xmpp:fast:0'{count}/>"));
    for login in [authenticate("PLAIN", b"\0fay\0pw", AGENT, ""), fast(""), fast(" count='0'")] {
        let (answer, mut tls, _) = early_flight(&connector, direct, &format!("{HEADER}{login}")).await;
        assert_eq!(answer.to_xml("jabber:client"), refused, "{login}");
        finish(&mut tls).await;
    }

    // With its count, everything goes with the ClientHello: the header, the
    // FAST login, a presence and a message to gus, answered in that flight.
    let flight = format!("{HEADER}{}<presence/><message to='gus@localhost/desk' type='chat' id='m1'><body>once</body></message>", fast(" count='1'"));
    let (success, mut tls, first_flight) = early_flight(&connector, direct, &flight).await;
    assert_eq!(success.name, "success", "{}", success.to_xml("jabber:client"));
    assert_eq!(STANDARD.decode(success.find("additional-data", "urn:xmpp:sasl:2").unwrap().text_content()).unwrap(), hmac(&token, b"Responder"));
    let message = gus.stanza().await;
    assert_eq!((message.name.as_str(), message.find("body", "jabber:client").map(Element::text_content)), ("message", Some("once".to_owned())));

    // The same bytes sent again resume nothing (the ticket served once): the
    // early data is skipped unread, and the handshake, which a replaying
    // client cannot finish, ends at its close.
    let mut replay = tokio::net::TcpStream::connect(direct).await.unwrap();
    replay.write_all(&first_flight).await.unwrap();
    replay.shutdown().await.unwrap();
    let mut answer = Vec::new();
    replay.read_to_end(&mut answer).await.unwrap();
    // So the next message gus has is the one sent after, not the login's again.
    tls.write_all(b"<message to='gus@localhost/desk' type='chat' id='m2'><body>after</body></message>").await.unwrap();
    let next = gus.stanza().await;
    assert_eq!(next.find("body", "jabber:client").map(Element::text_content), Some("after".to_owned()));
    finish(&mut tls).await;

    // A login with a count already taken, in early data TLS did take, is
    // refused too; a higher one logs in.
    let (answer, mut tls, _) = early_flight(&connector, direct, &format!("{HEADER}{}", fast(" count='1'"))).await;
    assert_eq!(answer.to_xml("jabber:client"), refused, "a count taken");
    finish(&mut tls).await;
    let (answer, _tls, _) = early_flight(&connector, direct, &format!("{HEADER}{}", fast(" count='2'"))).await;
    assert_eq!(answer.name, "success", "{}", answer.to_xml("jabber:client"));
}
