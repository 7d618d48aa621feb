//! What one node asks of every other, outside the rooms: closing a user's
//! clients wherever they are (the server API's disconnect). A request goes
//! to `sb.ctl.disconnect` as `{"node":"…","name":"…","reason":"…"}` with a
//! reply inbox; each other node closes what it holds of that name and
//! answers `{"disconnected":N}`. The asking node closes its own itself.

use std::sync::{Arc, Weak};
use std::time::Duration;

use futures_util::StreamExt;
use hub::BrokerError;
use serde::{Deserialize, Serialize};

use crate::nats::Nats;

/// The subject of disconnect requests.
pub const DISCONNECT: &str = "sb.ctl.disconnect";

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

impl Nats {
    /// Asks every other node to close the clients known by `name`, telling
    /// them `reason`: how many they closed, of the nodes that answered
    /// within `patience` (every node heard from lately is waited for).
    pub async fn disconnect_elsewhere(&self, name: &str, reason: &str, patience: Duration) -> Result<usize, BrokerError> {
        self.check_up()?;
        let expected = self.others().len();
        if expected == 0 {
            return Ok(0);
        }
        let unavailable = |e: &dyn std::fmt::Display| {
            tracing::warn!("broker: cannot ask the other nodes to disconnect a user: {e}");
            BrokerError::Unavailable
        };
        let inbox = self.client.new_inbox();
        let mut replies = self.client.subscribe(inbox.clone()).await.map_err(|e| unavailable(&e))?;
        let ask = Disconnect { node: self.node.clone(), name: name.to_owned(), reason: reason.to_owned() };
        let body = serde_json::to_vec(&ask).unwrap_or_default();
        self.client.publish_with_reply(DISCONNECT, inbox, body.into()).await.map_err(|e| unavailable(&e))?;
        let deadline = tokio::time::Instant::now() + patience;
        let (mut answered, mut closed) = (0, 0);
        while answered < expected {
            let Ok(Some(reply)) = tokio::time::timeout_at(deadline, replies.next()).await else { break };
            if let Ok(Disconnected { disconnected }) = serde_json::from_slice(&reply.payload) {
                answered += 1;
                closed += disconnected;
            }
        }
        if answered < expected {
            tracing::warn!("broker: {answered} of {expected} other nodes answered a disconnect within {patience:?}");
        }
        Ok(closed)
    }

    /// Answers the other nodes' disconnect requests with what `here`
    /// closes on this node (`here(name, reason)`: how many), for as long as
    /// this node is connected.
    pub async fn answer_disconnects(self: Arc<Self>, here: impl Fn(&str, &str) -> usize + Send + 'static) {
        let mut requests = match self.client.subscribe(DISCONNECT).await {
            Ok(requests) => requests,
            Err(e) => {
                tracing::warn!("broker: this node will not take other nodes' disconnects: {e}");
                return;
            }
        };
        let nats: Weak<Nats> = Arc::downgrade(&self);
        drop(self);
        while let Some(request) = requests.next().await {
            let Some(nats) = nats.upgrade() else { return };
            let Ok(ask) = serde_json::from_slice::<Disconnect>(&request.payload) else { continue };
            if ask.node == nats.node {
                continue;
            }
            let disconnected = here(&ask.name, &ask.reason);
            if let Some(reply) = request.reply {
                let body = serde_json::to_vec(&Disconnected { disconnected }).unwrap_or_default();
                let _ = nats.client.publish(reply, body.into()).await;
            }
        }
    }
}
