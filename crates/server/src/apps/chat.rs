//! The chat app: a client joins one room under a name unique in that room,
//! then each of its messages goes to every member of the room.

use std::sync::Arc;

use hub::{Hub, JoinError, Member, Payload};
use wire::app::{AppError, ChatEvent, Join, MembersTag, Presence, Say, chat_message_json};

use super::Session;

/// Where a joined client is.
#[derive(Debug)]
pub(super) struct Joined {
    name: Arc<str>,
    room: Arc<str>,
}

pub(super) fn on_message(hub: &Hub, session: &Session, joined: &mut Option<Joined>, text: &str) {
    match joined {
        None => match join(hub, session, text) {
            Ok(j) => *joined = Some(j),
            Err(e) => session.send_error(&e),
        },
        Some(Joined { name, room }) => match Say::parse(text) {
            Ok(say) => {
                let json = chat_message_json(name, room, &say.message);
                hub.publish(room, &Payload::from(json));
            }
            Err(e) => session.send_error(&e),
        },
    }
}

fn join(hub: &Hub, session: &Session, text: &str) -> Result<Joined, AppError> {
    let Join { name, room } = Join::parse(text)?;
    let member = Member { id: session.id, name: Some(Arc::from(name.as_str())), outbox: session.outbox.clone() };
    let members = hub.join(&room, member).map_err(|e| match e {
        JoinError::NameTaken => AppError::NameTaken { name: name.clone(), room: room.clone() },
    })?;
    let list = ChatEvent::Members {
        event: MembersTag::Members,
        room: room.clone(),
        members: members.iter().map(|m| m.to_string()).collect(),
    };
    session.send(Payload::from(list.to_json()));
    let event = ChatEvent::Presence { event: Presence::Join, name: name.clone(), room: room.clone() };
    hub.publish(&room, &Payload::from(event.to_json()));
    Ok(Joined { name: Arc::from(name), room: Arc::from(room) })
}

pub(super) fn leave(hub: &Hub, session: &Session, joined: Option<Joined>) {
    let Some(Joined { name, room }) = joined else { return };
    if hub.leave(&room, session.id).is_some() {
        let event = ChatEvent::Presence { event: Presence::Leave, name: name.to_string(), room: room.to_string() };
        hub.publish(&room, &Payload::from(event.to_json()));
    }
}
