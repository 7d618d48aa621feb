//! The seam between the apps and whatever carries a room's events between
//! nodes. [`MemoryBroker`] is one node on its own: a [`Hub`]. A broker for
//! several nodes (the `cluster` crate's, over NATS) keeps a hub of its own
//! members too, and fans each event out to them as it arrives.

use std::fmt::Debug;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use wire::nickname::Nickname;

use crate::{Hub, JoinError, Member, MemberId, Outbox, Payload, Position, RenameError, RoomLimits, RoomSize, Roster, Speaks};

/// A boxed future, so that brokers can be trait objects.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// What a new member is sent before any message of its room, made from the
/// room it joined (see [`Hub::join_and_greet`]).
pub type Greeting = Box<dyn FnOnce(&Roster) -> Vec<Payload> + Send>;

/// Why a broker could not do what was asked.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum BrokerError {
    /// The broker's server cannot be reached now.
    #[error("the message broker is unreachable; try again later")]
    Unavailable,
    /// More is waiting to go to the broker than it may hold.
    #[error("the message broker is behind; try again later")]
    Busy,
}

/// A member of a room as the server API lists it: its name, the protocol
/// it speaks, and the node it is on (`None`: this one).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Present {
    pub name: Arc<str>,
    pub speaks: Speaks,
    pub node: Option<Arc<str>>,
}

/// Rooms that may span nodes: publishing to a room, following and leaving
/// one (a member's join and leave), and claiming a name in one (a join with
/// a named member fails if the name is taken on any node).
pub trait Broker: Send + Sync + Debug {
    /// Adds `member` to `room`, claiming its name, and queues `greet`'s
    /// messages for it before any later message of the room.
    fn join<'a>(&'a self, room: &'a str, member: Member, listed: usize, greet: Greeting) -> BoxFuture<'a, Result<Roster, JoinError>>;

    /// Takes a member out of a room and frees its name; `None` if it was
    /// not there.
    fn leave(&self, room: &str, id: MemberId) -> Option<Member>;

    /// Gives member `id` of `room` a new name, claimed as a join claims
    /// one, and frees its old one. Telling the room is the caller's.
    fn rename<'a>(&'a self, room: &'a str, id: MemberId, name: Nickname) -> BoxFuture<'a, Result<(), RenameError>>;

    /// Sends an event to every member of the room, on every node, without
    /// waiting: `Err` if the broker cannot take it now.
    fn publish(&self, room: &str, payload: Payload) -> Result<(), BrokerError>;

    /// Sends a message to every member of the room, on every node, and
    /// keeps it in the room's history for members who join later; resolves
    /// once the broker has it, so that a failure can be told to the sender,
    /// with the message's position in the room's history (`None` if the
    /// room kept it nowhere: it keeps no history, or has no member here).
    /// A broker that orders its rooms on this node (in memory, a host, an
    /// uplink to one) gives the message its place in that order when it is
    /// called, not when the future is awaited; through NATS the stream
    /// orders it when it takes it.
    fn publish_and_keep<'a>(&'a self, room: &'a str, payload: Payload) -> BoxFuture<'a, Result<Option<Position>, BrokerError>>;

    /// The bounds each room keeps to.
    fn limits(&self) -> RoomLimits;

    /// The names of `room`'s members on every node this one knows of, at
    /// most `max` of them (IRC's NAMES and WHO ask after the join).
    fn names(&self, room: &str, max: usize) -> Vec<Arc<str>>;

    /// The named members of `room` on every node, at most `max` of them,
    /// this node's first.
    fn presence<'a>(&'a self, room: &'a str, max: usize) -> BoxFuture<'a, Result<Vec<Present>, BrokerError>>;

    /// Every room with members on any node, with how many, in no
    /// particular order.
    fn rooms(&self) -> BoxFuture<'_, Result<Vec<RoomSize>, BrokerError>>;

    /// What `room` keeps of its recent messages on this node, oldest first
    /// (nothing if no member here follows it).
    fn history(&self, room: &str) -> Vec<Payload>;

    /// `room`'s topic as this node last saw it set (see [`crate::Topic`]).
    fn topic(&self, room: &str) -> Option<crate::Topic>;

    /// Takes `topic` (a topic event kept elsewhere: a persistent MUC room's
    /// subject) as `room`'s on this node, if the room is open here and has
    /// none; nobody is told.
    fn seed_topic(&self, room: &str, topic: &Payload);

    /// The outboxes of this node's members, in any room, whose name's
    /// comparison form is `key` (one each).
    fn named(&self, key: &str) -> Vec<Arc<Outbox>>;

    /// Whether a join to `room` would open it with no history, which the
    /// caller may then give it ([`Broker::seed`]) from an archive: a room
    /// of this node's memory has none once its last member left. A broker
    /// that keeps its rooms' history itself (across nodes) says `false`.
    fn wants_history(&self, _room: &str) -> bool {
        false
    }

    /// Opens `room` with `history` (oldest first) if it is not open, for
    /// the join that follows; does nothing if it is.
    fn seed(&self, _room: &str, _history: Vec<Payload>) {}

    /// Whether every call completes at once (no I/O), so a caller may run
    /// [`Broker::join`]'s future to its end in one poll.
    fn is_immediate(&self) -> bool {
        false
    }
}

/// One node's rooms, in memory: the default broker.
#[derive(Debug)]
pub struct MemoryBroker {
    hub: Hub,
}

impl MemoryBroker {
    /// A broker over `hub`.
    pub fn new(hub: Hub) -> MemoryBroker {
        MemoryBroker { hub }
    }

    /// The rooms.
    pub fn hub(&self) -> &Hub {
        &self.hub
    }
}

impl Broker for MemoryBroker {
    fn join<'a>(&'a self, room: &'a str, member: Member, listed: usize, greet: Greeting) -> BoxFuture<'a, Result<Roster, JoinError>> {
        Box::pin(std::future::ready(self.hub.join_and_greet(room, member, listed, greet)))
    }

    fn leave(&self, room: &str, id: MemberId) -> Option<Member> {
        self.hub.leave(room, id)
    }

    fn rename<'a>(&'a self, room: &'a str, id: MemberId, name: Nickname) -> BoxFuture<'a, Result<(), RenameError>> {
        Box::pin(std::future::ready(self.hub.rename(room, id, name).map(|_| ())))
    }

    fn publish(&self, room: &str, payload: Payload) -> Result<(), BrokerError> {
        self.hub.publish(room, &payload);
        Ok(())
    }

    fn publish_and_keep<'a>(&'a self, room: &'a str, payload: Payload) -> BoxFuture<'a, Result<Option<Position>, BrokerError>> {
        self.hub.publish_and_keep(room, &payload);
        Box::pin(std::future::ready(Ok(payload.position().cloned())))
    }

    fn limits(&self) -> RoomLimits {
        self.hub.limits()
    }

    fn names(&self, room: &str, max: usize) -> Vec<Arc<str>> {
        self.hub.names(room, max)
    }

    fn presence<'a>(&'a self, room: &'a str, max: usize) -> BoxFuture<'a, Result<Vec<Present>, BrokerError>> {
        let members = self.hub.members(room, max).into_iter().map(|(name, speaks)| Present { name, speaks, node: None });
        Box::pin(std::future::ready(Ok(members.collect())))
    }

    fn rooms(&self) -> BoxFuture<'_, Result<Vec<RoomSize>, BrokerError>> {
        Box::pin(std::future::ready(Ok(self.hub.rooms())))
    }

    fn history(&self, room: &str) -> Vec<Payload> {
        self.hub.history(room)
    }

    fn topic(&self, room: &str) -> Option<crate::Topic> {
        self.hub.topic(room)
    }

    fn seed_topic(&self, room: &str, topic: &Payload) {
        self.hub.seed_topic(room, topic);
    }

    fn named(&self, key: &str) -> Vec<Arc<Outbox>> {
        self.hub.named(key)
    }

    fn wants_history(&self, room: &str) -> bool {
        !self.hub.is_open(room)
    }

    fn seed(&self, room: &str, history: Vec<Payload>) {
        self.hub.seed(room, &history);
    }

    fn is_immediate(&self) -> bool {
        true
    }
}
