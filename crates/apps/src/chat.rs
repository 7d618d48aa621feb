//! The chat app: a client joins one room under a name unique in that room,
//! then each of its messages goes to every member of the room.
//!
//! The app speaks to its rooms through a [`Broker`]. A memory broker
//! answers at once, so a client's messages are handled as they arrive. A
//! broker that spans nodes answers later (a name is claimed across the
//! nodes), and so does one that archives (a message is delivered, then
//! kept, and the sender's next message waits for that); each client's
//! messages then go through a queue to a task of its own, which handles
//! them in order and leaves the room when the client is gone.

use std::sync::Arc;

use futures_util::FutureExt;
use hub::{Broker, Greeting, JoinError, Member, Payload, RoomEvent, Roster, Speaks};
use tokio::sync::mpsc;
use tokio_tungstenite::tungstenite::Utf8Bytes;
use wire::app::{AppError, ChatEvent, Join, MAX_MEMBERS_LISTED, MembersTag, Say, Since, history_json};
use wire::nickname::Nickname;

use super::{Client, broker_error, unavailable};

/// Most messages of one client waiting for a slow broker or archive; a
/// client that sends more is closed with 1013 (its messages are already
/// bounded by the per-client rates, so only an outage fills this).
pub const QUEUE: usize = 64;

/// A chat client as its app holds it.
#[derive(Debug)]
pub(super) enum Chat {
    /// Handled as each message arrives: where the client is, once joined.
    Inline(Option<Joined>),
    /// Handled by the client's own task, fed by this queue.
    Queued(mpsc::Sender<Utf8Bytes>),
}

/// Where a joined client is.
#[derive(Debug)]
pub(super) struct Joined {
    name: Arc<str>,
    room: Arc<str>,
}

impl Chat {
    pub(super) fn new(broker: &Arc<dyn Broker>, client: &Client) -> Chat {
        if broker.is_immediate() {
            return Chat::Inline(None);
        }
        let (queue, mut inbox) = mpsc::channel::<Utf8Bytes>(QUEUE);
        let (broker, client) = (broker.clone(), client.clone());
        tokio::spawn(async move {
            let mut joined = None;
            while let Some(text) = inbox.recv().await {
                on_message(&*broker, &client, &mut joined, &text).await;
            }
            leave(&*broker, &client, joined);
        });
        Chat::Queued(queue)
    }

    pub(super) fn on_message(&mut self, broker: &Arc<dyn Broker>, client: &Client, text: Utf8Bytes) {
        match self {
            Chat::Inline(joined) => {
                // A memory broker's futures are ready at once.
                if on_message(&**broker, client, joined, &text).now_or_never().is_none() {
                    tracing::error!("an immediate broker left a chat message pending");
                }
            }
            Chat::Queued(queue) => {
                if queue.try_send(text).is_err() {
                    client.outbox.close(unavailable("the server is behind with your messages; try again later"));
                }
            }
        }
    }

    /// The client is gone: it leaves its room (a queued client's task does
    /// so once it has handled what was queued).
    pub(super) fn end(&mut self, broker: &Arc<dyn Broker>, client: &Client) {
        if let Chat::Inline(joined) = self {
            leave(&**broker, client, joined.take());
        }
    }
}

async fn on_message(broker: &dyn Broker, client: &Client, joined: &mut Option<Joined>, text: &str) {
    match joined {
        None => match join(broker, client, text).await {
            Ok(j) => *joined = Some(j),
            Err(e) => client.send_error(&e),
        },
        Some(Joined { name, room }) => match Say::parse(text) {
            Ok(say) => {
                let event = RoomEvent::Message { name: name.clone(), text: Arc::from(say.message) };
                if let Err(e) = broker.publish_and_keep(room, Payload::event(room.clone(), event)).await {
                    client.send_error(&broker_error(e));
                }
            }
            Err(e) => client.send_error(&e),
        },
    }
}

async fn join(broker: &dyn Broker, client: &Client, text: &str) -> Result<Joined, AppError> {
    let (Join { room, since, .. }, nickname) = Join::parse(text)?;
    if let Some(identity) = &client.identity {
        check_token(identity, &nickname, &room)?;
    }
    let name: Arc<str> = nickname.shown.clone();
    let member = Member { id: client.id, name: Some(nickname), outbox: client.outbox.clone(), speaks: Speaks::App };
    let listed_room = room.clone();
    let greeting: Greeting = Box::new(move |roster: &Roster| {
        let list = ChatEvent::Members {
            event: MembersTag::Members,
            room: listed_room.clone(),
            members: roster.names.iter().map(|m| m.to_string()).collect(),
            total: (roster.total > roster.names.len()).then_some(roster.total),
            offset: Some(roster.last),
            epoch: Some(roster.epoch.to_string()),
        };
        let mut greeting = vec![Payload::from(list.to_json())];
        // The kept messages are chat messages, as the app published them.
        let kept = roster.history.iter().filter_map(Payload::as_text);
        match since {
            // Coming back: exactly what it missed, or the newest and a word that it may have missed more.
            Some(Since { offset, epoch }) if roster.keeps_after(offset, &epoch) => {
                let missed = roster.history.iter().filter(|p| p.position().is_some_and(|p| p.offset > offset));
                greeting.push(Payload::from(history_json(&listed_room, missed.filter_map(Payload::as_text), Some(true))));
            }
            Some(_) => greeting.push(Payload::from(history_json(&listed_room, kept, Some(false)))),
            None if !roster.history.is_empty() => greeting.push(Payload::from(history_json(&listed_room, kept, None))),
            None => {}
        }
        greeting
    });
    broker.join(&room, member, MAX_MEMBERS_LISTED, greeting).await.map_err(|e| match e {
        JoinError::NameTaken => AppError::NameTaken { name: name.to_string(), room: room.clone() },
        JoinError::RoomFull => AppError::RoomFull { room: room.clone(), max: broker.limits().max_members },
        JoinError::TooManyJoins => AppError::JoinsTooFast { room: room.clone() },
        JoinError::Broker(e) => broker_error(e),
    })?;
    let room: Arc<str> = Arc::from(room);
    if let Err(e) = broker.publish(&room, Payload::event(room.clone(), RoomEvent::join(name.clone()))) {
        // Joined, but the others were not told: say so rather than pretend.
        client.send_error(&broker_error(e));
    }
    Ok(Joined { name, room })
}

/// A client with a token joins under its token's name, in its token's rooms.
fn check_token(identity: &base::token::Identity, name: &Nickname, room: &str) -> Result<(), AppError> {
    let own = Nickname::parse(&identity.name).map_err(AppError::InvalidNickname)?;
    if own.key != name.key {
        return Err(AppError::NotYourName { name: name.shown.to_string(), token_name: own.shown.to_string() });
    }
    if identity.rooms.as_ref().is_some_and(|rooms| !rooms.iter().any(|r| r == room)) {
        return Err(AppError::RoomNotAllowed { room: room.to_owned() });
    }
    Ok(())
}

fn leave(broker: &dyn Broker, client: &Client, joined: Option<Joined>) {
    let Some(Joined { name, room }) = joined else { return };
    if broker.leave(&room, client.id).is_some() {
        // Nobody is left to tell if the broker cannot take it; other nodes
        // see the member go when its name expires.
        let _ = broker.publish(&room, Payload::event(room.clone(), RoomEvent::leave(name)));
    }
}
