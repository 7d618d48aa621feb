//! Rooms whose messages outlive the server: a broker in front of another
//! that keeps each message of a room in the room's archive, under an id
//! its members' copies carry, and opens a room that has no history (after
//! a restart, or once its last member left) with the newest of it.
//!
//! A room's archive is named `<mount>#<room>` (the mount's prefix, then
//! the room's name), which no account's bare JID can be. An entry's `with`
//! is the sender's name in the room and its message the text, whatever
//! protocol the members speak; each renders it as its own.

use std::sync::Arc;
use std::time::Duration;

use hub::{BoxFuture, Broker, BrokerError, Greeting, JoinError, Member, MemberId, Outbox, Payload, Position, Present, RenameError, RoomEvent, RoomLimits, RoomSize, Roster};
use store::{Cursor, Entry, Filter};
use wire::nickname::Nickname;

use crate::Context;
use crate::archive::{self, Archive};

/// How long a room opened again waits for the archive's writer before it
/// reads its history: a writer that far behind (a full queue on a busy
/// server) would hold the join, so the room opens with what is written.
/// IRC's `CHATHISTORY` waits as long, then reads what is written.
pub const HISTORY_WAIT: Duration = Duration::from_secs(1);

/// Where a protocol that keeps some rooms' state (XMPP's persistent MUC
/// rooms, their subject among it) is told of a topic set in another
/// protocol (IRC's `TOPIC`), to keep it with the room as its own.
pub trait TopicKeeper: Send + Sync + std::fmt::Debug {
    /// `by` set the topic of `room` to `text` (empty: cleared).
    fn topic_set(&self, room: &str, by: &Arc<str>, text: &str);
}

/// Rooms of `rooms` whose messages are kept in `archive`.
#[derive(Debug)]
pub struct ArchivedRooms {
    rooms: Arc<dyn Broker>,
    archive: Arc<Archive>,
    /// The mount's prefix, which names its rooms' archives.
    prefix: String,
    context: Arc<Context>,
}

impl ArchivedRooms {
    /// The rooms of the mount at `prefix`, carried by `rooms`, archived in `archive`.
    pub fn new(rooms: Arc<dyn Broker>, archive: Arc<Archive>, prefix: &str, context: Arc<Context>) -> ArchivedRooms {
        ArchivedRooms { rooms, archive, prefix: prefix.to_owned(), context }
    }

    /// The name of the archive of `room` of the mount at `prefix`: a
    /// path, as a room's archive is named (`store::is_room`).
    pub fn archive_of(prefix: &str, room: &str) -> String {
        // Sized at once: it is made for every message archived.
        let mut name = String::with_capacity(prefix.len() + 1 + room.len());
        name.push_str(prefix);
        name.push('#');
        name.push_str(room);
        name
    }

    /// The message an archived entry of `room` was (one with no sender, the
    /// room's own).
    pub fn message(room: &str, entry: &Entry) -> Payload {
        let text = Arc::from(entry.message.as_str());
        let event = match entry.with.as_str() {
            "" => RoomEvent::Announcement { text },
            name => RoomEvent::Message { name: Arc::from(name), text },
        };
        Payload::archived(room, event, archive::time(entry.at), Some(Arc::from(entry.id.as_str())))
    }

    /// The newest messages of `room`, as many as a room keeps, oldest
    /// first; none if the store fails (logged and counted: the room opens
    /// without them, and live chat goes on). What its last members here
    /// said just before they left is written first, unless the writer is
    /// [`HISTORY_WAIT`] behind.
    async fn newest(&self, room: &str) -> Vec<Payload> {
        let wanted = self.rooms.limits().history.messages;
        if wanted == 0 {
            return Vec::new();
        }
        let _ = tokio::time::timeout(HISTORY_WAIT, self.archive.flush()).await;
        let name = ArchivedRooms::archive_of(&self.prefix, room);
        match self.archive.page(&name, &Filter::default(), &Cursor::Before(None), wanted).await {
            Ok(page) => page.map(|p| p.entries).unwrap_or_default().iter().map(|e| ArchivedRooms::message(room, e)).collect(),
            Err(e) => {
                tracing::warn!("the history of room {room:?} could not be read: {e}");
                self.context.metrics.store_failed("archive");
                Vec::new()
            }
        }
    }
}

impl Broker for ArchivedRooms {
    fn join<'a>(&'a self, room: &'a str, member: Member, listed: usize, greet: Greeting) -> BoxFuture<'a, Result<Roster, JoinError>> {
        Box::pin(async move {
            if self.rooms.wants_history(room) {
                let history = self.newest(room).await;
                self.rooms.seed(room, history);
            }
            self.rooms.join(room, member, listed, greet).await
        })
    }

    fn leave(&self, room: &str, id: MemberId) -> Option<Member> {
        self.rooms.leave(room, id)
    }

    fn rename<'a>(&'a self, room: &'a str, id: MemberId, name: Nickname) -> BoxFuture<'a, Result<(), RenameError>> {
        self.rooms.rename(room, id, name)
    }

    fn publish(&self, room: &str, payload: Payload) -> Result<(), BrokerError> {
        self.rooms.publish(room, payload)
    }

    /// Delivers a message first, then resolves once it is queued for the
    /// room's archive ([`Archive::flush`] waits until it is kept; a store
    /// that fails is counted, and the message stays delivered).
    ///
    /// Its id is taken in the archive's order ([`archive::in_order`]),
    /// and the broker given it there: a broker places a message in its
    /// room's order when it is handed it ([`Broker::publish_and_keep`]),
    /// so two senders racing get their ids in the order the room delivers
    /// them. Not across nodes: each stamps its own.
    fn publish_and_keep<'a>(&'a self, room: &'a str, payload: Payload) -> BoxFuture<'a, Result<Option<Position>, BrokerError>> {
        let (name, text) = match payload.as_event() {
            Some((_, RoomEvent::Message { name, text })) => (name.to_string(), text),
            // The room's own message, archived with no sender.
            Some((_, RoomEvent::Announcement { text })) => (String::new(), text),
            _ => return self.rooms.publish_and_keep(room, payload),
        };
        let message = text.to_string();
        let archive = ArchivedRooms::archive_of(&self.prefix, room);
        let (micros, id, published) = archive::in_order(&archive, || {
            let (micros, id) = archive::next_id();
            // The payload the sender made, given its id: not built again.
            let payload = payload.kept_as(archive::time(micros), Arc::from(id.as_str()));
            (micros, id, self.rooms.publish_and_keep(room, payload))
        });
        let entry = Entry { archive, id, at: micros, with: name, message };
        Box::pin(async move {
            let position = published.await?;
            self.archive.queue(vec![entry]).await;
            Ok(position)
        })
    }

    fn limits(&self) -> RoomLimits {
        self.rooms.limits()
    }

    fn names(&self, room: &str, max: usize) -> Vec<std::sync::Arc<str>> {
        self.rooms.names(room, max)
    }

    fn presence<'a>(&'a self, room: &'a str, max: usize) -> BoxFuture<'a, Result<Vec<Present>, BrokerError>> {
        self.rooms.presence(room, max)
    }

    fn rooms(&self) -> BoxFuture<'_, Result<Vec<RoomSize>, BrokerError>> {
        self.rooms.rooms()
    }

    fn history(&self, room: &str) -> Vec<Payload> {
        self.rooms.history(room)
    }

    fn topic(&self, room: &str) -> Option<hub::Topic> {
        self.rooms.topic(room)
    }

    fn seed_topic(&self, room: &str, topic: &Payload) {
        self.rooms.seed_topic(room, topic);
    }

    fn named(&self, key: &str) -> Vec<Arc<Outbox>> {
        self.rooms.named(key)
    }

    fn wants_history(&self, room: &str) -> bool {
        self.rooms.wants_history(room)
    }

    fn seed(&self, room: &str, history: Vec<Payload>) {
        self.rooms.seed(room, history);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hub::{HistoryLimits, Hub, MemoryBroker, Outbox};

    fn rooms(store: Arc<dyn store::Store>) -> ArchivedRooms {
        let context = Context::for_tests();
        let history = HistoryLimits { messages: 2, bytes: 1 << 10 };
        let hub = Hub::with_limits(2, RoomLimits { history, ..RoomLimits::NONE });
        let archive = Arc::new(Archive::start(store, 16, crate::archive::Bounds::default(), context.clone()));
        ArchivedRooms::new(Arc::new(MemoryBroker::new(hub)), archive, "/chat", context)
    }

    fn member(id: MemberId, name: &str) -> Member {
        Member { id, name: Some(Nickname::parse(name).unwrap()), outbox: Arc::new(Outbox::new(1 << 16)), speaks: hub::Speaks::App }
    }

    fn say(name: &str, text: &str) -> Payload {
        Payload::event("lobby", RoomEvent::Message { name: name.into(), text: text.into() })
    }

    #[tokio::test]
    async fn messages_are_archived_under_the_id_members_see_and_greet_a_room_opened_again() {
        let store: Arc<dyn store::Store> = Arc::new(store::MemoryStore::default());
        let first = rooms(store.clone());
        let alice = member(1, "alice");
        first.join("lobby", alice.clone(), 10, Box::new(|_| Vec::new())).await.unwrap();
        for text in ["one", "two", "three"] {
            first.publish_and_keep("lobby", say("alice", text)).await.unwrap();
        }
        // A join is not archived; nor is anything but a message.
        first.publish("lobby", Payload::event("lobby", RoomEvent::join("bob".into()))).unwrap();
        assert!(first.archive.flush().await);
        let mut seen = Vec::new();
        alice.outbox.try_drain(&mut seen);
        let ids: Vec<&str> = seen.iter().filter_map(Payload::id).collect();
        let page = store.page("/chat#lobby", &Filter::default(), &Cursor::Oldest, 10).await.unwrap().unwrap();
        assert_eq!(page.entries.iter().map(|e| (e.id.as_str(), e.with.as_str(), e.message.as_str())).collect::<Vec<_>>(), [
            (ids[0], "alice", "one"),
            (ids[1], "alice", "two"),
            (ids[2], "alice", "three")
        ]);
        // Another server on the same store (a restart) opens the room with
        // the newest of it, as many as a room keeps.
        let again = rooms(store);
        let roster = again.join("lobby", member(2, "bob"), 10, Box::new(|_| Vec::new())).await.unwrap();
        let kept: Vec<(&str, Option<&str>)> = roster.history.iter().map(|p| (p.as_text().unwrap(), p.id())).collect();
        let epoch = &roster.epoch;
        assert_eq!(kept, [
            (format!(r#"{{"name":"alice","room":"lobby","message":"two","offset":1,"epoch":"{epoch}"}}"#).as_str(), Some(ids[1])),
            (format!(r#"{{"name":"alice","room":"lobby","message":"three","offset":2,"epoch":"{epoch}"}}"#).as_str(), Some(ids[2]))
        ], "at new positions, in the new opening's history");
    }

    /// Senders racing in one room: every member sees the messages in the
    /// order of their ids, which is the order the archive is read in, so
    /// a client that catches up after the last id it saw gets neither a
    /// repeat nor a gap.
    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn racing_senders_messages_reach_members_in_the_order_of_their_ids() {
        const SENDERS: usize = 8;
        const EACH: usize = 2_000;
        let store: Arc<dyn store::Store> = Arc::new(store::MemoryStore::default());
        let context = Context::for_tests();
        let hub = Hub::with_limits(2, RoomLimits::NONE);
        let archive = Arc::new(Archive::start(store, 1 << 16, crate::archive::Bounds::default(), context.clone()));
        let rooms = Arc::new(ArchivedRooms::new(Arc::new(MemoryBroker::new(hub)), archive, "/chat", context));
        let watcher = Member { id: 0, name: None, outbox: Arc::new(Outbox::new(1 << 30)), speaks: hub::Speaks::App };
        rooms.join("lobby", watcher.clone(), 10, Box::new(|_| Vec::new())).await.unwrap();
        let start = Arc::new(tokio::sync::Barrier::new(SENDERS));
        let senders: Vec<_> = (0..SENDERS)
            .map(|s| {
                let (rooms, start) = (rooms.clone(), start.clone());
                tokio::spawn(async move {
                    start.wait().await;
                    for i in 0..EACH {
                        rooms.publish_and_keep("lobby", say(&format!("s{s}"), &i.to_string())).await.unwrap();
                    }
                })
            })
            .collect();
        for sender in senders {
            sender.await.unwrap();
        }
        let mut seen = Vec::new();
        watcher.outbox.try_drain(&mut seen);
        let ids: Vec<&str> = seen.iter().filter_map(Payload::id).collect();
        assert_eq!(ids.len(), SENDERS * EACH);
        let behind = ids.windows(2).filter(|w| w[0] >= w[1]).count();
        assert_eq!(behind, 0, "messages seen after one with a later id");
    }

    /// Nobody waits for the room's messages to be written, but a room
    /// opened again reads them only once they are.
    #[tokio::test]
    async fn a_room_its_last_member_left_opens_again_with_what_was_just_said() {
        let rooms = rooms(Arc::new(store::MemoryStore::default()));
        rooms.join("lobby", member(1, "alice"), 10, Box::new(|_| Vec::new())).await.unwrap();
        for text in ["one", "two"] {
            rooms.publish_and_keep("lobby", say("alice", text)).await.unwrap();
        }
        rooms.leave("lobby", 1).unwrap();
        assert!(rooms.wants_history("lobby"), "the room was let go");
        let roster = rooms.join("lobby", member(2, "bob"), 10, Box::new(|_| Vec::new())).await.unwrap();
        let said: Vec<&str> = roster.history.iter().filter_map(|p| p.as_text()).filter_map(|t| ["one", "two"].into_iter().find(|w| t.contains(&format!("\"message\":\"{w}\"")))).collect();
        assert_eq!(said, ["one", "two"]);
    }
}
