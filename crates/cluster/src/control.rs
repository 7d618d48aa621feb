//! What one node asks of every other, outside the rooms, through NATS:
//! closing a user's clients wherever they are (the server API's
//! disconnect), and delivering a protocol's message to the clients it is
//! for on the other nodes.
//!
//! - A disconnect goes to `sb.ctl.disconnect` as
//!   `{"node":"…","name":"…","reason":"…"}` with a reply inbox; each other
//!   node closes what it holds of that name and answers
//!   `{"disconnected":N}`. The asking node closes its own itself.
//! - A delivery goes to `sb.ctl.deliver` as
//!   `{"node":"…","to":["…"],"body":"…"}`, with a reply inbox when the
//!   sender waits to know how many it reached; each other node delivers it
//!   to what it holds of `to` and answers `{"delivered":N}`. One node's
//!   deliveries reach each other node in the order it sent them (one
//!   connection, one subject).

use std::sync::{Arc, Weak};
use std::time::Duration;

use futures_util::StreamExt;
use hub::BrokerError;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use crate::nats::Nats;
use crate::{Deliveries, Disconnects};

/// The subject of disconnect requests.
pub const DISCONNECT: &str = "sb.ctl.disconnect";

/// The subject of deliveries.
pub const DELIVER: &str = "sb.ctl.deliver";

#[derive(Debug, Serialize, Deserialize)]
struct Disconnect {
    node: Arc<str>,
    name: String,
    reason: String,
}

#[derive(Debug, Serialize, Deserialize)]
struct Disconnected {
    disconnected: usize,
}

#[derive(Debug, Serialize, Deserialize)]
struct Deliver {
    node: Arc<str>,
    to: Vec<Arc<str>>,
    body: Arc<str>,
}

#[derive(Debug, Serialize, Deserialize)]
struct Delivered {
    delivered: usize,
}

/// A request one node makes of the others, and the count each answers.
trait Request: Serialize + DeserializeOwned {
    type Answer: Serialize + DeserializeOwned;
    /// Whose request it is: a node does not take its own.
    fn node(&self) -> &str;
    fn count(answer: &Self::Answer) -> usize;
}

impl Request for Disconnect {
    type Answer = Disconnected;
    fn node(&self) -> &str {
        &self.node
    }
    fn count(answer: &Disconnected) -> usize {
        answer.disconnected
    }
}

impl Request for Deliver {
    type Answer = Delivered;
    fn node(&self) -> &str {
        &self.node
    }
    fn count(answer: &Delivered) -> usize {
        answer.delivered
    }
}

fn unavailable(what: &str, e: &dyn std::fmt::Display) -> BrokerError {
    tracing::warn!("broker: cannot {what}: {e}");
    BrokerError::Unavailable
}

impl Nats {
    /// Asks every other node to close the clients known by `name`, telling
    /// them `reason`: how many they closed, of the nodes that answered
    /// within `patience` (every node heard from lately is waited for).
    pub async fn disconnect_elsewhere(&self, name: &str, reason: &str, patience: Duration) -> Result<usize, BrokerError> {
        let ask = Disconnect { node: self.node.clone(), name: name.to_owned(), reason: reason.to_owned() };
        self.ask_others(DISCONNECT, &ask, patience, "ask the other nodes to disconnect a user").await
    }

    /// Hands `body` for `to` to every other node; with `patience`, how many
    /// clients it reached there, of the nodes that answered within it.
    pub async fn deliver_elsewhere(&self, to: Vec<Arc<str>>, body: Arc<str>, patience: Option<Duration>) -> Result<usize, BrokerError> {
        let ask = Deliver { node: self.node.clone(), to, body };
        match patience {
            Some(patience) => self.ask_others(DELIVER, &ask, patience, "deliver to the other nodes").await,
            None => {
                self.check_up()?;
                if self.others().is_empty() {
                    return Ok(0);
                }
                let body = self.fitting(&ask)?;
                self.client.publish(DELIVER, body.into()).await.map_err(|e| unavailable("deliver to the other nodes", &e))?;
                Ok(0)
            }
        }
    }

    /// `ask` as the bytes NATS carries, unless it is longer than the
    /// server takes.
    fn fitting(&self, ask: &impl Serialize) -> Result<Vec<u8>, BrokerError> {
        let body = serde_json::to_vec(ask).unwrap_or_default();
        let max = self.client.server_info().max_payload;
        if body.len() > max {
            return Err(unavailable("hand the other nodes a request", &format!("{} bytes, NATS takes {max}", body.len())));
        }
        Ok(body)
    }

    /// Sends `ask` to `subject` and sums the answers of the other nodes
    /// that come within `patience`.
    async fn ask_others<R: Request>(&self, subject: &'static str, ask: &R, patience: Duration, what: &str) -> Result<usize, BrokerError> {
        self.check_up()?;
        let expected = self.others().len();
        if expected == 0 {
            return Ok(0);
        }
        let body = self.fitting(ask)?;
        let inbox = self.client.new_inbox();
        let mut replies = self.client.subscribe(inbox.clone()).await.map_err(|e| unavailable(what, &e))?;
        self.client.publish_with_reply(subject, inbox, body.into()).await.map_err(|e| unavailable(what, &e))?;
        let deadline = tokio::time::Instant::now() + patience;
        let (mut answered, mut count) = (0, 0);
        while answered < expected {
            let Ok(Some(reply)) = tokio::time::timeout_at(deadline, replies.next()).await else { break };
            if let Ok(answer) = serde_json::from_slice::<R::Answer>(&reply.payload) {
                answered += 1;
                count += R::count(&answer);
            }
        }
        if answered < expected {
            tracing::warn!("broker: {answered} of {expected} other nodes answered within {patience:?} ({what})");
        }
        Ok(count)
    }

    /// Answers the other nodes' disconnect requests with what `here`
    /// closes on this node (`here(name, reason)`: how many), for as long as
    /// this node is connected.
    pub async fn answer_disconnects(self: Arc<Self>, here: Disconnects) {
        self.answer(DISCONNECT, "take other nodes' disconnects", move |ask: Disconnect| Disconnected { disconnected: here(&ask.name, &ask.reason) }).await;
    }

    /// Takes the other nodes' deliveries with `here(to, body)`, in the
    /// order each node sent them, answering how many clients each reached
    /// when asked, for as long as this node is connected.
    pub async fn answer_deliveries(self: Arc<Self>, here: Deliveries) {
        self.answer(DELIVER, "take other nodes' deliveries", move |ask: Deliver| Delivered { delivered: here(&ask.to, &ask.body) }).await;
    }

    /// Takes the requests on `subject` from other nodes, one at a time,
    /// and answers those that carry a reply inbox with what `take` says.
    async fn answer<R: Request>(self: Arc<Self>, subject: &'static str, what: &str, take: impl Fn(R) -> R::Answer) {
        let mut requests = match self.client.subscribe(subject).await {
            Ok(requests) => requests,
            Err(e) => {
                tracing::warn!("broker: this node will not {what}: {e}");
                return;
            }
        };
        let nats: Weak<Nats> = Arc::downgrade(&self);
        drop(self);
        while let Some(request) = requests.next().await {
            let Some(nats) = nats.upgrade() else { return };
            let Ok(ask) = serde_json::from_slice::<R>(&request.payload) else { continue };
            if *ask.node() == *nats.node {
                continue;
            }
            let answer = take(ask);
            if let Some(reply) = request.reply {
                let body = serde_json::to_vec(&answer).unwrap_or_default();
                let _ = nats.client.publish(reply, body.into()).await;
            }
        }
    }
}
