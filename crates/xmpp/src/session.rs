//! One client's XMPP session, whatever carries it: it takes the stream's
//! events (header, stanzas, end) and acts on them; everything the client is
//! sent (answers, routed stanzas, room events) goes through its bounded
//! outbox, framed for its transport, to the transport's one writer.

use std::collections::BTreeMap;
use std::sync::Arc;

use tokio_tungstenite::tungstenite::Message;
use hub::{Close, Outbox, Payload, RoomEvent};
use wire::xmpp::{Element, STREAMS_NS, StreamEvent, StreamParser};

use super::accounts::Exchange;
use super::muc::Occupancy;
use super::{Jid, Xmpp, ns};

mod mam;
mod moderation;
mod presence;

pub(crate) use moderation::{Effect, set_role};
pub(crate) use presence::{deliver, push};
mod register;
mod sasl;
mod sasl2;
mod sm;

use sm::StreamManagement;
mod rooms;

/// The namespace of XMPP over WebSocket's `<open/>` and `<close/>`.
pub const FRAMING_NS: &str = wire::xmpp::ns::FRAMING;

/// How a SASL2 success starts, as any framing writes it.
const SASL2_SUCCESS: &str = "<success xmlns=\"urn:xmpp:sasl:2\"";

/// What ends the server's side of a stream over TCP.
pub const STREAM_CLOSE: &str = wire::xmpp::STREAM_END;

/// What ends the server's side of a stream of single-element messages.
pub const FRAMING_CLOSE: &str = wire::xmpp::CLOSE;

/// How the session's output is framed for its transport.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Framing {
    /// One XML stream (TCP): a stream header, then stanzas in its namespace.
    Stream,
    /// One element per message, each standing alone (RFC 7395).
    Messages,
    /// Stanzas standing alone, as in `Messages`, carried in BOSH bodies
    /// (XEP-0206): the body's attributes open and end the stream, so
    /// nothing else does.
    Bosh,
}

impl Framing {
    /// An element as the transport sends it.
    pub fn text(self, element: &Element) -> String {
        match self {
            Framing::Stream => element.to_xml(ns::CLIENT),
            Framing::Messages | Framing::Bosh => element.to_xml_standalone(),
        }
    }

    pub fn payload(self, element: &Element) -> Payload {
        Payload::from(self.text(element))
    }

    /// What opens the server's side of the stream, if anything does.
    fn open(self, domain: &str, id: &str) -> Option<String> {
        match self {
            Framing::Stream => Some(header(domain, id)),
            Framing::Messages => Some(wire::xmpp::Header { id: Some(id), from: Some(domain), to: None }.open()),
            Framing::Bosh => None,
        }
    }

    /// What ends the server's side of the stream, if anything does.
    pub fn close(self) -> Option<&'static str> {
        match self {
            Framing::Stream => Some(STREAM_CLOSE),
            Framing::Messages => Some(FRAMING_CLOSE),
            Framing::Bosh => None,
        }
    }
}

/// Where the stream is in its negotiation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    /// Waiting for the first stream header.
    Connected,
    /// Header answered; SASL next.
    Authenticating,
    /// Authenticated; waiting for the restarted stream's header.
    Restarting,
    /// Restarted; resource binding next.
    Binding,
    /// Bound: stanzas flow.
    Ready,
}

/// The session's state, owned by its one task.
pub struct Session {
    framing: Framing,
    xmpp: Arc<Xmpp>,
    id: hub::MemberId,
    outbox: Arc<Outbox>,
    pub phase: Phase,
    /// The bare JID once authenticated, the full one once bound. (Boxed,
    /// as the map below is a tree: every idle session keeps both.)
    jid: Option<Box<Jid>>,
    /// Rooms joined, by room name.
    rooms: BTreeMap<Arc<str>, Occupancy>,
    /// The SASL exchange in progress, and how many have failed. Boxed:
    /// only a login holds one, and inline it would be in every session.
    sasl: Option<Box<Exchange>>,
    /// What a SASL2 exchange in progress asked for beside authentication.
    sasl2: Option<Box<sasl2::Inline>>,
    failed: u32,
    /// Whether the stream runs over TLS.
    pub encrypted: bool,
    /// Whether its TLS takes a resuming client's early data (0-RTT).
    pub zero_rtt: bool,
    /// Whether the bytes last read came in TLS early data, which whoever
    /// saw them may send again: a login in them is taken only with FAST's
    /// count (XEP-0484 §4).
    pub early_data: bool,
    /// Whether its transport can keep it for resumption (XEP-0198).
    pub may_resume: bool,
    /// Stanzas taken from the client so far, for metrics.
    pub stanzas_in: usize,
    /// Stream management (XEP-0198), once the client enabled it. Boxed:
    /// inline, its 80 bytes would be in every session's task.
    sm: Option<Box<StreamManagement>>,
    /// Whether the client has sent available presence.
    available: bool,
    /// The messages kept while it was offline were given to this session
    /// (at its first available presence of priority 0 or more).
    offline_taken: bool,
    /// How another connection asks for this session (see `taken_over`):
    /// made when the session becomes resumable, as only then can it be
    /// asked (a channel is 800 bytes an idle session need not hold).
    takeover: Option<(tokio::sync::mpsc::Sender<Takeover>, tokio::sync::mpsc::Receiver<Takeover>)>,

    /// Those it directed available presence at (at most `--xmpp-list-limit`);
    /// boxed, made on the first: most sessions direct none.
    // 8 bytes in every idle session's task where the vector is 24.
    #[allow(clippy::box_collection)]
    directed: Option<Box<Vec<Jid>>>,
    /// Logged in anonymously: its roster goes when it does.
    anonymous: bool,
    /// It queued messages for the archive since the writer last said all
    /// it was given is kept (see `Session::archived`).
    unflushed: bool,
    /// Where the client connects from, for per-address limits.
    address: std::net::IpAddr,
}

/// A request for a session whose connection is still open: where to send it.
pub type Takeover = tokio::sync::oneshot::Sender<Session>;

/// What the transport does after a batch of events.
pub enum Flow {
    /// Read on.
    Continue,
    /// The client ended its stream.
    Closed,
    /// Send what is queued (`<proceed/>`), then start TLS and a new stream.
    StartTls,
    /// Carry on as this parked session, whose client handled `h` stanzas;
    /// resumed inside a SASL2 success when the login asked for it there.
    Resume(Box<Session>, u32, Option<Box<sasl2::Resumed>>),
}

/// Why the stream ends from the server's side: a stream error condition
/// (RFC 6120 §4.9.3) and a text for people; no condition when the client
/// ended it.
pub struct StreamEnd(pub &'static str, pub String);

impl StreamEnd {
    /// The stream ends without an error: the client closed it, or a
    /// refused STARTTLS ends it after `<failure/>`.
    pub fn closed() -> StreamEnd {
        StreamEnd("", String::new())
    }
}

/// The stream error for a session its outbox closed.
pub fn stream_end_for(close: &Close) -> StreamEnd {
    let condition = match close.code {
        1001 => "system-shutdown",
        1008 => "policy-violation",
        _ => "undefined-condition",
    };
    StreamEnd(condition, close.reason.to_string())
}

/// The server's stream header.
pub fn header(domain: &str, id: &str) -> String {
    wire::xmpp::Header { id: Some(id), from: Some(domain), to: None }.stream()
}

impl Session {
    /// A session of a client at `address`, whose stanzas go to `outbox`
    /// framed as `framing`.
    pub fn new(framing: Framing, xmpp: Arc<Xmpp>, outbox: Arc<Outbox>, address: std::net::IpAddr) -> Session {
        Session {
            address,
            framing,
            xmpp,
            id: hub::next_member_id(),
            outbox,
            phase: Phase::Connected,
            jid: None,
            rooms: BTreeMap::new(),
            sasl: None,
            sasl2: None,
            failed: 0,
            encrypted: false,
            zero_rtt: false,
            early_data: false,
            may_resume: true,
            stanzas_in: 0,
            sm: None,
            available: false,
            offline_taken: false,
            takeover: None,
            directed: None,
            anonymous: false,
            unflushed: false,
        }
    }

    /// The session of a user of another server in this server's rooms
    /// (`s2s::guests`): bound as `jid` from the start, with no connection,
    /// its output to `outbox`.
    pub(crate) fn guest(xmpp: Arc<Xmpp>, outbox: Arc<Outbox>, jid: Jid) -> Session {
        let mut session = Session::new(Framing::Stream, xmpp, outbox, std::net::IpAddr::V4(std::net::Ipv4Addr::UNSPECIFIED));
        session.jid = Some(Box::new(jid));
        session.phase = Phase::Ready;
        session.may_resume = false;
        // Its server's stream is.
        session.encrypted = true;
        session
    }

    /// Handles a guest's stanza, as its server handed it.
    pub(crate) async fn take_stanza(&mut self, stanza: Element) {
        let _ = self.on_stanza(stanza).await;
    }

    /// Whether the session is in any room.
    pub(crate) fn in_rooms(&self) -> bool {
        !self.rooms.is_empty()
    }

    /// Handles every complete event the parser has.
    pub async fn take_events(&mut self, parser: &mut StreamParser) -> Result<Flow, StreamEnd> {
        loop {
            let event = parser.next_event().map_err(|e| StreamEnd(e.condition(), e.to_string()))?;
            if matches!(event, Some(StreamEvent::Stanza(_))) {
                self.stanzas_in += 1;
            }
            match event {
                None => return Ok(Flow::Continue),
                Some(StreamEvent::Open { attrs, ns }) => self.on_open(&attrs, &ns)?,
                Some(StreamEvent::Close) => return Ok(Flow::Closed),
                // The client ends its stream with an error (RFC 6120 §4.9.1.1): so does the server's side.
                Some(StreamEvent::Stanza(e)) if e.ns == STREAMS_NS && e.name == "error" => return Ok(Flow::Closed),
                // RFC 7395's framing elements stand for the stream's header and end.
                Some(StreamEvent::Stanza(e)) if e.ns == FRAMING_NS && e.name == "open" => self.on_open(&e.attrs, ns::CLIENT)?,
                Some(StreamEvent::Stanza(e)) if e.ns == FRAMING_NS && e.name == "close" => return Ok(Flow::Closed),
                Some(StreamEvent::Stanza(e)) if e.ns == ns::SM && e.name == "resume" && self.phase == Phase::Binding => {
                    let previd = e.get("previd").unwrap_or_default();
                    let h = e.get("h").and_then(|h| h.parse::<u32>().ok());
                    match (h, self.resumable_session(previd).await) {
                        (Some(h), Some(parked)) => return Ok(Flow::Resume(Box::new(parked), h, None)),
                        _ => self.send_nonza(&Element::new("failed", ns::SM).child(Element::new("item-not-found", ns::STANZA_ERRORS))),
                    }
                }
                // SASL2 (XEP-0388), which may resume a session as it authenticates.
                Some(StreamEvent::Stanza(e)) if e.ns == ns::SASL2 && self.phase == Phase::Authenticating => {
                    if let Some(flow) = Box::pin(self.on_sasl2(&e)).await? {
                        return Ok(flow);
                    }
                }
                // Stream management before authentication (XEP-0198 §3):
                // refused, and the stream goes on.
                Some(StreamEvent::Stanza(e)) if e.ns == ns::SM && e.name == "enable" && self.phase == Phase::Authenticating => {
                    self.send_nonza(&Element::new("failed", ns::SM).child(Element::new("unexpected-request", ns::STANZA_ERRORS)));
                }
                Some(StreamEvent::Stanza(e)) if e.ns == ns::TLS && e.name == "starttls" => {
                    if self.phase != Phase::Authenticating || self.encrypted || self.framing != Framing::Stream || self.xmpp.tls.is_none() {
                        self.send(&Element::new("failure", ns::TLS));
                        return Err(StreamEnd::closed());
                    }
                    self.send(&Element::new("proceed", ns::TLS));
                    // The client starts a new stream over TLS (RFC 6120 §5.4.3.3).
                    self.phase = Phase::Connected;
                    parser.restart();
                    return Ok(Flow::StartTls);
                }
                Some(StreamEvent::Stanza(stanza)) => {
                    // Over WebSocket the client restarts with a new `<open/>`,
                    // which needs no new parser.
                    if self.on_stanza(stanza).await? && self.framing == Framing::Stream {
                        parser.restart();
                    }
                }
            }
        }
    }

    fn send(&self, element: &Element) {
        // A refused push has closed the session; the writer ends it.
        let _ = self.outbox.push(self.framing.payload(element));
    }

    fn send_text(&self, text: String) {
        let _ = self.outbox.push(Payload::from(text));
    }

    fn on_open(&mut self, attrs: &[(String, String)], stanza_ns: &str) -> Result<(), StreamEnd> {
        let get = |name: &str| attrs.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_str());
        if stanza_ns != ns::CLIENT {
            return Err(StreamEnd("invalid-namespace", format!("stanzas must be in {}", ns::CLIENT)));
        }
        if get("to").is_some_and(|to| !to.eq_ignore_ascii_case(&self.xmpp.domain)) {
            return Err(StreamEnd("host-unknown", format!("this server serves {}", self.xmpp.domain)));
        }
        if get("version") != Some("1.0") {
            return Err(StreamEnd("unsupported-version", "version='1.0' is required".into()));
        }
        let id = format!("{:016x}", rand::random::<u64>());
        if let Some(open) = self.framing.open(&self.xmpp.domain, &id) {
            self.send_text(open);
        }
        let features = match self.phase {
            Phase::Connected => {
                self.phase = Phase::Authenticating;
                let auth = &self.xmpp.auth;
                let mut mechanisms = Element::new("mechanisms", ns::SASL);
                for name in auth.accounts.offered(self.plain_allowed(), auth.anonymous) {
                    mechanisms = mechanisms.child(Element::new("mechanism", ns::SASL).text(name));
                }
                let mut features = Element::new("features", STREAMS_NS);
                if self.xmpp.tls.is_some() && !self.encrypted && self.framing == Framing::Stream {
                    features = features.child(Element::new("starttls", ns::TLS));
                }
                if auth.accounts.is_open() && self.plain_allowed() {
                    features = features.child(Element::new("register", "http://jabber.org/features/iq-register"));
                }
                features = features.child(mechanisms);
                match self.sasl2_feature() {
                    Some(sasl2) => features.child(sasl2),
                    None => features,
                }
            }
            Phase::Restarting => {
                self.phase = Phase::Binding;
                self.binding_features()
            }
            _ => return Err(StreamEnd("bad-format", "a stream header in the middle of the stream".into())),
        };
        self.send(&features);
        Ok(())
    }

    /// The features of an authenticated stream: resource binding, and
    /// what may come with it.
    fn binding_features(&self) -> Element {
        Element::new("features", STREAMS_NS)
            .child(Element::new("bind", ns::BIND))
            .child(Element::new("session", ns::SESSION).child(Element::new("optional", ns::SESSION)))
            .child(Element::new("sm", ns::SM))
            .child(Element::new("ver", ns::ROSTER_VERSIONING))
    }

    /// Handles one stanza; `Ok(true)` when the stream restarts after it.
    async fn on_stanza(&mut self, stanza: Element) -> Result<bool, StreamEnd> {
        if stanza.ns == ns::SM && self.phase == Phase::Ready {
            Box::pin(self.on_sm(&stanza)).await?;
            return Ok(false);
        }
        match self.phase {
            // Boxed, as are the iqs and presence below: their state (the
            // store's calls among it) would otherwise sit in every idle
            // stream's task, which only waits for messages.
            Phase::Authenticating => return Box::pin(self.on_sasl(&stanza)).await,
            Phase::Binding | Phase::Ready if stanza.ns == ns::CLIENT => {}
            Phase::Binding | Phase::Ready => {
                return Err(StreamEnd("unsupported-stanza-type", format!("{{{}}}{} is not a stanza", stanza.ns, stanza.name)));
            }
            Phase::Connected | Phase::Restarting => return Err(StreamEnd("not-authorized", "authenticate first".into())),
        }
        if self.phase == Phase::Binding && !(stanza.name == "iq" && stanza.find("bind", ns::BIND).is_some()) {
            return Err(StreamEnd("not-authorized", "bind a resource first".into()));
        }
        match stanza.name.as_str() {
            "iq" if self.xmpp.auth.accounts.is_open() && stanza.get("to").is_none() && stanza.find("query", ns::REGISTER).is_some() => {
                let query = stanza.find("query", ns::REGISTER).cloned().unwrap_or_default();
                Box::pin(self.on_unregister(&stanza, &query)).await?;
            }
            "iq" => Box::pin(self.on_iq(&stanza)).await,
            "message" => self.on_message(&stanza).await,
            "presence" => Box::pin(self.on_presence(&stanza)).await,
            other => return Err(StreamEnd("unsupported-stanza-type", format!("<{other}/> is not a stanza"))),
        }
        if let Some(sm) = &mut self.sm {
            sm.handled = sm.handled.wrapping_add(1);
        }
        Ok(false)
    }

    /// The session's bare JID once authenticated.
    pub fn bare_jid(&self) -> Option<Jid> {
        self.jid.as_deref().map(Jid::bare)
    }

    /// The account it logged in to: its JID's local part, unless it
    /// logged in anonymously.
    pub(crate) fn account(&self) -> Option<Arc<str>> {
        self.jid.as_deref().filter(|_| !self.anonymous).and_then(|jid| jid.local.as_deref()).map(Arc::from)
    }

    /// The session's outbox.
    pub fn outbox(&self) -> &Arc<Outbox> {
        &self.outbox
    }

    /// The service the session is of.
    pub(crate) fn xmpp(&self) -> &Arc<Xmpp> {
        &self.xmpp
    }

    /// The framing its stanzas are kept in for resumption.
    pub fn framing(&self) -> Framing {
        self.framing
    }

    /// The session's JID: bare once authenticated, full once bound.
    fn full_jid(&self) -> String {
        self.jid.as_deref().map(ToString::to_string).unwrap_or_default()
    }

    fn reply(&self, iq: &Element, child: Option<Element>) {
        let mut result = Element::new("iq", ns::CLIENT).attr("type", "result").attr("id", iq.get("id").unwrap_or_default());
        if let Some(from) = iq.get("to") {
            result = result.attr("from", from);
        }
        if let Some(child) = child {
            result = result.child(child);
        }
        self.send(&result.attr("to", &self.full_jid()));
    }

    /// Answers a stanza with an error of `kind` (`cancel`, `modify` …) and
    /// `condition`, from the JID it was sent to.
    fn refuse(&self, stanza: &Element, kind: &str, condition: &str) {
        if stanza.get("type") == Some("error") {
            return;
        }
        self.send(&error_for(stanza, &self.full_jid(), kind, condition));
    }

    async fn on_iq(&mut self, iq: &Element) {
        let kind = iq.get("type").unwrap_or_default();
        let to = match iq.get("to").map(Jid::parse) {
            Some(None) => return self.refuse(iq, "modify", "jid-malformed"),
            Some(Some(to)) => Some(to),
            None => None,
        };
        let payload = iq.elements().next();
        if let Some(to) = &to
            && self.xmpp.is_remote(to)
        {
            return self.to_remote(iq, &self.full_jid());
        }
        if let Some(to) = &to {
            let in_room = to.local.is_some() && to.domain == self.xmpp.muc_domain && self.xmpp.rooms.is_some();
            if in_room && (to.resource.is_some() || payload.is_some()) {
                return match payload {
                    Some(payload) if to.resource.is_none() => self.on_room_iq(iq, to, &payload.clone()).await,
                    _ => self.on_room_iq(iq, to, &Element::default()).await,
                };
            }
            // A user's resource, this one's own included: carried there (RFC 6120 §10.5.4).
            if to.local.is_some() && to.resource.is_some() && to.domain == self.xmpp.domain {
                return Box::pin(self.route_to_user(iq, to)).await;
            }
        }
        if kind == "result" || kind == "error" {
            return;
        }
        let Some(payload) = payload else {
            return self.refuse(iq, "modify", "bad-request");
        };
        let own_bare = self.jid.as_deref().map(Jid::bare);
        let to = to.filter(|to| Some(to.bare()) != own_bare || to.resource.is_some());
        let here = to.as_ref().is_none_or(|to| to.local.is_none() && to.resource.is_none() && to.domain == self.xmpp.domain);
        // A user's bare JID, not this session's own.
        let other_user = to.as_ref().filter(|to| to.local.is_some() && to.resource.is_none());
        let muc_service = to.as_ref().is_some_and(|to| to.local.is_none() && to.domain == self.xmpp.muc_domain && self.xmpp.rooms.is_some());
        match (payload.ns.as_str(), payload.name.as_str(), kind) {
            (ns::BIND, "bind", "set") if self.phase == Phase::Binding => Box::pin(self.on_bind(iq, payload)).await,
            (ns::SESSION, "session", "set") if here => self.reply(iq, None),
            (ns::PING, "ping", "get") if here || muc_service => self.reply(iq, None),
            (ns::ROSTER, "query", "get" | "set") if here => self.on_roster(iq, payload).await,
            (super::archive::MAM, "query", "set") if here => Box::pin(self.on_mam_query(iq, payload)).await,
            (super::archive::MAM, "query", "get") if here && self.xmpp.archive.is_some() => self.reply(iq, Some(super::archive::form())),
            (super::archive::MAM, "metadata", "get") if here => Box::pin(self.on_mam_metadata(iq)).await,
            (super::archive::MAM, "prefs", "get" | "set") if here && self.xmpp.archive.is_some() => Box::pin(self.on_mam_prefs(iq, payload)).await,
            // Another user's, answered by the server for the account (RFC 6121 §8.5.2.1.3).
            (ns::DISCO_ITEMS, "query", "get") if other_user.is_some_and(|user| user.domain == self.xmpp.domain) => {
                let items = self.items_of(&other_user.map(Jid::to_string).unwrap_or_default()).await;
                self.reply(iq, Some(items));
            }
            // Another user's identity, answered by the server for it (XEP-0030 §3.1,
            // RFC 6121 §8.5.2.1.3), to those who see its presence; to others, and
            // for nobody, service-unavailable (XEP-0030 §8, RFC 6121 §8.5.1).
            (ns::DISCO_INFO, "query", "get") if let Some(user) = other_user.filter(|user| user.domain == self.xmpp.domain).cloned() => {
                let sees = Box::pin(self.sees_presence_of(&user.to_string())).await;
                match sees && Box::pin(self.xmpp.exists(&user)).await {
                    true => {
                        let kind = if self.xmpp.router.is_anonymous(&user.to_string()) { "anonymous" } else { "registered" };
                        let info = Element::new("query", ns::DISCO_INFO).child(Element::new("identity", ns::DISCO_INFO).attr("category", "account").attr("type", kind));
                        self.reply(iq, Some(features(info, &[ns::DISCO_INFO, ns::DISCO_ITEMS])));
                    }
                    false => self.refuse(iq, "cancel", "service-unavailable"),
                }
            }
            // Another user's roster is theirs alone (RFC 6121 §2.1.5).
            (ns::ROSTER, "query", "set") if other_user.is_some() => self.refuse(iq, "auth", "forbidden"),
            (ns::DISCO_INFO, "query", "get") if here => {
                let info = Element::new("query", ns::DISCO_INFO)
                    .child(Element::new("identity", ns::DISCO_INFO).attr("category", "server").attr("type", "im").attr("name", "Switchboard"));
                let archive: &[&str] = if self.xmpp.archive.is_some() { &[super::archive::MAM, super::archive::MAM_EXTENDED, super::archive::SID] } else { &[] };
                self.reply(iq, Some(features(info, &[&[ns::DISCO_INFO, ns::DISCO_ITEMS, ns::PING][..], archive].concat())));
            }
            (ns::DISCO_ITEMS, "query", "get") if here => {
                let mut items = Element::new("query", ns::DISCO_ITEMS);
                if self.xmpp.rooms.is_some() {
                    items = items.child(Element::new("item", ns::DISCO_ITEMS).attr("jid", &self.xmpp.muc_domain).attr("name", "Rooms"));
                }
                self.reply(iq, Some(items));
            }
            (ns::DISCO_INFO, "query", "get") if muc_service => {
                let info = Element::new("query", ns::DISCO_INFO)
                    .child(Element::new("identity", ns::DISCO_INFO).attr("category", "conference").attr("type", "text").attr("name", "Rooms"));
                self.reply(iq, Some(features(info, &[ns::DISCO_INFO, ns::DISCO_ITEMS, ns::MUC, ns::PING])));
            }
            (ns::DISCO_ITEMS, "query", "get") if muc_service => {
                let items = rooms_page(&self.xmpp.muc.listed(), &self.xmpp.muc_domain, payload.find("set", ns::RSM));
                self.reply(iq, Some(items));
            }
            _ => self.refuse(iq, "cancel", "service-unavailable"),
        }
    }

    /// Binds the resource the client asks for, or one of the server's
    /// making; a resource a session has, here or on another node, is
    /// refused with `conflict` (RFC 6120 §7.7.2.2).
    async fn on_bind(&mut self, iq: &Element, bind: &Element) {
        let Some(bare) = self.jid.as_deref().cloned() else { return };
        let asked = bind.find("resource", ns::BIND).map(Element::text_content).filter(|r| !r.is_empty() && r.len() <= 1023);
        // In its canonical form (RFC 7622 §3.4), as every node and router
        // compares it; one the profile refuses is refused (RFC 6120
        // §7.7.2.1).
        let resource = match asked.map(|r| wire::xmpp::jid::resourcepart(&r)) {
            Some(Some(resource)) => resource,
            Some(None) => return self.refuse(iq, "modify", "bad-request"),
            None => format!("sb-{:08x}", rand::random::<u32>()),
        };
        let full = bare.with_resource(&resource);
        let (outbox, framing, anonymous) = (self.outbox.clone(), self.framing, self.anonymous);
        let bound = match self.xmpp.claim(&full).await {
            Some(claim) => claim.bind(|| self.xmpp.router.bind(&full, outbox, framing, anonymous)),
            None => false,
        };
        if !bound {
            return self.refuse(iq, "cancel", "conflict");
        }
        self.jid = Some(Box::new(full.clone()));
        self.phase = Phase::Ready;
        self.reply(iq, Some(Element::new("bind", ns::BIND).child(Element::new("jid", ns::BIND).text(&full.to_string()))));
    }

    async fn on_message(&mut self, message: &Element) {
        let Some(to) = message.get("to").and_then(Jid::parse) else {
            return self.refuse(message, "modify", "jid-malformed");
        };
        if to.domain == self.xmpp.muc_domain && to.local.is_some() && self.xmpp.rooms.is_some() {
            return self.on_room_message(message, &to).await;
        }
        self.message_to_user(message, &to).await;
    }

    async fn on_presence(&mut self, presence: &Element) {
        let Some(to) = presence.get("to") else {
            return self.broadcast_presence(presence).await;
        };
        let Some(to) = Jid::parse(to) else {
            return self.refuse(presence, "modify", "jid-malformed");
        };
        if to.domain == self.xmpp.muc_domain && to.local.is_some() && self.xmpp.rooms.is_some() {
            let room: Arc<str> = Arc::from(to.local.as_deref().unwrap_or_default());
            return self.on_room_presence(presence, &to, room).await;
        }
        self.direct_presence(presence, &to).await;
    }

    /// Leaves every room and unbinds: the session is over.
    pub async fn leave_all(&mut self) {
        if let Some(id) = self.sm.as_ref().and_then(|sm| sm.id.as_deref()) {
            self.xmpp.forget_live(id);
        }
        let rooms: Vec<Arc<str>> = self.rooms.keys().cloned().collect();
        for room in rooms {
            self.leave(&room, false);
        }
        if self.phase == Phase::Ready
            && let Some(jid) = self.jid.as_deref().cloned()
        {
            self.end_presence().await;
            self.xmpp.router.unbind(&jid);
        }
    }

    /// What the client is sent for one outbox item: a stanza as it is, or
    /// a room event as this occupant sees it (`None` for its own join).
    pub fn render(&mut self, payload: &Payload) -> Option<String> {
        if payload.is_binary() {
            // A nonza (see `send_nonza`): not a stanza, not counted.
            let Message::Binary(bytes) = payload.ws_message() else { return None };
            let text = String::from_utf8_lossy(&bytes).into_owned();
            // `<enabled/>`, alone or in the SASL2 success that carries it,
            // says stream management is on: the stanzas after it are the
            // ones the client counts (not what was queued before, a SASL2
            // failure among them).
            if let Some(sm) = &mut self.sm
                && (text.starts_with("<enabled") || text.starts_with(SASL2_SUCCESS))
            {
                sm.counting = true;
            }
            return Some(text);
        }
        let text = match payload.as_event() {
            Some((room, event)) => {
                let occupancy = self.rooms.get(room)?;
                // The room's subject as it now is, for those who join here
                // after (set again here for the occupant who set it).
                if let RoomEvent::Topic { name, text } = event {
                    let subject = (!text.is_empty()).then(|| (name.clone(), text.to_string()));
                    self.xmpp.muc.with(room, |r| r.subject = subject);
                }
                let stanza = match (event, &occupancy.renamed_from) {
                    // Its own join's echo, still queued when it changed its
                    // nick: the old nick was its own until then.
                    (RoomEvent::Join { name, .. }, Some(old)) if name == old => return None,
                    // Its own nick change, as the room's events tell it (XEP-0045 §7.6).
                    (RoomEvent::Leave { name, .. }, Some(old)) if name == old => {
                        super::muc::render(event, &occupancy.room_jid, old, &self.full_jid(), |nick| self.shown(room, nick))?
                    }
                    (RoomEvent::Join { name, .. }, Some(_)) if *name == occupancy.nick => {
                        let (item, _) = self.shown(room, name);
                        let own = super::muc::presence(&occupancy.room_jid, name, &self.full_jid(), &item, true, &["110"]);
                        if let Some(occupancy) = self.rooms.get_mut(room) {
                            occupancy.renamed_from = None;
                        }
                        own
                    }
                    (RoomEvent::Message { .. } | RoomEvent::Announcement { .. }, _) => {
                        let message = super::muc::render(event, &occupancy.room_jid, &occupancy.nick, &self.full_jid(), |nick| self.shown(room, nick))?;
                        let message = super::muc::with_stanza_id(message, &occupancy.room_jid, payload.id());
                        match event {
                            // Its own message's reflection (XEP-0045 §7.4).
                            RoomEvent::Message { name, text } if occupancy.is_own(name) => occupancy.reflected(message, text),
                            _ => message,
                        }
                    }
                    _ => super::muc::render(event, &occupancy.room_jid, &occupancy.nick, &self.full_jid(), |nick| self.shown(room, nick))?,
                };
                self.framing.text(&stanza)
            }
            None => payload.as_text().unwrap_or_default().to_owned(),
        };
        let limit = self.xmpp.context.bounds.queue_limit;
        if let Some(sm) = &mut self.sm
            && sm.counting
        {
            sm.sent = sm.sent.wrapping_add(1);
            if sm.id.is_some() {
                sm.unacked_bytes += text.len();
                sm.unacked.push_back(text.clone());
                if sm.unacked_bytes > limit {
                    // More unacknowledged than a queue may hold: the session
                    // can no longer be resumed without loss, so it will not be.
                    if let Some(id) = sm.id.take() {
                        self.xmpp.forget_live(&id);
                    }
                    sm.unacked.clear();
                    sm.unacked_bytes = 0;
                }
            }
        }
        Some(text)
    }

    /// What the stream says as it ends: what was still queued for the
    /// client (the stream header, when the error came in the same read as
    /// the client's), the stream error if there is one, then the stream's
    /// end (`</stream:stream>`, or `<close/>`; BOSH's terminating body says
    /// that instead).
    pub fn last_words(&mut self, end: StreamEnd) -> Vec<String> {
        let mut batch = Vec::new();
        let mut out = Vec::new();
        if self.outbox.try_drain(&mut batch).is_some() {
            out.extend(batch.iter().filter_map(|p| self.render(p)));
        }
        let StreamEnd(condition, text) = end;
        if self.phase == Phase::Connected && self.framing == Framing::Stream {
            // An error before the client's header still opens a stream (RFC 6120 §4.9.1.1).
            out.push(header(&self.xmpp.domain, "error"));
        }
        if !condition.is_empty() {
            out.push(self.stream_error(condition, &text));
        }
        out.extend(self.framing.close().map(str::to_owned));
        out
    }

    /// The stream error element for `condition`, framed.
    pub fn stream_error(&self, condition: &str, text: &str) -> String {
        let error = Element::new("error", STREAMS_NS)
            .child(Element::new(condition, ns::STREAM_ERRORS))
            .child(Element::new("text", ns::STREAM_ERRORS).text(text));
        self.framing.text(&error)
    }

    /// Pings the client (XEP-0199) to see whether it is still there: any
    /// bytes it sends, its answer or anything else, say so.
    pub fn ping(&self) {
        let ping = Element::new("iq", ns::CLIENT)
            .attr("type", "get")
            .attr("id", &format!("ping-{:08x}", rand::random::<u32>()))
            .attr("from", &self.xmpp.domain)
            .attr("to", &self.full_jid())
            .child(Element::new("ping", ns::PING));
        self.send(&ping);
    }
}

/// The error of `kind` and `condition` that answers `stanza`, to `to`,
/// from the JID it was sent to (RFC 6120 §8.3). A message comes back with
/// what it carried (§8.3.1 allows it), so that its sender can tell which
/// one failed by its body.
pub(crate) fn error_for(stanza: &Element, to: &str, kind: &str, condition: &str) -> Element {
    let mut error = Element::new(&stanza.name, ns::CLIENT).attr("type", "error").attr("to", to);
    for name in ["id", "to"] {
        if let Some(value) = stanza.get(name) {
            error = error.attr(if name == "to" { "from" } else { name }, value);
        }
    }
    if stanza.name == "message" {
        error.children = stanza.children.clone();
    }
    error.child(Element::new("error", ns::CLIENT).attr("type", kind).child(Element::new(condition, ns::STANZA_ERRORS)))
}

/// Rooms listed in one `disco#items` answer at most, and the bytes of
/// their items at most: past either, the answer is a page (XEP-0059) and
/// the client asks for the next, so that a small request never brings a
/// large answer.
const ROOMS_PER_PAGE: usize = 100;
const ROOMS_PAGE_BYTES: usize = 16 * 1024;

/// One page of the listed rooms, after the room `<after/>` names and at
/// most `<max/>` of them, with the `<set/>` that says where it is.
fn rooms_page(listed: &[(Arc<str>, String)], muc_domain: &str, set: Option<&Element>) -> Element {
    let asked = |name: &str| set.and_then(|s| s.find(name, ns::RSM)).map(Element::text_content);
    let max = asked("max").and_then(|m| m.parse().ok()).unwrap_or(ROOMS_PER_PAGE).min(ROOMS_PER_PAGE);
    // `<after/>` is the last room JID of the page before; the list is sorted by room.
    let start = match asked("after") {
        Some(after) => {
            let room = after.strip_suffix(muc_domain).and_then(|r| r.strip_suffix('@'));
            listed.iter().position(|(name, _)| Some(&**name) == room).map_or(listed.len(), |at| at + 1)
        }
        None => 0,
    };
    let mut items = Element::new("query", ns::DISCO_ITEMS);
    let (mut bytes, mut first, mut last) = (0, None, None);
    for (room, name) in listed.iter().skip(start).take(max) {
        let jid = format!("{room}@{muc_domain}");
        let name = if name.is_empty() { &**room } else { name.as_str() };
        bytes += jid.len() + name.len();
        if bytes > ROOMS_PAGE_BYTES && first.is_some() {
            break;
        }
        first.get_or_insert_with(|| jid.clone());
        items = items.child(Element::new("item", ns::DISCO_ITEMS).attr("jid", &jid).attr("name", name));
        last = Some(jid);
    }
    let shown = items.children.len();
    if set.is_some() || shown < listed.len() {
        let mut page = Element::new("set", ns::RSM);
        if let (Some(first), Some(last)) = (first, last) {
            page = page.child(Element::new("first", ns::RSM).attr("index", &start.to_string()).text(&first)).child(Element::new("last", ns::RSM).text(&last));
        }
        items = items.child(page.child(Element::new("count", ns::RSM).text(&listed.len().to_string())));
    }
    items
}

/// `info` with a `<feature var=…/>` for each of `vars`.
fn features(mut info: Element, vars: &[&str]) -> Element {
    for var in vars {
        info = info.child(Element::new("feature", ns::DISCO_INFO).attr("var", var));
    }
    info
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rooms(n: usize, name_len: usize) -> Vec<(Arc<str>, String)> {
        (0..n).map(|i| (Arc::from(format!("r{i:04}")), "n".repeat(name_len))).collect()
    }

    fn jids(page: &Element) -> Vec<String> {
        page.elements().filter(|e| e.name == "item").map(|e| e.get("jid").unwrap_or_default().to_owned()).collect()
    }

    #[test]
    fn the_room_list_comes_in_pages_bounded_in_count_and_bytes() {
        let few = rooms_page(&rooms(3, 4), "c.l", None);
        assert_eq!(few.to_xml(ns::CLIENT), r#"<query xmlns="http://jabber.org/protocol/disco#items"><item jid="r0000@c.l" name="nnnn"/><item jid="r0001@c.l" name="nnnn"/><item jid="r0002@c.l" name="nnnn"/></query>"#);
        let many = rooms(250, 4);
        let first = rooms_page(&many, "c.l", None);
        assert_eq!(jids(&first).len(), ROOMS_PER_PAGE);
        let set = first.find("set", ns::RSM).unwrap();
        assert_eq!(set.find("count", ns::RSM).unwrap().text_content(), "250");
        let last = set.find("last", ns::RSM).unwrap().text_content();
        assert_eq!(last, "r0099@c.l");
        let ask = Element::new("set", ns::RSM).child(Element::new("max", ns::RSM).text("10")).child(Element::new("after", ns::RSM).text(&last));
        assert_eq!(jids(&rooms_page(&many, "c.l", Some(&ask))), (100..110).map(|i| format!("r{i:04}@c.l")).collect::<Vec<_>>());
        // Long names: the page ends at its byte bound, whatever the count.
        let long = rooms_page(&rooms(400, 256), "c.l", None);
        let bytes: usize = long.elements().filter(|e| e.name == "item").map(|e| e.attrs.iter().map(|(_, v)| v.len()).sum::<usize>()).sum();
        assert!(bytes <= ROOMS_PAGE_BYTES && jids(&long).len() < ROOMS_PER_PAGE, "{bytes} bytes in {} items", jids(&long).len());
    }
}
