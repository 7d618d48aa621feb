//! [`NatsBroker`]: one app's rooms spread over the nodes of a cluster.
//!
//! A node follows a room while it has members in it: an ordered JetStream
//! consumer of the room's subjects, which hands each event to the node's
//! own [`Hub`] to fan out locally. Every event of a room passes through the
//! one stream, which gives it a sequence number, and every node's consumer
//! delivers in that order: so every member on every node sees a room's
//! events in the same order.
//!
//! When a node starts following a room it first reads what the stream
//! kept of it (the history, which its hub then keeps), then lists the
//! room's names held on other nodes from the names bucket; after that,
//! join and leave events keep that list current, and a node found lost
//! takes its members with it.

use std::collections::HashMap;
use std::sync::Arc;

use async_nats::jetstream::consumer::{AckPolicy, DeliverPolicy, PullConsumer, pull, push};
use futures_util::StreamExt;
use hub::{BoxFuture, Broker, BrokerError, Greeting, Hub, JoinError, Member, MemberId, Outbox, Payload, Position, Present, RenameError, RoomEvent, RoomLimits, RoomSize, Roster, Speaks};
use wire::nickname::Nickname;
use tokio::task::AbortHandle;

use crate::envelope::{self, Claim};
use crate::followed::{Following, Room};
use crate::nats::Nats;

/// One app's rooms on this node, spread over the cluster.
#[derive(Debug)]
pub struct NatsBroker {
    nats: Arc<Nats>,
    /// The app's subject token.
    app: String,
    hub: Arc<Hub>,
    rooms: Following<AbortHandle>,
}


impl NatsBroker {
    /// The rooms of the app mounted at `prefix`, whose rooms on this node
    /// keep to `limits`.
    pub fn new(nats: Arc<Nats>, prefix: &str, limits: RoomLimits) -> Arc<NatsBroker> {
        let broker = Arc::new(NatsBroker {
            app: envelope::token(prefix),
            // Positions are the stream's sequence numbers, the same on every node.
            hub: Arc::new(Hub::with_epoch(16, limits, nats.epoch())),
            rooms: Following::new(),
            nats,
        });
        tokio::spawn(bury_lost_nodes(Arc::downgrade(&broker), broker.nats.lost_nodes()));
        broker
    }

    /// Follows `room` (for one more member) and waits until its history
    /// and names are in.
    async fn follow(&self, room: &str) -> Result<Arc<Room>, BrokerError> {
        let followed = self.rooms.enter(room, |name, state| {
            let task = tokio::spawn(follow(self.nats.clone(), self.app.clone(), self.hub.clone(), name.clone(), state.clone()));
            Ok::<_, BrokerError>(task.abort_handle())
        })?;
        match followed.ready().await {
            Ok(()) => Ok(followed),
            Err(e) => {
                self.unfollow(room);
                Err(e)
            }
        }
    }

    /// One member fewer in `room`; the last one stops following it.
    fn unfollow(&self, room: &str) {
        self.rooms.leave(room, |task| {
            task.abort();
            self.hub.forget(room);
        });
    }

    fn name_key(&self, room: &str, member: &Member) -> Option<String> {
        member.name.as_ref().map(|name| envelope::name_key(&self.app, room, &name.key))
    }

    async fn join_claimed(&self, room: &str, member: Member, listed: usize, greet: Greeting) -> Result<Roster, JoinError> {
        let followed = self.follow(room).await?;
        let elsewhere: Vec<Arc<str>> = followed.elsewhere.lock().keys().cloned().collect();
        let joined = self.hub.join_beside(room, member, listed, &elsewhere, greet);
        if joined.is_err() {
            self.unfollow(room);
        }
        joined
    }
}

impl Broker for NatsBroker {
    fn join<'a>(&'a self, room: &'a str, member: Member, listed: usize, greet: Greeting) -> BoxFuture<'a, Result<Roster, JoinError>> {
        Box::pin(async move {
            let key = self.name_key(room, &member);
            if let (Some(key), Some(name)) = (&key, &member.name)
                && !self.nats.claim(key.clone(), name.shown.clone(), member.speaks).await?
            {
                return Err(JoinError::NameTaken);
            }
            let joined = self.join_claimed(room, member, listed, greet).await;
            if let (Err(_), Some(key)) = (&joined, key) {
                self.nats.release(key);
            }
            joined
        })
    }

    fn leave(&self, room: &str, id: MemberId) -> Option<Member> {
        let member = self.hub.leave(room, id)?;
        if let Some(key) = self.name_key(room, &member) {
            self.nats.release(key);
        }
        self.unfollow(room);
        Some(member)
    }

    fn rename<'a>(&'a self, room: &'a str, id: MemberId, name: Nickname) -> BoxFuture<'a, Result<(), RenameError>> {
        Box::pin(async move {
            let key = envelope::name_key(&self.app, room, &name.key);
            let shown = name.shown.clone();
            let speaks = self.hub.speaks(room, id).ok_or(RenameError::NotMember)?;
            if !self.nats.claim(key.clone(), shown, speaks).await? {
                return Err(RenameError::NameTaken);
            }
            match self.hub.rename(room, id, name) {
                Ok(old) => {
                    if let Some(old) = old.filter(|old| envelope::name_key(&self.app, room, &old.key) != key) {
                        self.nats.release(envelope::name_key(&self.app, room, &old.key));
                    }
                    Ok(())
                }
                Err(e) => {
                    self.nats.release(key);
                    Err(e)
                }
            }
        })
    }

    fn publish(&self, room: &str, payload: Payload) -> Result<(), BrokerError> {
        let (headers, body) = envelope::encode(&self.nats.node, &payload);
        self.nats.send(envelope::room_subject(&self.app, room) + "e", headers, body)
    }

    fn publish_and_keep<'a>(&'a self, room: &'a str, payload: Payload) -> BoxFuture<'a, Result<Option<Position>, BrokerError>> {
        let (headers, body) = envelope::encode(&self.nats.node, &payload);
        Box::pin(async move {
            // Its position is its sequence number on the stream, as every node reads it.
            let sequence = self.nats.store(envelope::room_subject(&self.app, room) + "m", headers, body).await?;
            Ok(Some(Position { offset: sequence, epoch: self.nats.epoch() }))
        })
    }

    fn limits(&self) -> RoomLimits {
        self.hub.limits()
    }

    fn presence<'a>(&'a self, room: &'a str, max: usize) -> BoxFuture<'a, Result<Vec<Present>, BrokerError>> {
        Box::pin(async move {
            let here = self.hub.members(room, max).into_iter().map(|(name, speaks)| Present { name, speaks, node: None });
            let mut present: Vec<Present> = here.collect();
            let filter = format!("{}{}*", self.nats.names.prefix, envelope::names_of(&self.app, room));
            for (_, claim) in claims(&self.nats, filter).await.map_err(unavailable)? {
                if present.len() >= max {
                    break;
                }
                if claim.node != self.nats.node {
                    let speaks = Speaks::from_name(&claim.speaks).unwrap_or(Speaks::App);
                    present.push(Present { name: claim.name, speaks, node: Some(claim.node) });
                }
            }
            Ok(present)
        })
    }

    fn rooms(&self) -> BoxFuture<'_, Result<Vec<RoomSize>, BrokerError>> {
        Box::pin(async move {
            // Every named member on every node holds a claim under its room's key.
            let filter = format!("{}{}.>", self.nats.names.prefix, self.app);
            let mut sizes: HashMap<Arc<str>, usize> = HashMap::new();
            for (key, _) in claims(&self.nats, filter).await.map_err(unavailable)? {
                let Some(room) = key.split('.').nth(1).and_then(envelope::untoken) else { continue };
                *sizes.entry(Arc::from(room)).or_default() += 1;
            }
            Ok(sizes.into_iter().map(|(room, members)| RoomSize { room, members }).collect())
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

    fn names(&self, room: &str, max: usize) -> Vec<Arc<str>> {
        self.rooms.names(&self.hub, room, max)
    }
}

/// Follows one room until aborted: reads its history and the names held
/// elsewhere, says it is ready, then hands each new event to the hub.
async fn follow(nats: Arc<Nats>, app: String, hub: Arc<Hub>, room: Arc<str>, state: Arc<Room>) {
    let subjects = envelope::room_subject(&app, &room);
    let (backlog, mut messages) = match ordered(&nats, &nats.rooms, format!("{subjects}*"), DeliverPolicy::All).await {
        Ok(followed) => followed,
        Err(e) => {
            tracing::warn!(%room, "broker: cannot follow a room: {e}");
            state.ready.send_replace(Some(Err(BrokerError::Unavailable)));
            return;
        }
    };
    let kept = format!("{subjects}m");
    let epoch = nats.epoch();
    let mut read = 0;
    let mut first = true;
    while read < backlog {
        let Some(message) = messages.next().await else { break };
        read += 1;
        let Ok(message) = message else { continue };
        if message.subject.as_str() == kept
            && let Some(received) = decode(&room, &message, &epoch)
        {
            if first {
                // What the stream no longer holds of the room is lost to recovery.
                first = false;
                hub.lost_before(&room, received.payload.position().map_or(0, |p| p.offset));
            }
            hub.keep(&room, &received.payload);
        } else if let Some(received) = decode(&room, &message, &epoch) {
            // The room's topic, as the last one set says.
            hub.note_topic(&room, &received.payload);
        }
    }
    match names_elsewhere(&nats, &app, &room).await {
        Ok(names) => {
            names.values().for_each(|node| nats.note_node(node));
            *state.elsewhere.lock() = names;
        }
        Err(e) => {
            tracing::warn!(%room, "broker: cannot list a room's names: {e}");
            state.ready.send_replace(Some(Err(BrokerError::Unavailable)));
            return;
        }
    }
    state.ready.send_replace(Some(Ok(())));
    while let Some(message) = messages.next().await {
        let message = match message {
            Ok(message) => message,
            Err(e) => {
                tracing::warn!(%room, "broker: a room's events were interrupted: {e}");
                continue;
            }
        };
        let Some(received) = decode(&room, &message, &epoch) else { continue };
        if message.subject.as_str() == kept {
            hub.publish_and_keep(&room, &received.payload);
            continue;
        }
        if received.node != nats.node
            && let Some((_, event)) = received.payload.as_event()
        {
            if matches!(event, RoomEvent::Join { .. }) {
                nats.note_node(&received.node);
            }
            if !note_elsewhere(&mut state.elsewhere.lock(), &received.node, event) {
                continue;
            }
        }
        hub.publish(&room, &received.payload);
    }
    tracing::warn!(%room, "broker: a room's events ended; its members here hear no more of it");
}

/// Keeps a room's names held elsewhere current with `event`, from `node`:
/// whether it is news to the members here. A join of a name already listed
/// from that node is not: the join was sent before this node read the names
/// bucket, and arrives after, so its members were shown the name already
/// (IRC's `NAMES`, XMPP's presences) and would be told of it twice.
pub(crate) fn note_elsewhere(elsewhere: &mut HashMap<Arc<str>, Arc<str>>, node: &Arc<str>, event: &RoomEvent) -> bool {
    match event {
        RoomEvent::Join { name, .. } => elsewhere.insert(name.clone(), node.clone()).is_none_or(|was| was != *node),
        RoomEvent::Leave { name, .. } => {
            elsewhere.remove(name);
            true
        }
        _ => true,
    }
}

/// A message of the stream as the event it carries, at its position in
/// the history `epoch`: its sequence number on the stream.
fn decode(room: &Arc<str>, message: &async_nats::jetstream::Message, epoch: &Arc<str>) -> Option<envelope::Received> {
    let info = message.info().ok();
    // When the stream stored it: a backlog read later keeps its time.
    let at = info.as_ref().map_or_else(std::time::SystemTime::now, |info| info.published.into());
    let received = envelope::decode(room, message.headers.as_ref(), message.payload.clone(), at)
        .inspect_err(|e| tracing::warn!(%room, "broker: an event was not understood: {e}"))
        .ok()?;
    if let Some(info) = info {
        received.payload.place(hub::Position { offset: info.stream_sequence, epoch: epoch.clone() });
    }
    Some(received)
}

/// How long the consumer of a snapshot of the names bucket is kept once
/// idle; most entries one pull of it asks for; and how long the server
/// waits for more once it has sent what it holds.
const SNAPSHOT_IDLE: std::time::Duration = std::time::Duration::from_secs(30);
const SNAPSHOT_BATCH: usize = 512;
const SNAPSHOT_WAIT: std::time::Duration = std::time::Duration::from_millis(50);

/// An ordered consumer of `stream`'s subjects `filter` from `policy`, and
/// how many messages it had to deliver when it was made (what is already
/// stored: the backlog before live events).
async fn ordered(
    nats: &Nats,
    stream: &async_nats::jetstream::stream::Stream,
    filter: String,
    policy: DeliverPolicy,
) -> Result<(u64, push::Ordered), async_nats::Error> {
    let config = push::OrderedConfig {
        deliver_subject: nats.client.new_inbox(),
        filter_subject: filter,
        deliver_policy: policy,
        ..Default::default()
    };
    let consumer = stream.create_consumer(config).await?;
    let backlog = consumer.cached_info().num_pending;
    Ok((backlog, consumer.messages().await?))
}

/// The names of a room held on other nodes, from the names bucket.
async fn names_elsewhere(nats: &Nats, app: &str, room: &str) -> Result<HashMap<Arc<str>, Arc<str>>, async_nats::Error> {
    let filter = format!("{}{}*", nats.names.prefix, envelope::names_of(app, room));
    let claims = claims(nats, filter).await?.into_iter().filter(|(_, claim)| claim.node != nats.node);
    Ok(claims.map(|(_, claim)| (claim.name, claim.node)).collect())
}

/// The names claimed under the names-bucket subjects `filter`, each with
/// its key (the subject without the bucket's prefix).
///
/// The bucket keeps one entry a key, so every entry is read, in order, by
/// a pull consumer, until one says no more are pending or a pull finds
/// none. Not a consumer of the last entry per subject: through a link of
/// 2400 bit/s and 1 s each way (the satellite study's irc-switchboard
/// mode), one such, push or pull, delivered one claim twice and another
/// never, so a node that joined a room there never learnt of a member
/// already in it. What inside nats-server 2.9 does that was not found;
/// claims renewed while the read crossed the link (seconds) are the likely
/// trigger, and reading every entry did not do it. Then the count itself
/// was found to lag a renewal (a test here, one run in many): after it
/// says none are pending, the stream's list of the room's keys is asked
/// whether one was not read.
async fn claims(nats: &Nats, filter: String) -> Result<Vec<(String, Claim)>, async_nats::Error> {
    let consumer = snapshot(nats, filter.clone()).await?;
    read_claims(nats, &consumer, &filter).await
}

/// A consumer of every entry of the names bucket under `filter`.
async fn snapshot(nats: &Nats, filter: String) -> Result<PullConsumer, async_nats::Error> {
    let config = pull::Config {
        filter_subject: filter,
        deliver_policy: DeliverPolicy::All,
        ack_policy: AckPolicy::None,
        inactive_threshold: SNAPSHOT_IDLE,
        ..Default::default()
    };
    Ok(nats.names.stream.create_consumer(config).await?)
}

/// The claims `consumer` (a [`snapshot`] of `filter`) delivers.
async fn read_claims(nats: &Nats, consumer: &PullConsumer, filter: &str) -> Result<Vec<(String, Claim)>, async_nats::Error> {
    // Each key read, with its claim, or `None` where its newest entry read
    // deletes it.
    let mut read = HashMap::new();
    drain(nats, consumer, &mut read, consumer.cached_info().num_pending).await?;
    // nats-server 2.9 may count a claim renewed after the snapshot began
    // only after it has delivered the entry before it, and say nothing is
    // pending: the pull ends there, and what it had delivered after is
    // gone with it (nothing is acknowledged, so nothing comes again). The
    // stream's own list of the room's keys says which were left unread;
    // each is read as the bucket holds it now.
    for key in unread_keys(nats, filter, &read).await? {
        let claim = nats.names.get(&key).await?.and_then(|value| serde_json::from_slice::<Claim>(&value).ok());
        read.insert(key, claim);
    }
    // The consumer goes once idle for SNAPSHOT_IDLE: deleting it would
    // cost the join another round trip.
    Ok(read.into_iter().filter_map(|(key, claim)| Some((key, claim?))).collect())
}

/// Pulls `consumer` into `read` while the server counts entries pending,
/// `pending` at first.
async fn drain(nats: &Nats, consumer: &PullConsumer, read: &mut HashMap<String, Option<Claim>>, mut pending: u64) -> Result<(), async_nats::Error> {
    while pending > 0 {
        // The server sends what it holds at once, and waits SNAPSHOT_WAIT
        // for more before it ends the pull.
        let mut entries = consumer.batch().max_messages(SNAPSHOT_BATCH).expires(SNAPSHOT_WAIT).messages().await?;
        let mut any = false;
        while let Some(entry) = entries.next().await {
            let entry = entry?;
            any = true;
            pending = entry.info().map_or(0, |info| info.pending);
            let key = entry.subject.strip_prefix(nats.names.prefix.as_str()).unwrap_or(&entry.subject).to_owned();
            // A deleted name is a marker with an operation header and no body.
            let deleted = entry.headers.as_ref().is_some_and(|h| h.get("KV-Operation").is_some());
            read.insert(key, if deleted { None } else { serde_json::from_slice::<Claim>(&entry.payload).ok() });
            if pending == 0 {
                break;
            }
        }
        if !any {
            // Nothing more is stored: what the count said was pending was
            // deleted before it was delivered (the count of nats-server 2.9
            // keeps such entries).
            break;
        }
    }
    Ok(())
}

/// The keys the stream holds under `filter` that are not in `read`.
async fn unread_keys(nats: &Nats, filter: &str, read: &HashMap<String, Option<Claim>>) -> Result<Vec<String>, async_nats::Error> {
    let mut keys = nats.names.stream.info_with_subjects(filter).await?;
    let mut unread = Vec::new();
    while let Some(key) = keys.next().await {
        let (subject, _) = key?;
        let key = subject.strip_prefix(nats.names.prefix.as_str()).unwrap_or(&subject);
        if !read.contains_key(key) {
            unread.push(key.to_owned());
        }
    }
    Ok(unread)
}

fn unavailable(e: async_nats::Error) -> BrokerError {
    tracing::warn!("broker: cannot read the names bucket: {e}");
    BrokerError::Unavailable
}

/// Takes the members of each lost node out of the rooms followed here,
/// telling the members here that they left.
async fn bury_lost_nodes(broker: std::sync::Weak<NatsBroker>, mut lost: tokio::sync::broadcast::Receiver<Arc<str>>) {
    loop {
        let node = match lost.recv().await {
            Ok(node) => node,
            Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => continue,
            Err(tokio::sync::broadcast::error::RecvError::Closed) => return,
        };
        let Some(broker) = broker.upgrade() else { return };
        for (name, room) in broker.rooms.all() {
            room.bury(&broker.hub, &name, Some(&node));
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::nats::{Options, tests::Server};

    #[test]
    fn a_join_already_read_from_the_names_bucket_is_not_told_again() {
        let (a, b): (Arc<str>, Arc<str>) = (Arc::from("node-a"), Arc::from("node-b"));
        // ann's claim was read from the bucket when this node began following.
        let mut elsewhere = HashMap::from([(Arc::from("ann"), a.clone())]);
        let join = |name: &str| RoomEvent::Join { name: Arc::from(name), old_name: None };
        assert!(!note_elsewhere(&mut elsewhere, &a, &join("ann")), "her join, sent before the read, arrives after it");
        assert!(note_elsewhere(&mut elsewhere, &a, &join("bob")), "a join not listed is news");
        assert!(note_elsewhere(&mut elsewhere, &b, &join("ann")), "the name now held on another node");
        assert!(note_elsewhere(&mut elsewhere, &b, &RoomEvent::leave(Arc::from("ann"))));
        assert!(note_elsewhere(&mut elsewhere, &a, &join("ann")), "back after leaving");
        assert_eq!(elsewhere.len(), 2);
    }

    #[tokio::test]
    async fn a_snapshot_of_a_rooms_names_holds_a_claim_renewed_while_it_was_read() {
        let server = Server::start();
        let options = Options { url: format!("nats://127.0.0.1:{}", server.port), ttl: Duration::from_secs(60), history: 5, max_message_size: 4096, queue: 16 };
        let nats = Nats::connect(options).await.expect("joins");
        let key = |name: &str| envelope::name_key("chat", "lobby", name);
        for name in ["alice", "bob"] {
            assert!(nats.claim(key(name), Arc::from(name), hub::Speaks::Irc).await.unwrap());
        }
        let filter = format!("{}{}*", nats.names.prefix, envelope::names_of("chat", "lobby"));
        let consumer = snapshot(&nats, filter.clone()).await.unwrap();
        // Claims renewed after the snapshot began, before it was read
        // (seconds apart over a slow link): their older entries are gone,
        // and the count the consumer was made with is stale.
        for name in ["alice", "bob", "alice"] {
            let renewed = Claim { node: Arc::from(&*nats.node), name: Arc::from(name), speaks: Arc::from("irc") }.to_bytes();
            nats.names.put(&key(name), renewed).await.unwrap();
        }
        let mut names: Vec<String> = read_claims(&nats, &consumer, &filter).await.unwrap().into_iter().map(|(_, claim)| claim.name.to_string()).collect();
        names.sort();
        assert_eq!(names, ["alice", "bob"]);
    }
}
