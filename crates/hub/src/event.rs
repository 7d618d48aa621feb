//! What happens in a room, as one typed value whatever protocol its
//! members speak. Each codec renders it for its own clients: the chat
//! app's JSON here, stanzas for other protocols.

use std::sync::Arc;

use wire::app::{ChatEvent, Presence, chat_message_json};

/// An event of a room that every member receives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RoomEvent {
    /// A member's message.
    Message { name: Arc<str>, text: Arc<str> },
    /// A member joined.
    Join { name: Arc<str> },
    /// A member left, or the node it was on was lost.
    Leave { name: Arc<str> },
}

impl RoomEvent {
    /// The chat app's JSON for this event of `room` (see `wire::app`).
    pub fn chat_json(&self, room: &str) -> String {
        let presence = |event, name: &Arc<str>| {
            ChatEvent::Presence { event, name: name.to_string(), room: room.to_owned() }.to_json()
        };
        match self {
            RoomEvent::Message { name, text } => chat_message_json(name, room, text),
            RoomEvent::Join { name } => presence(Presence::Join, name),
            RoomEvent::Leave { name } => presence(Presence::Leave, name),
        }
    }
}
