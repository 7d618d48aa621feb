//! How a room's events travel between nodes: the NATS subjects, the names'
//! keys, and each event as a NATS message (headers and body). Every node
//! of a cluster must run the same encoding; these tests fix it to the byte.
//!
//! - A room's events go to `sb.r.<app>.<room>.m` when they are kept in its
//!   history (chat messages) and `sb.r.<app>.<room>.e` otherwise (presence,
//!   broadcast). `<app>` is the app's mount prefix and `<room>` the room
//!   name, each base64url without padding (so any room name makes one
//!   subject token).
//! - A claimed name is the key `<app>.<room>.<name>` of the names bucket,
//!   `<name>` being the base64url of the name's comparison form; its value
//!   is `{"node":"…","name":"…","speaks":"…"}` (the node holding it, the
//!   shown name, and its member's protocol: `app`, `xmpp` or `irc`).
//! - Each message has the header `Sb-Node` (the node that published it) and
//!   `Sb-Kind`: `text` or `binary` for an app's opaque data, carried as the
//!   body; `event` for a room event, whose body is JSON:
//!   `{"event":"message","name":"…","text":"…"}`, `{"event":"notice",…}` as
//!   a message, `{"event":"announcement","text":"…"}` (the room's own), `{"event":"join","name":"…"}` or `{"event":"leave","name":"…"}`
//!   (with `"reason":"…"` and `"quit":true` when given). A message kept in its room's
//!   archive also has `Sb-Id`, its id there; one whose sender gave
//!   client-only tags, `Sb-Tags`; one whose sender is logged in to an
//!   account, `Sb-Account`, its name; one whose sender cut lines without
//!   a line break, `Sb-Cuts`, where (byte offsets, `3,17`).

use std::sync::Arc;

use async_nats::HeaderMap;
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use bytes::Bytes;
use hub::{Payload, RoomEvent};
use serde::{Deserialize, Serialize};
use tokio_tungstenite::tungstenite::{Message, Utf8Bytes};

/// The stream that holds every room's events.
pub const STREAM: &str = "SB_ROOMS";
/// The subjects the stream takes.
pub const STREAM_SUBJECTS: &str = "sb.r.>";
/// The key-value bucket of claimed names.
pub const NAMES: &str = "sb_names";
/// Where each node says it is alive: `sb.node.<node>`.
pub const HEARTBEATS: &str = "sb.node.>";

const NODE: &str = "Sb-Node";
const KIND: &str = "Sb-Kind";
const ID: &str = "Sb-Id";
/// Header of a payload's client-only tags (IRCv3 `+…`), as IRC writes
/// them: escaped, so neither spaces nor line ends.
const TAGS: &str = "Sb-Tags";
/// Header of the account a payload's sender is logged in to.
const ACCOUNT: &str = "Sb-Account";
/// Present on an event its sender, a bot, sent (`hub::Payload::bot`).
const BOT: &str = "Sb-Bot";
/// Header of where a payload's sender cut lines without a line break.
const CUTS: &str = "Sb-Cuts";

/// One subject token for any text.
pub fn token(text: &str) -> String {
    URL_SAFE_NO_PAD.encode(text)
}

/// The text a subject token stands for, if it is one.
pub fn untoken(token: &str) -> Option<String> {
    URL_SAFE_NO_PAD.decode(token).ok().and_then(|bytes| String::from_utf8(bytes).ok())
}

/// The subject prefix of a room: `sb.r.<app>.<room>.`.
pub fn room_subject(app: &str, room: &str) -> String {
    format!("sb.r.{app}.{}.", token(room))
}

/// The names-bucket key of `name_key` (a name's comparison form) in a room.
pub fn name_key(app: &str, room: &str, name_key: &str) -> String {
    format!("{app}.{}.{}", token(room), token(name_key))
}

/// The key prefix (with its trailing dot) of every name claimed in a room.
pub fn names_of(app: &str, room: &str) -> String {
    format!("{app}.{}.", token(room))
}

/// A claimed name's value: who holds it, and the protocol its member speaks
/// (`app`, `xmpp` or `irc`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Claim {
    pub node: Arc<str>,
    pub name: Arc<str>,
    pub speaks: Arc<str>,
}

impl Claim {
    pub fn to_bytes(&self) -> Bytes {
        Bytes::from(serde_json::to_vec(self).unwrap_or_default())
    }
}

/// A room event as JSON: `{"event":"message","name":"…","text":"…"}` …
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "event", rename_all = "lowercase")]
pub enum Event {
    Message {
        name: Arc<str>,
        text: Arc<str>,
    },
    Notice {
        name: Arc<str>,
        text: Arc<str>,
    },
    Announcement {
        text: Arc<str>,
    },
    Join {
        name: Arc<str>,
        /// The name it had, when it changed it.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        old_name: Option<Arc<str>>,
    },
    Leave {
        name: Arc<str>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reason: Option<Arc<str>>,
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        quit: bool,
        /// Who took it out (IRC's `KICK`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        by: Option<Arc<str>>,
        /// The name it took, when it changed it.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        new_name: Option<Arc<str>>,
    },
    Tags {
        name: Arc<str>,
        tags: Arc<str>,
    },
    Topic {
        name: Arc<str>,
        text: Arc<str>,
    },
}

impl From<RoomEvent> for Event {
    fn from(event: RoomEvent) -> Event {
        match event {
            RoomEvent::Message { name, text } => Event::Message { name, text },
            RoomEvent::Notice { name, text } => Event::Notice { name, text },
            RoomEvent::Announcement { text } => Event::Announcement { text },
            RoomEvent::Join { name, old_name } => Event::Join { name, old_name },
            RoomEvent::Leave { name, reason, quit, by, new_name } => Event::Leave { name, reason, quit, by, new_name },
            RoomEvent::Tags { name, tags } => Event::Tags { name, tags },
            RoomEvent::Topic { name, text } => Event::Topic { name, text },
        }
    }
}

impl From<Event> for RoomEvent {
    fn from(event: Event) -> RoomEvent {
        match event {
            Event::Message { name, text } => RoomEvent::Message { name, text },
            Event::Notice { name, text } => RoomEvent::Notice { name, text },
            Event::Announcement { text } => RoomEvent::Announcement { text },
            Event::Join { name, old_name } => RoomEvent::Join { name, old_name },
            Event::Leave { name, reason, quit, by, new_name } => RoomEvent::Leave { name, reason, quit, by, new_name },
            Event::Tags { name, tags } => RoomEvent::Tags { name, tags },
            Event::Topic { name, text } => RoomEvent::Topic { name, text },
        }
    }
}

/// A payload as the headers and body of a NATS message from `node`.
pub fn encode(node: &str, payload: &Payload) -> (HeaderMap, Bytes) {
    let (kind, body) = match payload.as_event() {
        Some((_, event)) => ("event", Bytes::from(serde_json::to_vec(&Event::from(event.clone())).unwrap_or_default())),
        None => match payload.ws_message() {
            Message::Binary(data) => ("binary", data),
            message => ("text", Bytes::copy_from_slice(message.to_text().unwrap_or_default().as_bytes())),
        },
    };
    let mut headers = HeaderMap::new();
    headers.insert(NODE, node);
    headers.insert(KIND, kind);
    if let Some(id) = payload.id() {
        headers.insert(ID, id);
    }
    if let Some(tags) = payload.client_tags() {
        headers.insert(TAGS, tags);
    }
    if let Some(account) = payload.account() {
        headers.insert(ACCOUNT, account);
    }
    if !payload.cuts().is_empty() {
        headers.insert(CUTS, cuts_text(payload.cuts()).as_str());
    }
    if payload.bot() {
        headers.insert(BOT, "1");
    }
    (headers, body)
}

/// Cuts as the header and the link write them: `3,17`.
pub fn cuts_text(cuts: &[u32]) -> String {
    cuts.iter().map(u32::to_string).collect::<Vec<_>>().join(",")
}

/// Cuts read back from [`cuts_text`]; what is not a number is skipped.
pub fn cuts_of(text: &str) -> Arc<[u32]> {
    text.split(',').filter_map(|n| n.parse().ok()).collect()
}

/// A NATS message of `room` decoded: the node that sent it and the payload.
#[derive(Debug)]
pub struct Received {
    pub node: Arc<str>,
    pub payload: Payload,
}

/// Why a message from the broker was not understood.
#[derive(Debug, thiserror::Error)]
pub enum DecodeError {
    #[error("no {0} header")]
    Missing(&'static str),
    #[error("unknown kind {0:?}")]
    Kind(String),
    #[error("text is not UTF-8")]
    NotUtf8,
    #[error("bad event: {0}")]
    Event(#[from] serde_json::Error),
}

/// Decodes a message of `room` published by [`encode`].
pub fn decode(room: &Arc<str>, headers: Option<&HeaderMap>, body: Bytes, at: std::time::SystemTime) -> Result<Received, DecodeError> {
    let header = |name: &'static str| headers.and_then(|h| h.get(name)).map(|v| v.as_str().to_owned()).ok_or(DecodeError::Missing(name));
    let node: Arc<str> = Arc::from(header(NODE)?);
    let payload = match header(KIND)?.as_str() {
        "text" => Payload::new(Utf8Bytes::try_from(body).map_err(|_| DecodeError::NotUtf8)?),
        "binary" => Payload::binary(body),
        "event" => {
            let event = RoomEvent::from(serde_json::from_slice::<Event>(&body)?);
            let id: Option<Arc<str>> = headers.and_then(|h| h.get(ID)).map(|v| Arc::from(v.as_str()));
            // Later ids here rise above it, whatever this node's clock says.
            if let Some(id) = &id {
                base::archive::observe_id(id);
            }
            let tags = headers.and_then(|h| h.get(TAGS)).map(|v| Arc::from(v.as_str()));
            let account = headers.and_then(|h| h.get(ACCOUNT)).map(|v| Arc::from(v.as_str()));
            let cuts = headers.and_then(|h| h.get(CUTS)).map(|v| cuts_of(v.as_str()));
            let bot = headers.is_some_and(|h| h.get(BOT).is_some());
            Payload::archived(room.clone(), event, at, id).with_client_tags(tags).with_account(account).with_cuts(cuts).with_bot(bot)
        }
        other => return Err(DecodeError::Kind(other.to_owned())),
    };
    Ok(Received { node, payload })
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    #[test]
    fn subjects_and_keys_are_one_token_per_name() {
        assert_eq!(room_subject("chat", "a.b c>*"), "sb.r.chat.YS5iIGM-Kg.");
        assert_eq!(name_key("chat", "lobby", "ålice"), "chat.bG9iYnk.w6VsaWNl");
        assert_eq!(names_of("chat", "lobby"), "chat.bG9iYnk.");
        let claim = Claim { node: "n1".into(), name: "Ålice".into(), speaks: "irc".into() };
        assert_eq!(claim.to_bytes().as_ref(), "{\"node\":\"n1\",\"name\":\"Ålice\",\"speaks\":\"irc\"}".as_bytes());
    }

    #[test]
    fn events_are_json_and_data_goes_as_it_is() {
        let room: Arc<str> = Arc::from("lobby");
        let cases = [
            (Payload::event(room.clone(), RoomEvent::Message { name: "al".into(), text: "hi".into() }), "event", &br#"{"event":"message","name":"al","text":"hi"}"#[..]),
            (Payload::event(room.clone(), RoomEvent::join("al".into())), "event", br#"{"event":"join","name":"al"}"#),
            (Payload::event(room.clone(), RoomEvent::leave("al".into())), "event", br#"{"event":"leave","name":"al"}"#),
            (
                Payload::event(room.clone(), RoomEvent::Leave { name: "al".into(), reason: Some("bye".into()), quit: true, by: None, new_name: None }),
                "event",
                br#"{"event":"leave","name":"al","reason":"bye","quit":true}"#,
            ),
            (
                Payload::event(room.clone(), RoomEvent::Leave { name: "al".into(), reason: Some("spam".into()), quit: false, by: Some("op".into()), new_name: None }),
                "event",
                br#"{"event":"leave","name":"al","reason":"spam","by":"op"}"#,
            ),
            (Payload::event(room.clone(), RoomEvent::rename("al".into(), "alice".into())[0].clone()), "event", br#"{"event":"leave","name":"al","new_name":"alice"}"#),
            (Payload::event(room.clone(), RoomEvent::rename("al".into(), "alice".into())[1].clone()), "event", br#"{"event":"join","name":"alice","old_name":"al"}"#),
            (Payload::event(room.clone(), RoomEvent::Notice { name: "al".into(), text: "fyi".into() }), "event", br#"{"event":"notice","name":"al","text":"fyi"}"#),
            (Payload::event(room.clone(), RoomEvent::Announcement { text: "closing".into() }), "event", br#"{"event":"announcement","text":"closing"}"#),
            (Payload::archived(room.clone(), RoomEvent::Message { name: "al".into(), text: "kept".into() }, std::time::SystemTime::now(), Some("01".into())), "event", br#"{"event":"message","name":"al","text":"kept"}"#),
            (
                Payload::event(room.clone(), RoomEvent::Message { name: "al".into(), text: "typing".into() })
                    .with_client_tags(Some("+typing=active;+x=a\\sb".into()))
                    .with_account(Some("Ålice's account".into()))
                    .with_cuts(Some(Arc::from([2u32, 5])))
                    .with_bot(true),
                "event",
                br#"{"event":"message","name":"al","text":"typing"}"#,
            ),
            (Payload::event(room.clone(), RoomEvent::Tags { name: "al".into(), tags: "+typing=paused".into() }), "event", br#"{"event":"tags","name":"al","tags":"+typing=paused"}"#),
            (Payload::event(room.clone(), RoomEvent::Topic { name: "al".into(), text: "plans".into() }), "event", br#"{"event":"topic","name":"al","text":"plans"}"#),
            (Payload::from("plain"), "text", b"plain"),
            (Payload::binary(vec![0u8, 255]), "binary", &[0, 255]),
        ];
        for (payload, kind, body) in cases {
            let (headers, bytes) = encode("n1", &payload);
            assert_eq!(headers.get("Sb-Kind").map(|v| v.as_str()), Some(kind));
            assert_eq!(headers.get("Sb-Node").map(|v| v.as_str()), Some("n1"));
            assert_eq!(bytes.as_ref(), body);
            assert_eq!(headers.get("Sb-Id").map(|v| v.as_str()), payload.id());
            assert_eq!(headers.get("Sb-Tags").map(|v| v.as_str()), payload.client_tags());
            assert_eq!(headers.get("Sb-Account").map(|v| v.as_str()), payload.account());
            assert_eq!(headers.get("Sb-Cuts").map(|v| v.as_str()), (!payload.cuts().is_empty()).then_some("2,5"));
            assert_eq!(headers.get("Sb-Bot").map(|v| v.as_str()), payload.bot().then_some("1"));
            let at = std::time::SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(1_800_000_000);
            let back = decode(&room, Some(&headers), bytes, at).unwrap();
            assert_eq!(&*back.node, "n1");
            if back.payload.as_event().is_some() {
                assert_eq!(back.payload.at(), at, "an event keeps the time the stream stored it");
            }
            assert_eq!(back.payload.ws_message(), payload.ws_message());
            assert_eq!(back.payload.id(), payload.id());
            assert_eq!(back.payload.client_tags(), payload.client_tags());
            assert_eq!(back.payload.account(), payload.account());
            assert_eq!(back.payload.cuts(), payload.cuts());
            assert_eq!(back.payload.bot(), payload.bot());
            assert_eq!(back.payload.as_event().map(|(_, e)| e.clone()), payload.as_event().map(|(_, e)| e.clone()));
        }
    }

    /// Held by each test of this process's ids: one's observed id would
    /// otherwise lift the ids another asserts on.
    pub(crate) static STAMPING: parking_lot::Mutex<()> = parking_lot::Mutex::new(());

    /// An id 20 s past this process's last one: what another node whose
    /// clock is ahead would make.
    pub(crate) fn an_id_ahead() -> String {
        let (last, _) = base::archive::next_id();
        base::archive::id_of(last + 20_000_000, 1)
    }

    #[test]
    fn an_archive_id_from_another_node_holds_later_ids_here_above_it() {
        let _alone = STAMPING.lock();
        let room: Arc<str> = Arc::from("lobby");
        let theirs = an_id_ahead();
        let payload = Payload::event(room.clone(), RoomEvent::Message { name: "al".into(), text: "hi".into() }).kept_as(std::time::SystemTime::now(), Arc::from(theirs.as_str()));
        let (headers, bytes) = encode("n2", &payload);
        decode(&room, Some(&headers), bytes, std::time::SystemTime::now()).unwrap();
        let (_, ours) = base::archive::next_id();
        assert!(ours > theirs, "{ours} after {theirs}");
    }

    #[test]
    fn what_is_not_understood_is_an_error() {
        let room: Arc<str> = Arc::from("r");
        assert!(matches!(decode(&room, None, Bytes::new(), std::time::SystemTime::now()), Err(DecodeError::Missing("Sb-Node"))));
        let mut headers = HeaderMap::new();
        headers.insert(NODE, "n");
        headers.insert(KIND, "text");
        assert!(matches!(decode(&room, Some(&headers), Bytes::from_static(&[0xff]), std::time::SystemTime::now()), Err(DecodeError::NotUtf8)));
        headers.insert(KIND, "event");
        assert!(matches!(decode(&room, Some(&headers), Bytes::from_static(b"{}"), std::time::SystemTime::now()), Err(DecodeError::Event(_))));
        headers.insert(KIND, "smoke");
        assert!(matches!(decode(&room, Some(&headers), Bytes::new(), std::time::SystemTime::now()), Err(DecodeError::Kind(_))));
    }
}
