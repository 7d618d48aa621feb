//! The chat app: a client joins one room under a name unique in that room,
//! then each of its messages goes to every member of the room.
//!
//! The app speaks to its rooms through a [`Broker`]. A memory broker
//! answers at once, so a client's messages are handled as they arrive. A
//! broker that spans nodes may answer later (a name is claimed across the
//! nodes), and so may one that archives (a message is delivered, then
//! queued for the archive, and a full queue holds the sender back; a join
//! that opens a room reads its archive). With such a broker a client's
//! messages are handled as they arrive until one has to wait; then they go
//! through a queue to a task of the client's own, which finishes the one
//! that waits and handles the rest in order. Once its queue is empty it
//! hands the client back, to be handled as its messages arrive again, or
//! leaves the room if the client is gone.

use std::future::Future;
use std::sync::Arc;

use futures_util::FutureExt;
use parking_lot::Mutex;
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
    /// Handled by the client's own task, fed by its queue, since one of
    /// its messages had to wait.
    Queued(Handed),
}

/// A client handed to its own task: the task's queue, and what the task
/// and the client's connection tell each other, under one lock, so that
/// nothing is queued once the task has found its queue empty and ended.
#[derive(Debug)]
pub(super) struct Handed {
    queue: mpsc::Sender<Utf8Bytes>,
    shared: Arc<Mutex<Handback>>,
}

#[derive(Debug, Default)]
struct Handback {
    /// Where the client is, once the task found its queue empty and ended.
    returned: Option<Option<Joined>>,
    /// The client is gone: the task leaves the room when its queue is empty.
    ended: bool,
}

/// Where a joined client is.
#[derive(Debug)]
pub(super) struct Joined {
    name: Arc<str>,
    room: Arc<str>,
}

impl Chat {
    pub(super) fn new() -> Chat {
        Chat::Inline(None)
    }

    pub(super) fn on_message(&mut self, broker: &Arc<dyn Broker>, client: &Client, text: Utf8Bytes) {
        match self {
            Chat::Inline(joined) if broker.is_immediate() => {
                // A memory broker's futures are ready at once.
                if on_message(&**broker, client, joined, &text).now_or_never().is_none() {
                    tracing::error!("an immediate broker left a chat message pending");
                }
            }
            Chat::Inline(joined) => {
                // Owned, so that a task can finish it if it has to wait.
                let (owned_broker, owned_client, mut owned) = (broker.clone(), client.clone(), joined.take());
                let mut handling = Box::pin(async move {
                    on_message(&*owned_broker, &owned_client, &mut owned, &text).await;
                    owned
                });
                match handling.as_mut().now_or_never() {
                    Some(now) => *joined = now,
                    None => *self = Chat::Queued(queue(broker.clone(), client.clone(), handling)),
                }
            }
            Chat::Queued(handed) => {
                let mut shared = handed.shared.lock();
                if let Some(joined) = shared.returned.take() {
                    drop(shared);
                    *self = Chat::Inline(joined);
                    return self.on_message(broker, client, text);
                }
                if handed.queue.try_send(text).is_err() {
                    client.outbox.close(unavailable("the server is behind with your messages; try again later"));
                }
            }
        }
    }

    /// The client is gone: it leaves its room (a queued client's task does
    /// so once it has handled what was queued).
    pub(super) fn end(&mut self, broker: &Arc<dyn Broker>, client: &Client) {
        let joined = match self {
            Chat::Inline(joined) => joined.take(),
            Chat::Queued(handed) => {
                let mut shared = handed.shared.lock();
                match shared.returned.take() {
                    Some(joined) => joined,
                    None => {
                        shared.ended = true;
                        return;
                    }
                }
            }
        };
        leave(&**broker, client, joined);
    }
}

/// A new task of the client's own, which finishes `waiting` (the message
/// that had to wait, and where the client is after it), then handles what
/// its queue holds, in order. With the queue empty it ends: it hands the
/// client back, or, if the client is gone, leaves the room. A client stays
/// with its task only while messages wait, so most of a client's life its
/// messages cost no wake-up of a task of its own.
fn queue(broker: Arc<dyn Broker>, client: Client, waiting: impl Future<Output = Option<Joined>> + Send + 'static) -> Handed {
    let (queue, mut inbox) = mpsc::channel::<Utf8Bytes>(QUEUE);
    let shared = Arc::new(Mutex::new(Handback::default()));
    let handback = shared.clone();
    tokio::spawn(async move {
        let mut joined = waiting.await;
        loop {
            let next = {
                let mut shared = handback.lock();
                match inbox.try_recv() {
                    Ok(text) => text,
                    Err(mpsc::error::TryRecvError::Empty) if !shared.ended => {
                        shared.returned = Some(joined);
                        return;
                    }
                    Err(_) => break,
                }
            };
            on_message(&*broker, &client, &mut joined, &next).await;
        }
        leave(&*broker, &client, joined);
    });
    Handed { queue, shared }
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
        // The room's topic, if one is set, as it was told when it was.
        if let Some(topic) = roster.topic.as_ref().filter(|t| !t.text.is_empty()) {
            greeting.push(Payload::from(RoomEvent::Topic { name: topic.by.clone(), text: topic.text.clone() }.chat_json(&listed_room, None)));
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

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::time::Duration;

    use base::archive::{Archive, Bounds as Kept};
    use base::rooms::ArchivedRooms;
    use base::{Bounds, Context};
    use hub::{Broker, Hub, Member, MemoryBroker, Outbox, Payload, RoomEvent, RoomLimits, Speaks};
    use wire::nickname::Nickname;

    use super::*;

    /// The texts of the messages among `payloads`.
    fn texts(payloads: &[Payload]) -> Vec<String> {
        let text = |p: &Payload| match p.as_event() {
            Some((_, RoomEvent::Message { text, .. })) => Some(text.to_string()),
            _ => None,
        };
        payloads.iter().filter_map(text).collect()
    }

    /// The messages `outbox` holds now.
    fn said(outbox: &Outbox) -> Vec<String> {
        let mut out = Vec::new();
        outbox.try_drain(&mut out);
        texts(&out)
    }

    /// Rooms that archive their messages (a message is delivered, then
    /// queued for the archive), a client's messages are handled as they
    /// arrive until one waits for room in the archive's queue; the rest
    /// then queue behind it, in order, in a task of the client's own, which
    /// hands the client back once its queue is empty, or leaves the room if
    /// the client is gone. On one thread, the archive's writer takes
    /// nothing until the test waits.
    #[tokio::test]
    async fn messages_are_handled_as_they_arrive_until_one_waits_then_queue_behind_it_until_the_queue_empties() {
        let second = Duration::from_secs(1);
        let bounds = Bounds { queue_limit: 1 << 16, max_message_size: 1 << 16, header_timeout: second, idle_timeout: second, ping_interval: second };
        let context = Arc::new(Context::new(bounds));
        let store: Arc<dyn store::Store> = Arc::new(store::MemoryStore::default());
        let archive = Arc::new(Archive::start(store, 1, Kept::default(), context.clone()));
        let memory = Arc::new(MemoryBroker::new(Hub::with_limits(1, RoomLimits::NONE)));
        let broker: Arc<dyn Broker> = Arc::new(ArchivedRooms::new(memory, archive.clone(), "/chat", context));
        let listener = Arc::new(Outbox::new(1 << 16));
        let ear = Member { id: hub::next_member_id(), name: Some(Nickname::parse("ear").unwrap()), outbox: listener.clone(), speaks: Speaks::App };
        broker.join("lobby", ear, 10, Box::new(|_| Vec::new())).await.unwrap();
        let client = Client { id: hub::next_member_id(), outbox: Arc::new(Outbox::new(1 << 16)), identity: None };
        let mut chat = Chat::new();
        let say = |text: &str| Utf8Bytes::from(format!(r#"{{"message":"{text}"}}"#));
        chat.on_message(&broker, &client, Utf8Bytes::from_static(r#"{"name":"ann","room":"lobby"}"#));
        chat.on_message(&broker, &client, say("one"));
        assert!(matches!(chat, Chat::Inline(Some(_))), "{chat:?}");
        assert_eq!(said(&listener), ["one"], "delivered before on_message returned");
        // The archive's queue of one is full: this one is delivered, then waits.
        chat.on_message(&broker, &client, say("two"));
        assert!(matches!(chat, Chat::Queued(_)), "{chat:?}");
        chat.on_message(&broker, &client, say("three"));
        assert_eq!(said(&listener), ["two"], "the third waits behind the second");
        let mut out = Vec::new();
        listener.drain(&mut out).await;
        assert_eq!(texts(&out), ["three"]);
        chat.on_message(&broker, &client, say("four"));
        listener.drain(&mut out).await;
        assert_eq!(texts(&out), ["three", "four"], "still in order, through the queue");
        // Its queue empty, the task hands the client back: handled as its
        // messages arrive again.
        assert!(archive.flush().await);
        let Chat::Queued(handed) = &chat else { panic!("{chat:?}") };
        for _ in 0..100 {
            if handed.shared.lock().returned.is_some() {
                break;
            }
            tokio::task::yield_now().await;
        }
        assert!(handed.shared.lock().returned.is_some(), "the task has ended");
        chat.on_message(&broker, &client, say("five"));
        assert!(matches!(chat, Chat::Inline(Some(_))), "{chat:?}");
        assert_eq!(said(&listener), ["five"], "delivered before on_message returned");
        let mut own = Vec::new();
        client.outbox.try_drain(&mut own);
        assert_eq!(texts(&own), ["one", "two", "three", "four", "five"], "the sender's own copies, in order");
        assert!(!own.iter().filter_map(Payload::as_text).any(|t| t.contains("error")), "no error to the sender");

        // Queued again, then gone: the task handles what is queued, then
        // leaves the room, since nobody is there to hand the client back to.
        chat.on_message(&broker, &client, say("six"));
        assert!(matches!(chat, Chat::Queued(_)), "{chat:?}");
        chat.end(&broker, &client);
        let left = |out: &[Payload]| out.iter().any(|p| matches!(p.as_event(), Some((_, RoomEvent::Leave { name, .. })) if &**name == "ann"));
        let mut out = Vec::new();
        let heard = async {
            while !left(&out) {
                listener.drain(&mut out).await;
            }
        };
        tokio::time::timeout(Duration::from_secs(10), heard).await.expect("ann leaves");
        assert_eq!(texts(&out), ["six"], "what was queued, before the leave");
    }
}
