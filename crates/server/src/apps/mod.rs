//! The apps: what the server does with a client's messages. An app sees a
//! [`Client`] (an id, an outbox and who it is) and never knows which transport
//! carries it.

mod chat;

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use bytes::Bytes;
use hub::{Close, Hub, Member, MemberId, Outbox, Payload, RoomLimits};
use serde::Deserialize;
use tokio_tungstenite::tungstenite::Utf8Bytes;
use tokio::time::Instant;
use wire::app::{AppError, Count};

use crate::token::Identity;

/// The apps a mount can serve.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum AppKind {
    /// Sends every message back to its sender.
    Echo,
    /// Sends every message to every connected client, the sender included.
    Broadcast,
    /// Named members in rooms; see `wire::app`.
    Chat,
    /// Answers `{"count":N}` with `{"count":N-1}`.
    Count,
    /// Closes every client at once with 3000 "Go away!" (for the SockJS
    /// protocol suite).
    Close,
}

impl AppKind {
    /// The apps mounted when the configuration names none.
    pub const ALL: [AppKind; 4] = [AppKind::Echo, AppKind::Broadcast, AppKind::Chat, AppKind::Count];

    /// The app's name, also its default prefix.
    pub fn name(self) -> &'static str {
        match self {
            AppKind::Echo => "echo",
            AppKind::Broadcast => "broadcast",
            AppKind::Chat => "chat",
            AppKind::Count => "count",
            AppKind::Close => "close",
        }
    }
}

/// The room every client of a broadcast mount is in.
const BROADCAST_ROOM: &str = "broadcast";

/// An app mounted at one prefix: its kind and its own rooms.
#[derive(Debug)]
pub struct App {
    kind: AppKind,
    hub: Hub,
}

static NEXT_CLIENT: AtomicU64 = AtomicU64::new(1);

impl App {
    /// A new instance of the app with empty rooms; chat rooms keep to `chat`.
    pub fn new(kind: AppKind, chat: RoomLimits) -> App {
        let limits = match kind {
            AppKind::Chat => chat,
            // The broadcast room is every client of the mount: bounded by the connections.
            _ => RoomLimits::NONE,
        };
        App { kind, hub: Hub::with_limits(16, limits) }
    }

    /// The app's kind.
    pub fn kind(&self) -> AppKind {
        self.kind
    }

    /// Attaches a newly connected client, whose messages go to
    /// `outbox`, and who is `identity` if it presented a token. Dropping the
    /// returned value ends it (leaves its rooms).
    pub fn open(self: &Arc<App>, outbox: Arc<Outbox>, identity: Option<Arc<Identity>>) -> AppClient {
        let id = NEXT_CLIENT.fetch_add(1, Ordering::Relaxed);
        let client = Client { id, outbox, identity };
        let state = match self.kind {
            AppKind::Broadcast => {
                let member = Member { id, name: None, outbox: client.outbox.clone() };
                // Anonymous members cannot collide, so this join cannot fail.
                let _ = self.hub.join(BROADCAST_ROOM, member, 0);
                State::Broadcast
            }
            AppKind::Close => {
                client.outbox.close(Close::new(3000, "Go away!"));
                State::Closed
            }
            AppKind::Chat => State::Chat(None),
            AppKind::Echo => State::Echo,
            AppKind::Count => State::Count,
        };
        AppClient { app: self.clone(), client, state }
    }
}

/// The close for a binary message to an app that speaks JSON text.
pub fn text_only() -> Close {
    Close::new(1003, "binary messages are not accepted here; send JSON text")
}

/// A connected client as an app sees it.
#[derive(Debug)]
pub struct Client {
    pub id: MemberId,
    pub outbox: Arc<Outbox>,
    /// Who the client's token says it is, when the server requires tokens.
    pub identity: Option<Arc<Identity>>,
}

impl Client {
    /// Queues a message for this client only.
    pub fn send(&self, payload: Payload) {
        // A refused push has already closed the client (slow consumer) or
        // it was closed; either way there is nobody to tell.
        let _ = self.outbox.push(payload);
    }

    fn send_error(&self, error: &AppError) {
        self.send(Payload::from(error.to_json()));
    }
}

/// A client as its app holds it: the client, and what the app keeps about
/// it. Transports hand it the client's messages; dropping it leaves the
/// client's rooms.
#[derive(Debug)]
pub struct AppClient {
    app: Arc<App>,
    client: Client,
    state: State,
}

/// What the client is to its app: the app's kind, with what that app
/// remembers about the client.
#[derive(Debug)]
enum State {
    Echo,
    Broadcast,
    Chat(Option<chat::Joined>),
    Count,
    /// The close app's clients are closed before any message.
    Closed,
}

impl AppClient {
    /// The client's outbox, which the transport's writer drains.
    pub fn outbox(&self) -> &Arc<Outbox> {
        &self.client.outbox
    }

    /// When the client's token expires and it must be closed.
    pub fn expires(&self) -> Option<Instant> {
        self.client.identity.as_ref().map(|i| i.expires)
    }

    /// Handles one message from the client.
    pub fn on_message(&mut self, text: Utf8Bytes) {
        match &mut self.state {
            State::Echo => self.client.send(Payload::new(text)),
            State::Broadcast => {
                self.app.hub.publish(BROADCAST_ROOM, &Payload::new(text));
            }
            State::Count => match Count::parse(&text).and_then(Count::answer) {
                Ok(answer) => self.client.send(Payload::from(answer.to_json())),
                Err(e) => self.client.send_error(&e),
            },
            State::Chat(joined) => chat::on_message(&self.app.hub, &self.client, joined, &text),
            State::Closed => {}
        }
    }

    /// Handles one binary message from the client: echo and broadcast carry
    /// it as binary; chat and count speak JSON text only, and `Err` is the
    /// close that says so.
    pub fn on_binary(&mut self, data: Bytes) -> Result<(), Close> {
        match &self.state {
            State::Echo => self.client.send(Payload::binary(data)),
            State::Broadcast => {
                self.app.hub.publish(BROADCAST_ROOM, &Payload::binary(data));
            }
            State::Chat(_) | State::Count => return Err(text_only()),
            State::Closed => {}
        }
        Ok(())
    }
}

impl Drop for AppClient {
    fn drop(&mut self) {
        match &mut self.state {
            State::Broadcast => {
                self.app.hub.leave(BROADCAST_ROOM, self.client.id);
            }
            State::Chat(joined) => chat::leave(&self.app.hub, &self.client, joined.take()),
            State::Echo | State::Count | State::Closed => {}
        }
    }
}
