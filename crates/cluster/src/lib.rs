//! Switchboard on several nodes: rooms that span nodes through NATS
//! JetStream (see `NatsBroker`), and one node's connection to it (`Nats`).
//! The encoding every node must share is in `envelope`.

mod broker;
mod control;
pub mod envelope;
mod nats;

pub use broker::NatsBroker;
pub use nats::{ConnectError, Nats, NatsState, Options};
