//! The hub: rooms of members, sharded by room name, and fan-out.

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::Arc;

use parking_lot::Mutex;
use tokio::time::Instant;
use wire::nickname::Nickname;

use crate::{Bucket, Outbox, Payload, Position, PushError, Shards};

/// A new room's epoch: a name no other opening of a room is likely to
/// have had, in this process or an earlier one.
fn new_epoch() -> Arc<str> {
    use std::hash::BuildHasher;
    static OPENED: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = OPENED.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let hash = std::hash::RandomState::new().hash_one((std::time::SystemTime::now(), std::process::id(), n));
    Arc::from(format!("{hash:016x}"))
}

/// Identifies a client for as long as the process runs, whatever its
/// protocol, so that clients of every protocol can share rooms.
pub type MemberId = u64;

static NEXT_MEMBER: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);

/// A new member id, unique among every client of the process.
pub fn next_member_id() -> MemberId {
    NEXT_MEMBER.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
}

/// A session in a room: where to push its messages, its name if the app
/// gives members names, and the protocol it speaks. Names are unique in a
/// room by their comparison form.
#[derive(Debug, Clone)]
pub struct Member {
    pub id: MemberId,
    pub name: Option<Nickname>,
    pub outbox: Arc<Outbox>,
    pub speaks: Speaks,
}

/// The protocol a member speaks, as the server API lists members.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Speaks {
    /// An app's own messages (the chat app's JSON), over WebSocket or SockJS.
    App,
    /// XMPP, from any carrier (a MUC occupant), or another server's user.
    Xmpp,
    /// IRC.
    Irc,
}

impl Speaks {
    /// Its name in the server API and across nodes.
    pub fn name(self) -> &'static str {
        match self {
            Speaks::App => "app",
            Speaks::Xmpp => "xmpp",
            Speaks::Irc => "irc",
        }
    }

    /// The protocol named `name`.
    pub fn from_name(name: &str) -> Option<Speaks> {
        [Speaks::App, Speaks::Xmpp, Speaks::Irc].into_iter().find(|s| s.name() == name)
    }
}

/// A room and how many members it has on this node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RoomSize {
    pub room: Arc<str>,
    pub members: usize,
}

/// Why a member could not join.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum JoinError {
    /// Another member of the room already has this name.
    #[error("name already taken in this room")]
    NameTaken,
    /// The room has [`RoomLimits::max_members`] members.
    #[error("room full")]
    RoomFull,
    /// The room has taken its [`RoomLimits::join_rate`] of joins.
    #[error("too many joins")]
    TooManyJoins,
    /// The broker that spans the nodes could not be asked.
    #[error(transparent)]
    Broker(#[from] crate::BrokerError),
}

/// Why a member could not take a new name.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RenameError {
    /// Another member of the room already has this name.
    #[error("name already taken in this room")]
    NameTaken,
    /// It is not in the room (any more).
    #[error("not a member of this room")]
    NotMember,
    /// The broker that spans the nodes could not be asked.
    #[error(transparent)]
    Broker(#[from] crate::BrokerError),
}

/// Bounds on every room of a hub, so that a join storm costs a bounded
/// amount: each join tells every member, so a room's joins cost its size
/// times their rate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RoomLimits {
    /// Most members of one room.
    pub max_members: usize,
    /// Joins a second one room takes, with bursts of one second's worth;
    /// `None` for no limit.
    pub join_rate: Option<u32>,
    /// What a room keeps of its recent messages for members who join later.
    pub history: HistoryLimits,
}

/// How much of its recent messages a room keeps: at most `messages` of them,
/// and at most `bytes` in all, the oldest going first. A message larger than
/// `bytes` on its own is delivered but not kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HistoryLimits {
    pub messages: usize,
    pub bytes: usize,
}

impl HistoryLimits {
    /// Keep nothing.
    pub const NONE: HistoryLimits = HistoryLimits { messages: 0, bytes: 0 };
}

impl RoomLimits {
    /// No bound at all, and no history (the broadcast app's one room holds
    /// every client).
    pub const NONE: RoomLimits = RoomLimits { max_members: usize::MAX, join_rate: None, history: HistoryLimits::NONE };
}

/// The room a member just joined: the first names in it (the new member's
/// among them), how many members it has, the messages it kept, oldest
/// first, and where its history stands: its `epoch`, the offset of its
/// newest message (`last`, 0 for none), and the offset below which, up to
/// and including `trimmed`, messages are no longer kept.
#[derive(Debug, Clone)]
pub struct Roster {
    pub names: Vec<Arc<str>>,
    pub total: usize,
    pub history: Vec<Payload>,
    pub epoch: Arc<str>,
    pub last: u64,
    pub trimmed: u64,
    /// The room's topic as this node last saw it set.
    pub topic: Option<Topic>,
}

/// A room's topic: the member who set it (its name in the room), its
/// text, and when this node saw it set. It is the last
/// [`crate::RoomEvent::Topic`] published in the room while the room was
/// open on this node; empty text, a topic cleared (where `None` is no
/// topic seen).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Topic {
    pub by: Arc<str>,
    pub text: Arc<str>,
    pub at: std::time::SystemTime,
}

impl Roster {
    /// Whether every message after `offset` of history `epoch` is kept,
    /// so that a client that saw up to it can be given exactly what it
    /// missed: the same history, an offset it can have seen, none lost.
    pub fn keeps_after(&self, offset: u64, epoch: &str) -> bool {
        *self.epoch == *epoch && self.trimmed <= offset && offset <= self.last
    }
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
    limits: RoomLimits,
    /// The history every room counts its positions in, when something else
    /// (the stream between nodes) gives the positions; otherwise each room
    /// opened has an epoch of its own.
    epoch: Option<Arc<str>>,
}

#[derive(Debug)]
struct Room {
    members: Vec<Member>,
    /// The comparison forms of the members' names.
    names: HashSet<Arc<str>>,
    joins: Option<Bucket>,
    /// Recent messages, oldest first, within [`RoomLimits::history`].
    history: VecDeque<Payload>,
    history_bytes: usize,
    /// The history the positions count in (see [`Roster`]).
    epoch: Arc<str>,
    /// The offset of the newest message.
    last: u64,
    /// Messages up to this offset are no longer kept.
    trimmed: u64,
    /// Holds that keep the room open with no members here ([`Hub::hold`]).
    holds: usize,
    topic: Option<Topic>,
}

/// What a room keeps of its history: its messages, oldest first, the offset
/// of its newest message, and the offset up to which messages are no
/// longer kept (see [`Roster`]).
#[derive(Debug, Clone, Default)]
pub struct Kept {
    pub history: Vec<Payload>,
    pub last: u64,
    pub trimmed: u64,
}

impl Room {
    /// Takes `payload`'s topic as the room's, if it is a topic event.
    fn note_topic(&mut self, payload: &Payload) {
        if let Some((_, crate::RoomEvent::Topic { name, text })) = payload.as_event() {
            self.topic = Some(Topic { by: name.clone(), text: text.clone(), at: payload.at() });
        }
    }

    /// Keeps `payload` as the newest message, at the next position unless
    /// it comes with one, dropping the oldest ones to stay within `limits`.
    /// A room that keeps no history gives no positions, but counts what it
    /// let go, so that nobody is told it missed nothing.
    fn keep(&mut self, payload: &Payload, limits: HistoryLimits) {
        if limits.messages == 0 {
            self.last += 1;
            self.trimmed = self.last;
            return;
        }
        // Placed first: its chat JSON, whose length is measured, carries it.
        if payload.position().is_none() {
            payload.place(Position { offset: self.last + 1, epoch: self.epoch.clone() });
        }
        let offset = payload.position().map_or(self.last + 1, |p| p.offset);
        self.last = self.last.max(offset);
        if payload.len() > limits.bytes {
            // Delivered, never kept: nobody can be given it again.
            self.trimmed = self.trimmed.max(offset);
            return;
        }
        while self.history.len() >= limits.messages || self.history_bytes + payload.len() > limits.bytes {
            let Some(oldest) = self.history.pop_front() else { break };
            self.history_bytes -= oldest.len();
            self.trimmed = self.trimmed.max(oldest.position().map_or(0, |p| p.offset));
        }
        self.history_bytes += payload.len();
        self.history.push_back(payload.clone());
    }
}

impl Hub {
    /// A hub with `shards` independently locked shards (at least one) and
    /// rooms without bounds.
    pub fn new(shards: usize) -> Hub {
        Hub::with_limits(shards, RoomLimits::NONE)
    }

    /// A hub whose rooms keep to `limits`.
    pub fn with_limits(shards: usize, limits: RoomLimits) -> Hub {
        Hub { rooms: Shards::new(shards), limits, epoch: None }
    }

    /// A hub whose rooms keep to `limits` and count the positions they are
    /// given in the history `epoch` (a stream's, shared by several nodes).
    pub fn with_epoch(shards: usize, limits: RoomLimits, epoch: Arc<str>) -> Hub {
        Hub { rooms: Shards::new(shards), limits, epoch: Some(epoch) }
    }

    /// The bounds every room of this hub keeps to.
    pub fn limits(&self) -> RoomLimits {
        self.limits
    }

    fn shard(&self, room: &str) -> &Mutex<HashMap<Arc<str>, Room>> {
        self.rooms.get(room)
    }

    /// Adds a member to a room, creating the room if needed. Fails if the
    /// room is full, the member's name is already used in it, or the room
    /// has taken too many joins lately. Returns the room's first `listed`
    /// names after the join, its size, and what it kept.
    pub fn join(&self, room: &str, member: Member, listed: usize) -> Result<Roster, JoinError> {
        self.join_and_greet(room, member, listed, |_| Vec::new())
    }

    /// Joins as [`Hub::join`] does, and queues `greet(&roster)` for the new
    /// member under the room's lock: so the greeting (a members list, the
    /// history) comes before any message published to the room after the
    /// join, whichever thread publishes it.
    pub fn join_and_greet(
        &self,
        room: &str,
        member: Member,
        listed: usize,
        greet: impl FnOnce(&Roster) -> Vec<Payload>,
    ) -> Result<Roster, JoinError> {
        self.join_beside(room, member, listed, &[], greet)
    }

    /// Joins and greets as [`Hub::join_and_greet`] does, in a room that
    /// also has the members named `elsewhere` (on other nodes): the roster
    /// lists and counts them after this node's own.
    pub fn join_beside(
        &self,
        room: &str,
        member: Member,
        listed: usize,
        elsewhere: &[Arc<str>],
        greet: impl FnOnce(&Roster) -> Vec<Payload>,
    ) -> Result<Roster, JoinError> {
        let mut rooms = self.shard(room).lock();
        let entry = self.entry(&mut rooms, room);
        if entry.members.len() >= self.limits.max_members {
            return Err(JoinError::RoomFull);
        }
        if let Some(name) = &member.name
            && entry.names.contains(&name.key)
        {
            return Err(JoinError::NameTaken);
        }
        if let Some(joins) = &mut entry.joins
            && !joins.try_take(Instant::now())
        {
            return Err(JoinError::TooManyJoins);
        }
        if let Some(name) = &member.name {
            entry.names.insert(name.key.clone());
        }
        let outbox = member.outbox.clone();
        entry.members.push(member);
        let here = entry.members.iter().filter_map(|m| m.name.as_ref().map(|n| n.shown.clone()));
        let names = here.chain(elsewhere.iter().cloned()).take(listed).collect();
        let total = entry.members.len() + elsewhere.len();
        let history = entry.history.iter().cloned().collect();
        let roster = Roster { names, total, history, epoch: entry.epoch.clone(), last: entry.last, trimmed: entry.trimmed, topic: entry.topic.clone() };
        for payload in greet(&roster) {
            // A refused push has closed the member's session; it leaves on its own.
            let _ = outbox.push(payload);
        }
        Ok(roster)
    }

    fn entry<'a>(&self, rooms: &'a mut HashMap<Arc<str>, Room>, room: &str) -> &'a mut Room {
        rooms.entry(Arc::from(room)).or_insert_with(|| Room {
            members: Vec::new(),
            names: HashSet::new(),
            joins: self.limits.join_rate.map(|rate| Bucket::new(rate, rate)),
            history: VecDeque::new(),
            history_bytes: 0,
            epoch: self.epoch.clone().unwrap_or_else(new_epoch),
            last: 0,
            trimmed: 0,
            holds: 0,
            topic: None,
        })
    }

    /// Keeps `room` open, with its history, while it has no members (the
    /// host of other nodes' rooms holds each room they follow), opening it
    /// if needed; [`Hub::unhold`] lets it go.
    pub fn hold(&self, room: &str) {
        let mut rooms = self.shard(room).lock();
        self.entry(&mut rooms, room).holds += 1;
    }

    /// Takes back one [`Hub::hold`]; the room closes if that was the last
    /// and it has no members.
    pub fn unhold(&self, room: &str) {
        let mut rooms = self.shard(room).lock();
        let Some(entry) = rooms.get_mut(room) else { return };
        entry.holds = entry.holds.saturating_sub(1);
        if entry.holds == 0 && entry.members.is_empty() {
            rooms.remove(room);
            crate::shrink_when_sparse(&mut rooms);
        }
    }

    /// What `room` keeps of its history, if it is open.
    pub fn kept(&self, room: &str) -> Option<Kept> {
        let rooms = self.shard(room).lock();
        let entry = rooms.get(room)?;
        Some(Kept { history: entry.history.iter().cloned().collect(), last: entry.last, trimmed: entry.trimmed })
    }

    /// Opens `room` with what another node's hub keeps of it (each message
    /// with its position there), in place of what this one kept.
    pub fn restore(&self, room: &str, kept: Kept) {
        let mut rooms = self.shard(room).lock();
        let limits = self.limits.history;
        let entry = self.entry(&mut rooms, room);
        entry.history.clear();
        entry.history_bytes = 0;
        (entry.last, entry.trimmed) = (0, 0);
        for payload in &kept.history {
            entry.keep(payload, limits);
        }
        entry.last = kept.last.max(entry.last);
        entry.trimmed = kept.trimmed.max(entry.trimmed);
    }

    /// Says that `room`'s messages before `offset` are lost (a node that
    /// starts to follow a room reads its stream from there), opening the
    /// room if needed as [`Hub::keep`] does.
    pub fn lost_before(&self, room: &str, offset: u64) {
        let mut rooms = self.shard(room).lock();
        let entry = self.entry(&mut rooms, room);
        let lost = offset.saturating_sub(1);
        entry.trimmed = entry.trimmed.max(lost);
        entry.last = entry.last.max(lost);
    }

    /// Keeps a message in a room's history without delivering it (a
    /// message sent before this node followed the room), creating the room
    /// if needed; [`Hub::forget`] drops it again if nobody joins.
    pub fn keep(&self, room: &str, payload: &Payload) {
        let mut rooms = self.shard(room).lock();
        let limits = self.limits.history;
        self.entry(&mut rooms, room).keep(payload, limits);
    }

    /// Whether `room` is open: it has members, or history kept for them.
    pub fn is_open(&self, room: &str) -> bool {
        self.shard(room).lock().contains_key(room)
    }

    /// Opens `room` with `history` (oldest first, within the history's
    /// limits) unless it is open; returns whether it did. A room opened so
    /// stays open until a member joins and leaves, or [`Hub::forget`].
    pub fn seed(&self, room: &str, history: &[Payload]) -> bool {
        let mut rooms = self.shard(room).lock();
        if rooms.contains_key(room) {
            return false;
        }
        let limits = self.limits.history;
        let entry = self.entry(&mut rooms, room);
        for payload in history {
            entry.keep(payload, limits);
        }
        true
    }

    /// Drops a room that has no members (and so only history), returning
    /// whether it did.
    pub fn forget(&self, room: &str) -> bool {
        let mut rooms = self.shard(room).lock();
        let empty = rooms.get(room).is_some_and(|r| r.members.is_empty() && r.holds == 0);
        if empty {
            rooms.remove(room);
            crate::shrink_when_sparse(&mut rooms);
        }
        empty
    }

    /// The names of `room`'s members, at most `max` of them.
    pub fn names(&self, room: &str, max: usize) -> Vec<Arc<str>> {
        let rooms = self.shard(room).lock();
        let Some(entry) = rooms.get(room) else { return Vec::new() };
        entry.members.iter().filter_map(|m| m.name.as_ref().map(|n| n.shown.clone())).take(max).collect()
    }

    /// The named members of `room`, at most `max` of them, with the
    /// protocol each speaks.
    pub fn members(&self, room: &str, max: usize) -> Vec<(Arc<str>, Speaks)> {
        let rooms = self.shard(room).lock();
        let Some(entry) = rooms.get(room) else { return Vec::new() };
        entry.members.iter().filter_map(|m| m.name.as_ref().map(|n| (n.shown.clone(), m.speaks))).take(max).collect()
    }

    /// The named members of `room`, every one, with their names' both
    /// forms and the protocol each speaks.
    pub fn nicknames(&self, room: &str) -> Vec<(Nickname, Speaks)> {
        let rooms = self.shard(room).lock();
        let Some(entry) = rooms.get(room) else { return Vec::new() };
        entry.members.iter().filter_map(|m| m.name.clone().map(|n| (n, m.speaks))).collect()
    }

    /// Whether a member of `room` has a name whose comparison form is `key`.
    pub fn has_name(&self, room: &str, key: &str) -> bool {
        self.shard(room).lock().get(room).is_some_and(|r| r.names.contains(key))
    }

    /// Every room with members, with how many, in no particular order.
    pub fn rooms(&self) -> Vec<RoomSize> {
        let mut all = Vec::new();
        for shard in self.rooms.iter() {
            let rooms = shard.lock();
            let open = rooms.iter().filter(|(_, r)| !r.members.is_empty());
            all.extend(open.map(|(room, r)| RoomSize { room: room.clone(), members: r.members.len() }));
        }
        all
    }

    /// The protocol member `id` of `room` speaks, if it is there.
    pub fn speaks(&self, room: &str, id: MemberId) -> Option<Speaks> {
        self.shard(room).lock().get(room)?.members.iter().find(|m| m.id == id).map(|m| m.speaks)
    }

    /// What `room` keeps of its recent messages, oldest first.
    pub fn history(&self, room: &str) -> Vec<Payload> {
        self.shard(room).lock().get(room).map_or_else(Vec::new, |r| r.history.iter().cloned().collect())
    }

    /// The outboxes of every member, in any room, whose name's comparison
    /// form is `key`: one each, though it is in several rooms.
    pub fn named(&self, key: &str) -> Vec<Arc<Outbox>> {
        let mut found: Vec<(MemberId, Arc<Outbox>)> = Vec::new();
        for shard in self.rooms.iter() {
            let rooms = shard.lock();
            for room in rooms.values().filter(|r| r.names.contains(key)) {
                for m in room.members.iter().filter(|m| m.name.as_ref().is_some_and(|n| &*n.key == key)) {
                    if !found.iter().any(|(id, _)| *id == m.id) {
                        found.push((m.id, m.outbox.clone()));
                    }
                }
            }
        }
        found.into_iter().map(|(_, outbox)| outbox).collect()
    }

    /// Removes a member from a room (dropping the room when it empties) and
    /// returns it, or `None` if it was not there.
    pub fn leave(&self, room: &str, id: MemberId) -> Option<Member> {
        let mut rooms = self.shard(room).lock();
        let entry = rooms.get_mut(room)?;
        let at = entry.members.iter().position(|m| m.id == id)?;
        let member = entry.members.swap_remove(at);
        if let Some(name) = &member.name {
            entry.names.remove(&name.key);
        }
        if entry.members.is_empty() && entry.holds == 0 {
            rooms.remove(room);
            crate::shrink_when_sparse(&mut rooms);
        }
        Some(member)
    }

    /// Gives member `id` of `room` the name `name` in place of its own, if
    /// no other member has it; the old name, once freed.
    pub fn rename(&self, room: &str, id: MemberId, name: Nickname) -> Result<Option<Nickname>, RenameError> {
        let mut rooms = self.shard(room).lock();
        let entry = rooms.get_mut(room).ok_or(RenameError::NotMember)?;
        let at = entry.members.iter().position(|m| m.id == id).ok_or(RenameError::NotMember)?;
        let own = entry.members[at].name.as_ref().is_some_and(|old| old.key == name.key);
        if !own && entry.names.contains(&name.key) {
            return Err(RenameError::NameTaken);
        }
        if let Some(old) = &entry.members[at].name {
            entry.names.remove(&old.key);
        }
        entry.names.insert(name.key.clone());
        Ok(entry.members[at].name.replace(name))
    }

    /// Pushes the message to every member of the room. The payload is
    /// shared, not copied.
    pub fn publish(&self, room: &str, payload: &Payload) -> Delivery {
        self.fan_out(room, payload, false)
    }

    /// Publishes a message as [`Hub::publish`] does, and keeps it in the
    /// room's history (within [`RoomLimits::history`]) for members who join
    /// later. Done under the same lock as the fan-out, so the history's
    /// order is the order every member saw.
    pub fn publish_and_keep(&self, room: &str, payload: &Payload) -> Delivery {
        self.fan_out(room, payload, true)
    }

    fn fan_out(&self, room: &str, payload: &Payload, keep: bool) -> Delivery {
        let mut rooms = self.shard(room).lock();
        let mut delivery = Delivery::default();
        let Some(entry) = rooms.get_mut(room) else {
            return delivery;
        };
        if keep {
            entry.keep(payload, self.limits.history);
        }
        entry.note_topic(payload);
        for member in &entry.members {
            match member.outbox.push(payload.clone()) {
                Ok(()) => delivery.delivered += 1,
                Err(PushError::Full) => delivery.overflowed += 1,
                Err(PushError::Closed) => {}
            }
        }
        delivery
    }

    /// The room's topic as this node last saw it set, while the room is
    /// open here.
    pub fn topic(&self, room: &str) -> Option<Topic> {
        self.shard(room).lock().get(room).and_then(|r| r.topic.clone())
    }

    /// Takes `payload`, a topic event kept elsewhere, as the room's topic
    /// if the room is open here and has none.
    pub fn seed_topic(&self, room: &str, payload: &Payload) {
        if let Some(entry) = self.shard(room).lock().get_mut(room)
            && entry.topic.is_none()
        {
            entry.note_topic(payload);
        }
    }

    /// Takes `payload`, a topic event set before this node followed the
    /// room (read from the broker's backlog), as the room's topic, opening
    /// the room as [`Hub::keep`] does; anything else changes nothing.
    pub fn note_topic(&self, room: &str, payload: &Payload) {
        if matches!(payload.as_event(), Some((_, crate::RoomEvent::Topic { .. }))) {
            let mut rooms = self.shard(room).lock();
            self.entry(&mut rooms, room).note_topic(payload);
        }
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
        Member { id, name: name.map(|n| Nickname::parse(n).unwrap()), outbox: Arc::new(Outbox::new(limit)), speaks: Speaks::App }
    }

    #[test]
    fn a_room_lists_its_members_names_up_to_a_bound() {
        let hub = Hub::new(4);
        for (id, name) in [(1, Some("ann")), (2, None), (3, Some("Bob Smith"))] {
            hub.join("r", member(id, name, 1024), 0).unwrap();
        }
        let names: Vec<String> = hub.names("r", 10).iter().map(|n| n.to_string()).collect();
        assert_eq!(names, ["ann", "Bob Smith"], "members without a name are not listed");
        assert_eq!(hub.names("r", 1).len(), 1);
        assert!(hub.names("elsewhere", 10).is_empty());
    }

    #[test]
    fn names_are_unique_per_room_only() {
        let hub = Hub::new(4);
        hub.join("lobby", member(1, Some("alice"), 1 << 20), 10).unwrap();
        assert_eq!(hub.join("lobby", member(2, Some("alice"), 1 << 20), 10).err(), Some(JoinError::NameTaken));
        // The same name in other clothes is the same name.
        assert_eq!(hub.join("lobby", member(2, Some("ＡＬＩＣＥ"), 1 << 20), 10).err(), Some(JoinError::NameTaken));
        hub.join("kitchen", member(3, Some("alice"), 1 << 20), 10).unwrap();
        let roster = hub.join("lobby", member(4, Some("bob"), 1 << 20), 10).unwrap();
        assert_eq!((roster.names, roster.total), (vec![Arc::from("alice"), Arc::from("bob")], 2));
        hub.leave("lobby", 1).unwrap();
        hub.join("lobby", member(5, Some("alice"), 1 << 20), 10).unwrap();
        assert_eq!(hub.room_len("lobby"), 2);
    }

    #[test]
    fn a_room_holds_at_most_its_limit_and_lists_at_most_what_is_asked() {
        let hub = Hub::with_limits(2, RoomLimits { max_members: 5, ..RoomLimits::NONE });
        for i in 0..5 {
            let roster = hub.join("r", member(i, Some(&format!("m{i}")), 1 << 10), 3).unwrap();
            assert_eq!((roster.names.len(), roster.total), ((i as usize + 1).min(3), i as usize + 1));
        }
        assert_eq!(hub.join("r", member(9, Some("late"), 1 << 10), 3).err(), Some(JoinError::RoomFull));
        hub.leave("r", 0).unwrap();
        assert!(hub.join("r", member(9, Some("late"), 1 << 10), 3).is_ok());
    }

    #[tokio::test(start_paused = true)]
    async fn joins_to_one_room_are_held_to_its_rate() {
        let hub = Hub::with_limits(2, RoomLimits { max_members: 1000, join_rate: Some(10), ..RoomLimits::NONE });
        let ok = (0..30).filter(|&i| hub.join("r", member(i, Some(&format!("m{i}")), 1 << 10), 0).is_ok()).count();
        assert_eq!(ok, 10);
        assert_eq!(hub.join("r", member(99, Some("x"), 1 << 10), 0).err(), Some(JoinError::TooManyJoins));
        // Another room has its own rate.
        assert!(hub.join("other", member(100, Some("x"), 1 << 10), 0).is_ok());
        tokio::time::advance(std::time::Duration::from_millis(200)).await;
        let ok = (200..230).filter(|&i| hub.join("r", member(i, Some(&format!("m{i}")), 1 << 10), 0).is_ok()).count();
        assert_eq!(ok, 2);
    }

    #[test]
    fn publish_reaches_every_member_of_that_room_only() {
        let hub = Hub::new(4);
        let members: Vec<_> = (0..10).map(|i| member(i, None, 1 << 20)).collect();
        for m in &members[..7] {
            hub.join("a", m.clone(), 0).unwrap();
        }
        for m in &members[7..] {
            hub.join("b", m.clone(), 0).unwrap();
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
        hub.join("r", slow.clone(), 0).unwrap();
        hub.join("r", fast.clone(), 0).unwrap();
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
        hub.join("r", member(1, Some("a"), 10), 0).unwrap();
        assert!(hub.leave("r", 2).is_none());
        assert!(hub.leave("r", 1).is_some());
        assert_eq!(hub.room_len("r"), 0);
        assert!(hub.rooms.iter().all(|s| s.lock().is_empty()));
    }

    #[test]
    fn a_room_keeps_its_last_messages_within_both_bounds_for_those_who_join_later() {
        let history = HistoryLimits { messages: 3, bytes: 10 };
        let hub = Hub::with_limits(2, RoomLimits { history, ..RoomLimits::NONE });
        hub.join("lobby", member(1, Some("alice"), 1 << 20), 10).unwrap();
        let texts = |roster: &Roster| roster.history.iter().map(|p| p.as_text().unwrap().to_owned()).collect::<Vec<_>>();
        for text in ["a", "b", "c", "d"] {
            hub.publish_and_keep("lobby", &Payload::from(text));
        }
        hub.publish("lobby", &Payload::from("presence is not kept"));
        let roster = hub.join("lobby", member(2, Some("bob"), 1 << 20), 10).unwrap();
        assert_eq!(texts(&roster), ["b", "c", "d"], "at most 3 messages, oldest first");
        hub.publish_and_keep("lobby", &Payload::from("eeeeeeeee"));
        let roster = hub.join("lobby", member(3, Some("carol"), 1 << 20), 10).unwrap();
        assert_eq!(texts(&roster), ["d", "eeeeeeeee"], "at most 10 bytes");
        hub.publish_and_keep("lobby", &Payload::from("x".repeat(11)));
        let roster = hub.join("lobby", member(4, Some("dave"), 1 << 20), 10).unwrap();
        assert_eq!(texts(&roster), ["d", "eeeeeeeee"], "a message over the byte bound is not kept");
        // A room that empties is gone, and so is what it kept.
        for id in 1..=4 {
            hub.leave("lobby", id);
        }
        assert!(hub.join("lobby", member(5, Some("erin"), 1 << 20), 10).unwrap().history.is_empty());
    }

    #[test]
    fn a_held_room_keeps_its_history_with_no_members_and_another_hub_takes_it_as_it_is() {
        let history = HistoryLimits { messages: 2, bytes: 1 << 10 };
        let hub = Hub::with_limits(1, RoomLimits { history, ..RoomLimits::NONE });
        let message = |text: &str| Payload::event("lobby", crate::RoomEvent::Message { name: "al".into(), text: text.into() });
        hub.hold("lobby");
        for text in ["a", "b", "c"] {
            hub.publish_and_keep("lobby", &message(text));
        }
        hub.join("lobby", member(1, Some("al"), 1 << 16), 10).unwrap();
        hub.leave("lobby", 1);
        let kept = hub.kept("lobby").expect("held open with no members");
        let texts = |kept: &Kept| kept.history.iter().map(|p| p.as_event().map(|(_, e)| format!("{e:?}")).unwrap()).collect::<Vec<_>>();
        assert_eq!((kept.history.len(), kept.last, kept.trimmed), (2, 3, 1));
        assert!(!hub.forget("lobby"), "a hold is not forgotten");
        let other = Hub::with_epoch(1, RoomLimits { history, ..RoomLimits::NONE }, Arc::from("e"));
        other.keep("lobby", &message("stale"));
        other.restore("lobby", kept.clone());
        let restored = other.kept("lobby").unwrap();
        assert_eq!((texts(&restored), restored.last, restored.trimmed), (texts(&kept), 3, 1));
        let offsets: Vec<u64> = restored.history.iter().map(|p| p.position().unwrap().offset).collect();
        assert_eq!(offsets, [2, 3], "each message at its place in the host's history");
        hub.unhold("lobby");
        assert!(hub.kept("lobby").is_none(), "let go with no members, the room closes");
    }

    #[test]
    fn kept_messages_take_growing_positions_in_a_history_each_opening_of_a_room_names_anew() {
        let history = HistoryLimits { messages: 2, bytes: 1 << 10 };
        let hub = Hub::with_limits(1, RoomLimits { history, ..RoomLimits::NONE });
        let message = |text: &str| Payload::event("lobby", crate::RoomEvent::Message { name: "al".into(), text: text.into() });
        hub.join("lobby", member(1, Some("al"), 1 << 16), 10).unwrap();
        let sent: Vec<Payload> = ["a", "b", "c"].iter().map(|t| message(t)).collect();
        for p in &sent {
            hub.publish_and_keep("lobby", p);
        }
        let offsets: Vec<u64> = sent.iter().map(|p| p.position().unwrap().offset).collect();
        assert_eq!(offsets, [1, 2, 3]);
        let epoch = sent[0].position().unwrap().epoch.clone();
        let roster = hub.join("lobby", member(2, Some("bo"), 1 << 16), 10).unwrap();
        assert_eq!((roster.last, roster.trimmed, &roster.epoch), (3, 1, &epoch), "a was let go for the bound");
        assert!(roster.keeps_after(1, &epoch) && roster.keeps_after(3, &epoch));
        assert!(!roster.keeps_after(0, &epoch), "a is gone");
        assert!(!roster.keeps_after(4, &epoch) && !roster.keeps_after(2, "other"));
        // A message too large to keep is delivered, and lost to recovery.
        let large = message(&"x".repeat(2000));
        hub.publish_and_keep("lobby", &large);
        let roster = hub.join("lobby", member(3, Some("cy"), 1 << 16), 10).unwrap();
        assert_eq!((roster.last, roster.trimmed), (4, 4));
        // A room that keeps nothing recovers nobody past a message.
        let none = Hub::new(1);
        none.join("r", member(9, Some("al"), 1 << 16), 10).unwrap();
        let before = none.join("r", member(10, Some("bo"), 1 << 16), 10).unwrap();
        none.publish_and_keep("r", &message("gone"));
        let after = none.join("r", member(11, Some("cy"), 1 << 16), 10).unwrap();
        assert!(before.keeps_after(before.last, &before.epoch), "nothing missed yet");
        assert!(!after.keeps_after(before.last, &after.epoch) && after.keeps_after(after.last, &after.epoch));
        // Emptied, the room goes; opened again, it counts in a new history.
        for id in 1..=3 {
            hub.leave("lobby", id);
        }
        let roster = hub.join("lobby", member(4, Some("di"), 1 << 16), 10).unwrap();
        assert_ne!(roster.epoch, epoch);
        assert_eq!((roster.last, roster.trimmed), (0, 0));
    }

    #[test]
    fn positions_given_from_outside_are_kept_and_what_came_before_them_is_lost() {
        let history = HistoryLimits { messages: 10, bytes: 1 << 10 };
        let hub = Hub::with_epoch(1, RoomLimits { history, ..RoomLimits::NONE }, "stream".into());
        let at = |offset| {
            let p = Payload::event("r", crate::RoomEvent::Message { name: "al".into(), text: "t".into() });
            p.place(Position { offset, epoch: "stream".into() });
            p
        };
        hub.lost_before("r", 40);
        hub.keep("r", &at(40));
        hub.keep("r", &at(57));
        let roster = hub.join("r", member(1, Some("al"), 1 << 16), 10).unwrap();
        assert_eq!((&*roster.epoch, roster.last, roster.trimmed), ("stream", 57, 39));
        assert!(roster.keeps_after(39, "stream") && !roster.keeps_after(38, "stream"));
    }

    #[test]
    fn members_rooms_and_a_name_across_rooms_are_found_for_the_server_api() {
        let hub = Hub::new(4);
        let irc = Member { speaks: Speaks::Irc, ..member(1, Some("Ann"), 1024) };
        let shared = irc.outbox.clone();
        hub.join("lobby", irc.clone(), 10).unwrap();
        hub.join("lobby", member(2, Some("bob"), 1024), 10).unwrap();
        hub.join("lobby", member(3, None, 1024), 10).unwrap();
        hub.join("den", irc, 10).unwrap();
        hub.join("den", member(4, Some("ANN2"), 1024), 10).unwrap();
        let names = |members: Vec<(Arc<str>, Speaks)>| members.into_iter().map(|(n, s)| (n.to_string(), s)).collect::<Vec<_>>();
        assert_eq!(names(hub.members("lobby", 10)), [("Ann".to_owned(), Speaks::Irc), ("bob".to_owned(), Speaks::App)], "named members only");
        assert_eq!(hub.members("lobby", 1).len(), 1);
        let mut rooms = hub.rooms();
        rooms.sort_by(|a, b| a.room.cmp(&b.room));
        assert_eq!(rooms, [RoomSize { room: "den".into(), members: 2 }, RoomSize { room: "lobby".into(), members: 3 }]);
        let named = hub.named("ann");
        assert_eq!(named.len(), 1, "one client in two rooms is found once");
        assert!(Arc::ptr_eq(&named[0], &shared));
        assert!(hub.named("nobody").is_empty());
        assert_eq!(hub.speaks("den", 1), Some(Speaks::Irc));
    }

    #[test]
    fn a_rename_takes_a_free_name_and_frees_the_old_one() {
        let hub = Hub::new(1);
        hub.join("lobby", member(1, Some("ann"), 1024), 10).unwrap();
        hub.join("lobby", member(2, Some("bob"), 1024), 10).unwrap();
        let name = |n: &str| Nickname::parse(n).unwrap();
        assert_eq!(hub.rename("lobby", 1, name("Bob")), Err(RenameError::NameTaken));
        assert_eq!(hub.rename("lobby", 3, name("cy")), Err(RenameError::NotMember));
        assert_eq!(hub.rename("lobby", 1, name("cy")).unwrap().map(|old| old.shown), Some(Arc::from("ann")));
        assert_eq!(hub.join("lobby", member(4, Some("cy"), 1024), 10).err(), Some(JoinError::NameTaken));
        hub.join("lobby", member(5, Some("ann"), 1024), 10).expect("the old name is free");
        assert!(hub.rename("lobby", 1, name("CY")).is_ok(), "its own name in another case");
    }

    #[test]
    fn a_greeting_is_queued_for_the_new_member_only_and_only_when_it_joins() {
        let hub = Hub::new(2);
        let alice = member(1, Some("alice"), 1 << 20);
        hub.join("lobby", alice.clone(), 10).unwrap();
        let greet = |roster: &Roster| vec![Payload::new(format!("{} here", roster.total))];
        let bob = member(2, Some("bob"), 1 << 20);
        hub.join_and_greet("lobby", bob.clone(), 10, greet).unwrap();
        hub.publish("lobby", &Payload::from("after"));
        let refused = member(3, Some("Bob"), 1 << 20);
        assert_eq!(hub.join_and_greet("lobby", refused.clone(), 10, greet).err(), Some(JoinError::NameTaken));
        // What is queued for `m` now, without waiting for more.
        let drain = |m: &Member| {
            use std::future::Future;
            let mut out = Vec::new();
            let waker = std::task::Waker::noop();
            let mut cx = std::task::Context::from_waker(waker);
            {
                let mut drain = std::pin::pin!(m.outbox.drain(&mut out));
                let _ = drain.as_mut().poll(&mut cx);
            }
            out.iter().map(|p| p.as_text().unwrap().to_owned()).collect::<Vec<_>>()
        };
        assert_eq!(drain(&bob), ["2 here", "after"]);
        assert_eq!(drain(&alice), ["after"]);
        assert!(drain(&refused).is_empty());
    }

    #[test]
    fn members_elsewhere_are_listed_after_this_nodes_and_counted() {
        let hub = Hub::new(2);
        hub.join("lobby", member(1, Some("alice"), 1 << 10), 10).unwrap();
        let elsewhere = [Arc::from("carol"), Arc::from("dave")];
        let roster = hub.join_beside("lobby", member(2, Some("bob"), 1 << 10), 3, &elsewhere, |_| Vec::new()).unwrap();
        assert_eq!(roster.names, [Arc::from("alice"), Arc::from("bob"), Arc::from("carol")]);
        assert_eq!(roster.total, 4);
    }

    #[test]
    fn history_kept_before_anyone_joined_greets_the_first_member_and_an_unjoined_room_is_forgotten() {
        let hub = Hub::with_limits(2, RoomLimits { history: HistoryLimits { messages: 2, bytes: 100 }, ..RoomLimits::NONE });
        for text in ["a", "b", "c"] {
            hub.keep("lobby", &Payload::from(text));
        }
        let roster = hub.join("lobby", member(1, Some("alice"), 1 << 10), 10).unwrap();
        let kept: Vec<_> = roster.history.iter().map(|p| p.as_text().unwrap().to_owned()).collect();
        assert_eq!(kept, ["b", "c"]);
        assert!(!hub.forget("lobby"), "a room with members stays");
        hub.keep("empty", &Payload::from("x"));
        assert!(hub.forget("empty"));
        assert!(!hub.forget("empty"));
    }

    #[test]
    fn a_room_is_seeded_with_history_only_when_it_is_not_open() {
        let hub = Hub::with_limits(2, RoomLimits { history: HistoryLimits { messages: 2, bytes: 100 }, ..RoomLimits::NONE });
        assert!(!hub.is_open("lobby"));
        assert!(hub.seed("lobby", &["a", "b", "c"].map(Payload::from)));
        assert!(hub.is_open("lobby"));
        assert!(!hub.seed("lobby", &[Payload::from("late")]), "an open room keeps its own history");
        let roster = hub.join("lobby", member(1, Some("alice"), 1 << 10), 10).unwrap();
        let kept: Vec<_> = roster.history.iter().map(|p| p.as_text().unwrap().to_owned()).collect();
        assert_eq!(kept, ["b", "c"]);
        hub.leave("lobby", 1).unwrap();
        assert!(!hub.is_open("lobby"), "its history goes with its last member");
    }
}
