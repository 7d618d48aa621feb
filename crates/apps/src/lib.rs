//! The apps: what the server does with a client's messages. An app sees a
//! [`Client`] (an id, an outbox and who it is) and never knows which transport
//! carries it, nor that XMPP exists: it speaks to its rooms through a
//! [`Broker`] that other protocols may share.

mod chat;

use std::net::IpAddr;
use std::sync::Arc;

use bytes::Bytes;
use futures_util::FutureExt;
use hub::{Broker, BrokerError, Close, Member, MemberId, Outbox, Payload, Speaks};
use tokio_tungstenite::tungstenite::Utf8Bytes;
use tokio::time::Instant;
use wire::app::{AppError, Count};

use base::token::Identity;

/// The apps a mount can serve.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
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
    /// Every app.
    pub const ALL: [AppKind; 5] = [AppKind::Echo, AppKind::Broadcast, AppKind::Chat, AppKind::Count, AppKind::Close];

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

    /// The app named `name`.
    pub fn from_name(name: &str) -> Option<AppKind> {
        AppKind::ALL.into_iter().find(|kind| kind.name() == name)
    }
}

/// The room every client of a broadcast mount is in.
const BROADCAST_ROOM: &str = "broadcast";

/// An app mounted at one prefix: its kind and its own rooms, behind the
/// broker that may spread them over several nodes.
#[derive(Debug)]
pub struct App {
    kind: AppKind,
    broker: Arc<dyn Broker>,
}

impl App {
    /// A new instance of the app whose rooms are `broker`'s.
    pub fn new(kind: AppKind, broker: Arc<dyn Broker>) -> App {
        App { kind, broker }
    }

    /// The app on its own node, its rooms in memory; chat rooms keep to
    /// `chat`.
    pub fn in_memory(kind: AppKind, chat: hub::RoomLimits) -> App {
        App::new(kind, Arc::new(hub::MemoryBroker::new(hub::Hub::with_limits(16, App::limits(kind, chat)))))
    }

    /// The bounds of the app's rooms: `chat` for chat rooms; the broadcast
    /// room is every client of the mount, bounded by the connections.
    pub fn limits(kind: AppKind, chat: hub::RoomLimits) -> hub::RoomLimits {
        match kind {
            AppKind::Chat => chat,
            _ => hub::RoomLimits::NONE,
        }
    }

    /// Where the app's rooms are.
    pub fn broker(&self) -> &Arc<dyn Broker> {
        &self.broker
    }

    /// The app's kind.
    pub fn kind(&self) -> AppKind {
        self.kind
    }

    /// Puts a client in the broadcast room: at once in memory; through the
    /// broker, by a task that also takes it out when the returned sender
    /// drops (so the leave cannot overtake the join).
    fn join_broadcast(&self, client: &Client) -> Option<tokio::sync::oneshot::Sender<()>> {
        let member = Member { id: client.id, name: None, outbox: client.outbox.clone(), speaks: Speaks::App };
        let nobody: hub::Greeting = Box::new(|_| Vec::new());
        if self.broker.is_immediate() {
            // Anonymous members cannot collide, and a memory broker answers at once.
            let _ = self.broker.join(BROADCAST_ROOM, member, 0, nobody).now_or_never();
            return None;
        }
        let (gone, going) = tokio::sync::oneshot::channel::<()>();
        let broker = self.broker.clone();
        let outbox = client.outbox.clone();
        tokio::spawn(async move {
            match broker.join(BROADCAST_ROOM, member.clone(), 0, nobody).await {
                Ok(_) => {
                    let _ = going.await;
                    broker.leave(BROADCAST_ROOM, member.id);
                }
                Err(e) => outbox.close(unavailable(e.to_string())),
            }
        });
        Some(gone)
    }
}

impl transport::Protocol for App {
    type Client = AppClient;

    fn open(self: &Arc<App>, outbox: Arc<Outbox>, identity: Option<Arc<Identity>>, _address: IpAddr) -> AppClient {
        let client = Client { id: hub::next_member_id(), outbox, identity };
        let state = match self.kind {
            AppKind::Broadcast => State::Broadcast(self.join_broadcast(&client)),
            AppKind::Chat => State::Chat(chat::Chat::new()),
            AppKind::Close => {
                client.outbox.close(Close::new(3000, "Go away!"));
                State::Closed
            }
            AppKind::Echo => State::Echo,
            AppKind::Count => State::Count,
        };
        AppClient { app: self.clone(), client, state }
    }
}

/// The close for a client whose messages the broker cannot carry now.
fn unavailable(reason: impl Into<std::borrow::Cow<'static, str>>) -> Close {
    Close::new(1013, reason)
}

/// The close for a binary message to an app that speaks JSON text.
pub fn text_only() -> Close {
    Close::new(1003, "binary messages are not accepted here; send JSON text")
}

/// A connected client as an app sees it.
#[derive(Debug, Clone)]
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
    /// In the broadcast room; dropping the sender, if any, makes the task
    /// that joined through the broker leave.
    Broadcast(Option<tokio::sync::oneshot::Sender<()>>),
    Chat(chat::Chat),
    Count,
    /// The close app's clients are closed before any message.
    Closed,
}

impl transport::Client for AppClient {
    fn outbox(&self) -> &Arc<Outbox> {
        &self.client.outbox
    }

    fn expires(&self) -> Option<Instant> {
        self.client.identity.as_ref().map(|i| i.expires)
    }

    fn on_message(&mut self, text: Utf8Bytes) {
        match &mut self.state {
            State::Echo => self.client.send(Payload::new(text)),
            State::Broadcast(_) => self.broadcast(Payload::new(text)),
            State::Count => match Count::parse(&text).and_then(Count::answer) {
                Ok(answer) => self.client.send(Payload::from(answer.to_json())),
                Err(e) => self.client.send_error(&e),
            },
            State::Chat(chat) => chat.on_message(&self.app.broker, &self.client, text),
            State::Closed => {}
        }
    }

    /// Echo and broadcast carry binary messages as binary; chat and count
    /// speak JSON text only, and `Err` is the close that says so.
    fn on_binary(&mut self, data: Bytes) -> Result<(), Close> {
        match &self.state {
            State::Echo => self.client.send(Payload::binary(data)),
            State::Broadcast(_) => self.broadcast(Payload::binary(data)),
            State::Chat(_) | State::Count => return Err(text_only()),
            State::Closed => {}
        }
        Ok(())
    }
}

impl AppClient {
    /// Sends to every member of the broadcast room; a client whose message
    /// the broker cannot take is closed with 1013, so that nothing it sent
    /// is lost without its knowing.
    fn broadcast(&self, payload: Payload) {
        if let Err(e) = self.app.broker.publish(BROADCAST_ROOM, payload) {
            self.client.outbox.close(unavailable(e.to_string()));
        }
    }
}

impl Drop for AppClient {
    fn drop(&mut self) {
        match &mut self.state {
            // A broker's task leaves when its sender drops.
            State::Broadcast(None) => {
                self.app.broker.leave(BROADCAST_ROOM, self.client.id);
            }
            State::Chat(chat) => chat.end(&self.app.broker, &self.client),
            State::Broadcast(Some(_)) | State::Echo | State::Count | State::Closed => {}
        }
    }
}

/// What the broker's refusal tells a chat client.
fn broker_error(e: BrokerError) -> wire::app::AppError {
    wire::app::AppError::Broker(e.to_string())
}

