//! The application message formats: what clients of the `chat` and `count`
//! apps send and receive, whatever transport carries them. `echo` and
//! `broadcast` carry opaque text and need no format.
//!
//! Decoders return a typed [`AppError`] whose message is safe to send back to
//! the client inside `{"error":"..."}`.

use serde::{Deserialize, Serialize};

use crate::nickname::{Nickname, NicknameError};

/// Longest user or room name the chat app accepts, in bytes.
pub const MAX_NAME_LEN: usize = 64;

/// A message a client sent that its app could not accept. The connection stays
/// open; the client is told why with [`AppError::to_json`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AppError {
    /// The text is not JSON, or not the JSON object the app expects.
    #[error("malformed message: {0}")]
    Malformed(String),
    /// A chat join whose room is not a room's name ([`is_room_name`]).
    #[error("invalid {field}: must be 1 to {MAX_NAME_LEN} bytes with no control character")]
    InvalidName { field: &'static str },
    /// A chat join whose name breaks the nickname rules (RFC 8266).
    #[error("invalid name: {0}")]
    InvalidNickname(NicknameError),
    /// A chat join to a room that has as many members as it may.
    #[error("room {room:?} is full ({max} members)")]
    RoomFull { room: String, max: usize },
    /// A chat join to a room that has taken too many joins lately.
    #[error("room {room:?} is taking too many joins; try again in a moment")]
    JoinsTooFast { room: String },
    /// A chat join under another name than the client's token gives it.
    #[error("your token names you {token_name:?}; you cannot join as {name:?}")]
    NotYourName { name: String, token_name: String },
    /// A chat join to a room the client's token does not list.
    #[error("your token does not let you join room {room:?}")]
    RoomNotAllowed { room: String },
    /// A chat join for a name already present in the room.
    #[error("name {name:?} is already taken in room {room:?}")]
    NameTaken { name: String, room: String },
    /// A join or message that the rooms' broker could not take (several
    /// nodes, and the broker between them is down or behind).
    #[error("{0}")]
    Broker(String),
    /// A chat message sent before joining.
    #[error("join a room first: {{\"name\":\"...\",\"room\":\"...\"}}")]
    NotJoined,
    /// A count whose answer would not fit in a 64-bit integer.
    #[error("count out of range")]
    CountOutOfRange,
}

impl AppError {
    /// The error as the JSON object sent to the client: `{"error":"..."}`.
    pub fn to_json(&self) -> String {
        serde_json::json!({ "error": self.to_string() }).to_string()
    }
}

/// First message of a chat client: `{"name":"alice","room":"lobby"}`, and
/// from a client coming back, where it was in the room:
/// `…,"since":{"offset":7,"epoch":"…"}` (the last message it saw, or the
/// members event's position if it saw none).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Join {
    pub name: String,
    pub room: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub since: Option<Since>,
}

/// A position in a room's history: the `offset` of a message (each kept
/// message's is greater than the one before it), counted in the history
/// named `epoch`, which changes when the room's history is lost.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Since {
    pub offset: u64,
    pub epoch: String,
}

/// Whether `room` may name a room, in every protocol: 1 to
/// [`MAX_NAME_LEN`] bytes, and no control character (a room's name
/// reaches IRC's lines, XMPP's addresses and the archive).
pub fn is_room_name(room: &str) -> bool {
    !room.is_empty() && room.len() <= MAX_NAME_LEN && !room.chars().any(char::is_control)
}

impl Join {
    /// Parses and validates a join request, and enforces the nickname rules
    /// on its name.
    pub fn parse(text: &str) -> Result<(Join, Nickname), AppError> {
        let join: Join = serde_json::from_str(text).map_err(|e| {
            AppError::Malformed(format!(r#"expected {{"name":"...","room":"..."}}: {e}"#))
        })?;
        if !is_room_name(&join.room) {
            return Err(AppError::InvalidName { field: "room" });
        }
        let name = Nickname::parse(&join.name).map_err(AppError::InvalidNickname)?;
        Ok((join, name))
    }
}

/// A chat message from a joined client: `{"message":"hi"}`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Say {
    pub message: String,
}

impl Say {
    /// Parses a chat message.
    pub fn parse(text: &str) -> Result<Say, AppError> {
        serde_json::from_str(text)
            .map_err(|e| AppError::Malformed(format!(r#"expected {{"message":"..."}}: {e}"#)))
    }
}

/// What the chat app sends to the members of a room.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum ChatEvent {
    /// A member's message: `{"name":"alice","room":"lobby","message":"hi","offset":7,"epoch":"…"}`,
    /// with its position in the room's history (none when it was not kept);
    /// without a name, the room's own (the server API's publish without one).
    Message {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        name: Option<String>,
        room: String,
        message: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        offset: Option<u64>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        epoch: Option<String>,
    },
    /// Someone joined or left: `{"event":"join","name":"alice","room":"lobby"}`.
    /// A member who changed its name (in IRC or XMPP) leaves under the old
    /// one saying the new, then joins under the new one saying the old:
    /// `{"event":"leave","name":"al","room":"lobby","new_name":"alice"}`,
    /// `{"event":"join","name":"alice","room":"lobby","old_name":"al"}`.
    Presence {
        event: Presence,
        name: String,
        room: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        old_name: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        new_name: Option<String>,
    },
    /// Sent to a new member only, before its own join event:
    /// `{"event":"members","room":"lobby","members":["bob","alice"]}`. A list
    /// cut short at [`MAX_MEMBERS_LISTED`] names also says how many there are:
    /// `…,"members":[…],"total":1000}`. It ends with the room's position
    /// (its newest message's): `…,"offset":7,"epoch":"…"}`.
    Members {
        event: MembersTag,
        room: String,
        members: Vec<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        total: Option<usize>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        offset: Option<u64>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        epoch: Option<String>,
    },
    /// Sent to a new member only, after the members list and before its own
    /// join event: the room's last messages, oldest first, each as it was
    /// delivered: `{"event":"history","room":"lobby","messages":[{"name":"bob","room":"lobby","message":"hi"}]}`.
    /// Not sent when the room has kept none. To a client that joined with
    /// `since`, always sent, with `"recovered":true` when it holds exactly
    /// the messages after that position, or `"recovered":false` and the
    /// newest the room kept when they are no longer all there.
    History {
        event: HistoryTag,
        room: String,
        messages: Vec<ChatEvent>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        recovered: Option<bool>,
    },
    /// A member's message of tags and no text, from IRC (`TAGMSG`, IRCv3
    /// message-tags): `{"event":"tags","name":"al","room":"lobby","tags":{"+typing":"active"}}`,
    /// its client-only tags by key, values unescaped. A typing notification
    /// (`+typing`: `active`, `paused`, `done`) or a reaction; never kept.
    Tags {
        event: TagsTag,
        name: String,
        room: String,
        tags: std::collections::BTreeMap<String, String>,
    },
    /// A member set the room's topic, from IRC (`TOPIC`) or XMPP (a MUC
    /// subject): `{"event":"topic","name":"al","room":"lobby","topic":"plans"}`;
    /// an empty topic clears it. Never kept in the history.
    Topic {
        event: TopicTag,
        name: String,
        room: String,
        topic: String,
    },
    /// `{"error":"..."}`.
    Error { error: String },
}

/// The `event` field of a topic event (always `"topic"`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TopicTag {
    Topic,
}

/// The `event` field of a tags event (always `"tags"`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TagsTag {
    Tags,
}

/// The `event` field of the history event (always `"history"`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum HistoryTag {
    History,
}

/// How every history event starts, so that a client can pass over one
/// without decoding it (the bench does: its messages carry old stamps).
pub const HISTORY_EVENT_START: &str = r#"{"event":"history","#;

/// Encodes the history event from the messages' JSON as they were delivered
/// (each a `{"name":…,"room":…,"message":…}` object), without decoding them;
/// with `"recovered"` when the client asked to recover.
pub fn history_json<'a>(room: &str, messages: impl IntoIterator<Item = &'a str>, recovered: Option<bool>) -> String {
    let mut out = String::from(HISTORY_EVENT_START);
    out.push_str(r#""room":"#);
    // A string always serialises.
    out.push_str(&serde_json::to_string(room).unwrap_or_default());
    out.push_str(r#","messages":["#);
    for (i, message) in messages.into_iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push_str(message);
    }
    out.push(']');
    if let Some(recovered) = recovered {
        out.push_str(if recovered { r#","recovered":true"# } else { r#","recovered":false"# });
    }
    out.push('}');
    out
}

/// Most names a members event lists; a bigger room's list is cut short, so
/// a join costs the same however big the room is.
pub const MAX_MEMBERS_LISTED: usize = 100;

/// The `event` field of a presence event.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Presence {
    Join,
    Leave,
}

/// The `event` field of the members list (always `"members"`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum MembersTag {
    Members,
}

impl ChatEvent {
    /// Encodes the event as compact JSON.
    pub fn to_json(&self) -> String {
        // Serialising these plain structs cannot fail.
        serde_json::to_string(self).unwrap_or_default()
    }

    /// Decodes an event (used by clients such as the bench).
    pub fn parse(text: &str) -> Result<ChatEvent, AppError> {
        serde_json::from_str(text).map_err(|e| AppError::Malformed(e.to_string()))
    }
}

/// Encodes `{"name":...,"room":...,"message":...}` without building a
/// [`ChatEvent`], for the hot path where the strings are borrowed.
pub fn chat_message_json(name: &str, room: &str, message: &str) -> String {
    chat_message_json_at(Some(name), room, message, None)
}

/// Encodes a message as [`chat_message_json`] does, with its position in
/// its room's history (`offset`, `epoch`) when it has one; without a name
/// when the room itself says it.
pub fn chat_message_json_at(name: Option<&str>, room: &str, message: &str, position: Option<(u64, &str)>) -> String {
    #[derive(Serialize)]
    struct Borrowed<'a> {
        #[serde(skip_serializing_if = "Option::is_none")]
        name: Option<&'a str>,
        room: &'a str,
        message: &'a str,
        #[serde(skip_serializing_if = "Option::is_none")]
        offset: Option<u64>,
        #[serde(skip_serializing_if = "Option::is_none")]
        epoch: Option<&'a str>,
    }
    let (offset, epoch) = (position.map(|p| p.0), position.map(|p| p.1));
    serde_json::to_string(&Borrowed { name, room, message, offset, epoch }).unwrap_or_default()
}

/// A count-down step, `{"count":N}`, in both directions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Count {
    pub count: i64,
}

impl Count {
    /// Parses `{"count":N}`.
    pub fn parse(text: &str) -> Result<Count, AppError> {
        serde_json::from_str(text)
            .map_err(|e| AppError::Malformed(format!(r#"expected {{"count":N}}: {e}"#)))
    }

    /// The answer to this count: one less.
    pub fn answer(self) -> Result<Count, AppError> {
        self.count
            .checked_sub(1)
            .map(|count| Count { count })
            .ok_or(AppError::CountOutOfRange)
    }

    /// Encodes `{"count":N}`.
    pub fn to_json(self) -> String {
        format!(r#"{{"count":{}}}"#, self.count)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn join_parses_and_validates() {
        let (join, name) = Join::parse(r#"{"name":"alice","room":"lobby"}"#).unwrap();
        assert_eq!(join, Join { name: "alice".into(), room: "lobby".into(), since: None });
        let (back, _) = Join::parse(r#"{"name":"alice","room":"lobby","since":{"offset":7,"epoch":"e1"}}"#).unwrap();
        assert_eq!(back.since, Some(Since { offset: 7, epoch: "e1".into() }));
        assert!(matches!(Join::parse(r#"{"name":"a","room":"b","since":{"offset":-1,"epoch":"e"}}"#), Err(AppError::Malformed(_))));
        assert_eq!(&*name.shown, "alice");
        assert!(matches!(Join::parse("nope"), Err(AppError::Malformed(_))));
        assert!(matches!(Join::parse(r#"{"name":"a"}"#), Err(AppError::Malformed(_))));
        assert_eq!(
            Join::parse(r#"{"name":"","room":"lobby"}"#),
            Err(AppError::InvalidNickname(NicknameError::Empty))
        );
        assert_eq!(
            Join::parse(r#"{"name":"bob\nmallory: hi","room":"lobby"}"#).unwrap_err().to_json(),
            r#"{"error":"invalid name: holds a character names may not use (controls, invisible or direction-changing characters)"}"#
        );
        let long = "x".repeat(MAX_NAME_LEN + 1);
        assert_eq!(
            Join::parse(&format!(r#"{{"name":"a","room":"{long}"}}"#)),
            Err(AppError::InvalidName { field: "room" })
        );
        assert_eq!(
            Join::parse(r#"{"name":"a","room":"lob\u0000by"}"#).unwrap_err().to_json(),
            r#"{"error":"invalid room: must be 1 to 64 bytes with no control character"}"#
        );
        assert!(Join::parse(r#"{"name":"a","room":"lob\nby"}"#).is_err());
        assert!(Join::parse(r#"{"name":"a","room":"Zoë's room"}"#).is_ok());
    }

    #[test]
    fn chat_events_have_the_documented_bytes() {
        assert_eq!(
            chat_message_json("alice", "lobby", "hi \"you\""),
            r#"{"name":"alice","room":"lobby","message":"hi \"you\""}"#
        );
        let join = ChatEvent::Presence {
            event: Presence::Join,
            name: "alice".into(),
            room: "lobby".into(),
            old_name: None,
            new_name: None,
        };
        assert_eq!(join.to_json(), r#"{"event":"join","name":"alice","room":"lobby"}"#);
        let renamed = ChatEvent::Presence { event: Presence::Leave, name: "al".into(), room: "lobby".into(), old_name: None, new_name: Some("alice".into()) };
        assert_eq!(renamed.to_json(), r#"{"event":"leave","name":"al","room":"lobby","new_name":"alice"}"#);
        let renamed = ChatEvent::Presence { event: Presence::Join, name: "alice".into(), room: "lobby".into(), old_name: Some("al".into()), new_name: None };
        assert_eq!(renamed.to_json(), r#"{"event":"join","name":"alice","room":"lobby","old_name":"al"}"#);
        let members = ChatEvent::Members {
            event: MembersTag::Members,
            room: "lobby".into(),
            members: vec!["bob".into(), "alice".into()],
            total: None,
            offset: None,
            epoch: None,
        };
        assert_eq!(
            members.to_json(),
            r#"{"event":"members","room":"lobby","members":["bob","alice"]}"#
        );
        let cut = ChatEvent::Members { event: MembersTag::Members, room: "r".into(), members: vec!["a".into()], total: Some(500), offset: Some(3), epoch: Some("e1".into()) };
        assert_eq!(cut.to_json(), r#"{"event":"members","room":"r","members":["a"],"total":500,"offset":3,"epoch":"e1"}"#);
        assert_eq!(
            chat_message_json_at(Some("alice"), "lobby", "hi", Some((7, "e1"))),
            r#"{"name":"alice","room":"lobby","message":"hi","offset":7,"epoch":"e1"}"#
        );
        let from_room = chat_message_json_at(None, "lobby", "we close at six", Some((8, "e1")));
        assert_eq!(from_room, r#"{"room":"lobby","message":"we close at six","offset":8,"epoch":"e1"}"#);
        assert!(matches!(ChatEvent::parse(&from_room).unwrap(), ChatEvent::Message { name: None, .. }));
        assert_eq!(ChatEvent::parse(&cut.to_json()).unwrap(), cut);
        assert_eq!(ChatEvent::parse(&members.to_json()).unwrap(), members);
        assert_eq!(ChatEvent::parse(&join.to_json()).unwrap(), join);
        let msg = chat_message_json("a", "b", "c");
        assert!(matches!(ChatEvent::parse(&msg).unwrap(), ChatEvent::Message { .. }));
        let tags = [("+typing".to_owned(), "active".to_owned()), ("+draft/react".to_owned(), "a;b c".to_owned())];
        let typing = ChatEvent::Tags { event: TagsTag::Tags, name: "al".into(), room: "lobby".into(), tags: tags.into_iter().collect() };
        assert_eq!(typing.to_json(), r#"{"event":"tags","name":"al","room":"lobby","tags":{"+draft/react":"a;b c","+typing":"active"}}"#);
        assert_eq!(ChatEvent::parse(&typing.to_json()).unwrap(), typing);
        let topic = ChatEvent::Topic { event: TopicTag::Topic, name: "al".into(), room: "lobby".into(), topic: "plans \"now\"".into() };
        assert_eq!(topic.to_json(), r#"{"event":"topic","name":"al","room":"lobby","topic":"plans \"now\""}"#);
        assert_eq!(ChatEvent::parse(&topic.to_json()).unwrap(), topic);
    }

    #[test]
    fn errors_are_json_objects() {
        let err = AppError::NameTaken { name: "alice".into(), room: "lobby".into() };
        assert_eq!(
            err.to_json(),
            r#"{"error":"name \"alice\" is already taken in room \"lobby\""}"#
        );
    }

    #[test]
    fn count_answers_one_less() {
        let c = Count::parse(r#"{"count":10}"#).unwrap();
        assert_eq!(c.answer().unwrap().to_json(), r#"{"count":9}"#);
        assert_eq!(Count { count: 0 }.answer().unwrap().to_json(), r#"{"count":-1}"#);
        assert_eq!(Count { count: i64::MIN }.answer(), Err(AppError::CountOutOfRange));
        assert!(Count::parse(r#"{"count":"x"}"#).is_err());
        assert!(Count::parse(r#"{"count":1.5}"#).is_err());
        assert!(Count::parse("[").is_err());
    }

    #[test]
    fn the_history_event_wraps_the_messages_as_delivered() {
        let kept = [chat_message_json("bob", "lobby", "hi"), chat_message_json("eve", "lobby", "\"yo\"")];
        let json = history_json("lobby", kept.iter().map(String::as_str), None);
        assert_eq!(
            json,
            r#"{"event":"history","room":"lobby","messages":[{"name":"bob","room":"lobby","message":"hi"},{"name":"eve","room":"lobby","message":"\"yo\""}]}"#
        );
        let ChatEvent::History { room, messages, .. } = ChatEvent::parse(&json).unwrap() else { panic!("{json}") };
        assert_eq!(room, "lobby");
        assert_eq!(messages[1], ChatEvent::Message { name: Some("eve".into()), room: "lobby".into(), message: "\"yo\"".into(), offset: None, epoch: None });
        assert_eq!(history_json("r", [], Some(true)), r#"{"event":"history","room":"r","messages":[],"recovered":true}"#);
        assert_eq!(history_json("r", [], Some(false)), r#"{"event":"history","room":"r","messages":[],"recovered":false}"#);
    }
}
