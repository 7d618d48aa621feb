//! A published message, shared by every recipient.

use std::sync::{Arc, OnceLock};
use std::time::SystemTime;

use crate::RoomEvent;

use base64::Engine;
use bytes::Bytes;
use tokio_tungstenite::tungstenite::{Message, Utf8Bytes};

/// One application message on its way out, text or binary, cheap to clone
/// (one pointer).
///
/// An app's opaque data (echo, broadcast) is kept in the form the WebSocket
/// writer sends as-is. A room event ([`RoomEvent`]) is kept typed, and its
/// chat JSON is encoded the first time a recipient needs it. Other framings
/// (SockJS's escaped JSON string) are likewise encoded on first use and
/// cached ([`Form`]): each encoding is made once per message however many
/// members receive it.
#[derive(Clone, Debug)]
pub struct Payload(Arc<Inner>);

/// The encodings transports keep on a payload, each made by the transport on
/// first use and shared by every recipient after.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Form {
    /// A SockJS JSON string literal.
    SockjsJson,
    /// A whole WebSocket data frame.
    WsFrame,
    /// A whole WebSocket data frame compressed for permessage-deflate with the
    /// full window and no context takeover.
    WsDeflatedFrame,
    /// A whole WebSocket text frame of SockJS over WebSocket, `a[...]`.
    SockjsWsFrame,
    /// IRC lines with the IRCv3 tags a set of capabilities asks for, one
    /// form per set (the IRC crate numbers them, below [`IRC_FORMS`]).
    Irc(u8),
}

/// How many sets of IRC tags have a form of their own.
pub const IRC_FORMS: u8 = 8;

const FORMS: usize = 4 + IRC_FORMS as usize;

impl Form {
    fn index(self) -> usize {
        match self {
            Form::SockjsJson => 0,
            Form::WsFrame => 1,
            Form::WsDeflatedFrame => 2,
            Form::SockjsWsFrame => 3,
            Form::Irc(set) => 4 + (set % IRC_FORMS) as usize,
        }
    }
}

/// Where a kept message sits in its room's history: its `offset`, greater
/// than every message kept before it in the room, counted in the history
/// named `epoch`, which changes when the room's history is lost (a room
/// opened again, a restart, another stream between nodes). A client that
/// comes back with a position gets what came after it (see `wire::app::Since`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Position {
    pub offset: u64,
    pub epoch: Arc<str>,
}

#[derive(Debug)]
struct Inner {
    data: Data,
    /// Its position in its room's history, once kept there; set before any
    /// form is made (the chat JSON carries it).
    position: OnceLock<Position>,
    /// One slot per [`Form`]; `None` in a slot: the encoder declined.
    forms: [OnceLock<Option<Bytes>>; FORMS],
    /// When it was published (a room's history tells it, e.g. to XMPP).
    at: SystemTime,
    /// Its id in its room's archive, if it was archived.
    id: Option<Arc<str>>,
    /// What its sender gave beside the event, if it gave anything: most
    /// payloads hold none of it.
    sent: Option<Box<Sent>>,
    /// Its name where a protocol names every message (IRC's `msgid`) and
    /// the archive gave it none: made on first use.
    named: OnceLock<Arc<str>>,
}

/// What a payload's sender gave beside its event.
#[derive(Debug, Clone, Default)]
struct Sent {
    /// The client-only tags (IRCv3 `+…`) its sender gave it, as IRC
    /// writes them.
    client_tags: Option<Arc<str>>,
    /// The account its sender is logged in to (IRCv3 `account-tag` names
    /// it): a member of any protocol, on any node.
    account: Option<Arc<str>>,
    /// Where its sender cut a line of its text in two without a line
    /// break (IRCv3 multiline's `draft/multiline-concat`), as byte offsets
    /// into the text, ascending: how IRC clients are to be shown its lines.
    cuts: Option<Arc<[u32]>>,
    /// Its sender marked itself a bot (IRCv3 bot mode, IRC's user mode
    /// `+B`): IRC clients that read tags are shown a `bot` tag.
    bot: bool,
}

/// A copy carries what the payload was given (its data, time, ids and
/// tags); its encodings, its position and a made `msgid` are made again
/// for the copy.
impl Clone for Inner {
    fn clone(&self) -> Inner {
        let data = match &self.data {
            Data::Event { room, event, .. } => Data::Event { room: room.clone(), event: event.clone(), json: OnceLock::new() },
            Data::Text(text) => Data::Text(text.clone()),
            Data::Binary(data) => Data::Binary(data.clone()),
        };
        Inner {
            data,
            position: OnceLock::new(),
            forms: Default::default(),
            at: self.at,
            id: self.id.clone(),
            sent: self.sent.clone(),
            named: OnceLock::new(),
        }
    }
}

#[derive(Debug)]
enum Data {
    Text(Utf8Bytes),
    Binary(Bytes),
    Event { room: Arc<str>, event: RoomEvent, json: OnceLock<Utf8Bytes> },
}

impl Payload {
    /// Wraps application text.
    pub fn new(text: impl Into<Utf8Bytes>) -> Payload {
        Payload::of(Data::Text(text.into()))
    }

    /// Wraps binary application data.
    pub fn binary(data: impl Into<Bytes>) -> Payload {
        Payload::of(Data::Binary(data.into()))
    }

    /// A typed event of `room`.
    pub fn event(room: impl Into<Arc<str>>, event: RoomEvent) -> Payload {
        Payload::event_at(room, event, SystemTime::now())
    }

    /// A typed event of `room` published at `at` (one that comes from
    /// another node's history).
    pub fn event_at(room: impl Into<Arc<str>>, event: RoomEvent, at: SystemTime) -> Payload {
        Payload::archived(room, event, at, None)
    }

    /// A typed event of `room` published at `at`, kept in its room's
    /// archive under `id` (if it was).
    pub fn archived(room: impl Into<Arc<str>>, event: RoomEvent, at: SystemTime, id: Option<Arc<str>>) -> Payload {
        let data = Data::Event { room: room.into(), event, json: OnceLock::new() };
        Payload(Arc::new(Inner { data, position: OnceLock::new(), forms: Default::default(), at, id, sent: None, named: OnceLock::new() }))
    }

    /// This payload with `given`, a part of what its sender gave, put in
    /// place by `put`: set in place while nobody else holds it yet, as when
    /// it is published. Nothing given to a payload that holds nothing
    /// leaves it as it is.
    fn with_sent<T>(self, given: Option<T>, put: impl FnOnce(&mut Sent, Option<T>)) -> Payload {
        let mut payload = self;
        if given.is_none() && payload.0.sent.is_none() {
            return payload;
        }
        put(Arc::make_mut(&mut payload.0).sent.get_or_insert_default(), given);
        payload
    }

    fn sent(&self) -> Option<&Sent> {
        self.0.sent.as_deref()
    }

    /// This payload with the client-only tags its sender gave it.
    pub fn with_client_tags(self, tags: Option<Arc<str>>) -> Payload {
        self.with_sent(tags, |sent, tags| sent.client_tags = tags)
    }

    /// The client-only tags (IRCv3 `+…`) its sender gave it, if any.
    pub fn client_tags(&self) -> Option<&str> {
        self.sent()?.client_tags.as_deref()
    }

    /// This payload with the account its sender is logged in to.
    pub fn with_account(self, account: Option<Arc<str>>) -> Payload {
        self.with_sent(account, |sent, account| sent.account = account)
    }

    /// The account its sender is logged in to, if any.
    pub fn account(&self) -> Option<&str> {
        self.sent()?.account.as_deref()
    }

    /// This payload with where its sender cut lines without a line break
    /// (empty for nowhere).
    pub fn with_cuts(self, cuts: Option<Arc<[u32]>>) -> Payload {
        self.with_sent(cuts.filter(|c| !c.is_empty()), |sent, cuts| sent.cuts = cuts)
    }

    /// Where its sender cut lines of its text without a line break.
    pub fn cuts(&self) -> &[u32] {
        self.sent().and_then(|sent| sent.cuts.as_deref()).unwrap_or_default()
    }

    /// This payload marked as sent by a bot, if `bot`.
    pub fn with_bot(self, bot: bool) -> Payload {
        self.with_sent(bot.then_some(()), |sent, bot| sent.bot = bot.is_some())
    }

    /// Whether its sender marked itself a bot.
    pub fn bot(&self) -> bool {
        self.sent().is_some_and(|sent| sent.bot)
    }

    /// Its name for a protocol that names every message (IRC's `msgid`):
    /// its archive id, or else one `make` makes the first time it is asked,
    /// the same for every recipient of this payload on this node.
    pub fn msgid(&self, make: impl FnOnce() -> String) -> &str {
        match &self.0.id {
            Some(id) => id,
            None => self.0.named.get_or_init(|| Arc::from(make())),
        }
    }

    /// This payload as kept in its room's archive at `at` under `id`: set
    /// in place while nobody else holds it yet, as when it is published.
    pub fn kept_as(self, at: SystemTime, id: Arc<str>) -> Payload {
        let mut payload = self;
        // Only a room event is kept; other data someone holds stays as it is.
        if Arc::get_mut(&mut payload.0).is_none() && !matches!(payload.0.data, Data::Event { .. }) {
            return payload;
        }
        let inner = Arc::make_mut(&mut payload.0);
        inner.at = at;
        inner.id = Some(id);
        payload
    }

    fn of(data: Data) -> Payload {
        Payload(Arc::new(Inner { data, position: OnceLock::new(), forms: Default::default(), at: SystemTime::now(), id: None, sent: None, named: OnceLock::new() }))
    }

    /// When it was published.
    pub fn at(&self) -> SystemTime {
        self.0.at
    }

    /// Its id in its room's archive, if it was archived.
    pub fn id(&self) -> Option<&str> {
        self.0.id.as_deref()
    }

    /// Its position in its room's history, if it was kept there.
    pub fn position(&self) -> Option<&Position> {
        self.0.position.get()
    }

    /// Gives it its position in its room's history, unless it has one;
    /// `false` if it had. Done before anything reads its chat JSON.
    pub fn place(&self, position: Position) -> bool {
        self.0.position.set(position).is_ok()
    }

    /// Length of the application data in bytes.
    pub fn len(&self) -> usize {
        match &self.0.data {
            Data::Text(text) => text.len(),
            Data::Binary(data) => data.len(),
            Data::Event { .. } => self.text().len(),
        }
    }

    /// Whether the data is empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The text, if this is text; a room event's is its chat JSON.
    pub fn as_text(&self) -> Option<&str> {
        match &self.0.data {
            Data::Binary(_) => None,
            _ => Some(self.text().as_str()),
        }
    }

    /// The room event and its room, if this is one.
    pub fn as_event(&self) -> Option<(&Arc<str>, &RoomEvent)> {
        match &self.0.data {
            Data::Event { room, event, .. } => Some((room, event)),
            _ => None,
        }
    }

    /// The text form; empty for binary data.
    fn text(&self) -> &Utf8Bytes {
        static NONE: OnceLock<Utf8Bytes> = OnceLock::new();
        match &self.0.data {
            Data::Text(text) => text,
            Data::Event { room, event, json } => json.get_or_init(|| Utf8Bytes::from(event.chat_json(room, self.position()))),
            Data::Binary(_) => NONE.get_or_init(|| Utf8Bytes::from_static("")),
        }
    }

    /// Whether this is binary data rather than text.
    pub fn is_binary(&self) -> bool {
        matches!(self.0.data, Data::Binary(_))
    }

    /// The message as a WebSocket text or binary message (shares the bytes).
    pub fn ws_message(&self) -> Message {
        match &self.0.data {
            Data::Binary(data) => Message::Binary(data.clone()),
            _ => Message::Text(self.text().clone()),
        }
    }

    /// The data's bytes: the text's, or the binary data.
    pub fn data(&self) -> &[u8] {
        match &self.0.data {
            Data::Binary(data) => data,
            _ => self.text().as_bytes(),
        }
    }

    /// The payload in `form`, made by `encode` on first use and cached, so it
    /// is made once for every recipient; `None` if `encode` declined (that
    /// too is remembered).
    pub fn form(&self, form: Form, encode: impl FnOnce(&Payload) -> Option<Bytes>) -> Option<&Bytes> {
        self.0.forms[form.index()].get_or_init(|| encode(self)).as_ref()
    }

    /// The message as a SockJS JSON string literal, escaped the way browsers
    /// need it; computed by `encode` on first use and cached. SockJS carries
    /// only text, so binary data goes as its base64 text (RFC 4648, padded).
    pub fn sockjs_json(&self, encode: impl FnOnce(&str) -> Bytes) -> &Bytes {
        let json = self.form(Form::SockjsJson, |p| {
            Some(match &p.0.data {
                Data::Binary(data) => encode(&base64::engine::general_purpose::STANDARD.encode(data)),
                _ => encode(p.text().as_str()),
            })
        });
        json.expect("the SockJS encoding never declines")
    }
}

impl From<String> for Payload {
    fn from(text: String) -> Payload {
        Payload::new(text)
    }
}

impl From<&'static str> for Payload {
    fn from(text: &'static str) -> Payload {
        Payload::new(text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn framings_are_encoded_once_and_shared() {
        let p = Payload::from("hi");
        let q = p.clone();
        let mut calls = 0;
        let a = p.sockjs_json(|s| {
            calls += 1;
            Bytes::from(format!("\"{s}\""))
        });
        assert_eq!(a.as_ref(), b"\"hi\"");
        let b = q.sockjs_json(|_| unreachable!("cached"));
        assert_eq!(b.as_ptr(), a.as_ptr());
        assert_eq!(calls, 1);
        assert_eq!(p.ws_message(), Message::text("hi"));
    }

    #[test]
    fn each_form_is_made_once_and_shared() {
        let p = Payload::binary(vec![7u8; 100]);
        let q = p.clone();
        let a = p.form(Form::WsDeflatedFrame, |p| Some(Bytes::copy_from_slice(&p.data()[..3]))).expect("made");
        assert_eq!(a.as_ref(), [7, 7, 7]);
        assert_eq!(q.form(Form::WsDeflatedFrame, |_| unreachable!("cached")).map(|b| b.as_ptr()), Some(a.as_ptr()));
        let frame = q.form(Form::WsFrame, |p| Some(Bytes::copy_from_slice(&p.data()[..1]))).expect("a form of its own");
        assert_eq!(frame.as_ref(), [7]);
        let x = Payload::from("x");
        assert_eq!(x.form(Form::WsDeflatedFrame, |_| None), None);
        assert_eq!(x.form(Form::WsDeflatedFrame, |_| unreachable!("a declined form is remembered too")), None);
        assert_eq!(x.data(), b"x");
    }

    #[test]
    fn binary_goes_to_websocket_as_binary_and_to_sockjs_as_base64() {
        let p = Payload::binary(vec![0u8, 0xff, 0x80, b'a']);
        assert!(p.is_binary());
        assert_eq!(p.len(), 4);
        assert_eq!(p.ws_message(), Message::binary(vec![0u8, 0xff, 0x80, b'a']));
        let quoted = p.sockjs_json(|s| Bytes::from(format!("\"{s}\"")));
        assert_eq!(quoted.as_ref(), b"\"AP+AYQ==\"");
    }

    #[test]
    fn an_archived_payload_takes_its_id_in_place_unless_it_is_shared() {
        let event = || RoomEvent::Message { name: "ann".into(), text: "hi".into() };
        let at = SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(7);
        let fresh = Payload::event("lobby", event());
        let before = Arc::as_ptr(&fresh.0);
        let kept = fresh.kept_as(at, Arc::from("id1"));
        assert_eq!((Arc::as_ptr(&kept.0), kept.id(), kept.0.at), (before, Some("id1"), at), "the same payload, given its id");
        let shared = Payload::event("lobby", event());
        let other = shared.clone();
        let kept = shared.kept_as(at, Arc::from("id2"));
        assert_eq!((kept.id(), other.id()), (Some("id2"), None), "a copy, the shared one untouched");
        assert_eq!(kept.as_event().map(|(room, e)| (room.to_string(), e.clone())), Some(("lobby".to_owned(), event())));
    }

    #[test]
    fn an_event_is_encoded_as_chat_json_once() {
        let p = Payload::event("lobby", RoomEvent::Message { name: "alice".into(), text: "hi \"you\"".into() });
        let json = r#"{"name":"alice","room":"lobby","message":"hi \"you\""}"#;
        assert_eq!(p.as_text(), Some(json));
        assert_eq!(p.len(), json.len());
        assert_eq!(p.ws_message(), Message::text(json));
        let Message::Text(a) = p.ws_message() else { unreachable!() };
        let Message::Text(b) = p.clone().ws_message() else { unreachable!() };
        assert_eq!(a.as_str().as_ptr(), b.as_str().as_ptr(), "one encoding, shared");
        let kept = Payload::event("lobby", RoomEvent::Message { name: "al".into(), text: "yo".into() });
        assert!(kept.place(Position { offset: 3, epoch: "e1".into() }));
        assert!(!kept.place(Position { offset: 4, epoch: "e1".into() }), "placed once");
        assert_eq!(kept.as_text(), Some(r#"{"name":"al","room":"lobby","message":"yo","offset":3,"epoch":"e1"}"#));
        let leave = Payload::event("lobby", RoomEvent::leave("bob".into()));
        assert_eq!(leave.as_text(), Some(r#"{"event":"leave","name":"bob","room":"lobby"}"#));
    }
}
