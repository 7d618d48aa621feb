//! [`Host`]: a node whose rooms other nodes share over the link
//! (`--broker-listen`; the protocol is in `link`). Each app's
//! [`HostBroker`] keeps the rooms as the memory broker does, and the
//! names claimed on the linked nodes beside its own; every event of a room
//! goes to the members here and to each node that follows the room under
//! one lock per room, so every member on every node sees the room's events
//! in one order, and a node that starts following gets what the room
//! keeps and then every event after it.
//!
//! A linked node that goes away takes its names with it: its members leave
//! the rooms, as the other nodes' members are told.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use hub::{BoxFuture, Broker, BrokerError, Greeting, Hub, JoinError, Member, MemberId, Outbox, Payload, Present, RenameError, RoomEvent, RoomLimits, RoomSize, Roster, Speaks};
use parking_lot::Mutex;
use tokio::net::TcpListener;
use tokio::sync::oneshot;
use wire::nickname::Nickname;

use crate::link::{self, Frame, Item, Name};
use crate::{Deliveries, Disconnects};

/// How long a node that connects has to say who it is.
const HELLO_WAIT: Duration = Duration::from_secs(10);

/// This node, as the host of the rooms of the nodes linked to it.
pub struct Host {
    node: Arc<str>,
    /// The history every room's positions count in, for every node.
    epoch: Arc<str>,
    apps: Mutex<HashMap<Arc<str>, Arc<HostBroker>>>,
    links: Mutex<HashMap<u64, Downlink>>,
    next: AtomicU64,
    disconnects: Mutex<Option<Disconnects>>,
    deliveries: Mutex<Option<Deliveries>>,
    /// Disconnects and deliveries asked of the linked nodes, waiting for
    /// their answers.
    asked: Mutex<HashMap<u64, oneshot::Sender<usize>>>,
    limits: link::Limits,
}

impl std::fmt::Debug for Host {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Host").field("node", &self.node).finish_non_exhaustive()
    }
}

/// A node linked here.
#[derive(Debug, Clone)]
struct Downlink {
    node: Arc<str>,
    sender: link::Sender,
}

impl Host {
    /// A host whose links keep to `limits`; nodes link to it once
    /// [`Host::listen`] runs.
    pub fn new(limits: link::Limits) -> Arc<Host> {
        Arc::new(Host {
            node: link::new_node(),
            epoch: link::new_node(),
            apps: Mutex::new(HashMap::new()),
            links: Mutex::new(HashMap::new()),
            next: AtomicU64::new(1),
            disconnects: Mutex::new(None),
            deliveries: Mutex::new(None),
            asked: Mutex::new(HashMap::new()),
            limits,
        })
    }

    /// This node's name.
    pub fn node(&self) -> &Arc<str> {
        &self.node
    }

    /// The nodes linked here now.
    pub fn others(&self) -> Vec<Arc<str>> {
        self.links.lock().values().map(|l| l.node.clone()).collect()
    }

    /// The rooms of the app mounted at `prefix`, which keep to `limits`.
    pub fn broker(&self, prefix: &str, limits: RoomLimits) -> Arc<HostBroker> {
        let app: Arc<str> = Arc::from(prefix);
        let broker = Arc::new(HostBroker {
            node: self.node.clone(),
            app: app.clone(),
            hub: Hub::with_epoch(16, limits, self.epoch.clone()),
            rooms: Mutex::new(HashMap::new()),
        });
        self.apps.lock().insert(app, broker.clone());
        broker
    }

    /// What a linked node's disconnect closes here.
    pub fn answer_disconnects(&self, here: Disconnects) {
        *self.disconnects.lock() = Some(here);
    }

    /// Asks every linked node but `except` to close the clients of `name`:
    /// how many they closed, of those that answered within `patience`.
    pub async fn disconnect_elsewhere(&self, except: Option<u64>, name: &str, reason: &str, patience: Duration) -> usize {
        let (name, reason) = (Arc::<str>::from(name), Arc::<str>::from(reason));
        let answers = self.ask_links(except, |id| Frame::Disconnect { id, name: name.clone(), reason: reason.clone() });
        self.count(answers, patience, "a disconnect").await
    }

    /// What a linked node's delivery reaches here.
    pub fn answer_deliveries(&self, here: Deliveries) {
        *self.deliveries.lock() = Some(here);
    }

    /// Hands `body` for `to` to every linked node but `except`, in the
    /// order of the calls; with `patience`, how many clients it reached
    /// there, of the nodes that answered within it. A frame longer than a
    /// link takes is not sent.
    pub async fn deliver_elsewhere(&self, except: Option<u64>, to: Vec<Arc<str>>, body: Arc<str>, patience: Option<Duration>) -> Result<usize, BrokerError> {
        let answers = self.send_delivery(except, &to, &body, patience.is_some())?;
        Ok(match patience {
            Some(patience) => self.count(answers, patience, "a delivery").await,
            None => 0,
        })
    }

    /// Sends a delivery down every link but `except`, each with an id for
    /// its answer when `answered`; the answers to wait for.
    fn send_delivery(&self, except: Option<u64>, to: &[Arc<str>], body: &Arc<str>, answered: bool) -> Result<Vec<(u64, oneshot::Receiver<usize>)>, BrokerError> {
        let line = link::delivery_line(to, body, self.limits).ok_or(BrokerError::Unavailable)?;
        if answered {
            return Ok(self.ask_links(except, |id| Frame::Deliver { id, to: to.to_vec(), body: body.clone() }));
        }
        for (_, link) in self.links_but(except) {
            let _ = link.sender.send_line(line.clone());
        }
        Ok(Vec::new())
    }

    fn links_but(&self, except: Option<u64>) -> Vec<(u64, Downlink)> {
        self.links.lock().iter().filter(|(id, _)| Some(**id) != except).map(|(id, l)| (*id, l.clone())).collect()
    }

    /// Sends `frame(id)` down every link but `except`, each with an id of
    /// its own; the answers to wait for.
    fn ask_links(&self, except: Option<u64>, frame: impl Fn(u64) -> Frame) -> Vec<(u64, oneshot::Receiver<usize>)> {
        let mut answers = Vec::new();
        for (_, link) in self.links_but(except) {
            let id = self.next.fetch_add(1, Ordering::Relaxed);
            let (tx, rx) = oneshot::channel();
            self.asked.lock().insert(id, tx);
            if link.sender.send(frame(id)).is_ok() {
                answers.push((id, rx));
            } else {
                self.asked.lock().remove(&id);
            }
        }
        answers
    }

    /// The sum of the `answers` that come within `patience`.
    async fn count(&self, answers: Vec<(u64, oneshot::Receiver<usize>)>, patience: Duration, what: &str) -> usize {
        let deadline = tokio::time::Instant::now() + patience;
        let mut count = 0;
        for (id, rx) in answers {
            match tokio::time::timeout_at(deadline, rx).await {
                Ok(Ok(n)) => count += n,
                _ => {
                    self.asked.lock().remove(&id);
                    tracing::warn!("broker: a linked node did not answer {what} within {patience:?}");
                }
            }
        }
        count
    }

    /// Takes the nodes that link here, until the listener fails.
    pub async fn listen(self: Arc<Self>, listener: TcpListener) {
        loop {
            let (socket, peer) = match listener.accept().await {
                Ok(accepted) => accepted,
                Err(e) => {
                    tracing::warn!("broker: cannot take a node's link: {e}");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    continue;
                }
            };
            link::tune(&socket);
            tracing::debug!(%peer, "broker: a node links here");
            tokio::spawn(self.clone().serve(Box::pin(socket)));
        }
    }

    /// Serves one linked node until its link ends.
    pub async fn serve(self: Arc<Self>, socket: link::Socket) {
        let link::Ends { sender, mut frames } = link::open(socket, self.limits);
        let node = match tokio::time::timeout(HELLO_WAIT, link::next(&mut frames)).await {
            Ok(Ok(Frame::Hello { node })) => node,
            _ => return,
        };
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        if sender.send(Frame::Welcome { node: self.node.clone(), epoch: self.epoch.clone() }).is_err() {
            return;
        }
        self.links.lock().insert(id, Downlink { node: node.clone(), sender: sender.clone() });
        tracing::info!(%node, "broker: a node linked here");
        let ended = loop {
            let frame = tokio::select! {
                frame = link::next(&mut frames) => frame,
                () = sender.ended() => Err(link::LinkError::Behind(self.limits.queue)),
            };
            match frame {
                Ok(frame) => self.take(id, &node, &sender, frame),
                Err(e) => break e,
            }
        };
        tracing::warn!(%node, "broker: a linked node is gone: {ended}");
        self.links.lock().remove(&id);
        let apps: Vec<Arc<HostBroker>> = self.apps.lock().values().cloned().collect();
        for broker in apps {
            broker.bury(id, &node);
        }
    }

    /// Acts on one frame from the linked node `id`.
    fn take(self: &Arc<Self>, id: u64, node: &Arc<str>, sender: &link::Sender, frame: Frame) {
        let app = |name: &Arc<str>| self.apps.lock().get(name).cloned();
        let answer = |frame: Frame| {
            let _ = sender.send(frame);
        };
        match frame {
            Frame::Follow { app: name, room } => {
                if let Some(broker) = app(&name) {
                    broker.follow(id, node, sender, room);
                }
            }
            Frame::Unfollow { app: name, room } => {
                if let Some(broker) = app(&name) {
                    broker.unfollow(id, &room);
                }
            }
            Frame::Claim { id: asked, app: name, room, key, name: shown, speaks } => {
                let ok = app(&name).is_some_and(|broker| broker.claim(id, node, &room, key, shown, speaks));
                answer(Frame::Claimed { id: asked, ok });
            }
            Frame::Release { app: name, room, key } => {
                if let Some(broker) = app(&name) {
                    broker.release(id, &room, &key);
                }
            }
            Frame::Publish { app: name, room, item, others } => self.relay(app(&name), &room, item, false, node, From::Link { link: id, others, sender }),
            Frame::Keep { app: name, room, item } => self.relay(app(&name), &room, item, true, node, From::Link { link: id, others: false, sender }),
            Frame::Ask { id: asked, app: name, room, max } => {
                let names = match (app(&name), room) {
                    (Some(broker), Some(room)) => broker.present(&room, max),
                    (Some(broker), None) => broker.sizes(),
                    (None, _) => Vec::new(),
                };
                answer(Frame::Answer { id: asked, names });
            }
            Frame::Disconnect { id: asked, name, reason } => {
                let host = self.clone();
                let sender = sender.clone();
                tokio::spawn(async move {
                    let here = host.disconnects.lock().clone();
                    let here = here.map_or(0, |here| here(&name, &reason));
                    let elsewhere = host.disconnect_elsewhere(Some(id), &name, &reason, link::DISCONNECT_PATIENCE).await;
                    let _ = sender.send(Frame::Disconnected { id: asked, count: here + elsewhere });
                });
            }
            Frame::Deliver { id: asked, to, body } => {
                // Out of the lock before it runs.
                let here = self.deliveries.lock().clone();
                let here = here.map_or(0, |here| here(&to, &body));
                // Handed on now, in the order it came; answered apart.
                let answers = self.send_delivery(Some(id), &to, &body, asked != 0).unwrap_or_default();
                if asked != 0 {
                    let host = self.clone();
                    let sender = sender.clone();
                    tokio::spawn(async move {
                        let elsewhere = host.count(answers, link::DELIVER_PATIENCE, "a delivery").await;
                        let _ = sender.send(Frame::Delivered { id: asked, count: here + elsewhere });
                    });
                }
            }
            Frame::Disconnected { id: asked, count } | Frame::Delivered { id: asked, count } => {
                if let Some(tx) = self.asked.lock().remove(&asked) {
                    let _ = tx.send(count);
                }
            }
            other => tracing::debug!(%node, "broker: a frame a host does not take: {other:?}"),
        }
    }

    /// A linked node's message `item` for `room` of `broker`'s app (kept
    /// if `keep`); one the host cannot take is answered all the same.
    fn relay(&self, broker: Option<Arc<HostBroker>>, room: &Arc<str>, item: Item, keep: bool, node: &Arc<str>, from: From<'_>) {
        match (broker, item.payload(room, &self.epoch)) {
            (Some(broker), Some(payload)) => broker.deliver(room, &payload, keep, node, from),
            _ => {
                if let From::Link { others: false, sender, .. } = from {
                    let _ = sender.send(Frame::Own { offset: None });
                }
            }
        }
    }
}

/// One app's rooms on the host: here, and followed by linked nodes.
#[derive(Debug)]
pub struct HostBroker {
    node: Arc<str>,
    app: Arc<str>,
    hub: Hub,
    rooms: Mutex<HashMap<Arc<str>, Arc<Mutex<Shared>>>>,
}

/// Where a room's event comes from: a member here, or a linked node's
/// `publish` or `keep` (which it is answered with `own`, unless `others`:
/// then it is for the other nodes only).
#[derive(Debug, Clone, Copy)]
enum From<'a> {
    Here,
    Link { link: u64, others: bool, sender: &'a link::Sender },
}

/// What the host keeps of a room beside its hub: under this lock each of
/// the room's events goes to the hub and to the nodes that follow it.
#[derive(Debug, Default)]
struct Shared {
    /// Members here.
    local: usize,
    /// The linked nodes that follow the room, by link.
    followers: HashMap<u64, link::Sender>,
    /// Names held on linked nodes, by comparison form.
    claims: HashMap<Arc<str>, Claim>,
    /// Set when [`HostBroker::tidy`] drops it: whoever locked it after
    /// looks the room up again.
    removed: bool,
}

#[derive(Debug, Clone)]
struct Claim {
    link: u64,
    node: Arc<str>,
    name: Arc<str>,
    speaks: Arc<str>,
}

impl HostBroker {
    fn shared(&self, room: &str) -> Option<Arc<Mutex<Shared>>> {
        self.rooms.lock().get(room).cloned()
    }

    /// `f` on what the host keeps of `room`, made if need be, under its lock.
    fn with_room<R>(&self, room: &str, f: impl FnOnce(&mut Shared) -> R) -> R {
        loop {
            let shared = self.rooms.lock().entry(Arc::from(room)).or_default().clone();
            let mut s = shared.lock();
            if !s.removed {
                return f(&mut s);
            }
        }
    }

    /// `f` on what the host keeps of `room`, under its lock, if anything.
    fn with_existing<R>(&self, room: &str, f: impl FnOnce(&mut Shared) -> R) -> Option<R> {
        loop {
            let shared = self.shared(room)?;
            let mut s = shared.lock();
            if !s.removed {
                return Some(f(&mut s));
            }
        }
    }

    /// Drops what the host keeps of `room` once nobody is in it or follows it.
    fn tidy(&self, room: &str) {
        let mut rooms = self.rooms.lock();
        let idle = rooms.get(room).is_some_and(|shared| {
            let mut s = shared.lock();
            s.removed = s.local == 0 && s.followers.is_empty() && s.claims.is_empty();
            s.removed
        });
        if idle {
            rooms.remove(room);
        }
    }

    /// Sends `payload` to the members here and the nodes following the
    /// room, keeping it in the room's history if `keep`; from `node`, as
    /// `from` says. The node it came from is sent only where it goes in
    /// the room's order.
    fn deliver(&self, room: &str, payload: &Payload, keep: bool, node: &Arc<str>, from: From<'_>) {
        loop {
            if let Some(shared) = self.shared(room) {
                let mut s = shared.lock();
                if s.removed {
                    continue;
                }
                self.deliver_locked(Some(&mut s), room, payload, keep, node, from);
                return;
            }
            // With nothing of the room here (no member, no node following
            // it), the rooms' lock keeps a follow from coming between.
            let rooms = self.rooms.lock();
            if rooms.contains_key(room) {
                continue;
            }
            self.deliver_locked(None, room, payload, keep, node, from);
            return;
        }
    }

    fn deliver_locked(&self, s: Option<&mut Shared>, room: &str, payload: &Payload, keep: bool, node: &Arc<str>, from: From<'_>) {
        if keep {
            self.hub.publish_and_keep(room, payload);
        } else {
            self.hub.publish(room, payload);
        }
        let mut followed_by_origin = false;
        if let Some(s) = s {
            let mut event = None;
            s.followers.retain(|link, sender| match from {
                From::Link { link: origin, others, .. } if origin == *link => {
                    followed_by_origin = true;
                    others || sender.send(Frame::Own { offset: None }).is_ok()
                }
                // Made once, for every node that follows the room.
                _ => sender.send_line(event.get_or_insert_with(|| link::line(&self.event(room, payload, keep, node))).clone()).is_ok(),
            });
        }
        if let From::Link { others: false, sender, .. } = from
            && !followed_by_origin
        {
            // A node that does not follow the room (the API's publish) is
            // answered all the same.
            let _ = sender.send(Frame::Own { offset: payload.position().filter(|_| keep).map(|p| p.offset) });
        }
    }

    /// `payload` as an event of `room` for the nodes following it.
    fn event(&self, room: &str, payload: &Payload, keep: bool, node: &Arc<str>) -> Frame {
        // Only who comes and goes says the node: the others keep count of
        // the names held on each node from these.
        let membership = payload.as_event().is_some_and(|(_, e)| matches!(e, RoomEvent::Join { .. } | RoomEvent::Leave { .. }));
        Frame::Event { app: self.app.clone(), room: Arc::from(room), node: membership.then(|| node.clone()), item: Item::of(payload, false), keep }
    }

    fn follow(&self, link: u64, node: &Arc<str>, sender: &link::Sender, room: Arc<str>) {
        self.with_room(&room.clone(), |s| self.follow_locked(s, link, node, sender, room));
    }

    fn follow_locked(&self, s: &mut Shared, link: u64, node: &Arc<str>, sender: &link::Sender, room: Arc<str>) {
        if s.followers.insert(link, sender.clone()).is_none() {
            self.hub.hold(&room);
        }
        let kept = self.hub.kept(&room).unwrap_or_default();
        let names = self.members(Some(s), &room, usize::MAX, Some(node));
        let history = kept.history.iter().map(|p| Item::of(p, true)).collect();
        let topic = self.hub.topic(&room).map(|t| Item::of(&Payload::event_at(room.clone(), RoomEvent::Topic { name: t.by, text: t.text }, t.at), true));
        let _ = sender.send(Frame::Followed { app: self.app.clone(), room, last: kept.last, trimmed: kept.trimmed, history, names, topic });
    }

    fn unfollow(&self, link: u64, room: &str) {
        if self.with_existing(room, |s| s.followers.remove(&link).is_some()) == Some(true) {
            self.hub.unhold(room);
        }
        self.tidy(room);
    }

    /// Grants `shown` to linked node `node` in `room` unless another
    /// member has it.
    fn claim(&self, link: u64, node: &Arc<str>, room: &str, key: Arc<str>, name: Arc<str>, speaks: Arc<str>) -> bool {
        let granted = self.with_room(room, |s| {
            let free = !self.hub.has_name(room, &key) && s.claims.get(&key).is_none_or(|c| c.link == link);
            if free {
                s.claims.insert(key, Claim { link, node: node.clone(), name, speaks });
            }
            free
        });
        if !granted {
            self.tidy(room);
        }
        granted
    }

    fn release(&self, link: u64, room: &str, key: &str) {
        self.with_existing(room, |s| {
            if s.claims.get(key).is_some_and(|c| c.link == link) {
                s.claims.remove(key);
            }
        });
        self.tidy(room);
    }

    /// The members of `room` on every node, at most `max`, this node's first.
    fn present(&self, room: &str, max: usize) -> Vec<Name> {
        self.with_existing(room, |s| self.members(Some(s), room, max, None)).unwrap_or_else(|| self.members(None, room, max, None))
    }

    /// The members of `room` here, then those `s` holds claims for on
    /// every node but `except`, at most `max`.
    fn members(&self, s: Option<&Shared>, room: &str, max: usize, except: Option<&Arc<str>>) -> Vec<Name> {
        let here = self.hub.members(room, max).into_iter();
        let mut names: Vec<Name> = here.map(|(name, speaks)| Name::member(name, speaks.name().into(), self.node.clone())).collect();
        if let Some(s) = s {
            let theirs = s.claims.values().filter(|c| except != Some(&c.node)).take(max.saturating_sub(names.len()));
            names.extend(theirs.map(|c| Name::member(c.name.clone(), c.speaks.clone(), c.node.clone())));
        }
        names
    }

    /// Every room with members on any node, with how many.
    fn sizes(&self) -> Vec<Name> {
        let mut sizes: HashMap<Arc<str>, usize> = self.hub.rooms().into_iter().map(|r| (r.room, r.members)).collect();
        for (room, shared) in self.rooms.lock().iter() {
            let claims = shared.lock().claims.len();
            if claims > 0 {
                *sizes.entry(room.clone()).or_default() += claims;
            }
        }
        sizes.into_iter().map(|(room, count)| Name { name: room, speaks: None, node: None, count: Some(count) }).collect()
    }

    /// Takes linked node `node` (link `link`) out of every room: its names
    /// are freed and its members leave, as everyone still here is told.
    fn bury(&self, link: u64, node: &Arc<str>) {
        let rooms: Vec<(Arc<str>, Arc<Mutex<Shared>>)> = self.rooms.lock().iter().map(|(r, s)| (r.clone(), s.clone())).collect();
        for (room, shared) in rooms {
            let (followed, gone) = {
                let mut s = shared.lock();
                let followed = s.followers.remove(&link).is_some();
                let mut gone = Vec::new();
                s.claims.retain(|_, c| {
                    let stays = c.link != link;
                    if !stays {
                        gone.push(c.name.clone());
                    }
                    stays
                });
                (followed, gone)
            };
            for name in gone {
                self.deliver(&room, &Payload::event(room.clone(), RoomEvent::leave(name)), false, node, From::Here);
            }
            if followed {
                self.hub.unhold(&room);
            }
            self.tidy(&room);
        }
    }
}

impl Broker for HostBroker {
    fn join<'a>(&'a self, room: &'a str, member: Member, listed: usize, greet: Greeting) -> BoxFuture<'a, Result<Roster, JoinError>> {
        let joined = self.with_room(room, |s| {
            if member.name.as_ref().is_some_and(|name| s.claims.contains_key(&name.key)) {
                return Err(JoinError::NameTaken);
            }
            let elsewhere: Vec<Arc<str>> = s.claims.values().map(|c| c.name.clone()).collect();
            let joined = self.hub.join_beside(room, member, listed, &elsewhere, greet);
            if joined.is_ok() {
                s.local += 1;
            }
            joined
        });
        if joined.is_err() {
            self.tidy(room);
        }
        Box::pin(std::future::ready(joined))
    }

    fn leave(&self, room: &str, id: MemberId) -> Option<Member> {
        let member = self.with_existing(room, |s| {
            let member = self.hub.leave(room, id)?;
            s.local = s.local.saturating_sub(1);
            Some(member)
        })??;
        self.tidy(room);
        Some(member)
    }

    fn rename<'a>(&'a self, room: &'a str, id: MemberId, name: Nickname) -> BoxFuture<'a, Result<(), RenameError>> {
        let renamed = self
            .with_existing(room, |s| if s.claims.contains_key(&name.key) { Err(RenameError::NameTaken) } else { self.hub.rename(room, id, name).map(|_| ()) })
            .unwrap_or(Err(RenameError::NotMember));
        Box::pin(std::future::ready(renamed))
    }

    fn publish(&self, room: &str, payload: Payload) -> Result<(), BrokerError> {
        self.deliver(room, &payload, false, &self.node, From::Here);
        Ok(())
    }

    fn publish_and_keep<'a>(&'a self, room: &'a str, payload: Payload) -> BoxFuture<'a, Result<Option<hub::Position>, BrokerError>> {
        self.deliver(room, &payload, true, &self.node, From::Here);
        Box::pin(std::future::ready(Ok(payload.position().cloned())))
    }

    fn limits(&self) -> RoomLimits {
        self.hub.limits()
    }

    fn names(&self, room: &str, max: usize) -> Vec<Arc<str>> {
        let mut names = self.hub.names(room, max);
        if let Some(shared) = self.shared(room) {
            let s = shared.lock();
            names.extend(s.claims.values().take(max.saturating_sub(names.len())).map(|c| c.name.clone()));
        }
        names
    }

    fn presence<'a>(&'a self, room: &'a str, max: usize) -> BoxFuture<'a, Result<Vec<Present>, BrokerError>> {
        let present = self.present(room, max).into_iter().map(|n| {
            let node = n.node.filter(|node| *node != self.node);
            Present { name: n.name, speaks: n.speaks.as_deref().and_then(Speaks::from_name).unwrap_or(Speaks::App), node }
        });
        Box::pin(std::future::ready(Ok(present.collect())))
    }

    fn rooms(&self) -> BoxFuture<'_, Result<Vec<RoomSize>, BrokerError>> {
        let sizes = self.sizes().into_iter().map(|n| RoomSize { room: n.name, members: n.count.unwrap_or(0) });
        Box::pin(std::future::ready(Ok(sizes.collect())))
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
