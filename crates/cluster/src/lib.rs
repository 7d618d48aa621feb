//! Switchboard on several nodes: rooms that span nodes, either through NATS
//! JetStream (see `NatsBroker`; `Nats` is one node's connection to it) or
//! over a link from each node to one that hosts the rooms (`host::Host`
//! and `remote::Uplink`, the protocol in `link`). The encoding every node
//! must share is in `envelope` and `link`. Outside the rooms, a node asks
//! the others to close a user's clients (`disconnect_elsewhere`) and hands
//! them a protocol's messages for its clients there (`deliver_elsewhere`).

mod broker;
mod control;
mod followed;
pub mod envelope;
pub mod host;
pub mod link;
mod nats;
pub mod remote;

use std::sync::Arc;
use std::time::Duration;

pub use broker::NatsBroker;
use hub::{Broker, BrokerError, RoomLimits};
pub use nats::{ConnectError, Nats, NatsState, Options};

/// What another node's disconnect closes here: `here(name, reason)`, how
/// many clients.
pub type Disconnects = Arc<dyn Fn(&str, &str) -> usize + Send + Sync>;

/// What another node's delivery reaches here: `here(to, body)`, how many
/// clients. `to` are the addresses the body is for and `body` the
/// protocol's text, neither of which this crate reads.
pub type Deliveries = Arc<dyn Fn(&[Arc<str>], &str) -> usize + Send + Sync>;

/// How this node shares its rooms with others.
#[derive(Debug, Clone)]
pub enum Cluster {
    /// Through NATS JetStream.
    Nats(Arc<Nats>),
    /// It hosts them, for the nodes linked to it.
    Host(Arc<host::Host>),
    /// Another node hosts them.
    Uplink(Arc<remote::Uplink>),
}

impl Cluster {
    /// The rooms of the app mounted at `prefix`, which keep to `limits`.
    pub fn broker(&self, prefix: &str, limits: RoomLimits) -> Arc<dyn Broker> {
        match self {
            Cluster::Nats(nats) => NatsBroker::new(nats.clone(), prefix, limits),
            Cluster::Host(host) => host.broker(prefix, limits),
            Cluster::Uplink(uplink) => uplink.broker(prefix, limits),
        }
    }

    /// This node's name.
    pub fn node(&self) -> Arc<str> {
        match self {
            Cluster::Nats(nats) => nats.node().clone(),
            Cluster::Host(host) => host.node().clone(),
            Cluster::Uplink(uplink) => uplink.node().clone(),
        }
    }

    /// The other nodes this one knows of now.
    pub fn others(&self) -> Vec<Arc<str>> {
        match self {
            Cluster::Nats(nats) => nats.others(),
            Cluster::Host(host) => host.others(),
            Cluster::Uplink(uplink) => uplink.others(),
        }
    }

    /// Whether the way to the other nodes is up, and how many times it came
    /// back after it broke.
    pub fn health(&self) -> (bool, u64) {
        match self {
            Cluster::Nats(nats) => (nats.state().is_up(), nats.state().reconnects()),
            Cluster::Host(_) => (true, 0),
            Cluster::Uplink(uplink) => (uplink.is_up(), uplink.reconnects()),
        }
    }

    /// Asks every other node to close the clients known by `name`, telling
    /// them `reason`: how many they closed, of those that answered within
    /// `patience`.
    pub async fn disconnect_elsewhere(&self, name: &str, reason: &str, patience: Duration) -> Result<usize, BrokerError> {
        match self {
            Cluster::Nats(nats) => nats.disconnect_elsewhere(name, reason, patience).await,
            Cluster::Host(host) => Ok(host.disconnect_elsewhere(None, name, reason, patience).await),
            Cluster::Uplink(uplink) => uplink.disconnect_elsewhere(name, reason, patience).await,
        }
    }

    /// Answers the other nodes' disconnects with what `here(name, reason)`
    /// closes on this node (how many).
    pub fn answer_disconnects(&self, here: impl Fn(&str, &str) -> usize + Send + Sync + 'static) {
        match self {
            Cluster::Nats(nats) => {
                tokio::spawn(nats.clone().answer_disconnects(Arc::new(here)));
            }
            Cluster::Host(host) => host.answer_disconnects(Arc::new(here)),
            Cluster::Uplink(uplink) => uplink.answer_disconnects(Arc::new(here)),
        }
    }

    /// Hands `body` for `to` to every other node, each delivering it to
    /// what it holds of `to` (see [`Cluster::answer_deliveries`]), in the
    /// order this node hands them. With `patience`, how many clients it
    /// reached, of the nodes that answered within it; without, 0 at once.
    /// A body longer than the way to the other nodes takes is not sent.
    pub async fn deliver_elsewhere(&self, to: Vec<Arc<str>>, body: Arc<str>, patience: Option<Duration>) -> Result<usize, BrokerError> {
        match self {
            Cluster::Nats(nats) => nats.deliver_elsewhere(to, body, patience).await,
            Cluster::Host(host) => host.deliver_elsewhere(None, to, body, patience).await,
            Cluster::Uplink(uplink) => uplink.deliver_elsewhere(to, body, patience).await,
        }
    }

    /// Takes the other nodes' deliveries with `here(to, body)`, which says
    /// how many clients each reached on this node.
    pub fn answer_deliveries(&self, here: impl Fn(&[Arc<str>], &str) -> usize + Send + Sync + 'static) {
        match self {
            Cluster::Nats(nats) => {
                tokio::spawn(nats.clone().answer_deliveries(Arc::new(here)));
            }
            Cluster::Host(host) => host.answer_deliveries(Arc::new(here)),
            Cluster::Uplink(uplink) => uplink.answer_deliveries(Arc::new(here)),
        }
    }
}
