//! Rooms, sessions' outbound queues, and fan-out.
//!
//! A session owns one bounded [`Outbox`]; its transport's writer drains it.
//! The [`Hub`] maps room names to members (sharded by name) and publishes a
//! [`Payload`] to every member by pushing a reference-counted pointer, so a
//! message sent to 2,000 members is encoded once per wire framing, never per
//! member. The hub knows nothing of transports or apps.

mod broker;
mod bucket;
mod event;
mod outbox;
mod payload;
mod rooms;
mod shards;

pub use broker::{BoxFuture, Broker, BrokerError, Greeting, MemoryBroker, Present};
pub use bucket::Bucket;
pub use event::RoomEvent;
pub use outbox::{Close, Direct, Drained, Outbox, PushError, Sent};
pub use payload::{Form, IRC_FORMS, Payload, Position};
pub use rooms::{Delivery, HistoryLimits, Hub, JoinError, Kept, Member, MemberId, RenameError, RoomLimits, RoomSize, Roster, Speaks, Topic, next_member_id};
pub use shards::{Shards, shrink_when_sparse};
