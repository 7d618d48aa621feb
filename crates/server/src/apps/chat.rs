//! The chat app: a client joins one room under a name unique in that room,
//! then each of its messages goes to every member of the room.

use std::sync::Arc;

use hub::{Hub, JoinError, Member, Payload, Roster};
use wire::app::{AppError, ChatEvent, Join, MAX_MEMBERS_LISTED, MembersTag, Presence, Say, chat_message_json, history_json};
use wire::nickname::Nickname;

use super::Client;

/// Where a joined client is.
#[derive(Debug)]
pub(super) struct Joined {
    name: Arc<str>,
    room: Arc<str>,
}

pub(super) fn on_message(hub: &Hub, client: &Client, joined: &mut Option<Joined>, text: &str) {
    match joined {
        None => match join(hub, client, text) {
            Ok(j) => *joined = Some(j),
            Err(e) => client.send_error(&e),
        },
        Some(Joined { name, room }) => match Say::parse(text) {
            Ok(say) => {
                let json = chat_message_json(name, room, &say.message);
                hub.publish_and_keep(room, &Payload::from(json));
            }
            Err(e) => client.send_error(&e),
        },
    }
}

fn join(hub: &Hub, client: &Client, text: &str) -> Result<Joined, AppError> {
    let (Join { room, .. }, nickname) = Join::parse(text)?;
    if let Some(identity) = &client.identity {
        check_token(identity, &nickname, &room)?;
    }
    let name = nickname.shown.to_string();
    let member = Member { id: client.id, name: Some(nickname), outbox: client.outbox.clone() };
    let greeting = |roster: &Roster| {
        let list = ChatEvent::Members {
            event: MembersTag::Members,
            room: room.clone(),
            members: roster.names.iter().map(|m| m.to_string()).collect(),
            total: (roster.total > roster.names.len()).then_some(roster.total),
        };
        let mut greeting = vec![Payload::from(list.to_json())];
        if !roster.history.is_empty() {
            // The kept messages are chat message JSON, as the chat app published them.
            let kept = roster.history.iter().filter_map(Payload::as_text);
            greeting.push(Payload::from(history_json(&room, kept)));
        }
        greeting
    };
    hub.join_and_greet(&room, member, MAX_MEMBERS_LISTED, greeting).map_err(|e| match e {
        JoinError::NameTaken => AppError::NameTaken { name: name.clone(), room: room.clone() },
        JoinError::RoomFull => AppError::RoomFull { room: room.clone(), max: hub.limits().max_members },
        JoinError::TooManyJoins => AppError::JoinsTooFast { room: room.clone() },
    })?;
    let event = ChatEvent::Presence { event: Presence::Join, name: name.clone(), room: room.clone() };
    hub.publish(&room, &Payload::from(event.to_json()));
    Ok(Joined { name: Arc::from(name), room: Arc::from(room) })
}

/// A client with a token joins under its token's name, in its token's rooms.
fn check_token(identity: &crate::token::Identity, name: &Nickname, room: &str) -> Result<(), AppError> {
    let own = Nickname::parse(&identity.name).map_err(AppError::InvalidNickname)?;
    if own.key != name.key {
        return Err(AppError::NotYourName { name: name.shown.to_string(), token_name: own.shown.to_string() });
    }
    if identity.rooms.as_ref().is_some_and(|rooms| !rooms.iter().any(|r| r == room)) {
        return Err(AppError::RoomNotAllowed { room: room.to_owned() });
    }
    Ok(())
}

pub(super) fn leave(hub: &Hub, client: &Client, joined: Option<Joined>) {
    let Some(Joined { name, room }) = joined else { return };
    if hub.leave(&room, client.id).is_some() {
        let event = ChatEvent::Presence { event: Presence::Leave, name: name.to_string(), room: room.to_string() };
        hub.publish(&room, &Payload::from(event.to_json()));
    }
}
