//! XMPP client transports: XMPP over TCP (RFC 6120), over WebSocket (RFC 7395), over
//! SockJS (each SockJS message one RFC 7395 element, as over WebSocket), and over BOSH
//! (XEP-0124/0206, `bosh`: stanzas in `<body/>`s across HTTP requests). Whatever
//! carries it, a client logs in the same way: it opens the stream, authenticates with
//! SASL ANONYMOUS or PLAIN, restarts the stream and binds a resource; `Login` keeps
//! how long each phase took. The server's stream is read with the shared codec
//! (`wire::xmpp`), the one the server itself reads its clients with.
//!
//! As a `Connection`, an XMPP session carries application messages as message bodies:
//! `send` sends one to the address `Sender::address` set (a MUC room), and `recv`
//! yields the body of each message that comes, passing over every other stanza. Pings
//! and room joins speak stanzas: `Sender::send_stanza` and `Receiver::stanza`.

use std::time::Instant;

use base64::Engine;
use serde::{Deserialize, Serialize};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use wire::xmpp::{CLOSE, Element, Header, Limits, STREAM_END, StreamEvent, StreamParser, escape_into, ns};

use super::{Text, TransportKind};
use crate::flags::{XmppAuth, XmppSettings};
use crate::{Error, Target};

/// Bytes read from a TCP stream per read call; on the stack, so an idle session holds none.
const READ_CHUNK: usize = 4096;

/// How long each phase of a login took, in µs. Together they are the connection's
/// connect time: until the session can send stanzas.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Login {
    /// TCP connect, and the WebSocket upgrade or the SockJS session's open frame (BOSH:
    /// the first connection's TCP connect).
    pub transport_us: u64,
    /// From the stream header (or `<open/>`, or BOSH's session creation) to the server's
    /// stream features.
    pub stream_us: u64,
    /// From SASL `<auth/>` to `<success/>`.
    pub sasl_us: u64,
    /// From the restarted stream's header to its features.
    pub restart_us: u64,
    /// From the bind request to its result (and the session request, where a server
    /// still requires RFC 3921's).
    pub bind_us: u64,
}

/// How the two ends of a stream are framed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Framing {
    /// One XML stream (TCP): stream headers, stanzas in its `jabber:client` namespace.
    Stream,
    /// One element per message (RFC 7395), each declaring its own namespace.
    Messages,
    /// Stanzas in BOSH bodies, each declaring its namespace: the session's creation opens
    /// the stream, `xmpp:restart` restarts it and `type='terminate'` ends it.
    Bosh,
}

/// Where a session's bytes go: a TCP stream, or a WebSocket or SockJS connection that
/// carries one element per message.
enum Out {
    Tcp(OwnedWriteHalf),
    Websocket(super::websocket::Sender),
    Sockjs(super::sockjs::Sender),
    Bosh(super::bosh::Sender),
}

/// Where the server's bytes come from.
enum In {
    Tcp(OwnedReadHalf),
    Websocket(super::websocket::Receiver),
    Sockjs(super::sockjs::Receiver),
    Bosh(super::bosh::Receiver),
}

/// The halves of a WebSocket or SockJS connection, as an XMPP session's.
fn carried(conn: super::Connection) -> Result<(Out, In), Error> {
    match (conn.sender, conn.receiver) {
        (super::Sender::Websocket(tx), super::Receiver::Websocket(rx)) => Ok((Out::Websocket(tx), In::Websocket(rx))),
        (super::Sender::Sockjs(tx), super::Receiver::Sockjs(rx)) => Ok((Out::Sockjs(tx), In::Sockjs(rx))),
        _ => Err(Error::usage("XMPP rides on TCP, WebSocket or SockJS only")),
    }
}

/// The sending half of a logged-in session.
pub struct Sender {
    out: Out,
    framing: Framing,
    /// Where the session is, for messages: the URL or `xmpp://host:port`.
    place: String,
    /// `<message … to='…' type='…'><body>`, set by `address`.
    message_head: Option<String>,
    buf: String,
    login: Login,
}

/// The receiving half.
pub struct Receiver {
    input: In,
    parser: StreamParser,
    framing: Framing,
    place: String,
}

/// What the server's side of the stream carried next.
enum Event {
    /// Its stream header, or `<open/>`.
    Header,
    Stanza(Element),
    /// `</stream:stream>`, `<close/>`, or the connection's end.
    End,
}

/// Opens a session of `kind` to `target` and logs in as client `index`.
pub(super) async fn connect(target: &Target, kind: TransportKind, who: &XmppSettings, index: u32) -> Result<super::Connection, Error> {
    let started = Instant::now();
    let endpoints = target.xmpp()?;
    let (out, input, framing, place) = match kind {
        TransportKind::XmppTcp => {
            let place = format!("xmpp://{}", target.xmpp_authority());
            let tcp = target.dial_xmpp().await.map_err(|e| Error::connect(format!("{place}: {e}")))?;
            let (read, write) = tcp.into_split();
            (Out::Tcp(write), In::Tcp(read), Framing::Stream, place)
        }
        TransportKind::XmppWebsocket => {
            let url = target.at_path(&endpoints.websocket_path).ws_url("");
            let (out, input) = carried(super::websocket::connect(target, &url, super::Framing::Native, Some("xmpp")).await?)?;
            (out, input, Framing::Messages, url)
        }
        TransportKind::Bosh => {
            let (tx, rx) = super::bosh::connect(target, &endpoints.bosh_path, &who.domain, who.bosh_wait_s).await?;
            let place = format!("http://{}{}", target.authority(), endpoints.bosh_path);
            (Out::Bosh(tx), In::Bosh(rx), Framing::Bosh, place)
        }
        other => {
            let carrier = other.sockjs_carrier().ok_or_else(|| Error::usage(format!("{other} is not an XMPP transport")))?;
            let mount = target.at_path(&endpoints.sockjs_path);
            let (out, input) = carried(super::sockjs_connect(&mount, carrier).await?)?;
            let place = format!("http://{}{} (SockJS {carrier})", target.authority(), endpoints.sockjs_path);
            (out, input, Framing::Messages, place)
        }
    };
    let login = Login { transport_us: started.elapsed().as_micros() as u64, ..Login::default() };
    let mut tx = Sender { out, framing, place: place.clone(), message_head: None, buf: String::new(), login };
    let mut rx = Receiver { input, parser: parser(framing), framing, place };
    log_in(&mut tx, &mut rx, who, index).await?;
    Ok(super::Connection { sender: super::Sender::Xmpp(Box::new(tx)), receiver: super::Receiver::Xmpp(Box::new(rx)) })
}

fn parser(framing: Framing) -> StreamParser {
    match framing {
        Framing::Stream => StreamParser::new(Limits::default()),
        // BOSH's carrier parses its bodies itself; this one reads nothing.
        Framing::Messages | Framing::Bosh => StreamParser::fragments(Limits::default()),
    }
}

/// Microseconds since `*since`, which moves on to now.
fn lap(since: &mut Instant) -> u64 {
    let now = Instant::now();
    let us = now.duration_since(*since).as_micros() as u64;
    *since = now;
    us
}

/// Stream, SASL, restart, bind: until the session can send stanzas.
async fn log_in(tx: &mut Sender, rx: &mut Receiver, who: &XmppSettings, index: u32) -> Result<(), Error> {
    let mut phase = Instant::now();
    let features = open_stream(tx, rx, &who.domain, false).await?;
    tx.login.stream_us = lap(&mut phase);
    authenticate(tx, rx, &features, &who.auth, index).await?;
    tx.login.sasl_us = lap(&mut phase);
    if rx.framing == Framing::Stream {
        rx.parser.restart();
    }
    let features = open_stream(tx, rx, &who.domain, true).await?;
    tx.login.restart_us = lap(&mut phase);
    if features.find("bind", ns::BIND).is_none() {
        let offered = crate::scenario::excerpt(&features.to_xml_standalone());
        return Err(Error::unexpected(format!("{}: the server offers no resource binding after SASL: {offered}", tx.place)));
    }
    tx.send_stanza(&iq("set", "bind", Element::new("bind", ns::BIND))).await?;
    rx.result("bind", "resource binding").await?;
    // RFC 3921's session request, for servers that still require it (RFC 6121 made it optional).
    if let Some(session) = features.find("session", ns::SESSION)
        && session.find("optional", ns::SESSION).is_none()
    {
        tx.send_stanza(&iq("set", "session", Element::new("session", ns::SESSION))).await?;
        rx.result("session", "session establishment").await?;
    }
    tx.login.bind_us = lap(&mut phase);
    Ok(())
}

/// An iq of `kind` with `id` and one child.
pub fn iq(kind: &str, id: &str, child: Element) -> Element {
    Element::new("iq", ns::CLIENT).attr("type", kind).attr("id", id).child(child)
}

/// The answer to a server's XEP-0199 ping, if `stanza` is one.
pub fn pong(stanza: &Element) -> Option<Element> {
    if stanza.name != "iq" || stanza.get("type") != Some("get") || stanza.find("ping", ns::PING).is_none() {
        return None;
    }
    let pong = Element::new("iq", ns::CLIENT).attr("type", "result").attr("id", stanza.get("id")?);
    Some(match stanza.get("from") {
        Some(from) => pong.attr("to", from),
        None => pong,
    })
}

/// Opens (or restarts) the client's side of the stream and reads the server's header
/// and stream features. Over BOSH the session's creation has opened it, a restart is a
/// request that says so, and the server sends no header.
async fn open_stream(tx: &mut Sender, rx: &mut Receiver, domain: &str, restart: bool) -> Result<Element, Error> {
    let header = Header { to: Some(domain), ..Header::default() };
    let open = match tx.framing {
        Framing::Stream => Some(header.stream()),
        Framing::Messages => Some(header.open()),
        Framing::Bosh => None,
    };
    match (open, &mut tx.out) {
        (Some(open), _) => {
            tx.out.write(&open, &tx.place).await?;
            match rx.event().await? {
                Event::Header => {}
                Event::Stanza(e) => return Err(Error::unexpected(format!("{}: expected the server's stream header, got <{}/>", rx.place, e.name))),
                Event::End => return Err(Error::closed(format!("{}: the server ended the stream at once", rx.place))),
            }
        }
        (None, Out::Bosh(bosh)) if restart => bosh.restart().await?,
        (None, _) => {}
    }
    match rx.event().await? {
        Event::Stanza(e) if e.name == "features" && e.ns == ns::STREAMS => Ok(e),
        Event::Stanza(e) => Err(Error::unexpected(format!("{}: expected stream features, got <{}/>", rx.place, e.name))),
        Event::Header | Event::End => Err(Error::closed(format!("{}: the stream ended before its features", rx.place))),
    }
}

/// SASL ANONYMOUS or PLAIN, whichever `auth` asks for, if the server offers it.
async fn authenticate(tx: &mut Sender, rx: &mut Receiver, features: &Element, auth: &XmppAuth, index: u32) -> Result<(), Error> {
    let offered: Vec<String> = features
        .find("mechanisms", ns::SASL)
        .map(|m| m.elements().filter(|e| e.name == "mechanism").map(Element::text_content).collect())
        .unwrap_or_default();
    let (mechanism, response, who, hint) = match auth {
        XmppAuth::Anonymous => ("ANONYMOUS", None, "anonymously".to_string(), "; log in to an account with --xmpp-user and --xmpp-password"),
        XmppAuth::Plain { password, .. } => {
            let user = auth.user(index).unwrap_or_default();
            let response = base64::engine::general_purpose::STANDARD.encode(format!("\0{user}\0{password}"));
            let hint = "; switchboard serve offers PLAIN without TLS only with --xmpp-plain-unencrypted true";
            ("PLAIN", Some(response), format!("as {user}"), hint)
        }
    };
    if !offered.iter().any(|m| m == mechanism) {
        return Err(Error::refused(format!(
            "{}: the server does not offer SASL {mechanism} (it offers {}){hint}",
            tx.place,
            if offered.is_empty() { "none".to_string() } else { offered.join(", ") }
        )));
    }
    let mut request = Element::new("auth", ns::SASL).attr("mechanism", mechanism);
    if let Some(response) = &response {
        request = request.text(response);
    }
    tx.send_stanza(&request).await?;
    loop {
        let Some(answer) = rx.stanza().await? else {
            return Err(Error::closed(format!("{}: the stream ended during SASL {mechanism} {who}", rx.place)));
        };
        match (answer.name.as_str(), answer.ns == ns::SASL) {
            (_, false) => continue,
            ("success", true) => return Ok(()),
            // ANONYMOUS sent no initial response; its trace is empty.
            ("challenge", true) if response.is_none() => tx.send_stanza(&Element::new("response", ns::SASL)).await?,
            ("failure", true) => {
                let condition = answer.elements().find(|e| e.name != "text").map_or("no condition", |e| e.name.as_str());
                let text = answer.find("text", ns::SASL).map(|t| format!(" ({:?})", t.text_content())).unwrap_or_default();
                let hint = if mechanism == "PLAIN" { ": wrong --xmpp-password, or no such account?" } else { "" };
                return Err(Error::refused(format!("{}: SASL {mechanism} {who} failed with {condition}{text}{hint}", rx.place)));
            }
            (other, true) => return Err(Error::unexpected(format!("{}: SASL {mechanism} answered <{other}/>", rx.place))),
        }
    }
}

impl Out {
    async fn write(&mut self, text: &str, place: &str) -> Result<(), Error> {
        match self {
            Out::Tcp(tcp) => tcp.write_all(text.as_bytes()).await.map_err(|e| Error::closed(format!("{place}: send failed: {e}"))),
            Out::Websocket(ws) => ws.send(text).await,
            Out::Sockjs(sockjs) => sockjs.send(text).await,
            Out::Bosh(bosh) => bosh.send(text).await,
        }
    }

    /// Closes the connection (best effort).
    async fn close(&mut self) {
        match self {
            Out::Tcp(tcp) => {
                let _ = tcp.shutdown().await;
            }
            Out::Websocket(ws) => ws.close().await,
            // The SockJS session ends with its receiving half.
            Out::Sockjs(_) => {}
            Out::Bosh(bosh) => bosh.terminate().await,
        }
    }
}

impl Sender {
    /// Application messages go to `to` as messages of `kind` (`groupchat` for a room).
    pub fn address(&mut self, to: &str, kind: &str) {
        self.message_head = Some(message_head(self.framing, to, kind));
    }

    /// Sends one application message as the body of a message to the address.
    pub async fn send(&mut self, text: &str) -> Result<(), Error> {
        let Some(head) = &self.message_head else {
            return Err(Error::usage(format!("{}: an XMPP session carries messages only once it has an address (a room)", self.place)));
        };
        self.buf.clear();
        self.buf.push_str(head);
        escape_into(text, &mut self.buf);
        self.buf.push_str("</body></message>");
        self.out.write(&self.buf, &self.place).await
    }

    /// Sends one stanza, framed for the transport.
    pub async fn send_stanza(&mut self, stanza: &Element) -> Result<(), Error> {
        let text = match self.framing {
            Framing::Stream => stanza.to_xml(ns::CLIENT),
            Framing::Messages | Framing::Bosh => stanza.to_xml_standalone(),
        };
        self.out.write(&text, &self.place).await
    }

    /// Ends the stream and closes the connection (best effort).
    pub async fn close(&mut self) {
        let end = match self.framing {
            Framing::Stream => Some(STREAM_END),
            Framing::Messages => Some(CLOSE),
            // Its terminating request ends both.
            Framing::Bosh => None,
        };
        if let Some(end) = end {
            let _ = self.out.write(end, &self.place).await;
        }
        self.out.close().await;
    }

    pub fn login(&self) -> Login {
        self.login
    }
}

impl Receiver {
    async fn event(&mut self) -> Result<Event, Error> {
        loop {
            let next = match &mut self.input {
                In::Bosh(bosh) => Ok(Some(bosh.recv().await?.map_or(StreamEvent::Close, StreamEvent::Stanza))),
                _ => self.parser.next_event(),
            };
            match next {
                Ok(Some(StreamEvent::Open { .. })) => return Ok(Event::Header),
                Ok(Some(StreamEvent::Close)) => return Ok(Event::End),
                Ok(Some(StreamEvent::Stanza(e))) if e.ns == ns::FRAMING && e.name == "open" => return Ok(Event::Header),
                Ok(Some(StreamEvent::Stanza(e))) if e.ns == ns::FRAMING && e.name == "close" => return Ok(Event::End),
                Ok(Some(StreamEvent::Stanza(e))) if e.ns == ns::STREAMS && e.name == "error" => {
                    return Err(stream_error(&self.place, &e));
                }
                Ok(Some(StreamEvent::Stanza(e))) => return Ok(Event::Stanza(e)),
                Ok(None) => {}
                Err(e) => return Err(Error::unexpected(format!("{}: the server's XMPP stream is not well-formed: {e}", self.place))),
            }
            let message = match &mut self.input {
                In::Tcp(tcp) => {
                    let mut chunk = [0u8; READ_CHUNK];
                    let n = tcp.read(&mut chunk).await.map_err(|e| Error::closed(format!("{}: {e}", self.place)))?;
                    if n == 0 {
                        return Ok(Event::End);
                    }
                    self.parser.feed(&chunk[..n]);
                    continue;
                }
                In::Websocket(ws) => ws.recv().await?,
                In::Sockjs(sockjs) => sockjs.recv().await?,
                // Never reached: BOSH yields an event every time, above.
                In::Bosh(_) => None,
            };
            match message {
                Some(text) => self.parser.feed(text.as_bytes()),
                None => return Ok(Event::End),
            }
        }
    }

    /// The next stanza; `None` once the server ended the stream or the connection.
    pub async fn stanza(&mut self) -> Result<Option<Element>, Error> {
        loop {
            match self.event().await? {
                Event::Stanza(e) => return Ok(Some(e)),
                Event::End => return Ok(None),
                Event::Header => continue,
            }
        }
    }

    /// The body of the next message that has one: an application message. Other
    /// stanzas are passed over; a message the server bounced is an error.
    pub async fn recv(&mut self) -> Result<Option<Text>, Error> {
        while let Some(stanza) = self.stanza().await? {
            if stanza.name != "message" {
                continue;
            }
            if stanza.get("type") == Some("error") {
                return Err(Error::refused(format!("{}: the server bounced a message: {}", self.place, stanza_error(&stanza))));
            }
            if let Some(body) = stanza.find("body", ns::CLIENT) {
                return Ok(Some(Text::from(body.text_content())));
            }
        }
        Ok(None)
    }

    /// Waits for the result of the iq `id`, passing over other stanzas; an error
    /// answer names its condition and `what` was refused.
    pub async fn result(&mut self, id: &str, what: &str) -> Result<Element, Error> {
        while let Some(stanza) = self.stanza().await? {
            if stanza.name != "iq" || stanza.get("id") != Some(id) {
                continue;
            }
            return match stanza.get("type") {
                Some("result") => Ok(stanza),
                _ => Err(Error::refused(format!("{}: {what} refused: {}", self.place, stanza_error(&stanza)))),
            };
        }
        Err(Error::closed(format!("{}: the stream ended while waiting for {what}", self.place)))
    }

    /// Where the session is: a URL, or `xmpp://host:port`, for messages.
    pub fn place(&self) -> &str {
        &self.place
    }
}

/// What every application message starts with: `<message to='…' type='…'><body>`, the
/// namespace declared where each element stands alone.
fn message_head(framing: Framing, to: &str, kind: &str) -> String {
    let mut head = String::from("<message");
    if framing != Framing::Stream {
        head.push_str(" xmlns='jabber:client'");
    }
    for (name, value) in [("to", to), ("type", kind)] {
        head.push(' ');
        head.push_str(name);
        head.push_str("='");
        escape_into(value, &mut head);
        head.push('\'');
    }
    head.push_str("><body>");
    head
}

/// A stream error as a person reads it: its condition, text, and a hint where one helps.
fn stream_error(place: &str, error: &Element) -> Error {
    let condition = error.elements().find(|e| e.ns == ns::STREAM_ERRORS && e.name != "text").map_or("no condition", |e| e.name.as_str());
    let text = error.find("text", ns::STREAM_ERRORS).map(|t| format!(" ({:?})", t.text_content())).unwrap_or_default();
    let hint = match condition {
        "host-unknown" => ": is --xmpp-domain right?",
        "not-authorized" => ": too many failed logins?",
        _ => "",
    };
    Error::refused(format!("{place} ended the XMPP stream with {condition}{text}{hint}"))
}

/// A stanza error's condition and type, e.g. `item-not-found (cancel)`.
pub fn stanza_error(stanza: &Element) -> String {
    let Some(error) = stanza.find("error", ns::CLIENT) else { return "an error with no condition".to_string() };
    let condition = error.elements().find(|e| e.ns == ns::STANZA_ERRORS && e.name != "text").map_or("no condition", |e| e.name.as_str());
    match error.get("type") {
        Some(kind) => format!("{condition} ({kind})"),
        None => condition.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_name_their_condition() {
        let bounced = Element::new("message", ns::CLIENT).attr("type", "error").child(
            Element::new("error", ns::CLIENT).attr("type", "cancel").child(Element::new("not-acceptable", ns::STANZA_ERRORS)),
        );
        assert_eq!(stanza_error(&bounced), "not-acceptable (cancel)");
        let ended = Element::new("error", ns::STREAMS)
            .child(Element::new("host-unknown", ns::STREAM_ERRORS))
            .child(Element::new("text", ns::STREAM_ERRORS).text("no such domain"));
        let e = stream_error("xmpp://h:1", &ended);
        assert!(e.is_refused());
        assert_eq!(e.to_string(), "refused by the target: xmpp://h:1 ended the XMPP stream with host-unknown (\"no such domain\"): is --xmpp-domain right?");
    }

    #[test]
    fn message_heads_to_the_byte() {
        assert_eq!(message_head(Framing::Stream, "r@conference.localhost", "groupchat"), "<message to='r@conference.localhost' type='groupchat'><body>");
        assert_eq!(message_head(Framing::Messages, "o'k@x", "chat"), "<message xmlns='jabber:client' to='o&apos;k@x' type='chat'><body>");
    }

    #[test]
    fn a_servers_ping_is_answered() {
        let ping = iq("get", "s1", Element::new("ping", ns::PING)).attr("from", "localhost");
        assert_eq!(pong(&ping).map(|p| p.to_xml(ns::CLIENT)).as_deref(), Some(r#"<iq type="result" id="s1" to="localhost"/>"#));
        assert_eq!(pong(&iq("result", "s1", Element::new("ping", ns::PING))), None);
    }

    #[test]
    fn iqs_to_the_byte() {
        let bind = iq("set", "bind", Element::new("bind", ns::BIND));
        assert_eq!(bind.to_xml(ns::CLIENT), r#"<iq type="set" id="bind"><bind xmlns="urn:ietf:params:xml:ns:xmpp-bind"/></iq>"#);
        assert_eq!(
            bind.to_xml_standalone(),
            r#"<iq xmlns="jabber:client" type="set" id="bind"><bind xmlns="urn:ietf:params:xml:ns:xmpp-bind"/></iq>"#
        );
    }
}
