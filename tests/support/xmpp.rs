//! An XMPP client on a raw socket for the binary's tests, reading with the
//! server's own parser; accounts log in with SASL PLAIN and the password
//! `pw` (the server runs with `--xmpp-plain-unencrypted true`).

#![allow(dead_code)]

use std::net::SocketAddr;
use std::time::Duration;

use base64::Engine;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use wire::xmpp::{Element, Limits, StreamEvent, StreamParser};

const HEADER: &str = "<stream:stream to='localhost' version='1.0' xmlns='jabber:client' xmlns:stream='http://etherx.jabber.org/streams'>";

pub struct Client {
    pub stream: TcpStream,
    pub parser: StreamParser,
    /// The full JID bound, once logged in.
    pub jid: String,
}

impl Client {
    pub async fn open(addr: SocketAddr) -> Client {
        let mut c = Client { stream: TcpStream::connect(addr).await.unwrap(), parser: StreamParser::new(Limits::default()), jid: String::new() };
        c.restart().await;
        c
    }

    pub async fn restart(&mut self) {
        self.parser.restart();
        self.stream.write_all(HEADER.as_bytes()).await.unwrap();
        assert!(matches!(self.event().await, StreamEvent::Open { .. }));
        assert_eq!(self.stanza().await.name, "features");
    }

    pub async fn event(&mut self) -> StreamEvent {
        loop {
            if let Some(event) = self.parser.next_event().unwrap() {
                return event;
            }
            let mut buf = [0u8; 4096];
            let n = tokio::time::timeout(Duration::from_secs(10), self.stream.read(&mut buf)).await.expect("an answer in time").unwrap();
            assert!(n > 0, "the server closed the stream");
            self.parser.feed(&buf[..n]);
        }
    }

    pub async fn stanza(&mut self) -> Element {
        match self.event().await {
            StreamEvent::Stanza(e) => e,
            other => panic!("expected a stanza, got {other:?}"),
        }
    }

    pub async fn send(&mut self, xml: &str) {
        self.stream.write_all(xml.as_bytes()).await.unwrap();
    }

    /// Skips stanzas until one `wanted` takes, which it returns.
    pub async fn until(&mut self, wanted: impl Fn(&Element) -> bool) -> Element {
        loop {
            let stanza = self.stanza().await;
            if wanted(&stanza) {
                return stanza;
            }
        }
    }

    /// The stanzas up to the one whose id is `id`, which it returns after them.
    pub async fn until_answer(&mut self, id: &str) -> (Vec<Element>, Element) {
        let mut before = Vec::new();
        loop {
            let stanza = self.stanza().await;
            if stanza.get("id") == Some(id) {
                return (before, stanza);
            }
            before.push(stanza);
        }
    }

    /// Sends `xml` and returns the answer whose id is `id`.
    pub async fn ask(&mut self, xml: &str, id: &str) -> Element {
        self.send(xml).await;
        self.until(|stanza| stanza.get("id") == Some(id)).await
    }

    /// Logs `name` in and binds a resource the server names.
    pub async fn login(addr: SocketAddr, name: &str) -> Client {
        let mut c = Client::open(addr).await;
        let plain = base64::engine::general_purpose::STANDARD.encode(format!("\0{name}\0pw"));
        c.send(&format!("<auth xmlns='urn:ietf:params:xml:ns:xmpp-sasl' mechanism='PLAIN'>{plain}</auth>")).await;
        assert_eq!(c.stanza().await.name, "success", "{name} logs in");
        c.restart().await;
        let bound = c.ask("<iq type='set' id='b'><bind xmlns='urn:ietf:params:xml:ns:xmpp-bind'/></iq>", "b").await;
        assert_eq!(bound.get("type"), Some("result"));
        let bind = bound.elements().next().expect("the bind");
        c.jid = bind.elements().next().expect("the jid").text_content();
        c
    }
}
