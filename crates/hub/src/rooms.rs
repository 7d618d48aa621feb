//! The hub: rooms of members, sharded by room name, and fan-out.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use parking_lot::Mutex;

use crate::{Outbox, Payload, PushError, Shards};

/// Identifies a session for as long as the process runs.
pub type MemberId = u64;

/// A session in a room: where to push its messages, and its name if the app
/// gives members names.
#[derive(Debug, Clone)]
pub struct Member {
    pub id: MemberId,
    pub name: Option<Arc<str>>,
    pub outbox: Arc<Outbox>,
}

/// Why a member could not join.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum JoinError {
    /// Another member of the room already has this name.
    #[error("name already taken in this room")]
    NameTaken,
}

/// What a publish did.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Delivery {
    /// Members whose queue took the message.
    pub delivered: usize,
    /// Members closed as slow consumers by this publish.
    pub overflowed: usize,
}

/// Rooms and their members; see the crate docs.
///
/// Each shard's lock is held only for plain pushes into queues (never across
/// an await), and for the whole fan-out of one publish: so every member of a
/// room sees the room's messages in the same order.
#[derive(Debug)]
pub struct Hub {
    rooms: Shards<HashMap<Arc<str>, Room>>,
}

#[derive(Debug, Default)]
struct Room {
    members: Vec<Member>,
    names: HashSet<Arc<str>>,
}

impl Hub {
    /// A hub with `shards` independently locked shards (at least one).
    pub fn new(shards: usize) -> Hub {
        Hub { rooms: Shards::new(shards) }
    }

    fn shard(&self, room: &str) -> &Mutex<HashMap<Arc<str>, Room>> {
        self.rooms.get(room)
    }

    /// Adds a member to a room, creating the room if needed. Fails if the
    /// member's name is already used in that room. Returns the names in the
    /// room after the join.
    pub fn join(&self, room: &str, member: Member) -> Result<Vec<Arc<str>>, JoinError> {
        let mut rooms = self.shard(room).lock();
        let entry = match rooms.get_mut(room) {
            Some(entry) => entry,
            None => rooms.entry(Arc::from(room)).or_default(),
        };
        if let Some(name) = &member.name
            && !entry.names.insert(name.clone())
        {
            return Err(JoinError::NameTaken);
        }
        entry.members.push(member);
        Ok(entry.members.iter().filter_map(|m| m.name.clone()).collect())
    }

    /// Removes a member from a room (dropping the room when it empties) and
    /// returns it, or `None` if it was not there.
    pub fn leave(&self, room: &str, id: MemberId) -> Option<Member> {
        let mut rooms = self.shard(room).lock();
        let entry = rooms.get_mut(room)?;
        let at = entry.members.iter().position(|m| m.id == id)?;
        let member = entry.members.swap_remove(at);
        if let Some(name) = &member.name {
            entry.names.remove(name);
        }
        if entry.members.is_empty() {
            rooms.remove(room);
        }
        Some(member)
    }

    /// Pushes the message to every member of the room. The payload is
    /// shared, not copied.
    pub fn publish(&self, room: &str, payload: &Payload) -> Delivery {
        let rooms = self.shard(room).lock();
        let mut delivery = Delivery::default();
        let Some(entry) = rooms.get(room) else {
            return delivery;
        };
        for member in &entry.members {
            match member.outbox.push(payload.clone()) {
                Ok(()) => delivery.delivered += 1,
                Err(PushError::Full) => delivery.overflowed += 1,
                Err(PushError::Closed) => {}
            }
        }
        delivery
    }

    /// Number of members in a room.
    pub fn room_len(&self, room: &str) -> usize {
        self.shard(room).lock().get(room).map_or(0, |r| r.members.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Close, Drained};

    fn member(id: MemberId, name: Option<&str>, limit: usize) -> Member {
        Member { id, name: name.map(Arc::from), outbox: Arc::new(Outbox::new(limit)) }
    }

    #[test]
    fn names_are_unique_per_room_only() {
        let hub = Hub::new(4);
        hub.join("lobby", member(1, Some("alice"), 1 << 20)).unwrap();
        assert_eq!(hub.join("lobby", member(2, Some("alice"), 1 << 20)), Err(JoinError::NameTaken));
        hub.join("kitchen", member(3, Some("alice"), 1 << 20)).unwrap();
        let names = hub.join("lobby", member(4, Some("bob"), 1 << 20)).unwrap();
        assert_eq!(names, [Arc::from("alice"), Arc::from("bob")]);
        hub.leave("lobby", 1).unwrap();
        hub.join("lobby", member(5, Some("alice"), 1 << 20)).unwrap();
        assert_eq!(hub.room_len("lobby"), 2);
    }

    #[test]
    fn publish_reaches_every_member_of_that_room_only() {
        let hub = Hub::new(4);
        let members: Vec<_> = (0..10).map(|i| member(i, None, 1 << 20)).collect();
        for m in &members[..7] {
            hub.join("a", m.clone()).unwrap();
        }
        for m in &members[7..] {
            hub.join("b", m.clone()).unwrap();
        }
        let delivery = hub.publish("a", &Payload::from("hello"));
        assert_eq!(delivery, Delivery { delivered: 7, overflowed: 0 });
        for (i, m) in members.iter().enumerate() {
            assert_eq!(m.outbox.len(), usize::from(i < 7));
        }
        assert_eq!(hub.publish("nobody", &Payload::from("x")), Delivery::default());
    }

    #[tokio::test]
    async fn a_full_member_is_closed_and_others_still_get_the_message() {
        let hub = Hub::new(1);
        let slow = member(1, None, 100);
        let fast = member(2, None, 1 << 20);
        hub.join("r", slow.clone()).unwrap();
        hub.join("r", fast.clone()).unwrap();
        let p = Payload::new("x".repeat(60));
        assert_eq!(hub.publish("r", &p).delivered, 2);
        assert_eq!(hub.publish("r", &p), Delivery { delivered: 1, overflowed: 1 });
        assert_eq!(hub.publish("r", &p), Delivery { delivered: 1, overflowed: 0 });
        assert_eq!(slow.outbox.closed().await, Close::SLOW_CONSUMER);
        let mut out = Vec::new();
        assert_eq!(fast.outbox.drain(&mut out).await, Drained::Messages);
        assert_eq!(out.len(), 3);
    }

    #[test]
    fn an_emptied_room_is_dropped() {
        let hub = Hub::new(2);
        hub.join("r", member(1, Some("a"), 10)).unwrap();
        assert!(hub.leave("r", 2).is_none());
        assert!(hub.leave("r", 1).is_some());
        assert_eq!(hub.room_len("r"), 0);
        assert!(hub.rooms.iter().all(|s| s.lock().is_empty()));
    }
}
