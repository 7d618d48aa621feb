//! [`Uplink`]: this node's link to the node that hosts its rooms
//! (`--broker node://HOST:PORT`; the protocol is in `link`), and each
//! app's [`RemoteBroker`] over it. A room is followed while it has members
//! here: the host sends what it keeps and who is in it elsewhere, then each
//! of its events, which the node's own hub fans out here. A message from a
//! member here goes to the host and comes back as every other node's does,
//! so all see one order. Names are claimed at the host.
//!
//! A link that breaks is made again, with a back-off: meanwhile the members
//! elsewhere are taken to have left, joins and messages are refused, and
//! once back the node follows its rooms again, claims its members' names
//! and tells the other nodes they are there.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Weak};
use std::time::Duration;

use hub::{BoxFuture, Broker, BrokerError, Greeting, Hub, JoinError, Kept, Member, MemberId, Outbox, Payload, Position, Present, RenameError, RoomEvent, RoomLimits, RoomSize, Roster, Speaks};
use parking_lot::Mutex;
use tokio::net::TcpStream;
use tokio::sync::oneshot;
use wire::nickname::Nickname;

use crate::broker::note_elsewhere;
use crate::followed::{Following, Room};
use crate::{Deliveries, Disconnects};
use crate::link::{self, Frame, Item, Name};

/// How long a node waits for its host to take a connection, and to answer it.
const CONNECT_WAIT: Duration = Duration::from_secs(5);
/// Longest wait between two attempts to link again.
const MOST_BACK_OFF: Duration = Duration::from_secs(5);
/// Why a member is closed whose name another node took while the link was down.
pub const NAME_TAKEN_MEANWHILE: &str = "your name was taken on another node while this one was cut off";

/// How long a node that starts tries to link to its host (which may be
/// starting too) before it gives up.
const START_WAIT: Duration = Duration::from_secs(10);

/// Why the node could not link to its host.
#[derive(Debug, thiserror::Error)]
pub enum UplinkError {
    #[error("cannot reach the host node at {addr}: {reason}")]
    Unreachable { addr: String, reason: String },
}

/// This node's link to its host.
pub struct Uplink {
    node: Arc<str>,
    addr: String,
    limits: link::Limits,
    /// The history the host's positions count in.
    epoch: Arc<str>,
    /// The host's name.
    host: Mutex<Arc<str>>,
    /// Where frames for the host go, while linked.
    sender: Mutex<Option<link::Sender>>,
    /// Questions asked of the host, waiting for its answer, by id.
    asked: Mutex<HashMap<u64, oneshot::Sender<Frame>>>,
    /// This node's messages sent to the host, oldest first, waiting for
    /// their place in their room's order (the host answers in order).
    own: Mutex<VecDeque<Own>>,
    next: AtomicU64,
    apps: Mutex<HashMap<Arc<str>, Weak<RemoteBroker>>>,
    disconnects: Mutex<Option<Disconnects>>,
    deliveries: Mutex<Option<Deliveries>>,
    reconnects: AtomicU64,
}

impl std::fmt::Debug for Uplink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Uplink").field("node", &self.node).field("addr", &self.addr).finish_non_exhaustive()
    }
}

impl Uplink {
    /// Links to the host at `addr` (`host:port`), trying for up to
    /// [`START_WAIT`], and keeps the link.
    pub async fn connect(addr: &str, limits: link::Limits) -> Result<Arc<Uplink>, UplinkError> {
        let node = link::new_node();
        let start = Duration::from_millis(50);
        let (ends, host, epoch) = link_with_back_off(addr, &node, limits, start, Some(tokio::time::Instant::now() + START_WAIT))
            .await
            .map_err(|reason| UplinkError::Unreachable { addr: addr.to_owned(), reason })?;
        let uplink = Arc::new(Uplink {
            node,
            addr: addr.to_owned(),
            limits,
            epoch,
            host: Mutex::new(host),
            sender: Mutex::new(Some(ends.sender)),
            asked: Mutex::new(HashMap::new()),
            own: Mutex::new(VecDeque::new()),
            next: AtomicU64::new(1),
            apps: Mutex::new(HashMap::new()),
            disconnects: Mutex::new(None),
            deliveries: Mutex::new(None),
            reconnects: AtomicU64::new(0),
        });
        tokio::spawn(keep_linked(Arc::downgrade(&uplink), ends.frames));
        Ok(uplink)
    }

    /// This node's name.
    pub fn node(&self) -> &Arc<str> {
        &self.node
    }

    /// The host, while linked to it.
    pub fn others(&self) -> Vec<Arc<str>> {
        if self.is_up() { vec![self.host.lock().clone()] } else { Vec::new() }
    }

    /// Whether the link is up.
    pub fn is_up(&self) -> bool {
        self.sender.lock().is_some()
    }

    /// How many times the link was made again after it broke.
    pub fn reconnects(&self) -> u64 {
        self.reconnects.load(Ordering::Relaxed)
    }

    /// The rooms of the app mounted at `prefix`, which keep to `limits`.
    pub fn broker(self: &Arc<Self>, prefix: &str, limits: RoomLimits) -> Arc<RemoteBroker> {
        let app: Arc<str> = Arc::from(prefix);
        let broker = Arc::new(RemoteBroker {
            uplink: self.clone(),
            app: app.clone(),
            hub: Hub::with_epoch(16, limits, self.epoch.clone()),
            rooms: Following::new(),
        });
        self.apps.lock().insert(app, Arc::downgrade(&broker));
        broker
    }

    /// What the host's (and through it, the other nodes') disconnects close here.
    pub fn answer_disconnects(&self, here: Disconnects) {
        *self.disconnects.lock() = Some(here);
    }

    /// Asks the other nodes (the host, which asks the others) to close the
    /// clients of `name`: how many they closed, if the host answered within
    /// `patience`.
    pub async fn disconnect_elsewhere(&self, name: &str, reason: &str, patience: Duration) -> Result<usize, BrokerError> {
        let answer = self.ask(|id| Frame::Disconnect { id, name: Arc::from(name), reason: Arc::from(reason) })?;
        match tokio::time::timeout(patience, answer).await {
            Ok(Ok(Frame::Disconnected { count, .. })) => Ok(count),
            _ => Err(BrokerError::Unavailable),
        }
    }

    /// What the host's (and through it, the other nodes') deliveries reach here.
    pub fn answer_deliveries(&self, here: Deliveries) {
        *self.deliveries.lock() = Some(here);
    }

    /// Hands `body` for `to` to the other nodes (the host, which hands it
    /// on), in the order of the calls; with `patience`, how many clients it
    /// reached, if the host answered within it. A frame longer than the
    /// link takes is not sent.
    pub async fn deliver_elsewhere(&self, to: Vec<Arc<str>>, body: Arc<str>, patience: Option<Duration>) -> Result<usize, BrokerError> {
        let line = link::delivery_line(&to, &body, self.limits).ok_or(BrokerError::Unavailable)?;
        let Some(patience) = patience else {
            return self.send_line(line).map(|()| 0);
        };
        match tokio::time::timeout(patience, self.ask(|id| Frame::Deliver { id, to, body })?).await {
            Ok(Ok(Frame::Delivered { count, .. })) => Ok(count),
            _ => Err(BrokerError::Unavailable),
        }
    }

    fn send(&self, frame: Frame) -> Result<(), BrokerError> {
        self.send_line(link::line(&frame))
    }

    fn send_line(&self, line: Arc<str>) -> Result<(), BrokerError> {
        let sender = self.sender.lock().clone().ok_or(BrokerError::Unavailable)?;
        sender.send_line(line).map_err(|e| {
            tracing::warn!("broker: cannot send to the host: {e}");
            BrokerError::Unavailable
        })
    }

    /// Sends the question `frame(id)`; its answer comes through the receiver.
    fn ask(&self, frame: impl FnOnce(u64) -> Frame) -> Result<oneshot::Receiver<Frame>, BrokerError> {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = oneshot::channel();
        self.asked.lock().insert(id, tx);
        if let Err(e) = self.send(frame(id)) {
            self.asked.lock().remove(&id);
            return Err(e);
        }
        Ok(rx)
    }

    /// Sends `payload` to the host for every member of `room` (kept in its
    /// history if `keep`), or with `others` for the other nodes' only; but
    /// then, it is given to the members here once the host says where it
    /// goes, which the receiver then says (its position, if kept).
    fn publish(&self, app: &Arc<str>, room: &str, payload: Payload, keep: bool, others: bool) -> Result<oneshot::Receiver<Option<u64>>, BrokerError> {
        let (tx, rx) = oneshot::channel();
        let (app, room) = (app.clone(), Arc::<str>::from(room));
        let item = Item::of(&payload, false);
        let frame = if keep {
            Frame::Keep { app: app.clone(), room: room.clone(), item }
        } else {
            Frame::Publish { app: app.clone(), room: room.clone(), item, others }
        };
        // Queued and sent under one lock: the answers come in this order.
        let mut own = self.own.lock();
        self.send(frame)?;
        if !others {
            own.push_back(Own { app, room, payload, keep, done: tx });
        }
        Ok(rx)
    }

    fn brokers(&self) -> Vec<Arc<RemoteBroker>> {
        self.apps.lock().values().filter_map(Weak::upgrade).collect()
    }

    fn broker_of(&self, app: &str) -> Option<Arc<RemoteBroker>> {
        self.apps.lock().get(app).and_then(Weak::upgrade)
    }

    /// Acts on one frame from the host.
    fn take(&self, frame: Frame) {
        match frame {
            Frame::Followed { app, room, last, trimmed, history, names, topic } => {
                if let Some(broker) = self.broker_of(&app) {
                    broker.followed(&room, last, trimmed, history, names, topic);
                }
            }
            Frame::Event { app, room, node, item, keep } => {
                if let Some(broker) = self.broker_of(&app) {
                    broker.event(&room, node.as_ref(), item, keep);
                }
            }
            Frame::Own { offset } => {
                let Some(own) = self.own.lock().pop_front() else { return };
                let here = self.broker_of(&own.app).and_then(|broker| broker.own(&own.room, &own.payload, own.keep));
                let _ = own.done.send(here.or(offset));
            }
            Frame::Claimed { id, .. } | Frame::Answer { id, .. } | Frame::Disconnected { id, .. } | Frame::Delivered { id, .. } => {
                if let Some(tx) = self.asked.lock().remove(&id) {
                    let _ = tx.send(frame);
                }
            }
            Frame::Disconnect { id, name, reason } => {
                let here = self.disconnects.lock().clone();
                let count = here.map_or(0, |here| here(&name, &reason));
                let _ = self.send(Frame::Disconnected { id, count });
            }
            Frame::Deliver { id, to, body } => {
                let here = self.deliveries.lock().clone();
                let count = here.map_or(0, |here| here(&to, &body));
                if id != 0 {
                    let _ = self.send(Frame::Delivered { id, count });
                }
            }
            other => tracing::debug!("broker: a frame a node does not take: {other:?}"),
        }
    }

    /// The link broke: the members elsewhere leave, what waited for the
    /// host is refused.
    fn lost(&self) {
        *self.sender.lock() = None;
        self.asked.lock().clear();
        self.own.lock().clear();
        for broker in self.brokers() {
            broker.lost();
        }
    }

    /// The link is made again: follow every room, claim every name here,
    /// and tell the other nodes who is here.
    fn rejoined(&self, sender: link::Sender, host: Arc<str>) {
        *self.host.lock() = host;
        *self.sender.lock() = Some(sender);
        self.reconnects.fetch_add(1, Ordering::Relaxed);
        for broker in self.brokers() {
            broker.rejoined();
        }
    }
}

/// A message of this node's, sent to the host: given to the members here
/// when the host says where it goes (`done` then has its position).
#[derive(Debug)]
struct Own {
    app: Arc<str>,
    room: Arc<str>,
    payload: Payload,
    keep: bool,
    done: oneshot::Sender<Option<u64>>,
}

/// Connects to the host, says hello and waits for its welcome: the link's
/// ends, the host's name and its history's.
async fn dial(addr: &str, node: &Arc<str>, limits: link::Limits) -> Result<(link::Ends, Arc<str>, Arc<str>), String> {
    let socket = tokio::time::timeout(CONNECT_WAIT, TcpStream::connect(addr)).await.map_err(|_| "no answer".to_owned())?.map_err(|e| e.to_string())?;
    link::tune(&socket);
    let mut ends = link::open(Box::pin(socket), limits);
    ends.sender.send(Frame::Hello { node: node.clone() }).map_err(|e| e.to_string())?;
    match tokio::time::timeout(CONNECT_WAIT, link::next(&mut ends.frames)).await {
        Ok(Ok(Frame::Welcome { node: host, epoch })) => Ok((ends, host, epoch)),
        Ok(Ok(other)) => Err(format!("it said {other:?} first")),
        Ok(Err(e)) => Err(e.to_string()),
        Err(_) => Err("no welcome".to_owned()),
    }
}

/// Links to the host at `addr`, waiting `wait` after a failed attempt,
/// twice as long after each until [`MOST_BACK_OFF`], and giving up at
/// `deadline` (with why the last attempt failed), if there is one.
async fn link_with_back_off(
    addr: &str,
    node: &Arc<str>,
    limits: link::Limits,
    mut wait: Duration,
    deadline: Option<tokio::time::Instant>,
) -> Result<(link::Ends, Arc<str>, Arc<str>), String> {
    loop {
        match dial(addr, node, limits).await {
            Ok(linked) => return Ok(linked),
            Err(reason) if deadline.is_some_and(|deadline| tokio::time::Instant::now() + wait > deadline) => return Err(reason),
            Err(reason) => {
                tracing::debug!(%addr, "broker: cannot link to the host yet: {reason}");
                tokio::time::sleep(wait).await;
                wait = (wait * 2).min(MOST_BACK_OFF);
            }
        }
    }
}

/// Reads the host's frames; when the link breaks, makes it again.
async fn keep_linked(uplink: Weak<Uplink>, mut frames: link::Frames) {
    loop {
        let ended = loop {
            match link::next(&mut frames).await {
                Ok(frame) => match uplink.upgrade() {
                    Some(uplink) => uplink.take(frame),
                    None => return,
                },
                Err(e) => break e,
            }
        };
        let Some(this) = uplink.upgrade() else { return };
        tracing::warn!(addr = %this.addr, "broker: the link to the host broke: {ended}");
        this.lost();
        let (addr, node, limits) = (this.addr.clone(), this.node.clone(), this.limits);
        drop(this);
        let first = Duration::from_millis(100);
        tokio::time::sleep(first).await;
        let Ok((ends, host, epoch)) = link_with_back_off(&addr, &node, limits, first * 2, None).await else { return };
        let Some(this) = uplink.upgrade() else { return };
        if epoch != this.epoch {
            tracing::warn!("broker: the host started again: the rooms' positions here no longer match its history");
        }
        tracing::info!(%addr, "broker: linked to the host again");
        this.rejoined(ends.sender, host);
        frames = ends.frames;
    }
}

/// One app's rooms on this node, hosted by another.
#[derive(Debug)]
pub struct RemoteBroker {
    uplink: Arc<Uplink>,
    app: Arc<str>,
    hub: Hub,
    rooms: Following<()>,
}

impl RemoteBroker {
    /// Follows `room` for one more member: asks the host for it if this
    /// is the first.
    fn enter(&self, room: &str) -> Result<Arc<Room>, BrokerError> {
        self.rooms.enter(room, |name, _| self.uplink.send(Frame::Follow { app: self.app.clone(), room: name.clone() }))
    }

    /// One member fewer in `room`; the last one stops following it.
    fn unfollow(&self, room: &str) {
        self.rooms.leave(room, |()| {
            self.hub.forget(room);
            let _ = self.uplink.send(Frame::Unfollow { app: self.app.clone(), room: Arc::from(room) });
        });
    }

    /// Asks the host for `name` in `room`.
    async fn claim(&self, room: &str, name: &Nickname, speaks: Speaks) -> Result<bool, BrokerError> {
        let answer = self.uplink.ask(|id| Frame::Claim {
            id,
            app: self.app.clone(),
            room: Arc::from(room),
            key: name.key.clone(),
            name: name.shown.clone(),
            speaks: Arc::from(speaks.name()),
        })?;
        match answer.await {
            Ok(Frame::Claimed { ok, .. }) => Ok(ok),
            _ => Err(BrokerError::Unavailable),
        }
    }

    fn release(&self, room: &str, key: &Arc<str>) {
        let _ = self.uplink.send(Frame::Release { app: self.app.clone(), room: Arc::from(room), key: key.clone() });
    }

    /// The host's answer to a follow: what the room keeps, and who is in it
    /// elsewhere.
    fn followed(&self, room: &Arc<str>, last: u64, trimmed: u64, history: Vec<Item>, names: Vec<Name>, topic: Option<Item>) {
        let Some(state) = self.rooms.get(room) else { return };
        let history = history.into_iter().filter_map(|item| item.payload(room, &self.uplink.epoch)).collect();
        self.hub.restore(room, Kept { history, last, trimmed });
        if let Some(topic) = topic.and_then(|item| item.payload(room, &self.uplink.epoch)) {
            self.hub.note_topic(room, &topic);
        }
        let elsewhere: HashMap<Arc<str>, Arc<str>> = names.into_iter().filter_map(|n| Some((n.name, n.node?))).filter(|(_, node)| *node != self.uplink.node).collect();
        let again = state.ready.borrow().is_some();
        if again {
            // Back after the link broke: those elsewhere are here again.
            for name in elsewhere.keys() {
                self.hub.publish(room, &Payload::event(room.clone(), RoomEvent::join(name.clone())));
            }
        }
        *state.elsewhere.lock() = elsewhere;
        state.ready.send_replace(Some(Ok(())));
    }

    /// An event of `room` (a member's arrival or departure from `node`),
    /// for the members here.
    fn event(&self, room: &Arc<str>, node: Option<&Arc<str>>, item: Item, keep: bool) {
        let Some(payload) = item.payload(room, &self.uplink.epoch) else { return };
        if keep {
            self.hub.publish_and_keep(room, &payload);
            return;
        }
        if let Some(node) = node
            && let Some((_, event)) = payload.as_event()
            && let Some(state) = self.rooms.get(room)
            && !note_elsewhere(&mut state.elsewhere.lock(), node, event)
        {
            return;
        }
        self.hub.publish(room, &payload);
    }

    /// This node's own message, at its place in the room's order: its
    /// position in the room's history, if kept there.
    fn own(&self, room: &str, payload: &Payload, keep: bool) -> Option<u64> {
        if keep {
            self.hub.publish_and_keep(room, payload);
        } else {
            self.hub.publish(room, payload);
        }
        payload.position().map(|p| p.offset)
    }

    /// The link broke: everyone elsewhere leaves, as the members here are told.
    fn lost(&self) {
        for (name, room) in self.rooms.all() {
            room.bury(&self.hub, &name, None);
        }
    }

    /// The link is made again: follows every room again, claims the names
    /// of the members here, and tells the other nodes' members of each
    /// granted; a member whose name was taken meanwhile is closed.
    fn rejoined(&self) {
        for (room, _) in self.rooms.all() {
            let _ = self.uplink.send(Frame::Follow { app: self.app.clone(), room: room.clone() });
            for (name, speaks) in self.hub.nicknames(&room) {
                let claimed = self.uplink.ask(|id| Frame::Claim {
                    id,
                    app: self.app.clone(),
                    room: room.clone(),
                    key: name.key.clone(),
                    name: name.shown.clone(),
                    speaks: Arc::from(speaks.name()),
                });
                let Ok(answer) = claimed else { continue };
                // Its clients, closed if another node took the name while
                // the link was down (as IRC servers kill on a nick collision).
                let outboxes = self.hub.named(&name.key);
                let (uplink, app, at) = (self.uplink.clone(), self.app.clone(), room.clone());
                tokio::spawn(async move {
                    match answer.await {
                        Ok(Frame::Claimed { ok: true, .. }) => {
                            let join = Payload::event(at.clone(), RoomEvent::join(name.shown.clone()));
                            let _ = uplink.publish(&app, &at, join, false, true);
                        }
                        Ok(Frame::Claimed { ok: false, .. }) => {
                            tracing::warn!(room = %at, "broker: {} was taken on another node while the link was down; closing it here", name.shown);
                            for outbox in outboxes {
                                outbox.close(hub::Close::new(1008, NAME_TAKEN_MEANWHILE));
                            }
                        }
                        _ => {}
                    }
                });
            }
        }
    }
}

impl Broker for RemoteBroker {
    fn join<'a>(&'a self, room: &'a str, member: Member, listed: usize, greet: Greeting) -> BoxFuture<'a, Result<Roster, JoinError>> {
        Box::pin(async move {
            if !self.uplink.is_up() {
                return Err(JoinError::from(BrokerError::Unavailable));
            }
            // Asked together: one round trip to the host for both.
            let state = self.enter(room)?;
            let name = member.name.clone();
            let claimed = name.as_ref().map(|name| self.claim(room, name, member.speaks));
            let (ready, claimed) = match claimed {
                Some(claimed) => {
                    let (ready, claimed) = tokio::join!(state.ready(), claimed);
                    (ready, claimed.map(Some))
                }
                None => (state.ready().await, Ok(None)),
            };
            let outcome = match (ready, claimed) {
                (Err(e), _) | (_, Err(e)) => Err(JoinError::from(e)),
                (Ok(()), Ok(Some(false))) => Err(JoinError::NameTaken),
                (Ok(()), Ok(_)) => {
                    let key = member.name.as_ref().map(|n| n.key.clone());
                    let elsewhere: Vec<Arc<str>> = state.elsewhere.lock().keys().cloned().collect();
                    let joined = self.hub.join_beside(room, member, listed, &elsewhere, greet);
                    if let (Err(_), Some(key)) = (&joined, key) {
                        self.release(room, &key);
                    }
                    joined
                }
            };
            if outcome.is_err() {
                self.unfollow(room);
            }
            outcome
        })
    }

    fn leave(&self, room: &str, id: MemberId) -> Option<Member> {
        let member = self.hub.leave(room, id)?;
        if let Some(name) = &member.name {
            self.release(room, &name.key);
        }
        self.unfollow(room);
        Some(member)
    }

    fn rename<'a>(&'a self, room: &'a str, id: MemberId, name: Nickname) -> BoxFuture<'a, Result<(), RenameError>> {
        Box::pin(async move {
            let speaks = self.hub.speaks(room, id).ok_or(RenameError::NotMember)?;
            if !self.claim(room, &name, speaks).await? {
                return Err(RenameError::NameTaken);
            }
            let key = name.key.clone();
            match self.hub.rename(room, id, name) {
                Ok(old) => {
                    if let Some(old) = old.filter(|old| old.key != key) {
                        self.release(room, &old.key);
                    }
                    Ok(())
                }
                Err(e) => {
                    self.release(room, &key);
                    Err(e)
                }
            }
        })
    }

    fn publish(&self, room: &str, payload: Payload) -> Result<(), BrokerError> {
        self.uplink.publish(&self.app, room, payload, false, false).map(drop)
    }

    fn publish_and_keep<'a>(&'a self, room: &'a str, payload: Payload) -> BoxFuture<'a, Result<Option<Position>, BrokerError>> {
        let sent = self.uplink.publish(&self.app, room, payload, true, false);
        Box::pin(async move {
            match sent?.await {
                Ok(offset) => Ok(offset.map(|offset| Position { offset, epoch: self.uplink.epoch.clone() })),
                Err(_) => Err(BrokerError::Unavailable),
            }
        })
    }

    fn limits(&self) -> RoomLimits {
        self.hub.limits()
    }

    fn names(&self, room: &str, max: usize) -> Vec<Arc<str>> {
        self.rooms.names(&self.hub, room, max)
    }

    fn presence<'a>(&'a self, room: &'a str, max: usize) -> BoxFuture<'a, Result<Vec<Present>, BrokerError>> {
        let asked = self.uplink.ask(|id| Frame::Ask { id, app: self.app.clone(), room: Some(Arc::from(room)), max });
        Box::pin(async move {
            let Ok(Frame::Answer { names, .. }) = asked?.await else { return Err(BrokerError::Unavailable) };
            let here = self.hub.members(room, max).into_iter().map(|(name, speaks)| Present { name, speaks, node: None });
            let mut present: Vec<Present> = here.collect();
            for n in names.into_iter().filter(|n| n.node.as_ref() != Some(&self.uplink.node)) {
                if present.len() >= max {
                    break;
                }
                present.push(Present { name: n.name, speaks: n.speaks.as_deref().and_then(Speaks::from_name).unwrap_or(Speaks::App), node: n.node });
            }
            Ok(present)
        })
    }

    fn rooms(&self) -> BoxFuture<'_, Result<Vec<RoomSize>, BrokerError>> {
        let asked = self.uplink.ask(|id| Frame::Ask { id, app: self.app.clone(), room: None, max: usize::MAX });
        Box::pin(async move {
            let Ok(Frame::Answer { names, .. }) = asked?.await else { return Err(BrokerError::Unavailable) };
            Ok(names.into_iter().map(|n| RoomSize { room: n.name, members: n.count.unwrap_or(0) }).collect())
        })
    }

    fn history(&self, room: &str) -> Vec<Payload> {
        self.hub.history(room)
    }

    fn topic(&self, room: &str) -> Option<hub::Topic> {
        self.hub.topic(room)
    }

    fn seed_topic(&self, room: &str, topic: &Payload) {
        self.hub.seed_topic(room, topic);
    }

    fn named(&self, key: &str) -> Vec<Arc<Outbox>> {
        self.hub.named(key)
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use hub::{Broker, Member, Outbox, Payload, RoomEvent, RoomLimits, Speaks, next_member_id};
    use wire::nickname::Nickname;

    use crate::host::Host;
    use crate::link::Limits;

    use super::*;

    fn member(name: &str) -> (Member, Arc<Outbox>) {
        let outbox = Arc::new(Outbox::new(1 << 20));
        let member = Member { id: next_member_id(), name: Some(Nickname::parse(name).unwrap()), outbox: outbox.clone(), speaks: Speaks::Irc };
        (member, outbox)
    }

    /// The messages `outbox` holds by now, as `name: text`.
    async fn said(outbox: &Outbox, n: usize) -> Vec<String> {
        let mut got = Vec::new();
        let mut out = Vec::new();
        tokio::time::timeout(Duration::from_secs(10), async {
            while got.len() < n {
                out.clear();
                outbox.drain(&mut out).await;
                for p in &out {
                    if let Some((_, RoomEvent::Message { name, text })) = p.as_event() {
                        let offset = p.position().map_or(0, |p| p.offset);
                        got.push(format!("{name}: {text} @{offset}"));
                    }
                }
            }
        })
        .await
        .expect("every message in time");
        got
    }

    #[tokio::test]
    async fn a_host_and_a_linked_node_see_one_room_in_one_order_at_the_same_positions() {
        let limits = RoomLimits { history: hub::HistoryLimits { messages: 10, bytes: 1 << 16 }, ..RoomLimits::NONE };
        let host = Host::new(Limits::for_messages(4096, 64));
        let here = host.broker("/chat", limits);
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap().to_string();
        tokio::spawn(host.clone().listen(listener));
        let uplink = Uplink::connect(&addr, Limits::for_messages(4096, 64)).await.unwrap();
        let there = uplink.broker("/chat", limits);

        let (ann, ann_box) = member("ann");
        here.join("lobby", ann, 10, Box::new(|_| Vec::new())).await.unwrap();
        let (bob, bob_box) = member("bob");
        let roster = there.join("lobby", bob, 10, Box::new(|_| Vec::new())).await.unwrap();
        let strings = |names: Vec<Arc<str>>| names.iter().map(|n| n.to_string()).collect::<Vec<_>>();
        assert_eq!(strings(roster.names), ["bob", "ann"], "the node lists the host's member");
        let (taken, _) = member("ANN");
        assert!(matches!(there.join("lobby", taken, 10, Box::new(|_| Vec::new())).await, Err(hub::JoinError::NameTaken)));
        assert_eq!(strings(here.names("lobby", 10)), ["ann", "bob"], "the host lists the node's member");

        // Both send at once: both see all, in one order, at the same positions.
        let message = |name: &str, i: usize| Payload::event("lobby", RoomEvent::Message { name: name.into(), text: format!("{i}").into() });
        let mut kept = Vec::new();
        for i in 0..20 {
            kept.push(here.publish_and_keep("lobby", message("ann", i)));
            kept.push(there.publish_and_keep("lobby", message("bob", i)));
        }
        let mut offsets = Vec::new();
        for k in kept {
            offsets.push(k.await.unwrap().expect("a position").offset);
        }
        offsets.sort_unstable();
        assert_eq!(offsets, (1..=40).collect::<Vec<u64>>(), "each message its own position");
        let (on_host, on_node) = (said(&ann_box, 40).await, said(&bob_box, 40).await);
        assert_eq!(on_host, on_node);
        let bobs: Vec<usize> = on_node.iter().filter_map(|m| m.strip_prefix("bob: ")?.split(' ').next()?.parse().ok()).collect();
        assert_eq!(bobs, (0..20).collect::<Vec<_>>(), "bob's in the order he sent them");
        assert_eq!(here.history("lobby").len(), 10);
        let positions = |b: &dyn Broker| b.history("lobby").iter().map(|p| p.position().unwrap().offset).collect::<Vec<_>>();
        assert_eq!(positions(&*here), positions(&*there), "one history, the same on both");
        assert_eq!(host.others(), [uplink.node().clone()]);
    }

    /// A proxy to `upstream` that lets through one connection each time
    /// `open` gives it a permit, and drops the one it carries when `cut`
    /// is notified: its address.
    async fn switch(upstream: String, open: Arc<tokio::sync::Semaphore>, cut: Arc<tokio::sync::Notify>) -> String {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap().to_string();
        tokio::spawn(async move {
            loop {
                open.acquire().await.unwrap().forget();
                let (mut near, _) = listener.accept().await.unwrap();
                let mut far = tokio::net::TcpStream::connect(&upstream).await.unwrap();
                tokio::select! {
                    _ = tokio::io::copy_bidirectional(&mut near, &mut far) => {}
                    () = cut.notified() => {}
                }
            }
        });
        addr
    }

    #[tokio::test]
    async fn a_member_whose_name_was_taken_while_the_link_was_down_is_closed_when_it_comes_back() {
        let host = Host::new(Limits::for_messages(4096, 64));
        let here = host.broker("/chat", RoomLimits::NONE);
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let upstream = listener.local_addr().unwrap().to_string();
        tokio::spawn(host.clone().listen(listener));
        let (open, cut) = (Arc::new(tokio::sync::Semaphore::new(1)), Arc::new(tokio::sync::Notify::new()));
        let addr = switch(upstream, open.clone(), cut.clone()).await;
        let uplink = Uplink::connect(&addr, Limits::for_messages(4096, 64)).await.unwrap();
        let there = uplink.broker("/chat", RoomLimits::NONE);
        let (bob, bob_box) = member("bob");
        there.join("lobby", bob, 10, Box::new(|_| Vec::new())).await.unwrap();
        let (carol, carol_box) = member("carol");
        there.join("lobby", carol, 10, Box::new(|_| Vec::new())).await.unwrap();

        // The link breaks; the host frees bob's name, and another takes it.
        cut.notify_one();
        let (ann, _) = member("ann");
        let (other_bob, _) = member("bob");
        tokio::time::timeout(Duration::from_secs(10), async {
            while here.join("lobby", other_bob.clone(), 10, Box::new(|_| Vec::new())).await.is_err() {
                tokio::task::yield_now().await;
            }
        })
        .await
        .expect("the host frees the names of a node whose link broke");
        here.join("lobby", ann, 10, Box::new(|_| Vec::new())).await.unwrap();
        // The link is made again: bob here is closed, carol stays.
        open.add_permits(1);
        let closed = tokio::time::timeout(Duration::from_secs(10), bob_box.closed()).await.expect("bob closed");
        assert_eq!((closed.code, &*closed.reason), (1008, NAME_TAKEN_MEANWHILE));
        assert!(!carol_box.is_closed());
        assert_eq!(uplink.reconnects(), 1);
    }
}
