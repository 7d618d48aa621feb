//! Switchboard on several nodes: rooms that span nodes through NATS
//! JetStream (see `NatsBroker`), and one node's connection to it (`Link`).
//! The encoding every node must share is in `envelope`.

mod broker;
pub mod envelope;
mod link;

pub use broker::NatsBroker;
pub use link::{ConnectError, Link, LinkState, Options};
