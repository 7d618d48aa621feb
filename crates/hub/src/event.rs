//! What happens in a room, as one typed value whatever protocol its
//! members speak. Each codec renders it for its own clients: the chat
//! app's JSON here, stanzas for other protocols.

use std::sync::Arc;

use wire::app::{ChatEvent, Presence, TagsTag, TopicTag, chat_message_json_at};

use crate::payload::Position;

/// An event of a room that every member receives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RoomEvent {
    /// A member's message.
    Message { name: Arc<str>, text: Arc<str> },
    /// A message from the room itself, which no member sent (the server
    /// API's publish without a name). Kept and archived as a message is.
    Announcement { text: Arc<str> },
    /// A member's notice: a message no client is to answer automatically
    /// (IRC's `NOTICE`). Other protocols show it as a message; it is
    /// neither archived nor kept in the room's history.
    Notice { name: Arc<str>, text: Arc<str> },
    /// A member joined; or took the name `name` in place of `old_name`
    /// (IRC's `NICK`, an XMPP occupant's nick change), right after the
    /// [`RoomEvent::Leave`] under its old name that names the new one.
    Join { name: Arc<str>, old_name: Option<Arc<str>> },
    /// A member left, or the node it was on was lost: with the reason it
    /// gave, if any (IRC's `PART` or `QUIT` message), and `quit` when it
    /// left every room at once because it went away; or it was taken out
    /// by the member named `by` (IRC's `KICK`), for `reason`. The member
    /// taken out gets this event too, and leaves the room on it. With
    /// `new_name`, it did not leave but changed its name: a
    /// [`RoomEvent::Join`] under the new one, with `old_name`, follows.
    Leave { name: Arc<str>, reason: Option<Arc<str>>, quit: bool, by: Option<Arc<str>>, new_name: Option<Arc<str>> },
    /// A member's message of tags and no text (IRC's `TAGMSG`: a typing
    /// notification, a reaction): its client-only tags as IRC writes them,
    /// `+typing=active;+draft/react=…`, values escaped. Neither kept nor
    /// archived; each protocol shows what it has a form for.
    Tags { name: Arc<str>, tags: Arc<str> },
    /// A member set the room's topic (IRC's `TOPIC`, an XMPP occupant's
    /// subject); empty text clears it. Each protocol shows it and keeps it
    /// as the room's topic for those who join after; neither kept in the
    /// room's history nor archived.
    Topic { name: Arc<str>, text: Arc<str> },
}

impl RoomEvent {
    /// The member it is about; `None` for the room's own announcement.
    pub fn name(&self) -> Option<&Arc<str>> {
        match self {
            RoomEvent::Message { name, .. }
            | RoomEvent::Notice { name, .. }
            | RoomEvent::Join { name, .. }
            | RoomEvent::Leave { name, .. }
            | RoomEvent::Tags { name, .. }
            | RoomEvent::Topic { name, .. } => Some(name),
            RoomEvent::Announcement { .. } => None,
        }
    }

    /// A member joined.
    pub fn join(name: Arc<str>) -> RoomEvent {
        RoomEvent::Join { name, old_name: None }
    }

    /// A member left, saying nothing.
    pub fn leave(name: Arc<str>) -> RoomEvent {
        RoomEvent::Leave { name, reason: None, quit: false, by: None, new_name: None }
    }

    /// A member's change of name from `old` to `new`, as the two events
    /// every member receives, in this order.
    pub fn rename(old: Arc<str>, new: Arc<str>) -> [RoomEvent; 2] {
        [
            RoomEvent::Leave { name: old.clone(), reason: None, quit: false, by: None, new_name: Some(new.clone()) },
            RoomEvent::Join { name: new, old_name: Some(old) },
        ]
    }

    /// The chat app's JSON for this event of `room` (see `wire::app`), a
    /// message with its position in the room's history if it has one.
    pub fn chat_json(&self, room: &str, position: Option<&Position>) -> String {
        let presence = |event, name: &Arc<str>, old_name: &Option<Arc<str>>, new_name: &Option<Arc<str>>| {
            let (old_name, new_name) = (old_name.as_deref().map(str::to_owned), new_name.as_deref().map(str::to_owned));
            ChatEvent::Presence { event, name: name.to_string(), room: room.to_owned(), old_name, new_name }.to_json()
        };
        match self {
            RoomEvent::Message { name, text } | RoomEvent::Notice { name, text } => {
                chat_message_json_at(Some(name), room, text, position.map(|p| (p.offset, &*p.epoch)))
            }
            RoomEvent::Announcement { text } => chat_message_json_at(None, room, text, position.map(|p| (p.offset, &*p.epoch))),
            RoomEvent::Join { name, old_name } => presence(Presence::Join, name, old_name, &None),
            RoomEvent::Leave { name, new_name, .. } => presence(Presence::Leave, name, &None, new_name),
            RoomEvent::Tags { name, tags } => {
                let tags = wire::irc::tags(tags).map(|(key, value)| (key.to_owned(), value.into_owned())).collect();
                ChatEvent::Tags { event: TagsTag::Tags, name: name.to_string(), room: room.to_owned(), tags }.to_json()
            }
            RoomEvent::Topic { name, text } => ChatEvent::Topic { event: TopicTag::Topic, name: name.to_string(), room: room.to_owned(), topic: text.to_string() }.to_json(),
        }
    }
}
